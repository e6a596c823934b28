"""SimpleOp: register one unary or binary function, get the NDArray and the symbolic operator.

Idea (MXNet: ``MXNET_REGISTER_SIMPLE_OP`` and ``SimpleOpRegEntry`` in
include/mxnet/operator_util.h): most operators are a function of one or two
arrays plus a scalar.  Writing a full :class:`~mxnb.operator.base.OperatorProperty`
for each is ceremony.  ``simple_op(name)`` returns a builder; each setter
records one fact and *re-registers* an ``OperatorProperty`` subclass under
``name``, so ``mx.nd.<name>`` and ``mx.sym.<name>`` exist as soon as a
function is set, and re-running a notebook cell replaces the definition.

Rule: what the gradient declares it ``uses`` is the op's backward dependency.
``GradUses.NONE`` (out_grad only) lets the memory planner free the input and
the output right after forward; ``OUTPUT`` keeps the output alive; ``INPUT``
keeps the inputs alive.  The in-place options become
``forward_inplace_option`` / ``backward_inplace_option``.

Kernel signatures (arity is read from the function's signature: five
positional parameters make a unary op, six a binary one; or pass
``num_inputs=``)::

    unary  forward   fn(src, env, ret, req, run_ctx)
    binary forward   fn(lhs, rhs, env, ret, req, run_ctx)
    unary  gradient  NONE:   fn(out_grad, env, in_grad, req, run_ctx)
                     OUTPUT: fn(out_grad, out_value, env, in_grad, req, run_ctx)
                     INPUT:  fn(out_grad, in_data0, env, in_grad, req, run_ctx)
    binary gradient  NONE:   fn(out_grad, env, lhs_grad, rhs_grad, req_lhs, req_rhs, run_ctx)
                     OUTPUT: fn(out_grad, out_value, env, lhs_grad, rhs_grad, req_lhs, req_rhs, run_ctx)
                     INPUT:  fn(out_grad, lhs, rhs, env, lhs_grad, rhs_grad, req_lhs, req_rhs, run_ctx)

Arrays are raw arrays of the context's array module (``env.xp``: numpy on the
CPU and on virtual GPUs, cupy on a real GPU), so ``np.where`` in a kernel works
on the CPU; write ``env.xp.where`` to run on both.  ``req`` is an
:class:`~mxnb.operator.base.OpReqType`; write results with :func:`~mxnb.operator.base.assign`.
``env`` is an :class:`EnvArguments` (``scalar``, ``kwargs``, ``resource``, ``xp``).

State kept (per builder):
    name                 the registered operator name
    function, num_inputs the forward kernel and its arity (1 or 2)
    forward_inplace      a SimpleOpInplace for forward
    gradient, uses       the gradient kernel and what it reads (GradUses)
    backward_inplace     a SimpleOpInplace for backward
    shape_function       fn(shape, env) or fn(lhs_shape, rhs_shape, env) -> shape
    enable_scalar / enable_kwargs / resources / doc

Example::

    >>> from mxnb import operator as op
    >>> def twice(src, env, ret, req, run_ctx):
    ...     op.assign(ret, req, 2 * src)
    >>> builder = op.simple_op('doc_twice').set_function(twice)
    >>> prop = op.registry.get('doc_twice').create_property()
    >>> prop.list_arguments(), prop.infer_shape([(2, 3)])[1]
    (['data'], [(2, 3)])
"""

from __future__ import annotations

import enum
import inspect
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..base import NotSupportedError, ParamError, as_shape
from .base import REQUIRED, OpContext, Operator, OperatorProperty, OpReqType, ResourceRequest
from .param import Param
from .partial import is_known, partial_shape
from .registry import register

__all__ = ["EnvArguments", "GradUses", "SimpleOpBuilder", "SimpleOpInplace", "simple_op"]


class SimpleOpInplace(enum.Enum):
    """Which memory a SimpleOp may share (MXNet: ``SimpleOpInplaceOption``)."""

    NONE = "none"  # kNoInplace
    IN_OUT = "in_out"  # kInplaceInOut: unary forward, the output may take the input's memory
    OUT_IN = "out_in"  # kInplaceOutIn: unary backward, in_grad may take out_grad's memory
    LHS_OUT = "lhs_out"  # kInplaceLhsOut: binary forward, the output may take lhs's memory
    OUT_LHS = "out_lhs"  # kInplaceOutLhs: binary backward, lhs_grad may take out_grad's memory


class GradUses(enum.Enum):
    """What a SimpleOp gradient reads besides out_grad (MXNet: the gradient function type)."""

    NONE = "none"  # out_grad only (UnaryGradFunctionT0 / BinaryGradFunctionT0)
    OUTPUT = "output"  # out_grad and the forward output (UnaryGradFunctionT1)
    INPUT = "input"  # out_grad and the forward inputs (UnaryGradFunctionT2 / BinaryGradFunctionT1)


# Allowed in-place options by (arity, direction), as MXNet's registration checks them.
_ALLOWED_INPLACE = {
    (1, "forward"): (SimpleOpInplace.NONE, SimpleOpInplace.IN_OUT),
    (2, "forward"): (SimpleOpInplace.NONE, SimpleOpInplace.LHS_OUT),
    (1, "backward"): (SimpleOpInplace.NONE, SimpleOpInplace.OUT_IN),
    (2, "backward"): (SimpleOpInplace.NONE, SimpleOpInplace.OUT_LHS),
}


@dataclass
class EnvArguments:
    """The extra arguments a SimpleOp kernel receives (MXNet: ``EnvArguments``).

    Attributes
    ----------
    scalar : float or None
        The ``scalar`` parameter when ``set_enable_scalar(True)``.
    kwargs : dict of str to str
        The keyword arguments, as strings, when ``set_enable_kwargs(True)``.
    resource : list
        The resources asked for with ``set_resource_request``, in order.
    xp : module
        The array module of the arrays (numpy or cupy).
    """

    scalar: float | None = None
    kwargs: dict[str, str] = field(default_factory=dict)
    resource: list[Any] = field(default_factory=list)
    xp: Any = np


@dataclass(frozen=True)
class _Spec:
    """A frozen snapshot of a builder: what one registered property class computes."""

    name: str
    function: Callable[..., None]
    num_inputs: int
    forward_inplace: SimpleOpInplace
    gradient: Callable[..., None] | None
    uses: GradUses
    backward_inplace: SimpleOpInplace
    shape_function: Callable[..., Any] | None
    enable_scalar: bool
    enable_kwargs: bool
    resources: tuple[ResourceRequest, ...]


def _count_positional(fn: Callable[..., Any]) -> int | None:
    """Return how many positional parameters ``fn`` takes, None for ``*args``."""
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError):
        return None
    count = 0
    for parameter in signature.parameters.values():
        if parameter.kind == parameter.VAR_POSITIONAL:
            return None
        if parameter.kind in (parameter.POSITIONAL_ONLY, parameter.POSITIONAL_OR_KEYWORD):
            count += 1
    return count


class SimpleOpBuilder:
    """Collects a SimpleOp's definition; every setter re-registers the operator.

    Obtain one with :func:`simple_op`.  Setters return the builder, so calls chain.
    """

    def __init__(self, name: str) -> None:
        self.name = name
        self.function: Callable[..., None] | None = None
        self.num_inputs = 1
        self.forward_inplace = SimpleOpInplace.NONE
        self.gradient: Callable[..., None] | None = None
        self.uses = GradUses.NONE
        self.backward_inplace = SimpleOpInplace.NONE
        self.shape_function: Callable[..., Any] | None = None
        self.enable_scalar = False
        self.enable_kwargs = False
        self.resources: tuple[ResourceRequest, ...] = ()
        self.doc = ""
        self.prop_cls: type[OperatorProperty] | None = None

    # -- setters ------------------------------------------------------------------
    def set_function(
        self,
        fn: Callable[..., None],
        inplace: SimpleOpInplace = SimpleOpInplace.NONE,
        num_inputs: int | None = None,
    ) -> SimpleOpBuilder:
        """Set the forward kernel; ``num_inputs`` (1 or 2) defaults to what the signature says.

        A function of five positional parameters is unary ``fn(src, env, ret,
        req, run_ctx)``; six make it binary ``fn(lhs, rhs, env, ret, req, run_ctx)``.
        """
        if num_inputs is None:
            count = _count_positional(fn)
            if count not in (5, 6):
                raise ParamError(
                    f"simple_op {self.name!r}: cannot tell whether {getattr(fn, '__name__', fn)!r} "
                    f"is unary (src, env, ret, req, run_ctx) or binary (lhs, rhs, env, ret, req, "
                    f"run_ctx) from its signature; pass num_inputs=1 or num_inputs=2"
                )
            num_inputs = count - 4
        if num_inputs not in (1, 2):
            raise ParamError(
                f"simple_op {self.name!r}: num_inputs must be 1 or 2, got {num_inputs!r}"
            )
        self._check_inplace(inplace, num_inputs, "forward")
        self.function = fn
        self.num_inputs = num_inputs
        self.forward_inplace = inplace
        if self.gradient is not None:
            self._check_inplace(self.backward_inplace, num_inputs, "backward")
        return self._register()

    def set_gradient(
        self,
        fn: Callable[..., None],
        inplace: SimpleOpInplace = SimpleOpInplace.NONE,
        uses: GradUses = GradUses.NONE,
    ) -> SimpleOpBuilder:
        """Set the gradient kernel and what it reads (``uses``); see the module docstring."""
        if not isinstance(uses, GradUses):
            raise ParamError(
                f"simple_op {self.name!r}: uses must be GradUses.NONE, OUTPUT or INPUT, got {uses!r}"
            )
        if self.function is not None:
            self._check_inplace(inplace, self.num_inputs, "backward")
        self.gradient = fn
        self.uses = uses
        self.backward_inplace = inplace
        return self._register()

    def set_shape_function(self, fn: Callable[..., Any]) -> SimpleOpBuilder:
        """Set ``fn(shape, env) -> out_shape`` (binary: ``fn(lhs_shape, rhs_shape, env)``)."""
        self.shape_function = fn
        return self._register()

    def set_enable_scalar(self, enable: bool = True) -> SimpleOpBuilder:
        """Give the op a required float parameter ``scalar`` (``env.scalar``)."""
        if enable and self.enable_kwargs:
            raise ParamError(
                f"simple_op {self.name!r}: enable_scalar and enable_kwargs are exclusive (as in "
                f"MXNet); pass the scalar as a keyword argument instead, or call "
                f"set_enable_kwargs(False) first"
            )
        self.enable_scalar = bool(enable)
        return self._register()

    def set_enable_kwargs(self, enable: bool = True) -> SimpleOpBuilder:
        """Accept any keyword arguments; the kernel sees them as strings in ``env.kwargs``."""
        if enable and self.enable_scalar:
            raise ParamError(
                f"simple_op {self.name!r}: enable_kwargs and enable_scalar are exclusive (as in "
                f"MXNet); read the scalar from env.kwargs instead, or call "
                f"set_enable_scalar(False) first"
            )
        self.enable_kwargs = bool(enable)
        return self._register()

    def set_resource_request(
        self, request: ResourceRequest | Sequence[ResourceRequest]
    ) -> SimpleOpBuilder:
        """Ask for resources (random, temp space) in forward and backward (``env.resource``)."""
        requests = (request,) if isinstance(request, ResourceRequest) else tuple(request)
        for item in requests:
            if not isinstance(item, ResourceRequest):
                raise ParamError(
                    f"simple_op {self.name!r}: resource requests are ResourceRequest.RANDOM or "
                    f"ResourceRequest.TEMP_SPACE, got {item!r}"
                )
        self.resources = requests
        return self._register()

    def describe(self, doc: str) -> SimpleOpBuilder:
        """Set the docstring shown by ``help(mx.nd.<name>)``."""
        self.doc = doc
        return self._register()

    # -- registration ----------------------------------------------------------------
    def _check_inplace(self, option: SimpleOpInplace, num_inputs: int, direction: str) -> None:
        allowed = _ALLOWED_INPLACE[(num_inputs, direction)]
        if option not in allowed:
            kind = "unary" if num_inputs == 1 else "binary"
            names = ", ".join(f"SimpleOpInplace.{item.name}" for item in allowed)
            raise ParamError(
                f"simple_op {self.name!r}: {option} is not an in-place option of a {kind} "
                f"{direction}; use one of {names}"
            )

    def _register(self) -> SimpleOpBuilder:
        if self.function is None:
            return self  # nothing to compute yet: registered once set_function is called
        spec = _Spec(
            name=self.name,
            function=self.function,
            num_inputs=self.num_inputs,
            forward_inplace=self.forward_inplace,
            gradient=self.gradient,
            uses=self.uses,
            backward_inplace=self.backward_inplace,
            shape_function=self.shape_function,
            enable_scalar=self.enable_scalar,
            enable_kwargs=self.enable_kwargs,
            resources=self.resources,
        )
        namespace: dict[str, Any] = {
            "_spec": spec,
            "__doc__": self.doc or f"The SimpleOp {self.name!r}.",
            "__module__": __name__,
        }
        if spec.enable_scalar:
            namespace["scalar"] = Param(float, default=REQUIRED, doc="the scalar operand")
        cls = type(f"SimpleOp_{self.name}", (_SimpleOpProp,), namespace)
        self.prop_cls = register(self.name)(cls)  # bumps registry.generation: caches refresh
        return self

    def __repr__(self) -> str:
        kind = "binary" if self.num_inputs == 2 else "unary"
        return f"<simple_op {self.name!r} {kind}, gradient uses {self.uses.name}>"


def simple_op(name: str) -> SimpleOpBuilder:
    """Start defining the SimpleOp ``name`` (MXNet: ``MXNET_REGISTER_SIMPLE_OP(name, xpu)``).

    Example::

        >>> from mxnb import operator as op
        >>> def negate(src, env, ret, req, run_ctx):
        ...     op.assign(ret, req, -src)
        >>> def negate_grad(out_grad, env, in_grad, req, run_ctx):
        ...     op.assign(in_grad, req, -out_grad)
        >>> b = (op.simple_op('doc_negate').set_function(negate, op.SimpleOpInplace.IN_OUT)
        ...      .set_gradient(negate_grad, op.SimpleOpInplace.OUT_IN))
        >>> b
        <simple_op 'doc_negate' unary, gradient uses NONE>
    """
    return SimpleOpBuilder(name)


class _SimpleOpProp(OperatorProperty):
    """The OperatorProperty a SimpleOp builder registers (one subclass per registration)."""

    _spec: _Spec

    # -- parameters --------------------------------------------------------------------
    def init(self, kwargs: dict[str, Any]) -> None:
        """Parse ``scalar``; with kwargs enabled keep every keyword argument as a string."""
        if self._spec.enable_kwargs:
            self._extra_kwargs = {key: _to_string(value) for key, value in kwargs.items()}
            super().init({})
            return
        self._extra_kwargs = {}
        super().init(kwargs)

    def get_params(self) -> dict[str, Any]:
        """Return ``scalar`` (when enabled) and the free keyword arguments."""
        return {**super().get_params(), **self._extra_kwargs}

    def get_params_str(self) -> dict[str, str]:
        """Return the parameters as strings, as symbol JSON stores them."""
        return {**super().get_params_str(), **self._extra_kwargs}

    def env(self, requested: Sequence[Any] = (), xp: Any = np) -> EnvArguments:
        """Return the EnvArguments a kernel of this op receives."""
        scalar = self._param_values.get("scalar") if self._spec.enable_scalar else None
        return EnvArguments(
            scalar=scalar, kwargs=dict(self._extra_kwargs), resource=list(requested), xp=xp
        )

    # -- names ---------------------------------------------------------------------------
    def list_arguments(self) -> list[str]:
        """``['data']`` for a unary op, ``['lhs', 'rhs']`` for a binary one."""
        return ["data"] if self._spec.num_inputs == 1 else ["lhs", "rhs"]

    # -- inference -------------------------------------------------------------------------
    @partial_shape
    def infer_shape(
        self, in_shape: list[tuple | None], out_shape: list[tuple | None] | None = None
    ) -> Any:
        """Use the shape function; default: the output (and the other operand) takes the input's shape.

        Without a shape function known dimensions flow both ways (partial
        shapes); a shape function is called once every input is fully known.
        """
        spec = self._spec
        if spec.shape_function is None:
            return super().infer_shape(in_shape, out_shape)
        if not all(is_known(shape) for shape in in_shape):
            return None
        shapes = [tuple(shape) for shape in in_shape]  # type: ignore[arg-type]
        try:
            out = spec.shape_function(*shapes, self.env())
        except Exception as exc:
            raise self.shape_error(
                f"the shape function raised {type(exc).__name__}: {exc} for input shapes "
                f"{', '.join(map(str, shapes))}"
            ) from exc
        if out is None:
            return None
        return shapes, [as_shape(out, f"{self.op_name}: the shape function's answer")], []

    # -- backward ----------------------------------------------------------------------------
    def declare_backward_dependency(
        self, out_grad: Sequence[Any], in_data: Sequence[Any], out_data: Sequence[Any]
    ) -> list[Any]:
        """out_grad, plus the output (``GradUses.OUTPUT``) or the inputs (``GradUses.INPUT``)."""
        if self._spec.gradient is None:
            return []
        if self._spec.uses is GradUses.OUTPUT:
            return [out_grad[0], out_data[0]]
        if self._spec.uses is GradUses.INPUT:
            return [out_grad[0], *in_data]
        return [out_grad[0]]

    def forward_inplace_option(
        self, in_data: Sequence[Any], out_data: Sequence[Any]
    ) -> list[tuple[Any, Any]]:
        """IN_OUT / LHS_OUT: the output may take the (first) input's memory."""
        if self._spec.forward_inplace in (SimpleOpInplace.IN_OUT, SimpleOpInplace.LHS_OUT):
            return [(in_data[0], out_data[0])]
        return []

    def backward_inplace_option(
        self,
        out_grad: Sequence[Any],
        in_data: Sequence[Any],
        out_data: Sequence[Any],
        in_grad: Sequence[Any],
    ) -> list[tuple[Any, Any]]:
        """OUT_IN / OUT_LHS: the (first) input gradient may take out_grad's memory."""
        if self._spec.backward_inplace in (SimpleOpInplace.OUT_IN, SimpleOpInplace.OUT_LHS):
            return [(out_grad[0], in_grad[0])]
        return []

    def forward_resource(self, in_shape: Sequence[tuple]) -> list[ResourceRequest]:
        """The resources set with ``set_resource_request``."""
        return list(self._spec.resources)

    def backward_resource(self, in_shape: Sequence[tuple]) -> list[ResourceRequest]:
        """The resources set with ``set_resource_request`` (backward gets them too)."""
        return list(self._spec.resources) if self._spec.gradient is not None else []

    def create_operator(self, ctx: Any) -> Operator:
        """Return the operator that calls the registered kernels."""
        return _SimpleOperator(self)


class _SimpleOperator(Operator):
    """Calls a SimpleOp's kernels with the signatures of the module docstring."""

    def __init__(self, prop: _SimpleOpProp) -> None:
        self.prop = prop
        self.spec = prop._spec

    def forward(
        self,
        ctx: OpContext,
        in_data: Sequence[Any],
        req: Sequence[OpReqType],
        out_data: Sequence[Any],
        aux: Sequence[Any],
    ) -> None:
        """Call ``fn(src, env, ret, req, run_ctx)`` or ``fn(lhs, rhs, env, ret, req, run_ctx)``."""
        env = self.prop.env(ctx.requested, ctx.xp)
        self.spec.function(*in_data[: self.spec.num_inputs], env, out_data[0], req[0], ctx.run_ctx)

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
        """Call the gradient kernel with what ``uses`` declared."""
        spec = self.spec
        if spec.gradient is None:
            raise NotSupportedError(
                f"simple_op {spec.name!r} has no gradient; call "
                f".set_gradient(fn, uses=...) on its builder, or do not differentiate through it"
            )
        env = self.prop.env(ctx.requested, ctx.xp)
        if spec.uses is GradUses.OUTPUT:
            reads = [out_grad[0], out_data[0]]
        elif spec.uses is GradUses.INPUT:
            reads = [out_grad[0], *in_data[: spec.num_inputs]]
        else:
            reads = [out_grad[0]]
        if spec.num_inputs == 1:
            spec.gradient(*reads, env, in_grad[0], req[0], ctx.run_ctx)
        else:
            spec.gradient(*reads, env, in_grad[0], in_grad[1], req[0], req[1], ctx.run_ctx)


def _to_string(value: Any) -> str:
    """Format a keyword argument as MXNet passes it to a kwargs-enabled op."""
    from .param import format_value

    return value if isinstance(value, str) else format_value(value)
