"""The trace's events: small immutable records of what the engine, storage and waits did.

Idea: every view and profiler reads these and nothing else (DESIGN: "the
widgets never call into the engine's internals").  Each event is a
``NamedTuple`` (immutable, cheap to build, fields by name), one class per
kind; :data:`Event` is their union, so ``isinstance(e, Event)`` holds.  Two
events are equal only when they are of the same kind with the same fields
(a plain NamedTuple would let ``OpReady(t, 1) == WaitEnd(t, 1)``).

Rule: ``time`` is ``time.perf_counter()`` seconds; ids are the engine's (op
ids, var ids) or the storage manager's (handle ids).

Events:
    VarNew / VarDelete       a var is created / its delete op ran
    VarName                  a var made before recording began, named when first pushed on,
                             or a var given a (new) name while recording
    OpPush                   an op is pushed, with the ops it waits on and why
    OpReady                  its wait count reached zero; it goes to a worker pool
    OpStart / OpEnd          a worker runs it (``OpEnd.error`` / ``skipped`` on failure)
    OpDevice                 on a GPU: when its kernels ran on the worker's stream (OpStart /
                             OpEnd are the host's launch)
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
from typing import Any, NamedTuple, TypeVar, Union, get_args

__all__ = [
    "EVENT_CLASSES",
    "DepKind",
    "Dependency",
    "Event",
    "OpDevice",
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


_E = TypeVar("_E", bound=type)


def _event(cls: _E) -> _E:
    """Make ``cls`` (a NamedTuple) an event: equal only to events of its own kind."""
    cls.__eq__ = _same_event  # type: ignore[method-assign, assignment]
    cls.__ne__ = _other_event  # type: ignore[method-assign, assignment]
    cls.__hash__ = _event_hash  # type: ignore[method-assign, assignment]
    return cls


def _same_event(self: tuple, other: object) -> bool:
    return type(self) is type(other) and tuple.__eq__(self, other)  # type: ignore[arg-type]


def _other_event(self: tuple, other: object) -> bool:
    return not _same_event(self, other)


def _event_hash(self: tuple) -> int:
    return hash((type(self).__name__, tuple.__hash__(self)))


@_event
class VarNew(NamedTuple):
    """A var is created."""

    time: float
    var_id: int
    name: str


@_event
class VarName(NamedTuple):
    """A var's name: one made before recording began, when a push first uses it, or a new one.

    A var renamed while recording (:meth:`~mxnb.engine.base.Engine.name_var`,
    e.g. an executor naming its arrays ``fc1_weight``) gets a second VarName;
    the latest one names it.
    """

    time: float
    var_id: int
    name: str


@_event
class VarDelete(NamedTuple):
    """A var's delete op ran."""

    time: float
    var_id: int


@_event
class OpPush(NamedTuple):
    """An op is pushed, with the earlier ops it must wait for and why."""

    time: float
    op_id: int
    name: str
    ctx: str  # str(Context), e.g. 'cpu(0)'; virtual GPUs as 'gpu(0) [virtual]'
    const_vars: tuple[int, ...]
    mutate_vars: tuple[int, ...]
    priority: int
    waits_on: tuple[Dependency, ...]  # unfinished earlier ops this op must wait for
    thread: str = ""  # name of the pushing thread


@_event
class OpReady(NamedTuple):
    """An op's wait count reached zero: it goes to a worker pool (or a step)."""

    time: float
    op_id: int


@_event
class OpStart(NamedTuple):
    """A worker starts an op."""

    time: float
    op_id: int
    worker: str  # e.g. 'cpu(0)/0', 'gpu(1)/2', 'copy/0', 'main' (naive engine)
    thread: str


@_event
class OpEnd(NamedTuple):
    """An op completed (succeeded, failed or was skipped)."""

    time: float
    op_id: int
    error: str | None = None  # repr of the exception, None on success
    skipped: bool = False  # True: not run because an input var had failed


@_event
class OpDevice(NamedTuple):
    """On a GPU, an op's kernels ran on its worker's stream from ``time`` to ``end``.

    Device times, read from CUDA events and put on the trace's clock
    (:mod:`.device_timing`); the op's OpStart / OpEnd are its launch on the host.
    """

    time: float
    op_id: int
    stream: str  # the lane: the launching worker's name + ' device', e.g. 'gpu(0)/1 device'
    end: float


@_event
class WaitBegin(NamedTuple):
    """A thread blocks in ``wait_for_var`` (``var_id``) or ``wait_for_all`` (None)."""

    time: float
    wait_id: int
    var_id: int | None  # None: wait_for_all
    thread: str


@_event
class WaitEnd(NamedTuple):
    """The wait ``wait_id`` returned (or raised)."""

    time: float
    wait_id: int


@_event
class StorageAlloc(NamedTuple):
    """Memory handed out by a storage manager."""

    time: float
    ctx: str
    handle_id: int
    nbytes: int  # bytes handed out (after rounding to the size class)
    pool_hit: bool  # True: reused a pooled block; False: fresh allocation


@_event
class StorageFree(NamedTuple):
    """Memory given back to a storage manager."""

    time: float
    ctx: str
    handle_id: int
    nbytes: int
    to_pool: bool  # True: kept in the pool for reuse; False: returned to the system


#: Any trace event (for annotations and ``isinstance``).
Event = Union[
    VarNew,
    VarName,
    VarDelete,
    OpPush,
    OpReady,
    OpStart,
    OpEnd,
    OpDevice,
    WaitBegin,
    WaitEnd,
    StorageAlloc,
    StorageFree,
]


#: Event class by name (the chrome-trace file names each event's kind).
EVENT_CLASSES: dict[str, Any] = {cls.__name__: cls for cls in get_args(Event)}
