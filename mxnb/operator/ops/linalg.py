"""Linear algebra, the part MXNet's unit tests need: ``gelqf`` (``mx.nd.linalg.gelqf``).

Idea (MXNet: src/operator/tensor/la_op*): ``gelqf`` factors ``A`` (m x n,
m <= n) into ``L Q``: ``L`` lower triangular (m x m), ``Q`` with orthonormal
rows (m x n).  It is the QR factorization of ``A^T`` transposed, with
LAPACK's signs (no sign normalization, as MXNet).  Leading axes are a batch.

Rule (backward, as MXNet's ``gelqf_backward``): with head gradients ``dQ``, ``dL``,
``M = L^T dL - dQ Q^T`` and ``dA = L^{-T} (dQ + sym(M) Q)``, where ``sym(M)``
copies M's lower triangle onto its upper one.  ``L`` must be invertible
(``A`` of full row rank).

State kept: none beyond the registry entry.

Example::

    >>> import numpy as np
    >>> from mxnb.operator import eager
    >>> q, l = eager.run_forward('_linalg_gelqf', [np.array([[3.0, 4.0]])])[0]
    >>> q.round(6).tolist(), l.round(6).tolist()
    ([[-0.6, -0.8]], [[-5.0]])
"""

from __future__ import annotations

from typing import Any

from ..registry import register
from ._common import KernelProp, fmt, write

__all__ = ["GelqfProp"]


def _lq(xp: Any, a: Any) -> tuple[Any, Any]:
    """Q and L of one matrix: ``A^T = Q' R'`` gives ``Q = Q'^T``, ``L = R'^T``."""
    q, r = xp.linalg.qr(a.T)
    return q.T, r.T


@register("_linalg_gelqf")
class GelqfProp(KernelProp):
    """LQ factorization ``A = L Q`` of each trailing m x n matrix (m <= n)."""

    def list_arguments(self) -> list[str]:
        """``A``."""
        return ["A"]

    def list_outputs(self) -> list[str]:
        """Q and L, named as MXNet names them."""
        return ["output0", "output1"]

    def infer_shape(self, in_shape):  # type: ignore[no-untyped-def]
        """Q like A; L (..., m, m); A needs at least 2 axes and no more rows than columns."""
        if in_shape[0] is None:
            return None
        a = tuple(in_shape[0])
        if len(a) < 2 or a[-2] > a[-1]:
            raise self.shape_error(
                f"A has shape {fmt(a)}; it needs at least 2 axes and no more rows than columns "
                "(m <= n); transpose a tall matrix first"
            )
        return [a], [a, a[:-1] + (a[-2],)], []

    def declare_backward_dependency(self, out_grad, in_data, out_data):  # type: ignore[no-untyped-def]
        """Both head gradients and both outputs."""
        return [*out_grad, *out_data]

    def forward(self, ctx, in_data, req, out_data, aux):  # type: ignore[no-untyped-def]
        """One LAPACK QR per matrix of the batch."""
        xp = ctx.xp
        a = in_data[0]
        m, n = a.shape[-2:]
        flat = a.reshape(-1, m, n)
        qs = xp.empty(flat.shape, dtype=a.dtype)
        ls = xp.empty((flat.shape[0], m, m), dtype=a.dtype)
        for i in range(flat.shape[0]):
            qs[i], ls[i] = _lq(xp, flat[i])
        write(out_data[0], req[0], qs.reshape(a.shape))
        write(out_data[1], req[1], ls.reshape(a.shape[:-1] + (m,)))

    def backward(self, ctx, out_grad, in_data, out_data, req, in_grad, aux):  # type: ignore[no-untyped-def]
        """dA = L^{-T} (dQ + sym(L^T dL - dQ Q^T) Q), batched."""
        xp = ctx.xp
        dq, dl = out_grad
        q, lower = out_data
        m = lower.shape[-1]
        m_matrix = lower.swapaxes(-1, -2) @ dl - dq @ q.swapaxes(-1, -2)
        low = xp.tril(m_matrix)
        symmetric = low + xp.tril(m_matrix, -1).swapaxes(-1, -2)
        rhs = dq + symmetric @ q
        flat_l = lower.reshape(-1, m, m)
        flat_rhs = rhs.reshape((-1,) + rhs.shape[-2:])
        grad = xp.empty(flat_rhs.shape, dtype=rhs.dtype)
        for i in range(flat_l.shape[0]):
            grad[i] = xp.linalg.solve(flat_l[i].T, flat_rhs[i])
        write(in_grad[0], req[0], grad.reshape(in_grad[0].shape))
