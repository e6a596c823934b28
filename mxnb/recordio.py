"""RecordIO: MXNet's record file format, byte for byte, and its image record header.

Idea (dmlc-core ``recordio.h``, MXNet's ``python/mxnet/recordio.py``): a
``.rec`` file is a sequence of records; each record is one or more *parts*::

    uint32 magic = 0xced7230a | uint32 lrec = cflag << 29 | length | data | zero pad to 4 bytes

(little endian). ``cflag`` 0 is a whole record. A payload that holds the magic
number at a 4-byte aligned offset is cut there, the magic word itself left
out: the first part has cflag 1, middle parts 2, the last part 3, and the
reader puts a magic word back between the parts. So a reader that syncs on
the magic number can never be fooled by payload bytes. ``.idx`` is a text
file of ``key<TAB>byte offset`` lines, one per record (MXIndexedRecordIO).

An image record payload starts with ``IRHeader`` packed as ``struct 'IfQQ'``
(flag, label, id, id2); ``flag`` > 0 means ``flag`` float32 labels follow the
header (multi-label) and the ``label`` field is 0.

Rule: bad magic, a truncated record, continuation flags out of order, a
missing ``.idx``, one that is not ``key<TAB>offset`` UTF-8 lines, repeats a
key or an offset, or whose offset does not start a record raise ``FormatError`` naming the file and
byte offset (or line); a record's declared length is checked against the
file before it is read, so no file makes the reader allocate more than it
holds.

State kept (MXRecordIO): ``uri``, ``flag`` ('r' / 'w'), the open file;
MXIndexedRecordIO adds ``idx`` (key -> offset) and ``keys`` (in file order).

Example::

    >>> import mxnb as mx, os, tempfile
    >>> d = tempfile.mkdtemp()
    >>> w = mx.recordio.MXIndexedRecordIO(os.path.join(d, 'x.idx'), os.path.join(d, 'x.rec'), 'w')
    >>> w.write_idx(7, mx.recordio.pack(mx.recordio.IRHeader(0, 3.0, 7, 0), b'payload')); w.close()
    >>> r = mx.recordio.MXIndexedRecordIO(os.path.join(d, 'x.idx'), os.path.join(d, 'x.rec'), 'r')
    >>> mx.recordio.unpack(r.read_idx(7))
    (HEADER(flag=0, label=3.0, id=7, id2=0), b'payload')
"""

from __future__ import annotations

import io
import numbers
import os
import struct
from collections import namedtuple
from typing import Any

import numpy as np

from .atomic_file import AtomicFile
from .base import FormatError

__all__ = [
    "IRHeader",
    "MXIndexedRecordIO",
    "MXRecordIO",
    "pack",
    "pack_img",
    "record_offsets",
    "unpack",
    "unpack_img",
]

MAGIC = 0xCED7230A
_MAGIC_BYTES = struct.pack("<I", MAGIC)
_LENGTH_MASK = (1 << 29) - 1
_WHOLE, _FIRST, _MIDDLE, _LAST = 0, 1, 2, 3


def _aligned(length: int) -> int:
    return (length + 3) & ~3


class MXRecordIO:
    """Read or write a RecordIO file sequentially (MXNet's ``mx.recordio.MXRecordIO``).

    Parameters
    ----------
    uri : path of the ``.rec`` file.
    flag : 'r' to read, 'w' to write (atomically: the file is replaced at close()).
    """

    def __init__(self, uri: str | os.PathLike, flag: str) -> None:
        self.uri = os.fspath(uri)
        self.flag = flag
        self.handle: Any = None
        self.is_open = False
        self.open()

    @property
    def writable(self) -> bool:
        """True when opened with 'w'."""
        return self.flag == "w"

    def open(self) -> None:
        """Open the file (done by the constructor)."""
        if self.flag not in ("r", "w"):
            raise ValueError(f"MXRecordIO: flag must be 'r' or 'w', got {self.flag!r}")
        try:
            if self.writable:  # the file appears whole at close(), never half-written
                self.handle = AtomicFile(self.uri)
            else:
                self.handle = open(self.uri, "rb")  # noqa: SIM115 - kept open across calls
        except OSError as exc:
            raise FormatError(f"RecordIO: cannot open {self.uri!r}: {exc}") from exc
        self._size = None if self.writable else os.fstat(self.handle.fileno()).st_size
        self.is_open = True

    def close(self) -> None:
        """Close the file (flushes what was written)."""
        if self.is_open:
            self.handle.close()
            self.is_open = False

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # noqa: BLE001, S110 - interpreter shutdown
            pass

    def __enter__(self) -> MXRecordIO:  # noqa: PYI034
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def reset(self) -> None:
        """Back to the first record (reopens the file; 'w' forgets what was written)."""
        self._discard()
        self.close()
        self.open()

    def _discard(self) -> None:
        """'w': drop the records written since open (the file keeps its old content)."""
        if self.is_open and self.writable:
            self.handle.discard()

    def tell(self) -> int:
        """The current byte offset: where the next record is read or written."""
        return self.handle.tell()

    def write(self, buf: bytes) -> None:
        """Append one record, split around aligned magic words as dmlc-core does."""
        if not self.writable:
            raise FormatError(f"RecordIO: {self.uri!r} is open for reading, not writing")
        buf = bytes(buf)
        length = len(buf)
        if length >= 1 << 29:
            raise FormatError(f"RecordIO: a record holds < 2**29 bytes, got {length}")
        words = np.frombuffer(buf, dtype="<u4", count=length // 4)
        cuts = (np.flatnonzero(words == MAGIC) * 4).tolist()
        out = io.BytesIO()
        start = 0
        for cut in cuts:
            out.write(_MAGIC_BYTES)
            out.write(
                struct.pack("<I", ((_FIRST if start == 0 else _MIDDLE) << 29) | (cut - start))
            )
            out.write(buf[start:cut])
            start = cut + 4
        out.write(_MAGIC_BYTES)
        out.write(struct.pack("<I", ((_LAST if cuts else _WHOLE) << 29) | (length - start)))
        out.write(buf[start:])
        out.write(b"\0" * (_aligned(length) - length))
        self.handle.write(out.getvalue())

    def read(self) -> bytes | None:
        """The next record, or None at the end of the file."""
        if self.writable:
            raise FormatError(f"RecordIO: {self.uri!r} is open for writing, not reading")
        start = self.handle.tell()
        parts = []
        while True:
            offset = self.handle.tell()
            head = self.handle.read(8)
            if not head and not parts:
                return None
            if len(head) < 8:
                raise FormatError(
                    f"RecordIO: {self.uri!r} is truncated at byte {offset}: a record header "
                    f"needs 8 bytes, {len(head)} left (record starting at byte {start})"
                )
            magic, lrec = struct.unpack("<II", head)
            if magic != MAGIC:
                raise FormatError(
                    f"RecordIO: {self.uri!r} has no record at byte {offset}: found word "
                    f"0x{magic:08x}, expected the magic 0x{MAGIC:08x} (corrupt file, or an "
                    "offset that does not start a record)"
                )
            cflag, length = lrec >> 29, lrec & _LENGTH_MASK
            left = self._size - offset - 8
            if _aligned(length) > left:  # checked before reading: no buffer larger than the file
                padded = (
                    ""
                    if _aligned(length) == length
                    else f", {_aligned(length)} with the padding to 4"
                )
                raise FormatError(
                    f"RecordIO: {self.uri!r} is truncated: the record part at byte {offset} "
                    f"declares {length} bytes{padded}, but only {max(left, 0)} follow"
                )
            if (cflag in (_WHOLE, _FIRST)) != (not parts) or cflag > _LAST:
                raise FormatError(
                    f"RecordIO: {self.uri!r} byte {offset}: continuation flag {cflag} out of "
                    f"order (record starting at byte {start}); expected "
                    f"{'0 or 1' if not parts else '2 or 3'}"
                )
            parts.append(self.handle.read(length))
            self.handle.seek(_aligned(length) - length, os.SEEK_CUR)
            if cflag in (_WHOLE, _LAST):
                return _MAGIC_BYTES.join(parts)


def record_offsets(uri: str | os.PathLike) -> list[int]:
    """The byte offset of every record of ``uri``, by one sequential scan (no ``.idx`` needed)."""
    offsets = []
    with MXRecordIO(uri, "r") as rec:
        while True:
            offset = rec.tell()
            if rec.read() is None:
                return offsets
            offsets.append(offset)


class MXIndexedRecordIO(MXRecordIO):
    """RecordIO with an ``.idx`` file for random access by key (MXNet's ``MXIndexedRecordIO``).

    Parameters
    ----------
    idx_path : path of the ``.idx`` file (``key<TAB>offset`` lines).
    uri : path of the ``.rec`` file.
    flag : 'r' or 'w'.
    key_type : how keys are parsed from the ``.idx`` file (int).
    """

    def __init__(
        self, idx_path: str | os.PathLike, uri: str | os.PathLike, flag: str, key_type: type = int
    ) -> None:
        self.idx_path = os.fspath(idx_path)
        self.key_type = key_type
        self.idx: dict[Any, int] = {}
        self.keys: list[Any] = []
        self.fidx: Any = None
        super().__init__(uri, flag)

    def open(self) -> None:
        """Open both files; in 'r' mode read the whole index."""
        super().open()
        self.idx = {}
        self.keys = []
        if self.writable:
            self.fidx = AtomicFile(self.idx_path, text=True)  # appears at close(), with the .rec
            return
        try:
            with open(self.idx_path, "rb") as f:
                lines = f.read().split(b"\n")
        except OSError as exc:
            raise FormatError(
                f"RecordIO: index {self.idx_path!r} for {self.uri!r} cannot be read ({exc}); "
                "make it again (im2rec) or read the .rec sequentially with MXRecordIO"
            ) from exc
        size = os.path.getsize(self.uri)
        line_of_offset: dict[int, int] = {}
        line_of_key: dict[Any, int] = {}
        for number, raw_line in enumerate(lines, start=1):
            line = raw_line.decode("utf-8", errors="replace")
            fields = line.strip().split("\t")
            if fields == [""]:
                continue
            try:
                if len(fields) != 2 or "\ufffd" in line:
                    raise ValueError(line)
                key, offset = self.key_type(fields[0]), int(fields[1])
            except (ValueError, TypeError) as exc:
                raise FormatError(
                    f"RecordIO: index {self.idx_path!r} line {number} is not 'key<TAB>offset': "
                    f"{line.strip()!r}"
                ) from exc
            if not 0 <= offset < size:
                raise FormatError(
                    f"RecordIO: index {self.idx_path!r} line {number} points at byte {offset} "
                    f"but {self.uri!r} has {size} bytes: the index is stale; make it again"
                )
            # a repeated key hides a record; two keys at one offset read one record twice
            if key in line_of_key:
                raise FormatError(
                    f"RecordIO: index {self.idx_path!r} line {number} repeats key {key!r} of line "
                    f"{line_of_key[key]}: the index is inconsistent; make it again"
                )
            if offset in line_of_offset:
                raise FormatError(
                    f"RecordIO: index {self.idx_path!r} line {number} points at byte {offset} "
                    f"like line {line_of_offset[offset]}: two keys for one record; the index is "
                    "inconsistent; make it again"
                )
            line_of_key[key] = line_of_offset[offset] = number
            self.idx[key] = offset
            self.keys.append(key)

    def close(self) -> None:
        """Close both files (written: the ``.rec`` first, then the ``.idx`` that points into it)."""
        super().close()
        if self.fidx is not None:
            self.fidx.close()
            self.fidx = None

    def _discard(self) -> None:
        if self.fidx is not None:
            self.fidx.discard()
            self.fidx = None
        super()._discard()

    def seek(self, idx: Any) -> None:
        """Move to the record with key ``idx``."""
        if idx not in self.idx:
            raise KeyError(f"RecordIO: key {idx!r} is not in index {self.idx_path!r}")
        self.handle.seek(self.idx[idx])

    def read_idx(self, idx: Any) -> bytes:
        """The record with key ``idx``."""
        self.seek(idx)
        try:
            record = self.read()
        except FormatError as exc:
            raise FormatError(
                f"{exc}; index {self.idx_path!r} says key {idx!r} is at byte {self.idx[idx]} "
                "(a stale index? make it again)"
            ) from exc
        if record is None:
            raise FormatError(
                f"RecordIO: index {self.idx_path!r} key {idx!r} points at byte "
                f"{self.idx[idx]}, the end of {self.uri!r}: the index is stale"
            )
        return record

    def write_idx(self, idx: Any, buf: bytes) -> None:
        """Append a record under key ``idx`` and note its offset in the index."""
        key = self.key_type(idx)
        offset = self.tell()
        self.write(buf)
        self.fidx.write(f"{key}\t{offset}\n")
        self.idx[key] = offset
        self.keys.append(key)


IRHeader = namedtuple("HEADER", ["flag", "label", "id", "id2"])
IRHeader.__doc__ = """Image record header: flag (label count when > 1 labels), label, id, id2."""
_IR_FORMAT = "IfQQ"
_IR_SIZE = struct.calcsize(_IR_FORMAT)


def pack(header: tuple, s: bytes) -> bytes:
    """Prefix ``s`` with ``header``; an array label goes after it as float32, flag = its size."""
    header = IRHeader(*header)
    if isinstance(header.label, numbers.Number):
        header = header._replace(flag=0)
    else:
        label = np.asarray(header.label, dtype=np.float32)
        header = header._replace(flag=label.size, label=0)
        s = label.tobytes() + bytes(s)
    return struct.pack(_IR_FORMAT, *header) + bytes(s)


def unpack(s: bytes) -> tuple[IRHeader, bytes]:
    """Split a packed record into its ``IRHeader`` (label an array when flag > 0) and payload."""
    if len(s) < _IR_SIZE:
        raise FormatError(
            f"recordio.unpack: a record needs a {_IR_SIZE}-byte IRHeader, got {len(s)} bytes"
        )
    header = IRHeader(*struct.unpack(_IR_FORMAT, s[:_IR_SIZE]))
    s = s[_IR_SIZE:]
    if header.flag * 4 > len(s):
        raise FormatError(
            f"recordio.unpack: the IRHeader's flag says {header.flag} float32 labels follow "
            f"but the record holds {len(s)} bytes after the header"
        )
    if header.flag > 0:
        header = header._replace(label=np.frombuffer(s, np.float32, header.flag))
        s = s[header.flag * 4 :]
    return header, s


def pack_img(header: tuple, img: np.ndarray, quality: int = 95, img_fmt: str = ".jpg") -> bytes:
    """Encode ``img`` (BGR or grey, as OpenCV and MXNet's pack_img take it) and ``pack`` it.

    ``quality`` is the JPEG quality (1-100) or the PNG compression level (0-9).
    """
    from .image.codec import encode_bgr

    return pack(header, encode_bgr(img, img_fmt, quality))


def unpack_img(s: bytes, iscolor: int = -1) -> tuple[IRHeader, np.ndarray]:
    """``unpack`` and decode the image: BGR (or grey with iscolor 0 / a grey file and -1)."""
    from .image.codec import decode_bgr

    header, payload = unpack(s)
    return header, decode_bgr(payload, iscolor)
