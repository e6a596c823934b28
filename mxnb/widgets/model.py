"""The engine as data, for the views: :class:`EngineModel` is the engine's trace model.

Idea: every view of the engine (DAG, timeline, memory, stats, inspect) asks
the same questions of the same events as ``Trace.ops()`` / ``stats()`` /
``explain()`` do; one model answers them all.  It lives beside the trace, in
:mod:`mxnb.engine.trace_model` (the fold) and :mod:`mxnb.engine.analysis`
(the records, stats and explanation rules); this module gives the views their
names for it.

Rule: the model reads events and nothing else — never the engine's internals.
An op's state follows its events: pushed -> WAITING, ``OpReady`` -> READY,
``OpStart`` -> RUNNING, ``OpEnd`` -> DONE / FAILED / SKIPPED.

State kept: none here (see :class:`~mxnb.engine.trace_model.TraceModel`).

Example::

    >>> from mxnb.engine.tracing import OpPush, OpStart, OpEnd
    >>> m = EngineModel([OpPush(0.0, 1, 'add', 'cpu(0)', (), (7,), 0, ()),
    ...                  OpStart(0.1, 1, 'cpu(0)/0', 't'), OpEnd(0.3, 1)])
    >>> m.ops[1].state.name, round(m.ops[1].duration, 3)
    ('DONE', 0.2)
"""

from __future__ import annotations

from ..engine.analysis import (
    KIND_SHORT,
    Blocker,
    Edge,
    Interval,
    Lane,
    MemorySeries,
    OpRecord,
    OpState,
    VarRecord,
    WaitRecord,
    name_group,
)
from ..engine.stats import OpStats
from ..engine.trace_model import TraceModel

__all__ = [
    "KIND_SHORT",
    "Blocker",
    "Edge",
    "EngineModel",
    "Interval",
    "Lane",
    "MemorySeries",
    "OpRecord",
    "OpState",
    "OpStats",
    "VarRecord",
    "WaitRecord",
    "name_group",
]


#: The views' name for the engine's :class:`~mxnb.engine.trace_model.TraceModel`: the same
#: class (the model lives beside the trace; this module only names it for the views).
EngineModel = TraceModel
