"""More MXNet 1.x tensor operators that MXNet's own operator tests use.

Idea: small ops that rearrange, measure or compare arrays - ``reverse`` (alias
``flip``), ``reshape_like``, ``slice_like``, ``shape_array``, ``size_array``,
``diag``, ``depth_to_space`` / ``space_to_depth``, ``moments``, ``all_finite`` /
``multi_all_finite``, ``softmax_cross_entropy``, ``hard_sigmoid``,
``SoftmaxActivation``, ``logical_not``, ``gamma`` / ``gammaln`` and
``_split_v2``.  Each is a :class:`~._common.KernelProp` with MXNet's name,
parameters and output shape, a numpy forward and the gradient MXNet defines
(zero for the index-like outputs).

Rule: shapes and gradients follow MXNet 1.9.1 (src/operator/tensor/*); the
``*_like`` ops take only a shape from their second input and give it zero
gradient.  ``gamma`` / ``gammaln`` are defined for positive inputs (their
gradient uses a digamma series valid there).

State kept: none beyond the registry entries.

Example::

    >>> import numpy as np
    >>> from mxnb.operator import eager
    >>> outs, _, _ = eager.run_forward('reverse', [np.arange(3.0)], {'axis': (0,)})
    >>> outs[0].tolist()
    [2.0, 1.0, 0.0]
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..param import ANY, AXIS, Param, Shape
from ..registry import register, register_alias
from ._common import KernelProp, normalize_axis, write
from .elemwise import UnaryRule, _make_unary

__all__ = ["digamma"]


def digamma(x: np.ndarray) -> np.ndarray:
    """psi(x) for x > 0: recurrence up to x >= 6, then the asymptotic series."""
    x = np.array(x, dtype=np.float64)
    shift = np.zeros_like(x)
    while np.any(x < 6):
        small = x < 6
        shift = shift - np.where(small, 1.0 / np.where(small, x, 1.0), 0.0)
        x = np.where(small, x + 1, x)
    inv2 = 1.0 / (x * x)
    tail = 1 / 120 - inv2 * (1 / 252 - inv2 * (1 / 240 - inv2 / 132))
    series = np.log(x) - 0.5 / x - inv2 * (1 / 12 - inv2 * tail)
    return series + shift


_gamma = np.vectorize(math.gamma, otypes=[np.float64])
_lgamma = np.vectorize(math.lgamma, otypes=[np.float64])

for _name, _rule in {
    "logical_not": UnaryRule(
        lambda xp, x: (x == 0).astype(x.dtype), None, "none", "1 where x == 0, else 0."
    ),
    "gamma": UnaryRule(
        lambda xp, x: _gamma(x).astype(x.dtype),
        lambda xp, g, x, y: g * y * digamma(x).astype(x.dtype),
        "both",
        "The gamma function (x > 0).",
    ),
    "gammaln": UnaryRule(
        lambda xp, x: _lgamma(x).astype(x.dtype),
        lambda xp, g, x, y: g * digamma(x).astype(x.dtype),
        "input",
        "log |gamma(x)| (x > 0).",
    ),
}.items():
    _make_unary(_name, _rule)


class _OneInput(KernelProp):
    """One input ``data``; the subclass gives ``out_shape`` and the kernels."""

    def list_arguments(self) -> list[str]:
        """One input."""
        return ["data"]

    def out_shape(self, shape: tuple) -> tuple:
        """The output shape for input ``shape``."""
        raise NotImplementedError

    def infer_shape(self, in_shape):  # type: ignore[no-untyped-def]
        """The input's shape, and ``out_shape`` of it."""
        if in_shape[0] is None:
            return None
        shape = tuple(in_shape[0])
        return [shape], [self.out_shape(shape)], []


@register("hard_sigmoid")
class HardSigmoidProp(_OneInput):
    """clip(alpha * x + beta, 0, 1); gradient alpha inside (0, 1), 0 outside."""

    alpha = Param(float, unbounded=ANY, default=0.2, doc="Slope.")
    beta = Param(float, unbounded=ANY, default=0.5, doc="Intercept.")

    def out_shape(self, shape: tuple) -> tuple:
        """Elementwise."""
        return shape

    def declare_backward_dependency(self, out_grad, in_data, out_data):  # type: ignore[no-untyped-def]
        """The head gradient and the output."""
        return [out_grad[0], out_data[0]]

    def forward(self, ctx, in_data, req, out_data, aux):  # type: ignore[no-untyped-def]
        """Clip the line to [0, 1]."""
        write(out_data[0], req[0], ctx.xp.clip(self.alpha * in_data[0] + self.beta, 0, 1))

    def backward(self, ctx, out_grad, in_data, out_data, req, in_grad, aux):  # type: ignore[no-untyped-def]
        """alpha where the output is strictly inside (0, 1)."""
        y = out_data[0]
        write(in_grad[0], req[0], out_grad[0] * self.alpha * ((y > 0) & (y < 1)))


@register("reverse")
class ReverseProp(_OneInput):
    """Reverse the order of elements along ``axis`` (MXNet alias: ``flip``)."""

    axis = Param(Shape, unbounded=AXIS, doc="The axes to reverse.")

    def out_shape(self, shape: tuple) -> tuple:
        """Same shape."""
        return shape

    def _axes(self, ndim: int) -> tuple:
        return tuple(normalize_axis(a, ndim, self.op_name) for a in self.axis)

    def declare_backward_dependency(self, out_grad, in_data, out_data):  # type: ignore[no-untyped-def]
        """Only the head gradient."""
        return [out_grad[0]]

    def forward(self, ctx, in_data, req, out_data, aux):  # type: ignore[no-untyped-def]
        """xp.flip."""
        write(out_data[0], req[0], ctx.xp.flip(in_data[0], self._axes(in_data[0].ndim)))

    def backward(self, ctx, out_grad, in_data, out_data, req, in_grad, aux):  # type: ignore[no-untyped-def]
        """The head gradient reversed back."""
        g = out_grad[0]
        write(in_grad[0], req[0], ctx.xp.flip(g, self._axes(g.ndim)))


register_alias("flip", "reverse")


class _ShapeOf(_OneInput):
    """An int64 description of the input's shape; no gradient flows to the input."""

    def infer_type(self, in_type):  # type: ignore[no-untyped-def]
        """int64 output."""
        if in_type[0] is None:
            return None
        return [in_type[0]], [np.dtype("int64")], []

    def declare_backward_dependency(self, out_grad, in_data, out_data):  # type: ignore[no-untyped-def]
        """Nothing."""
        return []

    def backward(self, ctx, out_grad, in_data, out_data, req, in_grad, aux):  # type: ignore[no-untyped-def]
        """Zero."""
        write(in_grad[0], req[0], 0)


@register("shape_array")
class ShapeArrayProp(_ShapeOf):
    """The input's shape as a 1-d int64 array."""

    def out_shape(self, shape: tuple) -> tuple:
        """(ndim,)."""
        return (len(shape),)

    def forward(self, ctx, in_data, req, out_data, aux):  # type: ignore[no-untyped-def]
        """The shape."""
        write(out_data[0], req[0], ctx.xp.asarray(in_data[0].shape, dtype="int64"))


@register("size_array")
class SizeArrayProp(_ShapeOf):
    """The input's number of elements as a (1,) int64 array."""

    def out_shape(self, shape: tuple) -> tuple:
        """(1,)."""
        return (1,)

    def forward(self, ctx, in_data, req, out_data, aux):  # type: ignore[no-untyped-def]
        """The size."""
        write(out_data[0], req[0], ctx.xp.asarray([in_data[0].size], dtype="int64"))


class _LikeProp(KernelProp):
    """Two inputs; the second only lends its shape and gets zero gradient."""

    def declare_backward_dependency(self, out_grad, in_data, out_data):  # type: ignore[no-untyped-def]
        """Only the head gradient."""
        return [out_grad[0]]

    def infer_type(self, in_type):  # type: ignore[no-untyped-def]
        """The output has the first input's dtype; the second keeps its own."""
        if in_type[0] is None:
            return None
        return [in_type[0], in_type[1] or in_type[0]], [in_type[0]], []


@register("reshape_like")
class ReshapeLikeProp(_LikeProp):
    """Reshape ``lhs[lhs_begin:lhs_end]`` to ``rhs[rhs_begin:rhs_end]``'s dimensions."""

    lhs_begin = Param(int, unbounded=AXIS, default=None, optional=True, doc="First lhs axis.")
    lhs_end = Param(int, unbounded=AXIS, default=None, optional=True, doc="End lhs axis.")
    rhs_begin = Param(int, unbounded=AXIS, default=None, optional=True, doc="First rhs axis.")
    rhs_end = Param(int, unbounded=AXIS, default=None, optional=True, doc="End rhs axis.")

    def list_arguments(self) -> list[str]:
        """``lhs`` is reshaped, ``rhs`` gives the shape."""
        return ["lhs", "rhs"]

    @staticmethod
    def _range(begin: int | None, end: int | None, ndim: int) -> tuple[int, int]:
        begin = 0 if begin is None else (begin + ndim if begin < 0 else begin)
        end = ndim if end is None else (end + ndim if end < 0 else end)
        return begin, end

    def infer_shape(self, in_shape):  # type: ignore[no-untyped-def]
        """lhs[:lb] + rhs[rb:re] + lhs[le:]; the sizes must agree."""
        lhs, rhs = in_shape
        if lhs is None or rhs is None:
            return None
        lhs, rhs = tuple(lhs), tuple(rhs)
        lb, le = self._range(self.lhs_begin, self.lhs_end, len(lhs))
        rb, re = self._range(self.rhs_begin, self.rhs_end, len(rhs))
        out = lhs[:lb] + rhs[rb:re] + lhs[le:]
        if math.prod(out) != math.prod(lhs):
            raise self.shape_error(f"cannot reshape lhs {lhs} to {out} (from rhs {rhs})")
        return [lhs, rhs], [out], []

    def forward(self, ctx, in_data, req, out_data, aux):  # type: ignore[no-untyped-def]
        """A reshape."""
        write(out_data[0], req[0], in_data[0].reshape(out_data[0].shape))

    def backward(self, ctx, out_grad, in_data, out_data, req, in_grad, aux):  # type: ignore[no-untyped-def]
        """Reshape back; rhs gets zero."""
        write(in_grad[0], req[0], out_grad[0].reshape(in_grad[0].shape))
        write(in_grad[1], req[1], 0)


@register("slice_like")
class SliceLikeProp(_LikeProp):
    """``data`` cut from index 0 to ``shape_like``'s size along ``axes`` (all when empty)."""

    axes = Param(Shape, unbounded=AXIS, default=(), doc="Axes to slice; () for all.")

    def list_arguments(self) -> list[str]:
        """``data`` is sliced, ``shape_like`` gives the sizes."""
        return ["data", "shape_like"]

    def _axes(self, ndim: int, like_ndim: int) -> list[int]:
        if not self.axes:
            return list(range(min(ndim, like_ndim)))
        return [normalize_axis(a, ndim, self.op_name) for a in self.axes]

    def infer_shape(self, in_shape):  # type: ignore[no-untyped-def]
        """data's shape with shape_like's size on the sliced axes."""
        data, like = in_shape
        if data is None or like is None:
            return None
        data, like = tuple(data), tuple(like)
        out = list(data)
        for axis in self._axes(len(data), len(like)):
            if like[axis] > data[axis]:
                raise self.shape_error(f"axis {axis}: shape_like {like} exceeds data {data}")
            out[axis] = like[axis]
        return [data, like], [tuple(out)], []

    def _index(self, out_shape: tuple) -> tuple:
        return tuple(slice(0, size) for size in out_shape)

    def forward(self, ctx, in_data, req, out_data, aux):  # type: ignore[no-untyped-def]
        """A leading slice."""
        write(out_data[0], req[0], in_data[0][self._index(out_data[0].shape)])

    def backward(self, ctx, out_grad, in_data, out_data, req, in_grad, aux):  # type: ignore[no-untyped-def]
        """The head gradient in the sliced region, zero elsewhere; shape_like gets zero."""
        grad = ctx.xp.zeros(in_grad[0].shape, dtype=out_grad[0].dtype)
        grad[self._index(out_grad[0].shape)] = out_grad[0]
        write(in_grad[0], req[0], grad)
        write(in_grad[1], req[1], 0)


@register("diag")
class DiagProp(_OneInput):
    """A 1-d input: the matrix with it on diagonal ``k``; else diagonal ``k`` of axes 1, 2."""

    k = Param(int, unbounded=ANY, default=0, doc="Diagonal offset.")
    axis1 = Param(int, unbounded=AXIS, default=0, doc="First axis of the 2-d sub-arrays.")
    axis2 = Param(int, unbounded=AXIS, default=1, doc="Second axis of the 2-d sub-arrays.")

    def out_shape(self, shape: tuple) -> tuple:
        """As numpy's diag / diagonal."""
        if len(shape) == 1:
            side = shape[0] + abs(self.k)
            return (side, side)
        rows, cols = shape[self.axis1], shape[self.axis2]
        if self.k > cols or -self.k > rows:  # MXNet: k == cols still gives an empty diagonal
            raise self.shape_error(
                f"Diagonal does not exist: k={self.k} is outside the {rows} x {cols} matrix "
                f"of axes ({self.axis1}, {self.axis2}); use -{rows} <= k <= {cols}"
            )
        return np.diagonal(np.empty(shape, dtype=np.int8), self.k, self.axis1, self.axis2).shape

    def declare_backward_dependency(self, out_grad, in_data, out_data):  # type: ignore[no-untyped-def]
        """Only the head gradient."""
        return [out_grad[0]]

    def forward(self, ctx, in_data, req, out_data, aux):  # type: ignore[no-untyped-def]
        """xp.diag / xp.diagonal."""
        x, xp = in_data[0], ctx.xp
        value = (
            xp.diag(x, self.k) if x.ndim == 1 else xp.diagonal(x, self.k, self.axis1, self.axis2)
        )
        write(out_data[0], req[0], value)

    def backward(self, ctx, out_grad, in_data, out_data, req, in_grad, aux):  # type: ignore[no-untyped-def]
        """The diagonal of the head gradient, or the head gradient put back on the diagonal."""
        xp, g = ctx.xp, out_grad[0]
        if in_grad[0].ndim == 1:
            write(in_grad[0], req[0], xp.diagonal(g, self.k))
            return
        ndim = in_grad[0].ndim
        a1, a2 = normalize_axis(self.axis1, ndim), normalize_axis(self.axis2, ndim)
        grad = xp.moveaxis(xp.zeros(in_grad[0].shape, dtype=g.dtype), (a1, a2), (-2, -1))
        n = g.shape[-1]
        rows = xp.arange(n) + max(-self.k, 0)
        grad[..., rows, rows + self.k] = g
        write(in_grad[0], req[0], xp.moveaxis(grad, (-2, -1), (a1, a2)))


class _BlockProp(_OneInput):
    """depth_to_space / space_to_depth: move ``block_size`` x ``block_size`` blocks."""

    block_size = Param(int, low=1, doc="Edge of the moved blocks.")

    def declare_backward_dependency(self, out_grad, in_data, out_data):  # type: ignore[no-untyped-def]
        """Only the head gradient."""
        return [out_grad[0]]

    def _move(self, x: Any, to_space: bool) -> Any:
        b = self.block_size
        n, c, h, w = x.shape
        if to_space:
            y = x.reshape(n, b, b, c // (b * b), h, w).transpose(0, 3, 4, 1, 5, 2)
            return y.reshape(n, c // (b * b), h * b, w * b)
        y = x.reshape(n, c, h // b, b, w // b, b).transpose(0, 3, 5, 1, 2, 4)
        return y.reshape(n, c * b * b, h // b, w // b)


@register("depth_to_space")
class DepthToSpaceProp(_BlockProp):
    """(N, C, H, W) to (N, C / b^2, H b, W b), moving channel blocks into space."""

    def out_shape(self, shape: tuple) -> tuple:
        """C must divide by block_size squared."""
        b = self.block_size
        if len(shape) != 4 or shape[1] % (b * b) or 0 in shape:
            raise self.shape_error(f"need (N, C, H, W) with C divisible by {b * b}, found {shape}")
        return (shape[0], shape[1] // (b * b), shape[2] * b, shape[3] * b)

    def forward(self, ctx, in_data, req, out_data, aux):  # type: ignore[no-untyped-def]
        """Reshape, transpose, reshape."""
        write(out_data[0], req[0], self._move(in_data[0], True))

    def backward(self, ctx, out_grad, in_data, out_data, req, in_grad, aux):  # type: ignore[no-untyped-def]
        """The inverse move."""
        write(in_grad[0], req[0], self._move(out_grad[0], False))


@register("space_to_depth")
class SpaceToDepthProp(_BlockProp):
    """(N, C, H, W) to (N, C b^2, H / b, W / b), moving spatial blocks into channels."""

    def out_shape(self, shape: tuple) -> tuple:
        """H and W must divide by block_size."""
        b = self.block_size
        if len(shape) != 4 or shape[2] % b or shape[3] % b or 0 in shape:
            raise self.shape_error(f"need (N, C, H, W) with H, W divisible by {b}, found {shape}")
        return (shape[0], shape[1] * b * b, shape[2] // b, shape[3] // b)

    def forward(self, ctx, in_data, req, out_data, aux):  # type: ignore[no-untyped-def]
        """Reshape, transpose, reshape."""
        write(out_data[0], req[0], self._move(in_data[0], False))

    def backward(self, ctx, out_grad, in_data, out_data, req, in_grad, aux):  # type: ignore[no-untyped-def]
        """The inverse move."""
        write(in_grad[0], req[0], self._move(out_grad[0], True))
