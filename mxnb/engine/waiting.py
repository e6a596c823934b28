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
from . import tracing

if TYPE_CHECKING:
    from .var import Var

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
    _blocked_waits: dict[int, tuple[list[Any], Var, int]]  # thread -> ops on its stack, var, target
    _wait_poll: float
    _var_type: type  # Var (set by Engine: this module cannot import it at load time)
    _errors: list[Any]  # ErrorRefs not yet raised by a wait (bounded)
    _errors_dropped: int  # failures dropped from _errors to keep it bounded
    _help_once: Callable[[], bool]  # Running's: run one ready op in the waiting thread

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
        deadline = None if timeout is None else tracing.now() + timeout
        if getattr(_local, "engine", None) is self:
            wake = "any"  # a worker waiting inside an op also looks for ops to help with
        recording = tracing.enabled
        wait_id = next(_wait_ids)
        if recording:
            tracing.emit(
                tracing.WaitBegin(
                    tracing.now(),
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
                    if deadline is not None and tracing.now() >= deadline:
                        return False
                    self._add_waiter(wake, var, target, 1)
                    try:
                        self._cond.wait(self._poll_interval())
                    finally:
                        self._add_waiter(wake, var, target, -1)
                self._stuck_check()
        finally:
            if recording:
                tracing.emit(tracing.WaitEnd(tracing.now(), wait_id))

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

    def wait_for_var(self, var: Var, timeout: float | None = None) -> None:
        """Block until every write pushed on ``var`` so far is done (MXNet: ``WaitForVar``).

        Raises :class:`~mxnb.base.OpError` when an op writing ``var`` (or one it
        depended on) failed, on every wait until the var is written again; and
        :class:`~mxnb.base.EngineError` naming the pending writes when
        ``timeout`` seconds pass first, or when the wait can never be met.
        """
        if type(var) is not self._var_type:
            raise EngineError(f"wait_for_var: expected an engine var, got {var!r}")
        _check_timeout(timeout, "wait_for_var")
        stack = _local.__dict__.get("stack")
        blocked = None
        with self._lock:
            target = var.writes_pushed
            if stack:
                chain = _waits_for_stack(var, stack, self._blocked_waits)
                if chain is not None:
                    raise EngineError(_deadlock_message(var, chain))
                if var.writes_done < target:  # others may find a cycle through this wait
                    blocked = threading.get_ident()
                    outer = self._blocked_waits.get(blocked)
                    self._blocked_waits[blocked] = (list(stack), var, target)
        try:
            if var.writes_done < target and not self._wait_until(
                lambda: var.writes_done >= target, var, timeout, wake="var", target=target
            ):
                raise EngineError(
                    f"wait_for_var({var.name!r}) timed out after {timeout} s: "
                    f"{target - var.writes_done} write(s) still pending "
                    f"({self._pending_names(var)})"
                )
        finally:
            if blocked is not None:
                with self._lock:
                    if outer is None:
                        del self._blocked_waits[blocked]
                    else:
                        self._blocked_waits[blocked] = outer
        ref = var.error
        if ref is not None:  # raised on every wait while the var carries it
            with self._lock:
                if ref in self._errors:
                    self._errors.remove(ref)  # raised: wait_for_all need not raise it again
            exc = ref.exc
            if exc is not None:
                raise ref.to_error(exc) from exc

    def wait_for_all(self, timeout: float | None = None) -> None:
        """Block until every pushed op is done (MXNet: ``WaitForAll``).

        Inside a running op, waits for everything except the ops on the calling
        stack.  Raises the first failure not yet raised (then forgets them all),
        or :class:`~mxnb.base.EngineError` when ``timeout`` seconds pass first.
        """
        _check_timeout(timeout, "wait_for_all")
        stack = _local.__dict__.get("stack")
        depth = len(stack) if stack else 0
        if depth:
            with self._lock:
                blocked = _blocked_by(stack)
                if blocked is not None:
                    op, var, runner = blocked
                    raise EngineError(
                        f"wait_for_all inside op '{runner.name}' can never finish: op "
                        f"'{op.name}' waits for '{runner.name}' on var {var.name!r}; push the "
                        f"rest of the work as separate ops instead of waiting inside one"
                    )
                self._suspended += depth
        try:
            if not self._wait_until(
                lambda: self._num_pending <= self._suspended, None, timeout, wake="all"
            ):
                raise EngineError(
                    f"wait_for_all timed out after {timeout} s with "
                    f"{self._num_pending - self._suspended} op(s) still pending"
                )
        finally:
            if depth:
                with self._lock:
                    self._suspended -= depth
                    if self._num_waiters:
                        self._cond.notify_all()
        self._raise_errors()

    def _pending_names(self, var: Var) -> str:
        """The pending writes of ``var`` by name, for a timeout's message."""
        with self._lock:
            names = [f"'{op.name}'" for op in _pending_writes(var)]
        return ", ".join(names[:5]) + (", ..." if len(names) > 5 else "") or "none booked"

    def _raise_errors(self) -> None:
        """Raise the first failure no wait has raised yet; forget the rest (vars keep theirs)."""
        with self._lock:
            errors = self._errors
            self._errors = []
            dropped, self._errors_dropped = self._errors_dropped, 0
        first = next((ref for ref in errors if ref.exc is not None), None)
        others = len(errors) - 1 + dropped
        del errors  # the raised error's traceback keeps this frame: it must not keep them
        if first is None or first.exc is None:
            return
        cause = first.exc
        error = first.to_error(cause)
        del first
        if others:
            error.args = (f"{error.args[0]} (and {others} more failed op(s))",)
        try:
            raise error from cause
        finally:
            del error  # no cycle error -> traceback -> this frame -> error


# -- waits that can never be met ------------------------------------------------------------


def _check_timeout(timeout: Any, what: str) -> None:
    """``timeout`` is None or a number of seconds >= 0; anything else names the wait."""
    if timeout is None:
        return
    if (
        isinstance(timeout, bool)
        or not isinstance(timeout, (int, float))
        or not timeout >= 0  # (nan too)
    ):
        raise EngineError(f"{what}: timeout must be None or seconds >= 0, got {timeout!r}")


def _waits_for_stack(
    var: Var, stack: list[Any], blocked: dict[int, tuple[list[Any], Var, int]] | None = None
) -> list[tuple[Any, Var]] | None:
    """The dependency chain from ``var``'s pending writes back to an op running on this thread.

    A thread running op R that waits for ``var`` waits for every write
    pushed on ``var`` so far.  If one of those writes must wait for R
    (directly: it was pushed behind R on a var R uses; or through other ops
    queued in between), the wait can never be met: R cannot finish before
    the wait does.  Returns ``[(op, var it waits on), ...]`` ending at an op of
    ``stack``, or None when no such chain exists.  Call under the engine lock.

    The rule is MXNet's: an op not yet runnable waits for the incomplete ops
    pushed before it on each of its vars (the oldest pending write, and
    every op queued ahead of it); two reads do not wait for each other.

    ``blocked`` holds the waits other threads are blocked in, inside their
    ops: an op running there waits for the writes its thread waits for, so
    two ops on two threads each waiting for the other's var are found too
    (the second of the two waits raises).
    """
    running = set(map(id, stack))
    me = threading.get_ident()
    waiting_on = {
        id(op): (waited, target)
        for thread, (ops, waited, target) in (blocked or {}).items()
        if thread != me
        for op in ops
    }
    start = [op for op in _pending_writes(var) if id(op) not in running]
    if any(id(op) in running for op in _pending_writes(var)):
        writer = next(op for op in _pending_writes(var) if id(op) in running)
        return [(writer, var)]
    seen: set[int] = set()
    todo: list[tuple[Any, list[tuple[Any, Var]]]] = [(op, [(op, var)]) for op in start]
    while todo:
        op, path = todo.pop()
        if id(op) in running:
            return path  # back on this thread's stack, through another thread's wait
        if id(op) in seen:
            continue
        seen.add(id(op))
        if op.wait_count == 0:  # runnable or running: it waits only if its thread does
            if id(op) in waiting_on:
                waited, target = waiting_on[id(op)]
                for write in _pending_writes(waited)[: max(target - waited.writes_done, 0)]:
                    todo.append((write, [*path, (write, waited)]))
            continue
        for used in (*op.const_vars, *op.mutate_vars):
            writes = used in op.mutate_vars
            for runner in stack:
                if runner.id < op.id and (writes or used in runner.mutate_vars):
                    if used in runner.const_vars or used in runner.mutate_vars:
                        return [*path, (runner, used)]
            for ahead in _ops_ahead(used, op):
                todo.append((ahead, [*path, (ahead, used)]))
    return None


def _blocked_by(stack: Any) -> tuple[Any, Var, Any] | None:
    """A pending op that must wait for an op running on this thread: ``(op, var, runner)``.

    ``wait_for_all`` inside an op waits for every op but those on the stack;
    an op queued behind one of them (on a var they use) cannot run before
    they finish, so that wait could never end.  Call under the engine lock.
    """
    for runner in stack:
        for var in (*runner.const_vars, *runner.mutate_vars):
            if var.queue:
                return var.queue[0][0], var, runner
            writer = var.pending_write
            if writer is not None and writer is not runner and var in runner.const_vars:
                return writer, var, runner  # a write waiting for this read to finish
    return None


def _pending_writes(var: Var) -> list[Any]:
    """The incomplete writes on ``var``: the oldest one and those queued behind it."""
    writes = [] if var.pending_write is None else [var.pending_write]
    if var.queue:
        writes += [op for op, is_write in var.queue if is_write]
    return writes


def _ops_ahead(var: Var, op: Any) -> list[Any]:
    """Incomplete ops that ``op`` waits for on ``var`` (pushed before it, see the rule)."""
    ahead = []
    if var.pending_write is not None and var.pending_write is not op:
        ahead.append(var.pending_write)
    for queued, _ in var.queue or ():
        if queued is op:
            break
        ahead.append(queued)
    return ahead


def _deadlock_message(var: Var, chain: list[tuple[Any, Var]]) -> str:
    runner = chain[-1][0]
    if len(chain) == 1:
        return (
            f"wait_for_var({var.name!r}) inside op '{runner.name}', which writes {var.name!r} "
            f"itself: this would wait forever; read the var before pushing the op, or push a "
            f"separate op"
        )
    steps = " -> ".join(f"'{op.name}' (on {used.name!r})" for op, used in chain)
    return (
        f"wait_for_var({var.name!r}) inside op '{runner.name}' can never finish: it waits for "
        f"{steps}, and '{runner.name}' cannot finish before its own wait does; wait before "
        f"pushing those ops, or push the rest of the work as separate ops"
    )
