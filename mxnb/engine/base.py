"""Vars, ops and the bookkeeping every engine shares.

Idea (MXNet: ``ThreadedVar`` / ``OprBlock`` in src/engine/threaded_engine.h):
each piece of mutable state the engine protects is a :class:`Var`; each
pushed function is an :class:`Opr` naming the vars it reads (``const_vars``)
and writes (``mutate_vars``).  A var keeps a queue of the ops waiting for it;
an op keeps a wait count of the vars that have not granted it access yet, and
is *ready* when that count reaches zero.  The engines below differ only in
what they do with a ready op (:meth:`Engine._dispatch`): the naive engine
runs it at once, the threaded engines hand it to a worker pool, the step
engine keeps it until told to run it.

Rule: any two ops where at least one mutates a common var run in push order;
readers between two writes may run concurrently.

Errors (MXNet 1.6+): an exception in an op is stored, as one shared
reference, on the vars it writes; later ops touching such a var are skipped
and their outputs inherit the same reference.  ``wait_for_var`` raises it
as :class:`~mxnb.base.OpError` (original chained) every time, as long as the
var carries it: a failed array never reads as stale memory.  An op that only
writes such a var (does not read it) runs, and its success clears the
failure: the var was written again.  ``wait_for_all``
raises the first failure no wait has raised yet, then forgets the list (at
most ``MAX_UNRAISED_ERRORS`` are kept).  The engine stays usable.

Waiting inside an op: a wait called from a running op (a custom op calling
``asnumpy()``) lets the waiting thread run ready ops itself (``_help_once``)
and ``wait_for_all`` there ignores the ops on the calling stack, so nested
waits never deadlock a pool.  No user object is released while the lock is
held: finalizers (an NDArray's ``__del__``) may push.

State kept per var:
    pending_reads   granted reads not yet complete
    pending_write   oldest write not yet complete (granted once pending_reads is 0)
    queue           (op, is_write) pushed after ``pending_write``, in push order
    last_write      newest write not yet complete (for the trace's dependency edges)
    readers         reads pushed since ``last_write``, in debug mode only (the
                    write-after-read links of its slow-wait chains; kept in every
                    mode, they held finished ops until those aged into the cycle
                    collector's old generations)
    error           shared error reference when an op that writes it failed

Threads and the GIL: the pushing thread and the workers all take the one
bookkeeping lock.  A thread that finds it taken naps rather than queueing
on it (:meth:`Engine._acquire_contended`), and a waiting thread is woken only
by a completion that can satisfy its wait (``wake`` in :meth:`_wait_until`).
Either mistake makes threads trade the GIL once per op: a context switch per
op, four times the cost of the op's bookkeeping.

State kept per engine:
    _lock           one lock for all bookkeeping; never held while an op runs
                    (one lock beats a lock per var in Python: fewer acquires per op)
    _num_pending    ops pushed and not complete
    _errors         failures not yet raised by a wait
    _waiters_*      threads blocked in a wait, by what can satisfy them
    _inline         the naive engine's op running unbooked (see naive.py)

Example::

    >>> import mxnb as mx
    >>> eng = mx.engine.create('naive')
    >>> a = eng.new_var(name='a')
    >>> _ = eng.push_sync(lambda rctx: print('ran on', rctx.ctx), mx.cpu(), mutate_vars=[a])
    ran on cpu(0)
    >>> eng.wait_for_var(a)
"""

from __future__ import annotations

import itertools
import logging
import math
import numbers
import threading
import time
from _thread import get_ident
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from operator import attrgetter
from typing import Any

from ..base import EngineError, OpError, VarDeletedError, acquire_lock
from ..context import Context, RunContext
from . import trace
from .trace import (
    RAW_DONE,
    RAW_DONE_START,
    RAW_END,
    RAW_PUSH,
    RAW_START,
    RAW_VAR_NAME,
    RAW_VAR_NEW,
    DepKind,
    seen_vars,
)
from .trace import now as _now
from .waiting import Waiting, _local

# Bound once: the shared log never changes (trace empties the list in place).
_extend = trace.extend_raw
_var_id = attrgetter("id")  # a Var's id (an Opr's too)

__all__ = [
    "DONE",
    "PENDING",
    "READY",
    "RUNNING",
    "Engine",
    "OperatorHandle",
    "Opr",
    "RunContextCache",
    "SlowWait",
    "Var",
    "inside_op",
]

logger = logging.getLogger("mxnb.engine")

_var_ids = itertools.count(1)
_op_ids = itertools.count(1)

# op states
PENDING = 0  # waiting for vars
READY = 1  # all vars granted; handed to the dispatcher
RUNNING = 2  # its function is running (or an async op awaits its callback)
DONE = 3  # complete (succeeded, failed or skipped)

#: Failures kept for wait_for_all to raise; older ones are counted, not kept.
MAX_UNRAISED_ERRORS = 64
_READERS_PRUNE = 32  # drop finished readers from Var.readers beyond this many


def inside_op() -> bool:
    """True when the calling thread is running an engine op (or waiting inside one).

    For layers above the engine that must not create a dependency back onto
    the op that is running them (an NDArray op invoked from a custom op's
    ``forward``).
    """
    return bool(_local.__dict__.get("stack"))


def _running_stack() -> list[Opr]:
    stack = getattr(_local, "stack", None)
    if stack is None:
        stack = _local.stack = []
    return stack


class Var:
    """A piece of state the engine orders access to (MXNet: ``ThreadedVar``).

    Create with :meth:`Engine.new_var`.  ``id`` is unique in the process;
    ``name`` is shown in traces and errors.  A var carries no engine
    reference: once an engine has drained, its vars work with the next one.
    """

    __slots__ = (
        "__weakref__",
        "deleted",
        "error",
        "id",
        "last_write",
        "name",
        "pending_reads",
        "pending_write",
        "prune_at",
        "queue",
        "readers",
        "writes_done",
        "writes_pushed",
    )

    id: int
    name: str
    queue: deque[tuple[Opr, bool]] | None
    pending_reads: int
    pending_write: Opr | None
    last_write: Opr | None
    readers: list[Opr] | tuple[()]
    prune_at: int
    error: _ErrorRef | None
    deleted: bool
    writes_pushed: int
    writes_done: int

    def __new__(cls, name: str = "") -> Var:  # noqa: PYI034 - only ever a Var
        return _new_var(name)

    def __repr__(self) -> str:
        return f"Var({self.id}, {self.name!r}{', deleted' if self.deleted else ''})"

    @property
    def version(self) -> int:
        """How many writes have been pushed to this var (MXNet: ``ThreadedVar::version()``).

        A caller that remembers it can tell later whether anything wrote the var since.
        """
        return self.writes_pushed


def _new_var(name: str = "") -> Var:
    """Return a new :class:`Var` (every NDArray makes one).

    The slots are filled here, as :func:`_new_opr` does for ops, without a
    class call; the wait queue and the readers list are made when first
    needed (most vars never queue an op).
    """
    var = _new_object(Var)
    var.id = var_id = _next_var_id()
    var.name = name or f"var{var_id}"
    var.queue = None  # deque of (op, is_write) waiting behind pending_write, made on demand
    var.pending_reads = 0  # granted reads not yet complete
    var.pending_write = None  # oldest incomplete write
    var.last_write = None  # newest incomplete write
    var.readers = ()  # debug mode: reads pushed since last_write (a list once there are any)
    var.prune_at = _READERS_PRUNE  # drop finished readers when the list grows past this
    var.error = None  # an _ErrorRef, set when an op writing this var failed
    var.deleted = False  # push_delete was pushed
    var.writes_pushed = 0  # writes pushed so far
    var.writes_done = 0  # writes complete so far (complete in push order)
    return var


class Opr:
    """One pushed function with its vars (MXNet: ``OprBlock`` + ``ThreadedOpr``).

    ``wait_count`` is the number of vars that have not granted access yet;
    the op is ready when it reaches zero.
    """

    __slots__ = (
        "__weakref__",
        "const_vars",
        "copy",
        "ctx",
        "deletes",
        "fn",
        "id",
        "is_async",
        "mutate_vars",
        "name",
        "priority",
        "push_time",
        "state",
        "wait_count",
        "waited_on",
    )

    # Made by _new_opr, which fills the slots (see there).  ``push_time``
    # and ``waited_on`` are set only on ops pushed in debug mode.

    def __repr__(self) -> str:
        return f"Opr({self.id}, {self.name!r})"


_new_object = object.__new__
_sleep = time.sleep
_next_op_id = _op_ids.__next__
_next_var_id = _var_ids.__next__


def _new_opr(
    fn: Callable[..., Any] | None,
    is_async: bool,
    ctx: Context,
    const: tuple[Var, ...],
    mutate: tuple[Var, ...],
    priority: int,
    name: str,
    copy: bool,
    delete: tuple[Var, ...] | None,
) -> Opr:
    """Return a new pending :class:`Opr` (every push makes one).

    The slots are filled here rather than by an ``Opr.__init__``: on CPython
    3.11 calling a class takes the slow generic call path, which cost a
    tenth of a push.  ``wait_count`` is set when the op is booked.
    """
    opr = _new_object(Opr)
    opr.id = _next_op_id()
    opr.fn = fn  # cleared when the op completes (drops user references)
    opr.is_async = is_async
    opr.ctx = ctx
    opr.const_vars = const
    opr.mutate_vars = mutate
    opr.priority = priority
    opr.name = name
    opr.copy = copy  # cross-device copy: runs on the copy workers
    opr.state = PENDING
    opr.deletes = delete  # push_delete: the vars this op deletes
    return opr


@dataclass(eq=False)
class OperatorHandle:
    """A reusable op from :meth:`Engine.new_operator` (MXNet: ``NewOperator``)."""

    fn: Callable[..., Any]
    const_vars: tuple[Var, ...]
    mutate_vars: tuple[Var, ...]
    name: str
    copy: bool = False
    deleted: bool = False  # delete_operator was called


@dataclass(frozen=True)
class SlowWait:
    """Debug-mode record: an op waited ``waited`` seconds between push and start."""

    op_id: int
    name: str
    waited: float
    chain: tuple[str, ...]  # the ops it waited on, nearest first ('name#id via var')


class _ErrorRef:
    """A failure shared by every var it reached (MXNet: ``shared_ptr<exception_ptr>``).

    Clearing it (``exc = None``) clears it on all those vars at once.
    """

    __slots__ = ("exc", "op_id", "op_name")

    def __init__(self, exc: BaseException, op_name: str, op_id: int) -> None:
        self.exc: BaseException | None = exc
        self.op_name = op_name
        self.op_id = op_id

    def to_error(self, exc: BaseException) -> OpError:
        """Return the :class:`OpError` a wait raises for ``exc`` (chain it with ``from``)."""
        message = f"op '{self.op_name}' (id {self.op_id}) failed: {type(exc).__name__}: {exc}"
        return OpError(message, op_name=self.op_name, op_id=self.op_id)


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


_SEQUENCES = (list, tuple)


class RunContextCache:
    """The RunContext a worker hands its ops, one per context object.

    Keyed by ``id(ctx)``: the cached RunContext keeps its context alive, so an
    id cannot be reused while cached.  Hashing a Context costs more than an op.
    """

    __slots__ = ("_entries", "stream", "thread", "worker")

    def __init__(self, stream: Any, worker: str, thread: int | None = None) -> None:
        self._entries: dict[int, RunContext] = {}
        self.stream = stream
        self.worker = worker
        self.thread = thread  # the worker's thread ident, when one thread uses the cache

    def get(self, ctx: Context) -> RunContext:
        """Return the RunContext for ``ctx`` on this worker."""
        rctx = self._entries.get(id(ctx))
        if rctx is None or rctx.ctx is not ctx:
            if len(self._entries) > 256:
                self._entries.clear()
            rctx = self._entries[id(ctx)] = RunContext(ctx, self.stream, self.worker, self.thread)
        return rctx


def _check_vars(vars_: Iterable[Var] | None, what: str, op_name: str) -> tuple[Var, ...]:
    if vars_ is None:
        return ()
    if type(vars_) is Var:
        raise EngineError(
            f"push of op '{op_name}': {what} must be a list of vars, got the single var "
            f"{vars_!r}; write [{vars_.name}] instead"
        )
    try:
        result = tuple(vars_)
    except TypeError:
        raise EngineError(
            f"push of op '{op_name}': {what} must be a list of vars, got {vars_!r}"
        ) from None
    for var in result:
        if type(var) is not Var:
            raise EngineError(
                f"push of op '{op_name}': {what} must hold engine vars (from new_var), "
                f"got {type(var).__name__} {var!r}"
            )
    return result


def _check_options(priority: Any, name: Any, copy: Any) -> int:
    """Check a push's priority, name and copy flag before anything is booked; return the priority.

    A wrongly typed option must fail here, in the caller's thread: found later,
    inside the engine, it would leave a booked op that never runs.
    """
    label = name if isinstance(name, str) and name else "op"
    if not isinstance(name, str):
        raise EngineError(f"push of op {name!r}: name must be a str, got {type(name).__name__}")
    if isinstance(priority, bool) or not isinstance(priority, numbers.Integral):
        raise EngineError(
            f"push of op '{label}': priority must be an int (larger runs first), got {priority!r}"
        )
    if not isinstance(copy, bool):
        raise EngineError(f"push of op '{label}': copy must be True or False, got {copy!r}")
    return int(priority)


def _vars_of(vars_: Any, what: str, op_name: str) -> tuple[Var, ...]:
    """``vars_`` as a tuple of distinct vars; one or two vars in a list or tuple take no loop."""
    kind = type(vars_)
    if kind is tuple or kind is list:
        count = len(vars_)
        if count == 1:
            var = vars_[0]
            if type(var) is Var:
                return vars_ if kind is tuple else (var,)
        elif count == 2:
            first, second = vars_
            if type(first) is Var and type(second) is Var:
                return (first, second) if first is not second else (first,)
        elif not count:
            return ()
    result = _check_vars(vars_, what, op_name)
    return tuple(dict.fromkeys(result)) if len(result) > 1 else result


def _normalise(
    const_vars: Iterable[Var] | None, mutate_vars: Iterable[Var] | None, name: str
) -> tuple[tuple[Var, ...], tuple[Var, ...]]:
    """Drop duplicates; a var both read and written counts as a write."""
    const = _vars_of(const_vars, "const_vars", name) if const_vars else ()
    mutate = _vars_of(mutate_vars, "mutate_vars", name) if mutate_vars else ()
    if const and mutate:
        for var in const:
            if var in mutate:
                return tuple([v for v in const if v not in mutate]), mutate
    return const, mutate


def _record_push(opr: Opr, last: Any, code: int) -> None:
    """Tracing: log ``opr``'s push (call under the engine lock: the log is in push order).

    ``code`` is ``RAW_PUSH`` (``last``: how many vars the op waits for, 0 if
    ready) or ``RAW_PUSH_START`` (``last``: the worker that runs it at once in
    this thread).  A var the log has not named since a recorder attached is
    named first (``RAW_VAR_NAME``).
    """
    const = opr.const_vars
    touched = const + opr.mutate_vars if const else opr.mutate_vars
    count = len(touched)
    if count == 1:  # one var: its id stands alone
        ids: Any = touched[0].id
        if ids not in seen_vars:
            _name_vars(touched)
    else:  # small counts written out: map() and tuple() cost more than the rest of the record
        if count == 2:
            first, second = touched
            ids = (first.id, second.id)
        elif count == 3:
            first, second, third = touched
            ids = (first.id, second.id, third.id)
        else:
            ids = tuple(map(_var_id, touched))
        if not seen_vars.issuperset(ids):
            _name_vars(touched)
    _extend(
        (code, _now(), opr.id, opr.name, opr.ctx, len(const), ids, opr.priority, get_ident(), last)
    )


def _record_end(
    opr: Opr, exc: BaseException | None, inherited: _ErrorRef | None, ready: list[Opr]
) -> None:
    """Tracing: log ``opr``'s end (under the engine lock), with the ops it made ready.

    The general case; the engine writes out a success that deletes nothing.
    """
    if exc is not None:
        error: str | None = repr(exc)
    elif inherited is not None:
        error = f"skipped: input failed in op '{inherited.op_name}'"
    else:
        error = None
    _extend(
        (
            RAW_END,
            _now(),
            opr.id,
            error,
            exc is None and inherited is not None,
            None if opr.deletes is None else tuple(map(_var_id, opr.deletes)),
            () if not ready else ready[0].id if len(ready) == 1 else tuple(map(_var_id, ready)),
        )
    )


def _name_vars(touched: tuple[Var, ...]) -> None:
    """Tracing: record the names of vars the log has not named since a recorder attached."""
    t = _now()
    for var in touched:
        if var.id not in seen_vars:
            seen_vars.add(var.id)
            _extend((RAW_VAR_NAME, t, var.id, var.name))


class Engine(Waiting):
    """The engine interface and the shared bookkeeping (MXNet: ``Engine`` / ``ThreadedEngine``).

    Subclasses implement :meth:`_dispatch` (what to do with a ready op) and
    may implement :meth:`_help_once` (run one ready op while a wait is unmet).
    """

    kind = "base"
    _var_type = Var
    #: Ops pushed and not complete, by id, on engines that list them (the step engine).
    _live: dict[int, Opr] | None = None
    #: The naive engine's op running unbooked (see :meth:`_book_inline`).
    _inline: Opr | None = None
    _wait_poll = 0.1  # seconds between checks while waiting (keeps Ctrl-C responsive)
    #: Pending ops beyond which a push hands the GIL to the workers once (threaded engines).
    #: A pushing thread holds the GIL for a whole switch interval (5 ms): it runs
    #: hundreds of small ops ahead of the workers, and their objects live long
    #: enough to go through the cycle collector's young generations (a quarter of
    #: the cost of a small NDArray op).  Never on engines without workers.
    run_ahead: int | float = math.inf

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._cond = threading.Condition(self._lock)
        self._num_pending = 0  # pushed, not complete
        self._num_waiters = 0  # threads blocked on _cond, of which:
        self._waiters_any = 0  # ... woken by every completion (helping workers, step waits)
        self._waiters_all = 0  # ... waiting for everything (woken when nothing is left)
        self._waiters_var: dict[Var, list[int]] = {}  # ... waiting for writes on a var: targets
        self._suspended = 0  # ops on the stacks of threads inside a nested wait_for_all
        self._blocked_waits: dict[int, tuple] = {}  # thread -> (its ops, var, target): see waiting
        self._errors: list[_ErrorRef] = []  # failures not yet raised by a wait (bounded)
        self._errors_dropped = 0  # failures dropped from _errors to keep it bounded
        self._failures = 0  # vars ever marked failed: 0 means no op can be skipped
        self._shut = False
        # set_engine's hand-over (see hand_over): while it runs, pushes from outside this
        # engine's ops wait on _handover, then go to _successor, as do pushes after it.
        self._handover: threading.Event | None = None
        self._successor: Engine | None = None
        self.slow_wait_threshold: float | None = None  # debug mode (set by engine.debug)
        self.slow_waits: list[SlowWait] = []

    # -- vars --------------------------------------------------------------
    def new_var(self, name: str = "") -> Var:
        """Return a new var (MXNet: ``NewVariable``); ``name`` shows in traces and errors."""
        var = _new_var(name)
        if trace.enabled:
            seen_vars.add(var.id)
            _extend((RAW_VAR_NEW, _now(), var.id, var.name))
        return var

    # -- pushing -------------------------------------------------------------
    def push_sync(
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
        """Push ``fn(run_ctx)``, run once its vars allow; return the op id.

        Parameters
        ----------
        fn : callable
            Called as ``fn(run_ctx)`` with a :class:`~mxnb.RunContext`.
        ctx : Context
            Where the op runs; chooses the worker pool.
        const_vars, mutate_vars : sequence of Var
            Vars the op reads / writes.  Duplicates are dropped; a var in both counts as a write.
        priority : int
            Larger runs first among ready ops of the same pool.
        name : str
            Shown in traces and errors.
        copy : bool
            A cross-device copy: runs on the copy workers of ``threaded_per_device``.
        """
        # The hot path, written out: validate, normalise, build the op, book it.
        if type(ctx) is not Context or not callable(fn):
            self._check_fn_ctx(fn, ctx, name)
        if type(priority) is not int or type(name) is not str or type(copy) is not bool:
            priority = _check_options(priority, name, copy)
        if not name:
            name = getattr(fn, "__name__", "op")
        if const_vars:
            const, mutate = _normalise(const_vars, mutate_vars, name)
        elif mutate_vars:
            const, mutate = (), _vars_of(mutate_vars, "mutate_vars", name)
        else:
            const = mutate = ()
        return self._push_opr(fn, False, ctx, const, mutate, priority, name, copy)

    def push_prepared(
        self,
        fn: Callable[[RunContext], Any],
        ctx: Context,
        const_vars: tuple[Var, ...],
        mutate_vars: tuple[Var, ...],
        name: str,
    ) -> int:
        """:meth:`push_sync` for a layer that owns its vars: nothing is checked or normalised.

        The NDArray layer's hot path (a small op costs a few microseconds, and
        checking what it already knows was a tenth of that).  The caller
        guarantees what :meth:`push_sync` would otherwise establish: ``fn`` is
        callable, ``ctx`` is a :class:`~mxnb.Context`, ``const_vars`` and
        ``mutate_vars`` are tuples of :class:`Var` with no var twice and none
        in both (a var read and written belongs in ``mutate_vars`` alone).
        Deleted vars are still refused.  Priority 0, not a copy.
        """
        return self._push_opr(fn, False, ctx, const_vars, mutate_vars, 0, name, False)

    def push_async(
        self,
        fn: Callable[[RunContext, Callable[..., None]], Any],
        ctx: Context,
        const_vars: Sequence[Var] = (),
        mutate_vars: Sequence[Var] = (),
        priority: int = 0,
        name: str = "",
        *,
        copy: bool = False,
    ) -> int:
        """Push ``fn(run_ctx, on_complete)``; the op is done when ``on_complete()`` is called.

        ``on_complete(exc)`` reports a failure.  Other arguments as :meth:`push_sync`.
        """
        if type(ctx) is not Context or not callable(fn):
            self._check_fn_ctx(fn, ctx, name)
        if type(priority) is not int or type(name) is not str or type(copy) is not bool:
            priority = _check_options(priority, name, copy)
        if not name:
            name = getattr(fn, "__name__", "op")
        const, mutate = _normalise(const_vars, mutate_vars, name)
        return self._push_opr(fn, True, ctx, const, mutate, priority, name, copy)

    def new_operator(
        self,
        fn: Callable[[RunContext, Callable[..., None]], Any],
        const_vars: Sequence[Var] = (),
        mutate_vars: Sequence[Var] = (),
        name: str = "",
        *,
        copy: bool = False,
    ) -> OperatorHandle:
        """Return a reusable async op (MXNet: ``NewOperator``); push it with :meth:`push`."""
        name = name or getattr(fn, "__name__", "op")
        if not callable(fn):
            raise EngineError(f"new_operator '{name}': fn must be callable, got {fn!r}")
        const, mutate = _normalise(const_vars, mutate_vars, name)
        return OperatorHandle(fn, const, mutate, name, copy)

    def push(self, handle: OperatorHandle, ctx: Context, priority: int = 0) -> int:
        """Push an op made by :meth:`new_operator`; return the op id."""
        if type(handle) is not OperatorHandle:
            raise EngineError(f"push: expected a handle from new_operator, got {handle!r}")
        if handle.deleted:
            raise EngineError(
                f"push: operator '{handle.name}' was deleted with delete_operator; "
                "make a new one with new_operator"
            )
        self._check_ctx(ctx, handle.name)
        if type(priority) is not int:
            priority = _check_options(priority, handle.name, False)
        return self._push_opr(
            handle.fn,
            True,
            ctx,
            handle.const_vars,
            handle.mutate_vars,
            priority,
            handle.name,
            handle.copy,
        )

    def delete_operator(self, handle: OperatorHandle) -> None:
        """Forget a handle from :meth:`new_operator`; pushes already made still run."""
        if type(handle) is not OperatorHandle:
            raise EngineError(
                f"delete_operator: expected a handle from new_operator, got {handle!r}"
            )
        if handle.deleted:
            raise EngineError(f"delete_operator: operator '{handle.name}' was already deleted")
        handle.deleted = True

    def push_delete(
        self,
        var: Var | Sequence[Var],
        ctx: Context | None = None,
        fn: Callable[[RunContext], Any] | None = None,
    ) -> int:
        """Delete ``var`` after every op pushed on it so far (MXNet: ``DeleteVariable``).

        ``var`` may be a list of vars: one op deletes them all (the NDArray
        layer frees small chunks in batches this way).  ``fn(run_ctx)``, if
        given, runs as a write on the vars first (storage frees memory there).
        Using a deleted var afterwards raises :class:`VarDeletedError`.
        """
        if type(var) is Var:
            deleted: tuple[Var, ...] = (var,)
            name = f"delete:{var.name}"
        elif type(var) in _SEQUENCES and var and all(type(item) is Var for item in var):
            deleted = tuple(dict.fromkeys(var))
            name = (
                f"delete:{deleted[0].name}" if len(deleted) == 1 else f"delete:{len(deleted)} vars"
            )
        else:
            raise EngineError(
                f"push_delete: expected an engine var or a non-empty list of them, got {var!r}"
            )
        if ctx is None:
            ctx = Context("cpu", 0)
        if fn is not None and not callable(fn):
            raise EngineError(f"push_delete of {var!r}: fn must be callable, got {fn!r}")
        return self._push_opr(fn, False, ctx, (), deleted, 0, name, False, deleted)

    #: False on engines that must show every delete as an op (the step engine).
    idle_delete = True

    def try_delete_idle(self, var: Var) -> bool:
        """Delete ``var`` now if no op is pending on it; True if it did (no op is pushed).

        The light path of :meth:`push_delete` for a var nobody can push on any
        more (its owner is being collected): when it has no incomplete read or
        write, no error and is not deleted, it is marked deleted under the lock,
        so a later push on it raises :class:`VarDeletedError` just as after
        ``push_delete``.  The caller then frees what the var guarded.  Returns
        False, changing nothing, when the var is busy, the lock is held
        elsewhere (never blocks: it may run in a ``__del__``), a trace is
        recording (a trace shows every delete as an op) or the engine shows
        every delete (:attr:`idle_delete`).
        """
        if not self.idle_delete or trace.enabled or var.pending_write is not None:
            return False  # the unlocked read only ever picks the slower push_delete
        if not self._lock.acquire(False):
            return False
        try:
            if self._inline is not None:
                self._book_inline()
            if (
                self._shut
                or var.pending_write is not None
                or var.pending_reads
                or var.queue
                or var.error is not None
                or var.deleted
            ):
                return False
            var.deleted = True
            return True
        finally:
            self._lock.release()

    def _check_ctx(self, ctx: Any, name: str) -> None:
        if type(ctx) is not Context:
            raise EngineError(
                f"push of op '{name}': ctx must be a mxnb.Context such as mx.cpu(), got {ctx!r}"
            )

    def _check_fn_ctx(self, fn: Any, ctx: Any, name: str) -> None:
        if not callable(fn):
            raise EngineError(f"push of op '{name or fn!r}': fn must be callable, got {fn!r}")
        self._check_ctx(ctx, name or getattr(fn, "__name__", "op"))

    def _push_opr(
        self,
        fn: Callable[..., Any] | None,
        is_async: bool,
        ctx: Context,
        const: tuple[Var, ...],
        mutate: tuple[Var, ...],
        priority: int,
        name: str,
        copy: bool,
        delete: tuple[Var, ...] | None = None,
    ) -> int:
        """Make the op, append it to its vars' queues; dispatch it when nothing blocks it."""
        opr = _new_opr(fn, is_async, ctx, const, mutate, priority, name, copy, delete)
        op_id = opr.id
        tracing = trace.enabled
        lock = self._lock
        if not lock.acquire(False):
            self._acquire_contended()
        try:
            if self._inline is not None:
                self._book_inline()
            if self._handover is not None and not _running_stack():
                lock.release()
                try:
                    return self._forward(
                        fn, is_async, ctx, const, mutate, priority, name, copy, delete
                    )
                finally:
                    lock.acquire()
            if self._shut:
                raise EngineError(f"push of op '{name}': the {self.kind} engine is shut down")
            for var in const:
                if var.deleted:
                    raise VarDeletedError(
                        f"push of op '{name}': var {var.name!r} (id {var.id}) was deleted "
                        "with push_delete; it cannot be read any more"
                    )
            for var in mutate:
                if var.deleted:
                    raise VarDeletedError(
                        f"push of op '{name}': var {var.name!r} (id {var.id}) was deleted "
                        "with push_delete; it cannot be written or deleted again"
                    )
            debug = self.slow_wait_threshold is not None
            if debug:
                opr.waited_on = self._chain(opr)
            wait = 0
            for var in const:
                if var.pending_write is None:
                    var.pending_reads += 1
                else:
                    queue = var.queue
                    if queue is None:
                        queue = var.queue = deque()
                    queue.append((opr, False))
                    wait += 1
                if debug:  # only debug mode's chains read them (see the module notes)
                    self._note_reader(var, opr)
            for var in mutate:
                var.writes_pushed += 1
                var.last_write = opr
                if var.readers:
                    var.readers = ()
                if var.pending_write is None:
                    var.pending_write = opr
                    if var.pending_reads:
                        wait += 1
                else:
                    queue = var.queue
                    if queue is None:
                        queue = var.queue = deque()
                    queue.append((opr, True))
                    wait += 1
            if delete is not None:
                for var in delete:
                    var.deleted = True
            opr.wait_count = wait
            self._num_pending += 1
            if self._live is not None:
                self._live[op_id] = opr
            if tracing:  # under the lock: the log is in the engine's order
                n_const = len(const)
                if n_const + len(mutate) == 1:  # _record_push's commonest case, written
                    # out: the call was a tenth of tracing's cost per op on the threaded engines
                    var = const[0] if n_const else mutate[0]
                    if var.id not in seen_vars:
                        _name_vars((var,))
                    _extend(
                        (
                            RAW_PUSH,
                            _now(),
                            op_id,
                            name,
                            ctx,
                            n_const,
                            var.id,
                            priority,
                            get_ident(),
                            wait,
                        )
                    )
                else:
                    _record_push(opr, wait, RAW_PUSH)
            if debug:
                opr.push_time = trace.now()
            if wait == 0:
                opr.state = READY
        finally:
            lock.release()
        if wait == 0:
            self._dispatch(opr)
        if self._num_pending > self.run_ahead:
            _sleep(0)  # releases the GIL: the workers catch up (see run_ahead)
        return op_id

    def _book_inline(self) -> None:
        """Book the op the naive engine is running unbooked on its vars (call under the lock).

        The naive engine runs an op pushed while nothing else is pending
        without booking it on its vars (:meth:`NaiveEngine._push_opr`): no
        other op can need them.  The first push, wait or delete that comes
        while it runs (from inside it, or from another thread) books it
        here, as its push would have: every var granted at once.
        """
        opr = self._inline
        assert opr is not None
        self._inline = None
        debug = self.slow_wait_threshold is not None
        for var in opr.const_vars:
            var.pending_reads += 1
            if debug:
                self._note_reader(var, opr)
        for var in opr.mutate_vars:
            var.last_write = opr
            if var.readers:
                var.readers = ()
            var.pending_write = opr

    @staticmethod
    def _note_reader(var: Var, opr: Opr) -> None:
        """Debug mode: add ``opr`` to ``var``'s readers, dropping finished ones now and then."""
        readers = var.readers
        if not readers:
            var.readers = [opr]
            return
        readers.append(opr)  # type: ignore[union-attr]
        if len(readers) > var.prune_at:  # amortised O(1): the bound doubles
            readers = var.readers = [r for r in readers if r.state != DONE]
            var.prune_at = max(_READERS_PRUNE, 2 * len(readers))

    def _acquire_contended(self) -> None:
        """Take the bookkeeping lock that another thread holds, without a lock convoy.

        A blocking ``acquire`` would hand the lock to this thread while it
        waits for the GIL; the other thread then blocks on its next push or
        completion, and the two pass lock and GIL back and forth once per op
        (a context switch each time: 20 us per op instead of 3).  So this
        naps with the GIL released until the owner has released it
        (:func:`mxnb.base.acquire_lock`, shared with the storage managers).
        """
        acquire_lock(self._lock)

    def _chain(self, opr: Opr) -> tuple[str, ...]:
        """Debug mode: the ops ``opr`` waits on, each followed by what it waited on itself."""
        chain: list[str] = []
        links = [(var.last_write, var, DepKind.RAW) for var in opr.const_vars]
        for var in opr.mutate_vars:
            links.append((var.last_write, var, DepKind.WAW))
            links.extend(
                (reader, var, DepKind.WAR) for reader in var.readers if reader.state != DONE
            )
        for other, var, kind in links:
            if other is None:
                continue
            chain.append(f"'{other.name}' (id {other.id}) via var {var.name!r} ({kind.value})")
            chain.extend(f"  {link}" for link in getattr(other, "waited_on", ())[:8])
        return tuple(chain[:16])

    # -- running -------------------------------------------------------------
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

        Async ops return ``None``: their callback completes them (and dispatches
        the successors through :meth:`_async_done`).  ``chain``: ``rctx``, when
        this thread goes on to run a successor in the op's own pool itself
        (see :meth:`_complete`).
        """
        if self.slow_wait_threshold is not None:
            self._note_slow_wait(opr)
        if self._failures and opr.deletes is None:  # skip an op whose vars carry a failure
            inherited = self._failed_input(opr)
            if inherited is not None:
                return self._complete(opr, None, inherited=inherited)
        if trace.enabled and opr.state is not RUNNING:  # RUNNING: recorded by _complete
            _extend((RAW_START, _now(), opr.id, rctx.worker, rctx.thread or get_ident()))
        opr.state = RUNNING
        fn = opr.fn
        try:
            stack = _local.stack
        except AttributeError:
            stack = _local.stack = []
        stack.append(opr)
        if opr.is_async:
            completion = _Completion(self, opr)
            self._prepare_async(completion)
            try:
                fn(rctx, completion)  # type: ignore[misc]
            except BaseException as exc:
                stack.pop()
                if not completion.done:
                    completion(exc)
                if not isinstance(exc, Exception):
                    raise
                return self._finish_async(completion)
            stack.pop()
            return self._finish_async(completion)
        if fn is None:  # a delete without a function
            stack.pop()
            return self._complete(opr, None)
        try:
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

    @staticmethod
    def _failed_input(opr: Opr) -> _ErrorRef | None:
        """The failure carried by one of the vars ``opr`` reads, if any (the op is then skipped).

        A var it only writes does not count: writing it again is how a failed
        var recovers (see :meth:`_complete`).
        """
        for var in opr.const_vars:
            ref = var.error
            if ref is not None:
                return ref
        return None

    def _prepare_async(self, completion: _Completion) -> None:
        """Hook: the naive engine waits for the callback; others need nothing."""

    def _finish_async(self, completion: _Completion) -> list[Opr] | None:
        """Hook after an async op's function returned (see :meth:`_run`)."""
        return None

    def _complete(
        self,
        opr: Opr,
        exc: BaseException | None,
        inherited: _ErrorRef | None = None,
        chain: RunContext | None = None,
    ) -> list[Opr]:
        """Release ``opr``'s vars (MXNet: ``CompleteReadDependency`` / ``CompleteWriteDependency``).

        No user object may lose its last reference while the lock is held: its
        finalizer (an NDArray's ``__del__``) would push a delete and deadlock on
        the lock.  So the op's function and replaced errors are dropped after it.

        ``chain``: the RunContext the op ran with, when its thread goes on to
        run a successor in the op's own pool itself (a pool worker's chain,
        see ``ThreadedEngine._run_chain``).  While tracing, the end record of
        an op that makes exactly one successor ready, in its own context (so
        its own pool), also records that successor's start (``RAW_DONE_START``):
        one record and one clock read instead of two, on every link of a chain.
        """
        ready: list[Opr] = []
        replaced: list[_ErrorRef | None] | None = None
        tracing = trace.enabled
        lock = self._lock
        if not lock.acquire(False):
            self._acquire_contended()
        try:
            if exc is not None or inherited is not None:
                if exc is not None:
                    inherited = _ErrorRef(exc, opr.name, opr.id)
                    self._note_failure(inherited)
                replaced = [var.error for var in opr.mutate_vars]
                for var in opr.mutate_vars:
                    if var.error is None:
                        self._failures += 1
                    var.error = inherited
            elif self._failures:  # written again: a var lets go of an earlier failure
                replaced = [var.error for var in opr.mutate_vars]
                for var in opr.mutate_vars:
                    var.error = None
            for var in opr.const_vars:
                var.pending_reads -= 1
                if var.pending_reads == 0:
                    writer = var.pending_write
                    if writer is not None:
                        writer.wait_count -= 1
                        if writer.wait_count == 0:
                            ready.append(writer)
            for var in opr.mutate_vars:
                var.writes_done += 1
                if var.last_write is opr:
                    var.last_write = None
                var.pending_write = None
                queue = var.queue
                while queue:
                    waiting, is_write = queue.popleft()
                    if is_write:
                        var.pending_write = waiting
                        if var.pending_reads == 0:
                            waiting.wait_count -= 1
                            if waiting.wait_count == 0:
                                ready.append(waiting)
                        break
                    var.pending_reads += 1
                    waiting.wait_count -= 1
                    if waiting.wait_count == 0:
                        ready.append(waiting)
            opr.state = DONE
            self._num_pending -= 1
            if self._num_waiters and (
                self._waiters_any
                or (self._waiters_all and self._num_pending <= self._suspended)
                or (self._waiters_var and self._waits_on(opr.mutate_vars))
            ):
                self._cond.notify_all()  # only a waiter this completion may satisfy
            for successor in ready:
                successor.state = READY
            if tracing:
                if replaced is None and opr.deletes is None:  # succeeded, deleted nothing
                    if len(ready) == 1:
                        successor = ready[0]
                        if (
                            chain is not None
                            and successor.ctx is opr.ctx  # so the same pool runs it
                            and successor.copy is opr.copy
                            and not self._failures  # nothing can make _run skip it
                        ):
                            successor.state = RUNNING  # _run: its start is recorded
                            _extend((RAW_DONE_START, _now(), opr.id, successor.id, chain))
                        else:
                            _extend((RAW_DONE, _now(), opr.id, successor.id))
                    else:
                        _extend(
                            (RAW_DONE, _now(), opr.id, tuple(map(_var_id, ready)) if ready else ())
                        )
                else:
                    _record_end(opr, exc, inherited, ready)
        finally:
            lock.release()
        opr.fn = None  # drops the user's closure (and what it holds) outside the lock
        if replaced is not None:
            del replaced
        return ready

    def _note_failure(self, ref: _ErrorRef) -> None:
        """Remember a failure for ``wait_for_all`` (under the lock), keeping at most
        :data:`MAX_UNRAISED_ERRORS`: a loop of failing ops nobody waits for must not
        grow memory.  The vars keep their failure either way."""
        if len(self._errors) < MAX_UNRAISED_ERRORS:
            self._errors.append(ref)
        else:  # the first failures explain the rest: later ones are only counted
            self._errors_dropped += 1

    def _note_slow_wait(self, opr: Opr) -> None:
        threshold = self.slow_wait_threshold
        if threshold is None or not getattr(opr, "push_time", 0.0):
            return
        waited = trace.now() - opr.push_time
        if waited > threshold:
            record = SlowWait(opr.id, opr.name, waited, opr.waited_on)
            self.slow_waits.append(record)
            logger.warning(
                "op '%s' (id %d) waited %.3f s between push and start; it waited on: %s",
                opr.name,
                opr.id,
                waited,
                "; ".join(opr.waited_on) or "(no recorded dependency: workers were busy)",
            )

    # -- lifetime ------------------------------------------------------------
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

    def _forward(
        self,
        fn: Any,
        is_async: bool,
        ctx: Context,
        const: tuple[Var, ...],
        mutate: tuple[Var, ...],
        priority: int,
        name: str,
        copy: bool,
        delete: tuple[Var, ...] | None,
    ) -> int:
        """Push to the successor once the hand-over has drained this engine (see hand_over)."""
        if delete is not None and not self._handover.is_set():  # type: ignore[union-attr]
            raise EngineError(
                f"push of op '{name}': the {self.kind} engine is handing over to another "
                f"(set_engine); push the delete after the switch"
            )
        self._handover.wait()  # type: ignore[union-attr]
        successor = self._successor
        assert successor is not None
        return successor._push_opr(fn, is_async, ctx, const, mutate, priority, name, copy, delete)

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
