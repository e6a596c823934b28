"""What if: replay a recorded run on other workers, with some ops faster or slower.

Idea: a trace holds everything a schedule depends on — each op's vars (so
its dependencies, :mod:`.lineage`), its measured run time, and when the
front end pushed it and waited.  Replaying that program through a list
scheduler predicts the run's makespan under changes nobody has to make
first: two workers instead of one, ``conv*`` twice as fast, the naive
engine's program on a pool.

Rule (list scheduling, as the threaded engines run):

- The front end: each thread that pushed ops or waited replays its actions
  in order, keeping the recorded gap between the end of one action and the
  start of the next (its own Python time).  A push releases its op; a
  ``wait_for_var`` blocks until the newest earlier write of that var is
  done, a ``wait_for_all`` until every earlier op is; an op the pushing
  thread ran itself (worker ``main`` or ``<pool>/push``) blocks it for the
  op's run, when ``workers`` is None.
- An op is ready once released and all its dependencies (the lineage rule)
  are done.  The worker that ran the op that made it ready runs it next
  when it is the first (in push order) such op of the worker's pool (the
  threaded engines' chains); else it is queued, and a pool's free worker
  (lowest index first) takes the queued op with the highest priority, then
  the one ready first, then push order.
- An op runs for its measured duration (start to end) times the factor of
  the first ``scale`` pattern (``fnmatch``) matching its name.
- ``workers=None`` keeps the recorded pools and their worker counts;
  ``workers=k`` gives every context (``OpRecord.ctx``) a pool of ``k`` workers
  and runs every op there (the naive engine's program on a pool).

Makespan: from the first push to the last op end or wait end (the same
for a recorded trace: :func:`makespan`).  Engine overheads (a queue round
trip, waking a worker) are not modelled, so ops much longer than them
replay best.

State kept: none (a :class:`Replay` holds its result).

Example::

    >>> from mxnb.engine.events import OpPush, OpReady, OpStart, OpEnd
    >>> events = []
    >>> for i in (1, 2):   # two independent 1 s ops, run one after the other on 'main'
    ...     events += [OpPush(i - 1.0, i, 'conv', 'cpu(0)', (), (i,), 0, ()),
    ...                OpReady(i - 1.0, i), OpStart(i - 1.0, i, 'main', 't'), OpEnd(float(i), i)]
    >>> replay(TraceModel(events), workers=2).makespan
    1.0
    >>> replay(TraceModel(events), scale={'conv': 0.5}).makespan
    1.0
"""

from __future__ import annotations

import fnmatch
import heapq
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from ..base import ParamError
from .analysis import OpRecord
from .events import Event, OpEnd, OpPush, OpReady, OpStart, VarNew, WaitBegin, WaitEnd
from .idle_time import lane_pool
from .lineage import dependency_links
from .trace_model import TraceModel

__all__ = ["Replay", "makespan", "replay"]

_INLINE_SUFFIX = "/push"


def makespan(model: TraceModel) -> float:
    """Seconds from the first push to the last op end or wait end of a trace (0.0 when empty)."""
    pushes = [op.push for op in model.ops.values() if op.push is not None]
    if not pushes:
        return 0.0
    t0 = model.t0 or 0.0
    ends = [op.end for op in model.ops.values() if op.end is not None]
    ends += [t0 + w.end for w in model.waits.values() if w.end is not None]
    return max([*ends, min(pushes)]) - min(pushes)


@dataclass
class Replay:
    """A replayed run: its predicted ``makespan`` (seconds) and its simulated ``trace``."""

    makespan: float
    trace: Any  # ``make_trace(events)``: a Trace when made by ``Trace.replay``
    workers: dict[str, int]  # pool -> workers it had
    scale: dict[str, float]
    events: list[Event]  # the simulated run

    def __repr__(self) -> str:
        pools = ", ".join(f"{pool}: {n}" for pool, n in self.workers.items()) or "front end only"
        return f"Replay(makespan={1e3 * self.makespan:.3f} ms, workers={{{pools}}})"


def _factor(name: str, scale: Mapping[str, float]) -> float:
    for pattern, factor in scale.items():
        if fnmatch.fnmatchcase(name, pattern):
            return factor
    return 1.0


def _check(workers: int | None, scale: Mapping[str, float]) -> None:
    if workers is not None and (not isinstance(workers, int) or workers < 1):
        raise ParamError(
            f"replay: workers={workers!r}; pass a positive int, or None for the recorded pools"
        )
    for pattern, factor in scale.items():
        if not isinstance(factor, (int, float)) or factor < 0:
            raise ParamError(
                f"replay: scale[{pattern!r}]={factor!r}; pass a factor >= 0 (0.5: twice as fast)"
            )


def _is_inline(op: OpRecord) -> bool:
    return op.worker is not None and (op.worker == "main" or op.worker.endswith(_INLINE_SUFFIX))


def _front_ends(model: TraceModel) -> tuple[dict[str, list[tuple]], float]:
    """Per front-end thread its actions in order, each (gap, kind, payload); and the first one's time.

    A gap leaves out the time the thread spent running an op of its own in
    the recorded run (the naive engine's ops, a helping pusher's).
    """
    t0 = model.t0 or 0.0
    raw: dict[str, list[tuple[float, float, str, object]]] = {}  # thread -> (begin, end, kind, x)
    for op in model.ops.values():
        if op.push is None:
            continue
        end = op.end if _is_inline(op) and op.end is not None else op.push
        raw.setdefault(op.thread, []).append((op.push, end, "push", op.op_id))
    pushed_by = sorted((op.push, op.seq, op) for op in model.ops.values() if op.push is not None)
    for wait in model.waits.values():
        if wait.end is None or wait.thread.startswith("mxnb-engine"):
            continue  # a worker waiting inside an op: part of that op's run
        begin = t0 + wait.begin
        earlier = [op for push, _, op in pushed_by if push <= begin]
        if wait.var_id is None:
            targets = [op.op_id for op in earlier]
        else:
            writers = [op.op_id for op in earlier if wait.var_id in op.mutate_vars]
            targets = writers[-1:]
        raw.setdefault(wait.thread, []).append((begin, t0 + wait.end, "wait", targets))
    first = min((a[0] for actions in raw.values() for a in actions), default=0.0)
    plans: dict[str, list[tuple]] = {}
    for thread, actions in raw.items():
        actions.sort(key=lambda a: (a[0], a[2] == "wait"))
        previous = first
        plan = []
        for begin, end, kind, payload in actions:
            plan.append((max(0.0, begin - previous), kind, payload))
            previous = max(previous, end)
        plans[thread] = plan
    return plans, first


def replay(
    model: TraceModel,
    workers: int | None = None,
    scale: Mapping[str, float] | None = None,
    make_trace: Callable[[list[Event]], Any] = list,
) -> Replay:
    """List-schedule the recorded program (the module rule) and return the :class:`Replay`.

    ``make_trace`` turns the simulated events into the Replay's ``trace``
    (``Trace.replay`` passes ``Trace``; this module does not import it).
    """
    scale = dict(scale or {})
    _check(workers, scale)
    ops = model.ops
    links = dependency_links(model)
    inline = {i for i, op in ops.items() if workers is None and _is_inline(op)}
    pool_of: dict[int, str] = {}
    lanes_seen: dict[str, set[str]] = {}
    for op_id, op in ops.items():
        if op_id in inline:
            continue
        if workers is None and op.worker is not None:
            pool = lane_pool(op.worker)
            lanes_seen.setdefault(pool, set())
            if not op.worker.endswith(("/help", _INLINE_SUFFIX)):
                lanes_seen[pool].add(op.worker)
        else:
            pool = op.ctx or "cpu(0)"
            lanes_seen.setdefault(pool, set())
        pool_of[op_id] = pool
    counts = {pool: workers or max(1, len(seen)) for pool, seen in lanes_seen.items()}
    duration = {
        i: max(0.0, (op.end - op.start) if op.start is not None and op.end is not None else 0.0)
        * _factor(op.name, scale)
        for i, op in ops.items()
    }
    plans, first = _front_ends(model)
    events = _simulate(model, links, inline, pool_of, counts, duration, plans, first)
    return Replay(makespan(TraceModel(events)), make_trace(events), counts, scale, events)


def _simulate(model, links, inline, pool_of, counts, duration, plans, first) -> list[Event]:
    """Run the list scheduler and the front ends as one discrete-event simulation: its events."""
    ops = model.ops
    events: list[Event] = [VarNew(first, v, r.name) for v, r in model.vars.items()]
    heap: list[tuple[float, int, int, object]] = []  # (time, order, kind, payload)
    order = 0
    finish_kind, resume_kind = 0, 1

    def at(time: float, kind: int, payload: object) -> None:
        nonlocal order
        order += 1
        heapq.heappush(heap, (time, order, kind, payload))

    waiting_preds = {i: len(deps) for i, deps in links.items()}
    dependents: dict[int, list[int]] = {}
    for i, deps in links.items():
        for dep in deps:
            dependents.setdefault(dep.op_id, []).append(i)
    released: set[int] = set()
    finished: set[int] = set()
    blocked: dict[str, set[int]] = {}  # front-end thread -> ops it waits for
    open_wait: dict[str, int] = {}  # front-end thread -> id of the wait it is in
    cursor = dict.fromkeys(plans, 0)
    ready: dict[str, list[tuple[int, float, int, int]]] = {p: [] for p in counts}
    free: dict[str, list[int]] = {p: list(range(n)) for p, n in counts.items()}
    lane_of: dict[int, int] = {}
    for thread, plan in plans.items():
        if plan:
            at(first + plan[0][0], resume_kind, thread)

    def make_ready(op_id: int, now: float) -> None:
        events.append(OpReady(now, op_id))
        if op_id in inline:  # the pushing thread runs it at once
            events.append(OpStart(now, op_id, ops[op_id].worker, "replay"))
            at(now + duration[op_id], finish_kind, op_id)
        else:
            op = ops[op_id]
            heapq.heappush(ready[pool_of[op_id]], (-op.priority, now, op.seq, op_id))

    def action_done(thread: str, now: float) -> None:
        if thread in open_wait:
            events.append(WaitEnd(now, open_wait.pop(thread)))
        if cursor[thread] < len(plans[thread]):
            at(now + plans[thread][cursor[thread]][0], resume_kind, thread)

    def act(thread: str, now: float) -> None:
        _, kind, payload = plans[thread][cursor[thread]]
        cursor[thread] += 1
        if kind == "push":
            op = ops[payload]
            released.add(op.op_id)
            deps = tuple(d for d in links[op.op_id] if d.op_id not in finished)
            events.append(
                OpPush(
                    now,
                    op.op_id,
                    op.name,
                    op.ctx,
                    op.const_vars,
                    op.mutate_vars,
                    op.priority,
                    deps,
                    thread,
                )
            )
            if waiting_preds[op.op_id] == 0:
                make_ready(op.op_id, now)
            targets = {op.op_id} - finished if op.op_id in inline else set()
        else:
            targets = {t for t in payload if t not in finished}
            open_wait[thread] = len(events)
            events.append(WaitBegin(now, open_wait[thread], None, thread))
        if targets:
            blocked[thread] = targets
        else:
            action_done(thread, now)

    while heap:
        now = heap[0][0]
        while heap and heap[0][0] == now:
            _, _, kind, payload = heapq.heappop(heap)
            if kind == resume_kind:
                act(payload, now)
                continue
            finished.add(payload)
            events.append(OpEnd(now, payload))
            lane = lane_of.pop(payload, None)
            made_ready = []
            for succ in dependents.get(payload, ()):
                waiting_preds[succ] -= 1
                if waiting_preds[succ] == 0 and succ in released:
                    made_ready.append(succ)
            for succ in sorted(made_ready, key=lambda i: ops[i].seq):
                if lane is not None and succ not in inline and pool_of[succ] == pool_of[payload]:
                    events.append(OpReady(now, succ))  # the worker runs it next: a chain
                    lane_of[succ] = lane
                    events.append(OpStart(now, succ, f"{pool_of[succ]}/{lane}", "replay"))
                    at(now + duration[succ], finish_kind, succ)
                    lane = None
                else:
                    make_ready(succ, now)
            if lane is not None:
                heapq.heappush(free[pool_of[payload]], lane)
            for thread, targets in list(blocked.items()):
                targets.discard(payload)
                if not targets:
                    del blocked[thread]
                    action_done(thread, now)
        for pool, queue in ready.items():
            while queue and free[pool]:
                op_id = heapq.heappop(queue)[3]
                lane_of[op_id] = heapq.heappop(free[pool])
                events.append(OpStart(now, op_id, f"{pool}/{lane_of[op_id]}", "replay"))
                at(now + duration[op_id], finish_kind, op_id)
    return events
