"""NaiveEngine: the dependency rule with no threads — the reference engine.

Idea (MXNet: ``NaiveEngine`` in src/engine/naive_engine.cc): an op runs as
soon as the rule grants it its vars, in the thread that made it ready —
usually the pushing thread, at push time.  Every push is checked, appended to
its vars and completed exactly as on the threaded engines
(:mod:`mxnb.engine.base`, :mod:`mxnb.engine.var`); only dispatch differs.
That makes it the reference the other engines are tested against, and the
engine to debug with: a failing op's traceback passes through your push.

Rule: push order is execution order; the ops a completion makes ready run
next, in the order they became ready, iteratively (a long chain must not
grow the Python stack).  A push from inside a running op waits, as the rule
says, for the ops it conflicts with, so it may run only when the running op
completes.  An async op's push returns only after its ``on_complete`` was
called (from any thread).

The idle fast path (:meth:`NaiveEngine._push_idle`, the one exception to
"every push goes through the rule"): most ops here are pushed when none of
their vars has anything pending — every earlier op ran at its own push.  The
rule then grants every var at once, so such an op runs at once, and its
booking is the rule's result written out: a read counts one more pending
read, a write holds the var; when it completes with nothing pushed behind it,
the booking is undone the same way.  Whatever else comes (a busy var, an
async op, a delete, a failure, debug mode, a hand-over, an op pushed behind
it while it runs) takes the plain rule.  ``tests/engine/test_naive_idle.py``
runs random workloads through both and compares results, traces and var
states.

State kept:
    _run_contexts   one RunContext per context (worker ``'main'``)

Example::

    >>> import mxnb as mx
    >>> eng = mx.engine.create('naive')
    >>> v = eng.new_var(name='x')
    >>> seen = []
    >>> _ = eng.push_sync(lambda rctx: seen.append(rctx.worker), mx.cpu(), mutate_vars=[v])
    >>> seen
    ['main']
"""

from __future__ import annotations

import threading
from collections import deque
from typing import Any

from ..context import Context
from . import trace
from .base import Engine, Opr, Var, _next_op_id
from .records import record_done, record_push, record_start
from .running import RunContextCache, _Completion
from .var import DONE, READY, RUNNING
from .waiting import _local

__all__ = ["NaiveEngine"]

_new_object = object.__new__


class NaiveEngine(Engine):
    """Run every ready op at once in the thread that made it ready."""

    kind = "naive"
    starts_at_push = "main"

    def __init__(self) -> None:
        super().__init__()
        self._run_contexts = RunContextCache(None, "main")

    def _dispatch(self, opr: Opr) -> None:
        ready = self._run(opr, self._run_contexts.get(opr.ctx))
        if ready:
            self._run_ready(ready)

    def _run_ready(self, ready: list[Opr]) -> None:
        """Run ``ready``, then the ops their completions make ready, in that order, iteratively."""
        contexts = self._run_contexts
        todo = deque(ready)
        while todo:
            opr = todo.popleft()
            ready = self._run(opr, contexts.get(opr.ctx))
            if ready:
                todo.extend(ready)

    # -- the idle fast path (see the module docstring) ---------------------------------
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
        """Run an op whose vars are all idle at once, booked as the rule would; else push by the rule.

        Idle: no write holds any of its vars, no read holds a var it writes,
        none is deleted; and the engine has no failure, hand-over, shutdown
        or debug mode to look after.  The op is sync and deletes nothing.
        """
        if is_async or delete is not None:
            return Engine._push_opr(
                self, fn, is_async, ctx, const, mutate, priority, name, copy, delete
            )
        lock = self._lock
        if not lock.acquire(False):
            self._acquire_contended()
        try:
            opr = None
            idle = not (
                self._failures
                or self._handover is not None
                or self._shut
                or self.slow_wait_threshold is not None
            )
            if idle:
                for var in const:
                    if var.pending_write is not None or var.deleted:
                        idle = False
                for var in mutate:
                    if var.pending_write is not None or var.pending_reads or var.deleted:
                        idle = False
            if idle:  # the rule's booking, every var granting at once
                # Opr(...) written out, already granted: a class call and its
                # __init__ were an eighth of this path (tests/engine/test_naive_idle.py
                # checks every slot against Opr's own).
                opr = _new_object(Opr)
                opr.id = _next_op_id()
                opr.name = name
                opr.const_vars = const
                opr.mutate_vars = mutate
                opr.wait_count = 0
                opr.state = READY
                opr.fn = fn
                opr.ctx = ctx
                opr.priority = priority
                opr.is_async = False
                opr.copy = copy
                opr.deletes = None
                opr.push_time = 0.0
                opr.waited_on = ()
                for var in const:
                    var.pending_reads += 1
                for var in mutate:
                    var.writes_pushed += 1
                    var.pending_write = opr
                self._num_pending += 1
                if trace.enabled:
                    record_push(opr, "main")  # push and start, one record
        finally:
            lock.release()
        if opr is None:
            return Engine._push_opr(self, fn, is_async, ctx, const, mutate, priority, name, copy)
        rctx = self._run_contexts.by_id.get(id(ctx))  # RunContextCache.get without the call
        if rctx is None or rctx.ctx is not ctx:
            rctx = self._run_contexts.get(ctx)
        if trace.enabled and opr.state is READY:  # recording began since the push
            record_start(opr, "main", None)
        opr.state = RUNNING
        try:
            stack = _local.stack
        except AttributeError:
            stack = _local.stack = []
        stack.append(opr)
        try:
            fn(rctx)
        except BaseException as exc:  # a failure is the rule's business: complete it so
            stack.pop()
            ready = self._complete(opr, exc)
            if not isinstance(exc, Exception):  # Ctrl-C: book it, run what it released, raise
                for successor in ready:
                    self._dispatch(successor)
                raise
            if ready:
                self._run_ready(ready)
            return opr.id
        stack.pop()
        self._complete_idle(opr)
        return opr.id

    _push_opr = _push_idle  # every push tries the idle fast path; it falls back to the rule

    def _complete_idle(self, opr: Opr) -> None:
        """Complete an op of :meth:`_push_idle`: undo its booking if nothing was pushed behind it.

        Otherwise (or if a failure appeared meanwhile) it completes by the rule.
        """
        lock = self._lock
        if not lock.acquire(False):
            self._acquire_contended()
        try:
            alone = not self._failures
            if alone:
                for var in opr.const_vars:
                    if var.pending_write is not None:  # a write waits for this read
                        alone = False
                for var in opr.mutate_vars:
                    if var.queue:
                        alone = False
            if alone:  # the rule's release, nothing made ready
                for var in opr.const_vars:
                    var.pending_reads -= 1
                for var in opr.mutate_vars:
                    var.writes_done += 1
                    var.pending_write = None
                opr.state = DONE
                self._num_pending -= 1
                if self._num_waiters:
                    self._wake_waiters(opr)
                if trace.enabled:
                    record_done(opr)
        finally:
            lock.release()
        if alone:
            opr.fn = None  # drops the user's closure outside the lock
            return
        ready = self._complete(opr, None)
        if ready:
            self._run_ready(ready)

    # -- async ops: the push waits for on_complete ---------------------------------
    def _prepare_async(self, completion: _Completion) -> None:
        completion.event = threading.Event()

    def _finish_async(self, completion: _Completion) -> list[Opr] | None:
        event = completion.event
        assert event is not None
        try:
            while not event.wait(self._wait_poll):
                pass
        except BaseException:
            # Ctrl-C while the callback is outstanding: leave the op running;
            # whoever calls on_complete later dispatches its successors.
            with self._lock:
                if event.is_set():
                    ready = completion.ready or []
                else:
                    completion.event = None
                    ready = []
            for opr in ready:
                self._dispatch(opr)
            raise
        return completion.ready

    def _async_done(self, completion: _Completion, ready: list[Opr]) -> None:
        with self._lock:
            event = completion.event
            if event is not None:  # the pushing thread waits and runs ``ready``
                completion.ready = ready
                event.set()
        if event is None:  # the pushing thread was interrupted: run them here
            for opr in ready:
                self._dispatch(opr)
