"""``mx.sym.contrib``: the ``_contrib_<name>`` operators as symbols, and ``rand_zipfian``.

Example::

    >>> import mxnb as mx
    >>> sampled, true_counts, counts = mx.sym.contrib.rand_zipfian(mx.sym.Variable('c'), 4, 5)
    >>> true_counts.infer_shape(c=(2,))[1], counts.infer_shape()[1]
    ([(2,)], [(4,)])
"""

from __future__ import annotations

from typing import Any

from ..ndarray.contrib import zipfian_sample
from ..operator.prefixed import forwarder

__all__ = ["rand_zipfian"]

__getattr__ = forwarder("mxnb.symbol.contrib", "_contrib_", "mxnb.symbol")


def rand_zipfian(true_classes: Any, num_sampled: int, range_max: int) -> tuple:
    """The symbols of :func:`mxnb.ndarray.contrib.rand_zipfian`: (sampled, expected true, expected sampled)."""
    from .. import symbol

    return zipfian_sample(symbol, true_classes, num_sampled, range_max)
