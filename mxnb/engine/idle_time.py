"""Why each worker sat idle: every idle microsecond of every lane, with its reason.

Idea: profilers infer why a lane was idle from the timeline alone and keep an
"unknown" bucket.  mxnb's trace records, for every op, when it was pushed,
when it became ready, when it started and ended, and the vars and ops it had
to wait for (:class:`~mxnb.engine.events.Dependency`).  So at every instant a
lane is idle the trace *knows* what the work of that lane's pool was doing,
and the idle time splits into exact reasons with nothing left over.

Rule (at each instant ``t`` in the traced span, the trace's first event to
its last, at which lane ``L`` runs no op; ``L``'s *pool* is its worker name
without the last ``/part``: ``'cpu(0)/1' -> 'cpu(0)'``, ``'main' -> 'main'``;
an op belongs to the pool of the lane that ran it):

1. ``'ready_not_started'`` if some op of ``L``'s pool was ready but not
   started (``ready <= t < start``): the lane did not take ready work
   (contention, the GIL, a step engine waiting to be told).  ``op`` is the one
   that became ready first (then push order); ``var`` is None.
2. else ``'waiting_on_var'`` if some op of the pool was pushed but not ready
   (``push <= t < ready``): work existed but was blocked.  Of those ops, the
   one that became ready first is the one the lane waited for; ``var`` and
   ``op`` are the var and the op of its dependency (from the push record's
   ``waits_on``) whose holder finished last: the one that released it, which
   held that var during all of ``[push, ready)``.
3. else ``'nothing_pushed'``: the front end had not pushed the pool's next
   op yet.  ``op`` is that next op (the first pushed after ``t``; None when
   there is none); ``var`` is None.

A GPU stream's device lane (``'gpu(0)/1 device'``, :class:`~.events.OpDevice`)
has no spans of its own: the device idles when its worker launches nothing,
and the worker's lane says why.

Consecutive instants with the same (reason, op, var) make one
:class:`IdleSpan`, so a lane's spans tile its idle time exactly: they add up
to the span's length minus the lane's busy time (to float rounding).  Times
are the ops' clock (``perf_counter`` seconds, as ``OpRecord.start``).

State kept: none (computed after the fact from the trace's records; the
engine's hot path records nothing for it).

Example::

    >>> from mxnb.engine.events import OpPush, OpReady, OpStart, OpEnd
    >>> events = [OpPush(0.0, 1, 'a', 'cpu(0)', (), (7,), 0, ()), OpReady(0.0, 1),
    ...           OpStart(0.0, 1, 'cpu(0)/0', 't'), OpEnd(1.0, 1),
    ...           OpPush(2.0, 2, 'b', 'cpu(0)', (), (7,), 0, ()), OpReady(2.0, 2),
    ...           OpStart(2.0, 2, 'cpu(0)/0', 't'), OpEnd(3.0, 2)]
    >>> [(s.start, s.end, s.reason, s.op) for s in idle_spans(TraceModel(events))]
    [(1.0, 2.0, 'nothing_pushed', 2)]
"""

from __future__ import annotations

import bisect
import heapq
import math
from collections.abc import Iterable
from typing import NamedTuple

from .analysis import OpRecord
from .events import Event
from .trace_model import TraceModel

__all__ = ["REASONS", "IdleSpan", "idle_spans", "idle_summary", "lane_pool", "traced_span"]

#: The three reasons, in the order the rule tries them.
REASONS = ("ready_not_started", "waiting_on_var", "nothing_pushed")


class IdleSpan(NamedTuple):
    """One stretch ``[start, end)`` of lane ``lane`` running no op, and why (see the module rule)."""

    lane: str
    start: float
    end: float
    reason: str
    op: int | None
    var: int | None

    @property
    def duration(self) -> float:
        """Seconds idle."""
        return self.end - self.start


def lane_pool(lane: str) -> str:
    """The pool a worker lane belongs to: ``'cpu(0)/1' -> 'cpu(0)'``, ``'main' -> 'main'``."""
    return lane.rsplit("/", 1)[0] if "/" in lane else lane


def traced_span(events: Iterable[Event]) -> tuple[float, float]:
    """(first, last) event time of ``events``, on the ops' clock (``perf_counter`` seconds)."""
    times = [event.time for event in events]
    return (min(times), max(times)) if times else (0.0, 0.0)


def _holder(op: OpRecord, ops: dict[int, OpRecord]) -> tuple[int | None, int | None]:
    """(var, op) of the dependency of ``op`` whose holder finished last (unknown ends count as last)."""
    best: tuple[float, int] | None = None
    chosen: tuple[int | None, int | None] = (None, None)
    for index, dep in enumerate(op.waits_on):
        holder = ops.get(dep.op_id)
        end = holder.end if holder is not None and holder.end is not None else math.inf
        key = (end, -index)
        if best is None or key > best:
            best, chosen = key, (dep.var_id, dep.op_id)
    if best is None and (op.const_vars or op.mutate_vars):  # waited on ops pushed before recording
        chosen = ((op.const_vars + op.mutate_vars)[0], None)
    return chosen


def _pool_segments(
    pool_ops: list[OpRecord], ops: dict[int, OpRecord], first: float, last: float
) -> list[tuple[float, float, str, int | None, int | None]]:
    """The pool's reason, piecewise constant over ``[first, last]``, as merged segments."""
    cuts = {first, last}
    starts: dict[float, list[tuple[str, OpRecord]]] = {}
    for op in pool_ops:
        push, ready, start = op.push, op.ready, op.start
        if ready is None or start is None:
            continue
        if push is not None and push < ready:
            starts.setdefault(push, []).append(("wait", op))
            cuts.update((push, ready))
        if ready < start:
            starts.setdefault(ready, []).append(("ready", op))
            cuts.update((ready, start))
    pushes = sorted((op.push, op.seq, op.op_id) for op in pool_ops if op.push is not None)
    push_times = [p[0] for p in pushes]
    cuts.update(push_times)  # the next op to be pushed changes at each push
    ready_heap: list[tuple[float, int, float, int]] = []  # (ready, seq, start, op id)
    wait_heap: list[tuple[float, int, int]] = []  # (ready, seq, op id)
    points = sorted(cuts)  # segments outside [first, last] are clipped below
    segments: list[tuple[float, float, str, int | None, int | None]] = []
    for index, t in enumerate(points[:-1]):
        for kind, op in starts.get(t, ()):
            if kind == "ready":
                heapq.heappush(ready_heap, (op.ready, op.seq, op.start, op.op_id))  # type: ignore[misc]  # ready and started: both times known
            else:
                heapq.heappush(wait_heap, (op.ready, op.seq, op.op_id))  # type: ignore[misc]  # ready: its time known
        while ready_heap and ready_heap[0][2] <= t:
            heapq.heappop(ready_heap)
        while wait_heap and wait_heap[0][0] <= t:
            heapq.heappop(wait_heap)
        lo, hi = max(t, first), min(points[index + 1], last)
        if hi <= lo:
            continue
        entry: tuple[str, int | None, int | None]
        if ready_heap:
            entry = ("ready_not_started", ready_heap[0][3], None)
        elif wait_heap:
            var, holder = _holder(ops[wait_heap[0][2]], ops)
            entry = ("waiting_on_var", holder, var)
        else:
            after = bisect.bisect_right(push_times, lo)
            entry = ("nothing_pushed", pushes[after][2] if after < len(pushes) else None, None)
        if segments and segments[-1][1] == lo and segments[-1][2:] == entry:
            segments[-1] = (segments[-1][0], hi, *entry)
        else:
            segments.append((lo, hi, *entry))
    return segments


def _gaps(busy: list[tuple[float, float]], first: float, last: float) -> list[tuple[float, float]]:
    """The stretches of ``[first, last]`` covered by none of the ``busy`` intervals."""
    gaps = []
    cursor = first
    for start, end in sorted(busy):
        if start > cursor:
            gaps.append((cursor, min(start, last)))
        cursor = max(cursor, end)
        if cursor >= last:
            break
    if cursor < last:
        gaps.append((cursor, last))
    return [(a, b) for a, b in gaps if b > a]


def idle_spans(model: TraceModel, span: tuple[float, float] | None = None) -> list[IdleSpan]:
    """Every idle stretch of every lane in ``span``, with its reason (the module rule).

    ``span``: (first, last) on the ops' clock, the trace's first and last event
    (:func:`traced_span`; by default the model's ops and waits).  Lanes in the
    timeline's order; spans of a lane in time order.
    """
    if span is None:
        low, high = model.span()
        t0 = model.t0 or 0.0
        span = (t0 + low, t0 + high)
    first, last = span
    ops = model.ops
    by_pool: dict[str, list[OpRecord]] = {}
    busy: dict[str, list[tuple[float, float]]] = {}
    pool_of: dict[str, str] = {}  # worker -> pool, computed once per worker
    for op in ops.values():
        if op.worker is None or op.start is None:
            continue
        pool = pool_of.get(op.worker)
        if pool is None:
            pool = pool_of[op.worker] = lane_pool(op.worker)
        by_pool.setdefault(pool, []).append(op)
        busy.setdefault(op.worker, []).append((op.start, op.end if op.end is not None else last))
    segments = {
        pool: _pool_segments(members, ops, first, last) for pool, members in by_pool.items()
    }
    spans: list[IdleSpan] = []
    for lane in model.lanes():
        worker = lane.worker
        if worker not in busy:  # a GPU stream's device lane: its idle time is its worker's
            continue
        pool_segments = segments[lane_pool(worker)]
        seg_starts = [s[0] for s in pool_segments]
        for gap_start, gap_end in _gaps(busy[worker], first, last):
            index = max(0, bisect.bisect_right(seg_starts, gap_start) - 1)
            while index < len(pool_segments) and pool_segments[index][0] < gap_end:
                lo, hi, reason, op_id, var = pool_segments[index]
                lo, hi = max(lo, gap_start), min(hi, gap_end)
                if hi > lo:
                    spans.append(IdleSpan(worker, lo, hi, reason, op_id, var))
                index += 1
    return spans


def idle_summary(spans: Iterable[IdleSpan]) -> dict[str, dict[str, float]]:
    """Seconds idle per lane and reason: ``{lane: {reason: seconds}}`` (every reason listed)."""
    summary: dict[str, dict[str, float]] = {}
    for span in spans:
        row = summary.setdefault(span.lane, dict.fromkeys(REASONS, 0.0))
        row[span.reason] += span.end - span.start
    return summary
