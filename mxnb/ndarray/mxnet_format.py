"""MXNet's own binary NDArray-list format (``.params`` files), read and written safely.

Idea (MXNet: ``NDArray::Save`` / ``NDArray::Load`` in src/ndarray/ndarray.cc and
``MXNDArraySave`` in src/c_api/c_api.cc): checkpoints written by MXNet are a
dmlc binary stream, so mxnb reads and writes the same bytes and checkpoints move
both ways.  All integers little-endian::

    uint64 0x112 (kMXAPINDArrayListMagic)     uint64 0 (reserved)
    uint64 N, then N arrays, each:
        uint32 magic 0xF993FAC9 (V2; V1 0xF993FAC8 has no storage type)
        int32  storage type (0: dense; anything else is refused)
        uint32 ndim, then ndim int64 dims       (ndim 0: an empty "none" array)
        int32  dev_type, int32 dev_id           (where it was saved; ignored on load)
        int32  type flag (0 f32, 1 f64, 2 f16, 3 u8, 4 i32, 5 i8, 6 i64)
        raw data, C order
    uint64 M (0 for a saved list, else N), then M names: uint64 length, bytes

Rule: every count, length and shape is checked against the bytes that remain
BEFORE anything is allocated, so no file can make the reader allocate more than
the file holds; nothing is unpickled; a bad file raises
:class:`~mxnb.base.FormatError` naming the file, the entry and what is wrong.
Writing is atomic (:mod:`mxnb.atomic_file`).

State kept: none.

Example::

    >>> import os, tempfile, mxnb as mx
    >>> from mxnb.ndarray import mxnet_format
    >>> path = os.path.join(tempfile.mkdtemp(), 'x.params')
    >>> mxnet_format.save(path, {'arg:w': mx.nd.ones((2,))})
    >>> mx.nd.load(path)['arg:w'].asnumpy().tolist()
    [1.0, 1.0]
"""

from __future__ import annotations

import os
import struct
from typing import Any

import numpy as np

from ..atomic_file import write_atomically
from ..base import FormatError
from ..context import Context
from .creation import array as nd_array
from .ndarray import NDArray

__all__ = [
    "LIST_MAGIC",
    "MAX_ARRAY_BYTES",
    "is_mxnet_file",
    "load",
    "save",
    "too_big_for_any_array",
]

LIST_MAGIC = 0x112
_V1_MAGIC = 0xF993FAC8
_V2_MAGIC = 0xF993FAC9
_V3_MAGIC = 0xF993FACA
_MAX_NDIM = 32
_TYPE_FLAGS = {
    0: np.dtype("float32"),
    1: np.dtype("float64"),
    2: np.dtype("float16"),
    3: np.dtype("uint8"),
    4: np.dtype("int32"),
    5: np.dtype("int8"),
    6: np.dtype("int64"),
}
_FLAG_OF = {dtype: flag for flag, dtype in _TYPE_FLAGS.items()}
_DEV_TYPES = {"cpu": 1, "gpu": 2, "cpu_pinned": 3, "cpu_shared": 5}
MAX_ARRAY_BYTES = 2**62  # numpy's bound is 2**63 - 1 bytes, counting only non-zero dimensions


def too_big_for_any_array(shape: Any, itemsize: int) -> bool:
    """True when numpy would refuse ``shape`` even empty: the product of its non-zero dimensions.

    Both file readers check it before allocating, so a shape like ``(0, 2**61)``
    is a :class:`FormatError` naming the file, not numpy's "array is too big".
    """
    size = 1
    for dim in shape:
        size *= dim or 1
    return size * itemsize > MAX_ARRAY_BYTES


def is_mxnet_file(content: bytes) -> bool:
    """True when ``content`` starts with MXNet's NDArray-list magic."""
    return len(content) >= 8 and struct.unpack("<Q", content[:8])[0] == LIST_MAGIC


class _Reader:
    """A cursor over the file's bytes; every read is bounds-checked."""

    def __init__(self, path: str, content: bytes) -> None:
        self.path = path
        self.data = memoryview(content)
        self.pos = 0

    def bad(self, message: str) -> FormatError:
        return FormatError(
            f"load {self.path!r}: {message} (at byte {self.pos} of {len(self.data)}); "
            "the file is corrupt or not an MXNet .params file"
        )

    @property
    def remaining(self) -> int:
        return len(self.data) - self.pos

    def take(self, count: int, what: str) -> memoryview:
        if count < 0 or count > self.remaining:
            raise self.bad(f"{what} needs {count} bytes but only {self.remaining} remain")
        chunk = self.data[self.pos : self.pos + count]
        self.pos += count
        return chunk

    def unpack(self, fmt: str, what: str) -> tuple:
        return struct.unpack(fmt, self.take(struct.calcsize(fmt), what))


def load(
    path: str, content: bytes, ctx: Context | None = None
) -> list[NDArray] | dict[str, NDArray]:
    """Parse MXNet's NDArray list in ``content`` (read from ``path``); see the module docstring."""
    reader = _Reader(path, content)
    magic, _reserved = reader.unpack("<QQ", "the header")
    if magic != LIST_MAGIC:
        raise reader.bad(f"magic {magic:#x} is not MXNet's NDArray-list magic 0x112")
    (count,) = reader.unpack("<Q", "the array count")
    # the smallest array entry (magic, stype, ndim 0) takes 12 bytes
    if count * 12 > reader.remaining:
        raise reader.bad(f"it claims {count} arrays, more than its size can hold")
    arrays = [_read_array(reader, index) for index in range(count)]
    (name_count,) = reader.unpack("<Q", "the name count")
    if name_count not in (0, count):
        raise reader.bad(f"it has {count} arrays but {name_count} names")
    if name_count * 8 > reader.remaining:
        raise reader.bad(f"it claims {name_count} names, more than its size can hold")
    names = []
    for index in range(name_count):
        (length,) = reader.unpack("<Q", f"the length of name {index}")
        raw = reader.take(length, f"name {index}")
        try:
            names.append(bytes(raw).decode("utf-8"))
        except UnicodeDecodeError:
            raise reader.bad(f"name {index} is not UTF-8") from None
    if reader.remaining:
        raise reader.bad(f"{reader.remaining} unexpected bytes follow the names")
    result = [nd_array(value, ctx=ctx, dtype=value.dtype) for value in arrays]
    if not names:
        return result
    if len(set(names)) != len(names):
        raise reader.bad("two arrays have the same name")
    return dict(zip(names, result))


def _read_array(reader: _Reader, index: int) -> np.ndarray:
    """One array entry as a numpy array (a copy of its bytes)."""
    what = f"array {index}"
    (magic,) = reader.unpack("<I", f"the magic of {what}")
    if magic not in (_V1_MAGIC, _V2_MAGIC, _V3_MAGIC):
        raise reader.bad(
            f"{what} has magic {magic:#x}; only MXNet's V1/V2/V3 NDArray formats are read "
            "(files from MXNet before 0.9 are not)"
        )
    if magic != _V1_MAGIC:
        (stype,) = reader.unpack("<i", f"the storage type of {what}")
        if stype != 0:
            raise reader.bad(
                f"{what} is sparse (storage type {stype}); mxnb reads dense arrays only"
            )
    (ndim,) = reader.unpack("<i" if magic == _V3_MAGIC else "<I", f"the ndim of {what}")
    if ndim <= 0 or ndim > _MAX_NDIM:
        raise reader.bad(
            f"{what} has ndim {ndim}; expected 1..{_MAX_NDIM} (empty arrays are refused)"
        )
    shape = reader.unpack(f"<{ndim}q", f"the shape of {what}")
    if any(dim < 0 for dim in shape):
        raise reader.bad(f"{what} has a negative dimension in shape {shape}")
    _dev_type, _dev_id, flag = reader.unpack("<iii", f"the context and dtype of {what}")
    dtype = _TYPE_FLAGS.get(flag)
    if dtype is None:
        raise reader.bad(f"{what} has type flag {flag}, which mxnb does not support")
    if too_big_for_any_array(shape, dtype.itemsize):
        raise reader.bad(f"{what} has shape {shape}, too big for any array")
    size = 1
    for dim in shape:
        size *= dim
        if size * dtype.itemsize > reader.remaining:
            raise reader.bad(f"{what} of shape {shape} {dtype} is larger than the rest of the file")
    raw = reader.take(size * dtype.itemsize, f"the data of {what}")
    return np.frombuffer(raw, dtype=dtype.newbyteorder("<")).astype(dtype).reshape(shape)


def save(fname: str | os.PathLike, data: Any) -> None:
    """Write an NDArray, a list or a str-keyed dict of NDArrays in MXNet's format, atomically."""
    from .fileformat import _collect

    path = os.fspath(fname)
    names, arrays = _collect(data)
    parts = [struct.pack("<QQQ", LIST_MAGIC, 0, len(arrays))]
    for item in arrays:
        value = item.asnumpy()
        flag = _FLAG_OF.get(value.dtype)
        if flag is None:
            raise FormatError(
                f"save {path!r}: MXNet's format has no type flag for dtype {value.dtype}"
            )
        if value.ndim == 0:
            value = value.reshape(1)  # MXNet's ndim 0 means "no array"
        dev_type = _DEV_TYPES.get(item.context.device_type, 1)
        parts.append(struct.pack("<IiI", _V2_MAGIC, 0, value.ndim))
        parts.append(struct.pack(f"<{value.ndim}q", *value.shape))
        parts.append(struct.pack("<iii", dev_type, item.context.device_id, flag))
        parts.append(np.ascontiguousarray(value, dtype=value.dtype.newbyteorder("<")).tobytes())
    parts.append(struct.pack("<Q", len(names or [])))
    for name in names or []:
        encoded = name.encode("utf-8")
        parts.append(struct.pack("<Q", len(encoded)))
        parts.append(encoded)
    write_atomically(path, parts)
