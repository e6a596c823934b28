"""How threads wait for the engine: wait_for_var, wait_for_all, and who gets woken.

Idea (MXNet: ``ThreadedEngine::WaitForVar`` / ``WaitForAll``): a waiting
thread blocks on the engine's condition (over the one bookkeeping lock) and
re-checks what it waits for whenever it is woken.  This module is the
waiting half of :class:`~mxnb.engine.base.Engine` (a mixin it inherits).

Rule: a waiting thread is woken only by a completion that can satisfy it
(``wake``): a wait for a var by the write that reaches its target, a wait
for everything by the completion that leaves nothing pending.  Waking it on
every completion makes it and the workers trade the GIL once per op.  A
worker waiting inside an op is woken by every completion and helps run
ready ops meanwhile (``_help_once``), so nested waits never starve a pool.
Waits sleep in short slices, so Ctrl-C interrupts them and leaves the
engine consistent.

State kept (on the engine, under its lock):
    _num_waiters    threads blocked on ``_cond``
    _waiters_any    ... woken by every completion (helping workers, step waits)
    _waiters_all    ... waiting for everything
    _waiters_var    var -> targets of the threads waiting for its writes

Example::

    >>> import mxnb as mx
    >>> eng = mx.engine.create('threaded')
    >>> v = eng.new_var(name='v')
    >>> _ = eng.push_sync(lambda rctx: None, mx.cpu(), mutate_vars=[v])
    >>> eng.wait_for_var(v); eng.wait_for_all(); eng.num_pending()
    0
    >>> eng.shutdown()
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..base import EngineError
from . import trace

if TYPE_CHECKING:
    from .base import Var, _ErrorRef

__all__ = ["Waiting"]

_wait_ids = itertools.count(1)
_local = threading.local()  # .stack: ops running on this thread (innermost last)


class Waiting:
    """The waits of an engine (mixed into :class:`~mxnb.engine.base.Engine`)."""

    # Set by Engine.__init__; declared here for readers and type checkers.
    _lock: Any
    _cond: threading.Condition
    _num_pending: int
    _num_waiters: int
    _suspended: int
    _waiters_any: int
    _waiters_all: int
    _waiters_var: dict[Var, list[int]]
    _wait_poll: float
    _var_type: type  # Var (set by Engine: this module cannot import it at load time)

    def _waits_on(self, mutate_vars: tuple[Var, ...]) -> bool:
        """True when a wait for writes on one of ``mutate_vars`` is now met (call under the lock)."""
        waiting = self._waiters_var
        for var in mutate_vars:
            targets = waiting.get(var)
            if targets and var.writes_done >= min(targets):
                return True
        return False

    def _wait_until(
        self,
        satisfied: Callable[[], bool],
        var: Var | None,
        timeout: float | None = None,
        wake: str = "any",
        target: int = 0,
    ) -> bool:
        """Block until ``satisfied()`` (checked under the lock); help run ops meanwhile.

        ``wake`` says which completions may satisfy the wait, so that only
        those wake this thread: ``'var'`` (``var`` has ``target`` writes done),
        ``'all'`` (nothing is left pending) or ``'any'`` (every completion).
        Waking a waiting thread on every completion would make it and the
        workers pass the GIL back and forth once per op.

        Returns False when ``timeout`` seconds passed first.  Waits in short
        slices, so Ctrl-C in the waiting thread interrupts it and leaves the
        engine consistent (nothing is booked while waiting).
        """
        deadline = None if timeout is None else trace.now() + timeout
        if getattr(_local, "engine", None) is self:
            wake = "any"  # a worker waiting inside an op also looks for ops to help with
        tracing = trace.enabled
        wait_id = next(_wait_ids)
        if tracing:
            trace.emit(
                trace.WaitBegin(
                    trace.now(),
                    wait_id,
                    None if var is None else var.id,
                    threading.current_thread().name,
                )
            )
        try:
            while True:
                with self._lock:
                    if satisfied():
                        return True
                if self._help_once():
                    continue
                with self._cond:
                    if satisfied():
                        return True
                    if deadline is not None and trace.now() >= deadline:
                        return False
                    self._add_waiter(wake, var, target, 1)
                    try:
                        self._cond.wait(self._poll_interval())
                    finally:
                        self._add_waiter(wake, var, target, -1)
                self._stuck_check()
        finally:
            if tracing:
                trace.emit(trace.WaitEnd(trace.now(), wait_id))

    def _add_waiter(self, wake: str, var: Var | None, target: int, step: int) -> None:
        """Count a thread in (``step`` 1) or out of (-1) the waiters (call under the lock)."""
        self._num_waiters += step
        if wake == "var" and var is not None:
            targets = self._waiters_var.setdefault(var, [])
            if step > 0:
                targets.append(target)
            else:
                targets.remove(target)
                if not targets:
                    del self._waiters_var[var]
        elif wake == "all":
            self._waiters_all += step
        else:
            self._waiters_any += step

    def _poll_interval(self) -> float:
        return self._wait_poll

    def _stuck_check(self) -> None:
        """Hook: raise when a wait can never be satisfied (the step engine knows)."""

    def wait_for_var(self, var: Var) -> None:
        """Block until every write pushed on ``var`` so far is done (MXNet: ``WaitForVar``).

        Raises :class:`~mxnb.base.OpError` (once) when an op writing ``var`` failed.
        """
        if type(var) is not self._var_type:
            raise EngineError(f"wait_for_var: expected an engine var, got {var!r}")
        stack = _local.__dict__.get("stack")
        with self._lock:
            if self._inline is not None:
                self._book_inline()
            target = var.writes_pushed
            if stack:
                writer = var.last_write
                if writer is not None and writer in stack:
                    raise EngineError(
                        f"wait_for_var({var.name!r}) inside op '{writer.name}', which writes "
                        f"{var.name!r} itself: this would wait forever; read the var before "
                        "pushing the op, or push a separate op"
                    )
        if var.writes_done < target:
            self._wait_until(lambda: var.writes_done >= target, var, wake="var", target=target)
        ref = var.error
        if ref is not None:
            with self._lock:
                exc = ref.exc
                ref.exc = None  # raised once: cleared on every var it reached
                var.error = None
            if exc is not None:
                raise ref.to_error(exc) from exc

    def wait_for_all(self) -> None:
        """Block until every pushed op is done (MXNet: ``WaitForAll``).

        Inside a running op, waits for everything except the ops on the calling
        stack.  Raises the first failure not yet raised (then forgets them all).
        """
        stack = _local.__dict__.get("stack")
        depth = len(stack) if stack else 0
        if depth:
            with self._lock:
                self._suspended += depth
        try:
            self._wait_until(lambda: self._num_pending <= self._suspended, None, wake="all")
        finally:
            if depth:
                with self._lock:
                    self._suspended -= depth
                    if self._num_waiters:
                        self._cond.notify_all()
        self._raise_errors()

    def _raise_errors(self) -> None:
        with self._lock:
            errors = self._errors
            self._errors = []
            first: _ErrorRef | None = None
            exc: BaseException | None = None
            dropped = [ref.exc for ref in errors]  # released after the lock (see _complete)
            for ref in errors:
                if ref.exc is not None and first is None:
                    first, exc = ref, ref.exc
                ref.exc = None
        del dropped
        if first is not None and exc is not None:
            raise first.to_error(exc) from exc
