"""The event record every view and profiler reads.

Idea: the engine, the storage managers and the executor describe what they
do as small frozen events appended to the attached recorders.  Views
(``mxnb.widgets``), the chrome-trace export and the stats table read these
events only, never engine internals.  With no recorder attached the cost to
the engine is one flag check: ``if trace.enabled: trace.emit(...)``.

Events (times are ``time.perf_counter()`` seconds):
    VarNew / VarDelete       a var is created / its delete op ran
    OpPush                   an op is pushed, with the ops it waits on and why
    OpReady                  its wait count reached zero; it goes to a worker pool
    OpStart / OpEnd          a worker runs it (``OpEnd.error`` / ``skipped`` on failure)
    WaitBegin / WaitEnd      a thread blocks in wait_for_var / wait_for_all
    StorageAlloc / StorageFree   memory from / back to a storage manager (pool hit or miss)

State kept:
    enabled      True while at least one recorder is attached (the engine's flag)
    _recorders   the attached :class:`Trace` objects

Example::

    >>> import mxnb as mx
    >>> eng = mx.engine.get()
    >>> with mx.engine.trace() as tr:
    ...     v = eng.new_var(name='a')
    ...     eng.push_sync(lambda rctx: None, mx.cpu(), mutate_vars=[v], name='write_a')
    ...     eng.wait_for_all()
    >>> [e.name for e in tr.events_of(OpPush)]
    ['write_a']
"""

from __future__ import annotations

import enum
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TypeVar

__all__ = [
    "DepKind",
    "Dependency",
    "Event",
    "OpEnd",
    "OpPush",
    "OpReady",
    "OpStart",
    "StorageAlloc",
    "StorageFree",
    "Trace",
    "VarDelete",
    "VarNew",
    "WaitBegin",
    "WaitEnd",
    "emit",
    "now",
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


def emit(event: Event) -> None:
    """Append ``event`` to every attached recorder (call only when ``enabled``)."""
    for recorder in _recorders:
        recorder.events.append(event)  # list.append is atomic under the GIL


class Trace:
    """An append-only record of engine, storage and executor events.

    Use as ``with mx.engine.trace() as tr:`` (attached for the block) or call
    :meth:`attach` / :meth:`detach`.  Several recorders may be attached at
    once; each gets every event.
    """

    def __init__(self, events: list[Event] | None = None) -> None:
        self.events: list[Event] = list(events) if events else []
        self.attached = False

    def attach(self) -> Trace:
        """Start recording (idempotent)."""
        global _recorders, enabled
        with _attach_lock:
            if not self.attached:
                _recorders = _recorders + (self,)
                enabled = True
                self.attached = True
        return self

    def detach(self) -> Trace:
        """Stop recording (idempotent); the events recorded so far stay."""
        global _recorders, enabled
        with _attach_lock:
            if self.attached:
                _recorders = tuple(r for r in _recorders if r is not self)
                enabled = bool(_recorders)
                self.attached = False
        return self

    def __enter__(self) -> Trace:
        return self.attach()

    def __exit__(self, *exc_info: object) -> None:
        self.detach()

    def clear(self) -> None:
        """Forget the events recorded so far."""
        self.events = []

    def __len__(self) -> int:
        return len(self.events)

    def __iter__(self) -> Iterator[Event]:
        return iter(list(self.events))

    def events_of(self, *kinds: type[E]) -> list[E]:
        """Return the recorded events of the given classes, in order."""
        return [event for event in list(self.events) if isinstance(event, kinds)]  # type: ignore[misc]
