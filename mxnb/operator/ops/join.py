"""Joining, splitting, slicing and tiling: Concat, stack, SliceChannel, slice, slice_axis, tile, repeat, Pad.

Idea (MXNet: src/operator/{concat,slice_channel,pad}*, tensor/matrix_op*):
these ops move data without arithmetic, so their gradients move the head
gradient back (split what was joined, join what was split, sum what was
repeated) and read nothing but the head gradient.

Rules:
    * Concat / stack are variable-arity (``num_args``); Concat's inputs
      must agree on every axis but ``dim``;
    * SliceChannel (alias ``split``) cuts ``axis`` into ``num_outputs`` equal
      parts, dropping the axis with ``squeeze_axis`` when each part has size 1;
    * slice takes ``begin`` / ``end`` / ``step`` tuples whose entries may be None;
    * Pad pads 4-D / 5-D inputs; ``pad_width`` has two entries per axis and the
      first two axes must not be padded (MXNet's rule).

Example::

    >>> import numpy as np
    >>> from mxnb.operator import eager
    >>> outs, _, _ = eager.run_forward('split', [np.arange(6.0).reshape(2, 3)], {'num_outputs': 2, 'axis': 0})
    >>> [o.tolist() for o in outs]
    [[[0.0, 1.0, 2.0]], [[3.0, 4.0, 5.0]]]
"""

from __future__ import annotations

import math
from typing import Any

from ...base import ParamError
from ..param import ANY, AXIS, UNUSED, Param, Shape
from ..partial import fmt_partial, is_known, merge, merge_all, partial_shape
from ..registry import register, register_alias
from ._common import KernelProp, fmt, normalize_axis, write

__all__ = ["ConcatProp", "PadProp", "SliceChannelProp", "SliceProp"]


class _MoveProp(KernelProp):
    """Base: backward reads only the head gradients."""

    def declare_backward_dependency(self, out_grad, in_data, out_data):
        """Only the head gradients."""
        return list(out_grad)


@register("Concat")
class ConcatProp(_MoveProp):
    """Join ``num_args`` arrays along ``dim``."""

    key_var_num_args = "num_args"
    num_args = Param(int, low=1, doc="Number of inputs.")
    dim = Param(int, unbounded=AXIS, default=1, doc="The axis to join along.")

    def list_arguments(self):
        """``arg0 … arg{num_args-1}``."""
        return [f"arg{i}" for i in range(self.num_args)]

    @partial_shape
    def infer_shape(self, in_shape, out_shape=None):
        """Sizes along ``dim`` add up; the other axes must agree.

        Under ``np_shape`` a 0 is an empty axis, so (0, 8) and (3, 8) join to (3, 8).
        Partial shapes (MXNet's ConcatShape, both ways): the other axes are
        merged over every input and the output; the output's size along
        ``dim`` is the sum once every input's is known, and a known output
        size fills the one input whose size along ``dim`` is unknown.
        """
        out = (out_shape or [None])[0]
        from ...util import is_np_shape

        zero_is_real = is_np_shape()  # MXNet: under np_shape a 0 axis is empty, not unknown
        if not all(s is not None and (zero_is_real or is_known(s)) for s in in_shape):
            return self._infer_partial(in_shape, out)
        known = [s for s in in_shape if s is not None]
        if not known:
            return None
        ndim = len(known[0])
        dim = normalize_axis(self.dim, ndim, self.op_name, "dim")
        template = list(known[0])
        for name, shape in zip(self.list_arguments(), in_shape):
            if shape is None:
                continue
            if len(shape) != ndim or any(
                a != b for i, (a, b) in enumerate(zip(shape, template)) if i != dim
            ):
                raise self.shape_error(
                    f"{name} has shape {fmt(shape)} but arg0 has {fmt(known[0])}; all axes except dim={dim} must match"
                )
        missing = [i for i, s in enumerate(in_shape) if s is None]
        if missing:
            return None
        out = list(template)
        out[dim] = sum(s[dim] for s in in_shape)
        return [tuple(s) for s in in_shape], [tuple(out)], []

    def _infer_partial(self, in_shape: list, out: tuple | None) -> Any:
        sample = next((s for s in [*in_shape, out] if s is not None), None)
        if sample is None:
            return None
        ndim = len(sample)
        dim = normalize_axis(self.dim, ndim, self.op_name, "dim")

        def others(shape: Any) -> Any:
            return None if shape is None else tuple(shape[:dim]) + (0,) + tuple(shape[dim + 1 :])

        names = [*self.list_arguments(), "output"]
        template = merge_all([others(s) for s in [*in_shape, out]], names)
        sizes = [0 if s is None else int(s[dim]) for s in in_shape]
        total = 0 if out is None else int(out[dim])
        if all(sizes):
            total = merge((total,), (sum(sizes),), f"the output's size along dim={dim} and")[0]
        elif total and sizes.count(0) == 1:
            rest = total - sum(sizes)
            if rest <= 0:
                raise self.shape_error(
                    f"the output has size {total} along dim={dim} but the known inputs "
                    f"already sum to {sum(sizes)}"
                )
            sizes[sizes.index(0)] = rest

        def with_size(size: int) -> tuple:
            return template[:dim] + (size,) + template[dim + 1 :]

        return [with_size(size) for size in sizes], [with_size(total)], []

    def forward(self, ctx, in_data, req, out_data, aux):
        """xp.concatenate."""
        dim = normalize_axis(self.dim, in_data[0].ndim, self.op_name, "dim")
        write(out_data[0], req[0], ctx.xp.concatenate(list(in_data), axis=dim))

    def backward(self, ctx, out_grad, in_data, out_data, req, in_grad, aux):
        """Each input gets its slice of the head gradient."""
        g = out_grad[0]
        dim = normalize_axis(self.dim, g.ndim, self.op_name, "dim")
        start = 0
        for i, grad in enumerate(in_grad):
            size = grad.shape[dim]
            index = [slice(None)] * g.ndim
            index[dim] = slice(start, start + size)
            write(grad, req[i], g[tuple(index)])
            start += size


register_alias("concat", "Concat")


@register("stack")
class StackProp(_MoveProp):
    """Stack ``num_args`` arrays of the same shape along a new axis."""

    key_var_num_args = "num_args"
    axis = Param(int, unbounded=AXIS, default=0, doc="Position of the new axis.")
    num_args = Param(int, low=1, doc="Number of inputs.")

    def list_arguments(self):
        """``arg0 … arg{num_args-1}``."""
        return [f"arg{i}" for i in range(self.num_args)]

    @partial_shape
    def infer_shape(self, in_shape, out_shape=None):
        """All inputs have one shape; the output inserts ``num_args`` at ``axis`` (both ways)."""
        out = (out_shape or [None])[0]
        if not all(is_known(shape) for shape in in_shape):
            merged = merge_all(in_shape, self.list_arguments())
            if out is not None:
                axis = normalize_axis(self.axis, len(out), self.op_name)
                merged = merge(merged, tuple(out[:axis]) + tuple(out[axis + 1 :]), "output")
            if merged is None:
                return None
            axis = normalize_axis(self.axis, len(merged) + 1, self.op_name)
            return [merged] * self.num_args, [merged[:axis] + (self.num_args,) + merged[axis:]], []
        known = next((tuple(s) for s in in_shape if s is not None), None)
        if known is None:
            return None
        for name, shape in zip(self.list_arguments(), in_shape):
            if shape is not None and tuple(shape) != known:
                raise self.shape_error(
                    f"{name} has shape {fmt(shape)} but arg0 has {fmt(known)}; they must match"
                )
        axis = normalize_axis(self.axis, len(known) + 1, self.op_name)
        return [known] * self.num_args, [known[:axis] + (self.num_args,) + known[axis:]], []

    def forward(self, ctx, in_data, req, out_data, aux):
        """xp.stack."""
        axis = normalize_axis(self.axis, in_data[0].ndim + 1, self.op_name)
        write(out_data[0], req[0], ctx.xp.stack(list(in_data), axis=axis))

    def backward(self, ctx, out_grad, in_data, out_data, req, in_grad, aux):
        """Each input gets its index along ``axis``."""
        g = out_grad[0]
        axis = normalize_axis(self.axis, g.ndim, self.op_name)
        for i, grad in enumerate(in_grad):
            write(grad, req[i], ctx.xp.take(g, i, axis=axis))


class _CountParam(int):
    """An int that can also be called: SliceChannel's parameter ``num_outputs`` shadows the
    ``OperatorProperty.num_outputs()`` method, and both must keep working."""

    def __call__(self) -> int:
        return int(self)


@register("SliceChannel")
class SliceChannelProp(_MoveProp):
    """Split ``axis`` into ``num_outputs`` equal parts."""

    num_outputs = Param(int, low=1, doc="Number of parts.")
    axis = Param(int, unbounded=AXIS, default=1, doc="The axis to split.")
    squeeze_axis = Param(
        bool, default=False, doc="Drop the split axis (each part must have size 1)."
    )

    def init(self, kwargs: dict[str, Any]) -> None:
        """Parse the parameters; ``num_outputs`` stays callable as the interface's method too."""
        super().init(kwargs)
        self._param_values["num_outputs"] = _CountParam(self._param_values["num_outputs"])

    def list_outputs(self):
        """``output0 … output{num_outputs-1}``."""
        return [f"output{i}" for i in range(self.num_outputs)]

    @partial_shape
    def infer_shape(self, in_shape, out_shape=None):
        """Each output has ``size / num_outputs`` along ``axis`` (or drops it).

        Partial shapes flow both ways: the outputs share one shape, and the
        data is that shape with ``axis`` multiplied by ``num_outputs``.
        """
        data = in_shape[0]
        outs = list(out_shape or [])
        if not is_known(data):
            return self._infer_partial(data, outs)
        data = tuple(data)
        axis = normalize_axis(self.axis, len(data), self.op_name)
        if data[axis] % self.num_outputs:
            raise self.shape_error(
                f"axis {axis} of data {fmt(data)} has size {data[axis]}, not divisible by "
                f"num_outputs={self.num_outputs}"
            )
        part = data[axis] // self.num_outputs
        if self.squeeze_axis and part != 1:
            raise self.shape_error(
                f"squeeze_axis needs parts of size 1 but data {fmt(data)} splits into size {part}"
            )
        out = data[:axis] + (() if self.squeeze_axis else (part,)) + data[axis + 1 :]
        return [data], [out] * self.num_outputs, []

    def _infer_partial(self, data: Any, outs: list) -> Any:
        count = self.num_outputs
        part = merge_all(outs, self.list_outputs())
        if data is None and part is None:
            return None
        ndim = len(data) if data is not None else len(part) + (1 if self.squeeze_axis else 0)
        axis = normalize_axis(self.axis, ndim, self.op_name)
        if data is not None:
            size = int(data[axis])
            if size and size % count:
                raise self.shape_error(
                    f"axis {axis} of data {fmt_partial(data)} has size {size}, not divisible "
                    f"by num_outputs={count}"
                )
            piece = () if self.squeeze_axis else (size // count,)
            part = merge(part, tuple(data[:axis]) + piece + tuple(data[axis + 1 :]), "outputs")
        assert part is not None
        if self.squeeze_axis:
            data = part[:axis] + (count,) + part[axis:]
        else:
            data = part[:axis] + (part[axis] * count,) + part[axis + 1 :]
        return [data], [part] * count, []

    def forward(self, ctx, in_data, req, out_data, aux):
        """xp.split."""
        x = in_data[0]
        axis = normalize_axis(self.axis, x.ndim, self.op_name)
        for i, part in enumerate(ctx.xp.split(x, self.num_outputs, axis=axis)):
            write(out_data[i], req[i], part.reshape(out_data[i].shape))

    def backward(self, ctx, out_grad, in_data, out_data, req, in_grad, aux):
        """Join the head gradients back."""
        xp = ctx.xp
        shape = in_grad[0].shape
        axis = normalize_axis(self.axis, len(shape), self.op_name)
        part_shape = shape[:axis] + (shape[axis] // self.num_outputs,) + shape[axis + 1 :]
        parts = [
            (g if g is not None else xp.zeros(part_shape, in_grad[0].dtype)).reshape(part_shape)
            for g in out_grad
        ]
        write(in_grad[0], req[0], xp.concatenate(parts, axis=axis))


register_alias("split", "SliceChannel")


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
class SliceProp(_MoveProp):
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
class TileProp(_MoveProp):
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
class RepeatProp(_MoveProp):
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
class PadProp(_MoveProp):
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
