"""Joining and splitting: Concat, stack, SliceChannel.

Idea (MXNet: src/operator/{concat,slice_channel}*): these ops move data without arithmetic, so their gradients move the head
gradient back (split what was joined, join what was split, sum what was
repeated) and read nothing but the head gradient.

Rules:
    * Concat / stack are variable-arity (``num_args``); Concat's inputs
      must agree on every axis but ``dim``;
    * SliceChannel (alias ``split``) cuts ``axis`` into ``num_outputs`` equal
      parts, dropping the axis with ``squeeze_axis`` when each part has size 1;
    * the other ops that move data (slice, tile, repeat, Pad) are in
      :mod:`.slicing`, on the same :class:`MoveProp`.

Example::

    >>> import numpy as np
    >>> from mxnb.operator import eager
    >>> outs, _, _ = eager.run_forward('split', [np.arange(6.0).reshape(2, 3)], {'num_outputs': 2, 'axis': 0})
    >>> [o.tolist() for o in outs]
    [[[0.0, 1.0, 2.0]], [[3.0, 4.0, 5.0]]]
"""

from __future__ import annotations

from typing import Any

from ..base import OpReqType
from ..param import AXIS, Param
from ..partial import fmt_partial, is_known, merge, merge_all, partial_shape
from ..registry import register, register_alias
from ._common import KernelProp, fmt, normalize_axis, write

__all__ = ["ConcatProp", "MoveProp", "SliceChannelProp", "StackProp"]


class MoveProp(KernelProp):
    """Base: backward reads only the head gradients."""

    def declare_backward_dependency(self, out_grad, in_data, out_data):
        """Only the head gradients."""
        return list(out_grad)


def _concatenate_into(xp: Any, parts: list, axis: int, out: Any, req: OpReqType) -> None:
    """``out`` (as ``req`` says) = the parts joined along ``axis``; written parts are joined in it.

    No joined copy is made when the output is written and every part has its dtype.
    """
    if req in (OpReqType.WRITE_TO, OpReqType.WRITE_INPLACE) and all(
        part.dtype == out.dtype for part in parts
    ):
        xp.concatenate(parts, axis=axis, out=out)
        return
    write(out, req, xp.concatenate(parts, axis=axis))


@register("Concat")
class ConcatProp(MoveProp):
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
        """xp.concatenate, straight into the output when it is written."""
        dim = normalize_axis(self.dim, in_data[0].ndim, self.op_name, "dim")
        _concatenate_into(ctx.xp, list(in_data), dim, out_data[0], req[0])

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
class StackProp(MoveProp):
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
class SliceChannelProp(MoveProp):
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
        _concatenate_into(xp, parts, axis, in_grad[0], req[0])


register_alias("split", "SliceChannel")
