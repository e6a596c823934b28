"""python -m mxnb.tools.im2rec: folder -> .lst -> .rec/.idx that the iterators read."""

import subprocess
import sys

import numpy as np
import pytest

import mxnb as mx
from mxnb.tools import im2rec


def _folder(tmp_path):
    rng = np.random.RandomState(0)
    images = {}
    for cls in ("cat", "dog"):
        (tmp_path / "img" / cls).mkdir(parents=True)
        for i in range(3):
            img = rng.randint(0, 256, (12, 16, 3)).astype(np.uint8)
            (tmp_path / "img" / cls / f"{i}.png").write_bytes(
                mx.image.codec.encode_rgb(img, ".png")
            )
            images[f"{cls}/{i}.png"] = img
    (tmp_path / "img" / "cat" / "broken.png").write_bytes(b"not a png")
    return images


def test_list_then_record_round_trip(tmp_path):
    images = _folder(tmp_path)
    prefix = str(tmp_path / "data")
    assert (
        im2rec.main(["--list", "--recursive", "--no-shuffle", prefix, str(tmp_path / "img")]) == 0
    )
    lines = (tmp_path / "data.lst").read_text().splitlines()
    assert lines[0] == "0\t0.000000\tcat/0.png"
    assert lines[-1] == "6\t1.000000\tdog/2.png"
    assert im2rec.main(["--encoding", ".png", prefix, str(tmp_path / "img")]) == 0
    rec = mx.recordio.MXIndexedRecordIO(prefix + ".idx", prefix + ".rec", "r")
    keys = rec.keys
    assert 3 not in keys and len(keys) == 6  # the broken image was skipped
    for line in lines:
        index, label, path = line.split("\t")
        if path.endswith("broken.png"):
            continue
        header, img = mx.recordio.unpack_img(rec.read_idx(int(index)))
        assert header.label == float(label) and header.id == int(index)
        np.testing.assert_array_equal(img[:, :, ::-1], images[path])
    rec.close()
    it = mx.io.ImageRecordIter(path_imgrec=prefix + ".rec", data_shape=(3, 8, 8), batch_size=3)
    assert sorted(x for b in it for x in b.label[0].asnumpy().tolist()) == [0, 0, 0, 1, 1, 1]
    it.close()


def test_split_resize_quality_and_pack_label(tmp_path):
    _folder(tmp_path)
    prefix = str(tmp_path / "d")
    written = im2rec.make_list(prefix, str(tmp_path / "img"), recursive=True, train_ratio=0.5)
    assert [p.rsplit("_", 1)[1] for p in written] == ["train.lst", "val.lst"]
    (tmp_path / "m.lst").write_text("0\t1.000000\t2.000000\tcat/0.png\n")
    rec_path, idx_path = im2rec.make_record(
        str(tmp_path / "m.lst"), str(tmp_path / "img"), resize=6, quality=80, pack_label=True
    )
    rec = mx.recordio.MXIndexedRecordIO(idx_path, rec_path, "r")
    header, img = mx.recordio.unpack_img(rec.read_idx(0))
    assert header.label.tolist() == [1.0, 2.0] and img.shape == (6, 8, 3)
    rec.close()


@pytest.mark.timeout(120)
def test_runs_as_a_module(tmp_path):
    _folder(tmp_path)
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "mxnb.tools.im2rec",
            "--list",
            str(tmp_path / "x"),
            str(tmp_path / "img" / "dog"),
        ],
        check=False,
        capture_output=True,
        text=True,
        timeout=100,
    )
    assert out.returncode == 0, out.stderr
    assert len((tmp_path / "x.lst").read_text().splitlines()) == 3


def _png_header_claiming(width, height):
    """A PNG whose header claims ``width`` x ``height`` grey pixels, with a few bytes of data."""
    import struct
    import zlib

    def chunk(kind, body):
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))

    header = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(b"\0" * 64))
        + chunk(b"IEND", b"")
    )


@pytest.mark.parametrize(
    "bad",
    [
        _png_header_claiming(30000, 30000),  # over twice Pillow's limit: its DecompressionBombError
        _png_header_claiming(10000, 10000),  # over the limit: imdecode refuses it before decoding
        b"not an image at all",
    ],
    ids=["decompression bomb", "over the pixel limit", "not an image"],
)
def test_a_bad_image_is_skipped_by_name_and_the_rest_is_packed(tmp_path, capfd, bad):
    """Before: the bomb stopped im2rec (nothing after it packed); the other was decoded to 300 MB."""
    folder = tmp_path / "img"
    folder.mkdir()
    for name in ("a.png", "c.png"):
        (folder / name).write_bytes(mx.image.codec.encode_rgb(np.zeros((4, 4, 3), np.uint8), ".png"))
    (folder / "bad.png").write_bytes(bad)
    lst = tmp_path / "data.lst"
    lst.write_text("0\t0.0\ta.png\n1\t1.0\tbad.png\n2\t0.0\tc.png\n")
    rec, idx = im2rec.make_record(str(lst), str(folder))
    assert mx.recordio.MXIndexedRecordIO(idx, rec, "r").keys == [0, 2]
    err = capfd.readouterr().err
    assert "skipping" in err and "bad.png" in err and "1 image(s)" in err
