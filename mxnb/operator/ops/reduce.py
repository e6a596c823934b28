"""Reductions: sum, mean, prod, max, min, nansum, norm, argmax, argmin.

Idea (MXNet: src/operator/tensor/broadcast_reduce_op*): reduce over ``axis``
(an int or a tuple; ``None``/``()`` is every axis), optionally keeping the
reduced axes (``keepdims``) or reducing over every axis *except* the given
ones (``exclude``).  The gradient broadcasts the head gradient back over the
reduced axes.

Rules:
    * a reduction to a scalar gives shape ``(1,)``, as MXNet's NDArray does;
    * sum / mean read only the head gradient; max / min route it to every
      element equal to the result and read input and output; prod reads both
      (dx = dy * y / x);
    * argmax / argmin return indices as floats in the input dtype and have no
      gradient.

Example::

    >>> import numpy as np
    >>> from mxnb.operator import eager
    >>> eager.run_forward('sum', [np.ones((2, 3), np.float32)], {'axis': 1})[0][0].tolist()
    [3.0, 3.0]
"""

from __future__ import annotations

import math
from typing import Any

from ..param import AXIS, Param, Shape
from ..partial import merge, partial_shape
from ..registry import register, register_alias
from ._common import KernelProp, normalize_axes, normalize_axis, write

__all__ = ["ArgReduceProp", "NormProp", "ReduceProp"]


def _kept_from_output(shape: tuple, axes: tuple, keepdims: bool, out: tuple | None) -> tuple:
    """Fill the kept (not reduced) axes of a partial ``shape`` from the output's."""
    kept = [axis for axis in range(len(shape)) if axis not in axes]
    if out is None or not kept:
        return shape
    from_output = tuple(out[axis] for axis in kept) if keepdims else tuple(out)
    filled = merge(tuple(shape[axis] for axis in kept), from_output, "kept axes and output")
    merged = list(shape)
    for axis, size in zip(kept, filled):
        merged[axis] = size
    return tuple(merged)


def _reduced_shape(shape: tuple, axes: tuple, keepdims: bool) -> tuple[tuple, tuple]:
    """Return (output shape, keepdims shape) of reducing ``shape`` over ``axes``."""
    kept = tuple(1 if i in axes else s for i, s in enumerate(shape))
    if keepdims:
        return kept, kept
    out = tuple(s for i, s in enumerate(shape) if i not in axes)
    return (out or (1,)), kept


class ReduceProp(KernelProp):
    """Base of sum / mean / prod / max / min / nansum / nanprod."""

    axis = Param(
        Shape, unbounded=AXIS, default=None, optional=True, doc="Axis or axes to reduce; None: all."
    )
    keepdims = Param(bool, default=False, doc="Keep reduced axes with size 1.")
    exclude = Param(bool, default=False, doc="Reduce over every axis except those in `axis`.")

    kind = "sum"
    uses_data = False

    def _axes(self, ndim: int) -> tuple:
        return normalize_axes(self.axis, ndim, self.op_name, self.exclude)

    @partial_shape
    def infer_shape(self, in_shape, out_shape=None):
        """Drop (or keep as 1) the reduced axes; ``(1,)`` for a full reduction.

        Partial shapes: the kept axes flow both ways.
        """
        shape = in_shape[0]
        if shape is None:
            return None
        if self.kind in ("max", "min") and 0 in tuple(shape):
            from ...util import is_np_shape

            if is_np_shape():  # MXNet: "Reduction input's size should > 0" (0 is real here)
                raise self.shape_error(
                    f"the input has shape {tuple(shape)}, which holds no element; "
                    f"{self.kind} of an empty array is undefined"
                )
        axes = self._axes(len(shape))
        shape = _kept_from_output(tuple(shape), axes, self.keepdims, (out_shape or [None])[0])
        out, _ = _reduced_shape(shape, axes, self.keepdims)
        return [shape], [out], []

    def declare_backward_dependency(self, out_grad, in_data, out_data):
        """sum/mean: head gradient only; max/min/prod: also input and output."""
        if self.uses_data:
            return [out_grad[0], in_data[0], out_data[0]]
        return [out_grad[0]]

    def forward(self, ctx, in_data, req, out_data, aux):
        """Reduce over the axes with xp's reduction of the same name."""
        xp, x = ctx.xp, in_data[0]
        axes = self._axes(x.ndim)
        function = {
            "sum": xp.sum,
            "mean": xp.mean,
            "prod": xp.prod,
            "max": xp.max,
            "min": xp.min,
            "nansum": xp.nansum,
            "nanprod": xp.nanprod,
        }[self.kind]
        value = function(x, axis=axes, keepdims=True) if axes else x.copy()
        write(out_data[0], req[0], value.reshape(out_data[0].shape))

    def backward(self, ctx, out_grad, in_data, out_data, req, in_grad, aux):
        """Broadcast the head gradient back over the reduced axes."""
        xp = ctx.xp
        shape = in_grad[0].shape
        axes = self._axes(len(shape))
        _, kept = _reduced_shape(tuple(shape), axes, True)
        g = out_grad[0].reshape(kept)
        if self.kind in ("sum", "nansum"):
            value = xp.broadcast_to(g, shape)
            if self.kind == "nansum":
                value = value * ~xp.isnan(in_data[0]) if in_data[0] is not None else value
        elif self.kind == "mean":
            count = math.prod(shape[a] for a in axes) if axes else 1
            value = xp.broadcast_to(g / count, shape)
        elif self.kind in ("max", "min"):
            y = out_data[0].reshape(kept)
            value = g * (in_data[0] == y)
        else:  # prod, nanprod
            y = out_data[0].reshape(kept)
            value = g * y / in_data[0]
        write(in_grad[0], req[0], value)


_REDUCTIONS = {
    "sum": ("Sum of array elements over the given axes.", False, ["sum_axis"]),
    "mean": ("Mean of array elements over the given axes.", False, []),
    "prod": ("Product of array elements over the given axes.", True, []),
    "max": (
        "Maximum over the given axes (the gradient goes to every maximal element).",
        True,
        ["max_axis"],
    ),
    "min": (
        "Minimum over the given axes (the gradient goes to every minimal element).",
        True,
        ["min_axis"],
    ),
    "nansum": ("Sum treating NaN as zero.", True, []),
    "nanprod": ("Product treating NaN as one.", True, []),
}

for _kind, (_doc, _uses, _aliases) in _REDUCTIONS.items():
    _attrs = {"kind": _kind, "uses_data": _uses, "__doc__": _doc}
    register(_kind)(type(f"ReduceProp_{_kind}", (ReduceProp,), _attrs))
    for _alias in _aliases:
        register_alias(_alias, _kind)


@register("norm")
class NormProp(KernelProp):
    """L1 or L2 norm over the given axes (default: of the flattened array, shape (1,))."""

    ord = Param(int, low=1, high=2, default=2, choices=None, doc="Order of the norm: 1 or 2.")
    axis = Param(Shape, unbounded=AXIS, default=None, optional=True, doc="Axis or axes; None: all.")
    keepdims = Param(bool, default=False, doc="Keep reduced axes with size 1.")
    out_dtype = Param(str, default=None, optional=True, doc="Ignored (MXNet: accumulation dtype).")

    @partial_shape
    def infer_shape(self, in_shape, out_shape=None):
        """Like a reduction (partial shapes forward)."""
        shape = in_shape[0]
        if shape is None:
            return None
        if self.ord not in (1, 2):
            raise self.shape_error(f"ord must be 1 or 2, got {self.ord}")
        out, _ = _reduced_shape(
            tuple(shape), normalize_axes(self.axis, len(shape), "norm"), self.keepdims
        )
        return [tuple(shape)], [out], []

    def declare_backward_dependency(self, out_grad, in_data, out_data):
        """Head gradient, input and output."""
        return [out_grad[0], in_data[0], out_data[0]]

    def forward(self, ctx, in_data, req, out_data, aux):
        """sum(|x|) or sqrt(sum(x*x))."""
        xp, x = ctx.xp, in_data[0]
        axes = normalize_axes(self.axis, x.ndim, "norm")
        if self.ord == 1:
            value = xp.sum(xp.abs(x), axis=axes, keepdims=True)
        else:
            value = xp.sqrt(xp.sum(x * x, axis=axes, keepdims=True))
        write(out_data[0], req[0], value.reshape(out_data[0].shape))

    def backward(self, ctx, out_grad, in_data, out_data, req, in_grad, aux):
        """dx = dy * sign(x) (L1) or dy * x / y (L2)."""
        xp, x = ctx.xp, in_data[0]
        axes = normalize_axes(self.axis, x.ndim, "norm")
        _, kept = _reduced_shape(tuple(x.shape), axes, True)
        g = out_grad[0].reshape(kept)
        if self.ord == 1:
            value = g * xp.sign(x)
        else:
            y = out_data[0].reshape(kept)
            value = g * x / xp.where(y == 0, 1, y)
        write(in_grad[0], req[0], value)


class ArgReduceProp(KernelProp):
    """Base of argmax / argmin: index of the extreme value along one axis."""

    axis = Param(
        int,
        unbounded=AXIS,
        default=None,
        optional=True,
        doc="The axis; None: of the flattened array.",
    )
    keepdims = Param(bool, default=False, doc="Keep the reduced axis with size 1.")
    kind = "argmax"

    @partial_shape
    def infer_shape(self, in_shape, out_shape=None):
        """Drop (or keep as 1) the axis; ``(1,)`` when axis is None (partial shapes forward)."""
        shape = in_shape[0]
        if shape is None:
            return None
        shape = tuple(shape)
        if self.axis is None:
            return [shape], [(1,) * len(shape) if self.keepdims else (1,)], []
        axis = normalize_axis(self.axis, len(shape), self.op_name)
        out, _ = _reduced_shape(shape, (axis,), self.keepdims)
        return [shape], [out], []

    def declare_backward_dependency(self, out_grad, in_data, out_data):
        """Nothing: indices have no gradient."""
        return []

    def forward(self, ctx, in_data, req, out_data, aux):
        """Indices (first occurrence), as floats of the output dtype."""
        xp, x = ctx.xp, in_data[0]
        function = xp.argmax if self.kind == "argmax" else xp.argmin
        if self.axis is None:
            value = function(x.reshape(-1))
        else:
            value = function(x, axis=normalize_axis(self.axis, x.ndim, self.op_name))
        write(out_data[0], req[0], xp.asarray(value).reshape(out_data[0].shape))

    def backward(self, ctx, out_grad, in_data, out_data, req, in_grad, aux):
        """Zero gradient."""
        write(in_grad[0], req[0], 0)


register("argmax")(
    type("ArgmaxProp", (ArgReduceProp,), {"kind": "argmax", "__doc__": "Index of the maximum."})
)
register("argmin")(
    type("ArgminProp", (ArgReduceProp,), {"kind": "argmin", "__doc__": "Index of the minimum."})
)


@register("argmax_channel")
class ArgmaxChannelProp(ArgReduceProp):
    """Index of the maximum along the last axis."""

    kind = "argmax"

    def init(self, kwargs: dict[str, Any]) -> None:
        """argmax_channel takes no parameters; it is argmax over axis -1."""
        super().init({"axis": -1, **kwargs})
