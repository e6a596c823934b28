"""Convolution: MXNet's im2col with the batch innermost, and one GEMM per group.

Idea (MXNet: src/operator/nn/convolution*): a convolution is one matrix
product once the input is laid out as columns.  MXNet lays out ``(C*K, P)``
per image and calls one GEMM per image; here the images sit side by side with
the batch innermost, ``(C*K, P*N)`` (:func:`unfold`): the padded input is
moved once to ``(C, *padded, N)``, a strided *view* of it holds every window,
and one copy, in runs of ``out_w * N`` contiguous values, gives the columns.
Forward is then ONE ``np.dot`` per group with the weight in its own
``(F, C*K)`` layout; backward one ``np.dot`` for the weight gradient and one
to columns that :func:`fold` (col2im) adds back, one spatial axis at a time.
``np.dot`` releases the GIL at any size (``np.matmul`` keeps it for small
outputs), and few, large numpy calls are what lets the threads of two devices
run at once (docs/scaling.md).  Deconvolution lives in :mod:`.deconv`.

Rules:
    * layouts are MXNet's: data ``(N, C, *spatial)``, weight
      ``(num_filter, C/num_group, *kernel)``; 1, 2 or 3 spatial dims;
    * output size ``(in + 2p - d(k-1) - 1) // s + 1``;
    * backward reads head gradient, data and weight — never the output;
    * the columns live in the TEMP_SPACE resource (one block reused across
      calls, as MXNet's workspace) when the caller provides it.

Example::

    >>> import numpy as np
    >>> from mxnb.operator import eager
    >>> x, w = np.ones((1, 1, 4, 4), np.float32), np.ones((2, 1, 3, 3), np.float32)
    >>> out = eager.run_forward('Convolution', [x, w], {'kernel': (3, 3), 'num_filter': 2, 'no_bias': True})
    >>> out[0][0][0, :, 0, 0]
    array([9., 9.], dtype=float32)
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from ...base import NotSupportedError
from .. import split
from ..base import OpReqType, ResourceRequest
from ..param import Param, Shape
from ..partial import is_known, merge, partial_shape
from ..registry import register
from ..split import parallel_chunks
from ..workspace import Layout, carve, layout_bytes
from ._common import KernelProp, fmt, strided_view, write

__all__ = ["ConvolutionProp", "copy_batched", "fold", "fold_shapes", "padded_shape", "unfold"]


# ---------------------------------------------------------------------------
# columns
# ---------------------------------------------------------------------------


def _offsets(kernel: Sequence[int]) -> list[tuple]:
    offsets: list[tuple] = [()]
    for k in kernel:
        offsets = [prefix + (i,) for prefix in offsets for i in range(k)]
    return offsets


def _fill(param: tuple, nd: int, value: int) -> tuple:
    return tuple(param) if param else (value,) * nd


def copy_batched(xp: Any, dst: Any, src: Any, req: OpReqType = OpReqType.WRITE_TO) -> None:
    """``dst (=|+=) src`` for arrays with a leading batch axis, in batch chunks on the op thread pool.

    The layout moves of a convolution (NCHW <-> channel-last, im2col) are
    plain copies; numpy runs them single-threaded, so they are split over the
    batch like MXNet's OpenMP loops.
    """
    if req == OpReqType.NULL:
        return
    if dst.size < split.PARALLEL_MIN_ELEMENTS:  # no chunking: saves microseconds per call
        write(dst, req, src)
        return

    def chunk(start: int, stop: int) -> None:
        write(dst[start:stop], req, src[start:stop])

    parallel_chunks(xp, dst.shape[0], dst.size, chunk)


# ---------------------------------------------------------------------------
# columns with the batch innermost: (C*K, P*N), for Convolution
# ---------------------------------------------------------------------------


def _to_back(a: Any) -> Any:
    """A view with the first axis moved last (``transpose``: cheaper than ``moveaxis``)."""
    return a.transpose(tuple(range(1, a.ndim)) + (0,))


def _to_front(a: Any) -> Any:
    """A view with the last axis moved first."""
    return a.transpose((a.ndim - 1,) + tuple(range(a.ndim - 1)))


def padded_shape(data_shape: Sequence[int], pad: Sequence[int]) -> tuple[int, ...]:
    """``(C, *(S + 2 pad), N)``: data ``(N, C, *S)`` zero-padded with the batch last."""
    spatial = tuple(s + 2 * p for s, p in zip(data_shape[2:], pad))
    return (data_shape[1],) + spatial + (data_shape[0],)


def _batch_last(xp: Any, x: Any, pad: Sequence[int], out: Any) -> None:
    """``out`` = ``x (N, C, *S)`` zero-padded as ``(C, *(S + 2 pad), N)``: one transposing copy."""
    if not any(pad):
        copy_batched(xp, out, _to_back(x))
        return
    spatial = x.shape[2:]
    for axis, (p, s) in enumerate(zip(pad, spatial)):  # the padding only: the inside is copied
        lead = (slice(None),) * (1 + axis)
        out[lead + (slice(0, p),)] = 0
        out[lead + (slice(p + s, None),)] = 0
    inner = (slice(None),) + tuple(slice(p, p + s) for p, s in zip(pad, spatial))
    copy_batched(xp, out[inner], _to_back(x))


def unfold(xp: Any, cols: Any, padded: Any, x: Any, kernel, stride, dilate, pad) -> Any:
    """Fill ``cols (C*K, P*N)`` with the windows of ``x (N, C, *S)``; return ``cols``.

    ``padded``: scratch of :func:`padded_shape`, where ``x`` is laid out first.

    MXNet's im2col (one ``(C*K, P)`` block per image), with the images side by
    side and the batch innermost: row ``c*K + k`` holds channel ``c`` at kernel
    offset ``k`` (the weight's ``(F, C, *K)`` order), column ``p*N + n``
    output position ``p`` of image ``n``.  A strided *view* of the padded
    input holds every window; it is copied once, in runs of ``N * out_w``
    contiguous values (long even for small feature maps), and the whole
    convolution is then ONE GEMM, ``W (F, C*K) @ cols``.
    """
    _batch_last(xp, x, pad, padded)
    nd = len(kernel)
    strides = padded.strides
    out_spatial = _out_spatial(x.shape[2:], kernel, stride, dilate, pad)
    view = strided_view(
        xp,
        padded,
        (padded.shape[0],) + tuple(kernel) + out_spatial + (padded.shape[-1],),
        (strides[0],)
        + tuple(strides[1 + i] * dilate[i] for i in range(nd))
        + tuple(strides[1 + i] * stride[i] for i in range(nd))
        + (strides[-1],),
    )
    copy_batched(xp, cols.reshape(view.shape), view)
    return cols


def _out_spatial(spatial: Sequence[int], kernel, stride, dilate, pad) -> tuple[int, ...]:
    """Output size per spatial axis: ``(in + 2p - d(k-1) - 1) // s + 1``."""
    return tuple(
        (s + 2 * p - d * (k - 1) - 1) // st + 1
        for s, p, d, k, st in zip(spatial, pad, dilate, kernel, stride)
    )


def fold_shapes(target_shape: Sequence[int], kernel, stride, dilate, pad) -> list[tuple[int, ...]]:
    """The sums :func:`fold` makes, last spatial axis first: its scratch (what the plan counts)."""
    n, c = target_shape[:2]
    spatial = tuple(target_shape[2:])
    current = (c,) + tuple(kernel) + _out_spatial(spatial, kernel, stride, dilate, pad) + (n,)
    shapes = []
    for axis in reversed(range(len(kernel))):
        shape = list(current)
        del shape[1 + axis]  # the kernel axis summed now
        shape[1 + 2 * axis] = spatial[axis] + 2 * pad[axis]  # its output axis, now padded input
        current = tuple(shape)
        shapes.append(current)
    return shapes


def fold(
    xp: Any, cols: Any, target: Any, req: OpReqType, kernel, stride, dilate, pad, sums: list
) -> None:
    """``target (N, C, *S) (=|+=)`` the columns ``(C*K, P*N)`` summed over their windows (col2im).

    One spatial axis at a time: its ``k`` kernel offsets are added as strided
    slices into an array whose output axis has become the padded input axis
    (5 + 5 adds for a 5x5 kernel, not 25, each over long contiguous runs as
    the batch is innermost); the padding is then cropped off and the batch
    moved back to the front by the write into ``target``.  ``sums``: scratch
    arrays of :func:`fold_shapes`.
    """
    nd = len(kernel)
    n, c = target.shape[:2]
    spatial = target.shape[2:]
    out_spatial = _out_spatial(spatial, kernel, stride, dilate, pad)
    current = cols.reshape((c,) + tuple(kernel) + out_spatial + (n,))
    for axis, summed in zip(reversed(range(nd)), sums):
        # current: (C, k_0..k_axis, out_0..out_axis, padded_{axis+1}.., N)
        lead = 1 + axis  # the kernel axis summed now
        place = 1 + 2 * axis  # where its spatial axis sits once the kernel axis is gone
        summed[...] = 0
        step, size = stride[axis], out_spatial[axis]
        for offset in range(kernel[axis]):
            start = offset * dilate[axis]
            part = summed[
                (slice(None),) * place + (slice(start, start + step * (size - 1) + 1, step),)
            ]
            xp.add(part, current[(slice(None),) * lead + (offset,)], out=part)
        current = summed
    value = current[(slice(None),) + tuple(slice(p, p + s) for p, s in zip(pad, spatial))]
    if req == OpReqType.WRITE_TO:
        copy_batched(xp, target, _to_front(value))
    else:
        write(target, req, _to_front(value))


# ---------------------------------------------------------------------------
# Convolution
# ---------------------------------------------------------------------------


class _ConvBase(KernelProp):
    kernel = Param(Shape, low=1, doc="Kernel size, e.g. (3, 3).")
    stride = Param(Shape, default=(), low=1, doc="Stride; default 1 per axis.")
    dilate = Param(Shape, default=(), low=1, doc="Dilation; default 1 per axis.")
    pad = Param(Shape, default=(), low=0, doc="Zero padding per side; default 0.")
    num_filter = Param(int, low=1, doc="Number of output channels.")
    num_group = Param(int, default=1, low=1, doc="Number of groups (channels split evenly).")
    workspace = Param(int, default=1024, low=0, doc="Ignored (MXNet: temp space limit in MB).")
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

    @partial_shape
    def infer_shape(self, in_shape, out_shape=None):
        """Fill weight ``(F, C/g, *kernel)`` and bias ``(F,)`` from data; compute the output.

        Partial shapes (MXNet's ConvolutionShape): the batch comes from the
        output, the channels from the weight, and a spatial size from the
        output's where the stride is 1.
        """
        data = in_shape[0]
        if not (is_known(data) and all(s is None or is_known(s) for s in in_shape)):
            return self._infer_partial(in_shape, (out_shape or [None])[0])
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

    def _infer_partial(self, in_shape: list, out: tuple | None) -> Any:
        kernel, stride, dilate, pad = self._geometry()
        nd = len(kernel)
        groups, filters = self.num_group, self.num_filter
        weight = merge((filters, 0) + tuple(kernel), in_shape[1], "weight")
        bias = None if self.no_bias else merge((filters,), in_shape[2], "bias")
        data = in_shape[0]
        if data is None and out is None:
            return None
        data = merge(data, (0,) * (nd + 2), f"data of a {nd}-d convolution")
        out = merge(out, (0, filters) + (0,) * nd, "output")
        channels = merge(data[1:2], (weight[1] * groups,), "data channels and weight")
        spatial = []
        out_spatial = []
        for i in range(nd):
            extent = dilate[i] * (kernel[i] - 1) + 1
            size, got = data[2 + i], out[2 + i]
            if size:
                got = merge((got,), ((size + 2 * pad[i] - extent) // stride[i] + 1,), "output")[0]
            elif got and stride[i] == 1:
                size = got + extent - 1 - 2 * pad[i]
            spatial.append(size)
            out_spatial.append(got)
        batch = merge(data[:1], out[:1], "batch sizes of data and output")
        data = batch + channels + tuple(spatial)
        if channels[0]:
            weight = (filters, channels[0] // groups) + tuple(kernel)
        shapes = [data, weight] + ([] if self.no_bias else [bias])
        return shapes, [batch + (filters,) + tuple(out_spatial)], []

    def forward_resource(self, in_shape):
        """TEMP_SPACE holds the scratch (:meth:`_phases`)."""
        return [ResourceRequest.TEMP_SPACE]

    def backward_resource(self, in_shape):
        """TEMP_SPACE holds the scratch (:meth:`_phases`)."""
        return [ResourceRequest.TEMP_SPACE]

    def temp_space_bytes(self, in_shape, in_type, req=None):
        """The pass's :meth:`_phases` (a recompute runs the forward's)."""
        inferred = self.infer_shape([tuple(s) for s in in_shape])
        if inferred is None:
            return 0
        data, out = tuple(in_shape[0]), tuple(inferred[1][0])
        return layout_bytes(*self._phases(data, out, in_type[0], req))

    def _phases(self, data: tuple, out: tuple, dtype: Any, req: Any = None) -> list[Layout]:
        """The scratch of one pass (``req`` None: forward), carved from TEMP_SPACE and planned.

        The ``(C*K, P*N)`` columns come first in every phase.  Forward: the
        padded input they are cut from (:func:`padded_shape`), then the
        output as ``(F, P*N)`` over it.  Backward: the padded input (for the
        weight gradient only) and the output gradient as ``(F, P*N)``; then,
        for the data gradient, :func:`fold`'s sums over both, once the columns
        hold the data gradient's.
        """
        kernel, stride, dilate, pad = self._geometry()
        positions = math.prod(out[2:])
        columns = (self._columns_shape(data, positions), dtype)
        padded = (padded_shape(data, pad), dtype)
        result = ((out[1], positions * out[0]), dtype)
        if req is None:
            return [[columns, padded], [columns, result]]
        weight_grad, data_grad = req[1] != OpReqType.NULL, req[0] != OpReqType.NULL
        if not weight_grad and not data_grad:
            columns = ((0, 0), dtype)  # the bias gradient alone needs only the output gradient
        first = [columns, padded if weight_grad else ((0,), dtype), result]
        if not data_grad:
            return [first]
        sums = fold_shapes(data, kernel, stride, dilate, pad)
        return [first, [columns, *[(shape, dtype) for shape in sums]]]

    def forward(self, ctx, in_data, req, out_data, aux):
        """Columns ``(C*K, P*N)`` (:func:`unfold`), ONE GEMM per group with the weight ``(F, C*K)``.

        The bias is added in the same call that moves the batch back to the front.
        """
        xp = ctx.xp
        x, weight = in_data[0], in_data[1]
        kernel, stride, dilate, pad = self._geometry()
        out = out_data[0]
        n, f = out.shape[:2]
        positions = math.prod(out.shape[2:])
        groups = self.num_group
        (cols, padded), (_, result) = carve(ctx, *self._phases(x.shape, out.shape, x.dtype))
        unfold(xp, cols, padded, x, kernel, stride, dilate, pad)
        weights = weight.reshape(f, -1)  # (F, C/G*K): the weight's own layout
        rows, f_group = weights.shape[1], f // groups
        for g in range(groups):
            xp.dot(
                weights[g * f_group : (g + 1) * f_group],
                cols[g * rows : (g + 1) * rows],
                out=result[g * f_group : (g + 1) * f_group],
            )
        moved = _to_front(result.reshape(f, positions, n))  # (N, F, P)
        if req[0] == OpReqType.WRITE_TO and out.flags.c_contiguous:  # no (N, F, P) temporary
            if self.no_bias:
                copy_batched(xp, out.reshape(n, f, positions), moved)
            else:
                xp.add(moved, in_data[2].reshape(f, 1), out=out.reshape(n, f, positions))
            return
        if not self.no_bias:
            result += in_data[2].reshape(f, 1)
        write(out, req[0], moved.reshape(out.shape))

    def backward_inplace_option(self, out_grad, in_data, out_data, in_grad):
        """The data gradient may take the output gradient's memory (the planner pairs them only
        when their sizes agree): :meth:`backward` copies ``dy`` before it writes ``dx``."""
        return [(out_grad[0], in_grad[0])]

    def _columns_shape(self, data_shape: tuple, positions: int) -> tuple[int, int]:
        """``(C*K, P*N)``: the columns of data ``(N, C, ...)`` over ``positions`` output positions."""
        return data_shape[1] * math.prod(self.kernel), positions * data_shape[0]

    def backward(self, ctx, out_grad, in_data, out_data, req, in_grad, aux):
        """dW = dy @ cols^T and dcols = W^T @ dy, one GEMM each per group; dx = fold(dcols).

        ``dy`` is moved to ``(F, P*N)`` once; db is its row sum.
        """
        xp = ctx.xp
        x, weight = in_data[0], in_data[1]
        kernel, stride, dilate, pad = self._geometry()
        g_out = out_grad[0]
        n, f = g_out.shape[:2]
        positions = math.prod(g_out.shape[2:])
        groups = self.num_group
        f_group = f // groups
        phases = self._phases(x.shape, g_out.shape, x.dtype, req)
        (cols, padded, dy), *later = carve(ctx, *phases)
        copy_batched(xp, dy.reshape(f, positions, n), _to_back(g_out.reshape(n, f, positions)))
        if not self.no_bias:
            if req[2] == OpReqType.WRITE_TO and in_grad[2].dtype == dy.dtype:
                xp.sum(dy, axis=1, out=in_grad[2])
            else:
                write(in_grad[2], req[2], dy.sum(axis=1))
        weights = weight.reshape(f, -1)  # (F, C/G*K)
        rows = weights.shape[1]
        if req[1] != OpReqType.NULL:
            unfold(xp, cols, padded, x, kernel, stride, dilate, pad)
            direct = (
                req[1] == OpReqType.WRITE_TO
                and in_grad[1].flags.c_contiguous
                and in_grad[1].dtype == dy.dtype
            )
            grad_w = (
                in_grad[1].reshape(weights.shape)
                if direct
                else xp.empty(weights.shape, dtype=weight.dtype)
            )
            for g in range(groups):
                xp.dot(
                    dy[g * f_group : (g + 1) * f_group],
                    cols[g * rows : (g + 1) * rows].T,
                    out=grad_w[g * f_group : (g + 1) * f_group],
                )
            if not direct:
                write(in_grad[1], req[1], grad_w.reshape(weight.shape))
        if req[0] == OpReqType.NULL:
            return
        dcols = cols  # the columns are not needed any more
        for g in range(groups):
            xp.dot(
                weights[g * f_group : (g + 1) * f_group].T,
                dy[g * f_group : (g + 1) * f_group],
                out=dcols[g * rows : (g + 1) * rows],
            )
        sums = later[0][1:]  # over the padded input and dy, which are done with
        fold(xp, dcols, in_grad[0], req[0], kernel, stride, dilate, pad, sums)
