"""An engine's lifetime: draining, shutting down, and handing over to the next engine.

Idea: an engine ends by draining (every pushed op completes), then refusing
pushes and stopping its workers.  ``set_engine`` switches engines while other
threads may still push: :meth:`Lifetime.hand_over` drains the old engine and
passes every later push to the new one, so nothing pushed is lost.

Rule: vars carry their dependency state, so a var may move to another engine
only once no op on it is pending here.  During a hand-over a push from a
thread that is not running one of this engine's ops waits for the drain and
then goes to the successor; nested pushes (from inside running ops) are still
taken here, because the drain waits for those ops; a delete (a finalizer,
which must never block) is refused.

State kept (on the engine, under its lock):
    _shut        pushes are refused
    _handover    set once the drain is over (None: no hand-over under way)
    _successor   the engine later pushes go to

Example::

    >>> import mxnb as mx
    >>> old, new = mx.engine.create('threaded'), mx.engine.create('naive')
    >>> v = old.new_var(name='v')
    >>> old.hand_over(new)
    >>> _ = old.push_sync(lambda rctx: None, mx.cpu(), mutate_vars=[v])  # runs on new
    >>> new.num_pending(), repr(old)
    (0, "<ThreadedEngine 'threaded': 0 pending>")
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any

from ..base import EngineError
from .var import Opr

if TYPE_CHECKING:
    from .base import Engine

__all__ = ["Lifetime"]


class Lifetime:
    """The lifetime half of :class:`~mxnb.engine.base.Engine` (a mixin it inherits)."""

    kind: str
    _lock: Any
    _num_pending: int
    _suspended: int
    _shut: bool
    _handover: threading.Event | None
    _successor: Engine | None

    if TYPE_CHECKING:

        def _wait_until(self, *args: Any, **kwargs: Any) -> bool: ...

    def hand_over(self, successor: Engine) -> None:
        """Drain, shut down and pass every later push to ``successor`` (``set_engine``'s switch).

        Rule: vars carry their dependency state, so a var may move to another
        engine only once no op on it is pending here.  From the moment this is
        called, a push from a thread that is not running one of this engine's
        ops waits until this engine has drained and then goes to
        ``successor``; pushes from inside running ops (nested pushes) are still
        taken here, because the drain waits for those ops.  A delete pushed
        meanwhile (a finalizer, which must never block) is refused with
        :class:`EngineError`; the NDArray layer defers it.  Nothing pushed is
        lost, and the switch never waits on threads that keep pushing.
        """
        with self._lock:
            if self._shut:
                self._successor = successor
                return
            self._successor = successor
            self._handover = threading.Event()
        try:
            self.drain()
        finally:
            with self._lock:
                self._shut = True
            self._handover.set()
            self._stop_workers()

    def _forward(self, opr: Opr) -> int:
        """Push to the successor once the hand-over has drained this engine (see hand_over)."""
        if opr.deletes is not None and not self._handover.is_set():  # type: ignore[union-attr]
            raise EngineError(
                f"push of op '{opr.name}': the {self.kind} engine is handing over to another "
                f"(set_engine); push the delete after the switch"
            )
        self._handover.wait()  # type: ignore[union-attr]
        successor = self._successor
        assert successor is not None
        return successor._push_opr(
            opr.fn,
            opr.is_async,
            opr.ctx,
            opr.const_vars,
            opr.mutate_vars,
            opr.priority,
            opr.name,
            opr.copy,
            opr.deletes,
        )

    def num_pending(self) -> int:
        """Return how many pushed ops are not complete yet."""
        return self._num_pending

    def drain(self, timeout: float | None = None) -> bool:
        """Wait for every pushed op without raising their errors; False if ``timeout`` passed."""
        return self._wait_until(
            lambda: self._num_pending <= self._suspended, None, timeout, wake="all"
        )

    def shutdown(self, timeout: float | None = None) -> None:
        """Drain (at most ``timeout`` s), then refuse pushes and stop the workers (idempotent)."""
        if self._shut:
            return
        try:
            self.drain(timeout)
        finally:
            with self._lock:
                self._shut = True
            self._stop_workers()

    def _stop_workers(self) -> None:
        """Hook: threaded engines stop their pools here."""

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.kind!r}: {self._num_pending} pending>"
