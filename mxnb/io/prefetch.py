"""Prefetching on the engine: batch k+1 loads as engine work while batch k trains.

Idea (MXNet: ``PrefetchingIter`` and the C++ ``PrefetcherIter`` run a loader
thread beside the engine; here the loading *is* engine work): a prefetcher
keeps ``depth`` slots, each guarded by an engine var. Loading batch k is an op
pushed with ``mutate_vars=[slot var of k, cursor var]`` on the engine's copy
workers (their own lane on the timeline, away from the compute workers), so
``EngineMonitor`` and ``Timeline`` show loading overlapping training. Taking
batch k is ``wait_for_var(slot var of k)``, then the load of batch k+depth is
pushed into the freed slot.

Rule: every load op writes the shared ``cursor`` var, so by the engine's own
rule loads run one at a time in push order: batch k is always the k-th
``produce`` call, whatever the number of copy workers. A load that raises
(anything, ``SystemExit`` and ``KeyboardInterrupt`` included) does not fail
the engine op: the exception is kept in its slot and raised by ``next()``
for exactly the batch that needed it; later batches still load. Each load
first records the source's position, so a ``reset()`` puts the source back
where the batches taken left it before resetting it: the loads ahead are
invisible ('roll_over' and ``round_batch`` resets depend on the position).
Nothing waits on a thread of our own, so a dead loader cannot hang ``next()``.

State kept:
    _slots      per slot: the engine var, and the produced batch or exception
    _cursor     the var that orders the loads
    _taken      batches handed out this epoch; _pushed: loads pushed this epoch

Example::

    >>> import numpy as np, mxnb as mx
    >>> inner = mx.io.NDArrayIter(np.arange(8), batch_size=4)
    >>> it = mx.io.PrefetchingIter(inner)
    >>> [b.data[0].asnumpy().tolist() for b in it]
    [[0.0, 1.0, 2.0, 3.0], [4.0, 5.0, 6.0, 7.0]]
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from .. import engine as _engine
from ..context import cpu
from .base import DataBatch, DataDesc, DataIter, _CurrentBatchIter

__all__ = ["EnginePrefetcher", "PrefetchingIter"]

_END = object()  # slot value: the source is used up


class _Slot:
    """One prefetch buffer: its engine var and what the load op left there."""

    def __init__(self, var: Any) -> None:
        self.var = var
        self.value: Any = None  # a batch, _END, or the BaseException the load raised
        self.before: Any = None  # the source's position just before this load (snapshot)


class EnginePrefetcher:
    """Run ``produce()`` as engine ops, ``depth`` batches ahead of ``take()``.

    Parameters
    ----------
    produce : returns the next batch, or raises StopIteration at the end of the epoch.
    name : names the vars and ops in traces ('<name> load batch 3').
    depth : batches loaded ahead.
    snapshot : returns the source's position before each load (see :meth:`rewind_state`).
    """

    def __init__(
        self,
        produce: Callable[[], Any],
        name: str = "prefetch",
        depth: int = 2,
        snapshot: Callable[[], Any] | None = None,
    ) -> None:
        self._produce = produce
        self._snapshot = snapshot
        self.name = name
        self.depth = max(1, int(depth))
        self._engine = _engine.get()
        self._cursor = self._engine.new_var(name=f"{name}:cursor")
        self._slots = [
            _Slot(self._engine.new_var(name=f"{name}:slot{i}")) for i in range(self.depth)
        ]
        self._taken = 0
        self._pushed = 0
        for _ in range(self.depth):
            self._push_load()

    def _push_load(self) -> None:
        index = self._pushed
        slot = self._slots[index % self.depth]

        def load(run_ctx: Any) -> None:
            try:
                slot.before = self._snapshot() if self._snapshot is not None else None
                slot.value = self._produce()
            except StopIteration:
                slot.value = _END
            except BaseException as exc:  # noqa: BLE001 - SystemExit too: kept for its batch
                # A load op never fails: a failed engine var would poison this slot for good.
                slot.value = exc

        self._engine.push_sync(
            load,
            cpu(),
            mutate_vars=[slot.var, self._cursor],
            name=f"{self.name} load batch {index}",
            copy=True,
        )
        self._pushed += 1

    def take(self) -> Any:
        """The next batch (waits for its load op); StopIteration at the end of the epoch."""
        if self._pushed == self._taken:  # asked again past the end: load on demand
            self._push_load()
        slot = self._slots[self._taken % self.depth]
        self._engine.wait_for_var(slot.var)
        value = slot.value
        # every take consumes one produce() call, the end of the epoch too, as a plain
        # iterator's next() does; past the end nothing more is loaded ahead
        self._taken += 1
        if value is _END:
            raise StopIteration
        self._push_load()
        if isinstance(value, BaseException):
            raise value
        return value

    def drain(self) -> None:
        """Wait until every pushed load has finished (before a reset of the source)."""
        for slot in self._slots:
            self._engine.wait_for_var(slot.var)

    def rewind_state(self) -> Any:
        """After :meth:`drain`: the source's position before the first load not yet taken.

        That is where the source stood for whoever took the batches: a reset
        must start from there, not from where the loads ahead left it.
        """
        if self._pushed <= self._taken:
            return None
        return self._slots[self._taken % self.depth].before

    def restart(self) -> None:
        """Start a new epoch: forget what was loaded and load ahead again."""
        self.drain()
        self._taken = 0
        self._pushed = 0
        for slot in self._slots:
            slot.value = None
        for _ in range(self.depth):
            self._push_load()

    def close(self) -> None:
        """Wait for the pending loads and delete the vars."""
        self.drain()
        self._engine.push_delete([slot.var for slot in self._slots] + [self._cursor])


class PrefetchingIter(_CurrentBatchIter):
    """Prefetch the batches of one or more iterators on the engine (MXNet's ``PrefetchingIter``).

    Parameters
    ----------
    iters : a DataIter or a list of them; their batches are joined (data lists concatenated).
    rename_data, rename_label : per iterator, a dict old name -> new name.
    depth : batches loaded ahead.
    """

    def __init__(
        self,
        iters: DataIter | Sequence[DataIter],
        rename_data: Sequence[dict] | None = None,
        rename_label: Sequence[dict] | None = None,
        depth: int = 2,
    ) -> None:
        super().__init__()
        self.iters = list(iters) if isinstance(iters, (list, tuple)) else [iters]
        if not self.iters:
            raise ValueError("PrefetchingIter: give at least one iterator")
        self.n_iter = len(self.iters)
        self.rename_data = rename_data
        self.rename_label = rename_label
        self.batch_size = self.provide_data[0].shape[0]
        self.current_batch: DataBatch | None = None
        self._prefetcher = EnginePrefetcher(
            self._produce, name="PrefetchingIter", depth=depth, snapshot=self._snapshot_all
        )

    @staticmethod
    def _renamed(descs: list, renames: dict | None) -> list[DataDesc]:
        if renames is None:
            return list(descs)
        return [DataDesc(renames[d.name], d.shape, d.dtype, d.layout) for d in descs]

    @property
    def provide_data(self) -> list[DataDesc]:
        """The joined (and renamed) data descriptions."""
        renames = self.rename_data or [None] * self.n_iter
        return [d for i, r in zip(self.iters, renames) for d in self._renamed(i.provide_data, r)]

    @property
    def provide_label(self) -> list[DataDesc]:
        """The joined (and renamed) label descriptions."""
        renames = self.rename_label or [None] * self.n_iter
        return [d for i, r in zip(self.iters, renames) for d in self._renamed(i.provide_label, r)]

    def _produce(self) -> DataBatch:
        """One joined batch; runs inside an engine op."""
        batches = []
        for it in self.iters:
            try:
                batches.append(it.next())
            except StopIteration:
                batches.append(None)
        if all(b is None for b in batches):
            raise StopIteration
        if any(b is None for b in batches) or len({b.pad for b in batches}) != 1:
            raise ValueError("PrefetchingIter: the iterators give different numbers of examples")
        return DataBatch(
            [array for b in batches for array in b.data],
            [array for b in batches for array in b.label or []],
            batches[0].pad,
            batches[0].index,
            provide_data=self.provide_data,
            provide_label=self.provide_label,
        )

    def _snapshot_all(self) -> list[Any]:
        # an iterator that is not a DataIter (duck-typed) has no position to restore
        return [it._snapshot() if hasattr(it, "_snapshot") else None for it in self.iters]

    def reset(self) -> None:
        """Wait for pending loads, put the inner iterators back where the batches taken left
        them, reset them, load ahead again: exactly what a reset of the iterators does."""
        self._prefetcher.drain()
        positions = self._prefetcher.rewind_state()
        for it, position in zip(self.iters, positions or [None] * self.n_iter):
            if position is not None:
                it._restore(position)
        for it in self.iters:
            it.reset()
        self._prefetcher.restart()

    def next(self) -> DataBatch:
        """The next prefetched batch."""
        self.current_batch = self._prefetcher.take()
        return self.current_batch

    def iter_next(self) -> bool:
        """Move to the next batch; False at the end of the epoch."""
        try:
            self.next()
        except StopIteration:
            return False
        return True
