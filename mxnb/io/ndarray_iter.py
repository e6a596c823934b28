"""``NDArrayIter``: batches over arrays in memory, with MXNet's three last-batch rules.

Idea: the inputs (one array, a list, or a dict of name -> array, for data and
for label) are held as numpy arrays; a cursor walks over them ``batch_size``
rows at a time and each batch is a fresh NDArray on the inputs' context.

Rule (``last_batch_handle``, for N examples and batch size B):
    'pad'        the short last batch is filled up with rows from the start of
                 the epoch (cyclically when B > N); ``pad`` = filler rows.
    'discard'    the short last batch is dropped.
    'roll_over'  the short last batch is held back and becomes the head of the
                 first batch of the next epoch, whose ``pad`` is the number of
                 rows carried over (MXNet reports it so, though none is filler).
With ``shuffle`` the rows are permuted at construction and at every reset with
``numpy.random.shuffle`` on the global generator, composing with the previous
permutation, as MXNet does; seeding numpy gives MXNet's batches.

Names: one array is ``data`` / ``softmax_label``; a list of k arrays is
``_0_data`` ... ``_{k-1}_data``; a dict keeps its keys; all sorted by name.
Numpy inputs become float32 (MXNet's ``mx.nd.array``); NDArrays keep their dtype.

State kept:
    cursor     index of the current batch's first row (starts at -batch_size)
    idx        the composed permutation of the rows (shuffle only)
    _data, _label   lists of (name, numpy array) in the current row order
    _carry     the held-back rows of 'roll_over' (data, label) or None

MXNet: NDArrayIter in python/mxnet/io/io.py.

Example::

    >>> import numpy as np, mxnb as mx
    >>> it = mx.io.NDArrayIter(np.arange(10), np.zeros(10), batch_size=4)
    >>> [(b.data[0].asnumpy().tolist(), b.pad) for b in it][-1]
    ([8.0, 9.0, 0.0, 1.0], 2)
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from ..base import ParamError, ShapeError
from ..context import Context
from ..ndarray import NDArray
from ..ndarray import array as nd_array
from .base import DataBatch, DataDesc, DataIter, check_batch_size

__all__ = ["NDArrayIter"]

_MODES = ("pad", "discard", "roll_over")

ArrayInput = Any  # numpy array, NDArray, nested list; or a list / dict of them


def _named_arrays(
    value: ArrayInput, default_name: str, allow_empty: bool
) -> list[tuple[str, NDArray]]:
    """MXNet's canonical form: a name-sorted list of (name, NDArray)."""
    if value is None:
        if not allow_empty:
            raise ParamError("NDArrayIter: data is required, got None")
        return []
    if isinstance(value, (np.ndarray, NDArray)):
        value = [value]
    if isinstance(value, (list, tuple)):
        if not value and not allow_empty:
            raise ParamError("NDArrayIter: data is an empty list; give at least one array")
        if len(value) == 1:
            value = {default_name: value[0]}
        else:
            value = {f"_{i}_{default_name}": v for i, v in enumerate(value)}
    if not isinstance(value, Mapping):
        raise TypeError(
            f"NDArrayIter: {default_name} must be an NDArray, a numpy array, a list of them "
            f"or a dict of name -> array; got {type(value).__name__}"
        )
    named = []
    for name, array in value.items():
        if not isinstance(array, NDArray):
            try:
                array = nd_array(array)
            except Exception as exc:
                raise TypeError(
                    f"NDArrayIter: invalid type {type(array).__name__} for {name!r}; "
                    "give an NDArray or a numpy array"
                ) from exc
        named.append((name, array))
    return sorted(named, key=lambda item: item[0])


class NDArrayIter(DataIter):
    """Iterate over arrays in memory in batches of ``batch_size`` (MXNet's ``mx.io.NDArrayIter``).

    Parameters
    ----------
    data, label : an array, a list of arrays or a dict of name -> array (label optional).
    batch_size : rows per batch.
    shuffle : permute the rows at construction and at every reset (numpy's global generator).
    last_batch_handle : 'pad' | 'discard' | 'roll_over' (see the module docstring).
    data_name, label_name : names of a single data / label array.
    layout : the data layout; its 'N' is the batch axis.
    """

    def __init__(
        self,
        data: ArrayInput,
        label: ArrayInput = None,
        batch_size: int = 1,
        shuffle: bool = False,
        last_batch_handle: str = "pad",
        data_name: str = "data",
        label_name: str = "softmax_label",
        layout: str = "NCHW",
    ) -> None:
        super().__init__(batch_size)
        if last_batch_handle not in _MODES:
            raise ParamError(
                f"NDArrayIter: last_batch_handle must be one of {_MODES}, got {last_batch_handle!r}"
            )
        self.batch_size = check_batch_size(batch_size, "NDArrayIter")
        self.layout = layout
        self.batch_axis = max(layout.find("N"), 0)
        data_arrays = _named_arrays(data, data_name, allow_empty=False)
        label_arrays = _named_arrays(label, label_name, allow_empty=True)
        self._context: Context = data_arrays[0][1].context
        self._dtypes = {name: array.dtype for name, array in data_arrays + label_arrays}
        self._data = [(name, array.asnumpy()) for name, array in data_arrays]
        self._label = [(name, array.asnumpy()) for name, array in label_arrays]
        self.num_data = self._data[0][1].shape[self.batch_axis]
        for name, array in self._data + self._label:
            if array.shape[self.batch_axis] != self.num_data:
                raise ShapeError(
                    f"NDArrayIter: {name!r} has {array.shape[self.batch_axis]} rows on the "
                    f"batch axis but {self._data[0][0]!r} has {self.num_data}; "
                    "all inputs need the same number of examples"
                )
        if last_batch_handle == "roll_over" and self.batch_size > self.num_data:
            raise ParamError(
                f"NDArrayIter: last_batch_handle='roll_over' needs batch_size <= the number "
                f"of examples, got batch_size={self.batch_size} for {self.num_data} examples"
            )
        self.shuffle = shuffle
        self.last_batch_handle = last_batch_handle
        self.idx = np.arange(self.num_data)
        self.cursor = -self.batch_size
        self._carry: tuple[list, list] | None = None
        self.reset()

    # -- descriptions ---------------------------------------------------------------------------

    def _describe(self, arrays: list[tuple[str, np.ndarray]]) -> list[DataDesc]:
        descs = []
        for name, array in arrays:
            shape = list(array.shape)
            shape[self.batch_axis] = self.batch_size
            descs.append(DataDesc(name, tuple(shape), array.dtype.type, layout=self.layout))
        return descs

    @property
    def provide_data(self) -> list[DataDesc]:
        """Name, batch shape, dtype and layout of each data array."""
        return self._describe(self._data)

    @property
    def provide_label(self) -> list[DataDesc]:
        """Name, batch shape, dtype and layout of each label array."""
        return self._describe(self._label)

    @property
    def data(self) -> list[tuple[str, NDArray]]:
        """The data arrays, in the current (shuffled) row order."""
        return [(name, nd_array(array, self._context)) for name, array in self._data]

    @property
    def label(self) -> list[tuple[str, NDArray]]:
        """The label arrays, in the current (shuffled) row order."""
        return [(name, nd_array(array, self._context)) for name, array in self._label]

    # -- epochs ---------------------------------------------------------------------------------

    def _shuffle_rows(self) -> None:
        np.random.shuffle(self.idx)
        self._data = [(name, array[self.idx]) for name, array in self._data]
        self._label = [(name, array[self.idx]) for name, array in self._label]

    def hard_reset(self) -> None:
        """Start a new epoch at row 0 and forget any rows held back by 'roll_over'."""
        if self.shuffle:
            self._shuffle_rows()
        self.cursor = -self.batch_size
        self._carry = None

    def reset(self) -> None:
        """Start the next epoch; with 'roll_over' a held-back short batch heads it."""
        if self.shuffle:
            self._shuffle_rows()
        held_back = self.num_data - self.batch_size < self.cursor < self.num_data
        if self.last_batch_handle == "roll_over" and held_back:
            # cursor - num_data rows remain; the next step lands on their negative count.
            self.cursor = self.cursor - self.num_data - self.batch_size
        else:
            self.cursor = -self.batch_size

    def _snapshot(self) -> Any:
        """The cursor and the rows held back: all ``reset`` reads."""
        return (self.cursor, self._carry)

    def _restore(self, snapshot: Any) -> None:
        self.cursor, self._carry = snapshot

    def iter_next(self) -> bool:
        """Advance the cursor; False past the end."""
        self.cursor += self.batch_size
        return self.cursor < self.num_data

    def next(self) -> DataBatch:
        """The next batch, or ``StopIteration`` (a short batch is held back or dropped)."""
        if not self.iter_next():
            raise StopIteration
        data = self._batchify(self._data, 0)
        label = self._batchify(self._label, 1)
        if data[0].shape[self.batch_axis] != self.batch_size:
            self._carry = (data, label)
            raise StopIteration
        return DataBatch(
            data=[self._to_nd(name, rows) for (name, _), rows in zip(self._data, data)],
            label=[self._to_nd(name, rows) for (name, _), rows in zip(self._label, label)],
            pad=self.getpad(),
            index=None,
        )

    def _to_nd(self, name: str, rows: np.ndarray) -> NDArray:
        return nd_array(rows, self._context, dtype=self._dtypes[name])

    def _rows(self, array: np.ndarray, start: int, stop: int) -> np.ndarray:
        """Rows ``start:stop`` along the batch axis: a view (the NDArray made of it is the copy)."""
        return array[(slice(None),) * self.batch_axis + (slice(start, stop),)]

    def _batchify(self, source: list[tuple[str, np.ndarray]], which: int) -> list[np.ndarray]:
        """The current batch's rows of every array of ``source`` (which: 0 data, 1 label)."""
        axis = self.batch_axis
        if self.last_batch_handle == "roll_over" and -self.batch_size < self.cursor < 0:
            if self._carry is None:
                raise ParamError("NDArrayIter: roll_over batch without held-back rows; call reset")
            carried = self._carry[which]
            stop = self.cursor + self.batch_size
            return [
                np.concatenate([head, self._rows(array, 0, stop)], axis=axis)
                for head, (_, array) in zip(carried, source)
            ]
        end = self.cursor + self.batch_size
        if self.last_batch_handle == "pad" and end > self.num_data:
            # filler: the epoch's first rows, cyclically when the batch is longer than the data
            filler = np.arange(end - self.num_data) % self.num_data
            return [
                np.concatenate(
                    [
                        self._rows(array, self.cursor, self.num_data),
                        np.take(array, filler, axis=axis),
                    ],
                    axis=axis,
                )
                for _, array in source
            ]
        return [self._rows(array, self.cursor, min(end, self.num_data)) for _, array in source]

    def getdata(self) -> list[NDArray]:
        """The data arrays of the current batch."""
        rows = self._batchify(self._data, 0)
        return [self._to_nd(name, r) for (name, _), r in zip(self._data, rows)]

    def getlabel(self) -> list[NDArray]:
        """The label arrays of the current batch."""
        rows = self._batchify(self._label, 1)
        return [self._to_nd(name, r) for (name, _), r in zip(self._label, rows)]

    def getpad(self) -> int:
        """Filler rows in the current batch ('pad'), or rows carried over ('roll_over')."""
        if self.last_batch_handle == "pad" and self.cursor + self.batch_size > self.num_data:
            return self.cursor + self.batch_size - self.num_data
        if self.last_batch_handle == "roll_over" and -self.batch_size < self.cursor < 0:
            return -self.cursor
        return 0
