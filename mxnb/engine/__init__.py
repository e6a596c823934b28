"""The dependency engine: push functions with the vars they read and write.

Idea (MXNet's architecture notes, "Dependency Engine"): every function is
pushed together with the vars it reads (``const_vars``) and writes
(``mutate_vars``); the engine runs it as soon as no earlier op it conflicts
with is still pending, on a worker of its context.  The rest of mxnb (storage,
resources, NDArray, executor) pushes its work here.

Rule: the execution of any two functions where one of them modifies at least
one common var is serialized in their push order; readers between two
writes may run in any order, in parallel.

Engines (``set_engine(name)`` or env ``MXNB_ENGINE_TYPE``):
    naive                 runs each op at push, in the pushing thread (reference, debugging)
    threaded              one shared worker pool
    threaded_per_device   default: a CPU pool, a pool per GPU context, copy workers
    step                  ready ops wait for ``step()`` / ``run()`` (teaching, replay)

State kept:
    _engine         the process-wide engine, created lazily by :func:`get`
    _debug          debug mode flag (:func:`set_debug`), and its slow-wait threshold

Example::

    >>> import mxnb as mx
    >>> eng = mx.engine.get()
    >>> a, b = eng.new_var(name='a'), eng.new_var(name='b')
    >>> out = []
    >>> _ = eng.push_sync(lambda rctx: out.append('write a'), mx.cpu(), mutate_vars=[a])
    >>> _ = eng.push_sync(lambda rctx: out.append('a -> b'), mx.cpu(), [a], [b])
    >>> eng.wait_for_var(b); out
    ['write a', 'a -> b']
"""

from __future__ import annotations

import atexit
import contextlib
import os
import threading
from collections.abc import Iterator

from ..base import EngineError
from . import interrupts
from .base import (
    DONE,
    PENDING,
    READY,
    RUNNING,
    Engine,
    OperatorHandle,
    Opr,
    SlowWait,
    Var,
    inside_op,
)
from .lint import Finding, lint
from .naive import NaiveEngine
from .tracing import Trace

__all__ = [
    "DONE",
    "ENGINE_TYPES",
    "MXNET_ENGINE_NAMES",
    "PENDING",
    "READY",
    "RUNNING",
    "Engine",
    "Finding",
    "NaiveEngine",
    "OperatorHandle",
    "Opr",
    "SlowWait",
    "Trace",
    "Var",
    "bulk",
    "bulk_size",
    "create",
    "debug",
    "engine_type",
    "get",
    "inside_op",
    "is_debug",
    "lint",
    "set_bulk_size",
    "set_debug",
    "set_engine",
    "slow_waits",
    "trace",
]

ENGINE_TYPES = ("naive", "threaded", "threaded_per_device", "step")
#: MXNet's names for the same engines (``MXNET_ENGINE_TYPE=NaiveEngine``), accepted as aliases.
MXNET_ENGINE_NAMES = {
    "NaiveEngine": "naive",
    "ThreadedEngine": "threaded",
    "ThreadedEnginePerDevice": "threaded_per_device",
}
DEFAULT_ENGINE = "threaded_per_device"
DEFAULT_SLOW_WAIT = 1.0
_SHUTDOWN_TIMEOUT = 10.0  # seconds the exit hook waits for pending ops  # seconds between push and start that count as slow in debug mode

_engine: Engine | None = None
_engine_lock = threading.RLock()
_debug = False
_slow_wait: float = DEFAULT_SLOW_WAIT


def create(name: str | None = None) -> Engine:
    """Return a new, private engine of the given kind (not the process-wide one).

    ``name`` is one of :data:`ENGINE_TYPES` or MXNet's name for one
    (:data:`MXNET_ENGINE_NAMES`); ``None`` reads ``MXNB_ENGINE_TYPE``, else MXNet's
    ``MXNET_ENGINE_TYPE`` (default ``'threaded_per_device'``).  Shut it down with
    ``eng.shutdown()``.
    """
    if name is None:
        name = (
            os.environ.get("MXNB_ENGINE_TYPE", "").strip()
            or os.environ.get("MXNET_ENGINE_TYPE", "").strip()
            or DEFAULT_ENGINE
        )
    name = MXNET_ENGINE_NAMES.get(name, name)
    if name == "naive":
        engine: Engine = NaiveEngine()
    elif name in ("threaded", "threaded_per_device"):
        from .threaded import ThreadedEngine, ThreadedEnginePerDevice

        engine = ThreadedEngine() if name == "threaded" else ThreadedEnginePerDevice()
    elif name == "step":
        from .stepper import StepEngine

        engine = StepEngine()
    else:
        raise EngineError(
            f"unknown engine type {name!r}; use one of {', '.join(ENGINE_TYPES)} or MXNet's "
            f"{', '.join(MXNET_ENGINE_NAMES)} (set_engine, MXNB_ENGINE_TYPE or MXNET_ENGINE_TYPE)"
        )
    if _debug:
        engine.slow_wait_threshold = _slow_wait
    return engine


def get() -> Engine:
    """Return the process-wide engine, creating it on first use (``MXNB_ENGINE_TYPE``)."""
    engine = _engine
    if engine is not None:
        return engine
    return _get_slow()


def _get_slow() -> Engine:
    global _engine
    # The lock is re-entrant and the new engine is built before it is
    # published: creating one allocates threads, which may run the garbage
    # collector, whose NDArray finalizers call get() again on this thread.
    with _engine_lock:
        if _engine is not None:
            return _engine
        engine = create(None)
        if _engine is None:
            _engine = engine
        elif engine is not _engine:  # a finalizer created one meanwhile: keep that
            engine.shutdown()
        return _engine


def set_engine(name: str) -> Engine:
    """Switch the process-wide engine to ``name``; the old one drains and shuts down first.

    Vars made under the old engine keep working under the new one.  Safe while
    other threads push: from the start of the switch their pushes wait until
    the old engine has drained, then run on the new one (nothing is lost, and
    the switch never waits for threads that keep pushing).  A thread that kept
    a reference to the old engine pushes through it to the new one.
    """
    global _engine
    if MXNET_ENGINE_NAMES.get(name, name) not in ENGINE_TYPES:
        raise EngineError(f"unknown engine type {name!r}; use one of {', '.join(ENGINE_TYPES)} "
                          f"or MXNet's {', '.join(MXNET_ENGINE_NAMES)}")  # fmt: skip
    with _engine_lock:
        old = _engine
        new = create(name)
        if old is not None:
            # Pushes from other threads now wait, then go to the new engine: the old one
            # drains without racing them (see Engine.hand_over).
            old.hand_over(new)
        _engine = new
    return new


def engine_type() -> str:
    """Return the kind of the process-wide engine (``'threaded_per_device'`` …)."""
    return get().kind


def trace() -> Trace:
    """A new recorder: ``with mx.engine.trace() as tr:`` records the block (:mod:`.tracing`)."""
    return Trace()


def set_debug(flag: bool, slow_wait: float | None = None) -> None:
    """Turn debug mode on or off.

    In debug mode the engine reports ops that waited longer than ``slow_wait``
    seconds between push and start (see :func:`slow_waits`), and the NDArray /
    executor layers hand ops read-only views of their const inputs.
    """
    global _debug, _slow_wait
    if slow_wait is not None and slow_wait < 0:  # checked first: a refused call changes nothing
        raise EngineError(f"set_debug: slow_wait must be >= 0 seconds, got {slow_wait}")
    _debug = bool(flag)
    if slow_wait is not None:
        _slow_wait = float(slow_wait)
    engine = _engine
    if engine is not None:
        engine.slow_wait_threshold = _slow_wait if _debug else None


def is_debug() -> bool:
    """Return True while debug mode is on."""
    return _debug


@contextlib.contextmanager
def debug(slow_wait: float = DEFAULT_SLOW_WAIT) -> Iterator[None]:
    """Debug mode for a block: ``with mx.engine.debug(slow_wait=0.5): ...``."""
    previous = (_debug, _slow_wait)
    set_debug(True, slow_wait)
    try:
        yield
    finally:
        set_debug(previous[0], previous[1])


def _default_bulk_size() -> int:
    """The bulk size at start: ``MXNB_EXEC_BULK_EXEC_MAX_NODE_TRAIN`` (15), 0 when
    ``MXNB_EXEC_BULK_EXEC_TRAIN=0`` (MXNet's ``MXNET_EXEC_BULK_EXEC_*`` defaults)."""
    if os.environ.get("MXNB_EXEC_BULK_EXEC_TRAIN", "1").strip() == "0":
        return 0
    value = os.environ.get("MXNB_EXEC_BULK_EXEC_MAX_NODE_TRAIN", "").strip() or "15"
    if not value.isdigit():
        raise EngineError(
            f"MXNB_EXEC_BULK_EXEC_MAX_NODE_TRAIN must be a count of ops >= 0, got {value!r}"
        )
    return int(value)


_bulk_size = _default_bulk_size()  # the most ops an executor pushes as one engine op


def set_bulk_size(size: int) -> int:
    """Set the bulk-execution size and return the previous one (MXNet: ``engine.set_bulk_size``).

    An executor groups up to ``size`` consecutive steps of one pass into one
    engine op, a *segment* (:mod:`mxnb.executor.bulk`); 0 or 1 pushes every
    step on its own, which is what to do while debugging (every op then shows
    in the DAG and timeline by itself).  The start value is 15, MXNet's
    ``MXNET_EXEC_BULK_EXEC_MAX_NODE_TRAIN``, or 0 with ``MXNB_EXEC_BULK_EXEC_TRAIN=0``.
    Imperative NDArray ops are pushed one by one whatever the size.
    """
    global _bulk_size
    if int(size) < 0:
        raise EngineError(f"set_bulk_size: size must be >= 0, got {size}")
    previous, _bulk_size = _bulk_size, int(size)
    return previous


def bulk_size() -> int:
    """Return the bulk-execution size (see :func:`set_bulk_size`)."""
    return _bulk_size


@contextlib.contextmanager
def bulk(size: int) -> Iterator[None]:
    """``with mx.engine.bulk(size):`` MXNet's bulk scope (the size is restored after).

    ``with mx.engine.bulk(0):`` pushes every executor step as its own engine op.
    """
    previous = set_bulk_size(size)
    try:
        yield
    finally:
        set_bulk_size(previous)


def slow_waits() -> list[SlowWait]:
    """Return the slow waits the process-wide engine recorded in debug mode."""
    return list(get().slow_waits)


def _shutdown_at_exit() -> None:
    engine = _engine
    if engine is None:
        return
    with contextlib.suppress(BaseException):
        engine.shutdown(timeout=_SHUTDOWN_TIMEOUT)  # a callback that never comes must not hang exit


atexit.register(_shutdown_at_exit)
from . import fork as _fork  # noqa: E402, F401 -- imported for its effect, last: a forked child gets a fresh engine

interrupts.install()  # Ctrl-C never lands inside the engine's bookkeeping
