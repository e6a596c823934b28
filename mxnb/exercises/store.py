"""What the ops of a schedule exercise share, and the engine a learner's program pushes to.

Idea: to say *why* a schedule breaks, the grader must know what each op
touched.  The ops of an engine exercise read and write a :class:`Store` of
small arrays, one per var; it notes every read and write against the op
running, as debug mode would, and hands reads back as read-only views
(:func:`~mxnb.ndarray.debug.readonly_view`, debug mode's guard).  The
learner's program pushes to a :class:`GradingEngine`: the step engine with
every push labelled and its declared vars noted.  A :class:`Device` stands
for the accelerator an async op starts work on: a submitted job runs when
the schedule says so, then calls its callback (the op's ``on_complete``).

Rule: touches made outside any op belong to :data:`PROGRAM` (the pushing
thread) and sit, in push order, between the pushes made before and after
them.  A read of a freed array raises :class:`FreedError` in the op.

State kept:
    Store.values / events / freed / errors   the arrays, every touch, what was freed, op errors
    Device.pending                           submitted jobs not yet run
    GradingEngine.declared / label_of / push_index   per op label: vars, op id, push order

Example::

    >>> from mxnb.exercises.store import Store
    >>> store = Store({'x': np.array(2.0)})
    >>> store.current = 'double'
    >>> store.write('x', 2 * store.read('x'))
    >>> float(store.values['x']), store.touched()['double']
    (4.0, ({'x'}, {'x'}))
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..base import MXNBError
from ..context import cpu
from ..ndarray.debug import readonly_view

__all__ = ["PROGRAM", "Device", "FreedError", "GradingEngine", "Store"]

PROGRAM = "(program)"  # the label of the pushing thread: code outside any op


class FreedError(MXNBError, RuntimeError):
    """An op read an array after it was freed."""


@dataclass
class Store:
    """The arrays an exercise's ops share, one per var name, watched as debug mode does."""

    values: dict[str, np.ndarray]
    current: str = PROGRAM  # the op running now
    pushed: int = 0  # pushes so far (orders the pushing thread's touches among the ops)
    events: list[tuple[str, str, str, float]] = field(default_factory=list)  # (op, var, r|w, at)
    positions: dict[str, float] = field(default_factory=dict)  # op label -> its push index
    freed: set[str] = field(default_factory=set)
    errors: list[str] = field(default_factory=list)

    def _note(self, name: str, mode: str) -> None:
        # The pushing thread's touches sit between the pushes made before and after them.
        at = self.positions.get(self.current, self.pushed - 0.5)
        self.events.append((self.current, name, mode, at))

    def read(self, name: str) -> np.ndarray:
        """The value of var ``name`` as a read-only view (noted as a read by the running op)."""
        self._note(name, "r")
        if name in self.freed:
            raise FreedError(f"op '{self.current}' read '{name}' after it was freed")
        return readonly_view(self.values[name], self.current, name)

    def write(self, name: str, value: Any) -> None:
        """Set var ``name`` to ``value`` (noted as a write by the running op)."""
        self._note(name, "w")
        self.values[name] = np.array(value, dtype=np.float64)

    def free(self, name: str) -> None:
        """Free var ``name``'s array (a write: later reads fail)."""
        self._note(name, "w")
        self.freed.add(name)

    def touched(self) -> dict[str, tuple[set[str], set[str]]]:
        """Per op label: (vars read, vars written)."""
        seen: dict[str, tuple[set[str], set[str]]] = {}
        for op, var, mode, _ in self.events:
            reads, writes = seen.setdefault(op, (set(), set()))
            (writes if mode == "w" else reads).add(var)
        return seen


@dataclass
class _Job:
    label: str
    op: str
    fn: Callable[[], Any]
    callback: Callable[..., Any] | None


class Device:
    """A pretend device: ``submit(job, callback)`` queues work that the schedule runs later."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.pending: list[_Job] = []

    def submit(self, job: Callable[[], Any], callback: Callable[..., Any] | None = None) -> None:
        """Queue ``job()``; once it ran, ``callback()`` is called (an async op's ``on_complete``)."""
        if not callable(job):
            raise MXNBError(f"device.submit: job must be callable, got {job!r}")
        op = self.store.current
        self.pending.append(_Job(f"{op}:device", op, job, callback))

    def run(self, label: str) -> None:
        """Run the pending job ``label``, then its callback."""
        job = next(j for j in self.pending if j.label == label)
        self.pending.remove(job)
        store = self.store
        previous, store.current = store.current, job.op
        try:
            job.fn()
        except Exception as exc:  # noqa: BLE001 - the outcome records it
            store.errors.append(f"{job.op}: {type(exc).__name__}")
            if job.callback is not None:
                job.callback(exc)
            return
        finally:
            store.current = previous
        if job.callback is not None:
            job.callback()


class GradingEngine:
    """The engine a learner's program pushes to: a step engine, every push labelled and noted."""

    def __init__(self, engine: Any, store: Store) -> None:
        self._engine = engine
        self._store = store
        self.declared: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {}
        self.label_of: dict[int, str] = {}  # op id -> label
        self.push_index: dict[str, int] = {}

    def new_var(self, name: str = "") -> Any:
        """A new engine var (as :meth:`Engine.new_var`)."""
        return self._engine.new_var(name=name)

    def _label(self, name: str, fn: Any, const: Sequence[Any], mutate: Sequence[Any]) -> str:
        label = name or getattr(fn, "__name__", "op")
        base, count = label, 2
        while label in self.declared:
            label, count = f"{base}#{count}", count + 1
        names = tuple(var.name for var in const), tuple(var.name for var in mutate)
        self.declared[label] = names
        self.push_index[label] = self._store.pushed
        self._store.positions[label] = self._store.pushed
        self._store.pushed += 1
        return label

    def _wrap(self, fn: Any, label: str) -> Any:
        store = self._store

        def run(*args: Any) -> Any:
            previous, store.current = store.current, label
            try:
                return fn(*args)
            except Exception as exc:
                store.errors.append(f"{label}: {type(exc).__name__}")
                raise
            finally:
                store.current = previous

        return run

    def push_sync(
        self,
        fn: Callable[..., Any],
        ctx: Any,
        const_vars: Sequence[Any] = (),
        mutate_vars: Sequence[Any] = (),
        priority: int = 0,
        name: str = "",
        **kw: Any,
    ) -> int:
        """Push ``fn(run_ctx)`` (as :meth:`Engine.push_sync`); return the op id."""
        return self._push(
            self._engine.push_sync, fn, ctx, const_vars, mutate_vars, priority, name, kw
        )

    def push_async(
        self,
        fn: Callable[..., Any],
        ctx: Any,
        const_vars: Sequence[Any] = (),
        mutate_vars: Sequence[Any] = (),
        priority: int = 0,
        name: str = "",
        **kw: Any,
    ) -> int:
        """Push ``fn(run_ctx, on_complete)`` (as :meth:`Engine.push_async`); return the op id."""
        push = self._engine.push_async
        return self._push(push, fn, ctx, const_vars, mutate_vars, priority, name, kw)

    def _push(
        self,
        push: Callable[..., int],
        fn: Callable[..., Any],
        ctx: Any,
        const_vars: Sequence[Any],
        mutate_vars: Sequence[Any],
        priority: int,
        name: str,
        kw: dict[str, Any],
    ) -> int:
        """Push ``fn`` wrapped to record what it touches, labelled; remember the label."""
        label = self._label(name, fn, const_vars, mutate_vars)
        op_id = push(self._wrap(fn, label), ctx, const_vars, mutate_vars, priority, label, **kw)
        self.label_of[op_id] = label
        return op_id

    def push_delete(self, var: Any, ctx: Any = None, fn: Any = None) -> int:
        """Delete ``var`` after its pushed ops, running ``fn`` first (as :meth:`Engine.push_delete`)."""
        vars_ = list(var) if isinstance(var, (list, tuple)) else [var]
        name = getattr(fn, "__name__", "") if fn is not None else f"delete_{vars_[0].name}"
        label = self._label(name, fn, (), vars_)
        wrapped = self._wrap(fn, label) if fn is not None else None
        op_id = self._engine.push_delete(var, ctx or cpu(), wrapped)
        self.label_of[op_id] = label
        return op_id

    def wait_for_var(self, var: Any) -> None:
        """Wait for ``var`` (the step engine runs ops in step order until it is ready)."""
        self._engine.wait_for_var(var)

    def wait_for_all(self) -> None:
        """Wait for every pushed op."""
        self._engine.wait_for_all()
