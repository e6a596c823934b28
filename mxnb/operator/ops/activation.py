"""Activations: Activation (relu, sigmoid, tanh, softrelu, softsign) and LeakyReLU.

Idea (MXNet: src/operator/nn/activation*, leaky_relu*): an activation is an
elementwise op whose backward reads what it needs and no more, which lets the
memory planner run it in place.

Rules: Activation's gradient reads its output (softsign: its input); forward
runs in place for Activation and LeakyReLU (except prelu, whose slope is a
learned input).  ``erf`` (for the gelu form of LeakyReLU) is written against
the array module, so the same kernel serves numpy and cupy.

State kept: none.

Example::

    >>> import numpy as np
    >>> from mxnb.operator import eager
    >>> x = np.array([[-1.0, 0.5]])
    >>> eager.run_forward('Activation', [x], {'act_type': 'relu'})[0][0].tolist()
    [[0.0, 0.5]]
"""

from __future__ import annotations

import functools
import math
from typing import Any

from ..base import OpReqType, ResourceRequest
from ..param import ANY, Param
from ..partial import merge, partial_shape
from ..registry import register
from ..split import in_blocks
from ._common import (
    KernelProp,
    UfuncKernel,
    computes_into,
    ufunc_into,
    ufunc_types_direct,
    write,
)
from .elemwise import GRADIENT_MAP_SLOTS, SIGMOID, SIGMOID_GRAD, TANH_GRAD

__all__ = ["ActivationProp", "LeakyReLUProp", "erf"]


def erf(xp: Any, x: Any) -> Any:
    """Error function (Abramowitz–Stegun 7.1.26, |error| < 1.5e-7), written against ``xp``."""
    sign = xp.sign(x)
    a = xp.abs(x)
    t = 1 / (1 + 0.3275911 * a)
    poly = t * (
        0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429)))
    )
    return sign * (1 - poly * xp.exp(-a * a))


# ---------------------------------------------------------------------------
# Activation and LeakyReLU
# ---------------------------------------------------------------------------

_FUSED_GRADS = {"sigmoid": SIGMOID_GRAD, "tanh": TANH_GRAD}  # written once, in .elemwise


def _relu_backward(xp: Any, g: Any, y: Any, dx: Any) -> None:
    """``dx = g * (y > 0)`` into ``dx`` (of one block: :func:`.split.in_blocks`)."""
    xp.multiply(g, xp.greater(y, 0), out=dx)


_ACTIVATIONS = {
    "relu": (lambda xp, x: xp.maximum(x, 0), lambda xp, g, x, y: g * (y > 0)),
    "sigmoid": (
        lambda xp, x: 1 / (1 + xp.exp(-x)),
        lambda xp, g, x, y: SIGMOID_GRAD(xp, g, y)[0],
    ),
    "tanh": (lambda xp, x: xp.tanh(x), lambda xp, g, x, y: TANH_GRAD(xp, g, y)[0]),
    "softrelu": (lambda xp, x: xp.logaddexp(x, 0), lambda xp, g, x, y: g * -xp.expm1(-y)),
    "softsign": (lambda xp, x: x / (1 + xp.abs(x)), lambda xp, g, x, y: g / ((1 + xp.abs(x)) ** 2)),
}


@register("Activation")
class ActivationProp(KernelProp):
    """Elementwise activation: relu, sigmoid, tanh, softrelu (log(1+exp(x))) or softsign."""

    act_type = Param(str, choices=tuple(_ACTIVATIONS), doc="Activation function.")

    def declare_backward_dependency(self, out_grad, in_data, out_data):
        """Head gradient and output (softsign: input)."""
        if self.act_type == "softsign":
            return [out_grad[0], in_data[0]]
        return [out_grad[0], out_data[0]]

    def forward_inplace_option(self, in_data, out_data):
        """In place."""
        return [(in_data[0], out_data[0])]

    def backward_inplace_option(self, out_grad, in_data, out_data, in_grad):
        """The input gradient may take the head gradient's memory."""
        return [(out_grad[0], in_grad[0])]

    def forward_ufunc(self, in_types, out_types):
        """relu as ``maximum(x, 0)`` and tanh as ``tanh(x)``, the ufuncs :meth:`forward` calls."""
        if self.act_type not in ("relu", "tanh") or not ufunc_types_direct(in_types, out_types):
            return None
        return UfuncKernel("maximum", 0.0) if self.act_type == "relu" else UfuncKernel("tanh")

    def forward_fused(self, in_types, out_types):
        """sigmoid as :data:`~mxnb.operator.ops.elemwise.SIGMOID`, the map :meth:`forward` runs."""
        if self.act_type != "sigmoid" or not ufunc_types_direct(in_types, out_types):
            return None
        return SIGMOID

    def backward_fused(self, in_types, out_types):
        """sigmoid's and tanh's gradients as the maps :meth:`backward` runs."""
        fused = _FUSED_GRADS.get(self.act_type)
        if fused is None or not ufunc_types_direct(in_types, out_types):
            return None
        return fused, GRADIENT_MAP_SLOTS

    def forward(self, ctx, in_data, req, out_data, aux):
        """out = act(x); relu and tanh as one ufunc and sigmoid as its fused map, straight into
        the output."""
        xp, x, out = ctx.xp, in_data[0], out_data[0]
        act = self.act_type
        if act == "relu" and ufunc_into(xp, "maximum", out, req[0], x, 0):
            return
        if act == "tanh" and ufunc_into(xp, "tanh", out, req[0], x):
            return
        if act == "sigmoid" and computes_into(req[0], out, x):
            SIGMOID(xp, x, out=(out,))
            return
        write(out, req[0], _ACTIVATIONS[act][0](xp, x))

    def backward(self, ctx, out_grad, in_data, out_data, req, in_grad, aux):
        """dx = act'(.) * dy; relu multiplies by ``y > 0``, sigmoid and tanh run their fused
        map, straight into the gradient."""
        xp, grad, head, y = ctx.xp, in_grad[0], out_grad[0], out_data[0]
        direct = computes_into(req[0], grad, head)
        if direct and self.act_type == "relu":  # the mask of one block at a time
            in_blocks(xp, functools.partial(_relu_backward, xp), (head, y), (grad,))
            return
        fused = _FUSED_GRADS.get(self.act_type)
        if direct and fused is not None and y.dtype == grad.dtype:
            fused(xp, head, y, out=[grad])
            return
        value = _ACTIVATIONS[self.act_type][1](xp, out_grad[0], in_data[0], out_data[0])
        write(in_grad[0], req[0], value)


_SELU_LAMBDA = 1.0507009873554804934193349852946
_SELU_ALPHA = 1.6732632423543772848170429916717


@register("LeakyReLU")
class LeakyReLUProp(KernelProp):
    """Leaky rectifiers: leaky, elu, prelu (learned slope per channel), rrelu, selu, gelu."""

    act_type = Param(
        str,
        default="leaky",
        choices=("leaky", "elu", "prelu", "rrelu", "selu", "gelu"),
        doc="Activation function.",
    )
    slope = Param(float, unbounded=ANY, default=0.25, doc="Slope of leaky; alpha of elu.")
    lower_bound = Param(
        float, unbounded=ANY, default=0.125, doc="Lower bound of rrelu's random slope."
    )
    upper_bound = Param(
        float, unbounded=ANY, default=0.334, doc="Upper bound of rrelu's random slope."
    )

    def list_arguments(self):
        """``data`` (and ``gamma`` for prelu)."""
        return ["data", "gamma"] if self.act_type == "prelu" else ["data"]

    def list_outputs(self):
        """``output`` (and the hidden ``mask`` of rrelu)."""
        return ["output", "mask"] if self.act_type == "rrelu" else ["output"]

    def num_visible_outputs(self):
        """Only ``output``."""
        return 1

    @partial_shape
    def infer_shape(self, in_shape, out_shape=None):
        """gamma of prelu is ``(C,)``; data and output share a shape (both ways)."""
        data = merge(in_shape[0], (out_shape or [None])[0], "data and output")
        if data is None:
            return None
        data = tuple(data)
        ins = [data]
        if self.act_type == "prelu":
            gamma = in_shape[1]
            ins.append(
                tuple(gamma)
                if gamma is not None and tuple(gamma) == (1,)
                else (data[1] if len(data) > 1 else 1,)
            )
        return ins, [data] * len(self.list_outputs()), []

    def forward_resource(self, in_shape):
        """rrelu draws random slopes."""
        return [ResourceRequest.RANDOM] if self.act_type == "rrelu" else []

    def declare_backward_dependency(self, out_grad, in_data, out_data):
        """leaky / elu / selu read the output; prelu / gelu the input (and gamma); rrelu its mask."""
        if self.act_type == "prelu":
            return [out_grad[0], in_data[0], in_data[1]]
        if self.act_type == "gelu":
            return [out_grad[0], in_data[0]]
        if self.act_type == "rrelu":
            return [out_grad[0], out_data[0], out_data[1]]
        return [out_grad[0], out_data[0]]

    def forward_inplace_option(self, in_data, out_data):
        """In place except prelu (whose backward reads the input)."""
        return [] if self.act_type in ("prelu", "gelu") else [(in_data[0], out_data[0])]

    def _gamma(self, gamma: Any, ndim: int) -> Any:
        return gamma.reshape((1, -1) + (1,) * (ndim - 2)) if ndim >= 2 else gamma

    def forward(self, ctx, in_data, req, out_data, aux):
        """Apply the rectifier."""
        xp, x = ctx.xp, in_data[0]
        kind = self.act_type
        if kind == "leaky":
            value = xp.where(x > 0, x, self.slope * x)
        elif kind == "elu":
            value = xp.where(x > 0, x, self.slope * xp.expm1(xp.minimum(x, 0)))
        elif kind == "selu":
            value = _SELU_LAMBDA * xp.where(x > 0, x, _SELU_ALPHA * xp.expm1(xp.minimum(x, 0)))
        elif kind == "gelu":
            value = 0.5 * x * (1 + erf(xp, x / math.sqrt(2)))
        elif kind == "prelu":
            value = xp.where(x > 0, x, self._gamma(in_data[1], x.ndim) * x)
        else:  # rrelu
            if ctx.is_train:
                generator = ctx.requested[0].generator
                slope = generator.uniform(self.lower_bound, self.upper_bound, size=x.shape).astype(
                    x.dtype
                )
            else:
                slope = xp.full(x.shape, (self.lower_bound + self.upper_bound) / 2, dtype=x.dtype)
            value = xp.where(x > 0, x, slope * x)
            write(out_data[1], req[1], slope)
        write(out_data[0], req[0], value)

    def backward(self, ctx, out_grad, in_data, out_data, req, in_grad, aux):
        """Gradient from the output (leaky, elu, selu, rrelu) or input (prelu, gelu)."""
        xp, g = ctx.xp, out_grad[0]
        kind = self.act_type
        if kind == "leaky":
            value = g * xp.where(out_data[0] > 0, 1, self.slope)
        elif kind == "elu":
            y = out_data[0]
            value = g * xp.where(y > 0, 1, y + self.slope)
        elif kind == "selu":
            y = out_data[0]
            value = g * xp.where(y > 0, _SELU_LAMBDA, y + _SELU_LAMBDA * _SELU_ALPHA)
        elif kind == "gelu":
            x = in_data[0]
            cdf = 0.5 * (1 + erf(xp, x / math.sqrt(2)))
            value = g * (cdf + x * xp.exp(-0.5 * x * x) / math.sqrt(2 * math.pi))
        elif kind == "rrelu":
            value = g * xp.where(out_data[0] > 0, 1, out_data[1])
        else:  # prelu
            x, gamma = in_data[0], in_data[1]
            value = g * xp.where(x > 0, 1, self._gamma(gamma, x.ndim))
            if len(in_grad) > 1 and req[1] != OpReqType.NULL:
                axes = tuple(i for i in range(x.ndim) if i != 1 or in_grad[1].shape == (1,))
                grad_gamma = (g * x * (x <= 0)).sum(axis=axes)
                write(in_grad[1], req[1], grad_gamma.reshape(in_grad[1].shape))
        write(in_grad[0], req[0], value)
