"""MXNet 1.x NDArray entry points that are thin over mxnb's own.

``from_numpy``; ``maximum`` / ``minimum`` / ``hypot`` / ``power`` / ``pow`` and
the broadcasting ``add`` / ``subtract`` / ``multiply`` / ``divide`` / ``modulo`` /
comparisons / ``logical_and`` / ``logical_or`` / ``logical_xor`` (array or number on either side); ``moveaxis``; ``eye`` (positional ``N, M, k``);
``onehot_encode``.

Example::

    >>> import numpy as np
    >>> import mxnb as mx
    >>> mx.nd.from_numpy(np.arange(3, dtype=np.float32)).asnumpy().tolist()
    [0.0, 1.0, 2.0]
"""

from __future__ import annotations

import math
import operator
import sys
from typing import Any

import numpy as np

from ..base import ParamError
from .creation import array
from .ndarray import NDArray

__all__ = [
    "ARITHMETIC",
    "binary_dispatch",
    "eye",
    "from_numpy",
    "hypot",
    "maximum",
    "minimum",
    "moveaxis",
    "onehot_encode",
    "power",
    "split_v2",
    "histogram",
]


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


# ---------------------------------------------------------------------------
# maximum / minimum / hypot / power: MXNet's scalar-or-array dispatch
# ---------------------------------------------------------------------------

_BINARY_DISPATCH = {
    # name: (op for two arrays, op for array-scalar, op for scalar-array, python for two scalars)
    "maximum": ("broadcast_maximum", "_maximum_scalar", "_maximum_scalar", max),
    "minimum": ("broadcast_minimum", "_minimum_scalar", "_minimum_scalar", min),
    "hypot": ("broadcast_hypot", "_hypot_scalar", "_hypot_scalar", math.hypot),
    "power": ("broadcast_power", "_power_scalar", "_rpower_scalar", pow),
    "add": ("broadcast_add", "_plus_scalar", "_plus_scalar", operator.add),
    "subtract": ("broadcast_sub", "_minus_scalar", "_rminus_scalar", operator.sub),
    "multiply": ("broadcast_mul", "_mul_scalar", "_mul_scalar", operator.mul),
    "divide": ("broadcast_div", "_div_scalar", "_rdiv_scalar", operator.truediv),
    "modulo": ("broadcast_mod", "_mod_scalar", "_rmod_scalar", operator.mod),
    "equal": ("broadcast_equal", "_equal_scalar", "_equal_scalar", operator.eq),
    "not_equal": ("broadcast_not_equal", "_not_equal_scalar", "_not_equal_scalar", operator.ne),
    "greater": ("broadcast_greater", "_greater_scalar", "_lesser_scalar", operator.gt),
    "greater_equal": (
        "broadcast_greater_equal", "_greater_equal_scalar", "_lesser_equal_scalar", operator.ge
    ),
    "lesser": ("broadcast_lesser", "_lesser_scalar", "_greater_scalar", operator.lt),
    "lesser_equal": (
        "broadcast_lesser_equal", "_lesser_equal_scalar", "_greater_equal_scalar", operator.le
    ),
    "logical_and": (
        "broadcast_logical_and", "_logical_and_scalar", "_logical_and_scalar",
        lambda a, b: float(bool(a) and bool(b)),
    ),
    "logical_or": (
        "broadcast_logical_or", "_logical_or_scalar", "_logical_or_scalar",
        lambda a, b: float(bool(a) or bool(b)),
    ),
    "logical_xor": (
        "broadcast_logical_xor", "_logical_xor_scalar", "_logical_xor_scalar",
        lambda a, b: float(bool(a) != bool(b)),
    ),
}  # fmt: skip


def binary_dispatch(name: str, namespace: Any, array_type: type) -> Any:
    """Make MXNet's ``name(lhs, rhs)`` over ``namespace`` (``mx.nd`` or ``mx.sym``).

    Two arrays use the broadcast op, an array and a number the scalar op
    (``scalar=``), two numbers plain Python (MXNet: ``_ufunc_helper``).
    """
    both, with_scalar, scalar_first, python = _BINARY_DISPATCH[name]

    def function(lhs: Any, rhs: Any) -> Any:
        if isinstance(lhs, array_type) and isinstance(rhs, array_type):
            return getattr(namespace, both)(lhs, rhs)
        if isinstance(lhs, array_type):
            return getattr(namespace, with_scalar)(lhs, scalar=float(rhs))
        if isinstance(rhs, array_type):
            return getattr(namespace, scalar_first)(rhs, scalar=float(lhs))
        return python(lhs, rhs)

    function.__name__ = function.__qualname__ = name
    function.__doc__ = (
        f"MXNet's ``{name}(lhs, rhs)``: ``{both}`` for two arrays, ``{with_scalar}`` / "
        f"``{scalar_first}`` with a number, Python's for two numbers."
    )
    return function


maximum = binary_dispatch("maximum", sys.modules[__package__], NDArray)
minimum = binary_dispatch("minimum", sys.modules[__package__], NDArray)
hypot = binary_dispatch("hypot", sys.modules[__package__], NDArray)
power = binary_dispatch("power", sys.modules[__package__], NDArray)
#: MXNet 1.x's array functions with broadcasting (``mx.nd.add(a, b)``, ``mx.nd.equal`` ...).
ARITHMETIC = {name: binary_dispatch(name, sys.modules[__package__], NDArray)
              for name in list(_BINARY_DISPATCH)[4:]}  # fmt: skip


def moveaxis(tensor: Any, source: int, destination: int) -> Any:
    """Move axis ``source`` to ``destination`` (a ``transpose``; MXNet: ``mx.nd.moveaxis``)."""
    ndim = len(tensor.shape)
    for what, axis in (("source", source), ("destination", destination)):
        if not -ndim <= axis < ndim:
            raise ParamError(
                f"moveaxis: {what} axis {axis} is out of range for shape {tuple(tensor.shape)}"
            )
    order = [a for a in range(ndim) if a != source % ndim]
    order.insert(destination % ndim, source % ndim)
    return tensor.transpose(order)


def eye(
    N: int, M: int = 0, k: int = 0, ctx: Any = None, dtype: Any = None, **kwargs: Any
) -> NDArray:
    """A 2-D array with ones on the ``k``-th diagonal (MXNet: ``mx.nd.eye``; the ``_eye`` op)."""
    from .register import make_op_function

    params: dict[str, Any] = {"N": int(N), "M": int(M), "k": int(k)}
    if dtype is not None:
        params["dtype"] = np.dtype(dtype).name
    if ctx is not None:
        params["ctx"] = ctx
    return make_op_function("_eye")(**params, **kwargs)


def onehot_encode(indices: NDArray, out: NDArray) -> NDArray:
    """Write the one-hot rows of ``indices`` into ``out`` (MXNet 1.x's legacy form of one_hot)."""
    if len(out.shape) != 2 or indices.shape != out.shape[:1]:
        raise ParamError(
            f"onehot_encode: out must be 2-D with one row per index; found indices "
            f"{indices.shape} and out {out.shape}"
        )
    from .register import make_op_function

    out[:] = make_op_function("one_hot")(indices, depth=out.shape[1], dtype=out.dtype.name)
    return out


def split_v2(
    ary: NDArray, indices_or_sections: Any, axis: int = 0, squeeze_axis: bool = False
) -> Any:
    """Split at indices, or into equal sections (MXNet: ``mx.nd.split_v2``; the ``_split_v2`` op)."""
    from ..operator.ops.stats_compat import split_v2_params
    from .invoke import invoke

    outputs = invoke("_split_v2", [ary], split_v2_params(indices_or_sections, axis, squeeze_axis))
    return outputs[0] if len(outputs) == 1 else outputs


def histogram(a: NDArray, bins: Any = 10, range: Any = None) -> Any:  # noqa: A002
    """Counts over ``bins`` equal bins of ``range``, or over the edges array ``bins``."""
    from ..operator.ops.vision_small import histogram_params
    from .invoke import invoke

    given, params = histogram_params(bins, range)
    return invoke("_histogram", [a, bins] if given else [a], params)
