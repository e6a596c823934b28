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
writes to a temporary file in the same directory, flushes and fsyncs it,
then renames it over the final name (atomic on POSIX and Windows).

State kept: none.

Example::

    >>> import os, tempfile, mxnb as mx
    >>> path = os.path.join(tempfile.mkdtemp(), 'params.mxnb')
    >>> mx.nd.save(path, {'w': mx.nd.ones((2, 2))})
    >>> mx.nd.load(path)['w'].asnumpy().tolist()
    [[1.0, 1.0], [1.0, 1.0]]
"""

from __future__ import annotations

import json
import os
import struct
import tempfile
import zlib
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ..base import SUPPORTED_DTYPES, FormatError, MXNBError
from ..context import Context
from .creation import array
from .ndarray import NDArray

__all__ = ["MAGIC", "VERSION", "NDArrayFileNotFoundError", "SaveTypeError", "load", "save"]

MAGIC = b"MXNBND\x00\x01"
VERSION = 1
_HEADER_LIMIT = 64 << 20  # a header larger than this is corrupt, not big
_SUPPORTED_NAMES = {dtype.name for dtype in SUPPORTED_DTYPES}


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
    path = os.fspath(fname)
    directory = os.path.dirname(os.path.abspath(path))
    handle, temp_path = tempfile.mkstemp(prefix=".mxnb-save-", dir=directory)
    try:
        with os.fdopen(handle, "wb") as stream:
            stream.write(MAGIC)
            stream.write(struct.pack("<Q", len(header)))
            stream.write(header)
            for blob in blobs:
                stream.write(blob.astype(blob.dtype.newbyteorder("<"), copy=False).tobytes())
            stream.flush()
            os.fsync(stream.fileno())
        os.replace(temp_path, path)
    except BaseException:
        try:
            os.unlink(temp_path)
        except OSError:
            pass
        raise


def _bad(path: str, message: str) -> FormatError:
    return FormatError(f"load {path!r}: {message}; the file is corrupt or not saved by mx.nd.save")


def load(
    fname: str | os.PathLike, ctx: Context | None = None
) -> list[NDArray] | dict[str, NDArray]:
    """Load what :func:`save` wrote: a list of NDArrays, or a dict when a dict was saved."""
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
    if len(content) < 16 or content[:8] != MAGIC:
        if content[:8] == b"\x12\x01\x00\x00\x00\x00\x00\x00":
            raise _bad(path, "this is MXNet's own binary .params format, which mxnb does not read")
        raise _bad(path, "it does not start with the mxnb magic bytes")
    (header_len,) = struct.unpack("<Q", content[8:16])
    if header_len > _HEADER_LIMIT or 16 + header_len > len(content):
        raise _bad(
            path, f"header length {header_len} runs past the end of the file ({len(content)} bytes)"
        )
    try:
        header = json.loads(content[16 : 16 + header_len].decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise _bad(path, f"the header is not valid JSON ({exc})") from None
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
        raise _bad(path, "'arrays' is missing from the header")
    if names is not None and (
        not isinstance(names, list)
        or len(names) != len(entries)
        or not all(isinstance(n, str) for n in names)
    ):
        raise _bad(path, "'names' does not match 'arrays'")
    data = memoryview(content)[16 + header_len :]
    arrays = [_read_entry(path, index, entry, data, ctx) for index, entry in enumerate(entries)]
    if names is None:
        return arrays
    return dict(zip(names, arrays))


def _read_entry(
    path: str, index: int, entry: Any, data: memoryview, ctx: Context | None
) -> NDArray:
    if not isinstance(entry, dict):
        raise _bad(path, f"array {index}: entry is not an object")
    dtype_name = entry.get("dtype")
    if dtype_name not in _SUPPORTED_NAMES:
        raise _bad(
            path, f"array {index}: dtype {dtype_name!r} is not one of {sorted(_SUPPORTED_NAMES)}"
        )
    shape = entry.get("shape")
    if not isinstance(shape, list) or not all(isinstance(dim, int) and dim >= 0 for dim in shape):
        raise _bad(path, f"array {index}: shape {shape!r} is not a list of non-negative ints")
    offset, nbytes, crc = entry.get("offset"), entry.get("nbytes"), entry.get("crc32")
    if not all(isinstance(value, int) and value >= 0 for value in (offset, nbytes, crc)):
        raise _bad(path, f"array {index}: offset / nbytes / crc32 must be non-negative ints")
    dtype = np.dtype(dtype_name).newbyteorder("<")
    if int(np.prod(shape, dtype=np.int64)) * dtype.itemsize != nbytes:
        raise _bad(
            path,
            f"array {index}: shape {tuple(shape)} of {dtype_name} does not take {nbytes} bytes",
        )
    if offset + nbytes > len(data):
        raise _bad(
            path, f"array {index}: bytes {offset}..{offset + nbytes} run past the end of the data"
        )
    raw = data[offset : offset + nbytes]
    if zlib.crc32(raw) != crc:
        raise _bad(path, f"array {index}: CRC-32 mismatch (the data was altered or truncated)")
    values = np.frombuffer(raw, dtype=dtype).reshape(shape).astype(dtype.newbyteorder("="))
    return array(values, ctx=ctx, dtype=values.dtype)
