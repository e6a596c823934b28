"""``mx.nd.image``: the ``_image_<name>`` operators on NDArrays (``normalize``).

Example::

    >>> import mxnb as mx
    >>> x = mx.nd.ones((3, 1, 1))
    >>> mx.nd.image.normalize(x, mean=(0, 1, 2), std=(1, 1, 1)).asnumpy().ravel().tolist()
    [1.0, 0.0, -1.0]
"""

from __future__ import annotations

from ..operator.prefixed import forwarder

__all__: list[str] = []

__getattr__ = forwarder("mxnb.ndarray.image", "_image_", "mxnb.ndarray")
