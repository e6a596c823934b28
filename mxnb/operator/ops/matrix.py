"""Matrix products: FullyConnected, dot and batch_dot.

Idea (MXNet: src/operator/tensor/dot*, fully_connected*): the products are
one BLAS call each (``xp.matmul`` writing straight into the output when
``req`` allows).  The shape operators that used to live beside them are in
:mod:`.views`.

Rules:
    * FullyConnected: ``weight`` is ``(num_hidden, in_features)``, ``bias``
      ``(num_hidden,)``; with ``flatten=True`` (default) data is ``(N, ...)``
      flattened to ``(N, in_features)``, else the last axis is contracted.
      Backward reads head gradient, data and weight — never the output;
    * dot / batch_dot: ``transpose_a`` / ``transpose_b`` transpose the
      operands first; batch_dot multiplies matrix by matrix along axis 0.

Example::

    >>> import numpy as np
    >>> from mxnb.operator import eager
    >>> a, b = np.ones((2, 3), np.float32), np.ones((3, 4), np.float32)
    >>> eager.run_forward('dot', [a, b])[0][0].shape
    (2, 4)
"""

from __future__ import annotations

import math
from typing import Any

from ..base import OpReqType
from ..param import Param
from ..partial import fill_one_unknown, is_known, merge, partial_shape, product
from ..registry import register
from ._common import KernelProp, fmt, write

__all__ = ["BatchDotProp", "DotProp", "FullyConnectedProp"]


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
            rest = fill_one_unknown(data[1:], features)
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
