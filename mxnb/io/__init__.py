"""``mx.io``: data iterators — the batch protocol and the loaders built on it.

Chapters of this package:
    base.py           DataDesc, DataBatch, the DataIter protocol
    ndarray_iter.py   NDArrayIter: arrays in memory, MXNet's last-batch rules
    csv_iter.py       CSVIter: CSV files, round_batch as MXNet's C++ iterator
    resize_iter.py    ResizeIter: a fixed number of batches per epoch
    prefetch.py       EnginePrefetcher and PrefetchingIter: loading as engine ops
    image_record_iter.py   ImageRecordIter: RecordIO images, decoded in threads, prefetched

Example::

    >>> import numpy as np, mxnb as mx
    >>> it = mx.io.NDArrayIter(np.ones((10, 3)), np.arange(10), batch_size=5)
    >>> [b.data[0].shape for b in it]
    [(5, 3), (5, 3)]
"""

from .base import DataBatch, DataDesc, DataIter
from .csv_iter import CSVIter
from .image_record_iter import ImageRecordIter
from .ndarray_iter import NDArrayIter
from .prefetch import EnginePrefetcher, PrefetchingIter
from .resize_iter import ResizeIter

__all__ = [
    "CSVIter",
    "DataBatch",
    "DataDesc",
    "DataIter",
    "EnginePrefetcher",
    "ImageRecordIter",
    "NDArrayIter",
    "PrefetchingIter",
    "ResizeIter",
]
