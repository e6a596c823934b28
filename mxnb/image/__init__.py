"""``mx.image``: decode, resize and augment images (Pillow), and ``ImageIter``.

Chapters of this package:
    codec.py       imdecode / imresize, RGB and OpenCV-style BGR encode / decode
    augment.py     augmenters and CreateAugmenter, MXNet's default pipeline
    image_iter.py  ImageIter: records or image files through any augmenter list

Example::

    >>> import mxnb as mx
    >>> [type(a).__name__ for a in mx.image.CreateAugmenter((3, 32, 32), rand_crop=True)]
    ['RandomCropAug', 'CastAug']
"""

from . import codec
from .augment import (
    Augmenter,
    BrightnessJitterAug,
    CastAug,
    CenterCropAug,
    ColorJitterAug,
    ColorNormalizeAug,
    ContrastJitterAug,
    CreateAugmenter,
    ForceResizeAug,
    HorizontalFlipAug,
    RandomCropAug,
    ResizeAug,
    SaturationJitterAug,
    SequentialAug,
    center_crop,
    fixed_crop,
    random_crop,
    resize_short,
)
from .codec import imdecode, imresize
from .image_iter import ImageIter, read_list

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
    "ImageIter",
    "RandomCropAug",
    "ResizeAug",
    "SaturationJitterAug",
    "SequentialAug",
    "center_crop",
    "codec",
    "fixed_crop",
    "imdecode",
    "imresize",
    "random_crop",
    "read_list",
    "resize_short",
]
