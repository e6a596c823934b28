"""Ctrl-C and the engine: an interrupt never lands in the middle of the engine's bookkeeping.

Idea: Python runs a signal handler in the main thread between any two
bytecodes, and the default SIGINT handler raises ``KeyboardInterrupt`` right
there.  Two places cannot take that:

* the engine's critical sections: an interrupt after a lock is taken and
  before the ``try`` that releases it leaves the lock held, and the next push
  or wait hangs; one between booking an op and dispatching it leaves an op
  pending forever;
* finalizers (``_Chunk.__del__`` pushes deletes when an NDArray dies): Python
  drops any exception leaving ``__del__`` ("Exception ignored in ..."), so
  the Ctrl-C is lost and a busy loop seems to ignore it.

Rule: mxnb's SIGINT handler looks at the Python frame it interrupted.  When
that frame belongs to the engine's bookkeeping (the engine modules other
than the waiting code, storage, the chunk finalizer, the lock helper), the
interrupt is *postponed*: it is raised at the next safe point, the next
NDArray allocation (:func:`take_pending`), or when a one-shot timer delivers
SIGINT again a few milliseconds later and finds the main thread out of the
critical code, whichever comes first.  Anywhere else, including a thread blocked in a wait and a user's
operator function, it raises ``KeyboardInterrupt`` as usual (an op that
raises fails like any failing op: its error reaches every waiter).

State kept: whether an interrupt is pending.  It is installed only when
SIGINT still has Python's default handler, from the main thread; a handler
someone else installed (a Jupyter kernel, a server) is left alone.

Example::

    >>> from mxnb.engine import interrupts
    >>> interrupts.RETRY_SECONDS   # a postponed Ctrl-C comes back this much later
    0.005
"""

from __future__ import annotations

import _thread
import contextlib
import os
import signal
import threading
from collections.abc import Callable
from types import FrameType

__all__ = ["RETRY_SECONDS", "install", "on_sigint", "postpone_hooks", "take_pending"]

#: How long a postponed Ctrl-C waits before it is delivered again.
RETRY_SECONDS = 0.005

_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_ENGINE = os.path.join(_PACKAGE, "engine")
#: Files whose code runs with engine or storage state half updated.
_CRITICAL_FILES = frozenset(
    os.path.join(_PACKAGE, *parts)
    for parts in [
        ("engine", "base.py"),
        ("engine", "naive.py"),
        ("engine", "threaded.py"),
        ("engine", "stepper.py"),
        ("engine", "tracing.py"),
        ("engine", "var.py"),
        ("engine", "failures.py"),
        ("engine", "debugging.py"),
        ("engine", "edges.py"),
        ("engine", "records.py"),
        ("engine", "running.py"),
        ("engine", "lifetime.py"),
        ("ndarray", "chunk.py"),
        ("storage.py",),
    ]
)
#: Functions elsewhere that hold a lock across a return.
_CRITICAL_FUNCTIONS = frozenset({(os.path.join(_PACKAGE, "base.py"), "acquire_lock")})


def _critical(frame: FrameType | None) -> bool:
    """Whether the interrupted frame is engine bookkeeping (see the module docstring)."""
    if frame is None:
        return False
    code = frame.f_code
    filename = code.co_filename
    return filename in _CRITICAL_FILES or (filename, code.co_name) in _CRITICAL_FUNCTIONS


#: Called (no arguments) when an interrupt is postponed; the NDArray layer adds one that makes
#: its next allocation call :func:`take_pending` (allocations already check a list).
postpone_hooks: list[Callable[[], None]] = []
_pending = False


def on_sigint(signum: int, frame: FrameType | None) -> None:
    """Raise KeyboardInterrupt, or postpone it while the engine's bookkeeping runs."""
    global _pending
    if not _critical(frame):
        _pending = False
        raise KeyboardInterrupt
    if not _pending:
        _pending = True
        for hook in postpone_hooks:
            hook()
    timer = threading.Timer(RETRY_SECONDS, _deliver_again)
    timer.daemon = True
    timer.start()


def _deliver_again() -> None:
    if _pending:
        _thread.interrupt_main()


def take_pending() -> bool:
    """At a safe point (main thread): True, once, if a postponed Ctrl-C is waiting to be raised."""
    global _pending
    if _pending and threading.current_thread() is threading.main_thread():
        _pending = False
        return True
    return False


def install() -> bool:
    """Install :func:`on_sigint` if SIGINT has Python's default handler; True if installed."""
    if threading.current_thread() is not threading.main_thread():
        return False
    with contextlib.suppress(ValueError, OSError):
        if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
            signal.signal(signal.SIGINT, on_sigint)
            return True
    return False
