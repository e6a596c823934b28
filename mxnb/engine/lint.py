"""An engine lint: the dependency mistakes a trace proves, each with its fix.

Idea: the bugs of notebook 06 — a race from an undeclared var, pipelines
serialised through a shared var, a failing op — and the performance
mistakes every engine user makes once — a wait in a loop, ops too small to
pay for their push, a pusher far ahead of its workers — all leave a
signature in the trace.  :func:`lint` reads the trace after the fact and
returns one :class:`Finding` per mistake, naming the ops and the fix.

Rule (each rule fires only on what the trace shows, with thresholds set so
the correct programs of the notebooks raise nothing):

``no_declared_vars``
    an op declares no var at all: the engine orders it against nothing, so
    it races whatever produces or consumes its data.
``undeclared_write``
    debug mode caught a kernel writing into an input it declared only as
    read (the op failed with "wrote into its const input").
``op_failed``
    an op raised; the ops that read its outputs were skipped.
``shared_var_serialises``
    a var written by ops of two or more pipelines that share nothing else
    (remove the var and they fall apart into separate connected groups of
    at least two ops each) and run different ops (no op name in common,
    digits folded: one producer cycling through two buffers is one
    pipeline), and at least three ops really waited on that var for another
    pipeline's op, for at least a fifth of the run.
``wait_in_loop``
    one thread waited at least three times, each time for the ops it had
    pushed since the last wait, those ops depended on nothing of the earlier
    rounds (they could have overlapped), and the waits took at least half
    the run.
``tiny_ops``
    at least 200 ops of one name (digits folded: ``op12`` is ``op#``) ran,
    their median run time is below four
    times the median interval between two pushes of one thread (what a push
    costs the front end; the engine pays about as much again to hand it to a
    worker), and the lanes sat idle for want of work they could take
    (``'nothing_pushed'`` or ``'ready_not_started'``, :mod:`.idle_time`) at
    least half their time.
``pusher_ahead``
    at some instant at least 512 ops (four times the threaded engines'
    run-ahead bound) were pushed but not yet started: the front end ran far
    ahead of the workers (memory held by every pending op, latency of the
    last).

State kept: none.

Example::

    >>> from mxnb.engine.events import OpPush, OpStart, OpEnd
    >>> [f.rule for f in lint([OpPush(0.0, 1, 'consume', 'cpu(0)', (), (), 0, ()),
    ...                        OpStart(0.0, 1, 'main', 't'), OpEnd(0.1, 1)])]
    ['no_declared_vars']
"""

from __future__ import annotations

import bisect
import re
import statistics
from collections.abc import Iterable
from typing import Any, NamedTuple

from .analysis import name_group
from .events import DepKind, Event
from .idle_time import idle_spans, traced_span
from .lineage import dependency_links
from .replay import makespan
from .trace_model import TraceModel

__all__ = ["RULES", "Finding", "lint"]

#: The rules, in the order findings are listed.
RULES = (
    "no_declared_vars",
    "undeclared_write",
    "op_failed",
    "shared_var_serialises",
    "wait_in_loop",
    "tiny_ops",
    "pusher_ahead",
)
READ_ONLY_WRITE = "wrote into its const input"  # debug mode's error (mxnb.ndarray.debug)
TINY_OPS_MIN = 200
PENDING_LIMIT = 512
_DIGITS = re.compile(r"\d+")
PAY_FACTOR = 4  # an op pays for its push when it runs this many push intervals


class Finding(NamedTuple):
    """One mistake: the ``rule`` it breaks, the ``ops`` (ids) involved, and a ``message`` naming the fix."""

    rule: str
    ops: tuple[int, ...]
    message: str


def _no_declared_vars(model: TraceModel) -> list[Finding]:
    bare = [op for op in model.ops.values() if not op.const_vars and not op.mutate_vars]
    return [
        Finding(
            "no_declared_vars",
            (op.op_id,),
            f"op {op.label} declares no var, so the engine orders it against nothing and it "
            "races the ops that produce or consume its data; pass the vars of the arrays it "
            "reads as const_vars and of those it writes as mutate_vars",
        )
        for op in bare
    ]


def _failures(model: TraceModel) -> list[Finding]:
    findings = []
    skipped_by: dict[str, list[int]] = {}
    for op in model.ops.values():
        if op.skipped and op.error:
            skipped_by.setdefault(op.error, []).append(op.op_id)
    for op in model.ops.values():
        if op.error is None or op.skipped:
            continue
        skipped = [i for error, ids in skipped_by.items() if f"'{op.name}'" in error for i in ids]
        if READ_ONLY_WRITE in op.error:
            findings.append(
                Finding(
                    "undeclared_write",
                    (op.op_id,),
                    f"op {op.label} wrote into an input it declared as read only ({op.error}); "
                    "compute into the output instead, or declare the array as written "
                    "(mutate_vars, an output or auxiliary state)",
                )
            )
        else:
            findings.append(
                Finding(
                    "op_failed",
                    (op.op_id, *skipped),
                    f"op {op.label} failed ({op.error}); {len(skipped)} op(s) reading its "
                    "outputs were skipped and every wait on them re-raises it; fix the input "
                    "or the kernel the error names",
                )
            )
    return findings


def _groups_without(model: TraceModel, var: int) -> dict[int, int]:
    """op id -> a representative: ops linked through any var but ``var`` share one."""
    parent = {op: op for op in model.ops}

    def find(x: int) -> int:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    first_user: dict[int, int] = {}
    for op in model.ops.values():
        for v in op.const_vars + op.mutate_vars:
            if v == var:
                continue
            if v in first_user:
                parent[find(op.op_id)] = find(first_user[v])
            else:
                first_user[v] = op.op_id
    return {op: find(op) for op in parent}


def _some_disjoint(kinds: set[frozenset[str]]) -> bool:
    """True when two of the pipelines run different ops (no op name in common)."""
    listed = list(kinds)
    return any(not a & b for i, a in enumerate(listed) for b in listed[i + 1 :])


def _shared_var(model: TraceModel, span: float) -> list[Finding]:
    ops = model.ops
    waits: dict[int, list[tuple[int, int]]] = {}  # var -> (holder, waiter) that released it
    for op in ops.values():
        if op.ready is None or op.push is None or op.ready <= op.push:
            continue
        for dep in op.waits_on:
            holder = ops.get(dep.op_id)
            if dep.kind is not DepKind.RAW and holder is not None and holder.end == op.ready:
                waits.setdefault(dep.var_id, []).append((dep.op_id, op.op_id))
    findings = []
    writers_of: dict[int, list[int]] = {}
    for op in ops.values():
        for v in op.mutate_vars:
            writers_of.setdefault(v, []).append(op.op_id)
    for var, pairs in waits.items():
        writers = writers_of.get(var, [])
        if len(pairs) < 3 or len({_DIGITS.sub("#", ops[w].name) for w in writers}) < 2:
            continue  # too few waits, or every writer runs the same op: no two pipelines
        if sum(ops[w].ready - ops[w].push for _, w in pairs) < 0.2 * span:  # type: ignore[operator, misc]
            continue  # even every wait through it would not cost a fifth of the run
        group = _groups_without(model, var)
        kinds: dict[int, set[str]] = {}  # pipeline -> what its ops run (names, digits folded)
        for op_id in writers:
            kinds.setdefault(group[op_id], set()).add(_DIGITS.sub("#", ops[op_id].name))
        pipelines = [g for g in kinds if sum(group[w] == g for w in writers) >= 2]
        distinct = {frozenset(kinds[g]) for g in pipelines}
        if len(pipelines) < 2 or not _some_disjoint(distinct):
            continue  # one producer cycling through buffers: its own order, not two pipelines
        crossing = [(h, w) for h, w in pairs if group[h] != group[w]]
        lost = sum(ops[w].ready - ops[w].push for _, w in crossing)  # type: ignore[operator, misc]
        if len(crossing) >= 3 and lost >= 0.2 * span:
            name = model.var_name(var)
            findings.append(
                Finding(
                    "shared_var_serialises",
                    tuple(writers),
                    f"var {name!r} is written by {len(pipelines)} pipelines that share nothing "
                    f"else, so their ops ran one at a time ({len(crossing)} waits across "
                    f"pipelines, {1e3 * lost:.1f} ms); give each pipeline its own var, or do not "
                    f"declare {name!r} if its updates need no ordering (a lock or atomic counter)",
                )
            )
    return findings


def _wait_in_loop(model: TraceModel, links: Any, span: float) -> list[Finding]:
    t0 = model.t0 or 0.0
    by_thread: dict[str, list[Any]] = {}
    for wait in model.waits.values():
        if wait.end is not None and not wait.thread.startswith("mxnb-engine"):
            by_thread.setdefault(wait.thread, []).append(wait)
    findings = []
    for thread, waits in by_thread.items():
        waits.sort(key=lambda w: w.begin)
        pushed = sorted(
            (op.push, op.op_id) for op in model.ops.values() if op.thread == thread and op.push
        )
        rounds: list[list[int]] = []
        previous = -float("inf")
        times = [t for t, _ in pushed]
        for wait in waits:
            low = bisect.bisect_left(times, previous)
            high = bisect.bisect_left(times, t0 + wait.begin)
            rounds.append([i for _, i in pushed[low:high]])
            previous = t0 + wait.end  # type: ignore[operator]
        run: list[int] = []  # indices of consecutive independent rounds
        best: list[int] = []
        earlier: set[int] = set()
        for index, ids in enumerate(rounds):
            independent = bool(ids) and not any(
                dep.op_id in earlier for i in ids for dep in links.get(i, ())
            )
            run = [*run, index] if independent and run else ([index] if ids else [])
            earlier.update(ids)
            if len(run) > len(best):
                best = run
        blocked = sum((waits[i].end or 0.0) - waits[i].begin for i in best)
        if len(best) >= 3 and blocked >= 0.5 * span:
            flagged = tuple(i for k in best for i in rounds[k])
            findings.append(
                Finding(
                    "wait_in_loop",
                    flagged,
                    f"thread {thread!r} waited {len(best)} times in a loop, each time for ops that "
                    f"needed nothing from the earlier rounds ({1e3 * blocked:.1f} ms blocked), so "
                    "they ran one round at a time; push every round first and wait once after "
                    "the loop (or wait only for what the next round reads)",
                )
            )
    return findings


def _tiny_ops(model: TraceModel, events: list[Event]) -> list[Finding]:
    groups: dict[str, list[Any]] = {}
    for op in model.ops.values():
        if op.duration is not None:  # one family: 'op12' and 'op13' are 'op#'
            groups.setdefault(_DIGITS.sub("#", name_group(op.name)), []).append(op)
    if max(map(len, groups.values()), default=0) < TINY_OPS_MIN:
        return []
    intervals: list[float] = []  # between consecutive pushes of one thread
    last_push: dict[str, float] = {}
    for op in sorted(model.ops.values(), key=lambda o: o.seq):
        if op.push is not None:
            if op.thread in last_push:
                intervals.append(op.push - last_push[op.thread])
            last_push[op.thread] = op.push
    spans = idle_spans(model, traced_span(events))
    first, last = traced_span(events)
    lane_time = (last - first) * len(
        {span.lane for span in spans} | {op.worker for op in model.ops.values() if op.worker}
    )
    starved = sum(span.duration for span in spans if span.reason != "waiting_on_var")
    push_cost = statistics.median(intervals) if intervals else 0.0
    findings = []
    for name, ops in groups.items():
        if len(ops) < TINY_OPS_MIN:
            continue
        run = statistics.median(op.duration for op in ops)
        if run < PAY_FACTOR * push_cost and lane_time > 0 and starved >= 0.5 * lane_time:
            findings.append(
                Finding(
                    "tiny_ops",
                    tuple(op.op_id for op in ops),
                    f"{len(ops)} ops {name!r} ran {1e6 * run:.1f} us each (median), less than "
                    f"{PAY_FACTOR} times the {1e6 * push_cost:.1f} us between two pushes, so the workers sat idle "
                    f"{100 * starved / lane_time:.0f}% of the time for want of work they could "
                    "take (the pusher holds the interpreter); batch the work "
                    "into fewer, larger ops (or push them as one with mx.engine.bulk)",
                )
            )
    return findings


def _pusher_ahead(model: TraceModel) -> list[Finding]:
    changes = []
    for op in model.ops.values():
        if op.push is not None and op.start is not None:
            changes.append((op.push, 1, op.op_id))
            changes.append((op.start, -1, op.op_id))
    changes.sort(key=lambda c: (c[0], c[1]))
    pending = peak = 0
    peak_at = None
    for time, delta, _ in changes:
        pending += delta
        if pending > peak:
            peak, peak_at = pending, time
    if peak < PENDING_LIMIT:
        return []
    waiting = tuple(
        op.op_id
        for op in model.ops.values()
        if op.push is not None and op.start is not None and op.push <= peak_at < op.start  # type: ignore[operator]
    )
    return [
        Finding(
            "pusher_ahead",
            waiting,
            f"the front end ran {peak} ops ahead of the workers (pushed, not started); each "
            "holds its arrays until it runs; wait now and then (e.g. once per batch) or push "
            "less work per op from a slower loop",
        )
    ]


def lint(trace: Any | Iterable[Event]) -> list[Finding]:
    """Every :class:`Finding` the rules (module docstring) make of ``trace`` (a Trace or events)."""
    events = list(trace.events if hasattr(trace, "events") else trace)
    model = TraceModel(events)
    span = makespan(model)
    links = dependency_links(model)
    findings = (
        _no_declared_vars(model)
        + _failures(model)
        + _shared_var(model, span)
        + _wait_in_loop(model, links, span)
        + _tiny_ops(model, events)
        + _pusher_ahead(model)
    )
    return sorted(findings, key=lambda f: RULES.index(f.rule))
