"""Slicing, tiling and padding: slice, slice_axis, tile, repeat, Pad.

Idea (MXNet: src/operator/pad*, tensor/matrix_op*): like the joins of
:mod:`.join`, these ops move data without arithmetic; their gradients move
the head gradient back (scatter a slice into zeros, sum what was tiled or
repeated, crop what was padded) and read nothing else.

Rules:
    * slice takes ``begin`` / ``end`` / ``step`` tuples whose entries may be None;
    * Pad pads 4-D / 5-D inputs; ``pad_width`` has two entries per axis and the
      first two axes must not be padded (MXNet's rule).

Example::

    >>> import numpy as np
    >>> from mxnb.operator import eager
    >>> x = np.arange(6.0).reshape(2, 3)
    >>> eager.run_forward('slice', [x], {'begin': (0, 1), 'end': (2, 3)})[0][0].tolist()
    [[1.0, 2.0], [4.0, 5.0]]
"""

from __future__ import annotations

import math
from typing import Any

from ...base import ParamError
from ..param import ANY, AXIS, UNUSED, Param, Shape
from ..partial import partial_shape
from ..registry import register, register_alias
from ._common import fmt, normalize_axis, write

from .join import MoveProp

__all__ = ["PadProp", "RepeatProp", "SliceAxisProp", "SliceProp", "TileProp"]


def _slice_index(op: Any, shape: tuple, begin: tuple, end: tuple, step: tuple) -> tuple:
    index = []
    for i, size in enumerate(shape):
        if i >= len(begin):
            index.append(slice(None))
            continue
        s = step[i] if i < len(step) and step[i] is not None else 1
        if s == 0:
            raise op.shape_error(f"step must not be 0 (axis {i})")
        b = begin[i]
        e = end[i] if i < len(end) else None
        index.append(slice(b, e, s))
    return tuple(index)


@register("slice")
class SliceProp(MoveProp):
    """``data[begin:end:step]`` per axis (entries may be None)."""

    begin = Param(
        Shape,
        unbounded="any index; negative counts from the end",
        doc="Start per axis (None: from the start).",
    )
    end = Param(
        Shape,
        unbounded="any index; negative counts from the end",
        doc="Stop per axis (None: to the end).",
    )
    step = Param(Shape, unbounded="any value but 0", default=(), doc="Step per axis (default 1).")

    def _index(self, shape: tuple) -> tuple:
        if len(self.begin) != len(self.end) or len(self.begin) > len(shape):
            raise self.shape_error(
                f"begin {tuple(self.begin)} and end {tuple(self.end)} must have the same length, at most "
                f"{len(shape)} for data {fmt(shape)}"
            )
        return _slice_index(self, shape, tuple(self.begin), tuple(self.end), tuple(self.step))

    @partial_shape
    def infer_shape(self, in_shape, out_shape=None):
        """Shape of the slice; an axis of unknown size (0) stays unknown (MXNet: SliceShape)."""
        data = in_shape[0]
        if data is None:
            return [None], [None], []
        data = tuple(data)
        unknown = [size == 0 for size in data]
        sized = tuple(1 if gap else size for gap, size in zip(unknown, data))
        out = tuple(
            0 if gap else len(range(*ix.indices(size)))
            for ix, size, gap in zip(self._index(sized), data, unknown)
        )
        if any(o == 0 for o, gap in zip(out, unknown) if not gap):
            raise self.shape_error(f"slice of data {fmt(data)} is empty: {out}")
        return [data], [out], []

    def forward(self, ctx, in_data, req, out_data, aux):
        """Basic indexing."""
        write(out_data[0], req[0], in_data[0][self._index(in_data[0].shape)])

    def backward(self, ctx, out_grad, in_data, out_data, req, in_grad, aux):
        """Zeros with the head gradient placed in the slice."""
        shape = in_grad[0].shape
        value = ctx.xp.zeros(shape, dtype=out_grad[0].dtype)
        value[self._index(shape)] = out_grad[0]
        write(in_grad[0], req[0], value)


register_alias("crop", "slice")


@register("slice_axis")
class SliceAxisProp(SliceProp):
    """``data[..., begin:end, ...]`` along one ``axis``."""

    begin = Param(
        int,
        unbounded="any index; negative counts from the end",
        doc="Start (negative counts from the end).",
    )
    end = Param(
        int,
        unbounded="any index; negative counts from the end",
        default=None,
        optional=True,
        doc="Stop (None: to the end).",
    )
    step = Param(Shape, unbounded=UNUSED, default=(), doc="Unused.")
    axis = Param(int, unbounded=AXIS, doc="The axis to slice.")

    def _index(self, shape: tuple) -> tuple:
        axis = normalize_axis(self.axis, len(shape), self.op_name)
        index = [slice(None)] * len(shape)
        index[axis] = slice(self.begin, self.end)
        return tuple(index)


@register("tile")
class TileProp(MoveProp):
    """Repeat the whole array ``reps`` times per axis."""

    reps = Param(Shape, low=0, doc="Repetitions per axis (aligned on the right).")

    def init(self, kwargs: dict) -> None:
        """As MXNet: a repetition of 0 (an empty result) only under ``np_shape``."""
        super().init(kwargs)
        from ...util import is_np_shape

        if 0 in tuple(self.reps) and not is_np_shape():
            raise ParamError(
                f"tile parameter 'reps': {tuple(self.reps)} has a 0, which makes an empty "
                "array; give repetitions >= 1 (or use mx.np_shape() for empty arrays)"
            )

    def _reps(self, ndim: int) -> tuple:
        reps = tuple(self.reps)
        return (1,) * (ndim - len(reps)) + reps

    @partial_shape
    def infer_shape(self, in_shape, out_shape=None):
        """Each axis multiplied by its repetitions (an unknown axis stays unknown)."""
        data = in_shape[0]
        if data is None:
            return None
        data = tuple(data)
        ndim = max(len(data), len(self.reps))
        padded = (1,) * (ndim - len(data)) + data
        return [data], [tuple(a * b for a, b in zip(padded, self._reps(ndim)))], []

    def forward(self, ctx, in_data, req, out_data, aux):
        """xp.tile."""
        write(out_data[0], req[0], ctx.xp.tile(in_data[0], tuple(self.reps)))

    def backward(self, ctx, out_grad, in_data, out_data, req, in_grad, aux):
        """Sum the tiles."""
        g = out_grad[0]
        shape = in_grad[0].shape
        padded = (1,) * (g.ndim - len(shape)) + tuple(shape)
        split = []
        for r, s in zip(self._reps(g.ndim), padded):
            split += [r, s]
        value = g.reshape(split).sum(axis=tuple(range(0, 2 * g.ndim, 2)))
        write(in_grad[0], req[0], value.reshape(shape))


@register("repeat")
class RepeatProp(MoveProp):
    """Repeat each element ``repeats`` times along ``axis`` (None: of the flattened array)."""

    repeats = Param(int, low=0, doc="Repetitions of each element.")
    axis = Param(
        int, unbounded=AXIS, default=None, optional=True, doc="The axis; None flattens first."
    )

    @partial_shape
    def infer_shape(self, in_shape, out_shape=None):
        """The axis grows ``repeats`` times (an unknown axis stays unknown)."""
        data = in_shape[0]
        if data is None:
            return None
        data = tuple(data)
        if self.axis is None:
            return [data], [(math.prod(data) * self.repeats,)], []
        axis = normalize_axis(self.axis, len(data), self.op_name)
        return [data], [data[:axis] + (data[axis] * self.repeats,) + data[axis + 1 :]], []

    def forward(self, ctx, in_data, req, out_data, aux):
        """xp.repeat."""
        write(out_data[0], req[0], ctx.xp.repeat(in_data[0], self.repeats, axis=self.axis))

    def backward(self, ctx, out_grad, in_data, out_data, req, in_grad, aux):
        """Sum each group of repeats."""
        shape = in_grad[0].shape
        g = out_grad[0]
        if self.axis is None:
            value = g.reshape(-1, self.repeats).sum(axis=1)
        else:
            axis = normalize_axis(self.axis, len(shape), self.op_name)
            value = g.reshape(shape[:axis] + (shape[axis], self.repeats) + shape[axis + 1 :]).sum(
                axis=axis + 1
            )
        write(in_grad[0], req[0], value.reshape(shape))


@register("Pad")
class PadProp(MoveProp):
    """Pad a 4-D or 5-D array with a constant, the edge values, or a reflection."""

    mode = Param(str, choices=("constant", "edge", "reflect"), doc="Padding type.")
    pad_width = Param(Shape, low=0, doc="Before/after widths per axis (first two axes must be 0).")
    constant_value = Param(float, unbounded=ANY, default=0.0, doc="Value of constant padding.")

    def _widths(self, ndim: int) -> list[tuple[int, int]]:
        widths = tuple(self.pad_width)
        if len(widths) != 2 * ndim or any(widths[:4]):
            raise self.shape_error(
                f"pad_width {widths} needs 2 entries per axis ({2 * ndim}) and zeros for the first two axes"
            )
        return [(widths[2 * i], widths[2 * i + 1]) for i in range(ndim)]

    def infer_shape(self, in_shape):
        """Each axis grows by its two widths."""
        data = in_shape[0]
        if data is None:
            return None
        data = tuple(data)
        if len(data) not in (4, 5):
            raise self.shape_error(f"data {fmt(data)} must be 4-D or 5-D")
        return [data], [tuple(s + a + b for s, (a, b) in zip(data, self._widths(len(data))))], []

    def forward(self, ctx, in_data, req, out_data, aux):
        """xp.pad."""
        x = in_data[0]
        widths = self._widths(x.ndim)
        if self.mode == "constant":
            value = ctx.xp.pad(x, widths, mode="constant", constant_values=self.constant_value)
        else:
            value = ctx.xp.pad(x, widths, mode=self.mode)
        write(out_data[0], req[0], value)

    def backward(self, ctx, out_grad, in_data, out_data, req, in_grad, aux):
        """Crop (constant); fold the border gradients back onto the cells they copied (edge, reflect)."""
        xp = ctx.xp
        g = out_grad[0]
        shape = in_grad[0].shape
        widths = self._widths(len(shape))
        grad = g
        for axis, (before, after) in enumerate(widths):
            if not before and not after:
                continue
            size = shape[axis]
            moved = xp.moveaxis(grad, axis, 0)
            core = moved[before : before + size].copy()
            if self.mode != "constant":
                for k in range(before):  # padded cell k copies source index:
                    src = 0 if self.mode == "edge" else before - k
                    core[src] += moved[k]
                for k in range(after):
                    src = size - 1 if self.mode == "edge" else size - 2 - k
                    core[src] += moved[before + size + k]
            grad = xp.moveaxis(core, 0, axis)
        write(in_grad[0], req[0], grad)


register_alias("pad", "Pad")
