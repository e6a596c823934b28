"""Hand check: files written by mxnb read back in real MXNet 1.9.1 (not run by the tests).

    .venv/bin/python tests/io/data/check_in_mxnet.py write /tmp/mxnb_rec
    /work/mxnet-venv/bin/python tests/io/data/check_in_mxnet.py read /tmp/mxnb_rec

``write`` (under mxnb) makes x.rec/.idx (packed headers, payloads holding the
magic word) and img.rec/.idx (PNG images from mx.recordio.pack_img);
``read`` (under MXNet) reads them with MXIndexedRecordIO and ImageRecordIter
and compares with what was written. Prints 'MXNet read everything' on success.
"""

import os
import struct
import sys

import numpy as np

MAGIC = struct.pack("<I", 0xCED7230A)


def _payloads():
    rng = np.random.RandomState(0)
    return [MAGIC, b"ab" + MAGIC * 2 + b"c", b"", rng.bytes(777), MAGIC + rng.bytes(64) + MAGIC]


def _images():
    return np.random.RandomState(1).randint(0, 256, (6, 9, 11, 3)).astype(np.uint8)


def write(folder):
    import mxnb as mx

    os.makedirs(folder, exist_ok=True)
    rec = mx.recordio.MXIndexedRecordIO(f"{folder}/x.idx", f"{folder}/x.rec", "w")
    for i, payload in enumerate(_payloads()):
        label = float(i) if i % 2 else [float(i), 0.5]
        rec.write_idx(i, mx.recordio.pack(mx.recordio.IRHeader(0, label, i, 0), payload))
    rec.close()
    rec = mx.recordio.MXIndexedRecordIO(f"{folder}/img.idx", f"{folder}/img.rec", "w")
    for i, img in enumerate(_images()):
        header = mx.recordio.IRHeader(0, float(i), i, 0)
        rec.write_idx(i, mx.recordio.pack_img(header, img[:, :, ::-1], 3, ".png"))  # BGR in
    rec.close()


def read(folder):
    import mxnet as mx

    rec = mx.recordio.MXIndexedRecordIO(f"{folder}/x.idx", f"{folder}/x.rec", "r")
    for i, payload in enumerate(_payloads()):
        header, got = mx.recordio.unpack(rec.read_idx(i))
        assert got == payload, i
        assert np.allclose(header.label, float(i) if i % 2 else [float(i), 0.5]), i
    it = mx.io.ImageRecordIter(path_imgrec=f"{folder}/img.rec", data_shape=(3, 9, 11), batch_size=6)
    batch = it.next()
    want = _images().transpose(0, 3, 1, 2).astype(np.float32)
    assert np.array_equal(batch.data[0].asnumpy(), want)
    assert batch.label[0].asnumpy().tolist() == list(range(6))
    print("MXNet read everything")


if __name__ == "__main__":
    {"write": write, "read": read}[sys.argv[1]](sys.argv[2])
