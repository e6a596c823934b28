"""Image augmenters: resize, crops, flip, colour jitter, cast, normalise — MXNet's ``mx.image``.

Idea: an augmenter is a callable from one HWC image to another; a pipeline
is a list of them (``CreateAugmenter`` builds MXNet's default list). They
work on numpy arrays (the data loaders call them inside worker threads) and
also accept and return ``NDArray`` like MXNet's.

Rule: geometry first on uint8 (resize, crop, flip), then ``CastAug`` to
float32, then colour jitter and normalisation on floats — the order MXNet's
``CreateAugmenter`` uses. Randomness comes from ``rng`` (a
``numpy.random.RandomState``), numpy's global generator when None.

Example::

    >>> import numpy as np, mxnb as mx
    >>> augs = mx.image.CreateAugmenter((3, 4, 4), rand_mirror=True, mean=True, std=True)
    >>> img = np.full((6, 8, 3), 128, np.uint8)
    >>> for aug in augs: img = aug(img)
    >>> img.shape, img.dtype
    ((4, 4, 3), dtype('float32'))
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ..base import NotSupportedError
from ..ndarray import NDArray
from ..ndarray import array as nd_array
from .codec import resize_np

__all__ = [
    "Augmenter",
    "BrightnessJitterAug",
    "CastAug",
    "CenterCropAug",
    "ColorJitterAug",
    "ColorNormalizeAug",
    "ContrastJitterAug",
    "CreateAugmenter",
    "ForceResizeAug",
    "HorizontalFlipAug",
    "RandomCropAug",
    "ResizeAug",
    "SaturationJitterAug",
    "SequentialAug",
    "center_crop",
    "fixed_crop",
    "random_crop",
    "resize_short",
]

_GREY_COEF = np.array([0.299, 0.587, 0.114], np.float32)


def resize_short(src: np.ndarray, size: int, interp: int = 2) -> np.ndarray:
    """Resize so that the shorter edge is ``size``, keeping the aspect ratio."""
    h, w = src.shape[:2]
    if h > w:
        new_w, new_h = size, size * h // w
    else:
        new_w, new_h = size * w // h, size
    return resize_np(src, new_w, new_h, interp)


def fixed_crop(
    src: np.ndarray,
    x0: int,
    y0: int,
    w: int,
    h: int,
    size: Sequence[int] | None = None,
    interp: int = 2,
) -> np.ndarray:
    """Crop ``w`` x ``h`` at (x0, y0); then resize to ``size`` (w, h) when given and different."""
    out = src[y0 : y0 + h, x0 : x0 + w]
    if size is not None and (w, h) != tuple(size):
        out = resize_np(np.ascontiguousarray(out), size[0], size[1], interp)
    return out


def _scale_down(src_size: tuple[int, int], size: Sequence[int]) -> tuple[int, int]:
    """Shrink crop ``size`` (w, h) to fit in ``src_size`` keeping its aspect ratio (MXNet's)."""
    w, h = size
    sw, sh = src_size
    if sh < h:
        w, h = float(w * sh) / h, sh
    if sw < w:
        w, h = sw, float(h * sw) / w
    return int(w), int(h)


def center_crop(src: np.ndarray, size: Sequence[int], interp: int = 2) -> tuple[np.ndarray, tuple]:
    """Crop the centre ``size`` (w, h); a smaller image gives its largest centred crop, resized."""
    h, w = src.shape[:2]
    new_w, new_h = _scale_down((w, h), size)
    x0, y0 = (w - new_w) // 2, (h - new_h) // 2
    return fixed_crop(src, x0, y0, new_w, new_h, size, interp), (x0, y0, new_w, new_h)


def random_crop(
    src: np.ndarray, size: Sequence[int], interp: int = 2, rng: Any = None
) -> tuple[np.ndarray, tuple]:
    """Crop ``size`` (w, h) at a random place (scaled down to fit a smaller image)."""
    rng = rng if rng is not None else np.random
    h, w = src.shape[:2]
    new_w, new_h = _scale_down((w, h), size)
    x0 = int(rng.randint(0, w - new_w + 1))
    y0 = int(rng.randint(0, h - new_h + 1))
    return fixed_crop(src, x0, y0, new_w, new_h, size, interp), (x0, y0, new_w, new_h)


class Augmenter:
    """Base class: ``aug(src)`` on a numpy HWC image or an NDArray; subclasses write ``apply``."""

    def __init__(self, **kwargs: Any) -> None:
        self._kwargs = kwargs

    def dumps(self) -> str:
        """The augmenter as MXNet's JSON-ish description ``[name, {params}]``."""
        return str([type(self).__name__.lower(), self._kwargs])

    def apply(self, src: np.ndarray, rng: Any = None) -> np.ndarray:
        """Augment a numpy image (``rng``: a RandomState, or None for numpy's global one)."""
        raise NotImplementedError(f"{type(self).__name__} does not implement apply")

    def __call__(self, src: Any, rng: Any = None) -> Any:
        if isinstance(src, NDArray):
            out = self.apply(src.asnumpy(), rng)
            return nd_array(out, dtype=out.dtype)
        return self.apply(np.asarray(src), rng)


class SequentialAug(Augmenter):
    """Apply a list of augmenters in order."""

    def __init__(self, ts: Sequence[Augmenter]) -> None:
        super().__init__()
        self.ts = list(ts)

    def apply(self, src: np.ndarray, rng: Any = None) -> np.ndarray:
        """Each augmenter in turn."""
        for aug in self.ts:
            src = aug.apply(src, rng)
        return src


class ResizeAug(Augmenter):
    """Resize the shorter edge to ``size``."""

    def __init__(self, size: int, interp: int = 2) -> None:
        super().__init__(size=size, interp=interp)
        self.size, self.interp = size, interp

    def apply(self, src: np.ndarray, rng: Any = None) -> np.ndarray:
        """Shorter edge to ``size``."""
        return resize_short(src, self.size, self.interp)


class ForceResizeAug(Augmenter):
    """Resize to exactly ``size`` (w, h), ignoring the aspect ratio."""

    def __init__(self, size: Sequence[int], interp: int = 2) -> None:
        super().__init__(size=size, interp=interp)
        self.size, self.interp = tuple(size), interp

    def apply(self, src: np.ndarray, rng: Any = None) -> np.ndarray:
        """Resize to ``size``."""
        return resize_np(src, self.size[0], self.size[1], self.interp)


class RandomCropAug(Augmenter):
    """Crop ``size`` (w, h) at a random place."""

    def __init__(self, size: Sequence[int], interp: int = 2) -> None:
        super().__init__(size=size, interp=interp)
        self.size, self.interp = tuple(size), interp

    def apply(self, src: np.ndarray, rng: Any = None) -> np.ndarray:
        """A random crop."""
        return random_crop(src, self.size, self.interp, rng)[0]


class CenterCropAug(Augmenter):
    """Crop the centre ``size`` (w, h)."""

    def __init__(self, size: Sequence[int], interp: int = 2) -> None:
        super().__init__(size=size, interp=interp)
        self.size, self.interp = tuple(size), interp

    def apply(self, src: np.ndarray, rng: Any = None) -> np.ndarray:
        """The centre crop."""
        return center_crop(src, self.size, self.interp)[0]


class HorizontalFlipAug(Augmenter):
    """Mirror left-right with probability ``p``."""

    def __init__(self, p: float) -> None:
        super().__init__(p=p)
        self.p = p

    def apply(self, src: np.ndarray, rng: Any = None) -> np.ndarray:
        """Maybe mirrored."""
        rng = rng if rng is not None else np.random
        return src[:, ::-1] if rng.random_sample() < self.p else src


class CastAug(Augmenter):
    """Cast to ``typ`` (float32)."""

    def __init__(self, typ: str = "float32") -> None:
        super().__init__(type=typ)
        self.typ = np.dtype(typ)

    def apply(self, src: np.ndarray, rng: Any = None) -> np.ndarray:
        """Cast."""
        return src.astype(self.typ)


class BrightnessJitterAug(Augmenter):
    """Scale all values by 1 + U(-brightness, brightness)."""

    def __init__(self, brightness: float) -> None:
        super().__init__(brightness=brightness)
        self.brightness = brightness

    def apply(self, src: np.ndarray, rng: Any = None) -> np.ndarray:
        """Brightness jitter."""
        rng = rng if rng is not None else np.random
        return src * np.float32(1.0 + rng.uniform(-self.brightness, self.brightness))


class ContrastJitterAug(Augmenter):
    """Blend with the image's mean grey level, weight 1 + U(-contrast, contrast)."""

    def __init__(self, contrast: float) -> None:
        super().__init__(contrast=contrast)
        self.contrast = contrast

    def apply(self, src: np.ndarray, rng: Any = None) -> np.ndarray:
        """Contrast jitter."""
        rng = rng if rng is not None else np.random
        alpha = np.float32(1.0 + rng.uniform(-self.contrast, self.contrast))
        grey = (src * _GREY_COEF).sum() * (3.0 * (1.0 - alpha) / src.size)
        return src * alpha + np.float32(grey)


class SaturationJitterAug(Augmenter):
    """Blend with the per-pixel grey level, weight 1 + U(-saturation, saturation)."""

    def __init__(self, saturation: float) -> None:
        super().__init__(saturation=saturation)
        self.saturation = saturation

    def apply(self, src: np.ndarray, rng: Any = None) -> np.ndarray:
        """Saturation jitter."""
        rng = rng if rng is not None else np.random
        alpha = np.float32(1.0 + rng.uniform(-self.saturation, self.saturation))
        grey = (src * _GREY_COEF).sum(axis=2, keepdims=True) * (1.0 - alpha)
        return src * alpha + grey


class ColorJitterAug(SequentialAug):
    """Brightness, contrast and saturation jitter in a random order."""

    def __init__(self, brightness: float, contrast: float, saturation: float) -> None:
        ts: list[Augmenter] = []
        if brightness > 0:
            ts.append(BrightnessJitterAug(brightness))
        if contrast > 0:
            ts.append(ContrastJitterAug(contrast))
        if saturation > 0:
            ts.append(SaturationJitterAug(saturation))
        super().__init__(ts)

    def apply(self, src: np.ndarray, rng: Any = None) -> np.ndarray:
        """The jitters, shuffled."""
        rng = rng if rng is not None else np.random
        for index in rng.permutation(len(self.ts)):
            src = self.ts[index].apply(src, rng)
        return src


class ColorNormalizeAug(Augmenter):
    """(src - mean) / std per channel."""

    def __init__(self, mean: Any, std: Any) -> None:
        super().__init__(mean=mean, std=std)
        self.mean = None if mean is None else np.asarray(mean, np.float32)
        self.std = None if std is None else np.asarray(std, np.float32)

    def apply(self, src: np.ndarray, rng: Any = None) -> np.ndarray:
        """Normalise."""
        if self.mean is not None:
            src = src - self.mean
        if self.std is not None:
            src = src / self.std
        return src


def CreateAugmenter(
    data_shape: Sequence[int],
    resize: int = 0,
    rand_crop: bool = False,
    rand_resize: bool = False,
    rand_mirror: bool = False,
    mean: Any = None,
    std: Any = None,
    brightness: float = 0,
    contrast: float = 0,
    saturation: float = 0,
    hue: float = 0,
    pca_noise: float = 0,
    rand_gray: float = 0,
    inter_method: int = 2,
) -> list[Augmenter]:
    """MXNet's default augmenter list for images of ``data_shape`` (C, H, W).

    ``mean=True`` / ``std=True`` use ImageNet's RGB mean and std.
    """
    if hue or pca_noise or rand_gray:
        raise NotSupportedError(
            "CreateAugmenter: hue, pca_noise and rand_gray are not implemented; pass 0"
        )
    augs: list[Augmenter] = []
    if resize > 0:
        augs.append(ResizeAug(resize, inter_method))
    crop_size = (data_shape[2], data_shape[1])
    if rand_crop or rand_resize:
        augs.append(RandomCropAug(crop_size, inter_method))
    else:
        augs.append(CenterCropAug(crop_size, inter_method))
    if rand_mirror:
        augs.append(HorizontalFlipAug(0.5))
    augs.append(CastAug())
    if brightness or contrast or saturation:
        augs.append(ColorJitterAug(brightness, contrast, saturation))
    if mean is True:
        mean = np.array([123.68, 116.28, 103.53])
    if std is True:
        std = np.array([58.395, 57.12, 57.375])
    if mean is not None or std is not None:
        augs.append(ColorNormalizeAug(mean, std))
    return augs
