"""RecordIO: byte-compatible with MXNet both ways (files in tests/io/data from make_records.py)."""

import json
import shutil
import struct
from pathlib import Path

import numpy as np
import pytest

import mxnb as mx
from mxnb.base import FormatError
from mxnb.recordio import IRHeader, MXIndexedRecordIO, MXRecordIO, pack, unpack

DATA = Path(__file__).parent / "io" / "data"
WRITTEN = json.loads((DATA / "mx_written.json").read_text())
MAGIC = struct.pack("<I", 0xCED7230A)


def _header(record):
    flag, label, rid, rid2 = record["header"]
    return IRHeader(flag, label, rid, rid2)


def test_reads_records_written_by_mxnet():
    rec = MXIndexedRecordIO(DATA / "mx_written.idx", DATA / "mx_written.rec", "r")
    assert rec.keys == [r["key"] for r in WRITTEN["records"]]
    for record in reversed(WRITTEN["records"]):  # random access, backwards
        header, payload = unpack(rec.read_idx(record["key"]))
        assert payload == bytes.fromhex(record["payload"])
        want = _header(record)
        if isinstance(want.label, list):
            assert header.flag == len(want.label)
            assert header.label.tolist() == want.label
        else:
            assert header == (0, want.label, want.id, want.id2)
    rec.close()
    raw = MXRecordIO(DATA / "mx_raw.rec", "r")
    got = []
    while (record := raw.read()) is not None:
        got.append(record)
    assert got == [bytes.fromhex(p) for p in WRITTEN["raw"]]


def test_writes_the_same_bytes_as_mxnet(tmp_path):
    """Same records in, identical .rec and .idx out: MXNet reads ours as its own."""
    rec = MXIndexedRecordIO(tmp_path / "x.idx", tmp_path / "x.rec", "w")
    for record in WRITTEN["records"]:
        rec.write_idx(record["key"], pack(_header(record), bytes.fromhex(record["payload"])))
    rec.close()
    assert (tmp_path / "x.rec").read_bytes() == (DATA / "mx_written.rec").read_bytes()
    assert (tmp_path / "x.idx").read_text() == (DATA / "mx_written.idx").read_text()
    raw = MXRecordIO(tmp_path / "raw.rec", "w")
    for payload in WRITTEN["raw"]:
        raw.write(bytes.fromhex(payload))
    raw.close()
    assert (tmp_path / "raw.rec").read_bytes() == (DATA / "mx_raw.rec").read_bytes()


def test_payload_with_magic_is_split_into_continuation_parts(tmp_path):
    """dmlc-core: cflag 1 first part, 2 middle, 3 last; the aligned magic words are left out."""
    with MXRecordIO(tmp_path / "m.rec", "w") as w:
        w.write(b"abcd" + MAGIC + b"efgh" + MAGIC + b"ij")
    data = (tmp_path / "m.rec").read_bytes()
    words = struct.unpack(f"<{len(data) // 4}I", data)
    flags = [
        (w >> 29, w & ((1 << 29) - 1))
        for i, w in enumerate(words)
        if words[i - 1] == 0xCED7230A and i
    ]
    assert flags == [(1, 4), (2, 4), (3, 2)]
    with MXRecordIO(tmp_path / "m.rec", "r") as r:
        assert r.read() == b"abcd" + MAGIC + b"efgh" + MAGIC + b"ij"
        assert r.read() is None


def test_round_trip_random_payloads_and_reset(tmp_path):
    rng = np.random.RandomState(0)
    payloads = [rng.bytes(n) for n in (0, 1, 3, 4, 5, 100, 4096)]
    payloads.append(MAGIC * 5 + b"z")
    w = MXIndexedRecordIO(tmp_path / "r.idx", tmp_path / "r.rec", "w")
    for i, p in enumerate(payloads):
        w.write_idx(i, p)
    w.close()
    r = MXIndexedRecordIO(tmp_path / "r.idx", tmp_path / "r.rec", "r")
    assert [r.read_idx(i) for i in range(len(payloads))] == payloads
    r.reset()
    assert r.read() == payloads[0]


def test_multi_label_pack_unpack():
    packed = pack(IRHeader(0, np.array([1, 2.5]), 9, 1), b"img")
    header, payload = unpack(packed)
    assert header.flag == 2 and header.label.tolist() == [1.0, 2.5] and header.id == 9
    assert payload == b"img"


def test_bad_magic_names_file_and_offset(tmp_path):
    path = tmp_path / "bad.rec"
    shutil.copy(DATA / "mx_written.rec", path)
    data = bytearray(path.read_bytes())
    offsets = [
        int(line.split("\t")[1])
        for line in (DATA / "mx_written.idx").read_text().split("\n")
        if line
    ]
    data[offsets[2]] ^= 0xFF
    path.write_bytes(bytes(data))
    r = MXRecordIO(path, "r")
    r.read(), r.read()
    with pytest.raises(FormatError, match=rf"bad.rec' has no record at byte {offsets[2]}"):
        r.read()


def test_truncated_record_names_offset(tmp_path):
    path = tmp_path / "cut.rec"
    path.write_bytes((DATA / "mx_written.rec").read_bytes()[:-5])
    r = MXRecordIO(path, "r")
    with pytest.raises(FormatError, match=r"cut.rec' is truncated"):
        while r.read() is not None:
            pass


def test_missing_and_stale_index(tmp_path):
    with pytest.raises(FormatError, match=r"index .*nothere.idx"):
        MXIndexedRecordIO(tmp_path / "nothere.idx", DATA / "mx_written.rec", "r")
    stale = tmp_path / "stale.idx"
    stale.write_text("0\t0\n1\t3\n")
    r = MXIndexedRecordIO(stale, DATA / "mx_written.rec", "r")
    with pytest.raises(FormatError, match=r"no record at byte 3.*key 1 is at byte 3"):
        r.read_idx(1)
    stale.write_text("0\t999999\n")
    with pytest.raises(FormatError, match=r"points at byte 999999 .* stale"):
        MXIndexedRecordIO(stale, DATA / "mx_written.rec", "r")


def test_pack_img_unpack_img_png_is_lossless():
    img = np.random.RandomState(2).randint(0, 256, (6, 7, 3)).astype(np.uint8)
    header, back = mx.recordio.unpack_img(
        mx.recordio.pack_img(IRHeader(0, 1, 2, 0), img, 3, ".png")
    )
    assert header.label == 1.0
    np.testing.assert_array_equal(back, img)
    grey = img[:, :, 0]
    _, back = mx.recordio.unpack_img(mx.recordio.pack_img(IRHeader(0, 1, 2, 0), grey, 3, ".png"))
    np.testing.assert_array_equal(back, grey)
