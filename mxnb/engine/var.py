"""Var and Opr: MXNet's dependency rule, as four named operations.

Idea (MXNet: ``ThreadedVar`` / ``OprBlock`` in src/engine/threaded_engine.h,
read beside "Dependency Engine" in MXNet's architecture notes): every piece of
mutable state the engine protects is a :class:`Var`; every pushed function is
an :class:`Opr` naming the vars it reads (``const_vars``) and writes
(``mutate_vars``).  A var grants access in push order and queues the ops it
cannot grant yet; an op counts the vars that have not granted it access
(``wait_count``) and is *ready* when that count reaches zero.

Rule: any two ops where at least one writes a common var run in push order;
reads between two writes may run at the same time.  On a var that means:

* ``append_read_dependency``: a read is granted at once unless a write is
  pending (holding the var, or queued); then it queues behind it.
* ``append_write_dependency``: a write holds the var when no write does, and is
  granted once the reads before it are complete; otherwise it queues.
* ``complete_read_dependency``: the last running read grants the pending write.
* ``complete_write_dependency``: the write lets go; the reads queued behind it
  are granted, up to the next write, which then holds the var.

This module is the rule and nothing else: the engine (:mod:`.base`) calls it
under its one lock, and decides what a ready op means (run it, queue it for a
worker, list it for a step).  Errors, tracing, waits and debug records stay
there.  The +1 of ``wait_count`` is MXNet's: the pusher holds one count while
it appends, so appending never makes an op ready; the pusher's own
``decrement_wait()`` does.

State kept per var:
    pending_reads   granted reads not yet complete
    pending_write   the write holding the var (oldest incomplete write); None: reads pass
    queue           (op, is_write) pushed behind ``pending_write``, in push order
    writes_pushed   writes appended so far; writes_done: completed (MXNet's ``version()``)

Two things of MXNet's have no counterpart here.  ``kWriteTriggered`` is the
value MXNet stores in ``num_pending_reads_`` while a write runs, so that one
atomic field says "a write holds the var"; here ``pending_write`` says it, and
the engine's one lock (not atomics) guards both counts.  MXNet's queue is a
linked list of ``VersionedVarBlock`` (op, is_write) nodes, one allocated per
append; here it is a ``deque`` of the same pairs, made only when an op must
wait.  Neither changes the rule.

Example::

    >>> a = Var('a')
    >>> write, read = Opr(1, 'write', (), (a,)), Opr(2, 'read', (a,), ())
    >>> a.append_write_dependency(write); write.decrement_wait()
    True
    >>> a.append_read_dependency(read); read.decrement_wait()   # queued behind the write
    False
    >>> [op.name for op in a.complete_write_dependency()]
    ['read']
"""

from __future__ import annotations

import itertools
from collections import deque
from collections.abc import Sequence
from typing import Any

__all__ = ["DONE", "PENDING", "READY", "RUNNING", "Opr", "Var", "granted_opr"]

# op states (the engine sets them; the rule only counts)
PENDING = 0  # waiting for vars
READY = 1  # all vars granted; handed to the dispatcher
RUNNING = 2  # its function is running (or an async op awaits its callback)
DONE = 3  # complete (succeeded, failed or skipped)

_next_var_id = itertools.count(1).__next__
_NONE: tuple[()] = ()  # "no op made ready"
_new_object = object.__new__


class Var:
    """A piece of state the engine orders access to (MXNet: ``ThreadedVar``).

    Create with :meth:`Engine.new_var`.  ``id`` is unique in the process and
    ``name`` shows in traces and errors.  A var carries no engine reference:
    once an engine has drained, its vars work with the next one.  The last
    four fields are the engine's notes on the var, not part of the rule.
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
        "queue",
        "readers",
        "writes_done",
        "writes_pushed",
    )

    def __init__(self, name: str = "") -> None:
        self.id = _next_var_id()
        self.name = name or f"var{self.id}"
        self.pending_reads = 0
        self.pending_write: Opr | None = None
        self.queue: deque[tuple[Opr, bool]] | None = None  # made when first needed
        self.writes_pushed = 0
        self.writes_done = 0
        self.last_write: Opr | None = None  # engine: newest incomplete write (trace, debug)
        self.readers: list[Opr] | tuple[()] = ()  # engine, debug mode: reads since last_write
        self.error: Any = None  # engine: the failure shared by the vars its op wrote
        self.deleted = False  # engine: push_delete was pushed

    def __repr__(self) -> str:
        return f"Var({self.id}, {self.name!r}{', deleted' if self.deleted else ''})"

    @property
    def version(self) -> int:
        """How many writes to this var have completed (MXNet: ``ThreadedVar::version()``).

        MXNet increments ``version_`` in ``CompleteWriteDependency``: a reader
        compares versions to learn whether the value changed since it looked.
        """
        return self.writes_done

    def append_read_dependency(self, opr: Opr) -> None:
        """Ask to read: granted now unless a write is pending, else queued behind it."""
        if self.pending_write is None:
            self.pending_reads += 1
            opr.wait_count -= 1  # granted: decr_wait, never to 0 (the pusher holds a count)
        elif self.queue is None:  # the queue is made when first needed
            self.queue = deque([(opr, False)])
        else:
            self.queue.append((opr, False))

    def append_write_dependency(self, opr: Opr) -> None:
        """Ask to write: hold the var if no write does (granted once no read runs), else queue."""
        self.writes_pushed += 1
        if self.pending_write is None:
            self.pending_write = opr
            if not self.pending_reads:
                opr.wait_count -= 1  # granted: decr_wait, never to 0 (as above)
        elif self.queue is None:
            self.queue = deque([(opr, True)])
        else:
            self.queue.append((opr, True))

    def complete_read_dependency(self) -> Sequence[Opr]:
        """A granted read is done; the last one grants the pending write.  Returns the ops made ready."""
        self.pending_reads -= 1
        writer = self.pending_write
        if not self.pending_reads and writer is not None and writer.decrement_wait():
            return [writer]
        return _NONE

    def complete_write_dependency(self) -> Sequence[Opr]:
        """The holding write is done: grant the reads behind it, then the next write.

        Returns the ops made ready, in push order.
        """
        self.writes_done += 1
        self.pending_write = None
        queue = self.queue
        if not queue:
            return _NONE
        ready = []
        while queue:
            opr, is_write = queue.popleft()
            if is_write:
                self.pending_write = opr
                if not self.pending_reads and opr.decrement_wait():
                    ready.append(opr)
                break
            self.pending_reads += 1
            if opr.decrement_wait():
                ready.append(opr)
        return ready


class Opr:
    """One pushed function and its vars (MXNet: ``OprBlock`` with its ``ThreadedOpr``).

    ``wait_count`` starts at one more than the vars it appends to (MXNet's
    ``1 + const_vars.size() + mutable_vars.size()``); each var that grants
    access takes one off, and the pusher takes its own off when done appending.
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

    def __init__(
        self,
        op_id: int,
        name: str,
        const_vars: tuple[Var, ...],
        mutate_vars: tuple[Var, ...],
        fn: Any = None,
        ctx: Any = None,
        priority: int = 0,
        is_async: bool = False,
        copy: bool = False,
        deletes: tuple[Var, ...] | None = None,
    ) -> None:
        self.id = op_id
        self.name = name
        self.const_vars = const_vars
        self.mutate_vars = mutate_vars
        self.wait_count = 1 + len(const_vars) + len(mutate_vars)
        self.state = PENDING
        self.fn = fn  # cleared when the op completes (drops the user's references)
        self.ctx = ctx
        self.priority = priority  # larger runs first among ready ops of a pool
        self.is_async = is_async  # fn(run_ctx, on_complete)
        self.copy = copy  # a cross-device copy: runs on the copy workers
        self.deletes = deletes  # push_delete: the vars this op deletes
        self.push_time = 0.0  # debug mode: when it was pushed
        self.waited_on: tuple[str, ...] = ()  # debug mode: the ops it waited on

    def decrement_wait(self) -> bool:
        """One more var granted access (MXNet: ``decr_wait()``); True when the op is now ready."""
        self.wait_count -= 1
        return not self.wait_count

    def __repr__(self) -> str:
        return f"Opr({self.id}, {self.name!r})"


def granted_opr(
    op_id: int,
    name: str,
    const_vars: tuple[Var, ...],
    mutate_vars: tuple[Var, ...],
    fn: Any,
    ctx: Any,
    priority: int = 0,
    copy: bool = False,
) -> Opr:
    """A sync op every var has already granted (``READY``): the idle fast path's ``Opr``.

    The same slots as ``Opr(...)`` followed by every var's grant and the
    pusher's own ``decrement_wait()``, set directly: the class call and
    ``__init__`` were an eighth of the fast path (``tests/engine/test_naive_idle.py``
    checks every slot against the constructor's).  The caller books the vars.
    """
    opr = _new_object(Opr)
    opr.id = op_id
    opr.name = name
    opr.const_vars = const_vars
    opr.mutate_vars = mutate_vars
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
    return opr
