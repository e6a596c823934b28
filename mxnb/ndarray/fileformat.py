"""``mx.nd.save`` / ``mx.nd.load``: a small, safe, documented file format for arrays.

Idea: parameters are saved and shared; a file from someone else must never
be able to run code when loaded (no pickle), and a crash in the middle of a
save must never leave a truncated file under the final name.

The format (version 1), all integers little-endian::

    offset 0   8 bytes   magic  b"MXNBND\\x00\\x01"
    offset 8   8 bytes   uint64 H: length of the header
    offset 16  H bytes   header: UTF-8 JSON
                            {"format": "mxnb.ndarray", "version": 1,
                             "names": ["w", "b"] or null (a list was saved),
                             "arrays": [{"dtype": "float32", "shape": [2, 3],
                                         "offset": 0, "nbytes": 24, "crc32": 123}, ...]}
    offset 16+H          data: each array's raw bytes, C order, little-endian,
                         at ``offset`` from the start of the data section

Rule: loading checks the magic, the header's size, JSON and fields, every
dtype against mxnb's supported dtypes, every shape against ``nbytes``, every
range against the file size and every CRC-32, and raises
:class:`~mxnb.base.FormatError` naming the file and what is wrong.  Saving
is atomic (:mod:`mxnb.atomic_file`: a ``.partial`` file renamed over the
target, debris of killed saves removed by the next save, the mode ``open()``
would give).  The header's ranges must be disjoint and
inside the file, so what a file loads as never outweighs the file.

State kept: none.

Example::

    >>> import os, tempfile, mxnb as mx
    >>> path = os.path.join(tempfile.mkdtemp(), 'params.mxnb')
    >>> mx.nd.save(path, {'w': mx.nd.ones((2, 2))})
    >>> mx.nd.load(path)['w'].asnumpy().tolist()
    [[1.0, 1.0], [1.0, 1.0]]
"""

from __future__ import annotations

import itertools
import json
import math
import os
import struct
import zlib
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ..atomic_file import write_atomically
from ..base import SUPPORTED_DTYPES, FormatError, MXNBError
from ..context import Context
from . import mxnet_format
from .creation import array
from .ndarray import NDArray

__all__ = [
    "MAGIC",
    "VERSION",
    "NDArrayFileNotFoundError",
    "SaveTypeError",
    "load",
    "load_frombuffer",
    "save",
]

MAGIC = b"MXNBND\x00\x01"
VERSION = 1
_HEADER_LIMIT = 64 << 20  # a header larger than this is corrupt, not big
_SUPPORTED_NAMES = {dtype.name for dtype in SUPPORTED_DTYPES}
_MAX_NDIM = 32  # numpy 1.x's limit (2.x allows 64)


class NDArrayFileNotFoundError(MXNBError, FileNotFoundError):
    """``mx.nd.load`` was given a path that does not exist."""


class SaveTypeError(MXNBError, TypeError):
    """``mx.nd.save`` was given something other than NDArrays in a list or a str-keyed dict."""


def _collect(data: Any) -> tuple[list[str] | None, list[NDArray]]:
    if isinstance(data, NDArray):
        return None, [data]
    if isinstance(data, Mapping):
        names, arrays = [], []
        for key, value in data.items():
            if not isinstance(key, str):
                raise SaveTypeError(
                    f"save: dict keys must be str, got {type(key).__name__} {key!r}"
                )
            if not isinstance(value, NDArray):
                raise SaveTypeError(
                    f"save: value of {key!r} is a {type(value).__name__}, not an NDArray"
                )
            names.append(key)
            arrays.append(value)
        return names, arrays
    if isinstance(data, Sequence) and not isinstance(data, (str, bytes)):
        for index, value in enumerate(data):
            if not isinstance(value, NDArray):
                raise SaveTypeError(
                    f"save: item {index} is a {type(value).__name__}, not an NDArray"
                )
        return None, list(data)
    raise SaveTypeError(
        f"save: data must be an NDArray, a list of NDArrays or a dict of str -> NDArray, "
        f"got {type(data).__name__}"
    )


def save(fname: str | os.PathLike, data: Any) -> None:
    """Save an NDArray, a list of NDArrays or a dict ``str -> NDArray`` to ``fname``, atomically.

    Waits for pending writes to the arrays.  See the module docstring for the format.
    """
    names, arrays = _collect(data)
    blobs = [
        np.array(item.asnumpy(), order="C") for item in arrays
    ]  # (ascontiguousarray makes 0-d 1-d)
    entries = []
    offset = 0
    for blob in blobs:
        little = blob.astype(blob.dtype.newbyteorder("<"), copy=False)
        raw = little.tobytes()
        entries.append(
            {
                "dtype": blob.dtype.name,
                "shape": list(blob.shape),
                "offset": offset,
                "nbytes": len(raw),
                "crc32": zlib.crc32(raw),
            }
        )
        offset += len(raw)
    header = json.dumps(
        {"format": "mxnb.ndarray", "version": VERSION, "names": names, "arrays": entries},
        separators=(",", ":"),
    ).encode("utf-8")

    def chunks():
        yield MAGIC
        yield struct.pack("<Q", len(header))
        yield header
        for blob in blobs:
            yield blob.astype(blob.dtype.newbyteorder("<"), copy=False).tobytes()

    write_atomically(fname, chunks())


def _bad(path: str, message: str) -> FormatError:
    return FormatError(f"load {path!r}: {message}; the file is corrupt or not saved by mx.nd.save")


def load(
    fname: str | os.PathLike, ctx: Context | None = None
) -> list[NDArray] | dict[str, NDArray]:
    """Load what :func:`save` wrote: a list of NDArrays, or a dict when a dict was saved.

    MXNet's own binary ``.params`` files are read too (:mod:`.mxnet_format`).
    """
    path = os.fspath(fname)
    try:
        with open(path, "rb") as stream:
            content = stream.read()
    except FileNotFoundError:
        raise NDArrayFileNotFoundError(f"load: no such file {path!r}") from None
    except IsADirectoryError:
        raise NDArrayFileNotFoundError(
            f"load: {path!r} is a directory, not a file saved by mx.nd.save"
        ) from None
    return _load_bytes(path, content, ctx)


def load_frombuffer(
    buf: bytes | bytearray | memoryview, ctx: Context | None = None
) -> list[NDArray] | dict[str, NDArray]:
    """Load from the bytes of a file :func:`save` wrote (MXNet: ``mx.nd.load_frombuffer``)."""
    return _load_bytes("<buffer>", bytes(buf), ctx)


def _load_bytes(
    path: str, content: bytes, ctx: Context | None
) -> list[NDArray] | dict[str, NDArray]:
    if mxnet_format.is_mxnet_file(content):
        return mxnet_format.load(path, content, ctx)
    if len(content) < 16 or content[:8] != MAGIC:
        raise _bad(path, "it does not start with the mxnb magic bytes (nor MXNet's)")
    (header_len,) = struct.unpack("<Q", content[8:16])
    if header_len > _HEADER_LIMIT or 16 + header_len > len(content):
        raise _bad(
            path, f"header length {header_len} runs past the end of the file ({len(content)} bytes)"
        )
    header = _parse_header(path, content[16 : 16 + header_len])
    entries, names = header["arrays"], header.get("names")  # a list file has no names
    data = memoryview(content)[16 + header_len :]
    ranges = [_check_entry(path, index, entry, len(data)) for index, entry in enumerate(entries)]
    _check_disjoint(path, ranges)
    arrays = [_read_entry(path, index, entry, data, ctx) for index, entry in enumerate(entries)]
    if names is None:
        return arrays
    return dict(zip(names, arrays))


def _parse_header(path: str, raw: bytes) -> dict[str, Any]:
    """Decode the JSON header and check its top-level fields; every failure is a FormatError."""
    try:
        header = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        # ValueError covers JSONDecodeError and ints too long to convert;
        # RecursionError a header nested thousands of levels deep.
        reason = "nested too deeply" if isinstance(exc, RecursionError) else str(exc)
        raise _bad(path, f"the header is not valid JSON ({reason})") from None
    if not isinstance(header, dict) or header.get("format") != "mxnb.ndarray":
        raise _bad(path, "the header does not describe mxnb arrays")
    if header.get("version") != VERSION:
        raise _bad(
            path,
            f"format version {header.get('version')!r} is not supported (this mxnb reads {VERSION})",
        )
    entries = header.get("arrays")
    names = header.get("names")
    if not isinstance(entries, list):
        raise _bad(path, "field 'arrays' is missing from the header or is not a list")
    if names is not None and (
        not isinstance(names, list)
        or len(names) != len(entries)
        or not all(isinstance(n, str) for n in names)
    ):
        raise _bad(path, "field 'names' is not a list of strings as long as 'arrays'")
    if names is not None and len(set(names)) != len(names):
        raise _bad(path, "field 'names' holds the same name twice")
    return header


def _is_count(value: Any) -> bool:
    """A non-negative JSON integer (``True`` is an int to Python, not to us)."""
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _check_entry(path: str, index: int, entry: Any, data_size: int) -> tuple[int, int]:
    """Check one header entry's fields; return its byte range ``(offset, end)`` in the data.

    Sizes are computed with Python ints, so a shape like ``[2**62, 4]`` cannot
    wrap around to a small ``nbytes``.
    """
    if not isinstance(entry, dict):
        raise _bad(path, f"array {index}: entry is not an object")
    dtype_name = entry.get("dtype")
    if not isinstance(dtype_name, str) or dtype_name not in _SUPPORTED_NAMES:
        raise _bad(
            path,
            f"array {index}: dtype {dtype_name!r} (field 'dtype') is not one of "
            f"{sorted(_SUPPORTED_NAMES)}",
        )
    shape = entry.get("shape")
    if not isinstance(shape, list) or not all(_is_count(dim) for dim in shape):
        raise _bad(
            path, f"array {index}: field 'shape' {shape!r} is not a list of non-negative ints"
        )
    for field in ("offset", "nbytes", "crc32"):
        if not _is_count(entry.get(field)):
            raise _bad(path, f"array {index}: field {field!r} must be a non-negative int")
    if len(shape) > _MAX_NDIM:
        raise _bad(
            path, f"array {index}: field 'shape' has {len(shape)} dimensions (at most {_MAX_NDIM})"
        )
    itemsize = np.dtype(dtype_name).itemsize
    offset, nbytes = entry["offset"], entry["nbytes"]
    needed = math.prod(shape) * itemsize
    if needed != nbytes:
        raise _bad(
            path,
            f"array {index}: shape {tuple(shape)} of {dtype_name} does not take the {nbytes} "
            f"bytes of field 'nbytes' (it takes {needed})",
        )
    if mxnet_format.too_big_for_any_array(shape, itemsize):
        # numpy refuses such a shape even when a zero dimension makes it empty
        raise _bad(path, f"array {index}: field 'shape' {shape!r} is too big for any array")
    if offset + nbytes > data_size:
        raise _bad(
            path,
            f"array {index}: field 'offset' puts bytes {offset}..{offset + nbytes} past the end "
            f"of the data ({data_size} bytes)",
        )
    return offset, offset + nbytes


def _check_disjoint(path: str, ranges: list[tuple[int, int]]) -> None:
    """No two arrays may share bytes: so the arrays loaded never outweigh the file.

    Without this a small file whose entries all point at the same bytes would
    load as many times its size (a memory bomb).
    """
    order = sorted((start, end, index) for index, (start, end) in enumerate(ranges) if end > start)
    for (_, end, first), (start, _, second) in itertools.pairwise(order):
        if start < end:
            raise _bad(path, f"arrays {first} and {second} claim the same bytes of the data")


def _read_entry(
    path: str, index: int, entry: dict[str, Any], data: memoryview, ctx: Context | None
) -> NDArray:
    """Read one checked entry's bytes, verifying its CRC-32."""
    offset, nbytes, shape = entry["offset"], entry["nbytes"], entry["shape"]
    dtype = np.dtype(entry["dtype"]).newbyteorder("<")
    raw = data[offset : offset + nbytes]
    if zlib.crc32(raw) != entry["crc32"]:
        raise _bad(path, f"array {index}: CRC-32 mismatch (the data was altered or truncated)")
    values = np.frombuffer(raw, dtype=dtype).reshape(shape).astype(dtype.newbyteorder("="))
    return array(values, ctx=ctx, dtype=values.dtype)
