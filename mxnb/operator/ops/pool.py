"""Pooling: loops over kernel offsets, never over pixels.

Idea (MXNet: src/operator/nn/pooling*): a pooling window
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
      and its backward reads only the head gradient.

UpSampling and LRN, which used to live here, are in :mod:`.upsampling`.

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
from .. import split
from ..base import OpReqType, ResourceRequest
from ..param import Param, Shape
from ..partial import merge, partial_shape
from ..registry import register
from ..split import parallel_chunks
from ..workspace import Layout, carve, layout_bytes
from ._common import KernelProp, fmt, write
from .conv import _fill, _offsets

__all__ = ["PoolingProp"]


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

    def _max_stages(self, xp: Any, x: Any, axes: list, scratch: Sequence[Any]) -> list[Any]:
        """``[x, max along the last axis, along the last two, ...]``: all but axis 0 reduced.

        Last axis first, so that backward (:meth:`_route_max`), which undoes the
        stages from axis 0 on, picks the first row holding the max before the
        first cell of that row: MXNet's row-major first maximum.  ``scratch``:
        the stages after ``x``, of :meth:`_stage_shapes`.
        """
        stages = [x]
        for axis, stage in zip(range(len(axes) - 1, 0, -1), scratch):
            stages.append(self._max_stage(xp, stages[-1], axis, axes[axis], stage))
        return stages

    @staticmethod
    def _stage_shapes(shape: Sequence[int], out: Sequence[int]) -> list[tuple[int, ...]]:
        """``[x's shape, then each stage's]`` of :meth:`_max_stages` for data of ``shape``."""
        shapes = [tuple(shape)]
        for axis in range(len(out) - 1, 0, -1):
            reduced = list(shapes[-1])
            reduced[2 + axis] = out[axis]
            shapes.append(tuple(reduced))
        return shapes

    def _phases(
        self, shape: Sequence[int], dtype: Any, geometry: tuple, req: Any = None
    ) -> list[Layout]:
        """Max pooling's scratch for data of ``shape`` (``req`` None: forward), carved and planned.

        ``geometry``: :meth:`_geometry` of ``shape``.  Forward: the stages
        after ``x`` (:meth:`_stage_shapes`).  Backward: those, the gradient of
        each stage but the first (``x``'s is the input gradient), and per axis
        for :meth:`_route_max` the window masks ``found`` and ``pending`` and,
        unless the windows tile the axis, ``head * found``, each the shape of
        the values routed back (:meth:`_backward_scratch` splits them again).
        All in one phase: the batch chunks run at once, each at its own axis,
        so no two axes' masks may share memory.
        """
        if req is not None and req[0] == OpReqType.NULL:
            return []  # no gradient wanted: backward does nothing
        kernel, stride, pad, out = geometry
        full = self._stage_shapes(shape, out)
        stages = [(stage, dtype) for stage in full[1:]]
        if req is None:
            return [stages]
        nd = len(out)
        layout = stages + [(full[nd - 1 - axis], dtype) for axis in range(nd - 1)]
        tiled = self._tiled(shape[2:], kernel, stride, pad, out)
        for axis in range(nd):
            value = tuple(shape[:2]) + tuple(out) if axis == 0 else full[nd - axis]
            product = (0,) if tiled[axis] else value
            layout += [(value, bool), (value, bool), (product, dtype)]
        return [layout]

    @staticmethod
    def _backward_scratch(scratch: list, nd: int) -> tuple[list, list, list[list]]:
        """Backward's carved arrays in :meth:`_phases`' order: the stages after ``x``, their
        gradients, and per axis its masks (``found``, ``pending``, ``head * found``)."""
        stages, belows, masks = (
            scratch[: nd - 1],
            scratch[nd - 1 : 2 * nd - 2],
            scratch[2 * nd - 2 :],
        )
        return stages, belows, [masks[3 * axis : 3 * axis + 3] for axis in range(nd)]

    def _tiled(self, spatial, kernel, stride, pad, out) -> list[bool]:
        """Per axis: the windows' input slices tile it (every input cell in exactly one window)."""
        before = self._before(spatial, kernel, stride, pad, out)
        return [
            s_ == k and b == 0 and size == o * k
            for k, s_, b, size, o in zip(kernel, stride, before, spatial, out)
        ]

    def _uses_scratch(self) -> bool:
        """Windowed max pooling computes in TEMP_SPACE (:meth:`_phases`); the others need none."""
        return self.pool_type == "max" and not self.global_pool

    def forward_resource(self, in_shape):
        """TEMP_SPACE for windowed max pooling's stages."""
        return [ResourceRequest.TEMP_SPACE] if self._uses_scratch() else []

    def backward_resource(self, in_shape):
        """TEMP_SPACE for windowed max pooling's stages, their gradients and the window masks."""
        return [ResourceRequest.TEMP_SPACE] if self._uses_scratch() else []

    def temp_space_bytes(self, in_shape, in_type, req=None):
        """The pass's :meth:`_phases` (0 unless windowed max pooling)."""
        if not self._uses_scratch():
            return 0
        shape = tuple(in_shape[0])
        return layout_bytes(*self._phases(shape, in_type[0], self._geometry(shape[2:]), req))

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
            geometry = (kernel, stride, pad, out)
            ((*scratch,),) = carve(ctx, *self._phases(x.shape, x.dtype, geometry))

            def chunk(start: int, stop: int) -> None:
                part = [stage[start:stop] for stage in scratch]
                stages = self._max_stages(xp, x[start:stop], axes, part)
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
        if req[0] == OpReqType.NULL:
            return
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
            tiled = self._tiled(spatial, kernel, stride, pad, out)
            x, y, nd = in_data[0], out_data[0], len(axes)
            geometry = (kernel, stride, pad, out)
            ((*scratch,),) = carve(ctx, *self._phases(x.shape, x.dtype, geometry, req))
            stage_scratch, below_scratch, masks = self._backward_scratch(scratch, nd)

            def chunk(start: int, stop: int) -> None:
                cut = slice(start, stop)
                stages = self._max_stages(xp, x[cut], axes, [a[cut] for a in stage_scratch])
                head = g[cut]
                above = y[cut]
                for axis in range(nd):  # stages[-1] was reduced along axis 0 into y
                    source = stages[nd - 1 - axis]
                    below = grad[cut] if axis == nd - 1 else below_scratch[axis][cut]
                    own = [a[cut] for a in masks[axis]]  # this chunk's rows of the masks
                    self._route_max(
                        xp, source, above, head, axis, axes[axis], below, tiled[axis], own
                    )
                    head, above = below, source

            parallel_chunks(xp, grad.shape[0], grad.size, chunk)
            if grad is not target:
                write(target, req[0], grad)
            return
        divisor = None
        if self.pool_type == "avg":
            divisor = self._divisor(xp, spatial, kernel, stride, pad, out, g.dtype)
        self._scatter_windows(xp, g, divisor, grad, spatial, kernel, stride, before, out)
        if grad is not target:
            write(target, req[0], grad)

    def _scatter_windows(self, xp, g, divisor, grad, spatial, kernel, stride, before, out) -> None:
        """``grad`` = each window's head gradient (avg: over its ``divisor``) summed over its cells.

        A block of samples at a time, so ``g / divisor`` is a block's temporary, not g's size.
        """
        grad[...] = 0
        windows = self._windows(spatial, kernel, stride, before, out)
        rows = max(1, split.BLOCK_ELEMENTS // max(1, math.prod(g.shape[1:])))

        def chunk(start: int, stop: int) -> None:
            for first in range(start, stop, rows):
                part = slice(first, min(first + rows, stop))
                grad_part, g_part = grad[part], g[part]
                if divisor is not None:
                    g_part = g_part / divisor
                for out_index, in_index in windows:
                    grad_part[in_index] += g_part[out_index]

        parallel_chunks(xp, grad.shape[0], grad.size, chunk)

    @staticmethod
    def _route_max(
        xp: Any, source, value, head, axis: int, pairs: list, below, tiled: bool, scratch: list
    ) -> None:
        """``below`` = ``head`` sent back along spatial ``axis`` to the first max of each window.

        The backward of one :meth:`_max_stage`: offset by offset, a window's
        head gradient goes to the first offset whose ``source`` equals the
        window's max ``value`` and that no earlier offset took.  Chained from
        axis 0 to the last, this is MXNet's rule, the first maximum in
        row-major order: the first row holding the max, then the first cell
        of that row.  ``tiled``: each input cell is in exactly one window.
        ``scratch``: the masks ``found`` and ``pending`` (bool) and ``head *
        found`` (unused when tiled), each shaped as ``value``.
        """
        lead = (slice(None),) * (2 + axis)
        found_all, pending_all, product_all = scratch
        if not tiled:
            below[...] = 0
        pending = None  # outputs whose first max is not found yet (None: all)
        last = len(pairs) - 1
        for index, (out_slice, in_slice) in enumerate(pairs):
            at_out, at_in = lead + (out_slice,), lead + (in_slice,)
            found = xp.equal(source[at_in], value[at_out], out=found_all[at_out])
            if pending is not None:
                xp.logical_and(found, pending[at_out], out=found)
            if index < last:
                if (
                    pending is None
                    and out_slice.start == 0
                    and out_slice.stop == value.shape[2 + axis]
                ):
                    pending = xp.logical_not(found, out=pending_all)
                else:
                    if pending is None:
                        pending = pending_all
                        pending[...] = True
                    rows = pending[at_out]
                    xp.logical_xor(rows, found, out=rows)
            part = below[at_in]
            if tiled:
                xp.multiply(head[at_out], found, out=part)
            else:
                product = xp.multiply(head[at_out], found, out=product_all[at_out])
                xp.add(part, product, out=part)
