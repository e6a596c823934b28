"""Matrix and shape operators: dot, batch_dot, FullyConnected, transpose, Reshape, Flatten, ...

Idea (MXNet: src/operator/tensor/dot*, matrix_op*, fully_connected*): the
products are one BLAS call each (``xp.matmul`` writing straight into the
output when ``req`` allows); the shape ops only move or re-view data, so
their gradients are the inverse move of the head gradient and they read
nothing else.

Rules:
    * FullyConnected: ``weight`` is ``(num_hidden, in_features)``, ``bias``
      ``(num_hidden,)``; with ``flatten=True`` (default) data is ``(N, ...)``
      flattened to ``(N, in_features)``, else the last axis is contracted.
      Backward reads head gradient, data and weight — never the output;
    * Reshape's special codes (MXNet): ``0`` copy this dim, ``-1`` infer it,
      ``-2`` copy all remaining dims, ``-3`` merge two dims, ``-4`` split one
      dim into the next two given values (one may be -1); ``reverse`` reads
      the codes right to left;
    * Reshape, Flatten, expand_dims, squeeze declare forward in place (they
      share memory in MXNet).

Example::

    >>> import numpy as np
    >>> from mxnb.operator import eager
    >>> eager.run_forward('Reshape', [np.zeros((2, 3, 4))], {'shape': '(-3,-2)'})[0][0].shape
    (6, 4)
"""

from __future__ import annotations

import math
from typing import Any

from ...base import ShapeError
from ..base import OpReqType
from ..param import AXIS, UNUSED, Param, Shape
from ..partial import fmt_partial, is_known, merge, partial_shape, product
from ..registry import register, register_alias
from ._common import KernelProp, fmt, normalize_axis, reduce_to, write

__all__ = ["DotProp", "FullyConnectedProp", "ReshapeProp", "infer_reshape"]


# ---------------------------------------------------------------------------
# products
# ---------------------------------------------------------------------------


def _product_into(xp: Any, a: Any, b: Any, out: Any) -> None:
    """``out = a @ b`` for matrices: ``xp.dot`` when the dtypes agree, else ``xp.matmul``.

    Both call the same BLAS GEMM, but numpy's ``matmul`` keeps the GIL for
    the whole call when the output has fewer than about 500 elements (a
    weight gradient such as FullyConnected's or Convolution's is that small
    and its inner dimension is the batch); ``dot`` always releases it.
    """
    if a.dtype == b.dtype == out.dtype and a.ndim == b.ndim == 2:
        xp.dot(a, b, out=out)
    else:
        xp.matmul(a, b, out=out)


def _matmul_into(xp: Any, out: Any, req: OpReqType, a: Any, b: Any) -> None:
    """out (=|+=) a @ b, writing straight into ``out`` when it is a plain overwrite."""
    if req == OpReqType.NULL:
        return
    if (
        req == OpReqType.WRITE_TO
        and out.flags.c_contiguous
        and out.shape == (a.shape[0], b.shape[1])
    ):
        _product_into(xp, a, b, out)
    else:
        write(out, req, (a @ b).reshape(out.shape))


@register("FullyConnected")
class FullyConnectedProp(KernelProp):
    """Fully connected layer: ``out = data @ weight.T + bias``."""

    num_hidden = Param(int, low=1, doc="Number of hidden units (output features).")
    no_bias = Param(bool, default=False, doc="Whether to leave out the bias.")
    flatten = Param(bool, default=True, doc="Flatten all but the first axis of data.")

    def list_arguments(self):
        """``data, weight[, bias]``."""
        return ["data", "weight"] if self.no_bias else ["data", "weight", "bias"]

    @partial_shape
    def infer_shape(self, in_shape, out_shape=None):
        """Fill weight ``(num_hidden, in_features)`` and bias ``(num_hidden,)`` from data.

        With partial shapes: the batch comes from the output, the input
        features from the weight (MXNet: data from weight and num_hidden).
        """
        data = in_shape[0]
        if not (is_known(data) and all(s is None or is_known(s) for s in in_shape)):
            return self._infer_partial(in_shape, (out_shape or [None])[0])
        data = tuple(data)
        if self.flatten:
            features = math.prod(data[1:])
            out = (data[0], self.num_hidden)
            flat = (data[0], features)
        else:
            features = data[-1]
            out = data[:-1] + (self.num_hidden,)
            flat = (math.prod(data[:-1]), features)
        weight = (self.num_hidden, features)
        given = in_shape[1]
        if given is not None and tuple(given) != weight:
            given = tuple(given)
            hint = ""
            if len(given) == 2 and given[0] == self.num_hidden:
                hint = f" or reshape data to {fmt((flat[0], given[1]))}"
            raise self.shape_error(
                f"weight has shape {fmt(given)} but data {fmt(data)} gives {features} input "
                f"features; pass weight of shape {fmt(weight)}{hint}"
            )
        shapes = [data, weight]
        if not self.no_bias:
            bias = in_shape[2]
            if bias is not None and tuple(bias) != (self.num_hidden,):
                raise self.shape_error(
                    f"bias has shape {fmt(bias)} but num_hidden={self.num_hidden}; pass bias of "
                    f"shape ({self.num_hidden},)"
                )
            shapes.append((self.num_hidden,))
        return shapes, [out], []

    def _infer_partial(self, in_shape: list, out: tuple | None) -> Any:
        hidden = self.num_hidden
        data, given_weight = in_shape[0], in_shape[1]
        weight = merge((hidden, 0), given_weight, "weight")
        bias = None if self.no_bias else merge((hidden,), in_shape[2], "bias")
        if data is None:  # MXNet: nothing is inferred before data's number of axes is known
            return None
        data = tuple(data)
        if self.flatten:
            out = merge(out, (data[0], hidden), "output")
            features = merge((product(data[1:]),), (weight[1],), "data's features and weight")[0]
            rest = _fill_one_unknown(data[1:], features)
            data = (out[0],) + rest
        else:
            out = merge(out, data[:-1] + (hidden,), "output")
            data = out[:-1] + merge(data[-1:], weight[1:], "data's last axis and weight")
            features = data[-1]
        weight = (hidden, features)
        return [data, weight] + ([] if self.no_bias else [bias]), [out], []

    def declare_backward_dependency(self, out_grad, in_data, out_data):
        """Head gradient, data and weight; not the output."""
        return [out_grad[0], in_data[0], in_data[1]]

    def _flat(self, x: Any) -> Any:
        return x.reshape(x.shape[0], -1) if self.flatten else x.reshape(-1, x.shape[-1])

    def forward(self, ctx, in_data, req, out_data, aux):
        """One GEMM, then the bias broadcast over rows."""
        xp = ctx.xp
        x, weight = self._flat(in_data[0]), in_data[1]
        out = out_data[0].reshape(x.shape[0], self.num_hidden)
        if req[0] == OpReqType.WRITE_TO and out.flags.c_contiguous:
            _product_into(xp, x, weight.T, out)
            if not self.no_bias:
                out += in_data[2]
        else:
            value = x @ weight.T
            if not self.no_bias:
                value += in_data[2]
            write(out, req[0], value)

    def backward(self, ctx, out_grad, in_data, out_data, req, in_grad, aux):
        """dx = dy @ W, dW = dy.T @ x, db = sum(dy) over rows."""
        xp = ctx.xp
        x, weight = self._flat(in_data[0]), in_data[1]
        g = out_grad[0].reshape(x.shape[0], self.num_hidden)
        if req[1] != OpReqType.NULL:
            _matmul_into(xp, in_grad[1], req[1], g.T, x)
        if not self.no_bias and req[2] != OpReqType.NULL:
            write(in_grad[2], req[2], g.sum(axis=0))
        if req[0] != OpReqType.NULL:
            _matmul_into(xp, in_grad[0].reshape(x.shape), req[0], g, weight)


def _fill_one_unknown(dims: tuple, total: int) -> tuple:
    """Fill the single unknown (0) dim of ``dims`` so that their product is ``total`` (if known)."""
    unknown = [i for i, dim in enumerate(dims) if dim == 0]
    if total == 0 or len(unknown) != 1:
        return tuple(dims)
    rest = product(dim for dim in dims if dim)
    if total % rest:
        raise ShapeError(f"{fmt_partial(dims)} cannot hold {total} elements")
    filled = list(dims)
    filled[unknown[0]] = total // rest
    return tuple(filled)


def _dot_shapes(lhs: tuple, rhs: tuple, ta: bool, tb: bool) -> tuple[int, int, tuple]:
    """Return (lhs contracted size, rhs contracted size, output shape) of MXNet's dot."""
    left_k = lhs[0] if ta else lhs[-1]
    left_rest = lhs[1:] if ta else lhs[:-1]
    right_k = rhs[-1] if tb else rhs[0]
    right_rest = rhs[:-1] if tb else rhs[1:]
    return left_k, right_k, (left_rest + right_rest) or (1,)


class _ProductProp(KernelProp):
    """Parameters and arguments shared by ``dot`` and ``batch_dot``."""

    transpose_a = Param(bool, default=False, doc="Transpose lhs before the product.")
    transpose_b = Param(bool, default=False, doc="Transpose rhs before the product.")
    forward_stype = Param(str, default=None, optional=True, doc="Ignored (sparse storage type).")

    def list_arguments(self):
        """``['lhs', 'rhs']``."""
        return ["lhs", "rhs"]


@register("dot")
class DotProp(_ProductProp):
    """Dot product: contract lhs's last axis (first with transpose_a) with rhs's first (last)."""

    @partial_shape
    def infer_shape(self, in_shape, out_shape=None):
        """Output = lhs's free axes followed by rhs's free axes (partial: both ways)."""
        lhs, rhs = in_shape
        if lhs is None or rhs is None:
            return None
        lhs, rhs = tuple(lhs), tuple(rhs)
        if not (is_known(lhs) and is_known(rhs)):
            return self._infer_partial(lhs, rhs, (out_shape or [None])[0])
        left_k, right_k, out = _dot_shapes(lhs, rhs, self.transpose_a, self.transpose_b)
        if left_k != right_k:
            raise self.shape_error(
                f"lhs {fmt(lhs)} (transpose_a={self.transpose_a}) contracts {left_k} but rhs "
                f"{fmt(rhs)} (transpose_b={self.transpose_b}) contracts {right_k}; the sizes must match"
            )
        return [lhs, rhs], [out], []

    def _infer_partial(self, lhs: tuple, rhs: tuple, out: tuple | None) -> Any:
        ta, tb = self.transpose_a, self.transpose_b
        left_k, right_k, _ = _dot_shapes(lhs, rhs, ta, tb)
        k = merge((left_k,), (right_k,), "contracted axes of lhs and rhs")[0]
        left_free = len(lhs) - 1
        free = merge(out, _dot_shapes(lhs, rhs, ta, tb)[2], "output")
        if len(lhs) + len(rhs) - 2 == 0:
            free = ()  # two vectors: the output is (1,)
        left_rest, right_rest = free[:left_free], free[left_free:]
        lhs = (k,) + left_rest if ta else left_rest + (k,)
        rhs = right_rest + (k,) if tb else (k,) + right_rest
        return [lhs, rhs], [free or (1,)], []

    def _as_matrices(self, lhs: Any, rhs: Any) -> tuple[Any, Any]:
        a = lhs.reshape(lhs.shape[0], -1).T if self.transpose_a else lhs.reshape(-1, lhs.shape[-1])
        b = rhs.reshape(-1, rhs.shape[-1]).T if self.transpose_b else rhs.reshape(rhs.shape[0], -1)
        return a, b

    def forward(self, ctx, in_data, req, out_data, aux):
        """One GEMM over the 2-D views."""
        a, b = self._as_matrices(in_data[0], in_data[1])
        _matmul_into(ctx.xp, out_data[0].reshape(a.shape[0], b.shape[1]), req[0], a, b)

    def backward(self, ctx, out_grad, in_data, out_data, req, in_grad, aux):
        """dA = dY @ B.T, dB = A.T @ dY (transposed back when the operand was)."""
        a, b = self._as_matrices(in_data[0], in_data[1])
        g = out_grad[0].reshape(a.shape[0], b.shape[1])
        grad_a = g @ b.T
        grad_b = a.T @ g
        if self.transpose_a:
            grad_a = grad_a.T
        if self.transpose_b:
            grad_b = grad_b.T
        write(in_grad[0], req[0], grad_a.reshape(in_grad[0].shape))
        write(in_grad[1], req[1], grad_b.reshape(in_grad[1].shape))


@register("batch_dot")
class BatchDotProp(_ProductProp):
    """Batched matrix product of ``(B, M, K)`` and ``(B, K, N)`` arrays (transposes per matrix)."""

    @partial_shape
    def infer_shape(self, in_shape, out_shape=None):
        """``(B, M, N)`` (partial: batch, M, N and K flow both ways)."""
        lhs, rhs = in_shape
        out = (out_shape or [None])[0]
        if lhs is None or rhs is None:
            return None
        lhs, rhs = tuple(lhs), tuple(rhs)
        if not (is_known(lhs) and is_known(rhs)) and len(lhs) == len(rhs) == 3:
            return self._infer_partial(lhs, rhs, out)
        if len(lhs) != 3 or len(rhs) != 3 or lhs[0] != rhs[0]:
            raise self.shape_error(
                f"needs two 3-D arrays with the same batch size, got {fmt(lhs)} and {fmt(rhs)}"
            )
        m, k1 = (lhs[2], lhs[1]) if self.transpose_a else (lhs[1], lhs[2])
        k2, n = (rhs[2], rhs[1]) if self.transpose_b else (rhs[1], rhs[2])
        if k1 != k2:
            raise self.shape_error(
                f"lhs {fmt(lhs)} contracts {k1} but rhs {fmt(rhs)} contracts {k2}"
            )
        return [lhs, rhs], [(lhs[0], m, n)], []

    def declare_backward_dependency(self, out_grad, in_data, out_data):
        """Head gradient and both operands."""
        return [out_grad[0], in_data[0], in_data[1]]

    def _infer_partial(self, lhs: tuple, rhs: tuple, out: tuple | None) -> Any:
        ta, tb = self.transpose_a, self.transpose_b
        m, k1 = (lhs[2], lhs[1]) if ta else (lhs[1], lhs[2])
        k2, n = (rhs[2], rhs[1]) if tb else (rhs[1], rhs[2])
        k = merge((k1,), (k2,), "contracted axes of lhs and rhs")[0]
        batch = merge((lhs[0],), (rhs[0],), "batch sizes of lhs and rhs")
        out = merge(out, batch + (m, n), "output")
        batch, m, n = out[0], out[1], out[2]
        lhs = (batch, k, m) if ta else (batch, m, k)
        rhs = (batch, n, k) if tb else (batch, k, n)
        return [lhs, rhs], [out], []

    def _operands(self, lhs: Any, rhs: Any) -> tuple[Any, Any]:
        a = lhs.transpose(0, 2, 1) if self.transpose_a else lhs
        b = rhs.transpose(0, 2, 1) if self.transpose_b else rhs
        return a, b

    def forward(self, ctx, in_data, req, out_data, aux):
        """One batched GEMM."""
        a, b = self._operands(in_data[0], in_data[1])
        write(out_data[0], req[0], ctx.xp.matmul(a, b))

    def backward(self, ctx, out_grad, in_data, out_data, req, in_grad, aux):
        """Batched dA = dY @ B^T, dB = A^T @ dY."""
        xp = ctx.xp
        a, b = self._operands(in_data[0], in_data[1])
        g = out_grad[0]
        grad_a = xp.matmul(g, b.transpose(0, 2, 1))
        grad_b = xp.matmul(a.transpose(0, 2, 1), g)
        write(in_grad[0], req[0], grad_a.transpose(0, 2, 1) if self.transpose_a else grad_a)
        write(in_grad[1], req[1], grad_b.transpose(0, 2, 1) if self.transpose_b else grad_b)


# ---------------------------------------------------------------------------
# shape operators
# ---------------------------------------------------------------------------


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
            data = _fill_one_unknown(data, product(out))
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
            data = data[:1] + _fill_one_unknown(data[1:], int(out[1]))
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
