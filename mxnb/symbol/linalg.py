"""``mx.sym.linalg``: the ``_linalg_<name>`` operators as symbols (only ``gelqf`` is built).

Example::

    >>> import mxnb as mx
    >>> mx.sym.linalg.gelqf(mx.sym.Variable('a')).infer_shape(a=(2, 3))[1]
    [(2, 3), (2, 2)]
"""

from __future__ import annotations

from ..operator.prefixed import forwarder

__getattr__ = forwarder("mxnb.symbol.linalg", "_linalg_", "mxnb.symbol")
