"""mx.image: codec, augmenters, ImageIter."""

from pathlib import Path

import numpy as np
import pytest

import mxnb as mx
from mxnb.base import FormatError

DATA = Path(__file__).parent.parent / "io" / "data"
IMAGES = np.load(DATA / "images.npy")


def test_imdecode_png_is_exact_and_bgr_on_request():
    png = mx.image.codec.encode_rgb(IMAGES[0], ".png")
    np.testing.assert_array_equal(mx.image.imdecode(png).asnumpy(), IMAGES[0])
    np.testing.assert_array_equal(
        mx.image.imdecode(png, to_rgb=False).asnumpy(), IMAGES[0][:, :, ::-1]
    )
    assert mx.image.imdecode(png, flag=0).shape == (10, 12, 1)
    with pytest.raises(FormatError, match="cannot decode image"):
        mx.image.imdecode(b"garbage")


def test_imresize_and_resize_short():
    img = mx.nd.array(IMAGES[0], dtype="uint8")
    assert mx.image.imresize(img, 6, 4).shape == (4, 6, 3)
    assert mx.image.resize_short(IMAGES[0], 5).shape == (5, 6, 3)


def test_crops():
    out, (x0, y0, w, h) = mx.image.center_crop(IMAGES[0], (8, 8))
    assert (x0, y0, w, h) == (2, 1, 8, 8)
    np.testing.assert_array_equal(out, IMAGES[0][1:9, 2:10])
    rng = np.random.RandomState(0)
    out, (x0, y0, w, h) = mx.image.random_crop(IMAGES[0], (4, 3), rng=rng)
    np.testing.assert_array_equal(out, IMAGES[0][y0 : y0 + 3, x0 : x0 + 4])
    small, _ = mx.image.center_crop(IMAGES[0], (24, 20))  # larger than the image: crop and resize
    assert small.shape == (20, 24, 3)


def test_create_augmenter_pipeline_and_ndarray_in_out():
    augs = mx.image.CreateAugmenter(
        (3, 8, 8),
        resize=9,
        rand_crop=True,
        rand_mirror=True,
        mean=True,
        std=True,
        brightness=0.1,
        contrast=0.1,
        saturation=0.1,
    )
    names = [type(a).__name__ for a in augs]
    assert names == [
        "ResizeAug",
        "RandomCropAug",
        "HorizontalFlipAug",
        "CastAug",
        "ColorJitterAug",
        "ColorNormalizeAug",
    ]
    img = mx.nd.array(IMAGES[1], dtype="uint8")
    for aug in augs:
        img = aug(img)
    assert img.shape == (8, 8, 3) and img.dtype == np.float32
    flip = mx.image.HorizontalFlipAug(1.0)
    np.testing.assert_array_equal(flip(IMAGES[2]), IMAGES[2][:, ::-1])
    cast = mx.image.CastAug()(IMAGES[2])
    np.testing.assert_allclose(mx.image.BrightnessJitterAug(0)(cast), cast)
    norm = mx.image.ColorNormalizeAug([1, 2, 3], [2, 2, 2])(cast)
    np.testing.assert_allclose(norm, (cast - [1, 2, 3]) / 2, rtol=1e-6)


def test_image_iter_over_records_and_list(tmp_path):
    it = mx.image.ImageIter(4, (3, 10, 12), path_imgrec=str(DATA / "images.rec"))
    batches = list(it)
    assert [b.pad for b in batches] == [0, 0, 2]
    np.testing.assert_array_equal(batches[0].data[0].asnumpy()[1], IMAGES[1].transpose(2, 0, 1))
    lines = []
    for i in range(3):
        (tmp_path / f"{i}.png").write_bytes(mx.image.codec.encode_rgb(IMAGES[i], ".png"))
        lines.append(f"{i}\t{i * 2}\t{i}.png")
    (tmp_path / "x.lst").write_text("\n".join(lines) + "\n")
    it = mx.image.ImageIter(
        2,
        (3, 10, 12),
        path_imglist=str(tmp_path / "x.lst"),
        path_root=str(tmp_path),
        last_batch_handle="discard",
    )
    (batch,) = list(it)
    assert batch.label[0].asnumpy().tolist() == [0, 2]
    np.testing.assert_array_equal(batch.data[0].asnumpy()[1], IMAGES[1].transpose(2, 0, 1))
    it = mx.image.ImageIter(
        2,
        (3, 10, 12),
        path_imgrec=str(DATA / "images.rec"),
        path_imgidx=str(DATA / "images.idx"),
        shuffle=True,
        num_parts=2,
        part_index=1,
    )
    batches = list(it)
    real = [x for b in batches for x in b.label[0].asnumpy().tolist()[: 2 - b.pad]]
    assert sorted(real) == [5, 6, 7, 8, 9] and [b.pad for b in batches] == [0, 0, 1]


def test_imresize_of_a_float_image_saturates_like_opencv():
    """Before: 300.7 wrapped to 44 and -1 to 255 (a plain astype(uint8))."""
    img = np.array([[[300.7, -1.0, 127.5], [128.5, np.nan, 254.6]]], dtype=np.float32)
    out = mx.image.imresize(mx.nd.array(img), 2, 1).asnumpy()
    assert out.dtype == np.uint8
    assert out.tolist() == [[[255, 0, 128], [128, 0, 255]]]  # rounded half to even, clipped
