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
from typing import Any

from ..ndarray.compat import binary_dispatch
from .symbol import Symbol

__all__ = ["histogram", "hypot", "maximum", "minimum", "pow", "power", "split_v2"]

_namespace = sys.modules[__package__]
maximum = binary_dispatch("maximum", _namespace, Symbol)
minimum = binary_dispatch("minimum", _namespace, Symbol)
hypot = binary_dispatch("hypot", _namespace, Symbol)
power = binary_dispatch("power", _namespace, Symbol)
pow = power


def split_v2(
    ary: Symbol, indices_or_sections: Any, axis: int = 0, squeeze_axis: bool = False, **kwargs: Any
) -> Symbol:
    """Split at indices, or into equal sections (MXNet: ``mx.sym.split_v2``; ``_split_v2``)."""
    from ..operator.ops.stats_compat import split_v2_params
    from .creation import create

    params = split_v2_params(indices_or_sections, axis, squeeze_axis)
    return create("_split_v2", ary, hint="split_v2", **params, **kwargs)


def histogram(a: Any, bins: Any = 10, range: Any = None, **kwargs: Any) -> Any:  # noqa: A002
    """Counts over ``bins`` equal bins of ``range``, or over the edges symbol ``bins``."""
    from ..operator.ops.vision_small import histogram_params
    from .creation import create

    given, params = histogram_params(bins, range)
    if given:
        return create("_histogram", a, bins, hint="histogram", **kwargs)
    return create("_histogram", a, hint="histogram", **params, **kwargs)
