"""The trace log: coded records the engine writes, and the events a Trace builds from them.

Idea: recording must stay cheaper than the ops it records (tracing's target is
0.6 us per op), so the engine does not build event objects.  Its hooks call
the functions below, under its lock (the log is then in the engine's own
order), and each extends one shared log with a *coded record*: a small int
code, then that kind's fields, all numbers, strings, tuples of ids and
long-lived objects (never the engine's ops or vars: nothing in the log is left
for the garbage collector to walk).  A :class:`~mxnb.engine.tracing.Trace`
later turns records into events (:class:`RecordReader`, one method per kind),
off the hot path.  Dependency edges are not written: the reader derives them
with the engine's own code, running shadow :class:`~mxnb.engine.var.Var` /
:class:`~mxnb.engine.var.Opr` objects through
:func:`~mxnb.engine.edges.note_push` (debug mode's chains use the same).

Records: ``extend_raw((code, field, ...))`` (list.extend of a tuple does not
release the GIL, so records of different threads never interleave).  Each
kind has one layout, :data:`LAYOUTS`, whose fields always have the same
types (a tuple is a tuple even when it holds one id or none):

    RAW_VAR_NEW   t, var_id, name
    RAW_VAR_NAME  t, var_id, name          a var first pushed on since attach
    RAW_PUSH      t, op_id, name, ctx, n_const, var_ids, priority, ident, waits, starter
                  var_ids: the const var ids, then the mutate var ids;
                  starter: the worker that the pushing thread starts it as at once
                  (the naive engine's 'main'), else None: then the push is also
                  its start, with one clock read for push, ready and start
    RAW_START     t, op_id, worker, ident
    RAW_END       t, op_id, error, skipped, deleted var ids, ready op ids, chain
                  chain: the RunContext of the worker that starts ready[0] at once
                  (a link of a chain), else None: then the end is also that start
    RAW_ALLOC     t, ctx_label, handle_id, nbytes, pool_hit   (written by mxnb/storage.py)
    RAW_FREE      t, ctx_label, handle_id, nbytes, to_pool
    RAW_DEVICE    t, op_id, stream, clock, start, end   (written by a GPU worker, .device_events)
                  start, end: the CUDA events around the op's kernels, read as
                  times by ``clock`` (a :class:`~.device_timing.DeviceClock`) when
                  the trace is read, after the device ran them
    RAW_DONE      t, op_id                 a short form: a RAW_END that succeeded,
                  deleted nothing and made nothing ready (the commonest end; it
                  measured 0.05 us an op cheaper than the full RAW_END)
    RAW_LINK      t, op_id, successor, chain
                  a short form: a RAW_END that succeeded, deleted nothing and made
                  one op ready, which the same worker starts at once (a link of a
                  chain; chain is never None): the threaded engines' commonest end
    RAW_PUSH_ONE  (as RAW_PUSH, with var_id, one int, for var_ids)
                  a short form: a push on one var (the commonest push)

A ``starter`` or ``chain`` stands for a RAW_START at the same time, and a
short form for its general record (``tests/engine/test_records.py`` writes
them out and compares the events, on every engine).  The two short forms
without a tuple of ids paid for themselves where tracing is timed
(``benchmarks/engine.py --tracing``): a one-id tuple is a new object per op
for the garbage collector to track, and the chain's end wrote three fields
it does not need.  With both, tracing a chain cost 0.13 us an op less on the
naive engine and 0.2 less on ``threaded_per_device``.

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
    OpDevice,
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
    "record_device",
    "record_done",
    "record_end",
    "record_push",
    "record_start",
    "record_var_name",
    "record_var_new",
]

now = time.perf_counter
_now = now

#: The fields of each kind of record, after its code (the code is the index).
LAYOUTS: tuple[tuple[str, ...], ...] = (
    ("t", "var_id", "name"),
    ("t", "var_id", "name"),
    ("t", "op_id", "name", "ctx", "n_const", "var_ids", "priority", "ident", "waits", "starter"),
    ("t", "op_id", "worker", "ident"),
    ("t", "op_id", "error", "skipped", "deleted", "ready", "chain"),
    ("t", "ctx", "handle_id", "nbytes", "pool_hit"),
    ("t", "ctx", "handle_id", "nbytes", "to_pool"),
    ("t", "op_id"),
    ("t", "op_id", "stream", "clock", "start", "end"),
    ("t", "op_id", "successor", "chain"),
    ("t", "op_id", "name", "ctx", "n_const", "var_id", "priority", "ident", "waits", "starter"),
)
(
    RAW_VAR_NEW,
    RAW_VAR_NAME,
    RAW_PUSH,
    RAW_START,
    RAW_END,
    RAW_ALLOC,
    RAW_FREE,
    RAW_DONE,
    RAW_DEVICE,
    RAW_LINK,
    RAW_PUSH_ONE,
) = range(len(LAYOUTS))
#: Items per record, code included, by code.
RECORD_SIZE = tuple(1 + len(fields) for fields in LAYOUTS)
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


def record_var_name(var: Var) -> None:
    """Log ``var``'s new name (given while recording); the latest VarName names a var.

    Not on any hot path (names are given at bind time): the event is built here.
    """
    seen_vars.add(var.id)  # named now: its first push need not name it again
    append_raw(VarName(_now(), var.id, var.name))


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
    waits = opr.wait_count
    if starts_as is not None and waits == 0:
        opr.state = RUNNING
    else:
        starts_as = None
    ids: int | tuple[int, ...]
    if len(touched) == 1:  # one var (the commonest push): its id alone, RAW_PUSH_ONE
        code, ids = RAW_PUSH_ONE, touched[0].id
        if ids not in seen_vars:
            _name_vars(touched)
    else:
        var_ids = tuple(map(_var_id, touched))
        if not seen_vars.issuperset(var_ids):
            _name_vars(touched)
        code, ids = RAW_PUSH, var_ids
    _extend(
        (
            code,
            _now(),
            opr.id,
            opr.name,
            opr.ctx,
            n_const,
            ids,
            opr.priority,
            get_ident(),
            waits,
            starts_as,
        )
    )


def record_start(opr: Opr, worker: str, thread: int | None) -> None:
    """Log that ``worker`` starts ``opr`` (unless its push or its predecessor's end already did)."""
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
    if exc is not None or inherited is not None or opr.deletes is not None:
        _record_unusual_end(opr, exc, inherited, ready)
    elif not ready:  # the commonest end
        _extend((RAW_DONE, _now(), opr.id))
    elif len(ready) == 1:  # a link of a chain, maybe started by the same worker at once
        successor = ready[0]
        if chain is not None and successor.ctx is opr.ctx and successor.copy is opr.copy:
            successor.state = RUNNING
            _extend((RAW_LINK, _now(), opr.id, successor.id, chain))
        else:
            _extend((RAW_END, _now(), opr.id, None, False, (), (successor.id,), None))
    else:
        _extend((RAW_END, _now(), opr.id, None, False, (), tuple(map(_var_id, ready)), None))


def _record_unusual_end(
    opr: Opr, exc: BaseException | None, inherited: Any, ready: list[Opr]
) -> None:
    """:func:`record_end` of an op that failed, was skipped, or deleted vars (never a chain link)."""
    error: str | None = None
    if exc is not None:
        error = repr(exc)
    elif inherited is not None:
        error = f"skipped: input failed in op '{inherited.op_name}'"
    skipped = exc is None and inherited is not None
    deleted = () if opr.deletes is None else tuple(map(_var_id, opr.deletes))
    ready_ids = tuple(map(_var_id, ready))
    _extend((RAW_END, _now(), opr.id, error, skipped, deleted, ready_ids, None))


def record_done(opr: Opr) -> None:
    """Log that ``opr`` succeeded and made no op ready: :func:`record_end`'s commonest end."""
    _extend((RAW_DONE, _now(), opr.id))


def record_device(opr: Opr, stream: str, clock: Any, start: Any, end: Any) -> None:
    """Log the CUDA events around ``opr``'s kernels on ``stream`` (read as times later)."""
    _extend((RAW_DEVICE, _now(), opr.id, stream, clock, start, end))


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

    Keeps the shadow vars and ops the dependency notes run over.  Ops pushed
    before the recorder attached are unknown to it: edges to them are not
    found, and their ready / start / end events are left out, so that every
    op event of a trace follows its op's push (the views and the Chrome
    reader rely on it; an op in flight at attach once broke a dist job's
    trace).
    """

    def __init__(self, named: set[int]) -> None:
        self.named = named  # var ids a VarNew / VarName event has named
        self._vars: dict[int, Var] = {}  # var id -> shadow var
        self._ops: dict[int, Opr] = {}  # op id -> shadow op, until its end
        self._threads: dict[int, str] = {}  # thread ident -> name, for one read
        self._devices: dict[int, str] = {}  # id(Context) -> its repr, for one read
        # one reader per kind of record, indexed by its code (the order of LAYOUTS)
        self._readers = (
            self._var_new,
            self._var_name,
            self._push,
            self._start,
            self._end,
            self._alloc,
            self._free,
            self._done,
            self._device,
            self._link,
            self._push_one,
        )

    def read(self, items: list[Any], limit: int, add: Callable[[Any], None]) -> int:
        """Build at most ``limit`` records of ``items`` into events passed to ``add``; return the items used."""
        self._threads.clear()  # idents are reused by new threads
        self._devices.clear()  # virtual GPUs may have been switched since the last read
        readers = self._readers
        i = 0
        size = len(items)
        while i < size and limit:
            limit -= 1
            code = items[i]
            if type(code) is int:
                end = i + RECORD_SIZE[code]
                readers[code](add, *items[i + 1 : end])
                i = end
            else:  # an event, or a (builder, *args) record
                i += 1
                self._built(add, code)
        return i

    def _built(self, add: Callable[[Any], None], item: Any) -> None:
        built = item[0](*item[1:]) if type(item) is tuple else item
        for event in built if type(built) is tuple else (built,):
            if type(event) is VarNew or type(event) is VarName:
                self.named.add(event.var_id)
            add(event)

    def _var_new(self, add, t, var_id, name) -> None:
        self.named.add(var_id)
        add(VarNew(t, var_id, name))

    def _var_name(self, add, t, var_id, name) -> None:
        if var_id not in self.named:
            self.named.add(var_id)
            add(VarName(t, var_id, name))

    def _push(self, add, t, op_id, name, ctx, n_const, ids, priority, ident, waits, starter):
        const, mutate = ids[:n_const], ids[n_const:]
        opr = Opr(op_id, name, tuple(map(self._var, const)), tuple(map(self._var, mutate)))
        self._ops[op_id] = opr
        deps = tuple(Dependency(other.id, var.id, kind) for other, var, kind in note_push(opr))
        device = self._devices.get(id(ctx))
        if device is None:
            device = self._devices[id(ctx)] = repr(ctx)
        thread = self._thread(ident)
        add(OpPush(t, op_id, name, device, const, mutate, priority, deps, thread))
        if waits == 0:
            add(OpReady(t, op_id))
        if starter is not None:
            add(OpStart(t, op_id, starter, thread))

    def _start(self, add, t, op_id, worker, ident) -> None:
        if op_id in self._ops:  # else pushed before the recorder attached
            add(OpStart(t, op_id, worker, self._thread(ident)))

    def _end(self, add, t, op_id, error, skipped, deleted, ready, chain) -> None:
        opr = self._ops.pop(op_id, None)
        if opr is not None:
            note_done(opr)
            add(OpEnd(t, op_id, error, skipped))
        for var_id in deleted:
            self._vars.pop(var_id, None)
            add(VarDelete(t, var_id))
        ops = self._ops
        for successor in ready:
            if successor in ops:
                add(OpReady(t, successor))
        if chain is not None and ready[0] in ops:
            add(OpStart(t, ready[0], chain.worker, self._thread(chain.thread)))

    def _done(self, add, t, op_id) -> None:
        self._end(add, t, op_id, None, False, (), (), None)

    def _link(self, add, t, op_id, successor, chain) -> None:
        self._end(add, t, op_id, None, False, (), (successor,), chain)

    def _push_one(self, add, t, op_id, name, ctx, n_const, var_id, priority, ident, waits, starter):
        self._push(add, t, op_id, name, ctx, n_const, (var_id,), priority, ident, waits, starter)

    def _device(self, add, t, op_id, stream, clock, start, end) -> None:
        if op_id in self._ops:  # pushed since attach (the device record precedes its end)
            add(OpDevice(clock.seconds(start), op_id, stream, clock.seconds(end)))

    def _alloc(self, add, *fields) -> None:
        add(StorageAlloc(*fields))

    def _free(self, add, *fields) -> None:
        add(StorageFree(*fields))

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
