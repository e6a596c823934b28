"""NaiveEngine: the dependency rule with no threads — the reference engine.

Idea (MXNet: ``NaiveEngine`` in src/engine/naive_engine.cc): an op runs as
soon as its vars allow, in the thread that made it ready — usually the
pushing thread, at push time.  It shares every line of var/op bookkeeping
with the threaded engines (:mod:`mxnb.engine.base`); only dispatch differs.
That makes it the reference the other engines are tested against, and the
engine to debug with: a failing op's traceback passes through your push.

Rule: push order is execution order; an async op's push returns only after
its ``on_complete`` was called (from any thread).  A push made from inside a
running op runs inline, at once.

The quiet path: an op pushed while nothing else is pending (the usual case
here: every op ran at its own push) cannot wait for anything and nothing can
wait for it, so it runs without being booked on its vars, the engine merely
counting it as pending (``Engine._inline``).  Whatever comes while it runs
that needs its vars to show it — a push from inside it or from another
thread, ``wait_for_var``, a delete — books it first (``Engine._book_inline``),
and from then on it completes as any booked op does.  A failing op is booked
too, so its error lands on its vars.  Async ops, deletes and debug runs
always take the booked path.  A trace records a quiet op exactly as a booked
one that was ready at push (push, ready, start, end).

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

from . import trace
from .base import (
    DONE,
    RUNNING,
    Engine,
    Opr,
    RunContextCache,
    Var,
    _Completion,
    _new_opr,
    _record_push,
    _running_stack,
)
from .trace import RAW_DONE, RAW_PUSH_START
from .trace import now as _now

_extend = trace.extend_raw

__all__ = ["NaiveEngine"]


class NaiveEngine(Engine):
    """Run every ready op at once in the thread that made it ready."""

    kind = "naive"

    def __init__(self) -> None:
        super().__init__()
        self._run_contexts = RunContextCache(None, "main")

    def _push_opr(
        self,
        fn: Any,
        is_async: bool,
        ctx: Any,
        const: tuple[Var, ...],
        mutate: tuple[Var, ...],
        priority: int,
        name: str,
        copy: bool,
        delete: tuple[Var, ...] | None = None,
    ) -> int:
        """Run a sync op pushed while nothing is pending at once, unbooked; else book it."""
        opr = None
        if not (is_async or delete is not None):
            rctx = self._run_contexts._entries.get(id(ctx))  # RunContextCache.get, inlined
            if rctx is None or rctx.ctx is not ctx:
                rctx = self._run_contexts.get(ctx)
            lock = self._lock
            if not lock.acquire(False):
                self._acquire_contended()
            try:
                quiet = not (
                    self._num_pending
                    or self._failures
                    or self._shut
                    or self._handover is not None
                    or self.slow_wait_threshold is not None
                )
                if quiet:
                    for var in const:
                        if var.deleted:  # the booked path raises the error
                            quiet = False
                    for var in mutate:
                        if var.deleted:
                            quiet = False
                if quiet:
                    opr = _new_opr(fn, False, ctx, const, mutate, priority, name, copy, None)
                    opr.wait_count = 0
                    opr.state = RUNNING
                    self._num_pending = 1
                    self._inline = opr
                    for var in mutate:
                        var.writes_pushed += 1
                    if trace.enabled:
                        _record_push(opr, rctx.worker, RAW_PUSH_START)
            finally:
                lock.release()
        if opr is None:
            return super()._push_opr(fn, is_async, ctx, const, mutate, priority, name, copy, delete)
        stack = _running_stack()
        stack.append(opr)
        try:
            fn(rctx)
        except BaseException as exc:  # noqa: BLE001 - booked, so the error lands on its vars
            stack.pop()
            self._finish_inline(opr, exc)
            return opr.id
        stack.pop()
        self._finish_inline(opr, None)
        return opr.id

    def _finish_inline(self, opr: Opr, exc: BaseException | None) -> None:
        """Complete an op run by the quiet path: cheaply if still unbooked, else as booked."""
        lock = self._lock
        if not lock.acquire(False):
            self._acquire_contended()
        try:
            booked = self._inline is not opr
            if not booked:
                if exc is None:
                    self._inline = None
                    self._num_pending -= 1
                    for var in opr.mutate_vars:
                        var.writes_done += 1
                    opr.state = DONE
                    if self._num_waiters:
                        self._cond.notify_all()
                    if trace.enabled:
                        _extend((RAW_DONE, _now(), opr.id, ()))
                else:
                    self._book_inline()
                    booked = True
        finally:
            lock.release()
        if not booked:
            opr.fn = None  # drops the user's closure outside the lock
            return
        ready = self._complete(opr, exc)
        if exc is not None and not isinstance(exc, Exception):
            for successor in ready:  # Ctrl-C in an op: book it, then let it fly
                self._dispatch(successor)
            raise exc
        for successor in ready:
            self._dispatch(successor)

    def _dispatch(self, opr: Opr) -> None:
        # Successors made ready by a completion run here too, in push order,
        # iteratively (a long chain must not grow the Python stack).
        # (Ops pushed while nothing is pending never come here: see _push_opr.)
        todo = deque((opr,))
        while todo:
            successor = todo.popleft()
            more = self._run(successor, self._run_contexts.get(successor.ctx))
            if more:
                todo.extend(more)

    def _prepare_async(self, completion: _Completion) -> None:
        completion.event = threading.Event()

    def _async_done(self, completion: _Completion, ready: list[Opr]) -> None:
        with self._lock:
            event = completion.event
            if event is not None:  # the pushing thread waits and runs ``ready``
                completion.ready = ready
                event.set()
        if event is None:  # the pushing thread was interrupted: run them here
            for opr in ready:
                self._dispatch(opr)

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
