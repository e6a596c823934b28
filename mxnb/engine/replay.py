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
    return _Simulation(model, links, inline, pool_of, counts, duration, plans, first).run()


_FINISH, _RESUME = 0, 1  # what an item of the simulation's heap is: an op ending, a thread resuming


class _Simulation:
    """The state of one replay: the clock's heap, who waits for whom, the free lanes."""

    def __init__(self, model, links, inline, pool_of, counts, duration, plans, first) -> None:
        self.ops = model.ops
        self.links, self.inline, self.pool_of = links, inline, pool_of
        self.duration, self.plans = duration, plans
        self.events: list[Event] = [VarNew(first, v, r.name) for v, r in model.vars.items()]
        self.heap: list[tuple[float, int, int, Any]] = []  # (time, order, kind, payload)
        self.order = 0
        self.waiting_preds = {i: len(deps) for i, deps in links.items()}
        self.dependents: dict[int, list[int]] = {}
        for i, deps in links.items():
            for dep in deps:
                self.dependents.setdefault(dep.op_id, []).append(i)
        self.released: set[int] = set()
        self.finished: set[int] = set()
        self.blocked: dict[str, set[int]] = {}  # front-end thread -> ops it waits for
        self.open_wait: dict[str, int] = {}  # front-end thread -> id of the wait it is in
        self.cursor = dict.fromkeys(plans, 0)
        self.ready: dict[str, list[tuple[int, float, int, int]]] = {p: [] for p in counts}
        self.free: dict[str, list[int]] = {p: list(range(n)) for p, n in counts.items()}
        self.lane_of: dict[int, int] = {}
        for thread, plan in plans.items():
            if plan:
                self.at(first + plan[0][0], _RESUME, thread)

    def at(self, time: float, kind: int, payload: Any) -> None:
        """Schedule ``payload`` (an op ending, a thread resuming) at ``time``."""
        self.order += 1
        heapq.heappush(self.heap, (time, self.order, kind, payload))

    def run(self) -> list[Event]:
        """Advance the clock until nothing is left; hand ready ops to free lanes at each instant."""
        while self.heap:
            now = self.heap[0][0]
            while self.heap and self.heap[0][0] == now:
                _, _, kind, payload = heapq.heappop(self.heap)
                if kind == _RESUME:
                    self.act(payload, now)
                else:
                    self.finish(payload, now)
            self.start_ready(now)
        return self.events

    def start(self, op_id: int, lane: int, now: float) -> None:
        """Run ``op_id`` on lane ``lane`` of its pool from ``now``."""
        self.lane_of[op_id] = lane
        self.events.append(OpStart(now, op_id, f"{self.pool_of[op_id]}/{lane}", "replay"))
        self.at(now + self.duration[op_id], _FINISH, op_id)

    def start_ready(self, now: float) -> None:
        """Each pool's best ready ops onto its free lanes."""
        for pool, queue in self.ready.items():
            while queue and self.free[pool]:
                op_id = heapq.heappop(queue)[3]
                self.start(op_id, heapq.heappop(self.free[pool]), now)

    def make_ready(self, op_id: int, now: float) -> None:
        """``op_id`` has everything: the pushing thread runs it (inline), or its pool queues it."""
        self.events.append(OpReady(now, op_id))
        if op_id in self.inline:  # the pushing thread runs it at once
            self.events.append(OpStart(now, op_id, self.ops[op_id].worker, "replay"))
            self.at(now + self.duration[op_id], _FINISH, op_id)
        else:
            op = self.ops[op_id]
            heapq.heappush(self.ready[self.pool_of[op_id]], (-op.priority, now, op.seq, op_id))

    def finish(self, op_id: int, now: float) -> None:
        """``op_id`` ends: its dependents may be ready (a chain stays on its lane), waits may end."""
        self.finished.add(op_id)
        self.events.append(OpEnd(now, op_id))
        lane = self.lane_of.pop(op_id, None)
        made_ready = []
        for succ in self.dependents.get(op_id, ()):
            self.waiting_preds[succ] -= 1
            if self.waiting_preds[succ] == 0 and succ in self.released:
                made_ready.append(succ)
        for succ in sorted(made_ready, key=lambda i: self.ops[i].seq):
            same_pool = succ not in self.inline and self.pool_of[succ] == self.pool_of[op_id]
            if lane is not None and same_pool:
                self.events.append(OpReady(now, succ))  # the worker runs it next: a chain
                self.start(succ, lane, now)
                lane = None
            else:
                self.make_ready(succ, now)
        if lane is not None:
            heapq.heappush(self.free[self.pool_of[op_id]], lane)
        for thread, targets in list(self.blocked.items()):
            targets.discard(op_id)
            if not targets:
                del self.blocked[thread]
                self.action_done(thread, now)

    def action_done(self, thread: str, now: float) -> None:
        """The front-end thread's action is over: end its wait, schedule its next action."""
        if thread in self.open_wait:
            self.events.append(WaitEnd(now, self.open_wait.pop(thread)))
        plan = self.plans[thread]
        if self.cursor[thread] < len(plan):
            self.at(now + plan[self.cursor[thread]][0], _RESUME, thread)

    def act(self, thread: str, now: float) -> None:
        """The front-end thread's next recorded action: a push, or a wait for some ops."""
        _, kind, payload = self.plans[thread][self.cursor[thread]]
        self.cursor[thread] += 1
        if kind == "push":
            targets = self.push(self.ops[payload], thread, now)
        else:
            targets = {t for t in payload if t not in self.finished}
            self.open_wait[thread] = len(self.events)
            self.events.append(WaitBegin(now, self.open_wait[thread], None, thread))
        if targets:
            self.blocked[thread] = targets
        else:
            self.action_done(thread, now)

    def push(self, op: OpRecord, thread: str, now: float) -> set[int]:
        """Push ``op``; return what the pusher now waits for (an inline op: the op itself)."""
        self.released.add(op.op_id)
        deps = tuple(d for d in self.links[op.op_id] if d.op_id not in self.finished)
        self.events.append(
            OpPush(
                now, op.op_id, op.name, op.ctx, op.const_vars, op.mutate_vars, op.priority,
                deps, thread,
            )
        )  # fmt: skip
        if self.waiting_preds[op.op_id] == 0:
            self.make_ready(op.op_id, now)
        return {op.op_id} - self.finished if op.op_id in self.inline else set()
