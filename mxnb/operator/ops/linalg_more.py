"""More of ``mx.linalg``: gemm(2), inverse, syrk, syevd, trmm, diagonal / triangle packers.

Idea (MXNet: src/operator/tensor/la_op.cc): ``_linalg_gemm`` is
``alpha * op(A) op(B) + beta * C`` and ``_linalg_gemm2`` the same without C
(``op`` transposes the last two axes when asked); ``axis`` names the axis of
the matrix rows (the columns are the last axis), every other axis is a batch.
``_linalg_inverse`` inverts each matrix.  ``extractdiag`` / ``makediag`` move a
diagonal (``offset`` above or below the main one) between a matrix and a
vector; ``extracttrian`` / ``maketrian`` do the same for a triangle (lower
for a negative offset, packed row by row; upper for a positive one, packed
column by column; ``lower`` decides at offset 0).

Rule: gradients as MXNet (gemm dA' = alpha g B'^T, dB' = alpha A'^T g, dC = beta g;
inverse dA = -A^-T g A^-T; a packer's gradient is its inverse packer).

State kept: none beyond the registry entries.

Example::

    >>> import numpy as np
    >>> from mxnb.operator import eager
    >>> a = np.arange(9.0).reshape(3, 3)
    >>> eager.run_forward('_linalg_extracttrian', [a], {'offset': -1})[0][0].tolist()
    [3.0, 6.0, 7.0]
"""

from __future__ import annotations

import math

import numpy as np

from ..param import ANY, AXIS, Param
from ..registry import register
from ._common import KernelProp, write

__all__: list[str] = []


def _rows_last(x: np.ndarray, axis: int) -> np.ndarray:
    return np.moveaxis(x, axis, -2)


def _rows_back(x: np.ndarray, axis: int) -> np.ndarray:
    return np.moveaxis(x, -2, axis)


def _move(shape: tuple, source: int, destination: int) -> tuple:
    """``np.moveaxis`` on a shape tuple."""
    order = list(range(len(shape)))
    moved = order.pop(source % len(shape))
    order.insert(destination % len(shape), moved)
    return tuple(shape[i] for i in order)


def _t(x: np.ndarray) -> np.ndarray:
    return np.swapaxes(x, -1, -2)


class _GemmBase(KernelProp):
    transpose_a = Param(bool, default=False, doc="Use A transposed.")
    transpose_b = Param(bool, default=False, doc="Use B transposed.")
    alpha = Param(float, unbounded=ANY, default=1.0, doc="Scale of the product.")
    axis = Param(int, unbounded=AXIS, default=-2, doc="Axis of the matrix rows.")

    def _product_shape(self, a: tuple, b: tuple) -> tuple:
        a2, b2 = _move(a, self.axis, -2), _move(b, self.axis, -2)
        rows = a2[-1] if self.transpose_a else a2[-2]
        cols = b2[-2] if self.transpose_b else b2[-1]
        return _move(tuple(a2[:-2]) + (rows, cols), -2, self.axis)

    def _product(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        a, b = _rows_last(a, self.axis), _rows_last(b, self.axis)
        a = _t(a) if self.transpose_a else a
        b = _t(b) if self.transpose_b else b
        return self.alpha * np.matmul(a, b)

    def _product_grads(self, g: np.ndarray, a: np.ndarray, b: np.ndarray) -> tuple:
        g, a, b = (_rows_last(v, self.axis) for v in (g, a, b))
        ta, tb = (_t(a) if self.transpose_a else a), (_t(b) if self.transpose_b else b)
        da, db = self.alpha * np.matmul(g, _t(tb)), self.alpha * np.matmul(_t(ta), g)
        da = _t(da) if self.transpose_a else da
        db = _t(db) if self.transpose_b else db
        return _rows_back(da, self.axis), _rows_back(db, self.axis)


@register("_linalg_gemm")
class GemmProp(_GemmBase):
    """``alpha * op(A) op(B) + beta * C``."""

    beta = Param(float, unbounded=ANY, default=1.0, doc="Scale of C.")

    def list_arguments(self) -> list[str]:
        """A, B, C."""
        return ["A", "B", "C"]

    def infer_shape(self, in_shape):  # type: ignore[no-untyped-def]
        """The output has C's shape."""
        if any(s is None for s in in_shape):
            return None
        return [tuple(s) for s in in_shape], [tuple(in_shape[2])], []

    def forward(self, ctx, in_data, req, out_data, aux):  # type: ignore[no-untyped-def]
        """The scaled product plus beta C."""
        a, b, c = in_data
        out = _rows_back(self._product(a, b), self.axis) + self.beta * c
        write(out_data[0], req[0], out.astype(c.dtype))

    def backward(self, ctx, out_grad, in_data, out_data, req, in_grad, aux):  # type: ignore[no-untyped-def]
        """dA, dB from the product; dC = beta g."""
        a, b, c = in_data
        da, db = self._product_grads(out_grad[0], a, b)
        write(in_grad[0], req[0], da.astype(a.dtype))
        write(in_grad[1], req[1], db.astype(b.dtype))
        write(in_grad[2], req[2], (self.beta * out_grad[0]).astype(c.dtype))


@register("_linalg_gemm2")
class Gemm2Prop(_GemmBase):
    """``alpha * op(A) op(B)``."""

    def list_arguments(self) -> list[str]:
        """A, B."""
        return ["A", "B"]

    def infer_shape(self, in_shape):  # type: ignore[no-untyped-def]
        """The product's shape."""
        if any(s is None for s in in_shape):
            return None
        return [tuple(s) for s in in_shape], [self._product_shape(*in_shape)], []

    def forward(self, ctx, in_data, req, out_data, aux):  # type: ignore[no-untyped-def]
        """The scaled product."""
        a, b = in_data
        write(out_data[0], req[0], _rows_back(self._product(a, b), self.axis).astype(a.dtype))

    def backward(self, ctx, out_grad, in_data, out_data, req, in_grad, aux):  # type: ignore[no-untyped-def]
        """dA, dB."""
        da, db = self._product_grads(out_grad[0], *in_data)
        write(in_grad[0], req[0], da.astype(in_data[0].dtype))
        write(in_grad[1], req[1], db.astype(in_data[1].dtype))


@register("_linalg_inverse")
class InverseProp(KernelProp):
    """The inverse of each trailing square matrix."""

    def list_arguments(self) -> list[str]:
        """A."""
        return ["A"]

    def declare_backward_dependency(self, out_grad, in_data, out_data):  # type: ignore[no-untyped-def]
        """The head gradient and the inverse."""
        return [out_grad[0], out_data[0]]

    def forward(self, ctx, in_data, req, out_data, aux):  # type: ignore[no-untyped-def]
        """``np.linalg.inv``."""
        write(out_data[0], req[0], np.linalg.inv(in_data[0]).astype(in_data[0].dtype))

    def backward(self, ctx, out_grad, in_data, out_data, req, in_grad, aux):  # type: ignore[no-untyped-def]
        """-inv^T g inv^T."""
        inv_t = _t(out_data[0])
        write(in_grad[0], req[0], -np.matmul(np.matmul(inv_t, out_grad[0]), inv_t))


class _Packer(KernelProp):
    """Move a diagonal or a triangle between a matrix and a vector (packers' shared plumbing)."""

    offset = Param(int, unbounded=ANY, default=0, doc="Diagonal offset (+ above, - below).")
    lower = Param(bool, default=True, doc="At offset 0: the lower triangle (else the upper).")

    def list_arguments(self) -> list[str]:
        """A."""
        return ["A"]

    def declare_backward_dependency(self, out_grad, in_data, out_data):  # type: ignore[no-untyped-def]
        """The head gradient and the input (for its shape)."""
        return [out_grad[0], in_data[0]]

    def _index(self, n: int) -> tuple[np.ndarray, np.ndarray]:
        raise NotImplementedError

    def _n_from_vector(self, length: int) -> int:
        raise NotImplementedError

    def _pack(self, matrix: np.ndarray) -> np.ndarray:
        rows, cols = self._index(matrix.shape[-1])
        return matrix[..., rows, cols]

    def _unpack(self, vector: np.ndarray) -> np.ndarray:
        n = self._n_from_vector(vector.shape[-1])
        rows, cols = self._index(n)
        out = np.zeros(vector.shape[:-1] + (n, n), dtype=vector.dtype)
        out[..., rows, cols] = vector
        return out


class _DiagPacker(_Packer):
    def _index(self, n: int) -> tuple[np.ndarray, np.ndarray]:
        k = self.offset
        idx = np.arange(n - abs(k))
        return (idx, idx + k) if k >= 0 else (idx - k, idx)

    def _n_from_vector(self, length: int) -> int:
        return length + abs(self.offset)


class _TrianPacker(_Packer):
    def _upper(self) -> bool:
        return self.offset > 0 or (self.offset == 0 and not self.lower)

    def _index(self, n: int) -> tuple[np.ndarray, np.ndarray]:
        if self._upper():  # MXNet packs an upper triangle column by column
            cols, rows = np.tril_indices(n, -self.offset)
            return rows, cols
        return np.tril_indices(n, self.offset)

    def _n_from_vector(self, length: int) -> int:
        m = int(round((math.sqrt(8 * length + 1) - 1) / 2))
        return m + abs(self.offset)


def _extract(base: type) -> type:
    class Extract(base):  # type: ignore[valid-type, misc]
        def infer_shape(self, in_shape):  # type: ignore[no-untyped-def]
            """(..., n, n) -> (..., packed length)."""
            if in_shape[0] is None:
                return None
            shape = tuple(in_shape[0])
            return [shape], [shape[:-2] + (len(self._index(shape[-1])[0]),)], []

        def forward(self, ctx, in_data, req, out_data, aux):  # type: ignore[no-untyped-def]
            """Gather."""
            write(out_data[0], req[0], self._pack(in_data[0]))

        def backward(self, ctx, out_grad, in_data, out_data, req, in_grad, aux):  # type: ignore[no-untyped-def]
            """Scatter the head gradient back."""
            write(in_grad[0], req[0], self._unpack(out_grad[0]))

    return Extract


def _make(base: type) -> type:
    class Make(base):  # type: ignore[valid-type, misc]
        def infer_shape(self, in_shape):  # type: ignore[no-untyped-def]
            """(..., packed length) -> (..., n, n)."""
            if in_shape[0] is None:
                return None
            shape = tuple(in_shape[0])
            n = self._n_from_vector(shape[-1])
            return [shape], [shape[:-1] + (n, n)], []

        def forward(self, ctx, in_data, req, out_data, aux):  # type: ignore[no-untyped-def]
            """Scatter into zeros."""
            write(out_data[0], req[0], self._unpack(in_data[0]))

        def backward(self, ctx, out_grad, in_data, out_data, req, in_grad, aux):  # type: ignore[no-untyped-def]
            """Gather the head gradient."""
            write(in_grad[0], req[0], self._pack(out_grad[0]))

    return Make


register("_linalg_extractdiag")(type("ExtractDiagProp", (_extract(_DiagPacker),), {
    "__doc__": "The diagonal at ``offset`` of each trailing matrix."}))  # fmt: skip
register("_linalg_makediag")(type("MakeDiagProp", (_make(_DiagPacker),), {
    "__doc__": "A square matrix with the vector on the diagonal at ``offset``."}))  # fmt: skip
register("_linalg_extracttrian")(type("ExtractTrianProp", (_extract(_TrianPacker),), {
    "__doc__": "The triangle at ``offset`` of each trailing matrix, packed row by row."}))  # fmt: skip
register("_linalg_maketrian")(type("MakeTrianProp", (_make(_TrianPacker),), {
    "__doc__": "A square matrix with the packed triangle unpacked at ``offset``."}))  # fmt: skip


@register("_linalg_syrk")
class SyrkProp(KernelProp):
    """``alpha * A A^T`` (``transpose``: ``alpha * A^T A``)."""

    transpose = Param(bool, default=False, doc="Use A^T A.")
    alpha = Param(float, unbounded=ANY, default=1.0, doc="Scale.")

    def list_arguments(self) -> list[str]:
        """A."""
        return ["A"]

    def infer_shape(self, in_shape):  # type: ignore[no-untyped-def]
        """(..., m, m), or (..., n, n) transposed."""
        if in_shape[0] is None:
            return None
        a = tuple(in_shape[0])
        n = a[-1] if self.transpose else a[-2]
        return [a], [a[:-2] + (n, n)], []

    def declare_backward_dependency(self, out_grad, in_data, out_data):  # type: ignore[no-untyped-def]
        """The head gradient and A."""
        return [out_grad[0], in_data[0]]

    def forward(self, ctx, in_data, req, out_data, aux):  # type: ignore[no-untyped-def]
        """The scaled Gram matrix."""
        a = in_data[0]
        out = np.matmul(_t(a), a) if self.transpose else np.matmul(a, _t(a))
        write(out_data[0], req[0], (self.alpha * out).astype(a.dtype))

    def backward(self, ctx, out_grad, in_data, out_data, req, in_grad, aux):  # type: ignore[no-untyped-def]
        """alpha (g + g^T) A, or alpha A (g + g^T) transposed."""
        a, g = in_data[0], out_grad[0]
        sym = g + _t(g)
        grad = np.matmul(a, sym) if self.transpose else np.matmul(sym, a)
        write(in_grad[0], req[0], self.alpha * grad)


@register("_linalg_syevd")
class SyevdProp(KernelProp):
    """Eigen-decomposition of symmetric matrices: ``A = U^T diag(L) U``, L ascending.

    Rows of U are the eigenvectors, each signed so that its largest-magnitude
    element is positive (MXNet's convention).
    """

    def list_arguments(self) -> list[str]:
        """A."""
        return ["A"]

    def list_outputs(self) -> list[str]:
        """U and L."""
        return ["output0", "output1"]

    def infer_shape(self, in_shape):  # type: ignore[no-untyped-def]
        """U like A, L (..., n)."""
        if in_shape[0] is None:
            return None
        a = tuple(in_shape[0])
        return [a], [a, a[:-1]], []

    def declare_backward_dependency(self, out_grad, in_data, out_data):  # type: ignore[no-untyped-def]
        """Both head gradients and both outputs."""
        return [out_grad[0], out_grad[1], out_data[0], out_data[1]]

    def forward(self, ctx, in_data, req, out_data, aux):  # type: ignore[no-untyped-def]
        """``np.linalg.eigh`` in float64, rows signed by their largest element."""
        lam, vec = np.linalg.eigh(in_data[0].astype(np.float64))
        u = _t(vec)
        big = np.take_along_axis(u, np.abs(u).argmax(axis=-1)[..., None], axis=-1)
        u = np.where(big < 0, -u, u)
        write(out_data[0], req[0], u.astype(in_data[0].dtype))
        write(out_data[1], req[1], lam.astype(in_data[0].dtype))

    def backward(self, ctx, out_grad, in_data, out_data, req, in_grad, aux):  # type: ignore[no-untyped-def]
        """dA = U^T (diag(dL) + F) U, F_ij = (T_ij - T_ji) / (2 (L_i - L_j)), T = dU U^T."""
        gu, gl = out_grad[0].astype(np.float64), out_grad[1].astype(np.float64)
        u, lam = out_data[0].astype(np.float64), out_data[1].astype(np.float64)
        temp = np.matmul(gu, _t(u))
        diff = lam[..., :, None] - lam[..., None, :]
        n = lam.shape[-1]
        off = ~np.eye(n, dtype=bool)
        middle = np.zeros_like(temp)
        middle[..., off] = ((temp - _t(temp)) / np.where(off, 2 * diff, 1))[..., off]
        idx = np.arange(n)
        middle[..., idx, idx] = gl
        write(in_grad[0], req[0], np.matmul(np.matmul(_t(u), middle), u))


@register("_linalg_trmm")
class TrmmProp(KernelProp):
    """``alpha * op(A) B`` (``rightside``: ``alpha * B op(A)``), A triangular (``lower``)."""

    transpose = Param(bool, default=False, doc="Use A transposed.")
    rightside = Param(bool, default=False, doc="Multiply from the right.")
    lower = Param(bool, default=True, doc="A is lower triangular (else upper).")
    alpha = Param(float, unbounded=ANY, default=1.0, doc="Scale.")

    def list_arguments(self) -> list[str]:
        """A, B."""
        return ["A", "B"]

    def infer_shape(self, in_shape):  # type: ignore[no-untyped-def]
        """The output has B's shape."""
        if any(s is None for s in in_shape):
            return None
        return [tuple(s) for s in in_shape], [tuple(in_shape[1])], []

    def _tri(self, a: np.ndarray) -> np.ndarray:
        return np.tril(a) if self.lower else np.triu(a)

    def forward(self, ctx, in_data, req, out_data, aux):  # type: ignore[no-untyped-def]
        """Only A's triangle takes part."""
        a, b = in_data
        op = _t(self._tri(a)) if self.transpose else self._tri(a)
        out = np.matmul(b, op) if self.rightside else np.matmul(op, b)
        write(out_data[0], req[0], (self.alpha * out).astype(b.dtype))

    def backward(self, ctx, out_grad, in_data, out_data, req, in_grad, aux):  # type: ignore[no-untyped-def]
        """dB through op(A); dA the outer product, transposed back and kept to the triangle."""
        a, b = in_data
        g = self.alpha * out_grad[0]
        op = _t(self._tri(a)) if self.transpose else self._tri(a)
        if self.rightside:
            db, dop = np.matmul(g, _t(op)), np.matmul(_t(b), g)
        else:
            db, dop = np.matmul(_t(op), g), np.matmul(g, _t(b))
        write(in_grad[0], req[0], self._tri(_t(dop) if self.transpose else dop))
        write(in_grad[1], req[1], db)
