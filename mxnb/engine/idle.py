"""The idle fast path: an op whose vars are all idle runs at once, booked as the rule would.

Idea: most ops on the naive engine (and on a threaded engine whose workers are
behind) are pushed when none of their vars has anything pending.  The rule
(:mod:`.var`) would grant every var at once, so the op runs at once in the
pushing thread, booked as the rule books it (a read counts one more pending
read, a write holds the var) and released the same way when nothing was
pushed behind it: the one exception to "every push goes through the rule".

Three steps, one helper each: :meth:`IdleFastPath._book_idle` (all vars idle?
then book them and make the granted op, :func:`~mxnb.engine.var.granted_opr`),
:meth:`IdleFastPath._run_booked` and :meth:`IdleFastPath._complete_idle`
(undo the booking, or else complete by the rule).  Two entries call them:
:meth:`IdleFastPath._push_idle` (the engines' ``_push_opr``) and the naive
engine's ``push_sync``, :meth:`IdleFastPath.push_sync_one_var`, which knows
the commonest push (one var, default options) by its shape.  Records go
through ``record_push`` / ``record_done``.  A var list is tested before its
loop (most ops only read or only write; an empty loop costs more), and the
release looks at the vars only when another op is pending.

Rule: anything else (a busy var, a var carrying a failure, an async op, a
delete, debug mode, a hand-over, a shutdown, an op pushed behind it while it
runs, a failing op) takes the plain rule, ``Engine._push_opr`` /
``Engine._complete``; a failure on other vars does not (the op can be neither
skipped nor mark a var).  ``tests/engine/test_naive_idle.py`` checks the path.

State kept: none (the engine's lock, counts and vars).

Example::

    >>> import mxnb as mx
    >>> eng = mx.engine.create('naive')          # every push tries the idle path
    >>> v = eng.new_var(name='v')
    >>> _ = eng.push_sync(lambda rctx: None, mx.cpu(), mutate_vars=[v])
    >>> (v.pending_write, v.writes_done)         # booked and released, as the rule would
    (None, 1)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from ..context import Context, RunContext
from . import tracing
from .base import Engine, _next_op_id
from .records import record_done, record_push
from .running import RunContextCache
from .var import DONE, RUNNING, Opr, Var, granted_opr
from .waiting import _local

__all__ = ["IdleFastPath"]


class IdleFastPath(Engine):
    """An engine that can run an op whose vars are idle at push (see the module docstring)."""

    _run_contexts: RunContextCache  # the pushing thread's RunContexts (its worker in traces)

    def _run_successors(self, ready: list[Opr]) -> None:  # the ops a completion made ready
        raise NotImplementedError  # the naive engine runs them, a threaded one queues them

    def _push_idle(
        self,
        fn: Any,
        is_async: bool,
        ctx: Context,
        const: tuple[Var, ...],
        mutate: tuple[Var, ...],
        priority: int,
        name: str,
        copy: bool,
        delete: tuple[Var, ...] | None = None,
    ) -> int:
        """Run an op whose vars are all idle at once, booked as the rule would; else push by the rule."""
        idle = not is_async and delete is None  # only a sync push may run at once
        opr = self._book_idle(fn, ctx, const, mutate, priority, name, copy) if idle else None
        if opr is None:
            return Engine._push_opr(
                self, fn, is_async, ctx, const, mutate, priority, name, copy, delete
            )
        if self._run_booked(opr, fn, ctx):
            self._complete_idle(opr)
        return opr.id

    def push_sync_one_var(
        self,
        fn: Callable[[RunContext], Any],
        ctx: Context,
        const_vars: Sequence[Var] = (),
        mutate_vars: Sequence[Var] = (),
        priority: int = 0,
        name: str = "",
        *,
        copy: bool = False,
    ) -> int:
        """:meth:`Engine.push_sync` (same arguments, checks and result), its commonest push first.

        One var in a list or tuple, default options: straight to :meth:`_push_idle`'s three
        steps; any other push takes :meth:`Engine.push_sync`.
        """
        if not const_vars:
            given, reads = mutate_vars, False
        elif not mutate_vars:
            given, reads = const_vars, True
        else:
            given, reads = None, False
        kind = type(given)
        if (
            (kind is not tuple and kind is not list)
            or len(given) != 1  # type: ignore[arg-type]
            or type(var := given[0]) is not Var  # type: ignore[index]
            or type(ctx) is not Context
            or priority != 0
            or copy is not False
            or type(name) is not str
            or not callable(fn)
        ):
            return Engine.push_sync(
                self, fn, ctx, const_vars, mutate_vars, priority, name, copy=copy
            )
        held: tuple[Var, ...] = given if kind is tuple else (var,)  # type: ignore[assignment]  # a tuple of one Var
        name = name or getattr(fn, "__name__", "op")
        const, mutate = (held, ()) if reads else ((), held)
        opr = self._book_idle(fn, ctx, const, mutate, 0, name, False)
        if opr is None:
            return Engine._push_opr(self, fn, False, ctx, const, mutate, 0, name, False)
        if self._run_booked(opr, fn, ctx):
            self._complete_idle(opr)
        return opr.id

    def _book_idle(
        self,
        fn: Any,
        ctx: Context,
        const: tuple[Var, ...],
        mutate: tuple[Var, ...],
        priority: int,
        name: str,
        copy: bool,
    ) -> Opr | None:
        """Book a sync op granted at once; None unless every var is idle and the engine calm.

        Idle: not held by a write (nor by a read, for a write), not deleted, no failure on it (a
        failure elsewhere cannot touch the op); calm: no hand-over, shutdown or debug mode.
        """
        lock = self._lock
        if not lock.acquire(False):
            self._acquire_contended()
        try:
            if self._shut or self._handover is not None or self.slow_wait_threshold is not None:
                return None  # not calm
            if const:
                for var in const:
                    if var.pending_write is not None or var.deleted or var.error is not None:
                        return None
            if mutate:
                for var in mutate:  # a failed var recovers when written: the rule's work
                    if var.pending_write is not None or var.pending_reads or var.deleted:
                        return None
                    if var.error is not None:
                        return None
            opr = granted_opr(_next_op_id(), name, const, mutate, fn, ctx, priority, copy)
            if const:
                for var in const:  # the rule's booking, every var granting at once
                    var.pending_reads += 1
            if mutate:
                for var in mutate:
                    var.writes_pushed += 1
                    var.pending_write = opr
            self._num_pending += 1
            if tracing.enabled:
                record_push(opr, self._run_contexts.worker)  # push and start, one record
            return opr
        finally:
            lock.release()

    def _run_booked(self, opr: Opr, fn: Any, ctx: Context) -> bool:
        """Run a booked op in this thread, on its stack of running ops; False when it raised.

        No start is recorded: the push record said it, or no push was (a recorder attached
        since), and the trace leaves the op out.  A raised op is completed by the rule.
        """
        rctx = self._run_contexts.last  # the commonest case, before RunContextCache.get
        if rctx is None or rctx.ctx is not ctx:
            rctx = self._run_contexts.get(ctx)
        opr.state = RUNNING
        try:  # running._running_stack() written out: the call measured +0.05x of the reference
            stack = _local.stack
        except AttributeError:
            stack = _local.stack = []
        stack.append(opr)
        try:
            fn(rctx)
        except BaseException as exc:  # noqa: BLE001 - booked by the rule; a Ctrl-C is raised on
            stack.pop()
            ready = self._complete(opr, exc)
            if not isinstance(exc, Exception):
                for successor in ready:
                    self._dispatch(successor)
                raise
            if ready:
                self._run_successors(ready)
            return False
        stack.pop()
        return True

    def _complete_idle(self, opr: Opr) -> None:
        """Undo the booking of a run op if nothing was pushed behind it; else the rule."""
        lock = self._lock
        if not lock.acquire(False):
            self._acquire_contended()
        try:
            const, mutate = opr.const_vars, opr.mutate_vars
            alone = True
            if self._num_pending > 1:  # else the only op pending: none can wait behind it
                for var in const:
                    alone = alone and var.pending_write is None  # no write waits for this read
                for var in mutate:
                    alone = alone and not var.queue
            if alone:  # the rule's release, nothing made ready
                if const:
                    for var in const:
                        var.pending_reads -= 1
                if mutate:
                    for var in mutate:
                        var.writes_done += 1
                        var.pending_write = None
                opr.state = DONE
                self._num_pending -= 1
                if self._num_waiters:
                    self._wake_waiters(opr)
                if tracing.enabled:
                    record_done(opr)
        finally:
            lock.release()
        if alone:
            opr.fn = None  # drops the user's closure outside the lock
        elif ready := self._complete(opr, None):
            self._run_successors(ready)
