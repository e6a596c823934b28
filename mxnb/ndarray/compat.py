"""MXNet 1.x NDArray entry points that are thin over mxnb's own: ``from_numpy``.

Example::

    >>> import numpy as np
    >>> import mxnb as mx
    >>> mx.nd.from_numpy(np.arange(3, dtype=np.float32)).asnumpy().tolist()
    [0.0, 1.0, 2.0]
"""

from __future__ import annotations

import numpy as np

from ..base import ParamError
from .creation import array
from .ndarray import NDArray

__all__ = ["from_numpy"]


def from_numpy(ndarray: np.ndarray, zero_copy: bool = True) -> NDArray:
    """An NDArray with the values of a C-contiguous numpy array (MXNet: ``mx.nd.from_numpy``).

    mxnb's arrays live in storage owned by its allocator, so the values are
    always copied; ``zero_copy`` is accepted for MXNet compatibility.
    """
    if not isinstance(ndarray, np.ndarray):
        raise ParamError(f"from_numpy: expected a numpy.ndarray, found {type(ndarray).__name__}")
    if not ndarray.flags["C_CONTIGUOUS"]:
        raise ParamError("from_numpy: the array is not C-contiguous; pass np.ascontiguousarray(x)")
    return array(ndarray, dtype=ndarray.dtype)
