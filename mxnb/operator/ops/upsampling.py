"""UpSampling and LRN: resizing by repetition or a bilinear kernel, and local response normalisation.

Idea (MXNet: src/operator/nn/upsampling*, lrn*): UpSampling ``nearest``
repeats pixels; ``bilinear`` is, as in MXNet, a depthwise Deconvolution
(kernel ``2s - s % 2``, stride ``s``, pad ``ceil((s - 1) / 2)``) whose weight
input the caller fills with a bilinear kernel.  LRN normalises across
channels and keeps its normaliser as a hidden output for backward.

Rules: nearest UpSampling scales every input to the first one's size times
``scale``, then concatenates their channels (``multi_input_mode='sum'``: adds
them); LRN's backward reads the head gradient, its input and the normaliser.

Example::

    >>> import numpy as np
    >>> from mxnb.operator import eager
    >>> x = np.array([[[[1.0, 2.0]]]], np.float32)
    >>> eager.run_forward('UpSampling', [x], {'scale': 2, 'sample_type': 'nearest'})[0][0][0, 0].tolist()
    [[1.0, 1.0, 2.0, 2.0], [1.0, 1.0, 2.0, 2.0]]
"""

from __future__ import annotations

import math
from typing import Any

from ...base import ParamError
from ..base import ResourceRequest
from ..param import ANY, Param
from ..registry import register
from ._common import KernelProp, fmt, write
from .deconv import DeconvolutionProp

__all__ = ["LRNProp", "UpSamplingProp"]


@register("UpSampling")
class UpSamplingProp(KernelProp):
    """Upsampling of 4-D inputs by an integer ``scale``: nearest, or bilinear (a Deconvolution)."""

    key_var_num_args = "num_args"
    scale = Param(int, low=1, doc="Upsampling factor.")
    num_filter = Param(
        int, default=0, low=0, doc="Filters of bilinear upsampling (unused for nearest)."
    )
    sample_type = Param(
        str, choices=("nearest", "bilinear"), doc="Repeat pixels, or a bilinear Deconvolution."
    )
    multi_input_mode = Param(
        str, default="concat", choices=("concat", "sum"), doc="How several inputs are combined."
    )
    num_args = Param(int, default=1, low=1, doc="Number of inputs.")
    workspace = Param(int, default=512, low=0, doc="Ignored.")

    def list_arguments(self):
        """``arg0 … arg{num_args-1}``; bilinear: ``data, weight``."""
        if self.sample_type == "bilinear":
            return ["data", "weight"]
        return [f"arg{i}" for i in range(self.num_args)]

    def _bilinear(self) -> DeconvolutionProp:
        """The Deconvolution that bilinear upsampling is (MXNet builds the same one)."""
        if self.num_filter < 1:
            raise ParamError(
                f"UpSampling: sample_type='bilinear' needs num_filter >= 1 (the data's channels), "
                f"got {self.num_filter}"
            )
        scale = self.scale
        return DeconvolutionProp(
            kernel=(2 * scale - scale % 2,) * 2,
            stride=(scale,) * 2,
            pad=(math.ceil((scale - 1) / 2),) * 2,
            num_filter=self.num_filter,
            num_group=self.num_filter,
            no_bias=True,
        )

    def forward_resource(self, in_shape):
        """Bilinear: TEMP_SPACE for the Deconvolution's columns."""
        return [ResourceRequest.TEMP_SPACE] if self.sample_type == "bilinear" else []

    def backward_resource(self, in_shape):
        """Bilinear: TEMP_SPACE for the Deconvolution's columns."""
        return self.forward_resource(in_shape)

    def temp_space_bytes(self, in_shape, in_type, req=None):
        """Bilinear: the Deconvolution's columns, either pass (nearest needs none)."""
        if self.sample_type != "bilinear":
            return 0
        return self._bilinear().temp_space_bytes(in_shape[:1], in_type[:1])

    def infer_shape(self, in_shape):
        """Output spatial size = first input's size * scale; the others scale to it.

        Bilinear: the Deconvolution's shapes, weight ``(C, 1, k, k)``.
        """
        if self.sample_type == "bilinear":
            return self._bilinear().infer_shape(in_shape)
        if any(s is None for s in in_shape):
            return None
        first = tuple(in_shape[0])
        height, width = first[2] * self.scale, first[3] * self.scale
        channels = 0
        for name, shape in zip(self.list_arguments(), in_shape):
            if len(shape) != 4 or height % shape[2] or width % shape[3] or shape[0] != first[0]:
                raise self.shape_error(
                    f"{name} {fmt(shape)} cannot be upsampled to {height}x{width}"
                )
            channels += shape[1]
        if self.multi_input_mode == "sum":
            channels = first[1]
        return [tuple(s) for s in in_shape], [(first[0], channels, height, width)], []

    def declare_backward_dependency(self, out_grad, in_data, out_data):
        """Only the head gradient (bilinear: also data and weight)."""
        if self.sample_type == "bilinear":
            return [out_grad[0], in_data[0], in_data[1]]
        return [out_grad[0]]

    def forward(self, ctx, in_data, req, out_data, aux):
        """Repeat rows and columns; concatenate or sum the inputs (bilinear: the Deconvolution)."""
        if self.sample_type == "bilinear":
            self._bilinear().forward(ctx, in_data, req, out_data, aux)
            return
        xp = ctx.xp
        height, width = out_data[0].shape[2:]
        parts = []
        for x in in_data:
            sh, sw = height // x.shape[2], width // x.shape[3]
            parts.append(xp.repeat(xp.repeat(x, sh, axis=2), sw, axis=3))
        if self.multi_input_mode == "sum":
            value = parts[0]
            for part in parts[1:]:
                value = value + part
        else:
            value = xp.concatenate(parts, axis=1)
        write(out_data[0], req[0], value)

    def backward(self, ctx, out_grad, in_data, out_data, req, in_grad, aux):
        """Sum the head gradient over each block (bilinear: the Deconvolution's gradients)."""
        if self.sample_type == "bilinear":
            self._bilinear().backward(ctx, out_grad, in_data, out_data, req, in_grad, aux)
            return
        g = out_grad[0]
        n, _, height, width = g.shape
        start = 0
        for i, grad in enumerate(in_grad):
            c, h, w = grad.shape[1:]
            part = g if self.multi_input_mode == "sum" else g[:, start : start + c]
            start += c
            value = part.reshape(n, c, h, height // h, w, width // w).sum(axis=(3, 5))
            write(grad, req[i], value)


@register("LRN")
class LRNProp(KernelProp):
    """Local response normalization across channels: ``x / (knorm + alpha/nsize * sum x^2)^beta``."""

    alpha = Param(float, unbounded=ANY, default=1e-4, doc="Scale of the sum of squares.")
    beta = Param(float, unbounded=ANY, default=0.75, doc="Exponent.")
    knorm = Param(float, unbounded=ANY, default=2.0, doc="Additive constant.")
    nsize = Param(int, low=1, doc="Number of channels in the window (odd).")

    def list_outputs(self):
        """``output`` and the hidden ``tmp_norm``."""
        return ["output", "tmp_norm"]

    def num_visible_outputs(self):
        """Only ``output`` is visible."""
        return 1

    def declare_backward_dependency(self, out_grad, in_data, out_data):
        """Head gradient, data and the normaliser."""
        return [out_grad[0], in_data[0], out_data[1]]

    def _window_sum(self, xp: Any, values: Any) -> Any:
        half = self.nsize // 2
        widths = [(0, 0)] * values.ndim
        widths[1] = (half + 1, half)
        cumulative = xp.cumsum(xp.pad(values, widths), axis=1)
        channels = values.shape[1]
        upper = [slice(None)] * values.ndim
        lower = [slice(None)] * values.ndim
        upper[1] = slice(self.nsize, self.nsize + channels)
        lower[1] = slice(0, channels)
        return cumulative[tuple(upper)] - cumulative[tuple(lower)]

    def forward(self, ctx, in_data, req, out_data, aux):
        """norm = knorm + alpha/nsize * window_sum(x^2); out = x * norm^-beta."""
        xp, x = ctx.xp, in_data[0]
        norm = self.knorm + self.alpha / self.nsize * self._window_sum(xp, x * x)
        write(out_data[0], req[0], x * norm ** (-self.beta))
        write(out_data[1], req[1], norm)

    def backward(self, ctx, out_grad, in_data, out_data, req, in_grad, aux):
        """dx = dy norm^-b - 2ab/n * x * window_sum(dy x norm^(-b-1))."""
        xp = ctx.xp
        g, x, norm = out_grad[0], in_data[0], out_data[1]
        inner = self._window_sum(xp, g * x * norm ** (-self.beta - 1))
        value = g * norm ** (-self.beta) - 2 * self.alpha * self.beta / self.nsize * x * inner
        write(in_grad[0], req[0], value)
