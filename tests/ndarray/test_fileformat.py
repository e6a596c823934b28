"""mx.nd.save / mx.nd.load: round trips for every dtype, atomic writes, clear errors."""

from __future__ import annotations

import json
import os
import struct

import numpy as np
import pytest

import mxnb as mx
from mxnb.base import FormatError, MXNBError
from mxnb.ndarray import fileformat

DTYPES = ["float32", "float64", "float16", "uint8", "int32", "int8", "int64"]


def _sample(dtype: str, shape: tuple) -> np.ndarray:
    return (np.arange(int(np.prod(shape))) % 100).reshape(shape).astype(dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_round_trip_of_a_list_for_every_dtype(tmp_path, dtype):
    arrays = [_sample(dtype, (2, 3)), _sample(dtype, (0,)), _sample(dtype, ())]
    path = tmp_path / "list.mxnb"
    mx.nd.save(path, [mx.nd.array(a, dtype=dtype) for a in arrays])
    loaded = mx.nd.load(path)
    assert isinstance(loaded, list) and len(loaded) == 3
    for got, want in zip(loaded, arrays):
        assert got.dtype == np.dtype(dtype) and got.shape == want.shape
        assert np.array_equal(got.asnumpy(), want)


def test_round_trip_of_a_dict_keeps_names_and_order(tmp_path):
    params = {
        "fc1_weight": mx.nd.ones((3, 2)),
        "fc1_bias": mx.nd.zeros(3),
        "épsilon": mx.nd.array([1e-5]),
    }
    path = tmp_path / "params.mxnb"
    mx.nd.save(str(path), params)
    loaded = mx.nd.load(str(path))
    assert list(loaded) == list(params)
    for name, value in params.items():
        assert np.array_equal(loaded[name].asnumpy(), value.asnumpy())


def test_single_array_and_load_onto_a_context(tmp_path):
    path = tmp_path / "one.mxnb"
    mx.nd.save(path, mx.nd.array([1, 2]))
    [loaded] = mx.nd.load(path, ctx=mx.cpu(1))
    assert loaded.context == mx.cpu(1) and loaded.asnumpy().tolist() == [1, 2]


def test_save_waits_for_pending_writes(tmp_path, engine):
    a = mx.nd.zeros(3)
    a += 5
    mx.nd.save(tmp_path / "x.mxnb", [a])
    assert mx.nd.load(tmp_path / "x.mxnb")[0].asnumpy().tolist() == [5, 5, 5]


def test_the_file_layout_is_magic_header_length_json_then_raw_bytes(tmp_path):
    path = tmp_path / "layout.mxnb"
    mx.nd.save(path, {"w": mx.nd.array([1.0, 2.0])})
    content = path.read_bytes()
    assert content[:8] == fileformat.MAGIC
    (length,) = struct.unpack("<Q", content[8:16])
    header = json.loads(content[16 : 16 + length])
    assert (
        header["format"] == "mxnb.ndarray" and header["version"] == 1 and header["names"] == ["w"]
    )
    [entry] = header["arrays"]
    assert (entry["dtype"], entry["shape"], entry["offset"], entry["nbytes"]) == (
        "float32",
        [2],
        0,
        8,
    )
    assert np.frombuffer(content[16 + length :], "<f4").tolist() == [1.0, 2.0]


def _saved(tmp_path) -> bytes:
    path = tmp_path / "good.mxnb"
    mx.nd.save(
        path, {"a": mx.nd.array(np.arange(10, dtype=np.float32)), "b": mx.nd.ones(2, dtype="int64")}
    )
    return path.read_bytes()


def _header(content: bytes) -> tuple[dict, int]:
    (length,) = struct.unpack("<Q", content[8:16])
    return json.loads(content[16 : 16 + length]), length


def _with_header(content: bytes, header: dict) -> bytes:
    _old, length = _header(content)
    text = json.dumps(header).encode()
    return content[:8] + struct.pack("<Q", len(text)) + text + content[16 + length :]


@pytest.mark.parametrize(
    ("label", "corrupt", "message"),
    [
        ("flipped data byte", lambda c: c[:-3] + bytes([c[-3] ^ 0xFF]) + c[-2:], "CRC-32"),
        ("truncated data", lambda c: c[:-4], "past the end"),
        ("truncated header", lambda c: c[:30], "past the end"),
        ("bad magic", lambda c: b"NOTMXNB!" + c[8:], "magic"),
        ("empty file", lambda c: b"", "magic"),
        (
            "header not json",
            lambda c: c[:16] + b"{" * _header(c)[1] + c[16 + _header(c)[1] :],
            "JSON",
        ),
        (
            "huge header length",
            lambda c: c[:8] + struct.pack("<Q", 1 << 62) + c[16:],
            "header length",
        ),
        (
            "object dtype",
            lambda c: _with_header(c, _retype(_header(c)[0], "object")),
            "dtype 'object'",
        ),
        (
            "shape and size disagree",
            lambda c: _with_header(c, _reshape(_header(c)[0], [3])),
            "does not take",
        ),
        ("newer version", lambda c: _with_header(c, {**_header(c)[0], "version": 9}), "version 9"),
        (
            "mxnet params",
            lambda c: b"\x12\x01\x00\x00\x00\x00\x00\x00" + c[8:],
            "not an MXNet .params file",
        ),
    ],
)
def test_corrupt_files_raise_format_errors(tmp_path, label, corrupt, message):
    path = tmp_path / "bad.mxnb"
    path.write_bytes(corrupt(_saved(tmp_path)))
    with pytest.raises(FormatError, match=message) as info:
        mx.nd.load(path)
    assert "bad.mxnb" in str(info.value), label


def _retype(header: dict, dtype: str) -> dict:
    header["arrays"][0]["dtype"] = dtype
    return header


def _reshape(header: dict, shape: list) -> dict:
    header["arrays"][0]["shape"] = shape
    return header


def test_missing_file_and_wrong_types_are_clear_errors(tmp_path):
    with pytest.raises(FileNotFoundError, match="no such file") as info:
        mx.nd.load(tmp_path / "absent.mxnb")
    assert isinstance(info.value, MXNBError)
    with pytest.raises(TypeError, match="NDArray"):
        mx.nd.save(tmp_path / "x.mxnb", [np.ones(2)])
    with pytest.raises(TypeError, match="keys must be str"):
        mx.nd.save(tmp_path / "x.mxnb", {1: mx.nd.ones(2)})
    with pytest.raises(TypeError, match="got int"):
        mx.nd.save(tmp_path / "x.mxnb", 5)


def test_a_crash_mid_save_leaves_the_old_file_and_no_temporary(tmp_path, monkeypatch):
    path = tmp_path / "model.mxnb"
    mx.nd.save(path, [mx.nd.ones(2)])
    before = path.read_bytes()

    def crash(*args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr(os, "fsync", crash)
    with pytest.raises(OSError, match="disk full"):
        mx.nd.save(path, [mx.nd.zeros(1000)])
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model.mxnb"]


def test_loading_never_unpickles(tmp_path, pickle_bomb):
    """A pickle bomb under the .mxnb name is rejected as a format error, never executed."""
    payload, marker = pickle_bomb
    path = tmp_path / "evil.mxnb"
    path.write_bytes(payload)
    with pytest.raises(FormatError):
        mx.nd.load(path)
    assert not marker.exists()
