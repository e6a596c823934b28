"""Spatial operators: Convolution, Deconvolution, Pooling, UpSampling, LRN.

Idea (MXNet: src/operator/nn/convolution*, deconvolution*, pooling*): a
convolution is one matrix product once the input is laid out as columns.
``im2col`` builds a strided *view* of the padded input with shape
``(N, C, *kernel, *out)`` (``xp.lib.stride_tricks.as_strided``: no Python
loop over pixels), copies it once into ``(N, C*K, P)`` columns, and a single
batched GEMM per group gives the output ``(N, F, P)`` directly in NCHW.
Backward: the weight gradient is one batched GEMM against the same columns;
the data gradient is a GEMM to columns followed by ``col2im``, a loop over
the ``K`` kernel offsets (9 for 3x3), each a strided slice-add.  Pooling
loops over kernel offsets the same way (``maximum`` / ``+=`` of strided
slices).

Rules:
    * layouts are MXNet's: data ``(N, C, *spatial)``, Convolution weight
      ``(num_filter, C/num_group, *kernel)``, Deconvolution weight
      ``(C, num_filter/num_group, *kernel)``; 1, 2 or 3 spatial dims;
    * output size: conv ``(in + 2p - d(k-1) - 1) // s + 1``; deconv
      ``s(in-1) + d(k-1) + 1 - 2p + adj``; pooling ``valid`` floors, ``full``
      ceils, ``same`` is ``ceil(in/s)``;
    * max pooling sends the gradient to the first maximum of each window
      (row-major), as MXNet does; average pooling divides by the window
      clipped to the padded input (``count_include_pad=True``, MXNet's
      default) or to the input itself;
    * backward reads: conv / deconv head gradient, data, weight; max pooling
      head gradient, data and output; avg / sum pooling head gradient only.

Example::

    >>> import numpy as np
    >>> from mxnb.operator import eager
    >>> x, w = np.ones((1, 1, 4, 4), np.float32), np.ones((2, 1, 3, 3), np.float32)
    >>> eager.run_forward('Convolution', [x, w], {'kernel': (3, 3), 'num_filter': 2, 'no_bias': True})[0][0][0, :, 0, 0]
    array([9., 9.], dtype=float32)
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from ...base import NotSupportedError
from ..base import OpReqType, ResourceRequest
from ..param import Param, Shape
from ..registry import register
from ._common import KernelProp, fmt, write

__all__ = ["ConvolutionProp", "DeconvolutionProp", "PoolingProp", "col2im", "im2col"]


# ---------------------------------------------------------------------------
# im2col / col2im
# ---------------------------------------------------------------------------


def _window_view(
    xp: Any,
    x: Any,
    kernel: Sequence[int],
    stride: Sequence[int],
    dilate: Sequence[int],
    out_spatial: Sequence[int],
) -> Any:
    """Strided view ``(N, C, *kernel, *out)`` of a padded input ``(N, C, *spatial)``; no copy."""
    nd = len(kernel)
    strides = x.strides
    shape = tuple(x.shape[:2]) + tuple(kernel) + tuple(out_spatial)
    view_strides = (
        tuple(strides[:2])
        + tuple(strides[2 + i] * dilate[i] for i in range(nd))
        + tuple(strides[2 + i] * stride[i] for i in range(nd))
    )
    return xp.lib.stride_tricks.as_strided(x, shape=shape, strides=view_strides, writeable=False)


def im2col(
    xp: Any,
    x: Any,
    kernel: Sequence[int],
    stride: Sequence[int],
    dilate: Sequence[int],
    out_spatial: Sequence[int],
) -> Any:
    """Columns ``(N, C*prod(kernel), prod(out))`` of a padded input (one copy)."""
    view = _window_view(xp, x, kernel, stride, dilate, out_spatial)
    n, c = x.shape[:2]
    return xp.ascontiguousarray(view).reshape(n, c * math.prod(kernel), math.prod(out_spatial))


def _offset_slices(
    offset: Sequence[int], stride: Sequence[int], dilate: Sequence[int], out_spatial: Sequence[int]
) -> tuple:
    """Index of the padded input read by kernel ``offset`` at every output position."""
    return (slice(None), slice(None)) + tuple(
        slice(k * d, k * d + s * (o - 1) + 1, s)
        for k, s, d, o in zip(offset, stride, dilate, out_spatial)
    )


def _offsets(kernel: Sequence[int]) -> list[tuple]:
    offsets: list[tuple] = [()]
    for k in kernel:
        offsets = [prefix + (i,) for prefix in offsets for i in range(k)]
    return offsets


def col2im(
    xp: Any,
    cols: Any,
    padded_shape: Sequence[int],
    kernel: Sequence[int],
    stride: Sequence[int],
    dilate: Sequence[int],
    out_spatial: Sequence[int],
) -> Any:
    """Sum columns ``(N, C*K, P)`` back into a padded array (a loop over kernel offsets only)."""
    n, c = padded_shape[:2]
    blocks = cols.reshape((n, c, math.prod(kernel)) + tuple(out_spatial))
    result = xp.zeros(tuple(padded_shape), dtype=cols.dtype)
    for index, offset in enumerate(_offsets(kernel)):
        result[_offset_slices(offset, stride, dilate, out_spatial)] += blocks[:, :, index]
    return result


def _pad(xp: Any, x: Any, before: Sequence[int], after: Sequence[int], value: float = 0.0) -> Any:
    """Pad the spatial axes (``after`` may be negative: then the end is cropped)."""
    if not any(before) and not any(after):
        return x
    crop = tuple(slice(None, x.shape[2 + i] + a if a < 0 else None) for i, a in enumerate(after))
    x = x[(slice(None), slice(None)) + crop]
    widths = [(0, 0), (0, 0)] + [(b, max(a, 0)) for b, a in zip(before, after)]
    return xp.pad(x, widths, mode="constant", constant_values=value)


def _unpad(x: Any, before: Sequence[int], size: Sequence[int]) -> Any:
    return x[(slice(None), slice(None)) + tuple(slice(b, b + s) for b, s in zip(before, size))]


def _fill(param: tuple, nd: int, value: int) -> tuple:
    return tuple(param) if param else (value,) * nd


def _scratch(ctx: Any, xp: Any, shape: tuple, dtype: Any) -> Any:
    """Scratch memory from the TEMP_SPACE resource when the caller provided it, else fresh."""
    for resource in ctx.requested or ():
        if hasattr(resource, "get_space"):
            return resource.get_space(shape, dtype)
    return xp.empty(shape, dtype=dtype)


def channel_last_padded(xp: Any, x: Any, before: Sequence[int], after: Sequence[int]) -> Any:
    """``(N, C, *S)`` -> zero-padded channel-last ``(N, *(S + pads), C)`` (negative pads crop)."""
    spatial = x.shape[2:]
    shape = (
        (x.shape[0],) + tuple(s + b + a for s, b, a in zip(spatial, before, after)) + (x.shape[1],)
    )
    result = (
        xp.zeros(shape, dtype=x.dtype)
        if any(before) or any(after)
        else xp.empty(shape, dtype=x.dtype)
    )
    target = tuple(
        slice(max(b, 0), max(b, 0) + s + min(b, 0) + min(a, 0))
        for s, b, a in zip(spatial, before, after)
    )
    source = tuple(slice(max(-b, 0), s - max(-a, 0)) for s, b, a in zip(spatial, before, after))
    result[(slice(None),) + target + (slice(None),)] = xp.moveaxis(
        x[(slice(None), slice(None)) + source], 1, -1
    )
    return result


def im2col_channel_last(
    xp: Any,
    padded: Any,
    kernel: Sequence[int],
    stride: Sequence[int],
    dilate: Sequence[int],
    out_spatial: Sequence[int],
    out: Any = None,
) -> Any:
    """Columns ``(N*prod(out), prod(kernel)*C)`` of a channel-last padded input, in one copy.

    Channel-last makes the copy fast: for stride-1 windows each run of
    ``kernel[-1] * C`` values is contiguous in memory.
    """
    nd = len(kernel)
    strides = padded.strides
    shape = (padded.shape[0],) + tuple(out_spatial) + tuple(kernel) + (padded.shape[-1],)
    view_strides = (
        (strides[0],)
        + tuple(strides[1 + i] * stride[i] for i in range(nd))
        + tuple(strides[1 + i] * dilate[i] for i in range(nd))
        + (strides[-1],)
    )
    view = xp.lib.stride_tricks.as_strided(
        padded, shape=shape, strides=view_strides, writeable=False
    )
    columns = math.prod(kernel) * padded.shape[-1]
    if out is None:
        return xp.ascontiguousarray(view).reshape(-1, columns)
    out.reshape(shape)[...] = view
    return out


def col2im_channel_last(
    xp: Any,
    cols: Any,
    result: Any,
    kernel: Sequence[int],
    stride: Sequence[int],
    dilate: Sequence[int],
    out_spatial: Sequence[int],
) -> None:
    """Add columns ``(N*P, K*C)`` into a channel-last padded ``result`` (loop over kernel offsets)."""
    n, c = result.shape[0], result.shape[-1]
    blocks = cols.reshape((n,) + tuple(out_spatial) + (math.prod(kernel), c))
    for index, offset in enumerate(_offsets(kernel)):
        window = (slice(None),) + tuple(
            slice(k * d, k * d + s * (o - 1) + 1, s)
            for k, s, d, o in zip(offset, stride, dilate, out_spatial)
        )
        result[window] += blocks[..., index, :]


def _weight_channel_last(xp: Any, weight: Any) -> Any:
    """``(F, C, *K)`` -> ``(F, K*C)`` matching the channel-last columns."""
    return xp.moveaxis(weight, 1, -1).reshape(weight.shape[0], -1)


# ---------------------------------------------------------------------------
# Convolution
# ---------------------------------------------------------------------------


class _ConvBase(KernelProp):
    kernel = Param(Shape, doc="Kernel size, e.g. (3, 3).")
    stride = Param(Shape, default=(), doc="Stride; default 1 per axis.")
    dilate = Param(Shape, default=(), doc="Dilation; default 1 per axis.")
    pad = Param(Shape, default=(), doc="Zero padding per side; default 0.")
    num_filter = Param(int, low=1, doc="Number of output channels.")
    num_group = Param(int, default=1, low=1, doc="Number of groups (channels split evenly).")
    workspace = Param(int, default=1024, doc="Ignored (MXNet: temp space limit in MB).")
    cudnn_tune = Param(str, default=None, optional=True, doc="Ignored (cuDNN tuning).")
    cudnn_off = Param(bool, default=False, doc="Ignored (cuDNN switch).")
    layout = Param(
        str, default=None, optional=True, doc="Only None / NCW / NCHW / NCDHW are supported."
    )

    def _geometry(self) -> tuple[tuple, tuple, tuple, tuple]:
        nd = len(self.kernel)
        if nd not in (1, 2, 3):
            raise self.shape_error(f"kernel {tuple(self.kernel)} must have 1, 2 or 3 dimensions")
        if self.layout not in (None, "NCW", "NCHW", "NCDHW"):
            raise NotSupportedError(
                f"{self.op_name}: layout {self.layout!r} is not supported; use NCHW"
            )
        return (
            tuple(self.kernel),
            _fill(self.stride, nd, 1),
            _fill(self.dilate, nd, 1),
            _fill(self.pad, nd, 0),
        )

    def list_arguments(self):
        """``data, weight[, bias]``."""
        return ["data", "weight"] if self.no_bias else ["data", "weight", "bias"]

    def declare_backward_dependency(self, out_grad, in_data, out_data):
        """Head gradient, data and weight (not the output)."""
        return [out_grad[0], in_data[0], in_data[1]]

    def _check_given(self, in_shape: list, expected: list, names: list) -> None:
        for name, given, want in zip(names, in_shape, expected):
            if given is not None and tuple(given) != tuple(want):
                raise self.shape_error(
                    f"{name} has shape {fmt(given)} but data {fmt(in_shape[0])} with num_filter="
                    f"{self.num_filter}, num_group={self.num_group}, kernel={tuple(self.kernel)} "
                    f"needs {fmt(want)}"
                )


@register("Convolution")
class ConvolutionProp(_ConvBase):
    """N-d convolution (cross-correlation) with groups, stride, padding and dilation."""

    no_bias = Param(bool, default=False, doc="Whether to leave out the bias.")

    def infer_shape(self, in_shape):
        """Fill weight ``(F, C/g, *kernel)`` and bias ``(F,)`` from data; compute the output."""
        data = in_shape[0]
        if data is None:
            return None
        data = tuple(data)
        kernel, stride, dilate, pad = self._geometry()
        nd = len(kernel)
        if len(data) != nd + 2:
            raise self.shape_error(
                f"data {fmt(data)} must have {nd + 2} dimensions for kernel {kernel}"
            )
        channels = data[1]
        if channels % self.num_group or self.num_filter % self.num_group:
            raise self.shape_error(
                f"channels {channels} and num_filter {self.num_filter} must be divisible by num_group "
                f"{self.num_group}"
            )
        out_spatial = []
        for i in range(nd):
            extent = dilate[i] * (kernel[i] - 1) + 1
            size = data[2 + i] + 2 * pad[i]
            if size < extent:
                raise self.shape_error(
                    f"kernel {kernel} (dilated extent {extent}) is larger than padded data axis "
                    f"{2 + i} of {fmt(data)} (size {size}); use a smaller kernel or more padding"
                )
            out_spatial.append((size - extent) // stride[i] + 1)
        weight = (self.num_filter, channels // self.num_group) + kernel
        shapes = [data, weight] + ([] if self.no_bias else [(self.num_filter,)])
        self._check_given(in_shape, shapes, self.list_arguments())
        return shapes, [(data[0], self.num_filter) + tuple(out_spatial)], []

    def forward_resource(self, in_shape):
        """TEMP_SPACE holds the im2col columns."""
        return [ResourceRequest.TEMP_SPACE]

    def backward_resource(self, in_shape):
        """TEMP_SPACE holds the im2col columns."""
        return [ResourceRequest.TEMP_SPACE]

    def forward(self, ctx, in_data, req, out_data, aux):
        """Channel-last im2col + one GEMM per group; bias added before the move back to NCHW."""
        xp = ctx.xp
        x, weight = in_data[0], in_data[1]
        kernel, stride, dilate, pad = self._geometry()
        out = out_data[0]
        n, f = out.shape[:2]
        out_spatial = tuple(out.shape[2:])
        groups = self.num_group
        c_group, f_group = x.shape[1] // groups, f // groups
        padded = channel_last_padded(xp, x, pad, pad)
        rows = n * math.prod(out_spatial)
        result = xp.empty((rows, f), dtype=out.dtype)
        cols = _scratch(ctx, xp, (rows, math.prod(kernel) * c_group), x.dtype)
        for g in range(groups):
            im2col_channel_last(
                xp,
                padded[..., g * c_group : (g + 1) * c_group],
                kernel,
                stride,
                dilate,
                out_spatial,
                out=cols,
            )
            w = _weight_channel_last(xp, weight[g * f_group : (g + 1) * f_group])
            if groups == 1:
                xp.matmul(cols, w.T, out=result)
            else:
                result[:, g * f_group : (g + 1) * f_group] = cols @ w.T
        if not self.no_bias:
            result += in_data[2]
        write(out, req[0], xp.moveaxis(result.reshape((n,) + out_spatial + (f,)), -1, 1))

    def backward(self, ctx, out_grad, in_data, out_data, req, in_grad, aux):
        """dW = cols^T @ dy; dx = a stride-1 'full' convolution of dy (or col2im); db = sum(dy)."""
        xp = ctx.xp
        x, weight = in_data[0], in_data[1]
        kernel, stride, dilate, pad = self._geometry()
        g_out = out_grad[0]
        n, f = g_out.shape[:2]
        out_spatial = tuple(g_out.shape[2:])
        groups = self.num_group
        c_group, f_group = x.shape[1] // groups, f // groups
        dy = xp.ascontiguousarray(xp.moveaxis(g_out, 1, -1)).reshape(-1, f)  # (N*P, F)
        if not self.no_bias:
            write(in_grad[2], req[2], dy.sum(axis=0))
        if req[1] != OpReqType.NULL:
            padded = channel_last_padded(xp, x, pad, pad)
            cols = _scratch(ctx, xp, (dy.shape[0], math.prod(kernel) * c_group), x.dtype)
            grad_w = xp.empty(weight.shape, dtype=weight.dtype)
            for g in range(groups):
                im2col_channel_last(
                    xp,
                    padded[..., g * c_group : (g + 1) * c_group],
                    kernel,
                    stride,
                    dilate,
                    out_spatial,
                    out=cols,
                )
                partial = (cols.T @ dy[:, g * f_group : (g + 1) * f_group]).T  # (F/g, K*C/g)
                grad_w[g * f_group : (g + 1) * f_group] = xp.moveaxis(
                    partial.reshape((f_group,) + kernel + (c_group,)), -1, 1
                )
            del padded
            write(in_grad[1], req[1], grad_w)
        if req[0] == OpReqType.NULL:
            return
        spatial = tuple(x.shape[2:])
        full_pad = tuple(d * (k - 1) - p for k, d, p in zip(kernel, dilate, pad))
        grad_x = xp.empty((n * math.prod(spatial), x.shape[1]), dtype=x.dtype)
        if all(s == 1 for s in stride) and all(p >= 0 for p in full_pad):
            # dx = correlate(dy padded by d(k-1)-p, flipped kernel): one more im2col + GEMM
            padded = channel_last_padded(xp, g_out, full_pad, full_pad)
            cols = _scratch(ctx, xp, (grad_x.shape[0], math.prod(kernel) * f_group), x.dtype)
            flip = (slice(None), slice(None)) + (slice(None, None, -1),) * len(kernel)
            for g in range(groups):
                im2col_channel_last(
                    xp,
                    padded[..., g * f_group : (g + 1) * f_group],
                    kernel,
                    (1,) * len(kernel),
                    dilate,
                    spatial,
                    out=cols,
                )
                w = weight[g * f_group : (g + 1) * f_group][flip]  # (F/g, C/g, *K) flipped
                w = xp.moveaxis(w, 0, -1).reshape(c_group, -1)  # (C/g, K*F/g)
                grad_x[:, g * c_group : (g + 1) * c_group] = cols @ w.T
            value = grad_x.reshape((n,) + spatial + (x.shape[1],))
        else:
            padded_spatial = tuple(s + 2 * p for s, p in zip(spatial, pad))
            result = xp.zeros((n,) + padded_spatial + (x.shape[1],), dtype=x.dtype)
            for g in range(groups):
                w = _weight_channel_last(xp, weight[g * f_group : (g + 1) * f_group])
                dcols = dy[:, g * f_group : (g + 1) * f_group] @ w  # (N*P, K*C/g)
                col2im_channel_last(
                    xp,
                    dcols,
                    result[..., g * c_group : (g + 1) * c_group],
                    kernel,
                    stride,
                    dilate,
                    out_spatial,
                )
            value = result[(slice(None),) + tuple(slice(p, p + s) for p, s in zip(pad, spatial))]
        write(in_grad[0], req[0], xp.moveaxis(value, -1, 1))


def _padded_shape(shape: Sequence[int], pad: Sequence[int]) -> tuple:
    return tuple(shape[:2]) + tuple(s + 2 * p for s, p in zip(shape[2:], pad))


# ---------------------------------------------------------------------------
# Deconvolution
# ---------------------------------------------------------------------------


@register("Deconvolution")
class DeconvolutionProp(_ConvBase):
    """Transposed convolution: the gradient of Convolution with respect to its data."""

    adj = Param(Shape, default=(), doc="Extra size added to one side of the output.")
    target_shape = Param(
        Shape, default=(), doc="Output spatial shape; pad and adj are then inferred."
    )
    no_bias = Param(bool, default=True, doc="Whether to leave out the bias (MXNet default: True).")

    def _geometry_full(
        self, spatial: Sequence[int]
    ) -> tuple[tuple, tuple, tuple, tuple, tuple, tuple]:
        kernel, stride, dilate, pad = self._geometry()
        nd = len(kernel)
        adj = _fill(self.adj, nd, 0)
        if self.target_shape and any(self.target_shape):
            pads, adjs = [], []
            for i in range(nd):
                total = (
                    stride[i] * (spatial[i] - 1)
                    + dilate[i] * (kernel[i] - 1)
                    + 1
                    - self.target_shape[i]
                )
                adjs.append(total % 2)
                pads.append((total + 1) // 2)
            pad, adj = tuple(pads), tuple(adjs)
        out = tuple(
            stride[i] * (spatial[i] - 1) + dilate[i] * (kernel[i] - 1) + 1 - 2 * pad[i] + adj[i]
            for i in range(nd)
        )
        return kernel, stride, dilate, pad, adj, out

    def infer_shape(self, in_shape):
        """Fill weight ``(C, F/g, *kernel)`` and bias ``(F,)``; output size as the module doc says."""
        data = in_shape[0]
        if data is None:
            return None
        data = tuple(data)
        kernel = tuple(self.kernel)
        if len(data) != len(kernel) + 2:
            raise self.shape_error(
                f"data {fmt(data)} must have {len(kernel) + 2} dimensions for kernel {kernel}"
            )
        if data[1] % self.num_group or self.num_filter % self.num_group:
            raise self.shape_error(
                f"channels {data[1]} and num_filter {self.num_filter} must be divisible by num_group {self.num_group}"
            )
        *_, out = self._geometry_full(data[2:])
        if any(o <= 0 for o in out):
            raise self.shape_error(f"output spatial shape {out} is not positive; reduce pad")
        weight = (data[1], self.num_filter // self.num_group) + kernel
        shapes = [data, weight] + ([] if self.no_bias else [(self.num_filter,)])
        self._check_given(in_shape, shapes, self.list_arguments())
        return shapes, [(data[0], self.num_filter) + out], []

    def forward(self, ctx, in_data, req, out_data, aux):
        """cols = W^T @ x per group, then col2im into the (padded) output."""
        xp = ctx.xp
        x, weight = in_data[0], in_data[1]
        kernel, stride, dilate, pad, _adj, out_spatial = self._geometry_full(x.shape[2:])
        n, c = x.shape[:2]
        f = self.num_filter
        groups = self.num_group
        c_group, f_group = c // groups, f // groups
        padded_shape = (n, f) + tuple(o + 2 * p for o, p in zip(out_spatial, pad))
        result = xp.zeros(padded_shape, dtype=x.dtype)
        in_spatial = x.shape[2:]
        x3 = x.reshape(n, c, -1)
        for g in range(groups):
            w = weight[g * c_group : (g + 1) * c_group].reshape(c_group, -1)
            cols = xp.matmul(w.T, x3[:, g * c_group : (g + 1) * c_group])
            result[:, g * f_group : (g + 1) * f_group] = col2im(
                xp, cols, (n, f_group) + padded_shape[2:], kernel, stride, dilate, in_spatial
            )
        value = _unpad(result, pad, out_spatial)
        if not self.no_bias:
            value = value + in_data[2].reshape((1, f) + (1,) * len(kernel))
        write(out_data[0], req[0], value)

    def backward(self, ctx, out_grad, in_data, out_data, req, in_grad, aux):
        """dx = W @ im2col(dy); dW = x @ im2col(dy)^T; db = sum(dy)."""
        xp = ctx.xp
        x, weight = in_data[0], in_data[1]
        kernel, stride, dilate, pad, _adj, _out_spatial = self._geometry_full(x.shape[2:])
        n, c = x.shape[:2]
        f = self.num_filter
        groups = self.num_group
        c_group, f_group = c // groups, f // groups
        dy = out_grad[0]
        padded = _pad(xp, dy, pad, pad)
        in_spatial = x.shape[2:]
        x3 = x.reshape(n, c, -1)
        grad_x = xp.empty(x3.shape, dtype=x.dtype)
        grad_w = xp.empty(weight.shape, dtype=weight.dtype)
        for g in range(groups):
            cols = im2col(
                xp, padded[:, g * f_group : (g + 1) * f_group], kernel, stride, dilate, in_spatial
            )
            w = weight[g * c_group : (g + 1) * c_group].reshape(c_group, -1)
            grad_x[:, g * c_group : (g + 1) * c_group] = xp.matmul(w, cols)
            partial = xp.matmul(x3[:, g * c_group : (g + 1) * c_group], cols.transpose(0, 2, 1))
            grad_w[g * c_group : (g + 1) * c_group] = partial.sum(axis=0).reshape(
                weight[g * c_group : (g + 1) * c_group].shape
            )
        write(in_grad[0], req[0], grad_x.reshape(x.shape))
        write(in_grad[1], req[1], grad_w)
        if not self.no_bias:
            write(in_grad[2], req[2], dy.reshape(n, f, -1).sum(axis=(0, 2)))


# ---------------------------------------------------------------------------
# Pooling
# ---------------------------------------------------------------------------


@register("Pooling")
class PoolingProp(KernelProp):
    """Max / average / sum pooling over 1, 2 or 3 spatial axes (global or windowed)."""

    kernel = Param(Shape, default=(), doc="Window size (ignored with global_pool).")
    pool_type = Param(str, default="max", choices=("max", "avg", "sum", "lp"), doc="Pooling type.")
    global_pool = Param(bool, default=False, doc="Pool over the whole spatial extent.")
    cudnn_off = Param(bool, default=False, doc="Ignored (cuDNN switch).")
    pooling_convention = Param(
        str,
        default="valid",
        choices=("valid", "full", "same"),
        doc="Output size rounding: valid floors, full ceils.",
    )
    stride = Param(Shape, default=(), doc="Stride; default 1 per axis.")
    pad = Param(Shape, default=(), doc="Padding per side; default 0.")
    p_value = Param(int, default=None, optional=True, doc="p of lp pooling (not supported).")
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

    def infer_shape(self, in_shape):
        """``(N, C, *out)``."""
        data = in_shape[0]
        if data is None:
            return None
        data = tuple(data)
        if len(data) < 3 or len(data) > 5:
            raise self.shape_error(f"data {fmt(data)} must be 3-D, 4-D or 5-D (N, C, *spatial)")
        *_, out = self._geometry(data[2:])
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
        result[...] = -xp.inf if self.pool_type == "max" else 0
        before = self._before(x.shape[2:], kernel, stride, pad, out)
        for out_index, in_index in self._windows(x.shape[2:], kernel, stride, before, out):
            if self.pool_type == "max":
                xp.maximum(result[out_index], x[in_index], out=result[out_index])
            else:
                result[out_index] += x[in_index]
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
        grad[...] = 0
        before = self._before(spatial, kernel, stride, pad, out)
        windows = self._windows(spatial, kernel, stride, before, out)
        if self.pool_type == "max":
            x, y = in_data[0], out_data[0]
            pending = xp.ones(y.shape, dtype=bool)  # outputs whose maximum is not yet found
            hit = xp.empty(y.shape, dtype=bool)
            for out_index, in_index in windows:
                found = hit[out_index]
                xp.equal(x[in_index], y[out_index], out=found)
                xp.logical_and(found, pending[out_index], out=found)
                xp.logical_xor(pending[out_index], found, out=pending[out_index])
                grad[in_index] += g[out_index] * found
        else:
            if self.pool_type == "avg":
                g = g / self._divisor(xp, spatial, kernel, stride, pad, out, g.dtype)
            for out_index, in_index in windows:
                grad[in_index] += g[out_index]
        if grad is not target:
            write(target, req[0], grad)


# ---------------------------------------------------------------------------
# UpSampling (nearest) and LRN
# ---------------------------------------------------------------------------


@register("UpSampling")
class UpSamplingProp(KernelProp):
    """Nearest-neighbour upsampling of 4-D inputs by an integer ``scale``."""

    key_var_num_args = "num_args"
    scale = Param(int, low=1, doc="Upsampling factor.")
    num_filter = Param(int, default=0, doc="Filters of bilinear upsampling (unused for nearest).")
    sample_type = Param(str, choices=("nearest", "bilinear"), doc="Only 'nearest' is supported.")
    multi_input_mode = Param(
        str, default="concat", choices=("concat", "sum"), doc="How several inputs are combined."
    )
    num_args = Param(int, default=1, low=1, doc="Number of inputs.")
    workspace = Param(int, default=512, doc="Ignored.")

    def list_arguments(self):
        """``arg0 … arg{num_args-1}``."""
        if self.sample_type == "bilinear":
            raise NotSupportedError(
                "UpSampling: sample_type='bilinear' is not supported; use 'nearest'"
            )
        return [f"arg{i}" for i in range(self.num_args)]

    def infer_shape(self, in_shape):
        """Output spatial size = first input's size * scale; the others scale to it."""
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
        """Only the head gradient."""
        return [out_grad[0]]

    def forward(self, ctx, in_data, req, out_data, aux):
        """Repeat rows and columns; concatenate or sum the inputs."""
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
        """Sum the head gradient over each block."""
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

    alpha = Param(float, default=1e-4, doc="Scale of the sum of squares.")
    beta = Param(float, default=0.75, doc="Exponent.")
    knorm = Param(float, default=2.0, doc="Additive constant.")
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
