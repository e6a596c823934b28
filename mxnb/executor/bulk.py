"""Bulk execution: an executor pass pushed as a few engine ops (segments), not one per step.

Idea (MXNet: ``GraphExecutor::InitOpSegs`` and ``BulkOpSegs``, switched by
``MXNET_EXEC_BULK_EXEC_TRAIN``, default on): pushing an op costs the engine
tens of microseconds of Python holding the GIL, paid again on every device
of a data-parallel step.  So the executor cuts each pass (forward, backward)
into *segments* of up to ``mx.engine.bulk_size()`` consecutive steps (15 by
default) and pushes ONE engine op per segment, which runs its steps one after
the other in graph order.  The segment reads the union of its steps' const
vars and writes the union of their mutate vars (a var both read and written
counts as written).

Rule: a segment ends after a step that writes an argument's gradient, so the
kvstore can reduce that gradient while the rest of backward runs (MXNet: a
segment stops at a node whose output is needed outside).  Inside a segment
the steps run in graph order, the order the memory planner assumed for
in-place and reuse, so results are the same bits as without bulking.  A
monitor callback, or a bulk size of 0 or 1, pushes every step on its own.

What the trace shows: one op per segment, named after its steps
(``bulk[conv1, relu1, pool1]``); :func:`step_names` reads them back.  To see
every step as its own op in the DAG and timeline, turn bulking off:
``with mx.engine.bulk(0):`` or ``MXNB_EXEC_BULK_EXEC_TRAIN=0``.
``MXNB_EXEC_BULK_EXEC_MAX_NODE_TRAIN_FWD`` / ``_BWD`` cap forward / backward
segments separately.

State kept: none here; the Executor keeps its segments per pass and mode.

Example::

    >>> from mxnb.executor.bulk import cut, step_names
    >>> cut(['conv', 'relu', 'pool', 'fc'], size=3, ends_segment=[False] * 4)
    [range(0, 3), range(3, 4)]
    >>> step_names('bulk[conv1, relu1]')
    ['conv1', 'relu1']
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

from ..base import EngineError
from ..engine.checks import normalise

__all__ = ["Segment", "build_segments", "cut", "max_nodes", "step_names"]

_PREFIX = "bulk["


def _env_cap(name: str) -> int | None:
    value = os.environ.get(name, "").strip()
    if not value:
        return None
    if not value.isdigit():
        raise EngineError(f"{name} must be a count of ops >= 0, got {value!r}")
    return int(value)


_CAP_VARIABLES = {
    "forward": "MXNB_EXEC_BULK_EXEC_MAX_NODE_TRAIN_FWD",
    "backward": "MXNB_EXEC_BULK_EXEC_MAX_NODE_TRAIN_BWD",
}


def max_nodes(size: int, direction: str) -> int:
    """The most steps of one segment of a ``'forward'`` / ``'backward'`` pass at bulk ``size``.

    The per-pass cap is read from the environment at each call, as the bulk
    size is (an executor cuts a pass once per mode and keeps the segments).
    """
    cap = _env_cap(_CAP_VARIABLES[direction])
    return size if cap is None else min(size, cap)


@dataclass(frozen=True, eq=False)
class Segment:
    """Consecutive steps pushed as one engine op."""

    name: str  # the engine op's name: the step's own name, or 'bulk[a, b, ...]'
    run: Callable[[Any], None]  # runs every step in graph order
    const_vars: tuple[Any, ...]  # read, never written by the segment
    mutate_vars: tuple[Any, ...]  # written by one of its steps
    fused: tuple[tuple[str, ...], ...] = ()  # runs of its steps fused into one kernel (.fusion)


#: ``fuse(span)``: a segment's steps (positions in the pass) as (engine functions, their names,
#: the fused runs' step names); :func:`mxnb.executor.fusion.fuse_span` behind the executor
Fuse = Callable[[range], tuple[list[Callable[[Any], None]], list[str], list[tuple[str, ...]]]]


def cut(steps: Sequence[Any], size: int, ends_segment: Sequence[bool]) -> list[range]:
    """Cut ``steps`` into runs of at most ``size``; a run also ends where ``ends_segment`` is True."""
    segments = []
    start = 0
    for index in range(len(steps)):
        if index + 1 - start >= size or ends_segment[index] or index + 1 == len(steps):
            segments.append(range(start, index + 1))
            start = index + 1
    return segments


def _run_steps(
    runs: tuple[Callable[[Any], None], ...], names: tuple[str, ...], run_ctx: Any
) -> None:
    """A segment's engine function: each step's function in order (a partial, as the executor's)."""
    for run, name in zip(runs, names):
        try:
            run(run_ctx)
        except Exception as exc:
            exc.add_note(f"(in step {name!r} of the bulk segment; mx.engine.bulk(0) runs it alone)")
            raise


def _segment(
    runs: Sequence[Callable[[Any], None]],
    names: Sequence[str],
    vars_of: Sequence[tuple[tuple[Any, ...], tuple[Any, ...]]],
    span: range,
    fuse: Fuse | None,
) -> Segment:
    name = names[0] if len(runs) == 1 else f"{_PREFIX}{', '.join(names)}]"
    fused: list[tuple[str, ...]] = []
    if fuse is not None and len(runs) > 1:
        runs, names, fused = fuse(span)  # names: a fused run's steps joined by '+'
    # the union of the steps' vars, by the engine's own rule (push_prepared does not apply
    # it): duplicates dropped, a var read by one step and written by another counts as written
    const, mutate = normalise(
        [var for step_const, _ in vars_of for var in step_const],
        [var for _, step_mutate in vars_of for var in step_mutate],
        name,
    )
    run = runs[0] if len(runs) == 1 else partial(_run_steps, tuple(runs), tuple(names))
    return Segment(name, run, const, mutate, tuple(fused))


def build_segments(
    names: Sequence[str],
    runs: Sequence[Callable[[Any], None]],
    vars_of: Sequence[tuple[tuple[Any, ...], tuple[Any, ...]]],
    ends_segment: Sequence[bool],
    size: int,
    fuse: Fuse | None = None,
) -> list[Segment]:
    """The segments of one pass: per step its name, engine function and (const, mutate) vars.

    ``fuse``: how a segment's pointwise runs become one function each (:mod:`.fusion`).
    """
    return [
        _segment(
            [runs[i] for i in span],
            [names[i] for i in span],
            [vars_of[i] for i in span],
            span,
            fuse,
        )
        for span in cut(names, max(size, 1), ends_segment)
    ]


def step_names(op_name: str) -> list[str]:
    """The steps an engine op of an executor ran: ``'bulk[a, b]'`` -> ``['a', 'b']``; else ``[op_name]``."""
    if op_name.startswith(_PREFIX) and op_name.endswith("]"):
        return op_name[len(_PREFIX) : -1].split(", ")
    return [op_name]
