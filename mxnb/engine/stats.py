"""Per-name stats of a trace (MXNet's aggregate profiler) and why an op ran when it did.

Idea: the same op records every view reads (:mod:`mxnb.engine.analysis`),
summed per op name — count, total / mean / min / max run time, failures —
and told as plain sentences: which earlier ops an op waited for, through which
var and why, and which of them released it.  ``Trace.stats()`` /
``Trace.explain()`` and the widgets' stats table use these.

Rule: stats group ops by :func:`~mxnb.engine.analysis.name_group`
(``'delete:nd93'`` counts as ``'delete'``), count the runs (a skipped op did
not run) and count as failed every op that ended with an error, skipped ones
included.  Ops pushed before recording began are left out.

State kept: none.

Example::

    >>> from mxnb.engine.events import OpPush, OpStart, OpEnd
    >>> from mxnb.engine.analysis import summarise
    >>> ops = summarise([OpPush(0.0, 1, 'delete:v7', 'cpu(0)', (), (7,), 0, ()),
    ...                  OpStart(0.1, 1, 'main', 't'), OpEnd(0.3, 1)])
    >>> row = TraceStats.from_ops(ops.values())['delete']
    >>> row.count, round(row.total, 3)
    (1, 0.2)
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from .analysis import OpRecord, name_group
from .events import DepKind

__all__ = ["OpStats", "StatsRow", "TraceStats", "explain"]


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
    given relative to each record's ``t0``.  Three paragraphs, in the order a
    reader asks: when it was pushed, what it waited for, how it ran.
    """
    target, note = _find_op(ops, op)
    return "\n".join(account(ops, target, lambda v: names.get(v, f"var#{v}"), note))


def account(
    ops: dict[int, OpRecord], target: OpRecord, var_name: Callable[[int], str], note: str = ""
) -> list[str]:
    """The lines of :func:`explain` for ``target`` (the live views add what holds it now)."""

    def var(var_id: int) -> str:
        return repr(var_name(var_id))

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
        lines += _waits(ops, target, var)
    elif target.push is not None:
        lines.append("  nothing earlier held its vars: it was ready at push.")
    lines += _how_it_ran(target)
    return lines


def _find_op(ops: dict[int, OpRecord], op: int | str) -> tuple[OpRecord, str]:
    """The op with id ``op``, or the latest named ``op``; and a note saying which."""
    if isinstance(op, str):
        matches = [summary for summary in ops.values() if summary.name == op]
        if not matches:
            known = sorted({summary.name for summary in ops.values()})
            raise KeyError(f"explain: no op named {op!r} in this trace; names: {known}")
        note = f" (the latest of {len(matches)} ops named {op!r})" if len(matches) > 1 else ""
        return matches[-1], note
    if op not in ops:
        raise KeyError(f"explain: no op with id {op} in this trace")
    return ops[op], ""


def _waits(ops: dict[int, OpRecord], target: OpRecord, var: Callable[[int], str]) -> list[str]:
    """One line per op it waited for, with the rule (RAW / WAR / WAW), and the one that released it."""
    t0 = target.t0
    lines = [f"  it had to wait for {len(target.waits_on)} earlier op(s):"]
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
            ended = f"; it ended at t={_ms(other.end - t0)}"
            if last_end is None or other.end > last_end:
                last_end, last_name = other.end, who
        lines.append(f"    - {why} [{dep.kind.name}]{ended}")
    if last_end is not None:
        lines.append(f"  the last of them to finish was {last_name}: that released it.")
    return lines


def _how_it_ran(target: OpRecord) -> list[str]:
    """When it became ready, where and how long it ran, or why it did not."""
    lines = []
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
    return lines
