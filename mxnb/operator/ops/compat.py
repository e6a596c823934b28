"""Operators MXNet 1.x has that the families above did not: inverse hyperbolics, angle
conversion, ``rcbrt``, ``broadcast_like``, ``linspace``, ``batch_take``,
``_identity_with_attr_like_rhs``, ``_sample_multinomial`` and the ``BatchNorm_v1`` name.

Idea: each op reuses its family's machinery, so it gets the same in-place
options, dependency declarations and dtype handling: the unary ones are
:class:`~.elemwise.UnaryRule` s (a forward formula, a gradient formula and what
the gradient reads), ``linspace`` is a creation op like ``_arange``, and
``broadcast_like`` is ``broadcast_to`` with the target shape read from a
second input.  Numerics are checked against MXNet 1.9.1 by
``tests/operator/test_compat_ops.py`` (vectors in ``tests/operator/data``).

State kept: none beyond the registry entries.

Example::

    >>> import numpy as np
    >>> from mxnb.operator import eager
    >>> outs, _, _ = eager.run_forward('radians', [np.array([180.0], np.float32)])
    >>> round(float(outs[0][0]), 5)
    3.14159
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..base import ResourceRequest
from ..param import AXIS, UNUSED, DType, Param, Shape
from ..registry import register, register_alias
from ._common import KernelProp, reduce_to, write
from .elemwise import INPUT, UnaryRule, _make_unary
from .init import _CreateProp

__all__ = [
    "COMPAT_UNARY",
    "BatchTakeProp",
    "BroadcastLikeProp",
    "IdentityLikeRhsProp",
    "LinspaceProp",
    "SampleMultinomialProp",
]

COMPAT_UNARY: dict[str, UnaryRule] = {
    "arcsinh": UnaryRule(
        lambda xp, x: xp.arcsinh(x),
        lambda xp, g, x, y: g / xp.sqrt(x * x + 1),
        INPUT,
        "Inverse hyperbolic sine.",
        ufunc="arcsinh",
    ),
    "arccosh": UnaryRule(
        lambda xp, x: xp.arccosh(x),
        lambda xp, g, x, y: g / xp.sqrt(x * x - 1),
        INPUT,
        "Inverse hyperbolic cosine (x >= 1).",
        ufunc="arccosh",
    ),
    "arctanh": UnaryRule(
        lambda xp, x: xp.arctanh(x),
        lambda xp, g, x, y: g / (1 - x * x),
        INPUT,
        "Inverse hyperbolic tangent (|x| < 1).",
        ufunc="arctanh",
    ),
    "radians": UnaryRule(
        lambda xp, x: x * (math.pi / 180),
        lambda xp, g, x, y: g * (math.pi / 180),
        "none",
        "Degrees to radians.",
    ),
    "degrees": UnaryRule(
        lambda xp, x: x * (180 / math.pi),
        lambda xp, g, x, y: g * (180 / math.pi),
        "none",
        "Radians to degrees.",
    ),
    "rcbrt": UnaryRule(
        lambda xp, x: 1 / xp.cbrt(x),
        lambda xp, g, x, y: g * (-1.0 / 3) * y / x,
        "both",
        "Reciprocal cube root, 1 / cbrt(x).",
    ),
}

for _name, _rule in COMPAT_UNARY.items():
    _make_unary(_name, _rule)


@register("linspace")
class LinspaceProp(_CreateProp):
    """``num`` evenly spaced values from ``start`` to ``stop`` (MXNet: ``_linspace``)."""

    shape = Param(Shape, unbounded=UNUSED, default=(), doc="Unused.")
    start = Param(float, unbounded="any finite value", doc="First value.")
    stop = Param(
        float, unbounded="any finite value", doc="Last value (included when endpoint is true)."
    )
    num = Param(int, low=0, doc="How many values.")
    endpoint = Param(bool, default=True, doc="Whether stop is the last value.")

    def out_shape(self) -> tuple:
        """``(num,)``."""
        return (self.num,)

    def forward(self, ctx, in_data, req, out_data, aux):
        """xp.linspace in float64, cast to the output dtype on write."""
        values = ctx.xp.linspace(self.start, self.stop, self.num, endpoint=self.endpoint)
        write(out_data[0], req[0], values)


register_alias("_linspace", "linspace")


@register("broadcast_like")
class BroadcastLikeProp(KernelProp):
    """Broadcast ``lhs`` to the shape of ``rhs`` (or only ``lhs_axes`` to ``rhs_axes``)."""

    lhs_axes = Param(
        Shape, unbounded=AXIS, default=None, optional=True, doc="Axes of lhs to broadcast."
    )
    rhs_axes = Param(
        Shape, unbounded=AXIS, default=None, optional=True, doc="Axes of rhs giving the sizes."
    )

    def list_arguments(self) -> list[str]:
        """``lhs`` is broadcast, ``rhs`` only gives the shape."""
        return ["lhs", "rhs"]

    def infer_shape(self, in_shape):
        """The output has rhs's shape on the chosen axes, lhs's elsewhere."""
        lhs, rhs = in_shape
        if lhs is None or rhs is None:
            return None
        lhs, rhs = tuple(lhs), tuple(rhs)
        out = list(lhs)
        if self.lhs_axes is None:
            if len(lhs) != len(rhs):
                raise self.shape_error(f"lhs {lhs} and rhs {rhs} must have the same rank")
            pairs = list(zip(range(len(lhs)), range(len(rhs))))
        else:
            if len(self.lhs_axes) != len(self.rhs_axes or ()) or not self.lhs_axes:
                raise self.shape_error(
                    f"lhs_axes {self.lhs_axes} and rhs_axes {self.rhs_axes} must be non-empty "
                    "and of the same length"
                )
            pairs = [(a % len(lhs), b % len(rhs)) for a, b in zip(self.lhs_axes, self.rhs_axes)]
        for a, b in pairs:
            if lhs[a] != rhs[b] and lhs[a] != 1:
                raise self.shape_error(
                    f"cannot broadcast lhs {lhs} axis {a} (size {lhs[a]}) to size {rhs[b]}"
                )
            out[a] = rhs[b]
        return [lhs, rhs], [tuple(out)], []

    def declare_backward_dependency(self, out_grad, in_data, out_data):
        """Only the head gradient (summed back to lhs's shape)."""
        return [out_grad[0]]

    def forward(self, ctx, in_data, req, out_data, aux):
        """out = broadcast_to(lhs, out.shape)."""
        write(out_data[0], req[0], ctx.xp.broadcast_to(in_data[0], out_data[0].shape))

    def backward(self, ctx, out_grad, in_data, out_data, req, in_grad, aux):
        """d lhs = sum of the head gradient over the broadcast axes; rhs gets zero."""
        shape = in_grad[0].shape
        write(in_grad[0], req[0], reduce_to(ctx.xp, out_grad[0], shape))
        write(in_grad[1], req[1], 0)


register_alias("BatchNorm_v1", "BatchNorm")


@register("_identity_with_attr_like_rhs")
class IdentityLikeRhsProp(KernelProp):
    """``lhs`` unchanged, with the shape of ``rhs``: a shape constraint for inference.

    MXNet uses it to tie a computed tensor to a variable's shape, so shape
    inference can run backward from where the variable is used.
    """

    def list_arguments(self) -> list[str]:
        """``lhs`` is passed through, ``rhs`` gives the shape."""
        return ["lhs", "rhs"]

    def infer_type(self, in_type):
        """The output has lhs's dtype; rhs keeps its own."""
        lhs, rhs = in_type
        if lhs is None:
            return None
        return [lhs, rhs if rhs is not None else lhs], [lhs], []

    def declare_backward_dependency(self, out_grad, in_data, out_data):
        """Only the head gradient."""
        return [out_grad[0]]

    def forward(self, ctx, in_data, req, out_data, aux):
        """out = lhs."""
        write(out_data[0], req[0], in_data[0])

    def backward(self, ctx, out_grad, in_data, out_data, req, in_grad, aux):
        """d lhs = head gradient; rhs only gave a shape: zero."""
        write(in_grad[0], req[0], out_grad[0])
        write(in_grad[1], req[1], 0)


@register("batch_take")
class BatchTakeProp(KernelProp):
    """``out[i] = a[i, indices[i]]`` for a 2-d ``a`` (indices clipped to the row length)."""

    def list_arguments(self) -> list[str]:
        """The rows ``a`` and one index per row."""
        return ["a", "indices"]

    def infer_shape(self, in_shape):
        """``a`` is (N, M), ``indices`` (N,), the output (N,)."""
        a, indices = in_shape
        if a is None:
            return None
        a = tuple(a)
        if len(a) != 2:
            raise self.shape_error(f"a must be 2-d (rows, columns), found {a}")
        if indices is not None and tuple(indices) != (a[0],):
            raise self.shape_error(f"indices must have shape ({a[0]},), found {tuple(indices)}")
        return [a, (a[0],)], [(a[0],)], []

    def infer_type(self, in_type):
        """The output has a's dtype; indices keep theirs (int32 when unknown)."""
        a, indices = in_type
        if a is None:
            return None
        return [a, indices if indices is not None else np.dtype("int32")], [a], []

    #: MXNet 1.9.1 registers no gradient for batch_take: binding it with a gradient fails,
    #: unless zero-gradient pruning (stop_gradient after it) removes the need.
    differentiable = False

    def declare_backward_dependency(self, out_grad, in_data, out_data):
        """Nothing: there is no gradient."""
        return []

    def _positions(self, xp: Any, a_shape: tuple, indices: Any) -> Any:
        return xp.clip(indices.astype("int64"), 0, a_shape[1] - 1)

    def forward(self, ctx, in_data, req, out_data, aux):
        """Pick one element per row."""
        xp = ctx.xp
        a, indices = in_data
        rows = xp.arange(a.shape[0])
        write(out_data[0], req[0], a[rows, self._positions(xp, a.shape, indices)])


@register("_sample_multinomial")
class SampleMultinomialProp(KernelProp):
    """Draw category indices from the distributions in ``data``'s last axis.

    Output ``shape`` per distribution (MXNet: ``data.shape[:-1] + shape``, and
    ``(1,)`` rather than 0-d for one distribution and no shape); with
    ``get_prob`` a second output holds the log-probability of each draw, whose
    gradient flows back to ``data`` as ``head / p`` at the drawn category.
    """

    shape = Param(Shape, low=1, default=(), doc="Draws per distribution.")
    get_prob = Param(bool, default=False, doc="Also return the log-probability of each draw.")
    dtype = Param(DType, default="int32", doc="Dtype of the drawn indices.")

    def list_arguments(self) -> list[str]:
        """One argument: probabilities along the last axis."""
        return ["data"]

    def list_outputs(self) -> list[str]:
        """The draws, and their log-probabilities with ``get_prob``."""
        return ["output", "prob"] if self.get_prob else ["output"]

    def infer_shape(self, in_shape):
        """``data.shape[:-1] + shape``, or ``(1,)`` when that is empty."""
        data = in_shape[0]
        if data is None:
            return None
        out = (tuple(data)[:-1] + tuple(self.shape)) or (1,)
        return [tuple(data)], [out] * len(self.list_outputs()), []

    def infer_type(self, in_type):
        """Draws in ``dtype``; log-probabilities in data's dtype."""
        data = in_type[0]
        if data is None:
            return None
        return [data], [np.dtype(self.dtype), data][: len(self.list_outputs())], []

    def forward_resource(self, in_shape):
        """The context's random generator."""
        return [ResourceRequest.RANDOM]

    def declare_backward_dependency(self, out_grad, in_data, out_data):
        """With ``get_prob``: the head gradient of the log-probabilities, data and the draws."""
        return [out_grad[1], in_data[0], out_data[0]] if self.get_prob else []

    def _flat(self, data: Any, draws: Any) -> tuple[Any, Any]:
        categories = data.shape[-1]
        return data.reshape(-1, categories), draws.reshape(max(data.size // categories, 1), -1)

    def forward(self, ctx, in_data, req, out_data, aux):
        """Inverse-CDF sampling with one uniform number per draw."""
        xp = ctx.xp
        data, draws = self._flat(in_data[0], out_data[0])
        uniform = xp.asarray(ctx.requested[0].generator.random(draws.shape))
        cdf = xp.cumsum(data.astype("float64"), axis=1)
        cdf = cdf / cdf[:, -1:]
        picks = xp.stack([xp.searchsorted(row, u, side="right") for row, u in zip(cdf, uniform)])
        picks = xp.minimum(picks, data.shape[1] - 1)
        write(out_data[0], req[0], picks.reshape(out_data[0].shape))
        if self.get_prob:
            rows = xp.arange(data.shape[0])[:, None]
            log_prob = xp.log(data[rows, picks])
            write(out_data[1], req[1], log_prob.reshape(out_data[1].shape))

    def backward(self, ctx, out_grad, in_data, out_data, req, in_grad, aux):
        """d data[i, k] += head / data[i, k] for each draw k of distribution i."""
        xp = ctx.xp
        if not self.get_prob:
            write(in_grad[0], req[0], 0)
            return
        data, draws = self._flat(in_data[0], out_data[0])
        head = out_grad[1].reshape(draws.shape)
        grad = xp.zeros(data.shape, dtype=data.dtype)
        rows = xp.broadcast_to(xp.arange(data.shape[0])[:, None], draws.shape)
        picks = draws.astype("int64")
        xp.add.at(grad, (rows, picks), head / data[rows, picks])
        write(in_grad[0], req[0], grad.reshape(in_grad[0].shape))


register_alias("sample_multinomial", "_sample_multinomial")
