"""``ResizeIter``: an epoch of exactly ``size`` batches over another iterator.

Idea: wrap an iterator and count; when the inner one runs out before
``size`` batches it is reset and read on; after ``size`` batches the epoch
ends whatever the inner iterator still holds.

Rule: ``reset()`` restarts the count and, with ``reset_internal`` (default),
resets the inner iterator too; without it the next epoch goes on where the
inner iterator stopped.

State kept: ``cur`` batches given this epoch; ``current_batch``.

MXNet: ResizeIter in python/mxnet/io/io.py.

Example::

    >>> import numpy as np, mxnb as mx
    >>> inner = mx.io.NDArrayIter(np.ones((100, 10)), batch_size=25)
    >>> len(list(mx.io.ResizeIter(inner, 6)))
    6
"""

from __future__ import annotations

from typing import Any

from .base import DataBatch, DataIter, _CurrentBatchIter, check_batch_size

__all__ = ["ResizeIter"]


class ResizeIter(_CurrentBatchIter):
    """Give ``size`` batches per epoch from ``data_iter`` (MXNet's ``mx.io.ResizeIter``)."""

    def __init__(self, data_iter: DataIter, size: int, reset_internal: bool = True) -> None:
        super().__init__(data_iter.batch_size)
        self.data_iter = data_iter
        self.size = check_batch_size(size, "ResizeIter", "size")
        self.reset_internal = reset_internal
        self.cur = 0
        self.current_batch: DataBatch | None = None
        self.provide_data = data_iter.provide_data
        self.provide_label = data_iter.provide_label
        if hasattr(data_iter, "default_bucket_key"):
            self.default_bucket_key = data_iter.default_bucket_key

    def reset(self) -> None:
        """Restart the count (and the inner iterator when ``reset_internal``)."""
        self.cur = 0
        if self.reset_internal:
            self.data_iter.reset()

    def _snapshot(self) -> Any:
        """The count and the inner iterator's position."""
        return (self.cur, self.data_iter._snapshot())

    def _restore(self, snapshot: Any) -> None:
        self.cur, inner = snapshot
        if inner is not None:
            self.data_iter._restore(inner)

    def iter_next(self) -> bool:
        """Take the next inner batch, resetting the inner iterator when it runs out."""
        if self.cur == self.size:
            return False
        try:
            self.current_batch = self.data_iter.next()
        except StopIteration:
            self.data_iter.reset()
            self.current_batch = self.data_iter.next()
        self.cur += 1
        return True
