"""MXNet 1.x Symbol functions over mxnb's ops: ``maximum`` / ``minimum`` / ``hypot`` / ``power``.

The same scalar-or-symbol dispatch as ``mx.nd`` (see
:func:`mxnb.ndarray.compat.binary_dispatch`), over ``mx.sym``.

Example::

    >>> import mxnb as mx
    >>> mx.sym.maximum(mx.sym.Variable('x'), 0.5).list_arguments()
    ['x']
"""

from __future__ import annotations

import sys

from ..ndarray.compat import binary_dispatch
from .symbol import Symbol

__all__ = ["hypot", "maximum", "minimum", "power"]

_namespace = sys.modules[__package__]
maximum = binary_dispatch("maximum", _namespace, Symbol)
minimum = binary_dispatch("minimum", _namespace, Symbol)
hypot = binary_dispatch("hypot", _namespace, Symbol)
power = binary_dispatch("power", _namespace, Symbol)
