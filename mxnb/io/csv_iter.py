"""``CSVIter``: batches from comma-separated text files, one example per line.

Idea: the data file (and optionally a label file) is read once into float32
arrays of shape ``(lines,) + data_shape``; batches are cut from a stream
over those rows, as MXNet's C++ ``CSVIter`` + ``BatchLoader`` do.

Rule (``round_batch``, N lines, batch size B):
    True   (default) a short last batch is completed with lines from the start
           of the file; ``pad`` counts them, and the next epoch *begins after
           them* (the stream goes on where it stopped).
    False  a short last batch keeps the rows the previous batch left in the
           batch buffer (zeros at first); ``pad`` counts them; each epoch
           begins at line 0.
Without ``label_csv`` the label is zeros. A label of shape (1,) is handed out
as a vector (batch_size,).

State kept:
    _data, _label   float32 arrays of all rows
    _cursor         next row to read; _carry: rows the last epoch borrowed
    _buffer         the batch buffer reused by round_batch=False

MXNet: src/io/iter_csv.cc, src/io/iter_batchloader.h.

Example::

    >>> import mxnb as mx, os, pathlib, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), 'd.csv')
    >>> _ = pathlib.Path(path).write_text('1,2\\n3,4\\n5,6\\n')
    >>> it = mx.io.CSVIter(data_csv=path, data_shape=(2,), batch_size=2)
    >>> [(b.data[0].asnumpy().tolist(), b.pad) for b in it]
    [([[1.0, 2.0], [3.0, 4.0]], 0), ([[5.0, 6.0], [1.0, 2.0]], 1)]
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..base import FormatError
from ..ndarray import array as nd_array
from .base import (
    DataBatch,
    DataDesc,
    DataIter,
    check_batch_size,
    check_example_shape,
    round_batch_rows,
)

__all__ = ["CSVIter"]


def read_csv_rows(path: str, shape: tuple[int, ...], what: str) -> np.ndarray:
    """All lines of ``path`` as float32 rows reshaped to ``shape``; errors name the line."""
    width = math.prod(shape)
    rows = []
    try:
        with open(path, "rb") as f:
            lines = f.read().split(b"\n")
    except OSError as exc:
        raise FormatError(f"CSVIter: cannot read {what} {path!r}: {exc}") from exc
    for number, raw in enumerate(lines, start=1):
        try:
            text = raw.decode("utf-8").strip()
        except UnicodeDecodeError as exc:
            raise FormatError(
                f"CSVIter: {what} {path!r} line {number} is not UTF-8 text ({exc})"
            ) from None
        if not text:
            continue
        fields = text.split(",")
        if len(fields) != width:
            raise FormatError(
                f"CSVIter: {what} {path!r} line {number} has {len(fields)} values but "
                f"{what.split('_')[0]}_shape={shape} needs {width}; fix the line or the shape"
            )
        try:
            rows.append(np.array(fields, dtype=np.float32))  # no list of Python floats
        except ValueError as exc:
            raise FormatError(f"CSVIter: {what} {path!r} line {number}: {exc}") from exc
    return np.asarray(rows, dtype=np.float32).reshape((len(rows), *shape))


class CSVIter(DataIter):
    """Batches from CSV files (MXNet's ``mx.io.CSVIter``); see the module docstring.

    Parameters
    ----------
    data_csv : path of the data file; each line holds prod(data_shape) numbers.
    data_shape : shape of one example.
    label_csv : path of the label file (optional; zeros without it).
    label_shape : shape of one label, default (1,).
    batch_size : examples per batch.
    round_batch : complete a short last batch from the start and carry over (True).
    data_name, label_name : names in provide_data / provide_label.
    """

    def __init__(
        self,
        data_csv: str,
        data_shape: Sequence[int],
        label_csv: str | None = None,
        label_shape: Sequence[int] = (1,),
        batch_size: int = 1,
        round_batch: bool = True,
        data_name: str = "data",
        label_name: str = "softmax_label",
    ) -> None:
        super().__init__(check_batch_size(batch_size, "CSVIter"))
        data_shape = check_example_shape(data_shape, "CSVIter", "data_shape")
        label_shape = check_example_shape(label_shape, "CSVIter", "label_shape")
        self._data = read_csv_rows(data_csv, data_shape, "data_csv")
        if len(self._data) == 0:
            raise FormatError(f"CSVIter: data_csv {data_csv!r} has no rows")
        if label_csv is None:
            self._label = np.zeros((len(self._data),) + label_shape, np.float32)
        else:
            self._label = read_csv_rows(label_csv, label_shape, "label_csv")
            if len(self._label) != len(self._data):
                raise FormatError(
                    f"CSVIter: label_csv {label_csv!r} has {len(self._label)} rows but "
                    f"data_csv {data_csv!r} has {len(self._data)}"
                )
        if label_shape == (1,):
            self._label = self._label.reshape(len(self._label))
        self.round_batch = round_batch
        self._names = (data_name, label_name)
        self._buffer = (
            np.zeros((self.batch_size,) + self._data.shape[1:], np.float32),
            np.zeros((self.batch_size,) + self._label.shape[1:], np.float32),
        )
        self._cursor = 0
        self._carry = 0

    @property
    def provide_data(self) -> list[DataDesc]:
        """The data's name and batch shape."""
        return [DataDesc(self._names[0], (self.batch_size,) + self._data.shape[1:])]

    @property
    def provide_label(self) -> list[DataDesc]:
        """The label's name and batch shape."""
        return [DataDesc(self._names[1], (self.batch_size,) + self._label.shape[1:])]

    def reset(self) -> None:
        """Next epoch: after the borrowed rows with round_batch, else at line 0."""
        self._cursor = self._carry % len(self._data) if self.round_batch else 0
        self._carry = 0

    def _snapshot(self) -> Any:
        """The cursor and the rows borrowed by a rounded batch: all ``reset`` reads."""
        return (self._cursor, self._carry)

    def _restore(self, snapshot: Any) -> None:
        self._cursor, self._carry = snapshot

    def next(self) -> DataBatch:
        """The next batch; ``StopIteration`` when the file is used up."""
        total = len(self._data)
        if self._cursor >= total:
            raise StopIteration
        rows, pad = round_batch_rows(self._cursor, total, self.batch_size, self.round_batch)
        data, label = self._buffer  # round_batch=False: filler rows keep the previous batch's
        data[: len(rows)] = self._data[rows]
        label[: len(rows)] = self._label[rows]
        if pad and self.round_batch:
            self._carry = pad
        self._cursor += self.batch_size
        return DataBatch(
            data=[nd_array(data)],
            label=[nd_array(label)],
            pad=pad,
            index=None,
            provide_data=self.provide_data,
            provide_label=self.provide_label,
        )
