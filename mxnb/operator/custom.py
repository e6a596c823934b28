"""MXNet's Python custom-op API: ``CustomOp``, ``CustomOpProp`` and the ``Custom`` operator.

Idea (MXNet: python/mxnet/operator.py and src/operator/custom/custom.cc):
a user writes an operator in Python against NDArrays — ``forward`` and
``backward`` that may call ``asnumpy()``, ``mx.nd.array(...)`` and any
``mx.nd`` op — plus a property class with names, shape and type inference and
backward dependencies.  ``@mx.operator.register('name')`` files the property
under an *op type*; the registered operator ``Custom`` runs it:
``mx.nd.Custom(x, op_type='name')`` or ``mx.sym.Custom(data=x, op_type='name')``.
Every keyword argument other than ``op_type`` reaches the user's property
constructor **as a string**, as in MXNet.

Rule: the ``Custom`` operator is an ordinary engine op.  Its kernel wraps the
raw arrays it is handed into NDArrays (a fresh engine var each, sharing the
memory), calls the user's code — which pushes more engine ops from inside the
running one — and, before returning, waits for every output (and aux state,
and input gradient) the user wrote.  The engine lets a worker that waits run
other ready ops meanwhile, so this cannot deadlock.  An exception in user
code fails the op; it surfaces at the next wait with the op type named.

State kept:
    CustomOpProp.need_top_grad_   whether backward reads out_grad (default True)
    CustomProp.user_prop          the user's property, built from the string kwargs
    _CustomOperator.user_op       the user's CustomOp from ``create_operator``

Example::

    >>> import numpy as np, mxnb as mx
    >>> from mxnb import operator as op
    >>> class Twice(op.CustomOp):
    ...     def forward(self, is_train, req, in_data, out_data, aux):
    ...         self.assign(out_data[0], req[0], in_data[0] * 2)
    >>> @op.register('doc_twice_custom')
    ... class TwiceProp(op.CustomOpProp):
    ...     def create_operator(self, ctx, shapes, dtypes):
    ...         return Twice()
    >>> mx.nd.Custom(mx.nd.array([1, 2]), op_type='doc_twice_custom').asnumpy()
    array([2., 4.], dtype=float32)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ..base import OpError, ShapeError, as_shape
from .base import OpContext, Operator, OperatorProperty, OpReqType
from .param import Param, format_value
from .registry import get_custom, register

__all__ = ["CustomOp", "CustomOpError", "CustomOpProp", "CustomProp"]

_REQ_STRINGS = {
    OpReqType.NULL: "null",
    OpReqType.WRITE_TO: "write",
    OpReqType.WRITE_INPLACE: "inplace",
    OpReqType.ADD_TO: "add",
}


class CustomOpError(OpError):
    """A user's CustomOp or CustomOpProp raised; the message names the op type and the method."""


class CustomOp:
    """Base class of a Python operator's computation (MXNet: ``mx.operator.CustomOp``).

    Override ``forward`` and ``backward``; their arrays are NDArrays and
    ``req`` holds strings ``'null' | 'write' | 'inplace' | 'add'``.
    """

    def __init__(self) -> None:
        pass

    def forward(
        self,
        is_train: bool,
        req: list[str],
        in_data: list[Any],
        out_data: list[Any],
        aux: list[Any],
    ) -> None:
        """Compute ``out_data`` from ``in_data``; write with ``self.assign(out, req[i], value)``."""
        raise NotImplementedError(f"{type(self).__name__}.forward")

    def backward(
        self,
        req: list[str],
        out_grad: list[Any],
        in_data: list[Any],
        out_data: list[Any],
        in_grad: list[Any],
        aux: list[Any],
    ) -> None:
        """Compute ``in_grad`` from what ``declare_backward_dependency`` asked for."""
        raise NotImplementedError(f"{type(self).__name__}.backward")

    def assign(self, dst: Any, req: str | OpReqType, src: Any) -> None:
        """Write ``src`` into ``dst`` as ``req`` says: nothing, overwrite, or accumulate."""
        if isinstance(req, OpReqType):
            req = _REQ_STRINGS[req]
        if req == "null":
            return
        if req in ("write", "inplace"):
            dst[:] = src
        elif req == "add":
            dst[:] += src
        else:
            raise CustomOpError(
                f"CustomOp.assign: req must be 'null', 'write', 'inplace' or 'add', got {req!r}"
            )


class CustomOpProp:
    """Base class of a Python operator's properties (MXNet: ``mx.operator.CustomOpProp``).

    Parameters
    ----------
    need_top_grad : bool
        Whether backward reads the output gradient.  Loss layers pass False:
        the default ``declare_backward_dependency`` then omits ``out_grad``.
    """

    _is_custom_op_prop = True

    def __init__(self, need_top_grad: bool = True) -> None:
        self.need_top_grad_ = need_top_grad

    def infer_shape(self, in_shape: list[list[int]]) -> tuple[Any, Any, Any]:
        """Return ``(in_shapes, out_shapes, aux_shapes)``; default: outputs take input 0's shape."""
        return in_shape, (in_shape[0],) * len(self.list_outputs()), ()

    def infer_type(self, in_type: list[Any]) -> tuple[Any, Any, Any]:
        """Return ``(in_types, out_types, aux_types)``; default: all take input 0's dtype."""
        return (
            in_type,
            [in_type[0]] * len(self.list_outputs()),
            [in_type[0]] * len(self.list_auxiliary_states()),
        )

    def infer_storage_type(self, in_stype: list[str]) -> tuple[Any, Any, Any]:
        """Storage types (MXNet-compatible; mxnb arrays are dense, so all ``'default'``)."""
        return (
            in_stype,
            [in_stype[0]] * len(self.list_outputs()),
            [in_stype[0]] * len(self.list_auxiliary_states()),
        )

    def infer_storage_type_backward(
        self,
        ograd_stype: list[str],
        in_stype: list[str],
        out_stype: list[str],
        igrad_stype: list[str],
        aux_stype: list[str],
    ) -> tuple[Any, Any, Any, Any, Any]:
        """Backward storage types (MXNet-compatible; all ``'default'`` in mxnb)."""
        return (
            ["default"] * len(ograd_stype),
            ["default"] * len(in_stype),
            ["default"] * len(out_stype),
            ["default"] * len(igrad_stype),
            ["default"] * len(aux_stype),
        )

    def list_outputs(self) -> list[str]:
        """Names of the outputs (default ``['output']``)."""
        return ["output"]

    def list_arguments(self) -> list[str]:
        """Names of the inputs (default ``['data']``)."""
        return ["data"]

    def list_auxiliary_states(self) -> list[str]:
        """Names of auxiliary states (default none)."""
        return []

    def declare_backward_dependency(
        self, out_grad: Sequence[Any], in_data: Sequence[Any], out_data: Sequence[Any]
    ) -> list[Any]:
        """What backward reads: out_grad (if ``need_top_grad``), the inputs and the outputs."""
        deps: list[Any] = []
        if self.need_top_grad_:
            deps.extend(out_grad)
        deps.extend(in_data)
        deps.extend(out_data)
        return deps

    def create_operator(
        self, ctx: Any, in_shapes: list[list[int]], in_dtypes: list[Any]
    ) -> CustomOp:
        """Return the :class:`CustomOp` that computes this operator on ``ctx``."""
        return CustomOp()


@register("Custom")
class CustomProp(OperatorProperty):
    """Run a Python operator registered with ``@mx.operator.register(op_type)``.

    Every keyword argument besides ``op_type`` goes, as a string, to the
    registered property's constructor (MXNet's behaviour).
    """

    op_type = Param(str, doc="the name the CustomOpProp was registered under")

    def init(self, kwargs: dict[str, Any]) -> None:
        """Parse ``op_type`` and build the user's property from the other kwargs (as strings)."""
        kwargs = dict(kwargs)
        op_type = kwargs.pop("op_type", None)
        super().init({} if op_type is None else {"op_type": op_type})
        self.user_kwargs = {
            key: value if isinstance(value, str) else format_value(value)
            for key, value in kwargs.items()
        }
        prop_cls = get_custom(self.op_type)
        try:
            self.user_prop = prop_cls(**self.user_kwargs)
        except TypeError as exc:
            raise CustomOpError(
                f"Custom op_type={self.op_type!r}: {prop_cls.__name__}({self._kwargs_text()}) "
                f"failed: {exc}; its __init__ receives every keyword argument except op_type, "
                f"as strings"
            ) from exc

    def _kwargs_text(self) -> str:
        return ", ".join(f"{key}={value!r}" for key, value in self.user_kwargs.items())

    @property
    def op_name(self) -> str:
        """``Custom(op_type)`` for error messages."""
        return f"Custom({getattr(self, '_param_values', {}).get('op_type', '?')})"

    def get_params(self) -> dict[str, Any]:
        """``op_type`` plus the user's keyword arguments (strings)."""
        return {**super().get_params(), **self.user_kwargs}

    def get_params_str(self) -> dict[str, str]:
        """As :meth:`get_params`; every value is already a string."""
        return {**super().get_params_str(), **self.user_kwargs}

    def copy(self) -> CustomProp:
        """Return a new property with the same parameters and a fresh user property."""
        return type(self)(op_type=self.op_type, **self.user_kwargs)

    # -- names ----------------------------------------------------------------------
    def list_arguments(self) -> list[str]:
        """The user's argument names."""
        return list(self.user_prop.list_arguments())

    def list_outputs(self) -> list[str]:
        """The user's output names."""
        return list(self.user_prop.list_outputs())

    def list_auxiliary_states(self) -> list[str]:
        """The user's auxiliary state names."""
        return list(self.user_prop.list_auxiliary_states())

    # -- inference ----------------------------------------------------------------------
    def infer_shape(self, in_shape: list[tuple | None]) -> Any:
        """Ask the user's ``infer_shape``; unknown inputs are passed as ``[]`` (MXNet's ndim 0).

        Returns None when the user's function cannot work with the unknown
        shapes yet (it raised, or left an input shape empty).
        """
        unknown = any(shape is None for shape in in_shape)
        if unknown and in_shape and in_shape[0] is None:
            return None
        given = [list(shape) if shape is not None else [] for shape in in_shape]
        try:
            result = self.user_prop.infer_shape(given)
        except Exception as exc:
            if unknown:
                return None
            raise ShapeError(
                f"{self.op_name}: infer_shape raised {type(exc).__name__}: {exc} for input shapes "
                f"{', '.join(str(tuple(s)) for s in given)}"
            ) from exc
        in_shapes, out_shapes, aux_shapes = _three(result, self.op_name, "infer_shape")
        for kind, shapes, names in (
            ("input", in_shapes, self.list_arguments()),
            ("output", out_shapes, self.list_outputs()),
            ("aux", aux_shapes, self.list_auxiliary_states()),
        ):
            if len(shapes) != len(names):
                raise ShapeError(
                    f"{self.op_name}: infer_shape returned {len(shapes)} {kind} shapes for "
                    f"{len(names)} {kind}s {names}; return one shape per {kind}"
                )
        name = f"{self.op_name}: infer_shape result"
        in_shapes = [as_shape(shape, name) for shape in in_shapes]
        out_shapes = [as_shape(shape, name) for shape in out_shapes]
        aux_shapes = [as_shape(shape, name) for shape in aux_shapes]
        if unknown and any(len(shape) == 0 for shape in in_shapes):
            return None
        return in_shapes, out_shapes, aux_shapes

    def infer_type(self, in_type: list[np.dtype | None]) -> Any:
        """Ask the user's ``infer_type`` (unknown inputs take the first known dtype)."""
        known = next((dtype for dtype in in_type if dtype is not None), None)
        if known is None:
            return None
        given = [np.dtype(dtype if dtype is not None else known) for dtype in in_type]
        in_types, out_types, aux_types = _three(
            self.user_prop.infer_type(given), self.op_name, "infer_type"
        )
        return (
            [np.dtype(t) for t in in_types],
            [np.dtype(t) for t in out_types],
            [np.dtype(t) for t in aux_types],
        )

    # -- backward -------------------------------------------------------------------------
    def declare_backward_dependency(
        self, out_grad: Sequence[Any], in_data: Sequence[Any], out_data: Sequence[Any]
    ) -> list[Any]:
        """The user's declaration (default: out_grad if need_top_grad, inputs, outputs)."""
        return list(self.user_prop.declare_backward_dependency(out_grad, in_data, out_data))

    # -- the computation ---------------------------------------------------------------------
    def create_operator(self, ctx: Any) -> Operator:
        """Create the user's operator without shapes (prefer :meth:`create_operator_ex`)."""
        return self.create_operator_ex(ctx, [], [])

    def create_operator_ex(
        self, ctx: Any, in_shapes: Sequence[tuple], in_types: Sequence[np.dtype]
    ) -> Operator:
        """Call the user's ``create_operator(ctx, shapes, dtypes)`` and wrap the result."""
        if ctx is None:  # the eager runner has no device: custom ops run on the CPU there
            from ..context import cpu

            ctx = cpu()
        shapes = [list(shape) for shape in in_shapes]
        dtypes = [np.dtype(dtype) for dtype in in_types]
        user_op = self.user_prop.create_operator(ctx, shapes, dtypes)
        if not isinstance(user_op, CustomOp):
            raise CustomOpError(
                f"{self.op_name}: create_operator returned {type(user_op).__name__}, "
                f"not a CustomOp subclass"
            )
        return _CustomOperator(user_op, self.op_type)


def _three(result: Any, op_name: str, method: str) -> tuple[list, list, list]:
    """Unpack a user's ``(in, out, aux)`` answer; the aux part may be missing."""
    try:
        parts = list(result)
    except TypeError:
        raise CustomOpError(
            f"{op_name}: {method} must return (inputs, outputs, aux) lists; got {result!r}"
        ) from None
    if len(parts) == 2:
        parts.append([])
    if len(parts) != 3:
        raise CustomOpError(
            f"{op_name}: {method} must return (inputs, outputs, aux); got {result!r}"
        )
    return list(parts[0]), list(parts[1]), list(parts[2])


class _CustomOperator(Operator):
    """Runs a user's CustomOp over NDArrays wrapping the raw arrays the system hands over."""

    def __init__(self, user_op: CustomOp, op_type: str) -> None:
        self.user_op = user_op
        self.op_type = op_type

    def forward(
        self,
        ctx: OpContext,
        in_data: Sequence[Any],
        req: Sequence[OpReqType],
        out_data: Sequence[Any],
        aux: Sequence[Any],
    ) -> None:
        """Wrap, call the user's forward, wait for outputs and aux states."""
        context = _context_of(ctx)
        inputs = _wrap_all(in_data, context)
        outputs = _wrap_all(out_data, context)
        auxes = _wrap_all(aux, context)
        requests = [_REQ_STRINGS[OpReqType(r)] for r in req]
        given = list(outputs)
        versions = [None if array is None else array._var.version for array in given]
        self._call(
            "forward",
            lambda: self.user_op.forward(bool(ctx.is_train), requests, inputs, outputs, auxes),
            [*outputs, *auxes],
        )
        self._check_written("forward", "out_data", given, outputs, versions, requests)

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
        """Wrap, call the user's backward, wait for input gradients and aux states."""
        context = _context_of(ctx)
        grads_out = _wrap_all(out_grad, context)
        inputs = _wrap_all(in_data, context)
        outputs = _wrap_all(out_data, context)
        grads_in = _wrap_all(in_grad, context)
        auxes = _wrap_all(aux, context)
        requests = [_REQ_STRINGS[OpReqType(r)] for r in req]
        given = list(grads_in)
        versions = [None if array is None else array._var.version for array in given]
        self._call(
            "backward",
            lambda: self.user_op.backward(requests, grads_out, inputs, outputs, grads_in, auxes),
            [*grads_in, *auxes],
        )
        self._check_written("backward", "in_grad", given, grads_in, versions, requests)

    def _check_written(
        self,
        method: str,
        slot: str,
        given: list[Any],
        after: list[Any],
        versions: list[int | None],
        requests: list[str],
    ) -> None:
        """Every array the op was asked to write (req not 'null') must have been written.

        Two easy mistakes leave the system's buffer as it was (stale pool
        memory): never writing an output, and rebinding the list element
        (``out_data[0] = x``) instead of writing into the array.  Each write to
        the wrapped array is a pushed op on its var, so the var's version tells.
        Both are errors in forward.  In backward a rebinding is an error; an
        input gradient left unwritten (a label's, in MXNet's own softmax
        example) is set to zeros.
        """
        for index, (array, version, request) in enumerate(zip(given, versions, requests)):
            if array is None or request == "null":
                continue
            where = f"Custom op_type={self.op_type!r}: {type(self.user_op).__name__}.{method}"
            if index < len(after) and after[index] is not array:
                raise CustomOpError(
                    f"{where} replaced {slot}[{index}] with a new object instead of writing into "
                    f"it; write with self.assign({slot}[{index}], req[{index}], value)",
                    op_name=f"Custom({self.op_type})",
                )
            if array._var.version == version and method == "backward":
                # MXNet's own examples leave a label's gradient unwritten: it gets zeros here,
                # never the stale memory MXNet hands back.
                if request != "add":
                    array[:] = 0
                    array.wait_to_read()
                continue
            if array._var.version == version:
                raise CustomOpError(
                    f"{where} never wrote {slot}[{index}] (req {request!r}); write it with "
                    f"self.assign({slot}[{index}], req[{index}], value)",
                    op_name=f"Custom({self.op_type})",
                )

    def _call(self, method: str, run: Any, written: list[Any]) -> None:
        try:
            run()
            for array in written:
                if array is not None:
                    array.wait_to_read()
        except Exception as exc:
            raise CustomOpError(
                f"Custom op_type={self.op_type!r}: {type(self.user_op).__name__}.{method} raised "
                f"{type(exc).__name__}: {exc}",
                op_name=f"Custom({self.op_type})",
            ) from exc


def _context_of(ctx: OpContext) -> Any:
    """The device context the op runs on (cpu() when the runner gave no RunContext)."""
    from ..context import cpu

    run_ctx = ctx.run_ctx
    context = getattr(run_ctx, "ctx", None) or getattr(run_ctx, "context", None)
    return context if context is not None else cpu()


def _wrap_all(arrays: Sequence[Any] | None, context: Any) -> list[Any]:
    """Wrap raw arrays as NDArrays sharing their memory (None stays None: not declared)."""
    from ..ndarray import NDArray

    return [None if array is None else NDArray._wrap_raw(array, context) for array in arrays or []]
