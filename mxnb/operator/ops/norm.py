"""Normalization and dropout: BatchNorm and Dropout.

Idea (MXNet: src/operator/nn/batch_norm*, dropout*): these ops carry the
interesting *semantics* of the operator interface:

    * BatchNorm keeps ``moving_mean`` / ``moving_var`` as auxiliary states,
      updated in forward during training (``new = momentum*old +
      (1-momentum)*batch``, biased variance), and has hidden outputs
      ``mean`` / ``var`` that only backward reads;
    * Dropout asks for the RANDOM resource and keeps its mask as a hidden
      output; in inference it is the identity.

Rules: Dropout's forward runs in place; BatchNorm's math is written once
as fused kernels (:mod:`mxnb.operator.fused`: one kernel each on a GPU, the
same statements on numpy), and large BatchNorm calls split their channels
over the op thread pool (``parallel_chunks``).

State kept: none (the moving statistics are the caller's auxiliary arrays).

Example::

    >>> import numpy as np
    >>> from mxnb.operator import eager
    >>> x = np.ones((2, 3))
    >>> eager.run_forward('Dropout', [x], {'p': 0.5})[0][0].tolist()  # inference: the identity
    [[1.0, 1.0, 1.0], [1.0, 1.0, 1.0]]
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..base import OpReqType, ResourceRequest
from ..fused import FusedMap, FusedSum
from ..param import AXIS, UNUSED, Param, Shape
from ..partial import is_known, merge, partial_shape
from ..registry import register
from ..split import parallel_chunks
from ._common import KernelProp, fmt, normalize_axis, ufunc_into, write

__all__ = ["BatchNormProp", "DropoutProp"]


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

        Training: a sum, then three fused kernels (:data:`_SQUARES`, :data:`_STATS`,
        :data:`_NORMALIZE`); otherwise two (:data:`_SCALE`, :data:`_NORMALIZE`).
        Channels are independent, so large inputs are processed in channel
        chunks on the op thread pool (:func:`parallel_chunks`).
        """
        xp = ctx.xp
        x3, _ = self._view(in_data[0])
        out = out_data[0].reshape(x3.shape)
        direct = req[0] == OpReqType.WRITE_TO
        result = out if direct else xp.empty(x3.shape, dtype=x3.dtype)
        batch = self._use_batch(ctx)
        count = x3.shape[0] * x3.shape[2]
        channels = x3.shape[1]
        keep, drop = (0, 1) if self.fix_gamma else (1, 0)  # gamma * keep + drop: fix_gamma's 1
        mean = xp.empty(channels, dtype=x3.dtype) if batch else aux[0].copy()
        var = xp.empty(channels, dtype=x3.dtype) if batch else aux[1].copy()
        invstd, scale, shift = (xp.empty(channels, dtype=x3.dtype) for _ in range(3))
        gamma, beta, eps, momentum = in_data[1], in_data[2], self.eps, self.momentum

        def chunk(start: int, stop: int) -> None:
            part, buffer, c = x3[:, start:stop], result[:, start:stop], slice(start, stop)
            if batch:  # the buffer holds x - mean (the squares' side) before the result
                xp.true_divide(xp.sum(part, axis=(0, 2)), count, out=mean[c])
                squares = _SQUARES(xp, part, _column(mean[c]), axis=(0, 2), scratch=buffer)
                _STATS(xp, mean[c], squares, gamma[c], beta[c], count, eps, keep, drop, momentum,
                       out=(var[c], invstd[c], scale[c], shift[c], aux[0][c], aux[1][c]))  # fmt: skip
            else:
                _SCALE(xp, mean[c], var[c], gamma[c], beta[c], eps, keep, drop,
                       out=(invstd[c], scale[c], shift[c]))  # fmt: skip
            _NORMALIZE(xp, part, _column(scale[c]), _column(shift[c]), out=(buffer,))

        parallel_chunks(xp, channels, x3.size, chunk)
        if not direct:
            write(out, req[0], result)
        write(out_data[1], req[1], mean)
        # MXNet 1.9.1 shows 1/sqrt(var + eps) as BatchNorm's third output (SyncBatchNorm: var)
        write(out_data[2], req[2], var if self.saves_variance else invstd)

    def backward(self, ctx, out_grad, in_data, out_data, req, in_grad, aux):
        """Training: the full batch-statistics gradient; otherwise a per-channel scale.

        A sum and three fused kernels (:data:`_CENTERED_DOT`, :data:`_BACKWARD_STATS`,
        :data:`_GRAD_DATA` or :data:`_GRAD_SCALED`), after :data:`_INVSTD` where the
        saved output is the variance.
        """
        xp = ctx.xp
        x3, _ = self._view(in_data[0])
        g = out_grad[0].reshape(x3.shape)
        batch = self._use_batch(ctx)
        if batch and not self.saves_variance:
            mean, invstd = out_data[1], out_data[2]
        else:
            mean, var = (out_data[1], out_data[2]) if batch else (aux[0], aux[1])
            (invstd,) = _INVSTD(xp, var, self.eps)
        count = x3.shape[0] * x3.shape[2]
        channels = x3.shape[1]
        keep, drop = (0, 1) if self.fix_gamma else (1, 0)
        direct = req[0] == OpReqType.WRITE_TO
        # the data-gradient buffer first holds x - mean (no temporaries when writing directly)
        buffer = in_grad[0].reshape(x3.shape) if direct else xp.empty(x3.shape, dtype=x3.dtype)
        grad_beta, grad_gamma, scale, k, shift = (
            xp.empty(channels, dtype=x3.dtype) for _ in range(5)
        )
        gamma = in_data[1]

        def chunk(start: int, stop: int) -> None:
            part, g_part, b_part, c = (
                x3[:, start:stop],
                g[:, start:stop],
                buffer[:, start:stop],
                slice(start, stop),
            )
            xp.sum(g_part, axis=(0, 2), out=grad_beta[c])
            dot = _CENTERED_DOT(xp, g_part, part, _column(mean[c]), axis=(0, 2), scratch=b_part)
            _BACKWARD_STATS(xp, dot, grad_beta[c], mean[c], invstd[c], gamma[c], count, keep, drop,
                            out=(grad_gamma[c], scale[c], k[c], shift[c]))  # fmt: skip
            if req[0] == OpReqType.NULL:
                return
            if batch:
                _GRAD_DATA(xp, part, g_part, _column(k[c]), _column(shift[c]), _column(scale[c]),
                           out=(b_part,))  # fmt: skip
            else:
                _GRAD_SCALED(xp, g_part, _column(scale[c]), out=(b_part,))

        parallel_chunks(xp, channels, x3.size, chunk)
        if req[0] != OpReqType.NULL and not direct:
            write(in_grad[0].reshape(x3.shape), req[0], buffer)
        write(in_grad[1], req[1], xp.zeros_like(grad_gamma) if self.fix_gamma else grad_gamma)
        write(in_grad[2], req[2], grad_beta)


def _column(values: Any) -> Any:
    """Per-channel values shaped (1, C, 1), to broadcast against (outer, C, inner)."""
    return values.reshape(1, -1, 1)


# BatchNorm's math, written once (:mod:`mxnb.operator.fused`): one kernel each on a GPU.
# Per channel: invstd = 1 / sqrt(var + eps), scale = gamma * invstd (gamma is 1 with fix_gamma).
_INVSTD_AND_SCALE = """
    invstd = 1 / sqrt(var + eps)
    scale = (gamma * keep + drop) * invstd
    shift = beta - mean * scale
"""
_SQUARES = FusedSum("batch_norm_squares", ("x", "mean"), "(x - mean) * (x - mean)")
_STATS = FusedMap(
    "batch_norm_stats",
    ("mean", "squares", "gamma", "beta", "count", "eps", "keep", "drop", "momentum"),
    ("var", "invstd", "scale", "shift", "moving_mean", "moving_var"),
    "var = squares / count"
    + _INVSTD_AND_SCALE
    + """
    moving_mean = moving_mean * momentum + mean * (1 - momentum)
    moving_var = moving_var * momentum + var * (1 - momentum)
""",
)
_SCALE = FusedMap(
    "batch_norm_scale", ("mean", "var", "gamma", "beta", "eps", "keep", "drop"),
    ("invstd", "scale", "shift"),
    _INVSTD_AND_SCALE,
)  # fmt: skip
_NORMALIZE = FusedMap(
    "batch_norm_normalize", ("x", "scale", "shift"), ("y",),
    "y = x * scale + shift",  # (x - mean) * scale + beta, one pass fewer on a CPU
)  # fmt: skip
_INVSTD = FusedMap("batch_norm_invstd", ("var", "eps"), ("invstd",), "invstd = 1 / sqrt(var + eps)")
_CENTERED_DOT = FusedSum("batch_norm_centered_dot", ("g", "x", "mean"), "g * (x - mean)")
# d/dx = (g - mean(g) - (x - mean) * invstd^2 * mean(g * (x - mean))) * gamma * invstd
_BACKWARD_STATS = FusedMap(
    "batch_norm_backward_stats",
    ("dot", "grad_beta", "mean", "invstd", "gamma", "count", "keep", "drop"),
    ("grad_gamma", "scale", "k", "shift"),
    """
    grad_gamma = dot * invstd
    scale = (gamma * keep + drop) * invstd
    k = -grad_gamma * invstd / count
    shift = mean * k + grad_beta / count
""",
)
_GRAD_DATA = FusedMap(
    "batch_norm_grad_data", ("x", "g", "k", "shift", "scale"), ("dx",),
    "dx = (x * k + g - shift) * scale",  # ((x - mean) * k + g - grad_beta / count) * scale
)  # fmt: skip
_GRAD_SCALED = FusedMap("batch_norm_grad_scaled", ("g", "scale"), ("dx",), "dx = g * scale")


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
        scale = 1.0 / keep if keep > 0 else 0.0
        draw_type = "float32" if x.dtype.itemsize <= 4 else "float64"
        mask = out_data[1]
        if (
            xp is np
            and shape == x.shape
            and req[1] == OpReqType.WRITE_TO
            and (mask.dtype == draw_type and x.dtype == mask.dtype)
        ):  # drawn (numpy's generator fills numpy arrays), compared and scaled in the mask: no
            # temporaries, the same values
            generator.random(shape, dtype=draw_type, out=mask)
            xp.less(mask, keep, out=mask)
            mask *= scale
        else:
            draws = xp.asarray(generator.random(shape, dtype=draw_type))
            mask = xp.broadcast_to((draws < keep).astype(x.dtype) * scale, x.shape)
            write(out_data[1], req[1], mask)
        if not ufunc_into(xp, "multiply", out_data[0], req[0], x, mask):
            write(out_data[0], req[0], x * mask)

    def backward(self, ctx, out_grad, in_data, out_data, req, in_grad, aux):
        """dx = dy * mask (into dx when it is written)."""
        if not ufunc_into(ctx.xp, "multiply", in_grad[0], req[0], out_grad[0], out_data[1]):
            write(in_grad[0], req[0], out_grad[0] * out_data[1])
