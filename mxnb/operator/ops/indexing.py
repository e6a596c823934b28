"""Indexing and selection: Embedding, take, pick, one_hot, topk, sort, argsort, where, clip.

Idea (MXNet: src/operator/tensor/indexing_op*, ordering_op*, control_flow_op*):
indices arrive as floats (MXNet's arrays are float32 by default) and are
cast to integers inside the kernel.  Gradients scatter-add the head
gradient back to the rows that were gathered (``xp.add.at``), so repeated
indices accumulate, and indices themselves get no gradient.

Rules:
    * Embedding: weight ``(input_dim, output_dim)``; output ``data.shape +
      (output_dim,)``; indices are clipped into range as MXNet's CPU kernel does;
    * take: ``mode='clip'`` (default) or ``'wrap'``;
    * where: condition non-zero picks x, else y; same shapes (or a 1-D
      condition selecting rows);
    * clip: gradient 1 inside ``[a_min, a_max]``, 0 outside.

Example::

    >>> import numpy as np
    >>> from mxnb.operator import eager
    >>> eager.run_forward('one_hot', [np.array([1.0, 0.0])], {'depth': 3})[0][0].tolist()
    [[0.0, 1.0, 0.0], [1.0, 0.0, 0.0]]
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..base import OpReqType
from ..param import ANY, AXIS, UNUSED, DType, Param
from ..partial import is_known, merge, merge_all, partial_shape
from ..registry import register
from ._common import KernelProp, fmt, normalize_axis, write

__all__ = ["ClipProp", "EmbeddingProp", "OneHotProp", "TakeProp", "TopKProp", "WhereProp"]


def _indices(xp: Any, index: Any, size: int, mode: str = "clip") -> Any:
    whole = index.astype("int64")
    if mode == "wrap":
        return xp.mod(whole, size)
    return xp.clip(whole, 0, size - 1)


@register("Embedding")
class EmbeddingProp(KernelProp):
    """Look up rows of ``weight`` for integer indices in ``data``."""

    input_dim = Param(int, low=1, doc="Vocabulary size (rows of weight).")
    output_dim = Param(int, low=1, doc="Embedding size (columns of weight).")
    dtype = Param(DType, default="float32", doc="Dtype of weight and output.")
    sparse_grad = Param(bool, default=False, doc="Ignored (row-sparse gradient).")

    def list_arguments(self):
        """``data, weight``."""
        return ["data", "weight"]

    @partial_shape
    def infer_shape(self, in_shape, out_shape=None):
        """weight ``(input_dim, output_dim)``; output ``data.shape + (output_dim,)`` (both ways)."""
        data = in_shape[0]
        weight = (self.input_dim, self.output_dim)
        out = (out_shape or [None])[0]
        if out is not None:
            data = merge(data, tuple(out[:-1]), "data and output")
            out = merge(out, tuple(data) + (self.output_dim,), "output")
        given = in_shape[1]
        if given is not None and (
            len(given) != 2 or any(dim not in (0, want) for dim, want in zip(given, weight))
        ):
            raise self.shape_error(
                f"weight has shape {fmt(in_shape[1])} but input_dim={self.input_dim}, "
                f"output_dim={self.output_dim}; pass weight of shape {fmt(weight)}"
            )
        if data is None:
            return None
        return [tuple(data), weight], [tuple(data) + (self.output_dim,)], []

    def infer_type(self, in_type):
        """Indices keep their dtype; weight and output are ``dtype``."""
        dtype = np.dtype(self.dtype)
        data = np.dtype(in_type[0]) if in_type[0] is not None else dtype
        return [data, dtype], [dtype], []

    def declare_backward_dependency(self, out_grad, in_data, out_data):
        """Head gradient and the indices."""
        return [out_grad[0], in_data[0]]

    def forward(self, ctx, in_data, req, out_data, aux):
        """Gather rows."""
        xp = ctx.xp
        index = _indices(xp, in_data[0], self.input_dim)
        write(out_data[0], req[0], xp.take(in_data[1], index, axis=0))

    def backward(self, ctx, out_grad, in_data, out_data, req, in_grad, aux):
        """Scatter-add rows into the weight gradient; indices get zero."""
        xp = ctx.xp
        index = _indices(xp, in_data[0], self.input_dim).reshape(-1)
        written = req[1] in (OpReqType.WRITE_TO, OpReqType.WRITE_INPLACE)
        grad = in_grad[1] if written else xp.empty(in_grad[1].shape, dtype=in_grad[1].dtype)
        grad[...] = 0  # summed in the gradient itself when it is written, not added to
        xp.add.at(grad, index, out_grad[0].reshape(-1, self.output_dim))
        write(in_grad[1], req[1], grad)
        write(in_grad[0], req[0], 0)


@register("take")
class TakeProp(KernelProp):
    """Gather slices of ``a`` along ``axis`` at ``indices``."""

    axis = Param(int, unbounded=AXIS, default=0, doc="The axis to take along.")
    mode = Param(
        str, default="clip", choices=("clip", "wrap", "raise"), doc="Out-of-range handling."
    )

    def list_arguments(self):
        """``a, indices``."""
        return ["a", "indices"]

    @partial_shape
    def infer_shape(self, in_shape, out_shape=None):
        """``a.shape[:axis] + indices.shape + a.shape[axis+1:]`` (partial shapes forward)."""
        a, index = in_shape
        if a is None or index is None:
            return None
        a = tuple(a)
        axis = normalize_axis(self.axis, len(a), self.op_name)
        return [a, tuple(index)], [a[:axis] + tuple(index) + a[axis + 1 :]], []

    def infer_type(self, in_type):
        """Output has ``a``'s dtype."""
        if in_type[0] is None:
            return None
        index = in_type[1] if in_type[1] is not None else in_type[0]
        return [np.dtype(in_type[0]), np.dtype(index)], [np.dtype(in_type[0])], []

    def declare_backward_dependency(self, out_grad, in_data, out_data):
        """Head gradient and indices."""
        return [out_grad[0], in_data[1]]

    def _index(self, xp: Any, a_shape: tuple, index: Any) -> Any:
        axis = normalize_axis(self.axis, len(a_shape), self.op_name)
        mode = "clip" if self.mode == "raise" else self.mode
        return _indices(xp, index, a_shape[axis], mode), axis

    def forward(self, ctx, in_data, req, out_data, aux):
        """xp.take."""
        index, axis = self._index(ctx.xp, in_data[0].shape, in_data[1])
        write(out_data[0], req[0], ctx.xp.take(in_data[0], index, axis=axis))

    def backward(self, ctx, out_grad, in_data, out_data, req, in_grad, aux):
        """Scatter-add along ``axis``."""
        xp = ctx.xp
        shape = in_grad[0].shape
        index, axis = self._index(xp, shape, in_data[1])
        grad = xp.zeros(shape, dtype=in_grad[0].dtype)
        moved = xp.moveaxis(grad, axis, 0)
        g = xp.moveaxis(
            out_grad[0], tuple(range(axis, axis + index.ndim)), tuple(range(index.ndim))
        )
        xp.add.at(moved, index.reshape(-1), g.reshape((-1,) + moved.shape[1:]))
        write(in_grad[0], req[0], grad)
        write(in_grad[1], req[1], 0)


@register("pick")
class PickProp(KernelProp):
    """Pick one element per position along ``axis``: ``out[i] = data[i, index[i]]``."""

    axis = Param(int, unbounded=AXIS, default=-1, optional=True, doc="The axis to pick along.")
    keepdims = Param(bool, default=False, doc="Keep the picked axis with size 1.")
    mode = Param(str, default="clip", choices=("clip", "wrap"), doc="Out-of-range handling.")

    def list_arguments(self):
        """``data, index``."""
        return ["data", "index"]

    @partial_shape
    def infer_shape(self, in_shape, out_shape=None):
        """data without ``axis``; index has that shape (partial: known dims flow both ways)."""
        data = in_shape[0]
        if data is None:
            return None
        data = tuple(data)
        axis = normalize_axis(self.axis, len(data), self.op_name)
        index = merge(data[:axis] + data[axis + 1 :], in_shape[1], "data without axis and index")
        out = (out_shape or [None])[0]
        if out is not None and index:
            out = tuple(out)
            index = merge(index, out[:axis] + out[axis + 1 :] if self.keepdims else out, "output")
        data = index[:axis] + (data[axis],) + index[axis:]
        out = data[:axis] + (1,) + data[axis + 1 :] if self.keepdims else index
        return [data, index], [out or (1,)], []

    def declare_backward_dependency(self, out_grad, in_data, out_data):
        """Head gradient and index."""
        return [out_grad[0], in_data[1]]

    def _index(self, xp: Any, data_shape: tuple, index: Any) -> tuple[Any, int]:
        axis = normalize_axis(self.axis, len(data_shape), self.op_name)
        index = _indices(xp, index, data_shape[axis], self.mode)
        return xp.expand_dims(index.reshape(data_shape[:axis] + data_shape[axis + 1 :]), axis), axis

    def forward(self, ctx, in_data, req, out_data, aux):
        """take_along_axis."""
        index, axis = self._index(ctx.xp, in_data[0].shape, in_data[1])
        value = ctx.xp.take_along_axis(in_data[0], index, axis=axis)
        write(out_data[0], req[0], value.reshape(out_data[0].shape))

    def backward(self, ctx, out_grad, in_data, out_data, req, in_grad, aux):
        """Place the head gradient at the picked positions."""
        xp = ctx.xp
        shape = in_grad[0].shape
        index, axis = self._index(xp, shape, in_data[1])
        grad = xp.zeros(shape, dtype=in_grad[0].dtype)
        xp.put_along_axis(grad, index, out_grad[0].reshape(index.shape), axis=axis)
        write(in_grad[0], req[0], grad)
        write(in_grad[1], req[1], 0)


@register("one_hot")
class OneHotProp(KernelProp):
    """One-hot encoding of integer indices: ``indices.shape + (depth,)``."""

    depth = Param(int, low=0, doc="Number of classes (0: an empty last axis, as MXNet).")
    on_value = Param(float, unbounded=ANY, default=1.0, doc="Value at the index.")
    off_value = Param(float, unbounded=ANY, default=0.0, doc="Value elsewhere.")
    dtype = Param(DType, default="float32", doc="Output dtype.")

    def list_arguments(self):
        """``indices``."""
        return ["indices"]

    @partial_shape
    def infer_shape(self, in_shape, out_shape=None):
        """Appends ``depth`` (the indices' shape also comes back from the output)."""
        out = (out_shape or [None])[0]
        data = merge(in_shape[0], None if out is None else tuple(out[:-1]), "indices and output")
        if data is None:
            return None
        return [tuple(data)], [tuple(data) + (self.depth,)], []

    def infer_type(self, in_type):
        """Output is ``dtype``."""
        index = np.dtype(in_type[0]) if in_type[0] is not None else np.dtype("float32")
        return [index], [np.dtype(self.dtype)], []

    def declare_backward_dependency(self, out_grad, in_data, out_data):
        """Nothing (no gradient)."""
        return []

    def forward(self, ctx, in_data, req, out_data, aux):
        """on_value where index matches, off_value elsewhere (out-of-range rows are all off)."""
        xp = ctx.xp
        index = in_data[0].astype("int64")
        hit = xp.expand_dims(index, -1) == xp.arange(self.depth)
        write(out_data[0], req[0], xp.where(hit, self.on_value, self.off_value))

    def backward(self, ctx, out_grad, in_data, out_data, req, in_grad, aux):
        """Zero."""
        write(in_grad[0], req[0], 0)


@register("topk")
class TopKProp(KernelProp):
    """The ``k`` largest (or smallest) entries along ``axis``: indices, values, a mask, or both."""

    axis = Param(
        int, unbounded=AXIS, default=-1, optional=True, doc="The axis; None: the flattened array."
    )
    k = Param(
        int,
        unbounded="any value; k < 1 means the whole axis",
        default=1,
        doc="How many; k < 1 means all.",
    )
    ret_typ = Param(
        str, default="indices", choices=("value", "indices", "mask", "both"), doc="What to return."
    )
    is_ascend = Param(bool, default=False, doc="Smallest instead of largest.")
    dtype = Param(DType, default="float32", doc="Dtype of the returned indices.")

    def list_outputs(self):
        """``output`` (``both``: values and indices)."""
        return ["output", "indices"] if self.ret_typ == "both" else ["output"]

    def _axis_and_k(self, shape: tuple) -> tuple[int | None, int]:
        if self.axis is None:
            size = int(np.prod(shape))
            return None, size if self.k < 1 else min(self.k, size)
        axis = normalize_axis(self.axis, len(shape), self.op_name)
        return axis, shape[axis] if self.k < 1 else min(self.k, shape[axis])

    def infer_shape(self, in_shape):
        """``k`` along ``axis`` (mask: data's shape)."""
        data = in_shape[0]
        if data is None:
            return None
        data = tuple(data)
        axis, k = self._axis_and_k(data)
        if self.ret_typ == "mask":
            return [data], [data], []
        out = (k,) if axis is None else data[:axis] + (k,) + data[axis + 1 :]
        return [data], [out] * len(self.list_outputs()), []

    def infer_type(self, in_type):
        """Indices have ``dtype``; values and masks the data's dtype."""
        if in_type[0] is None:
            return None
        data = np.dtype(in_type[0])
        if self.ret_typ == "indices":
            return [data], [np.dtype(self.dtype)], []
        if self.ret_typ == "both":
            return [data], [data, np.dtype(self.dtype)], []
        return [data], [data], []

    def declare_backward_dependency(self, out_grad, in_data, out_data):
        """Head gradient and data (values route back to where they came from)."""
        return [out_grad[0], in_data[0]]

    def _order(self, xp: Any, x: Any) -> tuple[Any, int, int]:
        axis, k = self._axis_and_k(x.shape)
        data = x.reshape(-1) if axis is None else x
        axis = 0 if axis is None else axis
        key = data if self.is_ascend else -data
        order = xp.argsort(key, axis=axis, kind="stable")
        return xp.take(order, xp.arange(k), axis=axis), axis, k

    def forward(self, ctx, in_data, req, out_data, aux):
        """argsort (stable) and take the first ``k``."""
        xp, x = ctx.xp, in_data[0]
        index, axis, _ = self._order(xp, x)
        data = x.reshape(-1) if self.axis is None else x
        if self.ret_typ == "mask":
            mask = xp.zeros(data.shape, dtype=x.dtype)
            xp.put_along_axis(mask, index, 1, axis=axis)
            write(out_data[0], req[0], mask.reshape(x.shape))
        elif self.ret_typ == "indices":
            write(out_data[0], req[0], index)
        else:
            write(out_data[0], req[0], xp.take_along_axis(data, index, axis=axis))
            if self.ret_typ == "both":
                write(out_data[1], req[1], index)

    def backward(self, ctx, out_grad, in_data, out_data, req, in_grad, aux):
        """value / both: head gradient back to the selected positions; indices / mask: zero."""
        xp = ctx.xp
        if self.ret_typ not in ("value", "both"):
            write(in_grad[0], req[0], 0)
            return
        x = in_data[0]
        index, axis, _ = self._order(xp, x)
        grad = xp.zeros(
            x.reshape(-1).shape if self.axis is None else x.shape, dtype=in_grad[0].dtype
        )
        xp.put_along_axis(grad, index, out_grad[0].reshape(index.shape), axis=axis)
        write(in_grad[0], req[0], grad.reshape(x.shape))


@register("sort")
class SortProp(TopKProp):
    """Sort along ``axis`` (ascending by default)."""

    k = Param(int, unbounded=UNUSED, default=0, doc="Unused (all entries).")
    ret_typ = Param(str, default="value", choices=("value",), doc="Values.")
    is_ascend = Param(bool, default=True, doc="Ascending order.")


@register("argsort")
class ArgsortProp(TopKProp):
    """Indices that sort along ``axis`` (ascending by default)."""

    k = Param(int, unbounded=UNUSED, default=0, doc="Unused (all entries).")
    ret_typ = Param(str, default="indices", choices=("indices",), doc="Indices.")
    is_ascend = Param(bool, default=True, doc="Ascending order.")


@register("where")
class WhereProp(KernelProp):
    """``x`` where ``condition`` is non-zero, else ``y``."""

    def list_arguments(self):
        """``condition, x, y``."""
        return ["condition", "x", "y"]

    @partial_shape
    def infer_shape(self, in_shape, out_shape=None):
        """x and y share one shape; condition has it too, or is 1-D over the first axis.

        Partial shapes: x, y and the output merge, both ways (and a condition of their rank).
        """
        cond, x, y = in_shape
        out = (out_shape or [None])[0]
        if not all(shape is None or is_known(shape) for shape in (cond, x, y, out)):
            known = merge_all([x, y, out], ["x", "y", "output"])
            if known is None:
                return None
            if cond is not None and len(cond) == len(known):
                known = merge(known, cond, "condition and x")
                cond = known
            return [cond, known, known], [known], []
        known = x if x is not None else y
        if known is None:
            return None
        known = tuple(known)
        for name, shape in (("x", x), ("y", y)):
            if shape is not None and tuple(shape) != known:
                raise self.shape_error(
                    f"{name} has shape {fmt(shape)} but x/y have {fmt(known)}; they must match"
                )
        if cond is not None and tuple(cond) != known and tuple(cond) != known[:1]:
            raise self.shape_error(
                f"condition has shape {fmt(cond)} but x has {fmt(known)}; use {fmt(known)} or {fmt(known[:1])}"
            )
        return [tuple(cond) if cond is not None else known, known, known], [known], []

    def declare_backward_dependency(self, out_grad, in_data, out_data):
        """Head gradient and condition."""
        return [out_grad[0], in_data[0]]

    def _condition(self, cond: Any, ndim: int) -> Any:
        return cond.reshape(cond.shape + (1,) * (ndim - cond.ndim)) != 0

    def forward(self, ctx, in_data, req, out_data, aux):
        """xp.where."""
        cond, x, y = in_data
        write(out_data[0], req[0], ctx.xp.where(self._condition(cond, x.ndim), x, y))

    def backward(self, ctx, out_grad, in_data, out_data, req, in_grad, aux):
        """Head gradient to x where the condition holds, to y elsewhere; none to the condition."""
        g = out_grad[0]
        pick = self._condition(in_data[0], g.ndim)
        write(in_grad[1], req[1], ctx.xp.where(pick, g, 0))
        write(in_grad[2], req[2], ctx.xp.where(pick, 0, g))
        write(in_grad[0], req[0], 0)


@register("clip")
class ClipProp(KernelProp):
    """Clip values into ``[a_min, a_max]``."""

    a_min = Param(float, unbounded=ANY, doc="Minimum value.")
    a_max = Param(float, unbounded=ANY, doc="Maximum value.")

    def declare_backward_dependency(self, out_grad, in_data, out_data):
        """Head gradient and input."""
        return [out_grad[0], in_data[0]]

    def forward_inplace_option(self, in_data, out_data):
        """In place."""
        return [(in_data[0], out_data[0])]

    def backward_inplace_option(self, out_grad, in_data, out_data, in_grad):
        """The input gradient may take the head gradient's memory."""
        return [(out_grad[0], in_grad[0])]

    def forward(self, ctx, in_data, req, out_data, aux):
        """xp.clip."""
        write(out_data[0], req[0], ctx.xp.clip(in_data[0], self.a_min, self.a_max))

    def backward(self, ctx, out_grad, in_data, out_data, req, in_grad, aux):
        """1 inside the range, 0 outside."""
        x = in_data[0]
        write(in_grad[0], req[0], out_grad[0] * ((x >= self.a_min) & (x <= self.a_max)))
