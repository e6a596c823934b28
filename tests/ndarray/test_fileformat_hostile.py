"""``mx.nd.load`` / ``mx.nd.save`` against hostile and careless files.

Specification:
* what a file loads as never outweighs the file: the header's byte ranges must
  be disjoint and inside the data, so entries cannot share bytes (a memory bomb);
* sizes are computed with Python ints, so a shape whose element count wraps
  around in int64 is refused by the size check, not somewhere later;
* every malformed header field is a :class:`FormatError` naming the file and
  the field, never an ``OverflowError``, ``TypeError``, ``RecursionError``;
* a save gives the file the usual mode (0644 under umask 022), and the
  temporary file a killed save leaves behind is removed by the next save.
"""

from __future__ import annotations

import json
import os
import stat
import struct
import subprocess
import sys
import zlib

import numpy as np
import pytest

import mxnb as mx
from mxnb.base import FormatError
from mxnb.ndarray.fileformat import MAGIC


def _file(header: dict, data: bytes) -> bytes:
    raw = json.dumps(header).encode()
    return MAGIC + struct.pack("<Q", len(raw)) + raw + data


def _entry(shape, nbytes, offset=0, data=b"", dtype="float32"):
    return {
        "dtype": dtype,
        "shape": shape,
        "offset": offset,
        "nbytes": nbytes,
        "crc32": zlib.crc32(data),
    }


def _header(entries, names=None):
    return {"format": "mxnb.ndarray", "version": 1, "names": names, "arrays": entries}


def _load_bytes(tmp_path, content: bytes):
    path = tmp_path / "hostile.mxnb"
    path.write_bytes(content)
    return mx.nd.load(path)


def test_entries_sharing_bytes_are_refused(tmp_path):
    data = np.arange(1024, dtype=np.float32).tobytes()
    entries = [_entry([1024], len(data), 0, data) for _ in range(100)]
    with pytest.raises(FormatError, match="arrays 0 and 1 claim the same bytes") as info:
        _load_bytes(tmp_path, _file(_header(entries), data))
    assert "hostile.mxnb" in str(info.value)


def test_overlapping_but_not_equal_ranges_are_refused(tmp_path):
    data = bytes(64)
    entries = [_entry([8], 32, 0, data[:32]), _entry([8], 32, 16, data[16:48])]
    with pytest.raises(FormatError, match="claim the same bytes"):
        _load_bytes(tmp_path, _file(_header(entries), data))


def test_adjacent_ranges_and_empty_arrays_load(tmp_path):
    data = np.arange(8, dtype=np.float32).tobytes()
    entries = [
        _entry([4], 16, 0, data[:16]),
        _entry([0, 3], 0, 0),  # an empty array claims no bytes, wherever it points
        _entry([4], 16, 16, data[16:]),
    ]
    arrays = _load_bytes(tmp_path, _file(_header(entries), data))
    assert [a.shape for a in arrays] == [(4,), (0, 3), (4,)]
    assert arrays[2].asnumpy().tolist() == [4.0, 5.0, 6.0, 7.0]


def test_a_shape_whose_size_wraps_in_int64_is_a_format_error(tmp_path):
    # 2**62 * 4 elements * 4 bytes wraps to 0 in int64: the size check must see the real size
    entries = [_entry([2**62, 4], 0)]
    with pytest.raises(FormatError, match=r"shape \(4611686018427387904, 4\).*'nbytes'"):
        _load_bytes(tmp_path, _file(_header(entries), b""))


@pytest.mark.parametrize(
    ("label", "entry", "field"),
    [
        ("bool offset", {**_entry([1], 4), "offset": True}, "offset"),
        ("float nbytes", {**_entry([1], 4), "nbytes": 4.0}, "nbytes"),
        ("string crc", {**_entry([1], 4), "crc32": "0"}, "crc32"),
        ("negative dim", _entry([-1], 4), "shape"),
        ("nested dim", _entry([[1]], 4), "shape"),
        ("list dtype", {**_entry([1], 4), "dtype": ["float32"]}, "dtype"),
        ("huge int", {**_entry([1], 4), "offset": 10**400}, "offset"),
    ],
)
def test_wrongly_typed_fields_are_format_errors_naming_the_field(tmp_path, label, entry, field):
    with pytest.raises(FormatError, match=field) as info:
        _load_bytes(tmp_path, _file(_header([entry]), bytes(4)))
    assert "hostile.mxnb" in str(info.value), label


@pytest.mark.parametrize(
    ("label", "header_bytes", "message"),
    [
        ("deep nesting", b"[" * 100_000 + b"]" * 100_000, "nested too deeply"),
        ("not utf-8", b"\xff\xfe{}", "not valid JSON"),
        ("digits beyond the int limit", b'{"x": ' + b"9" * 5000 + b"}", "not valid JSON"),
        ("header is a list", b"[]", "does not describe mxnb arrays"),
    ],
)
def test_malformed_headers_are_format_errors(tmp_path, label, header_bytes, message):
    content = MAGIC + struct.pack("<Q", len(header_bytes)) + header_bytes
    with pytest.raises(FormatError, match=message):
        _load_bytes(tmp_path, content)


def test_names_must_be_unique_strings_matching_arrays(tmp_path):
    data = bytes(8)
    entries = [_entry([1], 4, 0, data[:4]), _entry([1], 4, 4, data[4:])]
    with pytest.raises(FormatError, match="same name twice"):
        _load_bytes(tmp_path, _file(_header(entries, ["w", "w"]), data))
    with pytest.raises(FormatError, match="'names'"):
        _load_bytes(tmp_path, _file(_header(entries, ["w", 3]), data))


def test_saved_files_get_the_usual_mode(tmp_path):
    old = os.umask(0o022)
    try:
        mx.nd.save(tmp_path / "w.mxnb", {"w": mx.nd.ones((2,))})
    finally:
        os.umask(old)
    assert stat.S_IMODE(os.stat(tmp_path / "w.mxnb").st_mode) == 0o644


def test_a_killed_save_leaves_debris_that_the_next_save_removes(tmp_path):
    target = tmp_path / "params.mxnb"
    # a child process starts a save and is killed in the middle of writing
    script = (
        "import os, signal, sys, mxnb as mx\n"
        "def die(fd): os.kill(os.getpid(), signal.SIGKILL)\n"
        "os.fsync = die\n"
        f"mx.nd.save({str(target)!r}, {{'w': mx.nd.ones((1000,))}})\n"
    )
    subprocess.run([sys.executable, "-c", script], check=False, timeout=120)
    debris = [name for name in os.listdir(tmp_path) if name != "params.mxnb"]
    assert len(debris) == 1
    assert debris[0].startswith(".params.mxnb.mxnb-save-") and debris[0].endswith(".partial")
    assert not target.exists()
    mx.nd.save(target, {"w": mx.nd.zeros((3,))})
    assert os.listdir(tmp_path) == ["params.mxnb"]
    assert mx.nd.load(target)["w"].shape == (3,)


@pytest.mark.parametrize(
    ("label", "shape"),
    [
        ("empty but too big for numpy", [0, 2**62]),
        ("empty, beyond int64", [0, 2**70]),
        ("empty, two big dims", [0, 2**31, 2**31]),
    ],
)
def test_an_empty_shape_too_big_for_any_array_is_a_format_error(tmp_path, label, shape):
    with pytest.raises(FormatError, match="'shape'.*too big") as info:
        _load_bytes(tmp_path, _file(_header([_entry(shape, 0)]), b""))
    assert "hostile.mxnb" in str(info.value), label


def test_more_dimensions_than_an_array_can_have_is_a_format_error(tmp_path):
    data = bytes(4)  # a correct CRC, so only the shape is wrong
    with pytest.raises(FormatError, match="'shape' has 65 dimensions"):
        _load_bytes(tmp_path, _file(_header([_entry([1] * 65, 4, 0, data)]), data))


def _raw_file(header: bytes, data: bytes = b"") -> bytes:
    return MAGIC + struct.pack("<Q", len(header)) + header + data


_HEAD = b'{"format":"mxnb.ndarray","version":1,"names":null,'
_MANY = 20_000


@pytest.mark.parametrize(
    ("label", "content"),
    [
        (
            "many empty arrays",
            _raw_file(
                _HEAD
                + b'"arrays":['
                + b",".join(
                    [b'{"dtype":"float32","shape":[0],"offset":0,"nbytes":0,"crc32":0}'] * _MANY
                )
                + b"]}"
            ),
        ),
        (
            "a header of empty lists",
            _raw_file(_HEAD + b'"arrays":[],"x":[' + b"[]," * _MANY + b"[]]}"),
        ),
        (
            "a header of empty dicts",
            _raw_file(_HEAD + b'"arrays":[],"x":[' + b"{}," * _MANY + b"{}]}"),
        ),
    ],
)
def test_memory_of_a_load_stays_within_a_small_multiple_of_the_file(
    tmp_path, traced_peak, label, content
):
    # the worst a header can do is cost Python objects per byte: linear, never a bomb
    path = tmp_path / "many.mxnb"
    path.write_bytes(content)
    mx.nd.load(path)  # first call: imports and caches are not the file's cost
    _, peak = traced_peak(lambda: mx.nd.load(path))
    assert peak <= 40 * len(content), label
