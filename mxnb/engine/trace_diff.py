"""Two runs compared: which ops got slower or faster, which ran in one run only, and why.

Idea: "it was faster yesterday" is a question about two traces.  Op ids
and var ids differ between runs, but a program pushes the same ops on the
same vars in the same order, so ops can be matched by what they are: their
name, the names of the vars they touch, and which occurrence of that pair
they are.  Matched ops are compared (run time, start since the run began),
unmatched ones reported; the runs' critical paths, idle time by reason and
overlap (ops running at once on average) are compared beside them.

Rule: matching is two passes.  First by (name, var-name signature,
occurrence), where the signature is the read and written var names with
digits folded (``'nd93' -> 'nd#'``: auto-named vars differ by id); then the
ops left over by (name group, occurrence among the left-over ones).  What
is still left is ``'only_a'`` / ``'only_b'``.  :attr:`TraceDiff.rows` are
ranked by the size of the change: ``|run time in B - run time in A|`` for a
matched op, the run time for an op of one run only (ties: push order).

State kept: a :class:`TraceDiff` holds its rows and the runs' summaries.

Example::

    >>> from mxnb.engine.events import OpPush, OpStart, OpEnd
    >>> def run(slow):
    ...     return [OpPush(0.0, 1, 'a', 'cpu(0)', (), (7,), 0, ()), OpStart(0.0, 1, 'main', 't'),
    ...             OpEnd(1.0, 1), OpPush(1.0, 2, 'b', 'cpu(0)', (), (8,), 0, ()),
    ...             OpStart(1.0, 2, 'main', 't'), OpEnd(2.0 + slow, 2)]
    >>> d = TraceDiff.of(run(0.0), run(0.5))
    >>> [(row.name, row.kind, row.change) for row in d.rows]
    [('b', 'changed', 0.5), ('a', 'changed', 0.0)]
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from .analysis import OpRecord, name_group
from .events import Event
from .idle_time import REASONS, idle_spans, idle_summary, traced_span
from .replay import makespan
from .trace_model import TraceModel

__all__ = ["DiffRow", "RunSummary", "TraceDiff"]

_DIGITS = re.compile(r"\d+")


@dataclass(frozen=True)
class DiffRow:
    """One op compared across runs A and B (``a`` / ``b``: its op id there, None when absent)."""

    name: str
    kind: str  # 'changed' (in both runs), 'only_a', 'only_b'
    a: int | None
    b: int | None
    a_duration: float | None  # seconds it ran (None: did not run)
    b_duration: float | None
    a_start: float | None  # seconds after its run's first push
    b_start: float | None

    @property
    def change(self) -> float:
        """B's run time minus A's (an op of one run only: + or - its run time)."""
        return (self.b_duration or 0.0) - (self.a_duration or 0.0)

    @property
    def size(self) -> float:
        """How much it changed: what the ranking sorts by."""
        return abs(self.change)

    def describe(self) -> str:
        """One line: ``'conv1  2.000 -> 7.000 ms (+5.000 ms)'``."""

        def ms(value: float | None) -> str:
            return "-" if value is None else f"{1e3 * value:.3f}"

        where = {"changed": "", "only_a": "  [only in A]", "only_b": "  [only in B]"}[self.kind]
        return (
            f"{self.name[:40]:<40} {ms(self.a_duration):>9} -> {ms(self.b_duration):>9} ms "
            f"({1e3 * self.change:+.3f} ms){where}"
        )


@dataclass
class RunSummary:
    """What one run looked like as a whole: makespan, busy time, critical path, idle by reason."""

    makespan: float
    busy: float  # seconds of op run time, all lanes
    critical_path: list[str]  # op names, first op first
    critical_time: float  # seconds the critical path's ops ran
    idle: dict[str, float] = field(default_factory=dict)  # reason -> seconds, all lanes
    lanes: int = 0

    @property
    def overlap(self) -> float:
        """Ops running at once, on average over the makespan (1.0: no overlap)."""
        return self.busy / self.makespan if self.makespan > 0 else 0.0


def _events(source: Any) -> list[Event]:
    return list(source.events if hasattr(source, "events") else source)


def _summary(model: TraceModel, events: list[Event]) -> RunSummary:
    ran = [op for op in model.ops.values() if op.duration is not None]
    path = model.critical_path()
    idle: dict[str, float] = dict.fromkeys(REASONS, 0.0)
    for row in idle_summary(idle_spans(model, traced_span(events))).values():
        for reason, seconds in row.items():
            idle[reason] += seconds
    return RunSummary(
        makespan=makespan(model),
        busy=sum(op.duration for op in ran),  # type: ignore[misc]
        critical_path=[model.ops[i].name for i in path],
        critical_time=sum(model.ops[i].duration or 0.0 for i in path),
        idle=idle,
        lanes=len(model.lanes()),
    )


def _keys(model: TraceModel, grouped: bool) -> dict[tuple, OpRecord]:
    counts: dict[tuple, int] = {}
    keyed: dict[tuple, OpRecord] = {}
    names = {var_id: _DIGITS.sub("#", record.name) for var_id, record in model.vars.items()}
    for op in model.ops.values():
        if grouped:
            base: tuple = (name_group(op.name),)
        else:
            signature = (
                tuple(names.get(v, "?") for v in op.const_vars),
                tuple(names.get(v, "?") for v in op.mutate_vars),
            )
            base = (op.name, signature)
        occurrence = counts.get(base, 0)
        counts[base] = occurrence + 1
        keyed[(*base, occurrence)] = op
    return keyed


def _first_push(model: TraceModel) -> float:
    return min((op.push for op in model.ops.values() if op.push is not None), default=0.0)


class TraceDiff:
    """Run A against run B: ranked :class:`DiffRow` s, and each run's :class:`RunSummary`."""

    def __init__(self, rows: list[DiffRow], a: RunSummary, b: RunSummary) -> None:
        self.rows = rows
        self.a = a
        self.b = b

    @classmethod
    def of(cls, a: Any, b: Any) -> TraceDiff:
        """Compare two traces (or event lists): match their ops (the module rule) and rank them."""
        events_a, events_b = _events(a), _events(b)
        model_a, model_b = TraceModel(events_a), TraceModel(events_b)
        origin_a, origin_b = _first_push(model_a), _first_push(model_b)
        rows: list[tuple[float, int, DiffRow]] = []

        def row(kind: str, op_a: OpRecord | None, op_b: OpRecord | None) -> None:
            named = op_b if op_a is None else op_a
            entry = DiffRow(
                named.name,  # type: ignore[union-attr]
                kind,
                None if op_a is None else op_a.op_id,
                None if op_b is None else op_b.op_id,
                None if op_a is None else op_a.duration,
                None if op_b is None else op_b.duration,
                None if op_a is None or op_a.start is None else op_a.start - origin_a,
                None if op_b is None or op_b.start is None else op_b.start - origin_b,
            )
            order = named.seq  # type: ignore[union-attr]
            rows.append((-entry.size, order, entry))

        left_a: dict[int, OpRecord] = {}
        left_b: dict[int, OpRecord] = {}
        keyed_b = _keys(model_b, grouped=False)
        matched_b: set[int] = set()
        for key, op_a in _keys(model_a, grouped=False).items():
            op_b = keyed_b.get(key)
            if op_b is None:
                left_a[op_a.op_id] = op_a
            else:
                matched_b.add(op_b.op_id)
                row("changed", op_a, op_b)
        left_b = {i: op for i, op in model_b.ops.items() if i not in matched_b}
        rest_a, rest_b = TraceModel(), TraceModel()
        rest_a.ops, rest_b.ops = left_a, left_b
        keyed_b = _keys(rest_b, grouped=True)
        for key, op_a in _keys(rest_a, grouped=True).items():
            op_b = keyed_b.pop(key, None)
            row("changed" if op_b is not None else "only_a", op_a, op_b)
        for op_b in keyed_b.values():
            row("only_b", None, op_b)
        rows.sort(key=lambda r: (r[0], r[1]))
        return cls(
            [entry for _, _, entry in rows],
            _summary(model_a, events_a),
            _summary(model_b, events_b),
        )

    def only_a(self) -> list[DiffRow]:
        """Ops of run A that run B did not have."""
        return [row for row in self.rows if row.kind == "only_a"]

    def only_b(self) -> list[DiffRow]:
        """Ops of run B that run A did not have."""
        return [row for row in self.rows if row.kind == "only_b"]

    def by_name(self) -> dict[str, tuple[float, float]]:
        """Per op name group: (total run time in A, in B), largest change first."""
        totals: dict[str, list[float]] = {}
        for row in self.rows:
            pair = totals.setdefault(name_group(row.name), [0.0, 0.0])
            pair[0] += row.a_duration or 0.0
            pair[1] += row.b_duration or 0.0
        ranked = sorted(totals.items(), key=lambda kv: -abs(kv[1][1] - kv[1][0]))
        return {name: (a, b) for name, (a, b) in ranked}

    def to_text(self, top: int = 10) -> str:
        """The runs side by side, then the ``top`` rows that changed most."""
        a, b = self.a, self.b
        lines = [
            f"{'':<28}{'A':>12}{'B':>12}",
            f"{'makespan ms':<28}{1e3 * a.makespan:>12.3f}{1e3 * b.makespan:>12.3f}",
            f"{'busy ms (all lanes)':<28}{1e3 * a.busy:>12.3f}{1e3 * b.busy:>12.3f}",
            f"{'overlap (ops at once)':<28}{a.overlap:>12.2f}{b.overlap:>12.2f}",
            f"{'lanes':<28}{a.lanes:>12}{b.lanes:>12}",
            f"{'critical path ops':<28}{len(a.critical_path):>12}{len(b.critical_path):>12}",
            f"{'critical path ms':<28}{1e3 * a.critical_time:>12.3f}{1e3 * b.critical_time:>12.3f}",
        ]
        for reason in REASONS:
            lines.append(
                f"{'idle ' + reason + ' ms':<28}{1e3 * a.idle[reason]:>12.3f}{1e3 * b.idle[reason]:>12.3f}"
            )
        lines.append(
            f"ops: {len(self.rows)} rows, {len(self.only_a())} only in A, "
            f"{len(self.only_b())} only in B; largest changes:"
        )
        lines.extend("  " + row.describe() for row in self.rows[:top])
        return "\n".join(lines)

    def __repr__(self) -> str:
        return self.to_text(top=5)

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, str]:
        return {"text/plain": self.to_text()}


def diff(a: Iterable[Event] | Any, b: Iterable[Event] | Any) -> TraceDiff:
    """Compare two traces or event lists: :meth:`TraceDiff.of`."""
    return TraceDiff.of(a, b)
