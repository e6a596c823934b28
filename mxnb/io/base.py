"""The data-iterator protocol: ``DataDesc``, ``DataBatch`` and ``DataIter``.

Idea: every loader in ``mx.io`` hands out the same object, a ``DataBatch`` of
``batch_size`` examples, and describes what it hands out before the first
batch (``provide_data`` / ``provide_label``, lists of ``DataDesc``) so that a
Module can bind its executor from the descriptions alone.

Rule: ``next()`` returns a batch or raises ``StopIteration``; ``reset()``
starts the next epoch. A short last batch is filled up and says how many of
its rows are filler in ``pad`` (prediction drops them).

State kept: ``DataIter.batch_size`` only; subclasses keep their cursor.

MXNet: python/mxnet/io/io.py (DataDesc, DataBatch, DataIter).

Example::

    >>> import mxnb as mx
    >>> d = mx.io.DataDesc('data', (32, 784))
    >>> d.name, d.shape, d.layout
    ('data', (32, 784), 'NCHW')
"""

from __future__ import annotations

from collections import namedtuple
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..base import ParamError, as_shape
from ..validate import check_count

__all__ = [
    "DataBatch",
    "DataDesc",
    "DataIter",
    "check_batch_size",
    "check_parts",
    "image_descs",
    "round_batch_rows",
]


class DataDesc(namedtuple("DataDesc", ["name", "shape"])):
    """Name and shape (a tuple, as MXNet's) of one input, plus its ``dtype`` and ``layout``."""

    def __new__(  # noqa: PYI034
        cls, name: str, shape: Sequence[int], dtype: Any = np.float32, layout: str = "NCHW"
    ) -> DataDesc:
        desc = super().__new__(cls, name, tuple(shape))
        desc.dtype = dtype
        desc.layout = layout
        return desc

    def __repr__(self) -> str:
        return f"DataDesc[{self.name},{self.shape},{self.dtype},{self.layout}]"

    @staticmethod
    def get_batch_axis(layout: str | None) -> int:
        """The axis of ``layout`` that holds the batch ('N'); 0 when there is no layout."""
        if layout is None:
            return 0
        return layout.find("N")

    @staticmethod
    def get_list(shapes: Sequence[tuple], types: Sequence[tuple] | None) -> list[DataDesc]:
        """``DataDesc`` for each ``(name, shape)`` with the dtype ``types`` gives that name."""
        if types is None:
            return [DataDesc(name, shape) for name, shape in shapes]
        type_of = dict(types)
        return [DataDesc(name, shape, type_of[name]) for name, shape in shapes]


class DataBatch:
    """One batch: lists of data and label arrays, the filler row count ``pad`` and more.

    Parameters
    ----------
    data, label : lists of NDArray with ``batch_size`` rows each.
    pad : rows at the end that are filler (a short last batch filled up).
    index : the example indices in the batch, when the iterator knows them.
    bucket_key, provide_data, provide_label : as MXNet's (bucketing, descriptions).
    """

    def __init__(
        self,
        data: Sequence[Any] | None,
        label: Sequence[Any] | None = None,
        pad: int | None = None,
        index: Any = None,
        bucket_key: Any = None,
        provide_data: list[DataDesc] | None = None,
        provide_label: list[DataDesc] | None = None,
    ) -> None:
        if data is not None and not isinstance(data, (list, tuple)):
            raise TypeError(f"DataBatch: data must be a list of NDArrays, got {type(data)}")
        if label is not None and not isinstance(label, (list, tuple)):
            raise TypeError(f"DataBatch: label must be a list of NDArrays, got {type(label)}")
        self.data = data
        self.label = label
        self.pad = pad
        self.index = index
        self.bucket_key = bucket_key
        self.provide_data = provide_data
        self.provide_label = provide_label

    def __str__(self) -> str:
        data_shapes = [d.shape for d in self.data or []]
        label_shapes = [x.shape for x in self.label] if self.label else None
        return f"{type(self).__name__}: data shapes: {data_shapes} label shapes: {label_shapes}"


def check_batch_size(batch_size: Any, who: str, what: str = "batch_size") -> int:
    """``batch_size`` (or the count ``what``) as an int >= 1; a float, bool or smaller value
    is a ParamError naming ``who`` and ``what``, never truncated."""
    if isinstance(batch_size, (bool, np.bool_)) or not isinstance(batch_size, (int, np.integer)):
        raise ParamError(f"{who}: {what} must be an int >= 1, got {batch_size!r}")
    if batch_size < 1:
        raise ParamError(f"{who}: {what} must be >= 1, got {batch_size}")
    return int(batch_size)


def check_parts(num_parts: Any, part_index: Any, who: str) -> tuple[int, int]:
    """``(num_parts, part_index)`` of a sharded iterator: ints, ``0 <= part_index < num_parts``.

    One check for every iterator that reads a share of its data (a float
    would become a slice ``TypeError``; ``num_parts=0`` a ``ZeroDivisionError``).
    """
    parts = check_count(num_parts, "num_parts", who, low=1)
    index = check_count(part_index, "part_index", who, low=0)
    if index >= parts:
        raise ParamError(f"{who}: part_index must be in [0, num_parts={parts}), got {index}")
    return parts, index


def check_example_shape(shape: Any, who: str, what: str) -> tuple[int, ...]:
    """The shape of one example (``data_shape``): non-negative ints, none of them 0."""
    dims = as_shape(shape, f"{who}: {what}")
    if not dims or 0 in dims:
        raise ParamError(f"{who}: {what} {dims} must have dimensions >= 1")
    return dims


class DataIter:
    """Base of every iterator: Python iteration over ``next()``; subclasses fill the hooks.

    A subclass either overrides ``next`` or the four hooks ``iter_next``,
    ``getdata``, ``getlabel``, ``getpad`` (and ``getindex``).
    """

    def __init__(self, batch_size: int = 0) -> None:
        self.batch_size = batch_size

    def __iter__(self) -> DataIter:
        return self

    def __next__(self) -> DataBatch:
        return self.next()

    def reset(self) -> None:
        """Start the next epoch."""

    def _snapshot(self) -> Any:
        """Where this iterator stands, for a prefetcher that read ahead to put it back (or None).

        A prefetcher (:class:`~mxnb.io.PrefetchingIter`) calls ``next()``
        before the batch is asked for; at a ``reset()`` it first puts the
        iterator back where the user's batches left it, because ``reset``
        may depend on the position ('roll_over', ``round_batch``).  None
        means ``reset`` does not depend on it.
        """
        return None

    def _restore(self, snapshot: Any) -> None:
        """Go back to a position :meth:`_snapshot` returned."""

    def next(self) -> DataBatch:
        """The next batch; ``StopIteration`` at the end of the epoch."""
        if self.iter_next():
            return DataBatch(
                data=self.getdata(),
                label=self.getlabel(),
                pad=self.getpad(),
                index=self.getindex(),
            )
        raise StopIteration

    def iter_next(self) -> bool:
        """Move to the next batch; False at the end of the epoch."""
        raise NotImplementedError(f"{type(self).__name__} does not implement iter_next")

    def getdata(self) -> list:
        """The data arrays of the current batch."""
        raise NotImplementedError(f"{type(self).__name__} does not implement getdata")

    def getlabel(self) -> list:
        """The label arrays of the current batch."""
        raise NotImplementedError(f"{type(self).__name__} does not implement getlabel")

    def getindex(self) -> Any:
        """The example indices of the current batch, or None."""
        return None

    def getpad(self) -> int:
        """How many rows at the end of the current batch are filler."""
        raise NotImplementedError(f"{type(self).__name__} does not implement getpad")


def round_batch_rows(
    cursor: int, total: int, batch_size: int, round_batch: bool
) -> tuple[np.ndarray, int]:
    """Rows of the batch starting at ``cursor`` and its pad (MXNet's C++ BatchLoader).

    A short last batch is completed with rows 0, 1, ... (cyclically) when
    ``round_batch``; ``pad`` counts the missing rows either way. The caller
    starts its next epoch at row ``pad % total`` after a rounded batch.
    """
    stop = min(cursor + batch_size, total)
    pad = batch_size - (stop - cursor)
    rows = np.arange(cursor, stop)
    if pad and round_batch:
        rows = np.concatenate([rows, np.arange(pad) % total])
    return rows, pad


class _CurrentBatchIter(DataIter):
    """An iterator that wraps others and answers the getters from ``current_batch``."""

    current_batch: DataBatch | None = None

    def getdata(self) -> list:
        """The current batch's data."""
        return self.current_batch.data

    def getlabel(self) -> list:
        """The current batch's label."""
        return self.current_batch.label

    def getindex(self) -> Any:
        """The current batch's index."""
        return self.current_batch.index

    def getpad(self) -> int:
        """The current batch's pad."""
        return self.current_batch.pad


def image_descs(
    names: tuple[str, str], batch_size: int, data_shape: tuple, label_width: int
) -> tuple[list[DataDesc], list[DataDesc]]:
    """provide_data and provide_label of an image iterator: (B, C, H, W) and (B,) or (B, width)."""
    label_shape = (batch_size,) if label_width == 1 else (batch_size, label_width)
    return [DataDesc(names[0], (batch_size, *data_shape))], [DataDesc(names[1], label_shape)]
