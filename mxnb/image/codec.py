"""Image decode / encode / resize with Pillow, in MXNet's conventions.

Idea: ``mx.image`` hands out HWC uint8 arrays in RGB order; MXNet's
``recordio.pack_img`` / ``unpack_img`` speak OpenCV's BGR. Pillow does the
codec work and releases the GIL while it decodes, so decoding in threads is
real parallelism.

Rule: a buffer that is not an image, or that claims more pixels than
``PIL.Image.MAX_IMAGE_PIXELS`` (checked before decoding: no decompression
bomb), raises ``FormatError`` (the callers add which record it was). ``imresize`` is bilinear by default (``interp=1``), as
OpenCV's INTER_LINEAR; values can differ from OpenCV's by rounding.

Example::

    >>> import numpy as np, mxnb as mx
    >>> img = np.zeros((4, 6, 3), np.uint8); img[..., 0] = 255
    >>> png = mx.image.codec.encode_rgb(img, '.png')
    >>> mx.image.imdecode(png).shape, int(mx.image.imdecode(png).asnumpy()[0, 0, 0])
    ((4, 6, 3), 255)
"""

from __future__ import annotations

import io
import warnings
from typing import Any

import numpy as np
from PIL import Image

from ..base import FormatError, ParamError
from ..ndarray import NDArray
from ..ndarray import array as nd_array

__all__ = [
    "decode_bgr",
    "decode_rgb",
    "encode_bgr",
    "encode_rgb",
    "imdecode",
    "imresize",
    "saturate_uint8",
]

# MXNet / OpenCV interpolation codes -> Pillow filters (2 'auto' and 9/10 'random' -> bicubic)
_FILTERS = {
    0: Image.Resampling.NEAREST,
    1: Image.Resampling.BILINEAR,
    2: Image.Resampling.BICUBIC,
    3: Image.Resampling.BOX,
    4: Image.Resampling.LANCZOS,
}


def _open(buf: bytes) -> Image.Image:
    try:
        with warnings.catch_warnings():  # a DecompressionBombWarning becomes the error below
            warnings.simplefilter("ignore", Image.DecompressionBombWarning)
            image = Image.open(io.BytesIO(bytes(buf)))
        pixels = image.width * image.height
        limit = Image.MAX_IMAGE_PIXELS
        if limit is not None and pixels > limit:  # checked before decoding anything
            raise FormatError(
                f"cannot decode image ({len(buf)} bytes): it claims {image.width}x{image.height} "
                f"= {pixels} pixels, more than PIL.Image.MAX_IMAGE_PIXELS = {limit} (a "
                "decompression bomb?); raise that limit if the image is genuine"
            )
        image.load()
    except FormatError:
        raise
    except Exception as exc:
        raise FormatError(f"cannot decode image ({len(buf)} bytes): {exc}") from exc
    return image


def decode_rgb(buf: bytes, flag: int = 1) -> np.ndarray:
    """Decode to HWC uint8: RGB with flag 1, one grey channel (HxWx1) with flag 0."""
    image = _open(buf)
    if flag == 0:
        return np.asarray(image if image.mode == "L" else image.convert("L"))[:, :, None]
    return np.asarray(image if image.mode == "RGB" else image.convert("RGB"))


def decode_bgr(buf: bytes, iscolor: int = -1) -> np.ndarray:
    """Decode as OpenCV's ``imdecode``: BGR; grey HxW with iscolor 0, or -1 and a grey file."""
    image = _open(buf)
    if iscolor == 0 or (iscolor < 0 and image.mode in ("L", "I", "I;16", "1")):
        return np.asarray(image.convert("L"))
    return np.ascontiguousarray(np.asarray(image.convert("RGB"))[:, :, ::-1])


def saturate_uint8(img: Any) -> np.ndarray:
    """``img`` as uint8 the way OpenCV's ``saturate_cast<uchar>`` does it: rounded, then clipped.

    Float pixels are rounded to the nearest integer (ties to even, as
    ``cvRound``), values below 0 become 0 and above 255 become 255, NaN 0;
    never wrapped (a plain ``astype`` turns 300.7 into 44 and -1 into 255).
    """
    img = np.asarray(img)
    if img.dtype == np.uint8:
        return img
    if img.dtype.kind == "f":
        img = np.nan_to_num(np.rint(img), nan=0.0)
    return np.clip(img, 0, 255).astype(np.uint8)


def encode_rgb(img: np.ndarray, img_fmt: str = ".jpg", quality: int = 95) -> bytes:
    """Encode an RGB (HxWx3) or grey (HxW / HxWx1) uint8 array; quality: JPEG 1-100, PNG 0-9 (clipped)."""
    img = saturate_uint8(img)
    if img.ndim == 3 and img.shape[2] == 1:
        img = img[:, :, 0]
    out = io.BytesIO()
    fmt = img_fmt.lower().lstrip(".")
    if fmt in ("jpg", "jpeg"):
        Image.fromarray(img).save(out, format="JPEG", quality=int(quality))
    elif fmt == "png":
        Image.fromarray(img).save(out, format="PNG", compress_level=min(9, max(0, int(quality))))
    else:
        raise FormatError(f"encode: img_fmt must be '.jpg' or '.png', got {img_fmt!r}")
    return out.getvalue()


def encode_bgr(img: np.ndarray, img_fmt: str = ".jpg", quality: int = 95) -> bytes:
    """``encode_rgb`` for an OpenCV-style BGR array (what MXNet's ``pack_img`` takes)."""
    img = np.asarray(img)
    if img.ndim == 3 and img.shape[2] == 3:
        img = img[:, :, ::-1]
    return encode_rgb(np.ascontiguousarray(img), img_fmt, quality)


def resize_np(img: np.ndarray, w: int, h: int, interp: int = 1) -> np.ndarray:
    """Resize an HWC uint8 array to width ``w``, height ``h``."""
    if interp not in _FILTERS and interp not in (9, 10):  # 9, 10: MXNet's automatic choices
        raise ParamError(
            f"imresize: interp={interp} is not an interpolation; use 0 (nearest), 1 (bilinear), "
            f"2 (bicubic), 3 (area), 4 (lanczos), 9 or 10 (automatic)"
        )
    if img.shape[0] == h and img.shape[1] == w:
        return img
    squeeze = img.ndim == 3 and img.shape[2] == 1
    image = Image.fromarray(img[:, :, 0] if squeeze else img)
    out = np.asarray(image.resize((int(w), int(h)), _FILTERS.get(interp, Image.Resampling.BICUBIC)))
    return out[:, :, None] if squeeze else out


def imdecode(buf: bytes, flag: int = 1, to_rgb: bool = True) -> NDArray:
    """Decode an image buffer to an HWC uint8 NDArray (MXNet's ``mx.image.imdecode``)."""
    img = decode_rgb(buf, flag)
    if flag != 0 and not to_rgb:
        img = np.ascontiguousarray(img[:, :, ::-1])
    return nd_array(img, dtype=np.uint8)


def imresize(src: NDArray | np.ndarray, w: int, h: int, interp: int = 1) -> NDArray:
    """Resize an HWC image to ``w`` x ``h`` (MXNet's ``mx.image.imresize``); uint8 out, float in saturated."""
    img = src.asnumpy() if isinstance(src, NDArray) else np.asarray(src)
    return nd_array(resize_np(saturate_uint8(img), w, h, interp), dtype=np.uint8)
