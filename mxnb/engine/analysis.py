"""What a trace says, as data: one record per op, var, wait and memory series.

Idea: every question asked of a trace — by ``Trace.ops()`` / ``stats()`` /
``explain()``, by the notebook views, by a chrome-trace export — is answered
from the same records, built from the events alone by
:class:`~mxnb.engine.trace_model.TraceModel`.  This module holds those records;
:mod:`mxnb.engine.stats` sums and explains them.

Rule: an op's state follows its events: pushed -> WAITING, ``OpReady`` ->
READY, ``OpStart`` -> RUNNING, ``OpEnd`` -> DONE / FAILED / SKIPPED.  Ops
pushed before recording began have no record.

State kept: none (records are plain dataclasses).

Example::

    >>> from mxnb.engine.events import OpPush, OpStart, OpEnd
    >>> ops = summarise([OpPush(0.0, 1, 'add', 'cpu(0)', (), (7,), 0, ()),
    ...                  OpStart(0.1, 1, 'main', 't'), OpEnd(0.3, 1)])
    >>> ops[1].state.name, round(ops[1].duration, 3)
    ('DONE', 0.2)
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass, field

from .events import Dependency, DepKind, Event

__all__ = [
    "KIND_SHORT",
    "Blocker",
    "Edge",
    "Interval",
    "Lane",
    "MemorySeries",
    "OpRecord",
    "OpState",
    "OpSummary",
    "VarRecord",
    "WaitRecord",
    "name_group",
    "summarise",
]

KIND_SHORT = {DepKind.RAW: "RAW", DepKind.WAR: "WAR", DepKind.WAW: "WAW"}


def name_group(name: str) -> str:
    """The family an op name belongs to in stats and colours: ``'delete:nd93' -> 'delete'``."""
    return name.split(":", 1)[0] if ":" in name else name


class OpState(enum.Enum):
    """Where an op is in its life, as the trace tells it."""

    WAITING = "waiting"  # pushed; some dependency has not finished
    READY = "ready"  # all dependencies done; queued for a worker (or a step)
    RUNNING = "running"  # a worker started it
    DONE = "done"  # finished without error
    FAILED = "failed"  # raised (or its async callback reported an error)
    SKIPPED = "skipped"  # not run because an input var carried an earlier failure


@dataclass
class OpRecord:
    """Everything the trace says about one op (also its summary: :class:`OpSummary`).

    Times ``push`` / ``ready`` / ``start`` / ``end`` are ``perf_counter``
    seconds (None: not seen); ``push_time`` ... ``end_time`` are the same
    relative to ``t0``, the first event of the model that made the record.
    """

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
    worker: str | None = None
    error: str | None = None
    skipped: bool = False
    seq: int = 0  # push order, 0-based
    t0: float = 0.0
    device: tuple[str, float, float] | None = None  # on a GPU: (lane, start, end) of its kernels

    @property
    def push_time(self) -> float:
        """Push time relative to ``t0``."""
        return (self.push or 0.0) - self.t0

    @property
    def ready_time(self) -> float | None:
        """Ready time relative to ``t0`` (None: not ready yet)."""
        return None if self.ready is None else self.ready - self.t0

    @property
    def start_time(self) -> float | None:
        """Start time relative to ``t0`` (None: not started)."""
        return None if self.start is None else self.start - self.t0

    @property
    def end_time(self) -> float | None:
        """End time relative to ``t0`` (None: not ended)."""
        return None if self.end is None else self.end - self.t0

    @property
    def state(self) -> OpState:
        """The op's current :class:`OpState`."""
        if self.end is not None:
            if self.skipped:
                return OpState.SKIPPED
            return OpState.FAILED if self.error is not None else OpState.DONE
        if self.start is not None:
            return OpState.RUNNING
        if self.ready is not None:
            return OpState.READY
        return OpState.WAITING

    @property
    def finished(self) -> bool:
        """True once an ``OpEnd`` was seen."""
        return self.end is not None

    @property
    def duration(self) -> float | None:
        """Seconds from start to end, ``None`` until both are known."""
        if self.start is None or self.end is None:
            return None
        return self.end - self.start

    @property
    def label(self) -> str:
        """Short display name: ``'#3 add'``."""
        return f"#{self.op_id} {self.name}"

    def summary(self) -> str:
        """One line for a hover text: ``'#3 add [done] | worker cpu(0)/1 | 0.012 ms'``."""
        parts = [f"{self.label} [{self.state.value}]"]
        if self.worker:
            parts.append(f"worker {self.worker}")
        if self.duration is not None:
            parts.append(f"{1e3 * self.duration:.3f} ms")
        if self.error:
            parts.append(self.error[:200])
        return " | ".join(parts)


#: The summary of one op, as ``Trace.ops()`` returns it.
OpSummary = OpRecord


@dataclass
class VarRecord:
    """A var the trace mentioned: its name and whether its delete ran."""

    var_id: int
    name: str
    deleted: bool = False
    writers: list[int] = field(default_factory=list)  # op ids that mutate it, push order
    readers: list[int] = field(default_factory=list)  # op ids that read it, push order


@dataclass(frozen=True)
class Edge:
    """``waiter`` had to wait for ``holder`` because both touch ``var_id``."""

    holder: int
    waiter: int
    var_id: int
    kind: DepKind


@dataclass(frozen=True)
class Blocker:
    """One reason an op cannot run yet: ``holder`` (unfinished) holds ``var_name``."""

    dependency: Dependency
    holder: OpRecord
    var_name: str

    def describe(self, waiter: OpRecord) -> str:
        """One plain sentence: who holds which var and why that blocks ``waiter``."""
        holder = self.holder
        where = f"running on {holder.worker}" if holder.worker else holder.state.value
        kind = self.dependency.kind
        if kind is DepKind.RAW:
            why = f"'{waiter.name}' reads {self.var_name!r}, which '{holder.name}' writes"
        elif kind is DepKind.WAR:
            why = f"'{waiter.name}' writes {self.var_name!r}, which '{holder.name}' still reads"
        else:
            why = f"both write {self.var_name!r}, so they run in push order"
        return f"waits on {holder.label} ({where}) through {self.var_name!r}: {why} [{KIND_SHORT[kind]}]"


@dataclass
class WaitRecord:
    """A thread blocked in ``wait_for_var`` (``var_id`` set) or ``wait_for_all``."""

    wait_id: int
    var_id: int | None
    thread: str
    begin: float
    end: float | None = None


@dataclass(frozen=True)
class Interval:
    """One op's bar on a worker lane."""

    op_id: int
    name: str
    start: float
    end: float | None  # None: still running
    state: OpState


@dataclass
class Lane:
    """A worker's row on the timeline."""

    worker: str
    device: str  # 'cpu(0)', 'gpu(1)', 'copy', 'main' ...
    is_copy: bool
    intervals: list[Interval] = field(default_factory=list)


@dataclass
class MemorySeries:
    """Storage of one context over time (times relative to ``t0``).

    ``in_use`` counts bytes handed out to arrays; ``held`` also counts blocks
    kept in a pool for reuse (what the process really holds).
    """

    ctx: str
    times: list[float] = field(default_factory=list)
    in_use: list[int] = field(default_factory=list)
    held: list[int] = field(default_factory=list)
    hit_times: list[float] = field(default_factory=list)
    miss_times: list[float] = field(default_factory=list)
    peak: int = 0
    peak_time: float = 0.0
    peak_held: int = 0

    @property
    def hits(self) -> int:
        """Allocations served from the pool."""
        return len(self.hit_times)

    @property
    def misses(self) -> int:
        """Allocations that went to the system."""
        return len(self.miss_times)


def summarise(events: Sequence[Event]) -> dict[int, OpRecord]:
    """One :class:`OpRecord` per op pushed in ``events``, keyed by op id, in push order."""
    from .trace_model import TraceModel

    return TraceModel(events).ops
