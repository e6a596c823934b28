"""``ImageIter``: the Python image iterator — records or image files, any augmenter list.

Idea (MXNet: ``mx.image.ImageIter``): where ``ImageRecordIter`` is the fixed,
fast pipeline, ``ImageIter`` takes any list of augmenters. Its images come
from a ``.rec`` (with ``.idx`` for shuffling and sharding), or from a ``.lst``
file / ``imglist`` of (label, path) under ``path_root``.

Rule: each image is decoded to RGB, run through ``aug_list`` (default
``CreateAugmenter(data_shape, **kwargs)``) and transposed to CHW.
``last_batch_handle`` 'pad' completes a short last batch from the start
(``pad`` counts the borrowed rows), 'discard' drops it.

State kept: ``_items`` (rec keys or (label, path) pairs, this part's share),
``_order``, ``cursor``.

Example::

    >>> import mxnb as mx
    >>> it = mx.image.ImageIter(4, (3, 8, 8), path_imgrec='tests/io/data/images.rec',
    ...                         path_imgidx='tests/io/data/images.idx')  # doctest: +SKIP
    >>> it.next().data[0].shape  # doctest: +SKIP
    (4, 3, 8, 8)
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..base import FormatError, NotSupportedError, ParamError
from ..io.base import (
    DataBatch,
    DataDesc,
    DataIter,
    check_batch_size,
    check_example_shape,
    check_parts,
    image_descs,
    round_batch_rows,
)
from ..ndarray import array as nd_array
from ..recordio import MXIndexedRecordIO, MXRecordIO, record_offsets, unpack
from .augment import Augmenter, CreateAugmenter
from .codec import decode_rgb

__all__ = ["ImageIter", "list_entries", "read_list"]


def list_entries(path: str) -> list[tuple[int, np.ndarray, str]]:
    """The (index, labels, relative path) lines of an im2rec ``.lst`` file (index TAB labels TAB path).

    A line that is not UTF-8, has fewer than three fields, an index that is not
    an int or a label that is not a number is a ``FormatError`` naming the file
    and the line.
    """
    try:
        with open(path, "rb") as f:
            lines = f.read().split(b"\n")
    except OSError as exc:
        raise FormatError(f"image list {path!r} cannot be read: {exc}") from exc
    entries = []
    for number, raw in enumerate(lines, start=1):
        try:
            line = raw.decode("utf-8").strip()
        except UnicodeDecodeError as exc:
            raise FormatError(f"image list {path!r} line {number} is not UTF-8 ({exc})") from None
        if not line:
            continue
        fields = line.split("\t")
        try:
            if len(fields) < 3:
                raise ValueError("fewer than three fields")
            entries.append((int(fields[0]), np.array(fields[1:-1], np.float32), fields[-1]))
        except ValueError as exc:
            raise FormatError(
                f"image list {path!r} line {number} is not 'index<TAB>label(s)<TAB>path' "
                f"({exc}): {line[:80]!r}"
            ) from None
    return entries


def read_list(path: str) -> list[tuple[np.ndarray, str]]:
    """The (labels, relative path) entries of an im2rec ``.lst`` file (see :func:`list_entries`)."""
    return [(labels, relpath) for _, labels, relpath in list_entries(path)]


class ImageIter(DataIter):
    """Batches of augmented images from a ``.rec`` or an image list (MXNet's ``mx.image.ImageIter``)."""

    def __init__(
        self,
        batch_size: int,
        data_shape: Sequence[int],
        label_width: int = 1,
        path_imgrec: str | None = None,
        path_imglist: str | None = None,
        path_root: str = "",
        path_imgidx: str | None = None,
        shuffle: bool = False,
        part_index: int = 0,
        num_parts: int = 1,
        aug_list: Sequence[Augmenter] | None = None,
        imglist: Sequence[tuple] | None = None,
        data_name: str = "data",
        label_name: str = "softmax_label",
        last_batch_handle: str = "pad",
        **kwargs: Any,
    ) -> None:
        super().__init__(check_batch_size(batch_size, "ImageIter"))
        num_parts, part_index = check_parts(num_parts, part_index, "ImageIter")
        if last_batch_handle not in ("pad", "discard"):
            raise NotSupportedError(
                f"ImageIter: last_batch_handle {last_batch_handle!r} is not supported; "
                "use 'pad' or 'discard'"
            )
        self.data_shape = check_example_shape(data_shape, "ImageIter", "data_shape")
        self.label_width = label_width
        self.shuffle = shuffle
        self.last_batch_handle = last_batch_handle
        self.auglist = (
            list(aug_list) if aug_list is not None else CreateAugmenter(data_shape, **kwargs)
        )
        self._names = (data_name, label_name)
        self._record: MXRecordIO | None = None
        self.path_root = path_root
        items = self._items_of(path_imgrec, path_imgidx, path_imglist, imglist, shuffle, num_parts)
        begin, end = (
            len(items) * part_index // num_parts,
            len(items) * (part_index + 1) // num_parts,
        )
        self._items = items[begin:end]
        self._order = np.arange(len(self._items))
        self.cursor = 0
        self.reset()

    def _items_of(
        self,
        path_imgrec: str | None,
        path_imgidx: str | None,
        path_imglist: str | None,
        imglist: Sequence[tuple] | None,
        shuffle: bool,
        num_parts: int,
    ) -> list[Any]:
        """The images to read: record keys or offsets (opening the record file), or list items."""
        if path_imgrec is not None:
            if path_imgidx is not None:
                self._record = MXIndexedRecordIO(path_imgidx, path_imgrec, "r")
                return list(self._record.keys)
            if shuffle or num_parts > 1:
                raise ParamError("ImageIter: shuffle and num_parts need path_imgidx")
            self._record = MXRecordIO(path_imgrec, "r")
            return record_offsets(path_imgrec)
        if path_imglist is not None:
            return read_list(path_imglist)
        if imglist is not None:
            return [(np.atleast_1d(np.asarray(label, np.float32)), path) for label, path in imglist]
        raise ParamError("ImageIter: give path_imgrec, path_imglist or imglist")

    @property
    def provide_data(self) -> list[DataDesc]:
        """The image batch: (batch_size, C, H, W) float32."""
        return image_descs(self._names, self.batch_size, self.data_shape, self.label_width)[0]

    @property
    def provide_label(self) -> list[DataDesc]:
        """The labels: (batch_size,) or (batch_size, label_width)."""
        return image_descs(self._names, self.batch_size, self.data_shape, self.label_width)[1]

    def reset(self) -> None:
        """Next epoch (reshuffled with numpy's global generator when ``shuffle``)."""
        if self.shuffle:
            np.random.shuffle(self._order)
        self.cursor = 0

    def _read(self, item: Any) -> tuple[np.ndarray, bytes, str]:
        """(labels, encoded image, what to name in an error) of one item."""
        if isinstance(self._record, MXIndexedRecordIO):
            header, payload = unpack(self._record.read_idx(item))
            return np.atleast_1d(np.asarray(header.label, np.float32)), payload, f"record {item}"
        if self._record is not None:
            self._record.handle.seek(item)
            header, payload = unpack(self._record.read())
            return np.atleast_1d(np.asarray(header.label, np.float32)), payload, f"byte {item}"
        label, path = item
        try:
            with open(os.path.join(self.path_root, path), "rb") as f:
                return label, f.read(), f"image {path!r}"
        except OSError as exc:
            raise FormatError(
                f"ImageIter: image {path!r} of the list cannot be read under path_root "
                f"{self.path_root!r}: {exc}"
            ) from exc

    def next(self) -> DataBatch:
        """The next batch of augmented images."""
        total = len(self._items)
        if self.cursor >= total or (
            self.last_batch_handle == "discard" and self.cursor + self.batch_size > total
        ):
            raise StopIteration
        rows, pad = round_batch_rows(self.cursor, total, self.batch_size, True)
        self.cursor += self.batch_size
        data = np.zeros((self.batch_size, *self.data_shape), np.float32)
        label = np.zeros((self.batch_size, self.label_width), np.float32)
        for i, row in enumerate(rows):
            labels, payload, what = self._read(self._items[self._order[row]])
            try:
                img = decode_rgb(payload, 1 if self.data_shape[0] == 3 else 0)
            except FormatError as exc:
                raise FormatError(f"ImageIter: {what} cannot be decoded: {exc}") from exc
            for aug in self.auglist:
                img = aug.apply(img)
            if img.shape[:2] != self.data_shape[1:]:
                raise FormatError(
                    f"ImageIter: {what} is {img.shape[:2]} after augmentation but data_shape "
                    f"needs {self.data_shape[1:]}; add a crop or resize augmenter"
                )
            data[i] = img.transpose(2, 0, 1)
            label[i] = labels[: self.label_width]
        if self.label_width == 1:
            label = label[:, 0]
        return DataBatch([nd_array(data)], [nd_array(label)], pad=pad)
