"""Make RecordIO and ImageRecordIter reference data with real MXNet 1.9.1 (run by hand).

    /work/mxnet-venv/bin/python tests/io/data/make_records.py

Writes, beside this script:
  mx_written.rec / .idx     records written by MXNet's MXIndexedRecordIO: packed headers
                            (scalar and multi-label), payloads holding the RecordIO magic
                            word at aligned and unaligned offsets, an empty payload
  mx_written.json           the (key, header, payload hex) of each record
  images.rec / .idx         PNG images (lossless) packed by MXNet, labels 0..n-1 and 2-wide
                            multi-labels in images_multi.rec / .idx
  image_batches.npz         MXNet's ImageRecordIter batches for the settings in
                            image_batches.json (plain, mean/std/scale, round_batch, parts)
PNG bytes are made with Pillow here (MXNet's pack_img needs OpenCV, not installed).
"""

import io
import json
import os
import struct

import mxnet as mx
import numpy as np
from PIL import Image

HERE = os.path.dirname(os.path.abspath(__file__))
MAGIC = struct.pack("<I", 0xCED7230A)


def _records():
    rng = np.random.RandomState(0)
    return [
        (0, mx.recordio.IRHeader(0, 1.5, 0, 0), b"plain payload"),
        (1, mx.recordio.IRHeader(0, [1.0, 2.0, 3.0], 1, 0), b"multi label"),
        (2, mx.recordio.IRHeader(0, 2.0, 2, 7), MAGIC + b"abcd" + MAGIC + MAGIC + b"xy" + MAGIC),
        (3, mx.recordio.IRHeader(0, 3.0, 3, 0), b"ab" + MAGIC + b"unaligned"),
        (4, mx.recordio.IRHeader(0, 4.0, 4, 0), b""),
        (5, mx.recordio.IRHeader(0, 5.0, 5, 0), rng.bytes(1001)),
    ]


def _raw_records():
    """Raw payloads (no IRHeader) whose magic sits at aligned offsets of the record itself."""
    return [MAGIC, MAGIC * 3, b"1234" + MAGIC, MAGIC + b"12345", b"", b"x"]


def write_records():
    rec = mx.recordio.MXIndexedRecordIO(
        os.path.join(HERE, "mx_written.idx"), os.path.join(HERE, "mx_written.rec"), "w"
    )
    listing = []
    for key, header, payload in _records():
        rec.write_idx(key, mx.recordio.pack(header, payload))
        label = header.label if isinstance(header.label, float) else list(header.label)
        listing.append(
            {
                "key": key,
                "header": [header.flag, label, header.id, header.id2],
                "payload": payload.hex(),
            }
        )
    rec.close()
    raw = mx.recordio.MXRecordIO(os.path.join(HERE, "mx_raw.rec"), "w")
    for payload in _raw_records():
        raw.write(payload)
    raw.close()
    with open(os.path.join(HERE, "mx_written.json"), "w") as f:
        json.dump({"records": listing, "raw": [p.hex() for p in _raw_records()]}, f)


def _png(img):
    out = io.BytesIO()
    Image.fromarray(img).save(out, format="PNG")
    return out.getvalue()


def write_images():
    rng = np.random.RandomState(1)
    images = [rng.randint(0, 256, size=(10, 12, 3)).astype(np.uint8) for _ in range(10)]
    np.save(os.path.join(HERE, "images.npy"), np.stack(images))
    for name, label_of in (
        ("images", lambda i: float(i)),
        ("images_multi", lambda i: [float(i), float(10 * i)]),
    ):
        rec = mx.recordio.MXIndexedRecordIO(
            os.path.join(HERE, name + ".idx"), os.path.join(HERE, name + ".rec"), "w"
        )
        for i, img in enumerate(images):
            rec.write_idx(
                i, mx.recordio.pack(mx.recordio.IRHeader(0, label_of(i), i, 0), _png(img))
            )
        rec.close()


SETTINGS = {
    "plain": {"data_shape": (3, 10, 12), "batch_size": 4},
    "center_crop": {"data_shape": (3, 8, 8), "batch_size": 4},
    "normalised": {
        "data_shape": (3, 8, 8),
        "batch_size": 5,
        "mean_r": 123.0,
        "mean_g": 117.0,
        "mean_b": 104.0,
        "std_r": 58.0,
        "std_g": 57.0,
        "std_b": 57.5,
        "scale": 0.5,
    },
    "no_round": {"data_shape": (3, 10, 12), "batch_size": 4, "round_batch": False},
    "part0": {"data_shape": (3, 10, 12), "batch_size": 2, "num_parts": 2, "part_index": 0},
    "part1": {"data_shape": (3, 10, 12), "batch_size": 2, "num_parts": 2, "part_index": 1},
    "multi": {"data_shape": (3, 10, 12), "batch_size": 4, "label_width": 2, "rec": "images_multi"},
    "indexed": {"data_shape": (3, 10, 12), "batch_size": 3, "idx": True},
}


def image_batches():
    arrays = {}
    described = {}
    for name, setting in SETTINGS.items():
        setting = dict(setting)
        rec = setting.pop("rec", "images")
        if setting.pop("idx", False):
            setting["path_imgidx"] = os.path.join(HERE, rec + ".idx")
        it = mx.io.ImageRecordIter(path_imgrec=os.path.join(HERE, rec + ".rec"), **setting)
        epochs = []
        for epoch in range(2):
            if epoch:
                it.reset()
            pads = []
            for k, batch in enumerate(it):
                arrays[f"{name}/{epoch}/{k}/data"] = batch.data[0].asnumpy()
                arrays[f"{name}/{epoch}/{k}/label"] = batch.label[0].asnumpy()
                pads.append(batch.pad)
            epochs.append(pads)
        described[name] = {
            "rec": rec,
            "args": {k: v for k, v in setting.items() if k != "path_imgidx"},
            "idx": "path_imgidx" in setting,
            "pads": epochs,
            "provide_data": [[d.name, list(d.shape)] for d in it.provide_data],
            "provide_label": [[d.name, list(d.shape)] for d in it.provide_label],
        }
    np.savez_compressed(os.path.join(HERE, "image_batches.npz"), **arrays)
    with open(os.path.join(HERE, "image_batches.json"), "w") as f:
        json.dump(described, f, indent=1)


if __name__ == "__main__":
    write_records()
    write_images()
    image_batches()
    print("written")
