"""MXNet's legacy Python operators, ``mx.operator.PythonOp`` / ``NumpyOp``, on top of ``Custom``.

Idea (MXNet: python/mxnet/operator.py, the ``_Native`` operator): before
``CustomOp`` there was one object per operator that held everything —
``list_arguments``, ``list_outputs``, ``infer_shape`` (two lists: inputs and
outputs), ``forward(in_data, out_data)`` and ``backward(out_grad, in_data,
out_data, in_grad)`` working on **numpy arrays** — and ``get_symbol(*inputs)``
made a symbol of it.  Here ``get_symbol`` files the object once under a fresh
op type with :mod:`mxnb.operator.custom` (a property and a ``CustomOp``
that convert to numpy and back) and returns ``mx.sym.Custom`` of it, so it runs
as any custom op does: as one engine op, planned by the executor.

Rule: outputs and input gradients are written as the executor's ``req`` says
(an ``'add'`` request accumulates what the numpy code wrote); arrays the
numpy code does not write are zero.  The default op is the identity, its
gradient the head gradient.

State kept:
    PythonOp.need_top_grad_   whether backward reads the output gradient
    PythonOp._op_type         the op type it is filed under, once ``get_symbol`` ran

Example::

    >>> import mxnb as mx
    >>> class Square(mx.operator.NumpyOp):
    ...     def forward(self, in_data, out_data):
    ...         out_data[0][:] = in_data[0] ** 2
    >>> x = mx.sym.Variable('x')
    >>> exe = Square().get_symbol(x).bind(mx.cpu(), {'x': mx.nd.array([1.0, 3.0])})
    >>> exe.forward()[0].asnumpy().tolist()
    [1.0, 9.0]
"""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np

from .custom import CustomOp, CustomOpProp
from .registry import register

__all__ = ["NumpyOp", "PythonOp"]

_NUMBERS = itertools.count()


class PythonOp:
    """A legacy Python operator: names, shapes and numpy forward / backward on one object.

    Parameters
    ----------
    need_top_grad : bool
        Whether backward reads the output gradient (False for a loss layer).
    """

    def __init__(self, need_top_grad: bool = True) -> None:
        self.need_top_grad_ = need_top_grad
        self._op_type: str | None = None

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """Same as :meth:`get_symbol`."""
        return self.get_symbol(*args, **kwargs)

    def get_symbol(self, *args: Any, **kwargs: Any) -> Any:
        """A symbol running this op on the input symbols (``name=`` names the node)."""
        from .. import symbol

        return symbol.Custom(*args, op_type=self._file(), **kwargs)

    def forward(self, in_data: list[np.ndarray], out_data: list[np.ndarray]) -> None:
        """Write the outputs into ``out_data`` (default: the identity)."""
        out_data[0][:] = in_data[0]

    def backward(
        self,
        out_grad: list[np.ndarray],
        in_data: list[np.ndarray],
        out_data: list[np.ndarray],
        in_grad: list[np.ndarray],
    ) -> None:
        """Write the input gradients into ``in_grad`` (default: the head gradient)."""
        in_grad[0][:] = out_grad[0]

    def infer_shape(self, in_shape: list[Any]) -> tuple[list[Any], list[Any]]:
        """``(input shapes, output shapes)``; default: one output shaped like the first input."""
        return in_shape, [in_shape[0]]

    def list_outputs(self) -> list[str]:
        """Names of the outputs (default ``['output']``)."""
        return ["output"]

    def list_arguments(self) -> list[str]:
        """Names of the inputs (default ``['data']``)."""
        return ["data"]

    def need_top_grad(self) -> bool:
        """Whether backward reads the output gradient."""
        return self.need_top_grad_

    def _file(self) -> str:
        """Register this object as a custom op once; return its op type."""
        if self._op_type is None:
            self._op_type = f"_python_op_{type(self).__name__}_{next(_NUMBERS)}"
            register(self._op_type)(_property_of(self))
        return self._op_type


class NumpyOp(PythonOp):
    """A :class:`PythonOp` whose forward and backward read and write numpy arrays (MXNet's name)."""


def _property_of(python_op: PythonOp) -> type:
    """The CustomOpProp class that presents ``python_op`` to the ``Custom`` operator."""

    class _LegacyProp(CustomOpProp):
        def __init__(self) -> None:
            super().__init__(need_top_grad=python_op.need_top_grad())

        def list_arguments(self) -> list[str]:
            return python_op.list_arguments()

        def list_outputs(self) -> list[str]:
            return python_op.list_outputs()

        def infer_shape(self, in_shape: list[Any]) -> tuple[Any, Any, Any]:
            inputs, outputs = python_op.infer_shape(in_shape)
            return inputs, outputs, []

        def create_operator(self, ctx: Any, in_shapes: Any, in_dtypes: Any) -> CustomOp:
            return _NumpyKernel(python_op)

    return _LegacyProp


class _NumpyKernel(CustomOp):
    """Runs a PythonOp's numpy code on copies of the NDArrays and writes the results back."""

    def __init__(self, python_op: PythonOp) -> None:
        super().__init__()
        self.python_op = python_op

    def _write(self, targets: list[Any], req: list[str], values: list[np.ndarray]) -> None:
        for target, how, value in zip(targets, req, values):
            self.assign(target, how, value)

    def forward(self, is_train, req, in_data, out_data, aux):  # type: ignore[no-untyped-def]
        """numpy forward into zeroed buffers, then the buffers into the outputs."""
        outputs = [np.zeros(out.shape, dtype=out.dtype) for out in out_data]
        self.python_op.forward(in_data=[x.asnumpy() for x in in_data], out_data=outputs)
        self._write(out_data, req, outputs)

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):  # type: ignore[no-untyped-def]
        """numpy backward into zeroed buffers, then the buffers into the input gradients."""
        grads = [np.zeros(grad.shape, dtype=grad.dtype) for grad in in_grad]
        self.python_op.backward(
            out_grad=[g.asnumpy() for g in out_grad if g is not None],
            in_data=[x.asnumpy() for x in in_data],
            out_data=[y.asnumpy() for y in out_data],
            in_grad=grads,
        )
        self._write(in_grad, req, grads)
