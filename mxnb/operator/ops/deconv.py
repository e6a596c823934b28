"""Deconvolution (transposed convolution): Convolution's two GEMMs swapped, channel last.

Idea (MXNet: src/operator/nn/deconvolution*): a deconvolution is the data
gradient of a convolution.  Forward: the input moved to channel-last
``(N*I, C)`` times the weight gives columns ``(N*I, K*F)`` per group, which
:func:`col2im` adds into the zero-padded output (a loop over the ``K`` kernel
offsets, each a strided slice-add); the padding is then cropped.  Backward is
a convolution of the head gradient: :func:`im2col` copies a strided *view*
``(N, *in, *kernel, F)`` of its channel-last padded copy once (each run of
``kernel[-1] * F`` values is contiguous), and one GEMM per group gives the
data gradient, one more the weight gradient.

Rules:
    * layouts are MXNet's: data ``(N, C, *spatial)``, weight
      ``(C, num_filter/num_group, *kernel)``; 1, 2 or 3 spatial dims;
    * output size ``s(in-1) + d(k-1) + 1 - 2p + adj``; ``target_shape``
      chooses pad and adj instead;
    * backward reads head gradient, data and weight — never the output.

Example::

    >>> import numpy as np
    >>> from mxnb.operator import eager
    >>> x, w = np.ones((1, 1, 2, 2), np.float32), np.ones((1, 1, 2, 2), np.float32)
    >>> eager.run_forward('Deconvolution', [x, w], {'kernel': (2, 2), 'num_filter': 1})[0][0][0, 0]
    array([[1., 2., 1.],
           [2., 4., 2.],
           [1., 2., 1.]], dtype=float32)
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any


from ..base import ResourceRequest
from ..param import Param, Shape
from ..registry import register
from ._common import fmt, strided_view, write
from ..workspace import Layout, carve, layout_bytes
from .conv import _ConvBase, _fill, _offsets, copy_batched

__all__ = ["DeconvolutionProp", "channel_last_padded", "col2im", "im2col"]


# ---------------------------------------------------------------------------
# channel-last columns
# ---------------------------------------------------------------------------


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
    copy_batched(
        xp,
        result[(slice(None),) + target + (slice(None),)],
        xp.moveaxis(x[(slice(None), slice(None)) + source], 1, -1),
    )
    return result


def im2col(
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
    view = strided_view(xp, padded, shape, view_strides)
    columns = math.prod(kernel) * padded.shape[-1]
    if out is None:
        return xp.ascontiguousarray(view).reshape(-1, columns)
    copy_batched(xp, out.reshape(shape), view)
    return out


def col2im(
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


# ---------------------------------------------------------------------------
# Deconvolution
# ---------------------------------------------------------------------------


@register("Deconvolution")
class DeconvolutionProp(_ConvBase):
    """Transposed convolution: the gradient of Convolution with respect to its data."""

    adj = Param(Shape, default=(), low=0, doc="Extra size added to one side of the output.")
    target_shape = Param(
        Shape, default=(), low=0, doc="Output spatial shape; pad and adj are then inferred."
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

    def forward_resource(self, in_shape):
        """TEMP_SPACE holds the columns."""
        return [ResourceRequest.TEMP_SPACE]

    def backward_resource(self, in_shape):
        """TEMP_SPACE holds the columns."""
        return [ResourceRequest.TEMP_SPACE]

    def temp_space_bytes(self, in_shape, in_type, req=None):
        """The :meth:`_layout`, forward and backward alike."""
        return layout_bytes(self._layout(tuple(in_shape[0]), in_type[0]))

    def _layout(self, data_shape: tuple, dtype: Any) -> Layout:
        """The scratch carved from TEMP_SPACE (and counted in the plan): the columns alone."""
        return [(self._columns_shape(data_shape), dtype)]

    def _columns_shape(self, data_shape: tuple) -> tuple[int, int]:
        """``(N*I, K*F/g)``: the channel-last columns of data ``(N, C, *I)`` (what the run takes
        from TEMP_SPACE, and what the plan counts)."""
        rows = data_shape[0] * math.prod(data_shape[2:])
        return rows, math.prod(self.kernel) * (self.num_filter // self.num_group)

    def _weight_matrix(self, xp: Any, weight: Any) -> Any:
        """``(C/g, F/g, *K)`` -> ``(C/g, K*F/g)`` matching channel-last columns."""
        return xp.moveaxis(weight, 1, -1).reshape(weight.shape[0], -1)

    def forward(self, ctx, in_data, req, out_data, aux):
        """cols = x @ W per group (channel-last), then col2im into the padded output and crop."""
        xp = ctx.xp
        x, weight = in_data[0], in_data[1]
        kernel, stride, dilate, pad, _, out_spatial = self._geometry_full(x.shape[2:])
        n, c = x.shape[:2]
        in_spatial = tuple(x.shape[2:])
        f = self.num_filter
        groups = self.num_group
        c_group, f_group = c // groups, f // groups
        x_cl = xp.ascontiguousarray(xp.moveaxis(x, 1, -1)).reshape(-1, c)  # (N*I, C)
        padded_spatial = tuple(o + 2 * p for o, p in zip(out_spatial, pad))
        result = xp.zeros((n,) + padded_spatial + (f,), dtype=x.dtype)
        ((cols,),) = carve(ctx, self._layout(x.shape, x.dtype))
        for g in range(groups):
            w = self._weight_matrix(xp, weight[g * c_group : (g + 1) * c_group])
            xp.matmul(x_cl[:, g * c_group : (g + 1) * c_group], w, out=cols)
            col2im(
                xp,
                cols,
                result[..., g * f_group : (g + 1) * f_group],
                kernel,
                stride,
                dilate,
                in_spatial,
            )
        value = result[(slice(None),) + tuple(slice(p, p + o) for p, o in zip(pad, out_spatial))]
        if not self.no_bias:
            value += in_data[2]
        write(out_data[0], req[0], xp.moveaxis(value, -1, 1))

    def backward(self, ctx, out_grad, in_data, out_data, req, in_grad, aux):
        """cols = im2col(dy); dx = cols @ W^T; dW = x^T @ cols; db = sum(dy)."""
        xp = ctx.xp
        x, weight = in_data[0], in_data[1]
        kernel, stride, dilate, pad, _, _ = self._geometry_full(x.shape[2:])
        n, c = x.shape[:2]
        in_spatial = tuple(x.shape[2:])
        f = self.num_filter
        groups = self.num_group
        c_group, f_group = c // groups, f // groups
        dy = out_grad[0]
        if not self.no_bias:
            write(in_grad[2], req[2], dy.sum(axis=(0,) + tuple(range(2, dy.ndim))))
        padded = channel_last_padded(xp, dy, pad, pad)
        x_cl = xp.ascontiguousarray(xp.moveaxis(x, 1, -1)).reshape(-1, c)
        grad_x = xp.empty(x_cl.shape, dtype=x.dtype)
        grad_w = xp.empty(weight.shape, dtype=weight.dtype)
        ((cols,),) = carve(ctx, self._layout(x.shape, x.dtype))
        for g in range(groups):
            im2col(
                xp,
                padded[..., g * f_group : (g + 1) * f_group],
                kernel,
                stride,
                dilate,
                in_spatial,
                out=cols,
            )
            w = self._weight_matrix(xp, weight[g * c_group : (g + 1) * c_group])
            grad_x[:, g * c_group : (g + 1) * c_group] = cols @ w.T
            partial = x_cl[:, g * c_group : (g + 1) * c_group].T @ cols  # (C/g, K*F/g)
            grad_w[g * c_group : (g + 1) * c_group] = xp.moveaxis(
                partial.reshape((c_group,) + kernel + (f_group,)), -1, 1
            )
        write(in_grad[0], req[0], xp.moveaxis(grad_x.reshape((n,) + in_spatial + (c,)), -1, 1))
        write(in_grad[1], req[1], grad_w)
