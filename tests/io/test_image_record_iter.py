"""ImageRecordIter over PNG records against MXNet 1.9.1's batches (data from make_records.py)."""

import json
from pathlib import Path

import numpy as np
import pytest

import mxnb as mx
from mxnb.base import FormatError
from mxnb.recordio import IRHeader, MXIndexedRecordIO, pack

DATA = Path(__file__).parent / "data"
SETTINGS = json.loads((DATA / "image_batches.json").read_text())
BATCHES = np.load(DATA / "image_batches.npz")


def _make(setting, **extra):
    args = dict(setting["args"])
    for key in ("data_shape",):
        args[key] = tuple(args[key])
    if setting["idx"]:
        args["path_imgidx"] = str(DATA / (setting["rec"] + ".idx"))
    args.update(extra)
    return mx.io.ImageRecordIter(path_imgrec=str(DATA / (setting["rec"] + ".rec")), **args)


@pytest.mark.timeout(120)
@pytest.mark.parametrize("name", sorted(SETTINGS))
def test_batches_match_mxnet(name):
    """Two epochs: pixels, labels, pads and the round_batch carry, as MXNet's."""
    setting = SETTINGS[name]
    it = _make(setting, preprocess_threads=2)
    assert [[d.name, list(d.shape)] for d in it.provide_data] == setting["provide_data"]
    assert [[d.name, list(d.shape)] for d in it.provide_label] == setting["provide_label"]
    for epoch, pads in enumerate(setting["pads"]):
        if epoch:
            it.reset()
        got = list(it)
        assert len(got) == len(pads)
        for k, batch in enumerate(got):
            want_data = BATCHES[f"{name}/{epoch}/{k}/data"]
            want_label = BATCHES[f"{name}/{epoch}/{k}/label"]
            real = it.batch_size - batch.pad
            if setting["args"].get("round_batch", True):
                assert batch.pad == pads[k]
                real = it.batch_size  # the borrowed rows are real images too
            else:
                # MXNet reports pad 0 and leaves stale memory in the filler rows; we count them
                assert batch.pad == (it.batch_size - 10 % it.batch_size if k == len(got) - 1 else 0)
            np.testing.assert_allclose(batch.data[0].asnumpy()[:real], want_data[:real], rtol=1e-6)
            np.testing.assert_array_equal(batch.label[0].asnumpy()[:real], want_label[:real])
    it.close()


@pytest.mark.timeout(60)
def test_shuffle_is_a_seeded_permutation_per_epoch():
    setting = SETTINGS["plain"]

    def labels(seed):
        it = _make(setting, shuffle=True, seed=seed, round_batch=False, batch_size=5)
        epochs = []
        for epoch in range(2):
            if epoch:
                it.reset()
            epochs.append([x for b in it for x in b.label[0].asnumpy().tolist()])
        it.close()
        return epochs

    first, again, other = labels(3), labels(3), labels(4)
    assert first == again
    assert first != other
    assert sorted(first[0]) == list(range(10)) and first[0] != first[1]


@pytest.mark.timeout(60)
def test_random_crop_and_mirror_are_crops_of_the_image():
    images = np.load(DATA / "images.npy").astype(np.float32).transpose(0, 3, 1, 2)
    it = _make(SETTINGS["center_crop"], rand_crop=True, rand_mirror=True, seed=5)
    found = set()
    for batch in it:
        for img, label in zip(batch.data[0].asnumpy(), batch.label[0].asnumpy()):
            src = images[int(label)]
            hits = [
                (y, x, m)
                for y in range(3)
                for x in range(5)
                for m in (False, True)
                if np.array_equal(
                    (src[:, y : y + 8, x : x + 8])[:, :, ::-1]
                    if m
                    else src[:, y : y + 8, x : x + 8],
                    img,
                )
            ]
            assert hits, "not a crop of its image"
            found.update(hits)
    assert len({h[:2] for h in found}) > 1 and {h[2] for h in found} == {False, True}
    it.close()


def test_small_images_are_resized_up_to_data_shape():
    it = _make(SETTINGS["plain"], data_shape=(3, 16, 16))
    assert it.next().data[0].shape == (4, 3, 16, 16)
    it.close()


@pytest.mark.timeout(60)
def test_a_record_that_fails_to_decode_is_named_at_its_batch(tmp_path):
    good = MXIndexedRecordIO(DATA / "images.idx", DATA / "images.rec", "r")
    out = MXIndexedRecordIO(tmp_path / "b.idx", tmp_path / "b.rec", "w")
    for key in good.keys:
        record = good.read_idx(key)
        out.write_idx(
            key, pack(IRHeader(0, float(key), key, 0), b"not an image") if key == 5 else record
        )
    out.close()
    good.close()
    it = mx.io.ImageRecordIter(
        path_imgrec=str(tmp_path / "b.rec"),
        path_imgidx=str(tmp_path / "b.idx"),
        data_shape=(3, 10, 12),
        batch_size=2,
    )
    assert it.next().label[0].asnumpy().tolist() == [0, 1]
    assert it.next().label[0].asnumpy().tolist() == [2, 3]
    with pytest.raises(FormatError, match=r"record 5 \(byte \d+\) of .*b.rec' cannot be decoded"):
        it.next()
    assert it.next().label[0].asnumpy().tolist() == [6, 7]
    it.close()


def test_bad_arguments():
    with pytest.raises(mx.base.ParamError, match="data_shape"):
        mx.io.ImageRecordIter(path_imgrec=str(DATA / "images.rec"), data_shape=(8, 8), batch_size=2)
    with pytest.raises(mx.base.ParamError, match="part_index"):
        mx.io.ImageRecordIter(
            path_imgrec=str(DATA / "images.rec"),
            data_shape=(3, 8, 8),
            batch_size=2,
            num_parts=2,
            part_index=2,
        )
