"""``mx.io``: data iterators — the batch protocol and the loaders built on it.

Chapters of this package:
    base.py           DataDesc, DataBatch, the DataIter protocol
    ndarray_iter.py   NDArrayIter: arrays in memory, MXNet's last-batch rules

Example::

    >>> import numpy as np, mxnb as mx
    >>> it = mx.io.NDArrayIter(np.ones((10, 3)), np.arange(10), batch_size=5)
    >>> [b.data[0].shape for b in it]
    [(5, 3), (5, 3)]
"""

from .base import DataBatch, DataDesc, DataIter
from .ndarray_iter import NDArrayIter

__all__ = ["DataBatch", "DataDesc", "DataIter", "NDArrayIter"]
