"""What a trace says, as data: one record per op, var, wait and memory series; stats; why.

Idea: every question asked of a trace — by ``Trace.ops()`` / ``stats()`` /
``explain()``, by the notebook views, by a chrome-trace export — is answered
from the same records, built from the events alone by
:class:`~mxnb.engine.trace_model.TraceModel`.  This module holds those records
and the answers that are plain functions of them.

Rule: an op's state follows its events: pushed -> WAITING, ``OpReady`` ->
READY, ``OpStart`` -> RUNNING, ``OpEnd`` -> DONE / FAILED / SKIPPED.  Stats
group ops by :func:`name_group` (``'delete:nd93'`` counts as ``'delete'``),
count the runs (a skipped op did not run) and count as failed every op that
ended with an error, skipped ones included.  Ops pushed before recording began
have no record.

State kept: none (records are plain dataclasses).

Example::

    >>> from mxnb.engine.events import OpPush, OpStart, OpEnd
    >>> ops = summarise([OpPush(0.0, 1, 'add', 'cpu(0)', (), (7,), 0, ()),
    ...                  OpStart(0.1, 1, 'main', 't'), OpEnd(0.3, 1)])
    >>> round(ops[1].duration, 3), TraceStats.from_ops(ops.values())['add'].count
    (0.2, 1)
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Sequence
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
    "OpStats",
    "OpSummary",
    "StatsRow",
    "TraceStats",
    "VarRecord",
    "WaitRecord",
    "explain",
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
    def from_ops(cls, ops: Iterable[OpRecord]) -> TraceStats:
        """Aggregate the ops that ran, by :func:`name_group`, largest total first (see the rule)."""
        times: dict[str, list[float]] = {}
        failed: dict[str, int] = {}
        for op in ops:
            if op.push is None:
                continue
            name = name_group(op.name)
            if op.error is not None or op.skipped:
                failed[name] = failed.get(name, 0) + 1
            duration = op.duration
            if duration is not None and not op.skipped:
                times.setdefault(name, []).append(duration)
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


#: One row of the stats table, as the views name it.
OpStats = StatsRow


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:.3f} ms"


def explain(ops: dict[int, OpRecord], names: dict[int, str], op: int | str) -> str:
    """Say in plain words why op ``op`` (an id, or the latest op of that name) ran when it did.

    ``ops``: the records of a trace; ``names``: var id -> name.  Times are
    given relative to each record's ``t0``.
    """
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

    def var(var_id: int) -> str:
        return repr(names.get(var_id, f"var#{var_id}"))

    t0 = target.t0
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


def summarise(events: Sequence[Event]) -> dict[int, OpRecord]:
    """One :class:`OpRecord` per op pushed in ``events``, keyed by op id, in push order."""
    from .trace_model import TraceModel

    return TraceModel(events).ops
