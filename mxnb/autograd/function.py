"""User-defined differentiable functions: NDArray code with its own backward (``autograd.Function``).

Idea (MXNet: ``mx.autograd.Function``): a subclass defines ``forward`` and
``backward`` in NDArray code; a call runs forward unrecorded and, while
recording, becomes one node of the tape whose backward is one engine op
running the subclass's ``backward``.

Rule: an instance is called once (it keeps what ``save_for_backward`` saved).

State kept: the instance's saved tensors until its backward ran.

Example::

    >>> import mxnb as mx
    >>> class Square(mx.autograd.Function):
    ...     def forward(self, x):
    ...         self.save_for_backward(x)
    ...         return x * x
    ...     def backward(self, dy):
    ...         x, = self.saved_tensors
    ...         return 2 * x * dy
    >>> x = mx.nd.array([3.0]); x.attach_grad()
    >>> with mx.autograd.record():
    ...     y = Square()(x)
    >>> y.backward(); x.grad.asnumpy().tolist()
    [6.0]
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..operator.base import OpContext, OperatorProperty, OpReqType
from .recording import AutogradError, is_recording, is_training, pause
from .tape import _record_op

# ---------------------------------------------------------------------------
# user-defined differentiable functions
# ---------------------------------------------------------------------------


class Function:
    """A differentiable function written with NDArray code (MXNet: ``autograd.Function``).

    Subclass it, define ``forward(*inputs)`` and ``backward(*output_grads)``
    (returning one gradient per input), keep what backward needs with
    ``save_for_backward``; call an *instance* once.  Forward runs unrecorded;
    when recording, the call becomes one node whose backward is one engine op
    running your ``backward`` (which may push more ops and wait on them).

    Example::

        >>> import mxnb as mx
        >>> class Sigmoid(mx.autograd.Function):
        ...     def forward(self, x):
        ...         y = 1 / (1 + mx.nd.exp(-x))
        ...         self.save_for_backward(y)
        ...         return y
        ...     def backward(self, dy):
        ...         (y,) = self.saved_tensors
        ...         return dy * y * (1 - y)
        >>> x = mx.nd.array([0.0]); x.attach_grad()
        >>> with mx.autograd.record():
        ...     z = Sigmoid()(x)
        >>> z.backward(); x.grad.asnumpy()
        array([0.25], dtype=float32)
    """

    def __init__(self) -> None:
        self._used = False
        self.saved_tensors: tuple[Any, ...] = ()

    def save_for_backward(self, *args: Any) -> None:
        """Keep arrays for ``backward`` (in ``self.saved_tensors``)."""
        self.saved_tensors = args

    def forward(self, *inputs: Any) -> Any:
        """Compute the outputs (NDArray or tuple of NDArrays) from the inputs."""
        raise NotImplementedError(f"{type(self).__name__}.forward")

    def backward(self, *output_grads: Any) -> Any:
        """Return the gradient of each input (NDArray or tuple) from the output gradients."""
        raise NotImplementedError(f"{type(self).__name__}.backward")

    def __call__(self, *inputs: Any) -> Any:
        if self._used:
            raise AutogradError(
                f"{type(self).__name__}: each Function instance can be called once; "
                f"create a new instance per call ({type(self).__name__}()(x))"
            )
        self._used = True
        with pause(train_mode=is_training()):
            outputs = self.forward(*inputs)
        if not is_recording():
            return outputs
        results = list(outputs) if isinstance(outputs, (list, tuple)) else [outputs]
        prop = _FunctionProp(self, len(inputs), len(results))
        _record_op(prop, _FunctionOperator(self), list(inputs), results, [], is_training())
        return outputs


class _FunctionProp(OperatorProperty):
    """The property of one recorded :class:`Function` call (its backward reads out_grad only)."""

    def __init__(self, function: Function, num_inputs: int, num_outputs: int) -> None:
        super().__init__()
        self.function = function
        self.num_inputs = num_inputs
        self.count = num_outputs

    @property
    def op_name(self) -> str:
        """The Function subclass's name."""
        return type(self.function).__name__

    def list_arguments(self) -> list[str]:
        """``data0``, ``data1`` …"""
        return [f"data{i}" for i in range(self.num_inputs)]

    def list_outputs(self) -> list[str]:
        """``output0``, ``output1`` …"""
        return [f"output{i}" for i in range(self.count)]

    def declare_backward_dependency(self, out_grad: Any, in_data: Any, out_data: Any) -> list[Any]:
        """Only out_grad: the function keeps what else it needs in ``saved_tensors``."""
        return list(out_grad)


class _FunctionOperator:
    """Runs a Function's Python backward over NDArrays wrapping the raw gradient buffers."""

    def __init__(self, function: Function) -> None:
        self.function = function

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
        """Call ``function.backward`` and write its results as ``req`` says."""
        from ..context import cpu
        from ..ndarray import NDArray

        context = getattr(ctx.run_ctx, "ctx", None) or cpu()
        heads = [NDArray._wrap_raw(g, context) for g in out_grad]
        with pause(train_mode=ctx.is_train):
            grads = self.function.backward(*heads)
        grads = list(grads) if isinstance(grads, (list, tuple)) else [grads]
        if len(grads) != len(in_grad):
            raise AutogradError(
                f"{type(self.function).__name__}.backward returned {len(grads)} gradients for "
                f"{len(in_grad)} inputs"
            )
        targets = []
        for buffer, request, value in zip(in_grad, req, grads):
            if request == OpReqType.NULL or value is None:
                continue
            target = NDArray._wrap_raw(buffer, context)
            if request == OpReqType.ADD_TO:
                target[:] = target + value
            else:
                target[:] = value
            targets.append(target)
        for target in targets:
            target.wait_to_read()
