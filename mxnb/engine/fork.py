"""After ``fork()``: the child gets a fresh engine (MXNet: ``Engine`` ``pthread_atfork`` handlers).

Idea: ``os.fork`` copies the process but only the forking thread.  The
child inherits the parent's engine object, whose worker threads do not exist
there: the first op pushed in the child would wait forever for a worker
(``multiprocessing.Process`` with the default ``fork`` start method does this).
MXNet stops its engine before a fork and starts a new one in the child; mxnb
does the child half: :func:`reset_in_child` swaps in a new engine of the same
kind and a new engine lock, and drops the parent's engine without shutting
it down (it has no threads to join in the child).

Rule: only the child is touched; the parent goes on with its engine as if no
fork happened.  Ops the parent had pushed but not finished are not run in the
child (as in MXNet); arrays whose values were final at the fork read fine.

State kept: none; the hook is registered once, when :mod:`mxnb.engine` is imported.

Example::

    >>> import multiprocessing, mxnb as mx
    >>> def child():
    ...     assert (mx.nd.ones(2) + 1).asnumpy().tolist() == [2.0, 2.0]
    >>> process = multiprocessing.get_context('fork').Process(target=child)
    >>> process.start(); process.join(30); process.exitcode
    0
"""

from __future__ import annotations

import os
import sys
import threading
from typing import Any

__all__ = ["reset_in_child"]


def reset_in_child() -> None:
    """In a forked child: a new engine lock, and a new engine of the parent's kind."""
    package: Any = sys.modules.get(__package__ or "mxnb.engine")
    if package is None:
        return
    package._engine_lock = threading.RLock()  # a parent thread may have held it at the fork
    old = package._engine
    if old is None:
        return
    package._engine = None  # the parent's engine: no threads here, never shut it down
    package._forked_from = old  # kept alive: finalizers of inherited arrays may still see it
    package._engine = package.create(old.kind)


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=reset_in_child)
