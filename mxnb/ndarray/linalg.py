"""``mx.nd.linalg``: MXNet's namespace for the operators registered as ``_linalg_<name>``.

Only ``gelqf`` (the LQ factorization, :mod:`mxnb.operator.ops.linalg`) is built.

Example::

    >>> import mxnb as mx
    >>> q, l = mx.nd.linalg.gelqf(mx.nd.array([[3.0, 4.0]]))
    >>> l.asnumpy().tolist()
    [[-5.0]]
"""

from __future__ import annotations

from ..operator.prefixed import forwarder

__getattr__ = forwarder("mxnb.ndarray.linalg", "_linalg_", "mxnb.ndarray")
