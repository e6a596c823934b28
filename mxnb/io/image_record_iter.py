"""``ImageRecordIter``: decode, augment and batch the images of a RecordIO file, prefetched on the engine.

Idea (MXNet: src/io/iter_image_recordio_2.cc): the record offsets of a
``.rec`` file (from its ``.idx``, or one sequential scan) are the dataset;
each batch reads its records, decodes and augments them with Pillow on
``preprocess_threads`` threads (decoding releases the GIL) and stacks them
into a (batch, C, H, W) float32 array. Batches are produced by an
:class:`~mxnb.io.EnginePrefetcher`: loading batch k+1 is an engine op on the
copy lane while batch k trains.

Rule, per image (MXNet's default augmenter): decode (RGB, or grey for C=1);
``resize`` > 0 resizes the shorter edge to it; an image smaller than
``data_shape`` is resized up to cover it (as MXNet does); crop (H, W) at the
centre, or at random with ``rand_crop``; mirror with probability 1/2 with
``rand_mirror``; then ``(pixel - mean) / std * scale`` per channel.
Batches follow MXNet's ``round_batch``: a short last batch is completed from
the start and the next epoch begins after the borrowed records. Without
``round_batch`` the filler rows are zeros and ``pad`` counts them (MXNet 1.9.1
reports pad 0 there and leaves stale memory: a silent wrong batch we avoid).
``num_parts`` / ``part_index`` give each worker a contiguous share of the
records (MXNet splits by bytes; with equal-size records it is the same).
``shuffle`` permutes the records every epoch from ``seed`` and the epoch number;
random crops and mirrors come from ``seed``, the epoch and the record's place,
so a run is reproducible whatever the thread count.

State kept:
    _offsets     byte offset of each record of this part, in file order
    _order       this epoch's record order; _cursor, _carry: the batch stream
    _prefetcher  the engine prefetcher; _pool: the decode threads

Example::

    >>> import mxnb as mx
    >>> it = mx.io.ImageRecordIter(path_imgrec='tests/io/data/images.rec',
    ...                            data_shape=(3, 8, 8), batch_size=4)  # doctest: +SKIP
    >>> it.next().data[0].shape  # doctest: +SKIP
    (4, 3, 8, 8)
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

from ..base import FormatError, ParamError
from ..image.augment import resize_short
from ..image.codec import decode_rgb, resize_np
from ..ndarray import array as nd_array
from ..recordio import MXIndexedRecordIO, MXRecordIO, record_offsets, unpack
from .base import (
    DataBatch,
    DataDesc,
    DataIter,
    check_batch_size,
    check_example_shape,
    check_parts,
    image_descs,
    round_batch_rows,
)
from .prefetch import EnginePrefetcher

__all__ = ["ImageRecordIter"]


def _record_offsets(path_imgrec: str, path_imgidx: str | None) -> tuple[list[int], list[Any]]:
    """Offsets and keys of every record: from the index, else by one scan of the file."""
    if path_imgidx:
        index = MXIndexedRecordIO(path_imgidx, path_imgrec, "r")
        offsets = [index.idx[key] for key in index.keys]
        keys = list(index.keys)
        index.close()
        return offsets, keys
    offsets = record_offsets(path_imgrec)
    return offsets, list(range(len(offsets)))


def _part_records(
    path_imgrec: str, path_imgidx: str | None, num_parts: Any, part_index: Any
) -> tuple[list[int], list[Any]]:
    """The record offsets and keys of part ``part_index`` of ``num_parts`` (checked, never empty)."""
    num_parts, part_index = check_parts(num_parts, part_index, "ImageRecordIter")
    offsets, keys = _record_offsets(path_imgrec, path_imgidx)
    begin = len(offsets) * part_index // num_parts
    end = len(offsets) * (part_index + 1) // num_parts
    if begin == end:
        raise FormatError(
            f"ImageRecordIter: {path_imgrec!r} part {part_index} of {num_parts} has no records"
        )
    return offsets[begin:end], keys[begin:end]


class ImageRecordIter(DataIter):
    """Image batches from a RecordIO file (MXNet's ``mx.io.ImageRecordIter``); see the module docstring."""

    def __init__(
        self,
        path_imgrec: str,
        data_shape: Sequence[int],
        batch_size: int,
        path_imgidx: str | None = None,
        label_width: int = 1,
        shuffle: bool = False,
        seed: int = 0,
        mean_r: float = 0.0,
        mean_g: float = 0.0,
        mean_b: float = 0.0,
        std_r: float = 1.0,
        std_g: float = 1.0,
        std_b: float = 1.0,
        scale: float = 1.0,
        resize: int = -1,
        rand_crop: bool = False,
        rand_mirror: bool = False,
        preprocess_threads: int = 4,
        round_batch: bool = True,
        num_parts: int = 1,
        part_index: int = 0,
        prefetch_buffer: int = 2,
        inter_method: int = 1,
        data_name: str = "data",
        label_name: str = "softmax_label",
    ) -> None:
        super().__init__(check_batch_size(batch_size, "ImageRecordIter"))
        self.data_shape = check_example_shape(data_shape, "ImageRecordIter", "data_shape")
        if len(self.data_shape) != 3 or self.data_shape[0] not in (1, 3):
            raise ParamError(
                f"ImageRecordIter: data_shape must be (channels, height, width) with 1 or 3 "
                f"channels, got {tuple(data_shape)}"
            )
        self.path_imgrec = os.fspath(path_imgrec)
        self._offsets, self._keys = _part_records(
            self.path_imgrec, path_imgidx, num_parts, part_index
        )
        self.label_width = int(label_width)
        self.shuffle, self.seed = shuffle, int(seed)
        channels = self.data_shape[0]
        self._mean = np.array([mean_r, mean_g, mean_b][:channels], np.float32)[:, None, None]
        self._std = np.array([std_r, std_g, std_b][:channels], np.float32)[:, None, None]
        self.scale = np.float32(scale)
        self._factor = self.scale / self._std  # (pixel - mean) / std * scale, as one multiply
        self._normalise = bool(np.any(self._mean) or np.any(self._factor != 1))
        self.resize, self.inter_method = int(resize), int(inter_method)
        self.rand_crop, self.rand_mirror = rand_crop, rand_mirror
        self.round_batch = round_batch
        self._names = (data_name, label_name)
        self._pool = ThreadPoolExecutor(max(1, int(preprocess_threads)), "ImageRecordIter")
        self._epoch = 0
        self._cursor = 0
        self._carry = 0
        self._order = self._epoch_order()
        self._reader = MXRecordIO(self.path_imgrec, "r")
        self._prefetcher = EnginePrefetcher(
            self._produce,
            "ImageRecordIter",
            prefetch_buffer,
            snapshot=lambda: (self._cursor, self._carry),
        )

    @property
    def provide_data(self) -> list[DataDesc]:
        """The image batch: (batch_size, C, H, W) float32."""
        return image_descs(self._names, self.batch_size, self.data_shape, self.label_width)[0]

    @property
    def provide_label(self) -> list[DataDesc]:
        """The labels: (batch_size,) or (batch_size, label_width)."""
        return image_descs(self._names, self.batch_size, self.data_shape, self.label_width)[1]

    @property
    def num_records(self) -> int:
        """Records in this part of the file."""
        return len(self._offsets)

    def _epoch_order(self) -> np.ndarray:
        if not self.shuffle:
            return np.arange(len(self._offsets))
        return np.random.RandomState((self.seed, self._epoch)).permutation(len(self._offsets))

    # -- one image ------------------------------------------------------------------------------

    def _load(self, record: bytes, position: int, place: int, out: np.ndarray) -> np.ndarray:
        """Decode and augment one record into ``out`` (C, H, W); return its labels.

        Runs on a decode thread; Pillow and numpy release the GIL for the heavy parts.
        """
        key, offset = self._keys[position], self._offsets[position]
        try:
            header, payload = unpack(record)
            img = decode_rgb(payload, 1 if self.data_shape[0] == 3 else 0)
        except FormatError as exc:
            raise FormatError(
                f"ImageRecordIter: record {key} (byte {offset}) of {self.path_imgrec!r} "
                f"cannot be decoded: {exc}"
            ) from exc
        label = np.atleast_1d(np.asarray(header.label, np.float32))
        if label.size < self.label_width:
            raise FormatError(
                f"ImageRecordIter: record {key} of {self.path_imgrec!r} has {label.size} "
                f"label(s) but label_width={self.label_width}"
            )
        rng = np.random.RandomState((self.seed, self._epoch, place))
        out[...] = self._augment(img, rng).transpose(2, 0, 1)
        if self._normalise:
            out -= self._mean
            out *= self._factor
        return label[: self.label_width]

    def _augment(self, img: np.ndarray, rng: np.random.RandomState) -> np.ndarray:
        """Resize, crop and mirror an HWC uint8 image (MXNet's default augmenter)."""
        _, height, width = self.data_shape
        if self.resize > 0:
            img = resize_short(img, self.resize, self.inter_method)
        h, w = img.shape[:2]
        if h < height or w < width:  # MXNet resizes a small image up to cover the crop
            img = resize_np(img, max(w, width), max(h, height), self.inter_method)
            h, w = img.shape[:2]
        if self.rand_crop:
            y0, x0 = rng.randint(0, h - height + 1), rng.randint(0, w - width + 1)
        else:
            y0, x0 = (h - height) // 2, (w - width) // 2
        img = img[y0 : y0 + height, x0 : x0 + width]
        if self.rand_mirror and rng.random_sample() < 0.5:
            img = img[:, ::-1]
        return img

    # -- one batch ------------------------------------------------------------------------------

    def _produce(self) -> DataBatch:
        """Read, decode and stack the next batch (runs inside an engine op)."""
        total = len(self._offsets)
        if self._cursor >= total:
            raise StopIteration
        places, pad = round_batch_rows(self._cursor, total, self.batch_size, self.round_batch)
        if pad and self.round_batch:
            self._carry = pad
        self._cursor += self.batch_size
        positions = self._order[places]
        records = []
        for position in positions:
            self._reader.handle.seek(self._offsets[position])
            records.append(self._reader.read())
        data = np.zeros((self.batch_size, *self.data_shape), np.float32)
        label = np.zeros((self.batch_size, self.label_width), np.float32)
        labels = self._pool.map(self._load, records, positions, places, data)
        for row, lab in enumerate(labels):
            label[row] = lab
        if self.label_width == 1:
            label = label[:, 0]
        return DataBatch(
            [nd_array(data)],
            [nd_array(label)],
            pad=pad,
            index=np.asarray([self._keys[p] for p in positions]),
            provide_data=self.provide_data,
            provide_label=self.provide_label,
        )

    def next(self) -> DataBatch:
        """The next prefetched batch; a record that fails to decode raises here, named."""
        return self._prefetcher.take()

    def reset(self) -> None:
        """Next epoch (after the borrowed records with round_batch); reshuffle."""
        self._prefetcher.drain()
        position = self._prefetcher.rewind_state()  # where the batches taken left the cursor
        if position is not None:
            self._cursor, self._carry = position
        self._epoch += 1
        self._cursor = self._carry % len(self._offsets) if self.round_batch else 0
        self._carry = 0
        self._order = self._epoch_order()
        self._prefetcher.restart()

    def close(self) -> None:
        """Stop prefetching, close the file and the decode threads."""
        self._prefetcher.close()
        self._reader.close()
        self._pool.shutdown(wait=True)

    def __del__(self) -> None:
        pool = getattr(self, "_pool", None)
        if pool is not None:
            pool.shutdown(wait=False)
