"""Testing helpers: tolerant comparison, random arrays and numeric gradient checks.

Chapters: :mod:`.compare` (tolerances, comparison, random data),
:mod:`.gradient` (numeric gradient checks) and :mod:`.symbolic` (symbols
against expected values and across devices).

Idea (MXNet: python/mxnet/test_utils.py): an operator is trustworthy when its
forward matches a reference and its backward matches *central differences*
of its forward.  :func:`check_numeric_gradient` does the second for any
registered operator (library ops, SimpleOps, ``Custom`` ops) and, once an
executor exists, for a whole Symbol: it projects the outputs onto a random
direction ``proj`` so that ``f(x) = sum(out * proj)`` is a scalar, asks the
op's backward for ``df/dx`` with ``proj`` as the head gradient, and compares it
with ``(f(x + eps/2) - f(x - eps/2)) / eps`` element by element, in float64.

:func:`check_consistency` binds one Symbol on several contexts and dtypes
(CPU, virtual GPUs, float32 / float64) and checks that outputs and gradients
agree with the most precise run.

Rule: comparisons report the *worst* element — its index, both values, the
error and the tolerance — so a failure says where to look.  Default
tolerances depend on the dtype, as MXNet's ``default_rtols`` / ``default_atols``.

State kept: none (a ``numpy.random`` generator is drawn per call from ``seed``).

Example::

    >>> import numpy as np
    >>> from mxnb.testing import assert_almost_equal, check_numeric_gradient
    >>> assert_almost_equal(np.array([1.0, 2.0]), np.array([1.0, 2.0 + 1e-9]))
    >>> from mxnb import operator as op
    >>> def square(src, env, ret, req, run_ctx):
    ...     op.assign(ret, req, src * src)
    >>> def square_grad(out_grad, x, env, in_grad, req, run_ctx):
    ...     op.assign(in_grad, req, 2 * x * out_grad)
    >>> _ = op.simple_op('doc_square').set_function(square).set_gradient(
    ...     square_grad, uses=op.GradUses.INPUT)
    >>> grads = check_numeric_gradient('doc_square', [np.array([0.5, -1.0, 2.0])])
    >>> sorted(grads)
    ['data']
"""

from __future__ import annotations

from .compare import (
    ToleranceError,
    _to_numpy,  # noqa: F401 - mxnb.test_utils reads it
    almost_equal,
    assert_almost_equal,
    assert_exception,
    default_atol,
    default_context,
    default_rtol,
    rand_ndarray,
    rand_shape_2d,
    rand_shape_3d,
    rand_shape_nd,
    random_arrays,
    same,
)
from .gradient import check_numeric_gradient, numeric_grad
from .symbolic import check_consistency, check_symbolic_backward, check_symbolic_forward

__all__ = [
    "ToleranceError",
    "almost_equal",
    "assert_almost_equal",
    "assert_exception",
    "check_consistency",
    "check_numeric_gradient",
    "check_symbolic_backward",
    "check_symbolic_forward",
    "default_atol",
    "default_context",
    "default_rtol",
    "numeric_grad",
    "rand_ndarray",
    "rand_shape_2d",
    "rand_shape_3d",
    "rand_shape_nd",
    "random_arrays",
    "same",
]
