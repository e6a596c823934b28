"""Shared plumbing of the operator library: one property class per op, kernels on it.

Idea: MXNet splits an op into an ``OperatorProperty`` (semantics) and an
``Operator`` (computation).  In the library most ops keep both halves on one
class, :class:`KernelProp`: it declares Params, shapes, dependencies and
in-place options, and also defines ``forward`` / ``backward``; its
``create_operator`` returns a thin :class:`PropOperator` that calls them.  The
executor and NDArray layers only ever see the standard interface.

Rule for kernels: arrays come from ``ctx.xp`` (numpy here, cupy on a real GPU)
and kernels call ``xp`` functions only, never ``numpy`` directly, so the same
code would run on a GPU (the cupy path has not run on hardware).  Every
write goes through ``req`` (:func:`write`), so WRITE_INPLACE and ADD_TO work,
and a kernel computes all values before writing any output, because an
output may share memory with an input when an in-place option was taken.

Example::

    >>> import numpy as np
    >>> from mxnb.operator.ops._common import reduce_to
    >>> reduce_to(np, np.ones((2, 3, 4)), (3, 1)).ravel().tolist()
    [8.0, 8.0, 8.0]
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np

from ..base import OpContext, Operator, OperatorProperty, OpReqType

__all__ = [
    "KernelProp",
    "PropOperator",
    "UfuncKernel",
    "broadcast_shape",
    "computes_into",
    "fmt",
    "normalize_axes",
    "normalize_axis",
    "reduce_to",
    "ufunc_into",
    "write",
]


class PropOperator(Operator):
    """The Operator of a :class:`KernelProp`: forwards calls to the property's kernels."""

    def __init__(self, prop: KernelProp) -> None:
        self.prop = prop

    def forward(self, ctx, in_data, req, out_data, aux):
        self.prop.forward(ctx, in_data, req, out_data, aux)

    def backward(self, ctx, out_grad, in_data, out_data, req, in_grad, aux):
        self.prop.backward(ctx, out_grad, in_data, out_data, req, in_grad, aux)

    def __repr__(self) -> str:
        return f"PropOperator({self.prop!r})"


class UfuncKernel(NamedTuple):
    """A forward that is exactly one ufunc call: ``ufunc(*operands, out)``.

    The operands are the input arrays in order; a scalar op adds ``scalar``,
    after its input or, with ``scalar_first``, before it (``scalar - data``).
    """

    ufunc: str  # the name of the ufunc in the array module (numpy or cupy)
    scalar: float | None = None  # the scalar operand of a scalar op
    scalar_first: bool = False  # the ufunc takes (scalar, data)


class KernelProp(OperatorProperty):
    """An OperatorProperty that also holds its forward / backward kernels."""

    def create_operator(self, ctx: Any) -> Operator:
        """Return the operator that runs this property's kernels."""
        return PropOperator(self)

    def forward_ufunc(
        self, in_types: Sequence[Any], out_types: Sequence[Any]
    ) -> UfuncKernel | None:
        """The one ufunc call that IS ``forward`` with req WRITE_TO for these dtypes, or None.

        The imperative invoke calls it once per plan: when it answers, a small
        op runs as that single call, with no OpContext and no dispatch through
        the operator (MXNet's imperative path likewise calls an op's FCompute
        directly).  It must store exactly what :meth:`forward` would: answer
        only where ``forward`` itself takes :func:`ufunc_into`.
        """
        return None

    def forward_fused(self, in_types: Sequence[Any], out_types: Sequence[Any]) -> Any:
        """The :class:`~mxnb.operator.fused.FusedMap` that IS ``forward`` for these dtypes, or None.

        Its inputs are the op's inputs in order and its one output the op's
        output: the executor's pointwise fusion (:mod:`mxnb.executor.fusion`)
        inlines its statements into a run's kernel.  Like :meth:`forward_ufunc`,
        it must store exactly what :meth:`forward` would.
        """
        return None

    def backward_fused(self, in_types: Sequence[Any], out_types: Sequence[Any]) -> Any:
        """The FusedMap that IS ``backward`` for these dtypes and how its names bind, or None.

        Returns ``(fused_map, binding)``: ``binding`` gives, for each of the map's
        inputs and outputs, the slot of :meth:`backward` it is and its position there
        (``('out_grad', 0)``, ``('in_data', 1)``, ``('out_data', 0)``, ``('in_grad', 0)``).  An input gradient whose req
        is NULL is left out by the caller; every other one is written as ``backward``
        would write it, every gradient computed before any is written.
        """
        return None

    def forward(
        self,
        ctx: OpContext,
        in_data: Sequence[Any],
        req: Sequence[OpReqType],
        out_data: Sequence[Any],
        aux: Sequence[Any],
    ) -> None:
        """Compute ``out_data`` (see :meth:`Operator.forward`)."""
        raise NotImplementedError(f"{self.op_name}.forward")

    def backward(
        self,
        ctx: OpContext,
        out_grad: Sequence[Any],
        in_data: Sequence[Any],
        out_data: Sequence[Any],
        req: Sequence[OpReqType],
        in_grad: Sequence[Any],
        aux: Sequence[Any],
    ) -> None:
        """Compute ``in_grad`` (see :meth:`Operator.backward`)."""
        raise NotImplementedError(f"{self.op_name}.backward: this operator is not differentiable")


def write(out: Any, req: OpReqType | int, value: Any) -> None:
    """Write ``value`` into ``out`` as ``req`` says (NULL / WRITE_TO / WRITE_INPLACE / ADD_TO).

    Like :func:`mxnb.operator.base.assign`, but skips the write when ``value``
    already *is* ``out`` (a kernel that computed straight into its output).
    """
    if req == OpReqType.NULL or out is None:
        return
    if req == OpReqType.ADD_TO:
        out[...] += value
    elif value is not out:
        out[...] = value


_WRITE_TO = OpReqType.WRITE_TO
_WRITE_INPLACE = OpReqType.WRITE_INPLACE
_DIRECT_REQS = (_WRITE_TO, _WRITE_INPLACE)


def ufunc_into(xp: Any, name: str, out: Any, req: OpReqType | int, *operands: Any) -> bool:
    """Compute ``xp.<name>(*operands)`` straight into ``out``; return False when it cannot.

    The fast path of elementwise kernels: with req WRITE_TO / WRITE_INPLACE and
    a floating-point ``out`` whose dtype every array operand shares, the ufunc
    writes into ``out`` (``out=``), so memory is touched once instead of
    computing a temporary and copying it.  The values are the same as
    ``write(out, req, f(...))`` would store: the ufunc, the dtype and the
    rounding are unchanged, and numpy resolves overlap between ``out`` and an
    operand (in-place ops) itself.  Anything else (ADD_TO, integer or mixed
    dtypes, whose results are cast on write) returns False: the caller takes
    the general :func:`write` path.
    """
    # Identity tests first: this runs once per elementwise op, small ones included.
    if req is not _WRITE_TO and req is not _WRITE_INPLACE and req not in _DIRECT_REQS:
        return False
    if out is None or not name:
        return False
    dtype = out.dtype
    if dtype.kind != "f":
        return False
    for operand in operands:
        other = getattr(operand, "dtype", None)  # None: a Python scalar
        if other is not None and other is not dtype and other != dtype:
            return False
    getattr(xp, name)(*operands, out=out)
    return True


def computes_into(req: OpReqType | int, out: Any, operand: Any) -> bool:
    """Whether a kernel may compute straight into ``out``: it is written (WRITE_TO or
    WRITE_INPLACE, not added to) and holds floats of ``operand``'s dtype."""
    return (
        req in _DIRECT_REQS
        and out is not None
        and out.dtype == operand.dtype
        and out.dtype.kind == "f"
    )


def ufunc_types_direct(in_types: Sequence[Any], out_types: Sequence[Any]) -> bool:
    """True when :func:`ufunc_into` computes straight into the output for these dtypes.

    That is one floating-point output whose dtype every input shares (with
    req WRITE_TO, which is what the imperative invoke asks).
    """
    if len(out_types) != 1:
        return False
    dtype = np.dtype(out_types[0])
    return dtype.kind == "f" and all(np.dtype(item) == dtype for item in in_types)


def reduce_to(xp: Any, value: Any, shape: Sequence[int]) -> Any:
    """Sum a broadcast gradient ``value`` back down to ``shape`` (leading axes and size-1 axes)."""
    shape = tuple(shape)
    if tuple(value.shape) == shape:
        return value
    extra = value.ndim - len(shape)
    if extra > 0:
        value = value.sum(axis=tuple(range(extra)))
    axes = tuple(
        i for i, (have, want) in enumerate(zip(value.shape, shape)) if want == 1 and have != 1
    )
    if axes:
        value = value.sum(axis=axes, keepdims=True)
    return value.reshape(shape)


def strided_view(xp: Any, array: Any, shape: Sequence[int], strides: Sequence[int]) -> Any:
    """A strided view of ``array`` (im2col's windows), read-only where numpy can mark it so.

    cupy's ``as_strided`` takes no ``writeable`` keyword, so the flag is set
    afterwards, on a numpy view only.
    """
    view = xp.lib.stride_tricks.as_strided(array, shape=tuple(shape), strides=tuple(strides))
    if isinstance(view, np.ndarray):
        view.flags.writeable = False
    return view


def normalize_axis(axis: int, ndim: int, op: str = "", what: str = "axis") -> int:
    """Return ``axis`` as a non-negative index, or raise a ParamError naming the op."""
    from ...base import ParamError

    if not -ndim <= axis < max(ndim, 1):
        raise ParamError(f"{op}: {what}={axis} is out of range for an input with {ndim} dimensions")
    return axis % max(ndim, 1)


def normalize_axes(
    axis: Sequence[int] | None, ndim: int, op: str = "", exclude: bool = False
) -> tuple:
    """Return the sorted axes a reduction covers (``None`` or ``()`` means every axis)."""
    if axis is None or len(axis) == 0:
        axes = tuple(range(ndim))
        return () if exclude else axes
    axes = tuple(sorted({normalize_axis(a, ndim, op) for a in axis}))
    if exclude:
        axes = tuple(a for a in range(ndim) if a not in axes)
    return axes


def broadcast_shape(op: OperatorProperty, lhs: tuple, rhs: tuple) -> tuple:
    """Return the broadcast of two shapes (right-aligned, MXNet's BinaryBroadcastShapeCompatible)."""
    ndim = max(len(lhs), len(rhs))
    left = (1,) * (ndim - len(lhs)) + tuple(lhs)
    right = (1,) * (ndim - len(rhs)) + tuple(rhs)
    out = []
    for a, b in zip(left, right):
        if a == b or b == 1:
            out.append(a)
        elif a == 1:
            out.append(b)
        else:
            raise op.shape_error(
                f"operands could not be broadcast together: lhs {fmt(lhs)} and rhs {fmt(rhs)}; "
                "each axis must match or be 1 in one of them (use broadcast_to or reshape)"
            )
    return tuple(out)


def fmt(shape: Sequence[int] | None) -> str:
    """Format a shape as MXNet prints it, ``(2, 3)``."""
    if shape is None:
        return "unknown"
    return str(tuple(int(s) for s in shape))


def dtype_of(value: Any) -> np.dtype:
    """Return the numpy dtype of a dtype-like value."""
    return np.dtype(value)
