"""The event record every view and profiler reads.

Idea: the engine, the storage managers and the executor describe what they
do as small frozen events appended to the attached recorders.  Views
(``mxnb.widgets``), the chrome-trace export and the stats table read these
events only, never engine internals.  With no recorder attached the cost to
the engine is one flag check: ``if trace.enabled: ...``.

Rule: recording must stay cheaper than the ops it records.  The engine
extends one shared log with the fields of each record (``extend_raw``, bound
once: a record is a run of plain values, not an object); a :class:`Trace`
builds the events from them the first time ``tr.events`` is read.  Vars made
before recording began are named by a ``VarName`` event the first time a
recorded push uses them.

Events (times are ``time.perf_counter()`` seconds):
    VarNew / VarDelete       a var is created / its delete op ran
    VarName                  a var made before recording began, named when first pushed on
    OpPush                   an op is pushed, with the ops it waits on and why
    OpReady                  its wait count reached zero; it goes to a worker pool
    OpStart / OpEnd          a worker runs it (``OpEnd.error`` / ``skipped`` on failure)
    WaitBegin / WaitEnd      a thread blocks in wait_for_var / wait_for_all
    StorageAlloc / StorageFree   memory from / back to a storage manager (pool hit or miss)

Reading a trace: ``tr.stats()`` (per-op-name table, like MXNet's aggregate
profiler), ``tr.explain(op)`` (why an op ran when it did), ``tr.ops()``
(one summary per op), ``tr.to_chrome_trace(path)`` / ``Trace.from_chrome_trace``
(Chrome / Perfetto JSON with dependency arrows, and back).

State kept:
    enabled      True while at least one recorder is attached (the engine's flag)
    _recorders   the attached :class:`Trace` objects
    _raw         the shared log of events and raw records while any is attached

Example::

    >>> import mxnb as mx
    >>> eng = mx.engine.get()
    >>> with mx.engine.trace() as tr:
    ...     v = eng.new_var(name='a')
    ...     _ = eng.push_sync(lambda rctx: None, mx.cpu(), mutate_vars=[v], name='write_a')
    ...     eng.wait_for_all()
    >>> [e.name for e in tr.events_of(OpPush)]
    ['write_a']
    >>> tr.stats()['write_a'].count
    1
"""

from __future__ import annotations

import enum
import json
import os
import threading
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, fields
from typing import Any, TypeVar

from ..base import FormatError

__all__ = [
    "DepKind",
    "Dependency",
    "Event",
    "OpEnd",
    "OpPush",
    "OpReady",
    "OpStart",
    "OpSummary",
    "StatsRow",
    "StorageAlloc",
    "StorageFree",
    "Trace",
    "TraceStats",
    "VarDelete",
    "VarName",
    "VarNew",
    "WaitBegin",
    "WaitEnd",
    "append_raw",
    "emit",
    "extend_raw",
    "now",
    "record",
]

now = time.perf_counter


class DepKind(enum.Enum):
    """Why one op waits on another through a var."""

    RAW = "read-after-write"  # this op reads a var an earlier op writes
    WAR = "write-after-read"  # this op writes a var earlier ops still read
    WAW = "write-after-write"  # this op writes a var an earlier op writes


@dataclass(frozen=True)
class Dependency:
    """One edge of the dependency DAG: this op waits on ``op_id`` through ``var_id``."""

    op_id: int
    var_id: int
    kind: DepKind


@dataclass(frozen=True)
class Event:
    """Base of all trace events; ``time`` is ``time.perf_counter()`` seconds."""

    time: float


@dataclass(frozen=True)
class VarNew(Event):
    var_id: int
    name: str


@dataclass(frozen=True)
class VarName(Event):
    """A var the trace first meets in a push, made before recording began: its name."""

    var_id: int
    name: str


@dataclass(frozen=True)
class VarDelete(Event):
    var_id: int


@dataclass(frozen=True)
class OpPush(Event):
    op_id: int
    name: str
    ctx: str  # str(Context), e.g. 'cpu(0)'; virtual GPUs as 'gpu(0) [virtual]'
    const_vars: tuple[int, ...]
    mutate_vars: tuple[int, ...]
    priority: int
    waits_on: tuple[Dependency, ...]  # unfinished earlier ops this op must wait for
    thread: str = ""  # name of the pushing thread


@dataclass(frozen=True)
class OpReady(Event):
    op_id: int


@dataclass(frozen=True)
class OpStart(Event):
    op_id: int
    worker: str  # e.g. 'cpu(0)/0', 'gpu(1)/2', 'copy/0', 'main' (naive engine)
    thread: str


@dataclass(frozen=True)
class OpEnd(Event):
    op_id: int
    error: str | None = None  # repr of the exception, None on success
    skipped: bool = False  # True: not run because an input var had failed


@dataclass(frozen=True)
class WaitBegin(Event):
    wait_id: int
    var_id: int | None  # None: wait_for_all
    thread: str


@dataclass(frozen=True)
class WaitEnd(Event):
    wait_id: int


@dataclass(frozen=True)
class StorageAlloc(Event):
    ctx: str
    handle_id: int
    nbytes: int  # bytes handed out (after rounding to the size class)
    pool_hit: bool  # True: reused a pooled block; False: fresh allocation


@dataclass(frozen=True)
class StorageFree(Event):
    ctx: str
    handle_id: int
    nbytes: int
    to_pool: bool  # True: kept in the pool for reuse; False: returned to the system


E = TypeVar("E", bound=Event)

# ---------------------------------------------------------------------------
# recorders
# ---------------------------------------------------------------------------

enabled: bool = False
_recorders: tuple[Trace, ...] = ()
_attach_lock = threading.Lock()

# One shared log while any recorder is attached: events and raw records, in
# order.  Each attached Trace keeps a cursor into it and builds its events
# from there; the log is emptied when the last recorder detaches.
_raw: list[Any] = []
append_raw = _raw.append  # one item: an event, or a (builder, *args) record
extend_raw = _raw.extend  # the engine's hot path: the fields of one coded record


def emit(event: Event) -> None:
    """Append ``event`` to every attached recorder (call only when ``enabled``)."""
    append_raw(event)  # list.append is atomic under the GIL


def record(*raw: Any) -> None:
    """Append a raw record ``(builder, *args)``; it becomes ``builder(*args)`` when read.

    Building frozen dataclasses costs more than the op they describe, so
    events are built lazily, off the hot path, the first time
    :attr:`Trace.events` is read.  A builder returns one event or a tuple of
    them.  The engine itself extends the log with coded records (``RAW_PUSH``
    ..., see below) with ``extend_raw``.
    """
    append_raw(raw)


def _fast_constructor(cls: type[Any]) -> Any:
    """A constructor for a frozen dataclass that fills ``__dict__`` directly.

    The generated ``__init__`` of a frozen dataclass calls ``object.__setattr__``
    per field, three times slower; the events are equal either way.
    """
    names = [f.name for f in fields(cls)]
    body = "".join(f"    values[{name!r}] = {name}\n" for name in names)
    source = (
        f"def make({', '.join(names)}):\n"
        "    event = new(cls)\n"
        "    values = event.__dict__\n"
        f"{body}    return event\n"
    )
    namespace: dict[str, Any] = {"new": object.__new__, "cls": cls}
    exec(source, namespace)  # noqa: S102 - generated from the dataclass's own field names
    make = namespace["make"]
    make.__doc__ = f"Build a {cls.__name__} without the frozen dataclass's per-field setattr."
    return make


_make_push = _fast_constructor(OpPush)
_make_ready = _fast_constructor(OpReady)
_make_start = _fast_constructor(OpStart)
_make_end = _fast_constructor(OpEnd)
_make_var_new = _fast_constructor(VarNew)
_make_var_delete = _fast_constructor(VarDelete)
_make_var_name = _fast_constructor(VarName)
_make_dependency = _fast_constructor(Dependency)
_make_alloc = _fast_constructor(StorageAlloc)
_make_free = _fast_constructor(StorageFree)

_thread_names: dict[int, str] = {}  # thread ident -> name, for one build


def _thread_name(ident: int) -> str:
    name = _thread_names.get(ident)
    if name is None:
        thread = threading._active.get(ident)  # type: ignore[attr-defined]  # ident -> live Thread
        name = _thread_names[ident] = thread.name if thread is not None else f"thread-{ident}"
    return name


# The engine's raw records.  A record is a run of items in the log: a code
# (a small int), then a fixed number of fields for that code.  The engine
# adds one with ``extend_raw((code, field, ...))``: the tuple is freed at
# once and the log only grows by the field references (list.extend of a
# tuple runs without releasing the GIL, so records of different threads
# never interleave).  Fields are numbers, strings and long-lived objects
# (contexts, workers' RunContexts), never the engine's ops or vars: nothing
# a record holds is allocated for it except its time, and nothing in the log
# is left for the garbage collector to walk (holding the op objects once cost more than all
# the rest of tracing together; a tuple per record, half of it).
#
#   RAW_VAR_NEW, t, var_id, name
#   RAW_VAR_NAME, t, var_id, name      a var first pushed on since attach
#   RAW_PUSH, t, op_id, name, ctx, n_const, var_ids, priority, ident, waits
#       waits: how many of its vars the op waits for (0: it is ready)
#       var_ids: the const var ids, then the mutate var ids (one var: its id alone)
#   RAW_PUSH_START, t, op_id, name, ctx, n_const, var_ids, priority, ident, worker
#       as RAW_PUSH with waits=0, and the op started at once in the pushing
#       thread (the naive engine's quiet path): one record and clock read for two
#   RAW_START, t, op_id, worker, ident
#   RAW_END, t, op_id, error, skipped, ids of the vars deleted or None, ops made ready
#       ops made ready: () or one op id or a tuple of them
#   RAW_DONE, t, op_id, ops made ready
#       RAW_END of an op that succeeded and deleted no var (most ends: three items fewer)
#   RAW_DONE_START, t, op_id, successor_id, run_ctx
#       RAW_DONE of an op that made one op ready, which the same worker thread
#       starts at once (a link of a chain): one record and clock read for two;
#       run_ctx: that worker's RunContext (long-lived: one per worker and context)
#   RAW_ALLOC, t, ctx_label, handle_id, nbytes, pool_hit     a StorageAlloc
#   RAW_FREE, t, ctx_label, handle_id, nbytes, to_pool       a StorageFree
#       written by the storage managers (mxnb/storage.py), one per block an
#       array takes or gives back: a frozen dataclass built there cost more
#       than the engine's records of the op that used the block
#
# Dependency edges are not computed at push: the engine appends push and end
# records under its lock, so the log is in the engine's own order, and each
# Trace replays the engine's var bookkeeping (last unfinished writer, readers
# since the last write) while it builds.  Edges to ops pushed before the
# recorder attached are therefore not known.
(
    RAW_VAR_NEW,
    RAW_PUSH,
    RAW_START,
    RAW_END,
    RAW_VAR_NAME,
    RAW_PUSH_START,
    RAW_DONE,
    RAW_DONE_START,
    RAW_ALLOC,
    RAW_FREE,
) = range(10)
#: Items per record, code included, by code.
_RECORD_SIZE = (4, 10, 5, 7, 4, 10, 4, 5, 6, 6)
_LONGEST_RECORD = max(_RECORD_SIZE)

# ids of the vars the engine has named in the log since the first recorder
# attached (it appends a RAW_VAR_NAME record the first time it sees one)
seen_vars: set[int] = set()

_device_names: dict[int, str] = {}  # id(Context) -> repr, for one build (the log holds them)


def _device_name(ctx: Any) -> str:
    name = _device_names[id(ctx)] = repr(ctx)
    return name


class Trace:
    """An append-only record of engine, storage and executor events.

    Use as ``with mx.engine.trace() as tr:`` (attached for the block) or call
    :meth:`attach` / :meth:`detach`.  Several recorders may be attached at
    once; each gets every event.  ``tr.events`` is the list of events in the
    order they were recorded; :meth:`stats`, :meth:`explain` and
    :meth:`to_chrome_trace` read it.
    """

    def __init__(self, events: list[Event] | None = None) -> None:
        self._events: list[Event] = list(events) if events else []  # built events
        self._cursor = 0  # while attached: how much of the shared log is built
        self._named: set[int] = {e.var_id for e in self._events if isinstance(e, (VarNew, VarName))}
        self._build_lock = threading.Lock()
        self.attached = False
        # the engine's var bookkeeping, replayed while building (edges are not recorded)
        self._last_write: dict[int, int] = {}  # var id -> its unfinished last writer
        self._readers: dict[int, list[int]] = {}  # var id -> ops reading it since that write
        self._unfinished: dict[int, tuple[int, ...]] = {}  # op id -> its mutate var ids

    def _absorb(self, limit: int | None = None) -> int:
        """Build the records logged since the last call, at most ``limit``; return how many wait."""
        with self._build_lock:
            if not self.attached:
                return 0
            _device_names.clear()  # virtual GPUs may have been switched since the last build
            _thread_names.clear()  # idents are reused by new threads
            if limit is None:
                items = _raw[self._cursor :]  # ends on a record boundary: records come whole
                self._cursor += self._build(items, len(items))
            else:  # limit records fit in limit * _LONGEST_RECORD items
                limit = max(1, limit)
                items = _raw[self._cursor : self._cursor + limit * _LONGEST_RECORD]
                self._cursor += self._build(items, limit)
            return max(0, len(_raw) - self._cursor)

    def build(self, limit: int | None = None) -> int:
        """Build at most ``limit`` records; return how many log items still wait to be built.

        For readers that must not hold the interpreter for long (the live
        monitor builds in bounded chunks and yields between them);
        :attr:`events` builds everything.
        """
        return self._absorb(limit)

    @property
    def pending(self) -> int:
        """How many log items (record fields, events) are logged but not yet built."""
        return max(0, len(_raw) - self._cursor) if self.attached else 0

    @property
    def built_events(self) -> list[Event]:
        """The events built so far, without building more (see :meth:`build`)."""
        return self._events

    def _build(self, items: list[Any], limit: int) -> int:
        """Turn at most ``limit`` records of ``items`` into events; return the items used.

        ``items`` holds whole records (or at least ``limit`` of them).
        """
        events = self._events
        add = events.append
        named = self._named
        make_push, make_ready, make_end = _make_push, _make_ready, _make_end
        make_dependency = _make_dependency
        RAW, WAR, WAW = DepKind.RAW, DepKind.WAR, DepKind.WAW
        last_write, readers, unfinished = self._last_write, self._readers, self._unfinished
        i = 0
        size = len(items)
        while i < size and limit:
            limit -= 1
            code = items[i]
            if type(code) is not int:
                i += 1
                if type(code) is tuple:  # (builder, *args) from record(): one event or a tuple
                    built = code[0](*code[1:])
                    for event in built if type(built) is tuple else (built,):
                        if type(event) is VarNew:
                            named.add(event.var_id)
                        add(event)
                    continue
                if type(code) is VarNew:
                    named.add(code.var_id)
                add(code)
                continue
            end = i + _RECORD_SIZE[code]  # sizes come from the table only
            fields = items[i + 1 : end]
            i = end
            if code == RAW_DONE or code == RAW_END or code == RAW_DONE_START:
                if code == RAW_END:
                    t, op_id, error, skipped, deleted, ready = fields
                else:  # succeeded, deleted nothing
                    error, skipped, deleted = None, False, None
                    if code == RAW_DONE:
                        t, op_id, ready = fields
                    else:
                        t, op_id, ready, rctx = fields
                for var_id in unfinished.pop(op_id, ()):
                    if last_write.get(var_id) == op_id:
                        del last_write[var_id]
                add(make_end(t, op_id, error, skipped))
                if deleted is not None:
                    for var_id in deleted:
                        add(_make_var_delete(t, var_id))
                if type(ready) is int:
                    add(make_ready(t, ready))
                    if code == RAW_DONE_START:  # the same worker started it at once
                        ident = rctx.thread
                        name = _thread_names.get(ident) or _thread_name(ident)
                        add(_make_start(t, ready, rctx.worker, name))
                else:
                    for successor in ready:
                        add(make_ready(t, successor))
            elif code == RAW_START:
                t, op_id, worker, ident = fields
                add(_make_start(t, op_id, worker, _thread_names.get(ident) or _thread_name(ident)))
            elif code == RAW_PUSH or code == RAW_PUSH_START:
                t, op_id, name, ctx, n_const, ids, priority, ident, last = fields
                if type(ids) is int:
                    ids = (ids,)
                ready = last == 0 if code == RAW_PUSH else True
                const = ids[:n_const]
                mutate = ids[n_const:]
                deps = []  # the engine's rule, replayed: see the note on raw records
                for var_id in const:
                    writer = last_write.get(var_id)
                    if writer is not None:
                        deps.append(make_dependency(writer, var_id, RAW))
                for var_id in mutate:
                    writer = last_write.get(var_id)
                    if writer is not None:
                        deps.append(make_dependency(writer, var_id, WAW))
                    for reader in readers.get(var_id, ()):
                        if reader in unfinished:
                            deps.append(make_dependency(reader, var_id, WAR))
                unfinished[op_id] = mutate  # before pruning readers: this op is one
                for var_id in const:
                    waiting = readers.get(var_id)
                    if waiting is None:
                        readers[var_id] = [op_id]
                    else:
                        waiting.append(op_id)
                        if len(waiting) > 64 and len(waiting) & (len(waiting) - 1) == 0:
                            waiting[:] = [r for r in waiting if r in unfinished]
                for var_id in mutate:
                    last_write[var_id] = op_id
                    readers.pop(var_id, None)
                add(
                    make_push(
                        t,
                        op_id,
                        name,
                        _device_names.get(id(ctx)) or _device_name(ctx),
                        const,
                        mutate,
                        priority,
                        tuple(deps),
                        _thread_names.get(ident) or _thread_name(ident),
                    )
                )
                if ready:
                    add(make_ready(t, op_id))
                if code == RAW_PUSH_START:
                    add(_make_start(t, op_id, last, _thread_names[ident]))
            elif code == RAW_ALLOC:
                add(_make_alloc(*fields))
            elif code == RAW_FREE:
                add(_make_free(*fields))
            else:  # RAW_VAR_NAME or RAW_VAR_NEW
                t, var_id, name = fields
                if code == RAW_VAR_NEW:
                    named.add(var_id)
                    add(_make_var_new(t, var_id, name))
                elif var_id not in named:
                    named.add(var_id)
                    add(_make_var_name(t, var_id, name))
        return i

    @property
    def events(self) -> list[Event]:
        """The recorded events, in order (raw engine records are built here, once)."""
        self._absorb()
        return self._events

    @events.setter
    def events(self, events: list[Event]) -> None:
        self._absorb()
        self._events = list(events)
        self._named = {e.var_id for e in self._events if isinstance(e, (VarNew, VarName))}

    def attach(self) -> Trace:
        """Start recording (idempotent)."""
        global _recorders, enabled
        with _attach_lock:
            if not self.attached:
                if not _recorders:
                    del _raw[:]  # records that raced the last detach
                seen_vars.clear()  # the engine names every var again for the new recorder
                with self._build_lock:
                    self._cursor = len(_raw)
                    self.attached = True
                _recorders = (*_recorders, self)
                enabled = True
        return self

    def detach(self) -> Trace:
        """Stop recording (idempotent); the events recorded so far stay."""
        global _recorders, enabled
        with _attach_lock:
            if self.attached:
                self._absorb()
                with self._build_lock:
                    self.attached = False
                _recorders = tuple(r for r in _recorders if r is not self)
                enabled = bool(_recorders)
                if not _recorders:
                    del _raw[:]
                    seen_vars.clear()
        return self

    def __enter__(self) -> Trace:  # noqa: PYI034 - Trace is final in practice
        self.attach()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.detach()

    def clear(self) -> None:
        """Forget the events recorded so far."""
        self._absorb()
        self._events = []
        self._named = set()  # vars seen again are named again

    def __len__(self) -> int:
        return len(self.events)

    def __iter__(self) -> Iterator[Event]:
        return iter(list(self.events))

    def events_of(self, *kinds: type[E]) -> list[E]:
        """Return the recorded events of the given classes, in order."""
        return [event for event in list(self.events) if isinstance(event, kinds)]  # type: ignore[misc]

    # -- reading the record ------------------------------------------------
    def ops(self) -> dict[int, OpSummary]:
        """Return one :class:`OpSummary` per op seen, keyed by op id, in push order."""
        return _summarise(self.events)

    def var_names(self) -> dict[int, str]:
        """Return var id -> name for every var created or pushed on while recording."""
        return {e.var_id: e.name for e in self.events if isinstance(e, (VarNew, VarName))}

    def stats(self) -> TraceStats:
        """Per-op-name count / total / mean / min / max run time (MXNet's aggregate profiler)."""
        return TraceStats.from_ops(self.ops().values())

    def explain(self, op: int | str) -> str:
        """Say in plain words why op ``op`` (an id, or the name of the latest such op) ran when it did."""
        return _explain(self, op)

    def to_chrome_trace(self, path: str | os.PathLike[str] | None = None) -> dict[str, Any]:
        """Write (when ``path`` is given) and return the Chrome / Perfetto trace-event JSON.

        One complete ('X') event per op on a lane per worker, flow events
        ('s' / 'f') for every dependency edge, 'X' events for waits on a lane
        per waiting thread, memory counters ('C') per context, and metadata
        naming the lanes.  The exact mxnb events ride along under the
        ``"mxnb"`` key so :meth:`from_chrome_trace` loads them back losslessly.
        """
        document = _chrome_document(self.events)
        if path is not None:
            with open(path, "w", encoding="utf-8") as handle:
                json.dump(document, handle)
        return document

    @classmethod
    def from_chrome_trace(cls, source: str | os.PathLike[str] | dict[str, Any]) -> Trace:
        """Load a trace written by :meth:`to_chrome_trace` (a path or the loaded JSON) back into events."""
        if isinstance(source, dict):
            document = source
        else:
            with open(source, encoding="utf-8") as handle:
                document = json.load(handle)
        return cls(_events_from_document(document))


# ---------------------------------------------------------------------------
# per-op summaries, stats and explanations
# ---------------------------------------------------------------------------


@dataclass
class OpSummary:
    """Everything the trace says about one op (times in perf_counter seconds; None: not seen)."""

    op_id: int
    name: str = ""
    ctx: str = ""
    const_vars: tuple[int, ...] = ()
    mutate_vars: tuple[int, ...] = ()
    priority: int = 0
    waits_on: tuple[Dependency, ...] = ()
    thread: str = ""
    push: float | None = None
    ready: float | None = None
    start: float | None = None
    end: float | None = None
    worker: str = ""
    error: str | None = None
    skipped: bool = False

    @property
    def duration(self) -> float | None:
        """Run time in seconds (start to end), None when it did not run to the end."""
        if self.start is None or self.end is None:
            return None
        return self.end - self.start


def _summarise(events: list[Event]) -> dict[int, OpSummary]:
    ops: dict[int, OpSummary] = {}
    for event in list(events):
        kind = type(event)
        if kind is OpPush:
            ops[event.op_id] = OpSummary(  # type: ignore[attr-defined]
                event.op_id,  # type: ignore[attr-defined]
                event.name,  # type: ignore[attr-defined]
                event.ctx,  # type: ignore[attr-defined]
                event.const_vars,  # type: ignore[attr-defined]
                event.mutate_vars,  # type: ignore[attr-defined]
                event.priority,  # type: ignore[attr-defined]
                event.waits_on,  # type: ignore[attr-defined]
                event.thread,  # type: ignore[attr-defined]
                push=event.time,
            )
        elif kind in (OpReady, OpStart, OpEnd):
            op = ops.get(event.op_id)  # type: ignore[attr-defined]
            if op is None:
                op = ops[event.op_id] = OpSummary(event.op_id)  # type: ignore[attr-defined]
            if kind is OpReady:
                op.ready = event.time
            elif kind is OpStart:
                op.start = event.time
                op.worker = event.worker  # type: ignore[attr-defined]
            else:
                op.end = event.time
                op.error = event.error  # type: ignore[attr-defined]
                op.skipped = event.skipped  # type: ignore[attr-defined]
    return ops


@dataclass(frozen=True)
class StatsRow:
    """Aggregate run times of the ops sharing one name (seconds)."""

    name: str
    count: int
    total: float
    mean: float
    min: float
    max: float
    failed: int = 0  # ops that raised or were skipped


@dataclass(frozen=True)
class TraceStats:
    """Per-op-name aggregates, like MXNet's ``profiler.dumps(aggregate)`` table."""

    rows: tuple[StatsRow, ...]

    @classmethod
    def from_ops(cls, ops: Iterable[OpSummary]) -> TraceStats:
        """Aggregate the ops that ran, by name, largest total first.

        Ops pushed before recording began (their push, hence their name, was
        not recorded) are left out rather than counted under an empty name.
        """
        times: dict[str, list[float]] = {}
        failed: dict[str, int] = {}
        for op in ops:
            if op.push is None:
                continue
            if op.error is not None or op.skipped:
                failed[op.name] = failed.get(op.name, 0) + 1
            duration = op.duration
            if duration is not None and not op.skipped:
                times.setdefault(op.name, []).append(duration)
        rows = [
            StatsRow(
                name,
                len(values),
                sum(values),
                sum(values) / len(values),
                min(values),
                max(values),
                failed.get(name, 0),
            )
            for name, values in times.items()
        ]
        rows.sort(key=lambda row: (-row.total, row.name))
        return cls(tuple(rows))

    def __getitem__(self, name: str) -> StatsRow:
        for row in self.rows:
            if row.name == name:
                return row
        raise KeyError(
            f"no op named {name!r} ran in this trace; names: {[r.name for r in self.rows]}"
        )

    def table(self) -> str:
        """Return the aggregate table as text (times in milliseconds)."""
        header = ("Name", "Count", "Total (ms)", "Mean (ms)", "Min (ms)", "Max (ms)", "Failed")
        body = [
            (
                row.name,
                str(row.count),
                f"{row.total * 1e3:.3f}",
                f"{row.mean * 1e3:.3f}",
                f"{row.min * 1e3:.3f}",
                f"{row.max * 1e3:.3f}",
                str(row.failed),
            )
            for row in self.rows
        ]
        widths = [max(len(line[i]) for line in [header, *body]) for i in range(len(header))]
        lines = [
            "  ".join(
                cell.ljust(w) if i == 0 else cell.rjust(w)
                for i, (cell, w) in enumerate(zip(line, widths))
            )
            for line in [header, *body]
        ]
        lines.insert(1, "  ".join("-" * w for w in widths))
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.table()


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:.3f} ms"


def _explain(trace: Trace, op: int | str) -> str:
    ops = trace.ops()
    if isinstance(op, str):
        matches = [summary for summary in ops.values() if summary.name == op]
        if not matches:
            names = sorted({summary.name for summary in ops.values()})
            raise KeyError(f"explain: no op named {op!r} in this trace; names: {names}")
        target = matches[-1]
        note = f" (the latest of {len(matches)} ops named {op!r})" if len(matches) > 1 else ""
    else:
        if op not in ops:
            raise KeyError(f"explain: no op with id {op} in this trace")
        target, note = ops[op], ""
    names = trace.var_names()

    def var(var_id: int) -> str:
        return repr(names.get(var_id, f"var#{var_id}"))

    t0 = min((e.time for e in trace.events), default=0.0)
    lines = [f"op {target.name!r} (id {target.op_id}){note} on {target.ctx or '?'}:"]
    if target.push is not None:
        reads = ", ".join(var(v) for v in target.const_vars) or "nothing"
        writes = ", ".join(var(v) for v in target.mutate_vars) or "nothing"
        lines.append(
            f"  pushed at t={_ms(target.push - t0)} by thread {target.thread!r}; "
            f"reads {reads}; writes {writes}; priority {target.priority}."
        )
    if target.waits_on:
        lines.append(f"  it had to wait for {len(target.waits_on)} earlier op(s):")
        last_end = None
        last_name = ""
        for dep in target.waits_on:
            other = ops.get(dep.op_id)
            who = f"op {other.name!r} (id {dep.op_id})" if other else f"op id {dep.op_id}"
            why = {
                DepKind.RAW: f"it reads {var(dep.var_id)}, which {who} writes first",
                DepKind.WAR: f"it writes {var(dep.var_id)}, which {who} still reads",
                DepKind.WAW: f"it writes {var(dep.var_id)} after {who}, which writes it too",
            }[dep.kind]
            ended = ""
            if other is not None and other.end is not None:
                ended = f" ({who} ended at t={_ms(other.end - t0)})"
                if last_end is None or other.end > last_end:
                    last_end, last_name = other.end, who
            lines.append(f"    - {why}{ended}")
        if last_end is not None:
            lines.append(f"  the last of them to finish was {last_name}: that released it.")
    elif target.push is not None:
        lines.append("  nothing earlier held its vars: it was ready at push.")
    if target.push is not None and target.ready is not None:
        lines.append(f"  ready {_ms(target.ready - target.push)} after push.")
    if target.skipped:
        lines.append(f"  it did not run: {target.error or 'an input had failed'}.")
    elif target.start is not None:
        queued = (
            f" after {_ms(target.start - target.ready)} in the ready queue"
            if target.ready is not None
            else ""
        )
        ran = (
            f" for {_ms(target.duration)}" if target.duration is not None else " (no end recorded)"
        )
        lines.append(f"  it started on worker {target.worker!r}{queued}, and ran{ran}.")
        if target.error:
            lines.append(f"  it failed: {target.error}")
    else:
        lines.append("  it had not started when the trace ended.")
    return "\n".join(lines)


# ---------------------------------------------------------------------------
# Chrome / Perfetto trace-event JSON
# ---------------------------------------------------------------------------

_EVENT_CLASSES: dict[str, type[Event]] = {}


def _encode(event: Event) -> list[Any]:
    values: list[Any] = [type(event).__name__]
    for f in fields(event):
        value = getattr(event, f.name)
        if f.name == "waits_on":
            value = [[d.op_id, d.var_id, d.kind.name] for d in value]
        elif isinstance(value, tuple):
            value = list(value)
        values.append(value)
    return values


def _decode(item: list[Any]) -> Event:
    if not _EVENT_CLASSES:
        for cls in (
            VarNew,
            VarName,
            VarDelete,
            OpPush,
            OpReady,
            OpStart,
            OpEnd,
            WaitBegin,
            WaitEnd,
            StorageAlloc,
            StorageFree,
        ):
            _EVENT_CLASSES[cls.__name__] = cls
    cls = _EVENT_CLASSES.get(item[0])
    if cls is None:
        raise FormatError(f"from_chrome_trace: unknown mxnb event kind {item[0]!r}")
    values = []
    for f, value in zip(fields(cls), item[1:]):
        if f.name == "waits_on":
            value = tuple(Dependency(op_id, var_id, DepKind[kind]) for op_id, var_id, kind in value)
        elif isinstance(value, list):
            value = tuple(value)
        values.append(value)
    return cls(*values)


def _chrome_document(events: list[Event]) -> dict[str, Any]:
    events = list(events)
    t0 = min((e.time for e in events), default=0.0)

    def us(t: float) -> float:
        return round((t - t0) * 1e6, 3)

    ops = _summarise(events)
    lanes: dict[str, int] = {}

    def lane(name: str) -> int:
        if name not in lanes:
            lanes[name] = len(lanes) + 1
        return lanes[name]

    names = {e.var_id: e.name for e in events if isinstance(e, (VarNew, VarName))}
    out: list[dict[str, Any]] = []
    for op in ops.values():
        if op.start is None:
            continue
        end = op.end if op.end is not None else op.start
        out.append(
            {
                "name": op.name,
                "cat": "op",
                "ph": "X",
                "ts": us(op.start),
                "dur": max(round((end - op.start) * 1e6, 3), 0.001),
                "pid": 1,
                "tid": lane(op.worker or "?"),
                "args": {
                    "op_id": op.op_id,
                    "ctx": op.ctx,
                    "reads": [names.get(v, f"var#{v}") for v in op.const_vars],
                    "writes": [names.get(v, f"var#{v}") for v in op.mutate_vars],
                    "priority": op.priority,
                    "queued_us": None if op.push is None else round((op.start - op.push) * 1e6, 3),
                    "error": op.error,
                },
            }
        )
    flow_id = 0
    for op in ops.values():
        if op.start is None:
            continue
        for dep in op.waits_on:
            source = ops.get(dep.op_id)
            if source is None or source.start is None or source.end is None:
                continue
            flow_id += 1
            label = f"{dep.kind.name} {names.get(dep.var_id, f'var#{dep.var_id}')}"
            out.append(
                {
                    "name": label,
                    "cat": "dependency",
                    "ph": "s",
                    "id": flow_id,
                    "ts": us(max(source.start, source.end - 1e-9)),
                    "pid": 1,
                    "tid": lane(source.worker or "?"),
                }
            )
            out.append(
                {
                    "name": label,
                    "cat": "dependency",
                    "ph": "f",
                    "bp": "e",
                    "id": flow_id,
                    "ts": us(op.start),
                    "pid": 1,
                    "tid": lane(op.worker or "?"),
                }
            )
    begins: dict[int, WaitBegin] = {}
    for event in events:
        if isinstance(event, WaitBegin):
            begins[event.wait_id] = event
        elif isinstance(event, WaitEnd) and event.wait_id in begins:
            begin = begins.pop(event.wait_id)
            what = (
                "wait_for_all"
                if begin.var_id is None
                else f"wait_for_var({names.get(begin.var_id, f'var#{begin.var_id}')})"
            )
            out.append(
                {
                    "name": what,
                    "cat": "wait",
                    "ph": "X",
                    "ts": us(begin.time),
                    "dur": max(round((event.time - begin.time) * 1e6, 3), 0.001),
                    "pid": 1,
                    "tid": lane(f"wait: {begin.thread}"),
                }
            )
    in_use: dict[str, int] = {}
    for event in events:
        if isinstance(event, (StorageAlloc, StorageFree)):
            delta = event.nbytes if isinstance(event, StorageAlloc) else -event.nbytes
            in_use[event.ctx] = in_use.get(event.ctx, 0) + delta
            out.append(
                {
                    "name": f"memory {event.ctx}",
                    "cat": "storage",
                    "ph": "C",
                    "ts": us(event.time),
                    "pid": 1,
                    "args": {"bytes": in_use[event.ctx]},
                }
            )
    meta: list[dict[str, Any]] = [
        {"name": "process_name", "ph": "M", "pid": 1, "args": {"name": "mxnb engine"}}
    ]
    for name, tid in lanes.items():
        meta.append(
            {"name": "thread_name", "ph": "M", "pid": 1, "tid": tid, "args": {"name": name}}
        )
        meta.append(
            {
                "name": "thread_sort_index",
                "ph": "M",
                "pid": 1,
                "tid": tid,
                "args": {"sort_index": tid},
            }
        )
    return {
        "traceEvents": meta + out,
        "displayTimeUnit": "ms",
        "mxnb": {"version": 1, "t0": t0, "events": [_encode(e) for e in events]},
    }


def _events_from_document(document: dict[str, Any]) -> list[Event]:
    if not isinstance(document, dict) or "traceEvents" not in document:
        raise FormatError("from_chrome_trace: not a Chrome trace (no 'traceEvents' key)")
    embedded = document.get("mxnb")
    if embedded is not None:
        return [_decode(item) for item in embedded.get("events", [])]
    # A trace from elsewhere (or stripped): rebuild ops from the complete events.
    events: list[Event] = []
    for item in document["traceEvents"]:
        if item.get("ph") != "X" or item.get("cat") != "op":
            continue
        args = item.get("args", {})
        op_id = int(args.get("op_id", len(events)))
        start = item["ts"] / 1e6
        events.append(
            OpPush(start, op_id, item.get("name", ""), args.get("ctx", ""), (), (), 0, ())
        )
        events.append(OpStart(start, op_id, str(item.get("tid", "")), ""))
        events.append(OpEnd(start + item.get("dur", 0) / 1e6, op_id, args.get("error")))
    events.sort(key=lambda e: e.time)
    return events
