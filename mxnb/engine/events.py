"""The trace's events: small immutable records of what the engine, storage and waits did.

Idea: every view and profiler reads these and nothing else (DESIGN: "the
widgets never call into the engine's internals").  Each event is a
``NamedTuple`` (immutable, cheap to build, fields by name) that also derives
from :class:`Event`, so ``isinstance(e, Event)`` holds; two events are equal
only when they are of the same kind with the same fields.

Rule: ``time`` is ``time.perf_counter()`` seconds; ids are the engine's (op
ids, var ids) or the storage manager's (handle ids).

Events:
    VarNew / VarDelete       a var is created / its delete op ran
    VarName                  a var made before recording began, named when first pushed on
    OpPush                   an op is pushed, with the ops it waits on and why
    OpReady                  its wait count reached zero; it goes to a worker pool
    OpStart / OpEnd          a worker runs it (``OpEnd.error`` / ``skipped`` on failure)
    WaitBegin / WaitEnd      a thread blocks in wait_for_var / wait_for_all
    StorageAlloc / StorageFree   memory from / back to a storage manager (pool hit or miss)

State kept: none.

Example::

    >>> push = OpPush(0.0, 1, 'add', 'cpu(0)', (3,), (4,), 0, ())
    >>> push.name, isinstance(push, Event), push == OpReady(0.0, 1)
    ('add', True, False)
"""

from __future__ import annotations

import enum
from typing import Any, NamedTuple

__all__ = [
    "EVENT_CLASSES",
    "DepKind",
    "Dependency",
    "Event",
    "OpEnd",
    "OpPush",
    "OpReady",
    "OpStart",
    "StorageAlloc",
    "StorageFree",
    "VarDelete",
    "VarName",
    "VarNew",
    "WaitBegin",
    "WaitEnd",
]


class DepKind(enum.Enum):
    """Why one op waits on another through a var."""

    RAW = "read-after-write"  # this op reads a var an earlier op writes
    WAR = "write-after-read"  # this op writes a var earlier ops still read
    WAW = "write-after-write"  # this op writes a var an earlier op writes


class Dependency(NamedTuple):
    """One edge of the dependency DAG: this op waits on ``op_id`` through ``var_id``."""

    op_id: int
    var_id: int
    kind: DepKind


class Event:
    """Base of all trace events (a mixin: each event is also a NamedTuple with a ``time``)."""

    __slots__ = ()
    time: float

    def __eq__(self, other: object) -> bool:
        return type(self) is type(other) and tuple.__eq__(self, other)  # type: ignore[arg-type, operator]

    def __ne__(self, other: object) -> bool:
        return not self == other

    def __hash__(self) -> int:
        return hash((type(self).__name__, tuple.__hash__(self)))  # type: ignore[arg-type]


class _VarNew(NamedTuple):
    time: float
    var_id: int
    name: str


class VarNew(Event, _VarNew):
    """A var is created."""

    __slots__ = ()


class _VarName(NamedTuple):
    time: float
    var_id: int
    name: str


class VarName(Event, _VarName):
    """A var the trace first meets in a push, made before recording began: its name."""

    __slots__ = ()


class _VarDelete(NamedTuple):
    time: float
    var_id: int


class VarDelete(Event, _VarDelete):
    """A var's delete op ran."""

    __slots__ = ()


class _OpPush(NamedTuple):
    time: float
    op_id: int
    name: str
    ctx: str  # str(Context), e.g. 'cpu(0)'; virtual GPUs as 'gpu(0) [virtual]'
    const_vars: tuple[int, ...]
    mutate_vars: tuple[int, ...]
    priority: int
    waits_on: tuple[Dependency, ...]  # unfinished earlier ops this op must wait for
    thread: str = ""  # name of the pushing thread


class OpPush(Event, _OpPush):
    """An op is pushed, with the earlier ops it must wait for and why."""

    __slots__ = ()


class _OpReady(NamedTuple):
    time: float
    op_id: int


class OpReady(Event, _OpReady):
    """An op's wait count reached zero: it goes to a worker pool (or a step)."""

    __slots__ = ()


class _OpStart(NamedTuple):
    time: float
    op_id: int
    worker: str  # e.g. 'cpu(0)/0', 'gpu(1)/2', 'copy/0', 'main' (naive engine)
    thread: str


class OpStart(Event, _OpStart):
    """A worker starts an op."""

    __slots__ = ()


class _OpEnd(NamedTuple):
    time: float
    op_id: int
    error: str | None = None  # repr of the exception, None on success
    skipped: bool = False  # True: not run because an input var had failed


class OpEnd(Event, _OpEnd):
    """An op completed (succeeded, failed or was skipped)."""

    __slots__ = ()


class _WaitBegin(NamedTuple):
    time: float
    wait_id: int
    var_id: int | None  # None: wait_for_all
    thread: str


class WaitBegin(Event, _WaitBegin):
    """A thread blocks in ``wait_for_var`` (``var_id``) or ``wait_for_all`` (None)."""

    __slots__ = ()


class _WaitEnd(NamedTuple):
    time: float
    wait_id: int


class WaitEnd(Event, _WaitEnd):
    """The wait ``wait_id`` returned (or raised)."""

    __slots__ = ()


class _StorageAlloc(NamedTuple):
    time: float
    ctx: str
    handle_id: int
    nbytes: int  # bytes handed out (after rounding to the size class)
    pool_hit: bool  # True: reused a pooled block; False: fresh allocation


class StorageAlloc(Event, _StorageAlloc):
    """Memory handed out by a storage manager."""

    __slots__ = ()


class _StorageFree(NamedTuple):
    time: float
    ctx: str
    handle_id: int
    nbytes: int
    to_pool: bool  # True: kept in the pool for reuse; False: returned to the system


class StorageFree(Event, _StorageFree):
    """Memory given back to a storage manager."""

    __slots__ = ()


#: Event class by name (the chrome-trace file names each event's kind).
EVENT_CLASSES: dict[str, Any] = {
    cls.__name__: cls
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
    )
}
