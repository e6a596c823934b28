"""Shape operators: Reshape, Flatten, expand_dims, squeeze, transpose, SwapAxis, broadcast_to.

Idea (MXNet: src/operator/tensor/matrix_op*, broadcast_reduce_op*): these
ops only move or re-view data, so their gradients are the inverse move of
the head gradient and they read nothing else.

Rules:
    * Reshape's special codes (MXNet): ``0`` copy this dim, ``-1`` infer it,
      ``-2`` copy all remaining dims, ``-3`` merge two dims, ``-4`` split one
      dim into the next two given values (one may be -1); ``reverse`` reads
      the codes right to left;
    * Reshape, Flatten, expand_dims, squeeze declare forward in place (they
      share memory in MXNet);
    * broadcast_to / broadcast_axis sum the head gradient back to the input's shape.

Example::

    >>> import numpy as np
    >>> from mxnb.operator import eager
    >>> eager.run_forward('Reshape', [np.zeros((2, 3, 4))], {'shape': '(-3,-2)'})[0][0].shape
    (6, 4)
"""

from __future__ import annotations

import math
from typing import Any

from ..param import AXIS, UNUSED, Param, Shape
from ..partial import fill_one_unknown, is_known, merge, partial_shape, product
from ..registry import register, register_alias
from ._common import KernelProp, fmt, normalize_axis, reduce_to, write

__all__ = ["ReshapeProp", "ViewProp", "infer_reshape"]


class ViewProp(KernelProp):
    """Base of ops whose output is the input re-viewed (``view``) and gradient the inverse view."""

    inplace = True

    def declare_backward_dependency(self, out_grad, in_data, out_data):
        """Only the head gradient."""
        return [out_grad[0]]

    def forward_inplace_option(self, in_data, out_data):
        """Output may share the input's memory (when the op is a pure re-view)."""
        return [(in_data[0], out_data[0])] if self.inplace else []

    def backward_inplace_option(self, out_grad, in_data, out_data, in_grad):
        """Input gradient may share the head gradient's memory."""
        return [(out_grad[0], in_grad[0])] if self.inplace else []

    def view(self, xp: Any, x: Any) -> Any:
        """Return the output for ``x`` (default: reshape to the output shape)."""
        raise NotImplementedError

    def unview(self, xp: Any, g: Any, in_shape: tuple) -> Any:
        """Return the input gradient for head gradient ``g`` (default: reshape back)."""
        return g.reshape(in_shape)

    def forward(self, ctx, in_data, req, out_data, aux):
        """out = view(x)."""
        write(out_data[0], req[0], self.view(ctx.xp, in_data[0]).reshape(out_data[0].shape))

    def backward(self, ctx, out_grad, in_data, out_data, req, in_grad, aux):
        """dx = unview(dy)."""
        write(in_grad[0], req[0], self.unview(ctx.xp, out_grad[0], tuple(in_grad[0].shape)))


def infer_reshape(op: Any, data: tuple, codes: tuple, reverse: bool = False) -> tuple:  # noqa: C901 -- one branch per Reshape code (0, -1, -2, -3, -4), as MXNet's InferReshapeShape
    """Apply MXNet's Reshape codes (0, -1, -2, -3, -4) to ``data``; raise a ShapeError if impossible."""
    if reverse:
        data, codes = tuple(reversed(data)), tuple(reversed(codes))
    out: list[int] = []
    infer_at = -1
    src = 0
    i = 0
    try:
        while i < len(codes):
            code = codes[i]
            if code == 0:
                out.append(data[src])
                src += 1
            elif code == -1:
                if infer_at >= 0:
                    raise op.shape_error(f"shape {codes} has more than one -1")
                infer_at = len(out)
                out.append(1)
                src += 1
            elif code == -2:
                out.extend(data[src:])
                src = len(data)
            elif code == -3:
                out.append(data[src] * data[src + 1])
                src += 2
            elif code == -4:
                whole = data[src]
                src += 1
                first, second = codes[i + 1], codes[i + 2]
                i += 2
                if first == -1:
                    first = whole // second if whole else 0  # 0: unknown (partial data)
                if second == -1:
                    second = whole // first if whole else 0
                if whole and first * second != whole:
                    raise op.shape_error(f"-4 cannot split {whole} into {first} x {second}")
                out.extend([first, second])
            else:
                out.append(code)
                src += 1
            i += 1
    except IndexError:
        raise op.shape_error(
            f"shape {codes} refers to more dimensions than data {fmt(data)} has"
        ) from None
    total = math.prod(data)
    if total == 0 and 0 in data:  # partial data: what depends on an unknown dim is unknown
        if infer_at >= 0:
            out[infer_at] = 0
        if reverse:
            out.reverse()
        return tuple(out)
    if infer_at >= 0:
        known = math.prod(out)
        if known == 0 or total % known:
            raise op.shape_error(f"cannot reshape {fmt(data)} ({total} elements) into {codes}")
        out[infer_at] = total // known
    if reverse:
        out.reverse()
    if math.prod(out) != total:
        raise op.shape_error(
            f"cannot reshape data {fmt(data)} ({total} elements) into {fmt(out)} "
            f"({math.prod(out)} elements); use -1 to infer one dimension"
        )
    return tuple(out)


@register("Reshape")
class ReshapeProp(ViewProp):
    """Reshape with MXNet's special codes 0, -1, -2, -3, -4."""

    shape = Param(Shape, low=-4, default=(), doc="The target shape (may use 0, -1, -2, -3, -4).")
    reverse = Param(bool, default=False, doc="Read the special codes from right to left.")
    target_shape = Param(Shape, low=0, default=(), doc="Deprecated; use shape.")
    keep_highest = Param(
        bool, default=False, doc="Deprecated; with target_shape keeps the first dim."
    )

    @partial_shape
    def infer_shape(self, in_shape, out_shape=None):
        """Apply the codes; with partial data the dims it leaves unknown stay 0.

        Backward (MXNet's ReverseReshapeInferShape): a known output fills the
        one unknown dimension of the data, by the element count.
        """
        data = in_shape[0]
        out = (out_shape or [None])[0]
        if data is None:
            return None
        data = tuple(data)
        if is_known(out) and list(data).count(0) == 1:
            data = fill_one_unknown(data, product(out))
        codes = tuple(self.shape)
        if not codes and self.target_shape:
            codes = tuple(self.target_shape)
            if self.keep_highest:
                codes = (data[0],) + codes
            codes = tuple(-1 if c == 0 else c for c in codes)
        return [data], [infer_reshape(self, data, codes, self.reverse)], []

    def view(self, xp: Any, x: Any) -> Any:
        """Any reshape: forward writes through the output's own shape."""
        return x


register_alias("reshape", "Reshape")


@register("Flatten")
class FlattenProp(ViewProp):
    """Collapse all axes but the first: ``(N, ...) -> (N, prod(...))``."""

    @partial_shape
    def infer_shape(self, in_shape, out_shape=None):
        """``(N, prod(rest))``; the batch also flows back from the output."""
        data = in_shape[0]
        if data is None:
            return None
        data = tuple(data)
        out = (out_shape or [None])[0]
        if data and out is not None:
            data = merge(data[:1], tuple(out[:1]), "batch of data and output") + data[1:]
            data = data[:1] + fill_one_unknown(data[1:], int(out[1]))
        return [data], [(data[0], math.prod(data[1:])) if data else (1, 1)], []

    def view(self, xp: Any, x: Any) -> Any:
        """Reshape."""
        return x


register_alias("flatten", "Flatten")


@register("expand_dims")
class ExpandDimsProp(ViewProp):
    """Insert an axis of size 1 at ``axis``."""

    axis = Param(
        int, unbounded=AXIS, doc="Position of the new axis (negative counts from the end)."
    )

    @partial_shape
    def infer_shape(self, in_shape, out_shape=None):
        """Insert a 1 (known dims of the output flow back)."""
        data = in_shape[0]
        out = (out_shape or [None])[0]
        if data is None and out is None:
            return None
        ndim = len(data) if data is not None else len(out) - 1
        axis = normalize_axis(self.axis, ndim + 1, self.op_name)
        if out is not None:
            data = merge(data, tuple(out[:axis]) + tuple(out[axis + 1 :]), "data and output")
        data = tuple(data)
        return [data], [data[:axis] + (1,) + data[axis:]], []

    def view(self, xp: Any, x: Any) -> Any:
        """Reshape."""
        return x


@register("squeeze")
class SqueezeProp(ViewProp):
    """Remove axes of size 1 (all of them, or those in ``axis``)."""

    axis = Param(
        Shape,
        unbounded=AXIS,
        default=None,
        optional=True,
        doc="Axes to remove; None: every size-1 axis.",
    )

    def infer_shape(self, in_shape):
        """Drop size-1 axes; a fully squeezed array has shape (1,)."""
        data = in_shape[0]
        if data is None:
            return None
        data = tuple(data)
        if self.axis is None:
            axes = [i for i, s in enumerate(data) if s == 1]
        else:
            axes = [normalize_axis(a, len(data), self.op_name) for a in self.axis]
            for a in axes:
                if data[a] != 1:
                    raise self.shape_error(
                        f"cannot squeeze axis {a} of size {data[a]} in data {fmt(data)}"
                    )
        out = tuple(s for i, s in enumerate(data) if i not in axes) or (1,)
        return [data], [out], []

    def view(self, xp: Any, x: Any) -> Any:
        """Reshape."""
        return x


@register("transpose")
class TransposeProp(ViewProp):
    """Permute axes (default: reverse them)."""

    axes = Param(Shape, unbounded=AXIS, default=(), doc="The permutation; empty reverses the axes.")
    inplace = False

    def _axes(self, ndim: int) -> tuple:
        if not self.axes:
            return tuple(reversed(range(ndim)))
        axes = tuple(normalize_axis(a, ndim, self.op_name) for a in self.axes)
        if sorted(axes) != list(range(ndim)):
            raise self.shape_error(f"axes {tuple(self.axes)} is not a permutation of {ndim} axes")
        return axes

    @partial_shape
    def infer_shape(self, in_shape, out_shape=None):
        """Permuted shape; known dims of the output flow back to the input."""
        data = in_shape[0]
        out = (out_shape or [None])[0]
        if data is None and out is None:
            return None
        ndim = len(data if data is not None else out)
        axes = self._axes(ndim)
        if out is not None:
            back = [0] * ndim
            for position, axis in enumerate(axes):
                back[axis] = out[position]
            data = merge(data, tuple(back), "data and output")
        data = tuple(data)
        return [data], [tuple(data[a] for a in axes)], []

    def view(self, xp: Any, x: Any) -> Any:
        """x.transpose(axes)."""
        return x.transpose(self._axes(x.ndim))

    def unview(self, xp: Any, g: Any, in_shape: tuple) -> Any:
        """Transpose by the inverse permutation."""
        axes = self._axes(len(in_shape))
        inverse = [0] * len(axes)
        for i, a in enumerate(axes):
            inverse[a] = i
        return g.transpose(inverse)


@register("SwapAxis")
class SwapAxisProp(ViewProp):
    """Swap two axes."""

    dim1 = Param(int, unbounded=AXIS, default=0, doc="First axis.")
    dim2 = Param(int, unbounded=AXIS, default=0, doc="Second axis.")
    inplace = False

    @partial_shape
    def infer_shape(self, in_shape, out_shape=None):
        """Shape with the two axes swapped (both ways)."""
        data = in_shape[0]
        out = (out_shape or [None])[0]
        if out is not None:
            back = list(out)
            a = normalize_axis(self.dim1, len(back), self.op_name, "dim1")
            b = normalize_axis(self.dim2, len(back), self.op_name, "dim2")
            back[a], back[b] = out[b], out[a]
            data = merge(data, tuple(back), "data and output")
        if data is None:
            return None
        data = list(data)
        a = normalize_axis(self.dim1, len(data), self.op_name, "dim1")
        b = normalize_axis(self.dim2, len(data), self.op_name, "dim2")
        out = list(data)
        out[a], out[b] = data[b], data[a]
        return [tuple(data)], [tuple(out)], []

    def view(self, xp: Any, x: Any) -> Any:
        """xp.swapaxes."""
        return xp.swapaxes(x, self.dim1, self.dim2)

    def unview(self, xp: Any, g: Any, in_shape: tuple) -> Any:
        """Swapping again undoes it."""
        return xp.swapaxes(g, self.dim1, self.dim2)


register_alias("swapaxes", "SwapAxis")


@register("broadcast_to")
class BroadcastToProp(ViewProp):
    """Broadcast size-1 axes to ``shape`` (0 keeps the input's size)."""

    shape = Param(Shape, low=0, default=(), doc="The target shape; 0 keeps that axis.")
    inplace = False

    @partial_shape
    def infer_shape(self, in_shape, out_shape=None):
        """The target shape, checked against the input (a 0 in ``shape`` keeps data's axis).

        Partial shapes: the axes ``shape`` keeps flow back from the output.
        """
        data = in_shape[0]
        if data is None:
            return None
        data = tuple(data)
        if len(self.shape) != len(data):
            raise self.shape_error(
                f"shape {tuple(self.shape)} must have {len(data)} axes like data {fmt(data)}"
            )
        given = (out_shape or [None])[0]
        if given is not None and len(given) == len(data):
            kept = tuple(g if s == 0 else 0 for g, s in zip(given, self.shape))
            data = merge(data, kept, "data and output")
        out = tuple(d if s == 0 else s for d, s in zip(data, self.shape))
        for d, s in zip(data, out):
            if d and d != s and d != 1:
                raise self.shape_error(
                    f"cannot broadcast data {fmt(data)} to {fmt(out)}: only size-1 axes grow"
                )
        return [data], [out], []

    def view(self, xp: Any, x: Any) -> Any:
        """Broadcast (forward writes it through the output's shape)."""
        return x

    def forward(self, ctx, in_data, req, out_data, aux):
        """out = broadcast_to(x)."""
        write(out_data[0], req[0], ctx.xp.broadcast_to(in_data[0], out_data[0].shape))

    def unview(self, xp: Any, g: Any, in_shape: tuple) -> Any:
        """Sum over the broadcast axes."""
        return reduce_to(xp, g, in_shape)


@register("broadcast_axis")
class BroadcastAxisProp(BroadcastToProp):
    """Broadcast the given size-1 axes to ``size``."""

    shape = Param(Shape, unbounded=UNUSED, default=(), doc="Unused (see broadcast_to).")
    axis = Param(Shape, unbounded=AXIS, default=(), doc="Axes to broadcast.")
    size = Param(Shape, low=0, default=(), doc="Target size of each axis.")

    def infer_shape(self, in_shape):
        """The input shape with ``axis[i]`` set to ``size[i]``."""
        data = in_shape[0]
        if data is None:
            return None
        out = list(data)
        for a, s in zip(self.axis, self.size):
            a = normalize_axis(a, len(out), self.op_name)
            if out[a] != 1:
                raise self.shape_error(f"axis {a} of data {fmt(data)} has size {out[a]}, not 1")
            out[a] = s
        return [tuple(data)], [tuple(out)], []


register_alias("broadcast_axes", "broadcast_axis")
