"""The idle fast path: an op whose vars are all idle runs at once, booked as the rule would.

Idea: most ops on the naive engine — and on a threaded engine whose workers
are behind — are pushed when none of their vars has anything pending.  The
rule (:mod:`.var`) then grants every var at once, so such an op can run at
once in the pushing thread, and its booking is the rule's result written
out: a read counts one more pending read, a write holds the var; when it
completes with nothing pushed behind it, the booking is undone the same way.
This is the one exception to "every push goes through the rule", kept here,
apart from the rule and from the engines.

Two forms: :meth:`IdleFastPath._push_idle`, for any sync push whose checks
are done (``push_sync`` / ``push_prepared`` call it as ``_push_opr``), and
:meth:`IdleFastPath.push_sync_one_var`, the naive engine's ``push_sync``
itself for the commonest push, an op on one var: ``push_sync``'s checks,
the booking and the release written out in one function.  A Python call
costs about 4 % of a tiny op there, so it repeats what the other form does
for its checks and booking instead of calling shared pieces (factored into
two helpers, they cost 0.06-0.12x of the reference engine's naive form);
the run in between is one shared method, :meth:`IdleFastPath._run_booked`
(measured against the written-out run in the same rounds: +0.00-0.06x of
the reference, within the spread of its rounds).  While a trace records,
``push_sync_one_var`` writes its two records in place too (RAW_PUSH_START,
RAW_DONE: the two calls were a fifth of what tracing adds to such an op).

Rule: whatever else comes — a busy var, an async op, a delete, a failure,
debug mode, a hand-over, a shutdown, an op pushed behind it while it runs —
takes the plain rule (``Engine._push_opr`` / ``Engine._complete``).
``tests/engine/test_naive_idle.py`` runs random workloads through both forms
and through the plain rule and compares results, traces and var states, and
checks that ``push_sync_one_var`` refuses what ``Engine.push_sync`` refuses,
in the same words.

Users: :class:`~mxnb.engine.naive.NaiveEngine` (every push) and the threaded
engines (a push while their CPU workers are behind, see
:mod:`mxnb.engine.threaded`), both subclasses of :class:`IdleFastPath`.  They
provide ``_run_contexts`` (the :class:`~.running.RunContextCache` of the
pushing thread: its worker name shows in traces) and
:meth:`IdleFastPath._run_successors`.

State kept: none (the engine's lock, counts and vars).

Example::

    >>> import mxnb as mx
    >>> eng = mx.engine.create('naive')          # every push tries the idle path
    >>> v = eng.new_var(name='v')
    >>> _ = eng.push_sync(lambda rctx: None, mx.cpu(), mutate_vars=[v])
    >>> (v.pending_write, v.writes_done)         # booked and released, as the rule would
    (None, 1)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from ..context import Context, RunContext
from . import trace
from .base import Engine, _next_op_id
from .records import (
    RAW_DONE,
    RAW_PUSH_START,
    extend_raw,
    get_ident,
    now,
    record_done,
    record_push,
    record_start,
    seen_vars,
)
from .running import RunContextCache
from .var import DONE, READY, RUNNING, Opr, Var
from .waiting import _local

__all__ = ["IdleFastPath"]

_new_object = object.__new__


class IdleFastPath(Engine):
    """An engine that can run an op whose vars are idle at push (see the module docstring)."""

    _run_contexts: RunContextCache

    def _run_successors(self, ready: list[Opr]) -> None:
        """Hand on the ops an idle op's completion made ready (the naive engine runs them)."""
        raise NotImplementedError

    def _push_idle(
        self,
        fn: Any,
        is_async: bool,
        ctx: Context,
        const: tuple[Var, ...],
        mutate: tuple[Var, ...],
        priority: int,
        name: str,
        copy: bool,
        delete: tuple[Var, ...] | None = None,
    ) -> int:
        """Run an op whose vars are all idle at once, booked as the rule would; else push by the rule.

        Idle: no write holds any of its vars, no read holds a var it writes,
        none is deleted; and the engine has no failure, hand-over, shutdown
        or debug mode to look after.  The op is sync and deletes nothing.
        """
        if is_async or delete is not None:
            return Engine._push_opr(
                self, fn, is_async, ctx, const, mutate, priority, name, copy, delete
            )
        lock = self._lock
        if not lock.acquire(False):
            self._acquire_contended()
        try:
            opr = None
            idle = not (
                self._failures
                or self._handover is not None
                or self._shut
                or self.slow_wait_threshold is not None
            )
            if idle:
                for var in const:
                    if var.pending_write is not None or var.deleted:
                        idle = False
                for var in mutate:
                    if var.pending_write is not None or var.pending_reads or var.deleted:
                        idle = False
            if idle:  # the rule's booking, every var granting at once
                # Opr(...) written out, already granted: a class call and its
                # __init__ were an eighth of this path (tests/engine/test_naive_idle.py
                # checks every slot against Opr's own).
                opr = _new_object(Opr)
                opr.id = _next_op_id()
                opr.name = name
                opr.const_vars = const
                opr.mutate_vars = mutate
                opr.wait_count = 0
                opr.state = READY
                opr.fn = fn
                opr.ctx = ctx
                opr.priority = priority
                opr.is_async = False
                opr.copy = copy
                opr.deletes = None
                opr.push_time = 0.0
                opr.waited_on = ()
                for var in const:
                    var.pending_reads += 1
                for var in mutate:
                    var.writes_pushed += 1
                    var.pending_write = opr
                self._num_pending += 1
                if trace.enabled:
                    record_push(opr, self._run_contexts.worker)  # push and start, one record
        finally:
            lock.release()
        if opr is None:
            return Engine._push_opr(self, fn, is_async, ctx, const, mutate, priority, name, copy)
        if not self._run_booked(opr, fn, ctx):
            return opr.id
        self._complete_idle(opr)
        return opr.id

    def push_sync_one_var(  # noqa: C901 -- the named fast path (issue 38 section 1 shortens it)
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
        """:meth:`Engine.push_sync` with the idle fast path fused in, for ops on one var.

        The naive engine's ``push_sync``: same arguments, checks and result.  The
        commonest push (one var, read or written, in a list or tuple; default
        priority and copy) is checked, booked, run (:meth:`_run_booked`) and
        released here: the checks of :meth:`Engine.push_sync` and the booking
        of :meth:`_push_idle` written out for a single var, no loop over var
        lists.  Any other push, or a busy var, takes
        :meth:`Engine.push_sync` or the rule.
        """
        if not const_vars:
            given, write = mutate_vars, True
        elif not mutate_vars:
            given, write = const_vars, False
        else:
            given = None
        kind = type(given)
        if (
            (kind is not tuple and kind is not list)
            or len(given) != 1  # type: ignore[arg-type]
            or type(var := given[0]) is not Var  # type: ignore[index]
            or type(ctx) is not Context
            or priority != 0
            or copy is not False
            or type(name) is not str
            or not callable(fn)
        ):
            return Engine.push_sync(
                self, fn, ctx, const_vars, mutate_vars, priority, name, copy=copy
            )
        if not name:
            name = getattr(fn, "__name__", "op")
        held: tuple[Var, ...] = given if kind is tuple else (var,)  # type: ignore[assignment]  # kind is tuple: given is
        lock = self._lock
        if not lock.acquire(False):
            self._acquire_contended()
        try:
            if (
                self._failures
                or self._handover is not None
                or self._shut
                or self.slow_wait_threshold is not None
                or var.pending_write is not None
                or var.deleted
                or (write and var.pending_reads)
            ):
                opr = None
            else:  # the rule's booking, the var granting at once (Opr(...) written out, as above)
                opr = _new_object(Opr)
                opr.id = _next_op_id()
                opr.name = name
                if write:
                    opr.const_vars = ()
                    opr.mutate_vars = held
                    var.writes_pushed += 1
                    var.pending_write = opr
                else:
                    opr.const_vars = held
                    opr.mutate_vars = ()
                    var.pending_reads += 1
                opr.wait_count = 0
                opr.state = READY
                opr.fn = fn
                opr.ctx = ctx
                opr.priority = 0
                opr.is_async = False
                opr.copy = False
                opr.deletes = None
                opr.push_time = 0.0
                opr.waited_on = ()
                self._num_pending += 1
                if trace.enabled and var.id in seen_vars:  # RAW_PUSH_START (push and start), here
                    opr.state = RUNNING
                    reads = 0 if write else 1
                    t, ident, worker = now(), get_ident(), self._run_contexts.worker
                    extend_raw(
                        (RAW_PUSH_START, t, opr.id, name, ctx, reads, var.id, 0, ident, worker)
                    )
                elif trace.enabled:
                    record_push(opr, self._run_contexts.worker)  # names the var first
        finally:
            lock.release()
        if opr is None:
            if write:
                return Engine._push_opr(self, fn, False, ctx, (), held, 0, name, False)
            return Engine._push_opr(self, fn, False, ctx, held, (), 0, name, False)
        if not self._run_booked(opr, fn, ctx):
            return opr.id
        if not lock.acquire(False):
            self._acquire_contended()
        try:  # nothing pushed behind the op, no failure: the rule's release, nothing made ready
            alone = not self._failures and (not var.queue if write else var.pending_write is None)
            if alone:
                if write:
                    var.writes_done += 1
                    var.pending_write = None
                else:
                    var.pending_reads -= 1
                opr.state = DONE
                self._num_pending -= 1
                if self._num_waiters:
                    self._wake_waiters(opr)
                if trace.enabled:
                    extend_raw((RAW_DONE, now(), opr.id, ()))  # record_done, written here
        finally:
            lock.release()
        if alone:
            opr.fn = None  # drops the user's closure outside the lock
        else:
            ready = self._complete(opr, None)
            if ready:
                self._run_successors(ready)
        return opr.id

    def _run_booked(self, opr: Opr, fn: Any, ctx: Context) -> bool:
        """Run a booked, granted op in this thread; False when it raised (then it is completed).

        The run of both forms of the fast path: the worker's RunContext of the
        pushing thread, the trace's start unless the push record said it,
        the op on this thread's stack of running ops (waits inside it help).
        """
        rctx = self._run_contexts.by_id.get(id(ctx))  # RunContextCache.get without the call
        if rctx is None or rctx.ctx is not ctx:
            rctx = self._run_contexts.get(ctx)
        if trace.enabled and opr.state is READY:  # recording began since the push
            record_start(opr, rctx.worker, None)
        opr.state = RUNNING
        try:  # running._running_stack() written out: the call measured +0.05x of the reference
            stack = _local.stack
        except AttributeError:
            stack = _local.stack = []
        stack.append(opr)
        try:
            fn(rctx)
        except BaseException as exc:  # noqa: BLE001 - _fail_idle books it, raises a Ctrl-C on
            stack.pop()
            self._fail_idle(opr, exc)
            return False
        stack.pop()
        return True

    def _fail_idle(self, opr: Opr, exc: BaseException) -> None:
        """An op of the fast path raised ``exc``: a failure is the rule's business, complete it so.

        Call inside the ``except`` block: a Ctrl-C (not an ``Exception``) is
        booked, what it released runs, and it is raised on.
        """
        ready = self._complete(opr, exc)
        if not isinstance(exc, Exception):
            for successor in ready:
                self._dispatch(successor)
            raise  # noqa: PLE0704 - the exception being handled by the caller
        if ready:
            self._run_successors(ready)

    def _complete_idle(self, opr: Opr) -> None:
        """Complete an op of :meth:`_push_idle`: undo its booking if nothing was pushed behind it.

        Otherwise (or if a failure appeared meanwhile) it completes by the rule.
        """
        lock = self._lock
        if not lock.acquire(False):
            self._acquire_contended()
        try:
            alone = not self._failures
            if alone:
                for var in opr.const_vars:
                    if var.pending_write is not None:  # a write waits for this read
                        alone = False
                for var in opr.mutate_vars:
                    if var.queue:
                        alone = False
            if alone:  # the rule's release, nothing made ready
                for var in opr.const_vars:
                    var.pending_reads -= 1
                for var in opr.mutate_vars:
                    var.writes_done += 1
                    var.pending_write = None
                opr.state = DONE
                self._num_pending -= 1
                if self._num_waiters:
                    self._wake_waiters(opr)
                if trace.enabled:
                    record_done(opr)
        finally:
            lock.release()
        if alone:
            opr.fn = None  # drops the user's closure outside the lock
            return
        ready = self._complete(opr, None)
        if ready:
            self._run_successors(ready)
