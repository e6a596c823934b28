"""The engine's trace hooks: what it writes to the trace log at push, start and end.

Idea: recording must stay cheaper than the ops it records (tracing's target is
0.6 us per op), so the engine does not build event objects.  Under its lock
(the log is then in the engine's own order) it extends the shared log
(:func:`mxnb.engine.trace.extend_raw`) with a *coded record*: a small int
code, then that code's fields, all numbers, strings and long-lived objects.
:class:`~mxnb.engine.trace.Trace` turns records into events later, off the
hot path, and derives dependency edges by running the same rule
(:mod:`.var`) over them.  The record layouts are listed in :mod:`.trace`.

Rule: one hook per moment of an op's life: :func:`record_push`,
:func:`record_start`, :func:`record_end`; each is called only when
``trace.enabled``.  The end of an op that made exactly one successor ready,
which the same worker thread runs next (a link of a chain), is written with
that successor's start as one record (``RAW_DONE_START``): one record and one
clock read instead of two.

State kept: none (``trace.seen_vars``: the var ids named since recording began).

Example::

    >>> import mxnb as mx
    >>> eng = mx.engine.create('naive')
    >>> with mx.engine.trace() as tr:
    ...     _ = eng.push_sync(lambda rctx: None, mx.cpu(), mutate_vars=[eng.new_var()], name='w')
    >>> [type(e).__name__ for e in tr.events if type(e).__name__.startswith('Op')]
    ['OpPush', 'OpReady', 'OpStart', 'OpEnd']
"""

from __future__ import annotations

from _thread import get_ident
from operator import attrgetter
from typing import Any

from . import trace
from .trace import (
    RAW_DONE,
    RAW_DONE_START,
    RAW_END,
    RAW_PUSH,
    RAW_START,
    RAW_VAR_NAME,
    RAW_VAR_NEW,
    seen_vars,
)
from .trace import now as _now
from .var import READY, RUNNING, Opr, Var

__all__ = ["record_end", "record_push", "record_start", "record_var_new"]

_extend = trace.extend_raw  # bound once: the shared log never changes (emptied in place)
_var_id = attrgetter("id")


def record_var_new(var: Var) -> None:
    """Log a new var (it is named from the start)."""
    seen_vars.add(var.id)
    _extend((RAW_VAR_NEW, _now(), var.id, var.name))


def record_push(opr: Opr) -> None:
    """Log ``opr``'s push, naming vars the log has not named since recording began."""
    const = opr.const_vars
    touched = const + opr.mutate_vars if const else opr.mutate_vars
    if len(touched) == 1:  # one var: its id stands alone (the commonest case)
        ids: Any = touched[0].id
        if ids not in seen_vars:
            _name_vars(touched)
    else:
        ids = tuple(map(_var_id, touched))
        if not seen_vars.issuperset(ids):
            _name_vars(touched)
    _extend(
        (
            RAW_PUSH,
            _now(),
            opr.id,
            opr.name,
            opr.ctx,
            len(const),
            ids,
            opr.priority,
            get_ident(),
            opr.wait_count,
        )
    )


def record_start(opr: Opr, worker: str, thread: int | None) -> None:
    """Log that ``worker`` starts ``opr`` (unless its predecessor's end already did)."""
    if opr.state is not RUNNING:
        _extend((RAW_START, _now(), opr.id, worker, thread or get_ident()))


def record_end(
    opr: Opr, exc: BaseException | None, inherited: Any, ready: list[Opr], chain: Any
) -> None:
    """Log ``opr``'s end (failed with ``exc``, or skipped for ``inherited``) and the ops it made ready.

    ``chain``: the worker's RunContext when that worker runs the first op
    made ready next, if it is in the same pool (see ``ThreadedEngine._run_chain``);
    a lone successor that qualifies is started here and marked RUNNING, so
    :func:`record_start` does not record it again.
    """
    if exc is not None or inherited is not None or opr.deletes is not None:
        if exc is not None:
            error: str | None = repr(exc)
        elif inherited is not None:
            error = f"skipped: input failed in op '{inherited.op_name}'"
        else:
            error = None
        skipped = exc is None and inherited is not None
        deleted = None if opr.deletes is None else tuple(map(_var_id, opr.deletes))
        _extend((RAW_END, _now(), opr.id, error, skipped, deleted, _ids(ready)))
        return
    if len(ready) == 1:
        successor = ready[0]
        if (
            chain is not None
            and successor.ctx is opr.ctx  # so the same pool runs it
            and successor.copy is opr.copy
            and successor.state is READY
        ):
            successor.state = RUNNING
            _extend((RAW_DONE_START, _now(), opr.id, successor.id, chain))
            return
    _extend((RAW_DONE, _now(), opr.id, _ids(ready)))


def _ids(ready: list[Opr]) -> Any:
    """The log's form of a list of ops: () or one id or a tuple of ids."""
    if not ready:
        return ()
    return ready[0].id if len(ready) == 1 else tuple(map(_var_id, ready))


def _name_vars(touched: tuple[Var, ...]) -> None:
    """Record the names of vars the log has not named since a recorder attached."""
    t = _now()
    for var in touched:
        if var.id not in seen_vars:
            seen_vars.add(var.id)
            _extend((RAW_VAR_NAME, t, var.id, var.name))
