"""The trace log: coded records the engine writes, and the events a Trace builds from them.

Idea: recording must stay cheaper than the ops it records (tracing's target is
0.6 us per op), so the engine does not build event objects.  The engine's
hooks call the functions below; only the naive engine's named fast path
(``IdleFastPath.push_sync_one_var``) writes its two records in place, as it
writes out everything else (a Python call is about a tenth of what tracing
adds per op; ``tests/engine/test_records.py`` checks that what it writes is
what these functions write).  Under its lock
(the log is then in the engine's own order) it extends one shared log with a
*coded record*: a small int code, then that code's fields, all numbers,
strings and long-lived objects (never the engine's ops or vars: nothing in
the log is left for the garbage collector to walk).  A
:class:`~mxnb.engine.tracing.Trace` later turns records into events
(:class:`RecordReader`), off the hot path.  Dependency edges are not written:
the reader derives them with the engine's own code, running shadow
:class:`~mxnb.engine.var.Var` / :class:`~mxnb.engine.var.Opr` objects through
:func:`~mxnb.engine.edges.note_push` (debug mode's chains use the same).

Records (``extend_raw((code, field, ...))``; list.extend of a tuple does not
release the GIL, so records of different threads never interleave):
    RAW_VAR_NEW, t, var_id, name
    RAW_VAR_NAME, t, var_id, name      a var first pushed on since attach
    RAW_PUSH, t, op_id, name, ctx, n_const, var_ids, priority, ident, waits
        var_ids: the const var ids, then the mutate var ids (one var: its id alone);
        waits: 0 when the op is ready at push
    RAW_PUSH_START, (as RAW_PUSH), worker
        an op ready at push that the pushing thread starts at once (the naive
        engine): one record and one clock read for push, ready and start
        (one var, already named: written by ``push_sync_one_var`` itself)
    RAW_START, t, op_id, worker, ident
    RAW_END, t, op_id, error, skipped, deleted var ids or None, ops made ready
        ops made ready: () or one op id or a tuple of them
    RAW_DONE, t, op_id, ops made ready       an end that succeeded and deleted nothing
        (``push_sync_one_var``'s op that made none ready: written there)
    RAW_DONE_START, t, op_id, successor_id, run_ctx
        RAW_DONE of an op that made one op ready, which the same worker thread
        starts at once (a link of a chain): one record and one clock read for two
    RAW_ALLOC / RAW_FREE, t, ctx_label, handle_id, nbytes, pool_hit / to_pool
        (written by the storage managers, mxnb/storage.py)

Every short record stands for general ones, and builds the same events:
RAW_DONE is a RAW_END with no error and nothing deleted, the ``_START``
forms are their record followed by a RAW_START at the same time
(``tests/engine/test_records.py`` rewrites recorded logs into general records
only and compares the events, on every engine).

State kept: the shared log (``_raw``) while any recorder is attached, and
``seen_vars``, the var ids named in it since the first recorder attached.

Example::

    >>> import mxnb as mx
    >>> eng = mx.engine.create('naive')
    >>> with mx.engine.trace() as tr:
    ...     _ = eng.push_sync(lambda rctx: None, mx.cpu(), mutate_vars=[eng.new_var()], name='w')
    >>> [type(e).__name__ for e in tr.events if type(e).__name__.startswith('Op')]
    ['OpPush', 'OpReady', 'OpStart', 'OpEnd']
"""

from __future__ import annotations

import threading
import time
from _thread import get_ident
from collections.abc import Callable
from operator import attrgetter
from typing import Any

from .edges import note_done, note_push
from .events import (
    Dependency,
    OpEnd,
    OpPush,
    OpReady,
    OpStart,
    StorageAlloc,
    StorageFree,
    VarDelete,
    VarName,
    VarNew,
)
from .var import RUNNING, Opr, Var

__all__ = [
    "RecordReader",
    "append_raw",
    "extend_raw",
    "now",
    "record_done",
    "record_end",
    "record_push",
    "record_start",
    "record_var_new",
]

now = time.perf_counter
_now = now

(
    RAW_VAR_NEW,
    RAW_PUSH,
    RAW_START,
    RAW_END,
    RAW_VAR_NAME,
    RAW_DONE,
    RAW_DONE_START,
    RAW_ALLOC,
    RAW_FREE,
    RAW_PUSH_START,
) = range(10)
#: Items per record, code included, by code.
RECORD_SIZE = (4, 10, 5, 7, 4, 4, 5, 6, 6, 10)
LONGEST_RECORD = max(RECORD_SIZE)

# One shared log while any recorder is attached: events and raw records, in order.
_raw: list[Any] = []
append_raw = _raw.append  # one item: an event, or a (builder, *args) record
extend_raw = _raw.extend  # the engine's hot path: the fields of one coded record
_extend = extend_raw
seen_vars: set[int] = set()  # var ids named in the log since the first recorder attached
_var_id = attrgetter("id")  # a Var's id (an Opr's too)


# -- writing (the engine, under its lock, only while tracing.enabled) -------------------------


def record_var_new(var: Var) -> None:
    """Log a new var (it is named from the start)."""
    seen_vars.add(var.id)
    _extend((RAW_VAR_NEW, _now(), var.id, var.name))


def record_push(opr: Opr, starts_as: str | None = None) -> None:
    """Log ``opr``'s push, naming vars the log has not named since recording began.

    ``starts_as``: the worker name under which the pushing thread runs an op
    ready at push at once (the naive engine's ``'main'``); such an op's push
    also records its start, and it is marked RUNNING so :func:`record_start`
    does not record it again.
    """
    const = opr.const_vars
    if const:
        touched = const + opr.mutate_vars
        n_const = len(const)
    else:  # writes only (the commonest push)
        touched = opr.mutate_vars
        n_const = 0
    if len(touched) == 1:  # one var: its id stands alone (the commonest case)
        ids: Any = touched[0].id
        if ids not in seen_vars:
            _name_vars(touched)
    else:
        ids = tuple(map(_var_id, touched))
        if not seen_vars.issuperset(ids):
            _name_vars(touched)
    last: Any  # the worker that starts it at once, or the ops it waits on
    if starts_as is not None and opr.wait_count == 0:
        code, last = RAW_PUSH_START, starts_as
        opr.state = RUNNING
    else:
        code, last = RAW_PUSH, opr.wait_count
    _extend(
        (code, _now(), opr.id, opr.name, opr.ctx, n_const, ids, opr.priority, get_ident(), last)
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
    the engine passes None for an op that failed or was skipped.  A lone
    successor that qualifies (its context and copy flag are the op's: the
    same pool runs it) is started here and marked RUNNING, so
    :func:`record_start` does not record it again.  The ops in ``ready`` have
    just been made READY by the engine's ``_complete``, the one caller.
    """
    if chain is not None and len(ready) == 1 and opr.deletes is None:  # a link of a chain
        successor = ready[0]
        if successor.ctx is opr.ctx and successor.copy is opr.copy:
            successor.state = RUNNING
            _extend((RAW_DONE_START, _now(), opr.id, successor.id, chain))
            return
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
    elif not ready:  # the commonest other ends: nothing, or one op, made ready
        _extend((RAW_DONE, _now(), opr.id, ()))
    else:
        _extend((RAW_DONE, _now(), opr.id, ready[0].id if len(ready) == 1 else _ids(ready)))


def record_done(opr: Opr) -> None:
    """Log that ``opr`` succeeded and made no op ready: :func:`record_end`'s commonest end."""
    _extend((RAW_DONE, _now(), opr.id, ()))


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


# -- reading (a Trace, when its events are read) --------------------------------------------


class RecordReader:
    """Turns one recorder's share of the log into events, in order.

    Keeps the shadow vars and ops the dependency notes run over: ops pushed
    before the recorder attached are unknown to it, so edges to them are not
    found.
    """

    def __init__(self, named: set[int]) -> None:
        self.named = named  # var ids a VarNew / VarName event has named
        self._vars: dict[int, Var] = {}  # var id -> shadow var
        self._ops: dict[int, Opr] = {}  # op id -> shadow op, until its end
        self._threads: dict[int, str] = {}  # thread ident -> name, for one read
        self._devices: dict[int, str] = {}  # id(Context) -> its repr, for one read

    def read(self, items: list[Any], limit: int, add: Callable[[Any], None]) -> int:
        """Build at most ``limit`` records of ``items`` into events passed to ``add``; return the items used."""
        self._threads.clear()  # idents are reused by new threads
        self._devices.clear()  # virtual GPUs may have been switched since the last read
        i = 0
        size = len(items)
        while i < size and limit:
            limit -= 1
            code = items[i]
            if type(code) is not int:  # an event, or a (builder, *args) record
                i += 1
                built = code[0](*code[1:]) if type(code) is tuple else code
                for event in built if type(built) is tuple else (built,):
                    if type(event) is VarNew:
                        self.named.add(event.var_id)
                    add(event)
                continue
            end = i + RECORD_SIZE[code]
            fields = items[i + 1 : end]
            i = end
            if code == RAW_PUSH:
                self._push(add, *fields)
            elif code == RAW_PUSH_START:
                *push, worker = fields
                self._push(add, *push, 0)  # type: ignore[call-arg]  # push: the nine push fields
                add(OpStart(push[0], push[1], worker, self._thread(push[7])))
            elif code == RAW_DONE:
                t, op_id, ready = fields
                self._end(add, t, op_id, None, False, None, ready)
            elif code == RAW_DONE_START:
                t, op_id, successor, rctx = fields
                self._end(add, t, op_id, None, False, None, successor)
                add(OpStart(t, successor, rctx.worker, self._thread(rctx.thread)))
            elif code == RAW_END:
                self._end(add, *fields)
            elif code == RAW_START:
                t, op_id, worker, ident = fields
                add(OpStart(t, op_id, worker, self._thread(ident)))
            elif code == RAW_ALLOC:
                add(StorageAlloc(*fields))
            elif code == RAW_FREE:
                add(StorageFree(*fields))
            else:  # RAW_VAR_NEW or RAW_VAR_NAME
                t, var_id, name = fields
                if code == RAW_VAR_NEW:
                    self.named.add(var_id)
                    add(VarNew(t, var_id, name))
                elif var_id not in self.named:
                    self.named.add(var_id)
                    add(VarName(t, var_id, name))
        return i

    def _push(self, add, t, op_id, name, ctx, n_const, ids, priority, ident, waits) -> None:
        if type(ids) is int:
            ids = (ids,)
        const, mutate = ids[:n_const], ids[n_const:]
        opr = Opr(op_id, name, tuple(map(self._var, const)), tuple(map(self._var, mutate)))
        self._ops[op_id] = opr
        deps = tuple(Dependency(other.id, var.id, kind) for other, var, kind in note_push(opr))
        device = self._devices.get(id(ctx))
        if device is None:
            device = self._devices[id(ctx)] = repr(ctx)
        add(OpPush(t, op_id, name, device, const, mutate, priority, deps, self._thread(ident)))
        if waits == 0:
            add(OpReady(t, op_id))

    def _end(self, add, t, op_id, error, skipped, deleted, ready) -> None:
        opr = self._ops.pop(op_id, None)
        if opr is not None:
            note_done(opr)
        add(OpEnd(t, op_id, error, skipped))
        if deleted is not None:
            for var_id in deleted:
                self._vars.pop(var_id, None)
                add(VarDelete(t, var_id))
        for successor in (ready,) if type(ready) is int else ready:
            add(OpReady(t, successor))

    def _var(self, var_id: int) -> Var:
        var = self._vars.get(var_id)
        if var is None:
            var = self._vars[var_id] = Var()
            var.id = var_id
        return var

    def _thread(self, ident: int) -> str:
        name = self._threads.get(ident)
        if name is None:
            thread = threading._active.get(ident)  # type: ignore[attr-defined]  # ident -> live Thread
            name = self._threads[ident] = thread.name if thread is not None else f"thread-{ident}"
        return name
