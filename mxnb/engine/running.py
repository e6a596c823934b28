"""Running an op: the thread that runs it, its RunContext, and async ops' completion callback.

Idea (MXNet: ``ThreadedEngine::ExecuteOprBlock``, ``RunContext``,
``CallbackOnComplete``): whoever dispatches a ready op — the pushing thread
on the naive engine, a pool worker on the threaded ones, a step on the step
engine — runs it here: skip it if an input failed, trace its start, call its
function with the worker's :class:`~mxnb.RunContext` (and, for an async op,
its ``on_complete``), then complete it.  The ops running on a thread are kept
on a stack, so nested waits and pushes know what is running.

Rule: a sync op is complete when its function returns or raises; an async op
when its ``on_complete`` is called, exactly once, from any thread (with an
exception to fail it).  An exception that is not an ``Exception`` (Ctrl-C) is
booked as the op's failure, then raised on.

State kept:
    _local.stack     per thread: the ops running on it, innermost last
    RunContextCache  per worker: one RunContext per context object

Example::

    >>> import mxnb as mx
    >>> eng = mx.engine.create('naive')
    >>> seen = []
    >>> _ = eng.push_sync(lambda rctx: seen.append(mx.engine.inside_op()), mx.cpu())
    >>> seen, mx.engine.inside_op()
    ([True], False)
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any

from ..base import EngineError
from ..context import Context, RunContext
from . import tracing
from .records import record_start
from .var import RUNNING, Opr
from .waiting import _local

if TYPE_CHECKING:
    from .base import Engine
    from .failures import ErrorRef

__all__ = ["RunContextCache", "Running", "inside_op"]


def inside_op() -> bool:
    """True when the calling thread is running an engine op (or waiting inside one).

    For layers above the engine that must not create a dependency back onto
    the op that is running them (an NDArray op invoked from a custom op's
    ``forward``).
    """
    return bool(_local.__dict__.get("stack"))


def _running_stack() -> list[Opr]:
    """The ops running on this thread, innermost last."""
    stack = getattr(_local, "stack", None)
    if stack is None:
        stack = _local.stack = []
    return stack


class _Completion:
    """The ``on_complete`` callback handed to an async op; call once, optionally with an error."""

    __slots__ = ("done", "engine", "event", "opr", "ready")

    def __init__(self, engine: Engine, opr: Opr) -> None:
        self.engine = engine
        self.opr = opr
        self.done = False
        self.ready: list[Opr] | None = None
        self.event: threading.Event | None = None

    def __call__(self, error: BaseException | None = None) -> None:
        if self.done:
            raise EngineError(
                f"on_complete of op '{self.opr.name}' (id {self.opr.id}) was called twice; "
                "call it exactly once when the async work is finished"
            )
        self.done = True
        if error is not None and not isinstance(error, BaseException):
            error = EngineError(
                f"on_complete of op '{self.opr.name}' got {error!r}; pass an exception or nothing"
            )
        ready = self.engine._complete(self.opr, error)
        self.engine._async_done(self, ready)


class RunContextCache:
    """The RunContext a worker hands its ops, one per context object.

    Keyed by ``id(ctx)``: the cached RunContext keeps its context alive, so an
    id cannot be reused while cached.  Hashing a Context costs more than an op.
    ``last`` is the RunContext handed out last: consecutive ops mostly share a
    context object, and ``cache.last.ctx is ctx`` is the cheapest test (a
    worker's chain and the idle fast path make it before calling :meth:`get`).
    """

    __slots__ = ("by_id", "last", "stream", "thread", "worker")

    def __init__(self, stream: Any, worker: str, thread: int | None = None) -> None:
        self.by_id: dict[int, RunContext] = {}  # id(ctx) -> its RunContext (check .ctx)
        self.stream = stream
        self.worker = worker
        self.thread = thread  # the worker's thread ident, when one thread uses the cache
        self.last: RunContext | None = None

    def get(self, ctx: Context) -> RunContext:
        """Return the RunContext for ``ctx`` on this worker."""
        rctx = self.by_id.get(id(ctx))
        if rctx is None or rctx.ctx is not ctx:
            if len(self.by_id) > 256:
                self.by_id.clear()
            rctx = self.by_id[id(ctx)] = RunContext(ctx, self.stream, self.worker, self.thread)
        self.last = rctx
        return rctx


class Running:
    """The running half of :class:`~mxnb.engine.base.Engine` (a mixin it inherits)."""

    _failures: int
    _lock: Any

    if TYPE_CHECKING:

        def _complete(
            self,
            opr: Opr,
            exc: BaseException | None,
            inherited: ErrorRef | None = None,
            chain: RunContext | None = None,
        ) -> list[Opr]: ...

        def _failed_input(self, opr: Opr) -> ErrorRef | None: ...

        def _note_slow_wait(self, opr: Opr) -> None: ...

    def _dispatch(self, opr: Opr) -> None:
        """Hand a ready op to whatever runs it (each engine's one difference)."""
        raise NotImplementedError

    def _help_once(self) -> bool:
        """Run one ready op in the waiting thread if this engine can; True if it did."""
        return False

    def _async_done(self, completion: _Completion, ready: list[Opr]) -> None:
        """An async op's callback finished its bookkeeping: dispatch what became ready."""
        for opr in ready:
            self._dispatch(opr)

    def _run(self, opr: Opr, rctx: RunContext, chain: RunContext | None = None) -> list[Opr] | None:
        """Run ``opr`` in this thread; return the ops its completion made ready.

        An op whose inputs failed is skipped (see :mod:`.failures`).  Async ops
        return ``None``: their callback completes them (and dispatches the
        successors through :meth:`_async_done`).  ``chain``: ``rctx``, when this
        thread goes on to run a successor in the op's own pool itself.
        """
        if opr.push_time:
            self._note_slow_wait(opr)
        if self._failures and opr.deletes is None:
            inherited = self._failed_input(opr)
            if inherited is not None:
                return self._complete(opr, None, inherited)
        if tracing.enabled and opr.state is not RUNNING:  # RUNNING: its predecessor's end said so
            record_start(opr, rctx.worker, rctx.thread)
        opr.state = RUNNING
        try:
            stack = _local.stack
        except AttributeError:
            stack = _local.stack = []
        stack.append(opr)
        if opr.is_async:
            return self._run_async(opr, rctx, stack)
        fn = opr.fn
        try:
            if fn is not None:  # None: a delete without a function
                fn(rctx)
        except BaseException as exc:  # stored on the op's vars, raised by a wait
            stack.pop()
            ready = self._complete(opr, exc)
            if not isinstance(exc, Exception):  # Ctrl-C in an op: book it, then let it fly
                for successor in ready:
                    self._dispatch(successor)
                raise
            return ready
        stack.pop()
        return self._complete(opr, None, None, chain)

    def _run_async(self, opr: Opr, rctx: RunContext, stack: list[Opr]) -> list[Opr] | None:
        """Call an async op's function with its ``on_complete`` (see :meth:`_run`)."""
        completion = _Completion(self, opr)  # type: ignore[arg-type]  # Running is mixed into Engine
        self._prepare_async(completion)
        try:
            opr.fn(rctx, completion)  # type: ignore[misc]
        except BaseException as exc:
            stack.pop()
            if not completion.done:
                completion(exc)
            if not isinstance(exc, Exception):
                raise
            return self._finish_async(completion)
        stack.pop()
        return self._finish_async(completion)

    def _prepare_async(self, completion: _Completion) -> None:
        """Hook: the naive engine waits for the callback; others need nothing."""

    def _finish_async(self, completion: _Completion) -> list[Opr] | None:
        """Hook after an async op's function returned (see :meth:`_run`)."""
        return None
