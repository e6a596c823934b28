"""Activations, normalization, dropout, softmax and the loss layers.

Idea (MXNet: src/operator/nn/{activation,batch_norm,dropout,softmax}*,
leaky_relu*, softmax_output*, regression_output*, make_loss*): these ops
carry the interesting *semantics* of the operator interface:

    * BatchNorm keeps ``moving_mean`` / ``moving_var`` as auxiliary states,
      updated in forward during training (``new = momentum*old +
      (1-momentum)*batch``, biased variance), and has hidden outputs
      ``mean`` / ``var`` that only backward reads;
    * Dropout asks for the RANDOM resource and keeps its mask as a hidden
      output; in inference it is the identity;
    * the loss layers (SoftmaxOutput, *RegressionOutput, MakeLoss) ignore the
      head gradient: their backward declares output and label, not out_grad.

Rules: Activation's gradient reads its output (softsign: its input);
forward runs in place for Activation, LeakyReLU (except prelu) and Dropout.

Example::

    >>> import numpy as np
    >>> from mxnb.operator import eager
    >>> x = np.array([[1.0, 2.0, 3.0]])
    >>> eager.run_forward('softmax', [x])[0][0].round(3).tolist()
    [[0.09, 0.245, 0.665]]
"""

from __future__ import annotations

import math
from typing import Any

from ...base import NotSupportedError, ParamError
from ..base import OpReqType, ResourceRequest
from ..param import ANY, AXIS, UNUSED, DType, Param, Shape
from ..partial import is_known, merge, partial_shape
from ..registry import register
from ._common import KernelProp, fmt, normalize_axis, parallel_chunks, ufunc_into, write

__all__ = [
    "ActivationProp",
    "BatchNormProp",
    "DropoutProp",
    "LeakyReLUProp",
    "SoftmaxOutputProp",
    "erf",
]


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

_ACTIVATIONS = {
    "relu": (lambda xp, x: xp.maximum(x, 0), lambda xp, g, x, y: g * (y > 0)),
    "sigmoid": (lambda xp, x: 1 / (1 + xp.exp(-x)), lambda xp, g, x, y: g * y * (1 - y)),
    "tanh": (lambda xp, x: xp.tanh(x), lambda xp, g, x, y: g * (1 - y * y)),
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

    def forward(self, ctx, in_data, req, out_data, aux):
        """out = act(x); relu is one ``maximum`` straight into the output."""
        if self.act_type == "relu" and ufunc_into(
            ctx.xp, "maximum", out_data[0], req[0], in_data[0], 0
        ):
            return
        write(out_data[0], req[0], _ACTIVATIONS[self.act_type][0](ctx.xp, in_data[0]))

    def backward(self, ctx, out_grad, in_data, out_data, req, in_grad, aux):
        """dx = act'(.) * dy; relu multiplies by ``y > 0`` straight into the gradient."""
        xp, grad, head = ctx.xp, in_grad[0], out_grad[0]
        if (
            self.act_type == "relu"
            and req[0] in (OpReqType.WRITE_TO, OpReqType.WRITE_INPLACE)
            and grad.dtype == head.dtype
            and grad.dtype.kind == "f"
        ):
            xp.multiply(head, xp.greater(out_data[0], 0), out=grad)
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


# ---------------------------------------------------------------------------
# BatchNorm
# ---------------------------------------------------------------------------


@register("BatchNorm")
class BatchNormProp(KernelProp):
    """Batch normalization over every axis but ``axis``, with moving statistics as aux states."""

    eps = Param(float, low=0, default=1e-3, doc="Added to the variance before the square root.")
    momentum = Param(float, low=0, high=1, default=0.9, doc="Decay of the moving statistics.")
    fix_gamma = Param(bool, default=True, doc="Treat gamma as 1 (its gradient is 0).")
    use_global_stats = Param(bool, default=False, doc="Use the moving statistics even in training.")
    output_mean_var = Param(bool, default=False, doc="Also show the mean and var outputs.")
    axis = Param(int, unbounded=AXIS, default=1, doc="The channel axis.")
    cudnn_off = Param(bool, default=False, doc="Ignored (cuDNN switch).")
    min_calib_range = Param(
        float, unbounded=UNUSED, default=None, optional=True, doc="Ignored (quantization)."
    )
    max_calib_range = Param(
        float, unbounded=UNUSED, default=None, optional=True, doc="Ignored (quantization)."
    )

    saves_variance = False  # third output: 1/sqrt(var + eps) as MXNet's BatchNorm (True: var)

    def list_arguments(self):
        """``data, gamma, beta``."""
        return ["data", "gamma", "beta"]

    def list_outputs(self):
        """``output``, the hidden batch ``mean`` and ``var`` (holding 1/sqrt(var + eps))."""
        return ["output", "mean", "var"]

    def list_auxiliary_states(self):
        """``moving_mean, moving_var``."""
        return ["moving_mean", "moving_var"]

    def num_visible_outputs(self):
        """1, or 3 with ``output_mean_var``."""
        return 3 if self.output_mean_var else 1

    @partial_shape
    def infer_shape(self, in_shape, out_shape=None):
        """gamma, beta, mean, var and the moving stats are ``(C,)``, C = data.shape[axis].

        Partial shapes: data and output share theirs, both ways.
        """
        data = merge(in_shape[0], (out_shape or [None])[0], "data and output")
        if data is None:
            return None
        data = tuple(data)
        if not all(shape is None or is_known(shape) for shape in [data, *in_shape[1:]]):
            axis = normalize_axis(self.axis, len(data), self.op_name)
            channel = (data[axis],)
            for given in in_shape[1:3]:
                channel = merge(channel, given, "gamma / beta and the data's channels")
            data = data[:axis] + channel + data[axis + 1 :]
            return [data, channel, channel], [data, channel, channel], [channel, channel]
        axis = normalize_axis(self.axis, len(data), self.op_name)
        channel = (data[axis],)
        for name, given in zip(("gamma", "beta"), in_shape[1:3]):
            if given is not None and tuple(given) != channel:
                raise self.shape_error(
                    f"{name} has shape {fmt(given)} but data {fmt(data)} has {data[axis]} channels on axis "
                    f"{axis}; pass {name} of shape {fmt(channel)}"
                )
        return [data, channel, channel], [data, channel, channel], [channel, channel]

    def infer_type(self, in_type):
        """Everything has the data's dtype."""
        return super().infer_type(in_type)

    def declare_backward_dependency(self, out_grad, in_data, out_data):
        """Head gradient, data, gamma and the saved mean / var; not beta, not the output."""
        return [out_grad[0], in_data[0], in_data[1], out_data[1], out_data[2]]

    def _view(self, x: Any) -> tuple[Any, tuple]:
        """x as (outer, C, inner), the layout every kernel works on."""
        axis = normalize_axis(self.axis, x.ndim, self.op_name)
        outer = math.prod(x.shape[:axis])
        return x.reshape(outer, x.shape[axis], -1), (1, x.shape[axis], 1)

    def _use_batch(self, ctx: Any) -> bool:
        return bool(ctx.is_train) and not self.use_global_stats

    def forward(self, ctx, in_data, req, out_data, aux):
        """Normalize with batch statistics (training) or the moving ones; update the moving ones.

        Channels are independent, so large inputs are processed in channel
        chunks on the op thread pool (:func:`parallel_chunks`).
        """
        xp = ctx.xp
        x3, _ = self._view(in_data[0])
        gamma = xp.ones_like(in_data[1]) if self.fix_gamma else in_data[1]
        beta = in_data[2]
        out = out_data[0].reshape(x3.shape)
        # the output buffer holds x - mean, then becomes the result (no temporaries)
        direct = req[0] == OpReqType.WRITE_TO
        centered = out if direct else xp.empty(x3.shape, dtype=x3.dtype)
        batch = self._use_batch(ctx)
        count = x3.shape[0] * x3.shape[2]
        channels = x3.shape[1]
        mean = xp.empty(channels, dtype=x3.dtype) if batch else aux[0].copy()
        var = xp.empty(channels, dtype=x3.dtype) if batch else aux[1].copy()

        def chunk(start: int, stop: int) -> None:
            part, buffer = x3[:, start:stop], centered[:, start:stop]
            if batch:
                mean[start:stop] = part.sum(axis=2).sum(axis=0) / count
            xp.subtract(part, mean[start:stop].reshape(1, -1, 1), out=buffer)
            if batch:
                var[start:stop] = xp.einsum("ncp,ncp->c", buffer, buffer) / count
            scale = gamma[start:stop] / xp.sqrt(var[start:stop] + self.eps)
            buffer *= scale.reshape(1, -1, 1)
            buffer += beta[start:stop].reshape(1, -1, 1)

        parallel_chunks(xp, channels, x3.size, chunk)
        if batch:
            moving_mean, moving_var = aux
            moving_mean[...] = moving_mean * self.momentum + mean * (1 - self.momentum)
            moving_var[...] = moving_var * self.momentum + var * (1 - self.momentum)
        if not direct:
            write(out, req[0], centered)
        write(out_data[1], req[1], mean)
        # MXNet 1.9.1 shows 1/sqrt(var + eps) as BatchNorm's third output (SyncBatchNorm: var)
        write(out_data[2], req[2], var if self.saves_variance else 1 / xp.sqrt(var + self.eps))

    def backward(self, ctx, out_grad, in_data, out_data, req, in_grad, aux):
        """Training: the full batch-statistics gradient; otherwise a per-channel scale."""
        xp = ctx.xp
        x3, _ = self._view(in_data[0])
        g = out_grad[0].reshape(x3.shape)
        gamma = xp.ones_like(in_data[1]) if self.fix_gamma else in_data[1]
        batch = self._use_batch(ctx)
        if batch and not self.saves_variance:
            mean, invstd = out_data[1], out_data[2]
        else:
            mean, var = (out_data[1], out_data[2]) if batch else (aux[0], aux[1])
            invstd = 1 / xp.sqrt(var + self.eps)
        count = x3.shape[0] * x3.shape[2]
        direct = req[0] == OpReqType.WRITE_TO
        # the data-gradient buffer first holds x - mean (no temporaries when writing directly)
        buffer = in_grad[0].reshape(x3.shape) if direct else xp.empty(x3.shape, dtype=x3.dtype)
        grad_beta = xp.empty(x3.shape[1], dtype=x3.dtype)
        grad_gamma_raw = xp.empty(x3.shape[1], dtype=x3.dtype)  # sum(g * xhat)

        def chunk(start: int, stop: int) -> None:
            part, g_part, b_part = x3[:, start:stop], g[:, start:stop], buffer[:, start:stop]
            xp.subtract(part, mean[start:stop].reshape(1, -1, 1), out=b_part)
            grad_beta[start:stop] = g_part.sum(axis=2).sum(axis=0)
            grad_gamma_raw[start:stop] = (
                xp.einsum("ncp,ncp->c", g_part, b_part) * invstd[start:stop]
            )
            if req[0] == OpReqType.NULL:
                return
            scale = (gamma[start:stop] * invstd[start:stop]).reshape(1, -1, 1)
            if batch:
                b_part *= (-grad_gamma_raw[start:stop] * invstd[start:stop] / count).reshape(
                    1, -1, 1
                )
                b_part += g_part
                b_part -= (grad_beta[start:stop] / count).reshape(1, -1, 1)
                b_part *= scale
            else:
                xp.multiply(g_part, scale, out=b_part)

        parallel_chunks(xp, x3.shape[1], x3.size, chunk)
        if req[0] != OpReqType.NULL and not direct:
            write(in_grad[0].reshape(x3.shape), req[0], buffer)
        write(
            in_grad[1], req[1], xp.zeros_like(grad_gamma_raw) if self.fix_gamma else grad_gamma_raw
        )
        write(in_grad[2], req[2], grad_beta)


# ---------------------------------------------------------------------------
# Dropout
# ---------------------------------------------------------------------------


@register("Dropout")
class DropoutProp(KernelProp):
    """Zero each element with probability ``p`` in training and scale the rest by 1/(1-p)."""

    p = Param(float, default=0.5, low=0.0, high=1.0, doc="Fraction of the input that gets dropped.")
    mode = Param(
        str,
        default="training",
        choices=("training", "always"),
        doc="'training': only in training; 'always': also in inference.",
    )
    axes = Param(
        Shape,
        unbounded=AXIS,
        default=(),
        doc="Axes along which one mask value is shared (variational dropout).",
    )
    cudnn_off = Param(bool, default=False, doc="Ignored (cuDNN switch).")

    def list_outputs(self):
        """``output`` and the hidden ``mask``."""
        return ["output", "mask"]

    def infer_shape(self, in_shape):
        """``output`` and ``mask`` take the data's shape; every one of ``axes`` must be its axis."""
        if in_shape and in_shape[0] is not None:
            for axis in self.axes:
                normalize_axis(axis, len(in_shape[0]), self.op_name, "axes")
        return super().infer_shape(in_shape)

    def num_visible_outputs(self):
        """Only ``output``."""
        return 1

    def forward_resource(self, in_shape):
        """The RANDOM resource (its ``.generator`` draws the mask)."""
        return [ResourceRequest.RANDOM]

    def declare_backward_dependency(self, out_grad, in_data, out_data):
        """Head gradient and the mask."""
        return [out_grad[0], out_data[1]]

    def forward_inplace_option(self, in_data, out_data):
        """In place."""
        return [(in_data[0], out_data[0])]

    def backward_inplace_option(self, out_grad, in_data, out_data, in_grad):
        """The input gradient may take the head gradient's memory."""
        return [(out_grad[0], in_grad[0])]

    def _active(self, ctx: Any) -> bool:
        return (bool(ctx.is_train) or self.mode == "always") and self.p > 0

    def forward(self, ctx, in_data, req, out_data, aux):
        """mask = bernoulli(1-p) / (1-p) (shared along ``axes``); out = x * mask."""
        xp, x = ctx.xp, in_data[0]
        if not self._active(ctx):
            write(out_data[1], req[1], 1)
            write(out_data[0], req[0], x)
            return
        shape = tuple(
            1 if i in {a % x.ndim for a in self.axes} else s for i, s in enumerate(x.shape)
        )
        generator = ctx.requested[0].generator
        keep = 1.0 - self.p
        draws = xp.asarray(
            generator.random(shape, dtype="float32" if x.dtype.itemsize <= 4 else "float64")
        )
        mask = (draws < keep).astype(x.dtype) * (1.0 / keep if keep > 0 else 0.0)
        mask = xp.broadcast_to(mask, x.shape)
        write(out_data[1], req[1], mask)
        write(out_data[0], req[0], x * mask)

    def backward(self, ctx, out_grad, in_data, out_data, req, in_grad, aux):
        """dx = dy * mask."""
        write(in_grad[0], req[0], out_grad[0] * out_data[1])


# ---------------------------------------------------------------------------
# softmax family
# ---------------------------------------------------------------------------


def _softmax(xp: Any, x: Any, axis: int, temperature: float = 1.0) -> Any:
    shifted = (x - x.max(axis=axis, keepdims=True)) / temperature
    e = xp.exp(shifted)
    return e / e.sum(axis=axis, keepdims=True)


class _SoftmaxBase(KernelProp):
    axis = Param(int, unbounded=AXIS, default=-1, doc="The axis to normalize over.")
    temperature = Param(
        float,
        unbounded="any value but 0",
        default=None,
        optional=True,
        doc="Divide the input by it first.",
    )
    dtype = Param(DType, default=None, optional=True, doc="Output dtype (default: the input's).")
    use_length = Param(bool, default=False, doc="Not supported (masked softmax).")
    log = False

    def infer_type(self, in_type):
        """The output has ``dtype`` when given."""
        if in_type[0] is None:
            return None
        import numpy as np

        out = np.dtype(self.dtype) if self.dtype else np.dtype(in_type[0])
        return [np.dtype(in_type[0])], [out], []

    def init(self, kwargs: dict[str, Any]) -> None:
        """Parse the parameters; ``use_length=True`` (masked softmax) is refused clearly."""
        super().init(kwargs)
        if self.temperature == 0:
            raise ParamError(
                f"{self.op_name} parameter 'temperature': 0 divides by zero; pass any value but "
                f"0, or None for 1"
            )
        if self.use_length:
            raise NotSupportedError(
                f"{self.op_name}: use_length=True (masked softmax) is not supported"
            )

    def declare_backward_dependency(self, out_grad, in_data, out_data):
        """Head gradient and output."""
        return [out_grad[0], out_data[0]]

    def forward(self, ctx, in_data, req, out_data, aux):
        """softmax (or its log) along ``axis``, max-shifted for stability."""
        xp, x = ctx.xp, in_data[0]
        axis = normalize_axis(self.axis, x.ndim, self.op_name)
        t = self.temperature or 1.0
        if self.log:
            shifted = (x - x.max(axis=axis, keepdims=True)) / t
            value = shifted - xp.log(xp.exp(shifted).sum(axis=axis, keepdims=True))
        else:
            value = _softmax(xp, x, axis, t)
        write(out_data[0], req[0], value)

    def backward(self, ctx, out_grad, in_data, out_data, req, in_grad, aux):
        """softmax: y (dy - sum(dy y)); log_softmax: dy - exp(y) sum(dy); divided by temperature."""
        xp = ctx.xp
        g, y = out_grad[0], out_data[0]
        axis = normalize_axis(self.axis, y.ndim, self.op_name)
        t = self.temperature or 1.0
        if self.log:
            value = g - xp.exp(y) * g.sum(axis=axis, keepdims=True)
        else:
            value = y * (g - (g * y).sum(axis=axis, keepdims=True))
        write(in_grad[0], req[0], value / t if t != 1.0 else value)


@register("softmax")
class SoftmaxProp(_SoftmaxBase):
    """softmax(x) = exp(x) / sum(exp(x)) along ``axis``."""


@register("log_softmax")
class LogSoftmaxProp(_SoftmaxBase):
    """log(softmax(x)) along ``axis``, computed stably."""

    log = True


@register("SoftmaxOutput")
class SoftmaxOutputProp(KernelProp):
    """Softmax with a cross-entropy gradient; a loss layer, so the head gradient is ignored."""

    grad_scale = Param(float, unbounded=ANY, default=1.0, doc="Scale of the gradient.")
    ignore_label = Param(
        float,
        unbounded=ANY,
        default=-1.0,
        doc="Label whose rows get zero gradient (with use_ignore).",
    )
    multi_output = Param(
        bool, default=False, doc="Softmax over axis 1 of (N, C, ...) with labels (N, ...)."
    )
    use_ignore = Param(bool, default=False, doc="Zero the gradient of rows labelled ignore_label.")
    preserve_shape = Param(
        bool, default=False, doc="Softmax over the last axis, keeping the shape."
    )
    normalization = Param(
        str,
        default="null",
        choices=("null", "batch", "valid"),
        doc="Divide the gradient by 1, the batch size, or the number of valid labels.",
    )
    out_grad = Param(bool, default=False, doc="Multiply the gradient by the head gradient.")
    smooth_alpha = Param(
        float,
        low=0,
        high=1,
        default=0.0,
        doc="Label smoothing: spread alpha over the other classes.",
    )

    def list_arguments(self):
        """``data, label``."""
        return ["data", "label"]

    def _label_shape(self, data: tuple) -> tuple:
        if self.multi_output:
            return (data[0],) + tuple(data[2:])
        if self.preserve_shape:
            return tuple(data[:-1])
        return (data[0],)

    @partial_shape
    def infer_shape(self, in_shape, out_shape=None):
        """label is ``(N,)`` (or data without the class axis); output has data's shape.

        Partial shapes: data and output share theirs, both ways.
        """
        data = merge(in_shape[0], (out_shape or [None])[0], "data and output")
        if data is None:
            return None
        given = in_shape[1]
        if not is_known(data) or (given is not None and not is_known(given)):
            label = self._label_shape(data)
            if given is not None:
                label = merge(given, data if len(given) == len(data) else label, "label")
            return [data, label], [data], []
        label = self._label_shape(data)
        given = in_shape[1]
        if given is not None and tuple(given) != label and tuple(given) != data:
            raise self.shape_error(
                f"label has shape {fmt(given)} but data {fmt(data)} needs labels of shape {fmt(label)}"
            )
        return [data, tuple(given) if given is not None else label], [data], []

    def declare_backward_dependency(self, out_grad, in_data, out_data):
        """Label and output; the head gradient only with ``out_grad=True``."""
        deps = [in_data[1], out_data[0]]
        return [out_grad[0], *deps] if self.out_grad else deps

    def forward_inplace_option(self, in_data, out_data):
        """In place (data -> output)."""
        return [(in_data[0], out_data[0])]

    def _class_axis(self, ndim: int) -> int:
        return ndim - 1 if self.preserve_shape else 1

    def forward(self, ctx, in_data, req, out_data, aux):
        """softmax over the class axis (for 2-D+ data without multi_output: over the flattened rest)."""
        xp, x = ctx.xp, in_data[0]
        if not self.multi_output and not self.preserve_shape and x.ndim > 2:
            value = _softmax(xp, x.reshape(x.shape[0], -1), 1).reshape(x.shape)
        else:
            value = _softmax(xp, x, self._class_axis(x.ndim))
        write(out_data[0], req[0], value)

    def backward(self, ctx, out_grad, in_data, out_data, req, in_grad, aux):
        """(softmax - onehot(label)) * grad_scale / normalizer; ignored rows get 0.

        A label of data's own shape holds probabilities (MXNet: soft labels): the
        gradient is softmax - label.  With multi_output the 'null' and 'batch'
        normalizers also divide by the positions per sample, as MXNet does.
        """
        xp = ctx.xp
        y = out_data[0]
        label = in_data[1]
        if y.ndim > 1 and tuple(label.shape) == tuple(y.shape):  # soft labels
            scale = self.grad_scale / (y.shape[0] if self.normalization == "batch" else 1)
            write(in_grad[0], req[0], (y - label) * scale)
            write(in_grad[1], req[1], 0)
            return
        if self._plain_rows(y, label, req):
            self._backward_rows(xp, y, label, in_grad[0])
            write(in_grad[1], req[1], 0)
            return
        flat = not self.multi_output and not self.preserve_shape and y.ndim > 2
        prob = y.reshape(y.shape[0], -1) if flat else y
        axis = self._class_axis(prob.ndim)
        classes = prob.shape[axis]
        label = (
            label.reshape(self._label_shape(prob.shape))
            if label.size == math.prod(self._label_shape(prob.shape))
            else label
        )
        index = xp.clip(label.astype("int64"), 0, classes - 1)
        one_hot = (
            xp.expand_dims(index, axis)
            == xp.arange(classes).reshape((1,) * axis + (classes,) + (1,) * (prob.ndim - axis - 1))
        ).astype(prob.dtype)
        if self.smooth_alpha:
            one_hot = one_hot * (1 - self.smooth_alpha) + (1 - one_hot) * (
                self.smooth_alpha / (classes - 1)
            )
        grad = prob - one_hot
        valid = label != self.ignore_label
        if self.use_ignore:
            grad = grad * xp.expand_dims(valid, axis).astype(prob.dtype)
        if self.normalization == "batch":
            normalizer = prob.shape[0]
        elif self.normalization == "valid":
            normalizer = max(int(valid.sum()), 1)
        else:
            normalizer = 1
        if self.multi_output and self.normalization != "valid":
            normalizer *= math.prod(prob.shape[2:])
        grad = grad * (self.grad_scale / normalizer)
        if self.out_grad:
            grad = grad * out_grad[0].reshape(grad.shape)
        write(in_grad[0], req[0], grad.reshape(in_grad[0].shape))
        write(in_grad[1], req[1], 0)

    def _plain_rows(self, y: Any, label: Any, req: Any) -> bool:
        """The common case, classes along axis 1 of ``(N, C)``: :meth:`_backward_rows` applies."""
        return (
            y.ndim == 2
            and label.shape == y.shape[:1]
            and req[0] == OpReqType.WRITE_TO
            and not (self.smooth_alpha or self.use_ignore or self.out_grad)
            and self.normalization != "valid"
        )

    def _backward_rows(self, xp: Any, y: Any, label: Any, grad: Any) -> None:
        """``grad = (y - onehot(label)) * scale`` with 1 subtracted in place: 4 small numpy calls.

        The same values as the general path (``y - 1`` or ``y - 0``, then the
        same multiplication), without building the one-hot matrix: a loss
        layer's arrays are small, and small numpy calls hold the GIL.
        """
        rows, classes = y.shape
        index = xp.clip(label.astype("int64"), 0, classes - 1)
        grad[...] = y
        grad[xp.arange(rows), index] -= 1
        scale = self.grad_scale / (rows if self.normalization == "batch" else 1)
        if scale != 1:
            grad *= scale


# ---------------------------------------------------------------------------
# regression outputs and MakeLoss
# ---------------------------------------------------------------------------


class _RegressionOutput(KernelProp):
    grad_scale = Param(float, unbounded=ANY, default=1.0, doc="Scale of the gradient.")
    kind = "linear"

    def list_arguments(self):
        """``data, label``."""
        return ["data", "label"]

    @partial_shape
    def infer_shape(self, in_shape, out_shape=None):
        """label has data's shape (or ``(N,)`` when data is ``(N, 1)``).

        Partial shapes: data and output share theirs, both ways, and a label
        of the data's rank too.
        """
        data = merge(in_shape[0], (out_shape or [None])[0], "data and output")
        if data is None:
            return None
        data = tuple(data)
        label = in_shape[1]
        if not is_known(data) or (label is not None and not is_known(label)):
            if label is None or len(label) == len(data):
                data = merge(data, label, "data and label")
                label = data
            return [data, tuple(label)], [data], []
        label = in_shape[1]
        if label is not None and math.prod(label) != math.prod(data):
            raise self.shape_error(
                f"label {fmt(label)} must have as many elements as data {fmt(data)}"
            )
        return [data, tuple(label) if label is not None else data], [data], []

    def declare_backward_dependency(self, out_grad, in_data, out_data):
        """Label and output (the head gradient is ignored)."""
        return [in_data[1], out_data[0]]

    def forward_inplace_option(self, in_data, out_data):
        """In place."""
        return [(in_data[0], out_data[0])]

    def forward(self, ctx, in_data, req, out_data, aux):
        """Identity (logistic: sigmoid)."""
        xp, x = ctx.xp, in_data[0]
        write(out_data[0], req[0], 1 / (1 + xp.exp(-x)) if self.kind == "logistic" else x)

    def backward(self, ctx, out_grad, in_data, out_data, req, in_grad, aux):
        """(out - label) * grad_scale / outputs-per-sample (MAE: the sign of it)."""
        xp, y = ctx.xp, out_data[0]
        label = in_data[1].reshape(y.shape)
        per_sample = max(y.size // y.shape[0], 1) if y.ndim else 1
        diff = y - label
        if self.kind == "mae":
            diff = xp.sign(diff)
        write(in_grad[0], req[0], diff * (self.grad_scale / per_sample))
        write(in_grad[1], req[1], 0)


@register("LinearRegressionOutput")
class LinearRegressionOutputProp(_RegressionOutput):
    """Identity forward; gradient (out - label) for a squared loss."""


@register("LogisticRegressionOutput")
class LogisticRegressionOutputProp(_RegressionOutput):
    """Sigmoid forward; gradient (out - label) for a logistic loss."""

    kind = "logistic"


@register("MAERegressionOutput")
class MAERegressionOutputProp(_RegressionOutput):
    """Identity forward; gradient sign(out - label) for an absolute loss."""

    kind = "mae"


@register("MakeLoss")
class MakeLossProp(KernelProp):
    """Make a loss out of any value: identity forward, gradient ``grad_scale`` (head ignored)."""

    grad_scale = Param(float, unbounded=ANY, default=1.0, doc="Gradient scale.")
    valid_thresh = Param(
        float,
        unbounded=ANY,
        default=0.0,
        doc="With normalization='valid': elements above it count.",
    )
    normalization = Param(
        str,
        default="null",
        choices=("null", "batch", "valid"),
        doc="Divide the gradient by 1, the batch size, or the valid count.",
    )

    def declare_backward_dependency(self, out_grad, in_data, out_data):
        """Nothing, or the output for normalization='valid'."""
        return [out_data[0]] if self.normalization == "valid" else []

    def forward_inplace_option(self, in_data, out_data):
        """In place."""
        return [(in_data[0], out_data[0])]

    def forward(self, ctx, in_data, req, out_data, aux):
        """Identity."""
        write(out_data[0], req[0], in_data[0])

    def backward(self, ctx, out_grad, in_data, out_data, req, in_grad, aux):
        """grad_scale / normalizer everywhere."""
        shape = in_grad[0].shape
        if self.normalization == "batch":
            normalizer = shape[0] if shape else 1
        elif self.normalization == "valid":
            normalizer = max(int((out_data[0] > self.valid_thresh).sum()), 1)
        else:
            normalizer = 1
        write(in_grad[0], req[0], self.grad_scale / normalizer)
