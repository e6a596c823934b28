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

Every push tries the idle fast path first (:mod:`mxnb.engine.idle`, the one
exception to "every push goes through the rule"): most ops here are pushed
when none of their vars has anything pending — every earlier op ran at its
own push — and such an op runs at once, booked as the rule would.  A
``push_sync`` on one var takes that path's fused form, checks included.

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

from .idle import IdleFastPath
from .running import RunContextCache, _Completion
from .var import Opr

__all__ = ["NaiveEngine"]


class NaiveEngine(IdleFastPath):
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
            more = self._run(opr, contexts.get(opr.ctx))
            if more:
                todo.extend(more)

    _push_opr = IdleFastPath._push_idle  # every push tries the idle fast path
    push_sync = IdleFastPath.push_sync_one_var  # ... the commonest fused with its checks
    _run_successors = _run_ready

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
