"""``mx.sym.image``: the ``_image_<name>`` operators as symbols (``normalize``).

Example::

    >>> import mxnb as mx
    >>> y = mx.sym.image.normalize(mx.sym.Variable('x'), mean=(0, 1, 2), std=(3, 2, 1))
    >>> y.infer_shape(x=(3, 4, 4))[1]
    [(3, 4, 4)]
"""

from __future__ import annotations

from ..operator.prefixed import forwarder

__all__: list[str] = []

__getattr__ = forwarder("mxnb.symbol.image", "_image_", "mxnb.symbol")
