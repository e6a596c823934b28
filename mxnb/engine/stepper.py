"""StepEngine: ready ops wait until you say which one runs.

Idea: the same var/op bookkeeping as every engine, but a ready op is only
*listed*; it runs when a person or a test calls :meth:`StepEngine.step`
(the next one), :meth:`StepEngine.run_op` (a chosen one), :meth:`run` or
:meth:`run_until`.  Choosing different ready ops shows which schedules the
dependency rule allows: two readers of a var may swap, a writer never
overtakes an earlier op on its var.  A ``wait_*`` call drives the schedule
forward itself, so ordinary code (NDArray, executor) still works under it.

Rule: only ready ops can run; :meth:`run_op` on an op that is not ready
raises :class:`~mxnb.base.EngineError` naming the var and op it waits for.

State kept:
    _ready   op id -> ready op, in the order they became ready
    _live    op id -> every pushed op not yet complete

Example::

    >>> import mxnb as mx
    >>> eng = mx.engine.create('step')
    >>> a = eng.new_var(name='a')
    >>> w = eng.push_sync(lambda rctx: None, mx.cpu(), mutate_vars=[a], name='w')
    >>> r = eng.push_sync(lambda rctx: None, mx.cpu(), const_vars=[a], name='r')
    >>> [op.name for op in eng.ready_ops()]
    ['w']
    >>> eng.step().name, [op.name for op in eng.ready_ops()]
    ('w', ['r'])
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass

from ..base import EngineError
from ..context import RunContext
from . import base as _base
from .base import DONE, PENDING, READY, RUNNING, Engine, Opr, RunContextCache
from .waiting import _local

__all__ = ["OpInfo", "StepEngine"]

_STATE_NAMES = {PENDING: "pending", READY: "ready", RUNNING: "running", DONE: "done"}


@dataclass(frozen=True)
class OpInfo:
    """An op as the step engine lists it."""

    op_id: int
    name: str
    priority: int = 0
    state: str = "ready"  # 'pending' | 'ready' | 'running'


def _info(opr: Opr) -> OpInfo:
    return OpInfo(opr.id, opr.name, opr.priority, _STATE_NAMES[opr.state])


class StepEngine(Engine):
    """Ready ops run only when :meth:`step`, :meth:`run_op`, :meth:`run` or a wait says so."""

    kind = "step"
    idle_delete = False  # a class stepping through ops sees every delete

    def __init__(self) -> None:
        super().__init__()
        self._ready: dict[int, Opr] = {}
        self._order: list[tuple[int, int]] = []  # heap of (-priority, op id); stale ids skipped
        self._live: dict[int, Opr] = {}
        self._contexts = RunContextCache(None, "step")

    # -- bookkeeping hooks -----------------------------------------------------
    def _complete(
        self,
        opr: Opr,
        exc: BaseException | None,
        inherited: _base._ErrorRef | None = None,
        chain: RunContext | None = None,
    ) -> list[Opr]:
        ready = super()._complete(opr, exc, inherited, chain)
        with self._lock:
            self._live.pop(opr.id, None)
        return ready

    def _dispatch(self, opr: Opr) -> None:
        with self._lock:
            self._ready[opr.id] = opr
            heapq.heappush(self._order, (-opr.priority, opr.id))

    # -- the schedule, by hand -------------------------------------------------
    def ready_ops(self) -> list[OpInfo]:
        """Return the ops that may run now, in the order :meth:`step` would pick them."""
        with self._lock:
            oprs = sorted(self._ready.values(), key=lambda o: (-o.priority, o.id))
        return [_info(opr) for opr in oprs]

    def pending_ops(self) -> list[OpInfo]:
        """Return every pushed op not yet complete (pending, ready or running), by op id."""
        with self._lock:
            oprs = sorted(self._live.values(), key=lambda o: o.id)
            return [_info(opr) for opr in oprs]

    def step(self) -> OpInfo | None:
        """Run the next ready op (highest priority, then push order); None when none is ready."""
        opr = self._next_ready()
        if opr is None:
            return None
        info = OpInfo(opr.id, opr.name, opr.priority, "running")
        self._run_now(opr)
        return info

    def _next_ready(self) -> Opr | None:
        """Take the op :meth:`step` would run next off the ready set (None: none ready)."""
        with self._lock:
            opr = None
            while self._order:
                _, op_id = heapq.heappop(self._order)
                opr = self._ready.pop(op_id, None)
                if opr is not None:
                    break
        return opr

    def run_op(self, op_id: int) -> OpInfo:
        """Run the ready op ``op_id``; raise :class:`EngineError` saying why when it is not ready."""
        with self._lock:
            opr = self._ready.pop(op_id, None)
            if opr is None:
                raise EngineError(self._why_not_ready(op_id))
        info = OpInfo(opr.id, opr.name, opr.priority, "running")
        self._run_now(opr)
        return info

    def run(self) -> int:
        """Run ready ops until none is left; return how many ran."""
        count = 0
        while self.step() is not None:
            count += 1
        return count

    def run_until(self, op_id: int) -> int:
        """Run ready ops in step order until op ``op_id`` is complete; return how many ran."""
        count = 0
        while True:
            with self._lock:
                if op_id not in self._live:
                    return count
            if self.step() is None:
                self._wait_until(lambda: op_id not in self._live, None)
                return count
            count += 1

    def _run_now(self, opr: Opr) -> None:
        ready = self._run(opr, self._contexts.get(opr.ctx))
        if ready:
            for successor in ready:
                self._dispatch(successor)

    def _why_not_ready(self, op_id: int) -> str:
        """Explain why op ``op_id`` cannot run now (call under the lock)."""
        opr = self._live.get(op_id)
        if opr is None:
            return (
                f"run_op({op_id}): no pending op has id {op_id} (it already ran, or never existed)"
            )
        if opr.state == RUNNING:
            return f"run_op({op_id}): op '{opr.name}' is already running"
        reasons = []
        for var in opr.const_vars:
            if any(waiting is opr for waiting, _ in var.queue or ()):
                holder = var.pending_write
                reasons.append(
                    f"it reads var {var.name!r}, which op '{holder.name}' (id {holder.id}) "
                    "writes first"
                    if holder is not None
                    else f"it reads var {var.name!r}, written first by an earlier op"
                )
        for var in opr.mutate_vars:
            if var.pending_write is not opr:
                holder = var.pending_write
                if holder is not None:
                    reasons.append(
                        f"it writes var {var.name!r} after op '{holder.name}' (id {holder.id})"
                    )
            elif var.pending_reads:
                reasons.append(
                    f"it writes var {var.name!r}, which {var.pending_reads} earlier reader(s) "
                    "still read"
                )
        ready = ", ".join(f"{o.name!r} (id {o.id})" for o in self._ready.values()) or "none"
        return (
            f"run_op({op_id}): op '{opr.name}' is not ready: {'; '.join(reasons) or 'it waits'}."
            f" Ready now: {ready}"
        )

    # -- waits drive the schedule ----------------------------------------------
    def _help_once(self) -> bool:
        opr = self._next_ready()
        if opr is None:
            return False
        self._run_now(opr)
        return True

    def _stuck_check(self) -> None:
        stack = getattr(_local, "stack", None) or []
        with self._lock:
            if self._ready:
                return
            running_elsewhere = any(
                opr.state == RUNNING and opr not in stack for opr in self._live.values()
            )
            if running_elsewhere or not self._live:
                return
            pending = ", ".join(f"'{o.name}' (id {o.id})" for o in self._live.values())
        raise EngineError(
            "step engine: this wait can never finish: no op is ready and none is running "
            f"outside the waiting op; still pending: {pending}. Did an op wait for a var it "
            "writes itself?"
        )
