"""The Engine: check a push, apply the dependency rule, trace, dispatch.

Idea (MXNet: ``Engine`` / ``ThreadedEngine`` in src/engine/): an engine
takes pushes of functions with the vars they read and write, and runs each
once the rule of :mod:`mxnb.engine.var` grants it every var.  This module is
what all engines share; they differ only in what they do with a ready op
(:meth:`Engine._dispatch`): the naive engine runs it at once, the threaded
engines hand it to a worker pool, the step engine keeps it until told.

Rule: a push is checked (:mod:`.checks`), appended to its vars under the one
bookkeeping lock (``append_read_dependency`` / ``append_write_dependency``),
traced (:mod:`.records`) and, when ready, dispatched.  A completion marks or
clears failures (:mod:`.failures`), releases the vars
(``complete_read_dependency`` / ``complete_write_dependency``), wakes the
waits it may satisfy (:mod:`.waiting`), is traced, and returns the ops it
made ready to whoever dispatches them.  No user object is released while the
lock is held: finalizers (an NDArray's ``__del__``) may push.

Threads and the GIL: the pushing thread and the workers all take the one
lock.  A thread that finds it taken naps rather than queueing on it
(:func:`mxnb.base.acquire_lock`): a blocking acquire makes two threads trade
the lock and the GIL once per op, a context switch per op.

State kept per engine:
    _lock           one lock for all bookkeeping; never held while an op runs
                    (one lock beats a lock per var in Python: fewer acquires per op)
    _num_pending    ops pushed and not complete
    _live           op id -> op, on engines that list their ops (the step engine)
    _handover       set_engine's switch in progress (see :meth:`Engine.hand_over`)
    (failures, waits and debug notes: see :mod:`.failures`, :mod:`.waiting`, :mod:`.debugging`)

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
import math
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

from ..base import EngineError, ParamError, acquire_lock
from ..context import Context, RunContext
from . import tracing
from .checks import (
    SEQUENCES,
    OperatorHandle,
    check_ctx,
    check_fn_ctx,
    check_options,
    normalise,
    refuse_deleted,
    vars_of,
)
from .debugging import Debugging, SlowWait
from .failures import MAX_UNRAISED_ERRORS, ErrorRef, Failures
from .lifetime import Lifetime
from .records import record_end, record_push, record_var_name, record_var_new
from .running import RunContextCache, Running, _running_stack, inside_op
from .var import DONE, PENDING, READY, RUNNING, Opr, Var
from .waiting import Waiting

__all__ = [
    "DONE",
    "MAX_UNRAISED_ERRORS",
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

_next_op_id = itertools.count(1).__next__
_sleep = time.sleep
_ErrorRef = ErrorRef  # the name other engine modules used


class Engine(Waiting, Failures, Debugging, Running, Lifetime):
    """The engine interface and the shared bookkeeping (MXNet: ``Engine`` / ``ThreadedEngine``).

    Subclasses implement :meth:`_dispatch` (what to do with a ready op) and
    may implement :meth:`_help_once` (run one ready op while a wait is unmet).
    """

    kind = "base"
    _var_type = Var
    _live: dict[int, Opr] | None = None
    _wait_poll = 0.1  # seconds between checks while waiting (keeps Ctrl-C responsive)
    #: Pending ops beyond which a push hands the GIL to the workers once (threaded engines).
    #: A pushing thread holds the GIL for a whole switch interval (5 ms): it runs
    #: hundreds of small ops ahead of the workers, and their objects live long
    #: enough to go through the cycle collector's young generations (a quarter of
    #: the cost of a small NDArray op).  Never on engines without workers.
    run_ahead: int | float = math.inf
    #: The worker name under which the pushing thread runs an op ready at push at once
    #: (the naive engine); the trace then records push and start as one record.
    starts_at_push: str | None = None

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
        self._errors: list[ErrorRef] = []  # failures not yet raised by a wait (bounded)
        self._errors_dropped = 0  # failures dropped from _errors to keep it bounded
        self._failures = 0  # vars carrying a failure now: 0 means no op can be skipped
        self._shut = False
        # set_engine's hand-over (see hand_over): while it runs, pushes from outside this
        # engine's ops wait on _handover, then go to _successor, as do pushes after it.
        self._handover: threading.Event | None = None
        self._successor: Engine | None = None
        self.slow_wait_threshold: float | None = None  # debug mode (set by engine.debug)
        self.slow_waits: list[SlowWait] = []

    # -- vars --------------------------------------------------------------
    # -- vars --------------------------------------------------------------
    def new_var(self, name: str = "") -> Var:
        """Return a new var (MXNet: ``NewVariable``); ``name`` shows in traces and errors."""
        var = Var(name)
        if tracing.enabled:
            record_var_new(var)
        return var

    def name_var(self, var: Var, name: str) -> None:
        """Give ``var`` a name a person knows (``'fc1_weight'``); traces record it.

        For the layers that learn a var's meaning after making it (an
        executor names its arguments, gradients and outputs at bind time).
        Costs one attribute set when nobody traces; a recorder gets a
        ``VarName`` event, and the views show the latest name.
        """
        if type(name) is not str or not name:
            raise ParamError(
                f"name_var: name must be a non-empty str, got {name!r}; pass e.g. 'fc1_weight'"
            )
        var.name = name
        if tracing.enabled:
            record_var_name(var)

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
        # One cheap test per argument; the full checks run only when one fails.
        if type(ctx) is not Context or not callable(fn):
            check_fn_ctx(fn, ctx, name)
        if priority != 0 or copy is not False or type(name) is not str:  # not the defaults
            priority = check_options(priority, name, copy)
        if not name:
            name = getattr(fn, "__name__", "op")
        const: tuple[Var, ...]
        mutate: tuple[Var, ...]
        if not const_vars:
            const, mutate = (), vars_of(mutate_vars, "mutate_vars", name) if mutate_vars else ()
        elif not mutate_vars:
            const, mutate = vars_of(const_vars, "const_vars", name), ()
        else:
            const, mutate = normalise(const_vars, mutate_vars, name)
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
            check_fn_ctx(fn, ctx, name)
        if type(priority) is not int or type(name) is not str or type(copy) is not bool:
            priority = check_options(priority, name, copy)
        if not name:
            name = getattr(fn, "__name__", "op")
        const, mutate = normalise(const_vars, mutate_vars, name)
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
        const, mutate = normalise(const_vars, mutate_vars, name)
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
        check_ctx(ctx, handle.name)
        if type(priority) is not int:
            priority = check_options(priority, handle.name, False)
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
        elif isinstance(var, SEQUENCES) and var and all(type(item) is Var for item in var):
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
        if not self.idle_delete or tracing.enabled or var.pending_write is not None:
            return False  # the unlocked read only ever picks the slower push_delete
        if not self._lock.acquire(False):
            return False
        try:
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

    def _push_opr(  # noqa: C901 -- check, rule, trace hook and dispatch in push order, read top to bottom beside MXNet's PushAsync
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
        """Check, append the op to its vars (the rule), trace, dispatch it if ready."""
        opr = Opr(_next_op_id(), name, const, mutate, fn, ctx, priority, is_async, copy, delete)
        lock = self._lock
        if not lock.acquire(False):
            self._acquire_contended()
        try:
            if self._handover is not None or self._shut:  # check
                if self._handover is not None and not _running_stack():
                    lock.release()
                    try:
                        return self._forward(opr)
                    finally:
                        lock.acquire()
                if self._shut:
                    raise EngineError(f"push of op '{name}': the {self.kind} engine is shut down")
            for var in const:
                if var.deleted:
                    refuse_deleted(const, mutate, name)
            for var in mutate:
                if var.deleted:
                    refuse_deleted(const, mutate, name)
            if self.slow_wait_threshold is not None:
                self._note_push(opr)
            for var in const:  # the rule
                var.append_read_dependency(opr)
            for var in mutate:
                var.append_write_dependency(opr)
            if delete is not None:
                for var in delete:
                    var.deleted = True
            ready = opr.decrement_wait()
            self._num_pending += 1
            if self._live is not None:
                self._live[opr.id] = opr
            if ready:
                opr.state = READY
            if tracing.enabled:  # the trace hook
                record_push(opr, None if self._failures else self.starts_at_push)
        finally:
            lock.release()
        if ready:  # dispatch
            self._dispatch(opr)
        if self._num_pending > self.run_ahead:
            _sleep(0)  # releases the GIL: the workers catch up (see run_ahead)
        return opr.id

    def _acquire_contended(self) -> None:
        """Take the lock another thread holds, napping rather than queueing on it (see above)."""
        acquire_lock(self._lock)

    def _complete(
        self,
        opr: Opr,
        exc: BaseException | None,
        inherited: ErrorRef | None = None,
        chain: RunContext | None = None,
    ) -> list[Opr]:
        """Mark failures, release ``opr``'s vars (the rule), wake waits, trace; return the ready ops.

        ``exc``: the op failed; ``inherited``: it was skipped for that input
        failure.  ``chain``: the RunContext the op ran with, when its thread
        goes on to run a successor in the op's own pool itself (the trace then
        records that start with this end, see :func:`.records.record_end`).
        """
        ready: list[Opr] = []
        lock = self._lock
        if not lock.acquire(False):
            self._acquire_contended()
        try:
            replaced = None
            if exc is not None or inherited is not None or self._failures:  # check
                replaced = self._mark_outputs(opr, exc, inherited)
                chain = None  # a successor may yet be skipped: its start is its own record
            for var in opr.const_vars:  # the rule
                ready += var.complete_read_dependency()
            for var in opr.mutate_vars:
                ready += var.complete_write_dependency()
            opr.state = DONE
            for successor in ready:
                successor.state = READY
            self._num_pending -= 1
            if self._num_waiters:
                self._wake_waiters(opr)
            if opr.push_time:
                self._note_done(opr)
            if tracing.enabled:  # the trace hook
                record_end(opr, exc, inherited, ready, chain)
        finally:
            lock.release()
        opr.fn = None  # drops the user's closure (and what it holds) outside the lock
        del replaced
        return ready

    def _wake_waiters(self, opr: Opr) -> None:
        """Wake the waiters ``opr``'s completion may satisfy, only those (call under the lock)."""
        if (
            self._waiters_any
            or (self._waiters_all and self._num_pending <= self._suspended)
            or (self._waiters_var and self._waits_on(opr.mutate_vars))
        ):
            self._cond.notify_all()
