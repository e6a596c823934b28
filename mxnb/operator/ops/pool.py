"""Pooling, UpSampling and LRN: loops over kernel offsets, never over pixels.

Idea (MXNet: src/operator/nn/pooling*, upsampling*, lrn*): a pooling window
of ``K`` cells is ``K`` strided slices of the input, one per kernel offset;
average / sum pooling is ``K`` additions of them.  Max pooling is separable:
one axis at a time, ``k_i`` offsets along axis ``i`` (2 + 2 calls for a 2x2
window, not 4 + 4), and its backward undoes the axes in turn, which sends each
window's gradient to its first maximum in row-major order.  Offsets that fall into the padding are clipped away
instead of materialising a padded copy.  Backward walks the same offsets.

Rules:
    * output size: ``valid`` floors ``(in + 2p - k) / s``, ``full`` ceils it,
      ``same`` is ``ceil(in / s)`` (and refuses a ``pad``, as MXNet);
      ``global_pool`` pools the whole extent;
    * max pooling sends the gradient to the first maximum of each window
      (row-major), as MXNet does, and its backward reads input and output;
      average pooling divides by the window clipped to the padded input
      (``count_include_pad=True``, MXNet's default) or to the input itself,
      and its backward reads only the head gradient;
    * UpSampling ``nearest`` repeats pixels; ``bilinear`` is, as in MXNet, a
      depthwise Deconvolution (kernel ``2s - s % 2``, stride ``s``, pad
      ``ceil((s - 1) / 2)``) whose weight input the caller fills with a
      bilinear kernel; LRN normalises across channels and keeps its
      normaliser as a hidden output for backward.

Example::

    >>> import numpy as np
    >>> from mxnb.operator import eager
    >>> x = np.arange(16.0, dtype=np.float32).reshape(1, 1, 4, 4)
    >>> eager.run_forward('Pooling', [x], {'kernel': (2, 2), 'stride': (2, 2)})[0][0][0, 0].tolist()
    [[5.0, 7.0], [13.0, 15.0]]
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from ...base import NotSupportedError, ParamError
from ..base import OpReqType, ResourceRequest
from ..param import ANY, Param, Shape
from ..partial import merge, partial_shape
from ..registry import register
from ._common import KernelProp, fmt, parallel_chunks, write
from .conv import _fill, _offsets
from .deconv import DeconvolutionProp

__all__ = ["LRNProp", "PoolingProp", "UpSamplingProp"]


# ---------------------------------------------------------------------------
# Pooling
# ---------------------------------------------------------------------------


@register("Pooling")
class PoolingProp(KernelProp):
    """Max / average / sum pooling over 1, 2 or 3 spatial axes (global or windowed)."""

    kernel = Param(Shape, default=(), low=1, doc="Window size (ignored with global_pool).")
    pool_type = Param(str, default="max", choices=("max", "avg", "sum", "lp"), doc="Pooling type.")
    global_pool = Param(bool, default=False, doc="Pool over the whole spatial extent.")
    cudnn_off = Param(bool, default=False, doc="Ignored (cuDNN switch).")
    pooling_convention = Param(
        str,
        default="valid",
        choices=("valid", "full", "same"),
        doc="Output size rounding: valid floors, full ceils.",
    )
    stride = Param(Shape, default=(), low=1, doc="Stride; default 1 per axis.")
    pad = Param(Shape, default=(), low=0, doc="Padding per side; default 0.")
    p_value = Param(int, default=None, optional=True, low=1, doc="p of lp pooling (not supported).")
    count_include_pad = Param(
        bool, default=None, optional=True, doc="Average pooling counts padded cells (default True)."
    )
    layout = Param(
        str, default=None, optional=True, doc="Only None / NCW / NCHW / NCDHW are supported."
    )

    def _geometry(self, spatial: Sequence[int]) -> tuple[tuple, tuple, tuple, tuple]:
        """(kernel, stride, pad, out) for the given input spatial shape."""
        nd = len(spatial)
        if self.pool_type == "lp":
            raise NotSupportedError(
                "Pooling: pool_type='lp' is not supported; use 'max', 'avg' or 'sum'"
            )
        if self.global_pool:
            return tuple(spatial), (1,) * nd, (0,) * nd, (1,) * nd
        kernel = tuple(self.kernel)
        if len(kernel) != nd:
            raise self.shape_error(
                f"kernel {kernel} must have {nd} dimensions for data with {nd} spatial axes"
            )
        stride, pad = _fill(self.stride, nd, 1), _fill(self.pad, nd, 0)
        if self.pooling_convention == "same" and any(pad):
            raise ParamError(
                f"Pooling: pooling_convention='same' chooses its own padding, so pad must be 0, "
                f"got pad={tuple(self.pad)}; drop pad or use pooling_convention='valid' / 'full'"
            )
        out = []
        for i in range(nd):
            size = spatial[i] + 2 * pad[i]
            if self.pooling_convention == "same":
                out.append(-(-spatial[i] // stride[i]))
                continue
            if size < kernel[i]:
                raise self.shape_error(
                    f"kernel {kernel} is larger than padded input axis {2 + i} (size {size}); "
                    "use a smaller kernel or more padding"
                )
            if self.pooling_convention == "valid":
                out.append((size - kernel[i]) // stride[i] + 1)
            else:
                out.append(-(-(size - kernel[i]) // stride[i]) + 1)
        return kernel, stride, pad, tuple(out)

    @partial_shape
    def infer_shape(self, in_shape, out_shape=None):
        """``(N, C, *out)``; with partial shapes N and C flow both ways."""
        data = in_shape[0]
        given = (out_shape or [None])[0]
        if data is None and given is not None:
            data = tuple(given[:2]) + (0,) * (len(given) - 2)
        if data is None:
            return None
        data = tuple(data)
        if len(data) < 3 or len(data) > 5:
            raise self.shape_error(f"data {fmt(data)} must be 3-D, 4-D or 5-D (N, C, *spatial)")
        if given is not None:
            data = merge(data[:2], tuple(given[:2]), "batch and channels of data and output")
            data = data + tuple(
                in_shape[0][2:] if in_shape[0] is not None else (0,) * (len(given) - 2)
            )
        if all(data[2:]):
            *_, out = self._geometry(data[2:])
        else:
            out = (1 if self.global_pool else 0,) * (len(data) - 2)
        return [data], [data[:2] + out], []

    def declare_backward_dependency(self, out_grad, in_data, out_data):
        """max: head gradient, data and output; avg / sum: head gradient only."""
        if self.pool_type == "max":
            return [out_grad[0], in_data[0], out_data[0]]
        return [out_grad[0]]

    def _before(self, spatial, kernel, stride, pad, out) -> tuple:
        """Padding before each axis (``same`` splits the needed padding evenly)."""
        if self.pooling_convention != "same":
            return tuple(pad)
        needed = ((o - 1) * s + k - i for o, s, k, i in zip(out, stride, kernel, spatial))
        return tuple(max(n, 0) // 2 for n in needed)

    def _windows(self, spatial, kernel, stride, before, out) -> list[tuple[tuple, tuple]]:
        """(output index, input index) per kernel offset, clipped to the input: no padding copy.

        Offset ``k`` of output ``o`` reads input ``o*s + k - before``; only the
        outputs for which that lies inside the input take part.
        """
        pairs = []
        for offset in _offsets(kernel):
            out_index, in_index = [slice(None), slice(None)], [slice(None), slice(None)]
            for k, s_, b, size, o in zip(offset, stride, before, spatial, out):
                low = max(-(-(b - k) // s_), 0)
                high = min((size - 1 + b - k) // s_ + 1, o)
                if high <= low:
                    break
                start = low * s_ + k - b
                out_index.append(slice(low, high))
                in_index.append(slice(start, start + s_ * (high - low - 1) + 1, s_))
            else:
                pairs.append((tuple(out_index), tuple(in_index)))
        return pairs

    @staticmethod
    def _axis_windows(k: int, s_: int, b: int, size: int, o: int) -> list[tuple[slice, slice]]:
        """(output slice, input slice) of each kernel offset along one axis, clipped to the input."""
        pairs = []
        for offset in range(k):
            low = max(-(-(b - offset) // s_), 0)
            high = min((size - 1 + b - offset) // s_ + 1, o)
            if high > low:
                start = low * s_ + offset - b
                pairs.append(
                    (slice(low, high), slice(start, start + s_ * (high - low - 1) + 1, s_))
                )
        return pairs

    def _max_stage(self, xp: Any, source: Any, axis: int, pairs: list, out: Any) -> Any:
        """``out`` = the max of ``source`` over the kernel offsets along spatial ``axis``.

        Max pooling is separable: the max over a window is the max over its
        rows of the max along each row.  Offsets covering every output start
        with one ``maximum`` of two of them; the rest update their range.
        """
        lead = (slice(None),) * (2 + axis)
        full = [
            pair for pair in pairs if pair[0].start == 0 and pair[0].stop == out.shape[2 + axis]
        ]
        rest = [pair for pair in pairs if pair not in full[:2]]
        if len(full) >= 2:
            xp.maximum(source[lead + (full[0][1],)], source[lead + (full[1][1],)], out=out)
        elif full:
            out[...] = source[lead + (full[0][1],)]
        else:
            out[...] = -xp.inf
        for out_index, in_index in rest:
            part = out[lead + (out_index,)]
            xp.maximum(part, source[lead + (in_index,)], out=part)
        return out

    def _axes(self, spatial, kernel, stride, before, out) -> list[list[tuple[slice, slice]]]:
        """:meth:`_axis_windows` of every spatial axis."""
        return [
            self._axis_windows(k, s_, b, size, o)
            for k, s_, b, size, o in zip(kernel, stride, before, spatial, out)
        ]

    def _max_stages(self, xp: Any, x: Any, axes: list, out: Sequence[int]) -> list[Any]:
        """``[x, max along the last axis, along the last two, ...]``: all but axis 0 reduced.

        Last axis first, so that backward (:meth:`_route_max`), which undoes the
        stages from axis 0 on, picks the first row holding the max before the
        first cell of that row: MXNet's row-major first maximum.
        """
        stages = [x]
        for axis in range(len(axes) - 1, 0, -1):
            shape = list(stages[-1].shape)
            shape[2 + axis] = out[axis]
            stage = xp.empty(tuple(shape), dtype=x.dtype)
            stages.append(self._max_stage(xp, stages[-1], axis, axes[axis], stage))
        return stages

    def _divisor(self, xp: Any, spatial, kernel, stride, pad, out, dtype) -> Any:
        """Window sizes per output position (MXNet's pool_size with or without padding)."""
        include = self.count_include_pad is None or self.count_include_pad
        sizes = []
        for i in range(len(spatial)):
            start = xp.arange(out[i]) * stride[i] - pad[i]
            end = xp.minimum(start + kernel[i], spatial[i] + pad[i])
            if not include:
                start = xp.maximum(start, 0)
                end = xp.minimum(end, spatial[i])
            sizes.append(end - start)
        divisor = sizes[0]
        for size in sizes[1:]:
            divisor = divisor[..., None] * size
        return divisor.astype(dtype)

    def forward(self, ctx, in_data, req, out_data, aux):
        """A loop over kernel offsets: ``maximum`` or ``+=`` of strided slices of the input."""
        xp, x = ctx.xp, in_data[0]
        kernel, stride, pad, out = self._geometry(x.shape[2:])
        if self.global_pool:
            axes = tuple(range(2, x.ndim))
            reducer = {"max": xp.max, "sum": xp.sum, "avg": xp.mean}[self.pool_type]
            write(out_data[0], req[0], reducer(x, axis=axes, keepdims=True))
            return
        target = out_data[0]
        result = (
            target if req[0] == OpReqType.WRITE_TO else xp.empty(target.shape, dtype=target.dtype)
        )
        before = self._before(x.shape[2:], kernel, stride, pad, out)
        if self.pool_type == "max":
            axes = self._axes(x.shape[2:], kernel, stride, before, out)

            def chunk(start: int, stop: int) -> None:
                stages = self._max_stages(xp, x[start:stop], axes, out)
                self._max_stage(xp, stages[-1], 0, axes[0], result[start:stop])

            parallel_chunks(xp, x.shape[0], x.size, chunk)
            if result is not target:
                write(target, req[0], result)
            return
        result[...] = 0
        windows = self._windows(x.shape[2:], kernel, stride, before, out)

        def chunk(start: int, stop: int) -> None:
            part, data = result[start:stop], x[start:stop]
            for out_index, in_index in windows:
                part[out_index] += data[in_index]

        parallel_chunks(xp, x.shape[0], x.size, chunk)
        if self.pool_type == "avg":
            result /= self._divisor(xp, x.shape[2:], kernel, stride, pad, out, x.dtype)
        if result is not target:
            write(target, req[0], result)

    def backward(self, ctx, out_grad, in_data, out_data, req, in_grad, aux):
        """Scatter the head gradient back over the windows (max: to the first maximum only)."""
        xp = ctx.xp
        grad_shape = in_grad[0].shape
        spatial = grad_shape[2:]
        kernel, stride, pad, out = self._geometry(spatial)
        g = out_grad[0]
        if self.global_pool and self.pool_type != "max":
            scale = 1.0 / math.prod(spatial) if self.pool_type == "avg" else 1.0
            write(in_grad[0], req[0], xp.broadcast_to(g * scale, grad_shape))
            return
        target = in_grad[0]
        grad = target if req[0] == OpReqType.WRITE_TO else xp.empty(grad_shape, dtype=target.dtype)
        before = self._before(spatial, kernel, stride, pad, out)
        if self.pool_type == "max":
            axes = self._axes(spatial, kernel, stride, before, out)
            tiled = [  # the offsets' input slices tile the axis: every cell written once
                s_ == k and b == 0 and size == o * k
                for k, s_, b, size, o in zip(kernel, stride, before, spatial, out)
            ]
            x, y = in_data[0], out_data[0]

            def chunk(start: int, stop: int) -> None:
                stages = self._max_stages(xp, x[start:stop], axes, out)
                head = g[start:stop]
                above = y[start:stop]
                for axis in range(len(axes)):  # stages[-1] was reduced along axis 0 into y
                    source = stages[len(axes) - 1 - axis]
                    below = grad[start:stop] if axis == len(axes) - 1 else xp.empty_like(source)
                    self._route_max(xp, source, above, head, axis, axes[axis], below, tiled[axis])
                    head, above = below, source

            parallel_chunks(xp, grad.shape[0], grad.size, chunk)
            if grad is not target:
                write(target, req[0], grad)
            return
        grad[...] = 0
        windows = self._windows(spatial, kernel, stride, before, out)
        if self.pool_type == "avg":
            g = g / self._divisor(xp, spatial, kernel, stride, pad, out, g.dtype)

        def chunk(start: int, stop: int) -> None:
            grad_part, g_part = grad[start:stop], g[start:stop]
            for out_index, in_index in windows:
                grad_part[in_index] += g_part[out_index]

        parallel_chunks(xp, grad.shape[0], grad.size, chunk)
        if grad is not target:
            write(target, req[0], grad)

    @staticmethod
    def _route_max(
        xp: Any, source, value, head, axis: int, pairs: list, below, tiled: bool
    ) -> None:
        """``below`` = ``head`` sent back along spatial ``axis`` to the first max of each window.

        The backward of one :meth:`_max_stage`: offset by offset, a window's
        head gradient goes to the first offset whose ``source`` equals the
        window's max ``value`` and that no earlier offset took.  Chained from
        axis 0 to the last, this is MXNet's rule, the first maximum in
        row-major order: the first row holding the max, then the first cell
        of that row.  ``tiled``: each input cell is in exactly one window.
        """
        lead = (slice(None),) * (2 + axis)
        if not tiled:
            below[...] = 0
        pending = None  # outputs whose first max is not found yet (None: all)
        last = len(pairs) - 1
        for index, (out_slice, in_slice) in enumerate(pairs):
            at_out, at_in = lead + (out_slice,), lead + (in_slice,)
            found = xp.equal(source[at_in], value[at_out])
            if pending is not None:
                xp.logical_and(found, pending[at_out], out=found)
            if index < last:
                if (
                    pending is None
                    and out_slice.start == 0
                    and out_slice.stop == value.shape[2 + axis]
                ):
                    pending = xp.logical_not(found)
                else:
                    if pending is None:
                        pending = xp.ones(value.shape, dtype=bool)
                    rows = pending[at_out]
                    xp.logical_xor(rows, found, out=rows)
            part = below[at_in]
            if tiled:
                xp.multiply(head[at_out], found, out=part)
            else:
                xp.add(part, head[at_out] * found, out=part)


# ---------------------------------------------------------------------------
# UpSampling (nearest) and LRN
# ---------------------------------------------------------------------------


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
