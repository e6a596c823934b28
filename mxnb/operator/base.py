"""The operator interface of MXNet's architecture notes, in Python.

Two halves (MXNet: ``Operator`` and ``OperatorProperty`` in
include/mxnet/operator.h):

* :class:`Operator` does the computation: ``forward(ctx, in_data, req,
  out_data, aux)`` and ``backward(ctx, out_grad, in_data, out_data, req,
  in_grad, aux)`` over arrays the system allocated.  Arrays are raw arrays
  of the context's array module (numpy, or cupy on a GPU): use ``ctx.xp``.
  ``req`` says how to write each output (:class:`OpReqType`); :func:`assign`
  does what MXNet's ``ASSIGN_DISPATCH`` does.
* :class:`OperatorProperty` carries the semantics the system needs without
  running anything: argument and output names, ``infer_shape`` /
  ``infer_type``, which values backward needs (so the memory planner frees the
  rest early), which outputs may reuse which inputs' memory, which resources
  (random, temp space) the op needs, and its typed :class:`~mxnb.operator.param.Param`
  parameters.

Rule on ``backward``: only the entries ``declare_backward_dependency``
returned are handed over; the others are ``None``.  An operator that
forgets to declare what it uses fails loudly instead of reading freed memory.

Example::

    >>> import numpy as np
    >>> from mxnb.operator.base import OpReqType, assign
    >>> out = np.zeros(3)
    >>> assign(out, OpReqType.ADD_TO, np.ones(3)); assign(out, OpReqType.ADD_TO, np.ones(3))
    >>> out
    array([2., 2., 2.])
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any, ClassVar, Sequence

import numpy as np

from ..base import ParamError, ShapeError
from .param import REQUIRED, Param, format_value
from .partial import is_known, merge_all, partial_shape

__all__ = [
    "OpReqType",
    "assign",
    "ResourceRequest",
    "OpContext",
    "Operator",
    "OperatorProperty",
    "Shape_",
    "REQUIRED",
]

Shape_ = tuple  # a concrete shape is a tuple of ints; None marks an unknown shape


class OpReqType(enum.IntEnum):
    """How an operator writes an output (MXNet: ``OpReqType``)."""

    NULL = 0  # do not write (gradient not wanted)
    WRITE_TO = 1  # overwrite the output
    WRITE_INPLACE = 2  # overwrite; the output shares memory with an input
    ADD_TO = 3  # accumulate into the output (grad_req='add')

    @classmethod
    def from_grad_req(cls, grad_req: str) -> "OpReqType":
        """Map MXNet's grad_req strings ``'null' | 'write' | 'add' | 'inplace'``."""
        table = {
            "null": cls.NULL,
            "write": cls.WRITE_TO,
            "add": cls.ADD_TO,
            "inplace": cls.WRITE_INPLACE,
        }
        if grad_req not in table:
            raise ParamError(f"grad_req must be one of {', '.join(table)}; got {grad_req!r}")
        return table[grad_req]


def assign(out: Any, req: OpReqType | int | str, value: Any) -> None:
    """Write ``value`` into ``out`` as ``req`` says (MXNet's ``ASSIGN_DISPATCH``).

    NULL: nothing; WRITE_TO / WRITE_INPLACE: ``out[...] = value``; ADD_TO: ``out += value``.
    ``req`` may also be MXNet-Python's strings ('null', 'write', 'inplace', 'add').
    """
    if isinstance(req, str):
        req = OpReqType.from_grad_req(req)
    if req == OpReqType.NULL:
        return
    if req == OpReqType.ADD_TO:
        out[...] += value
    else:
        out[...] = value


class ResourceRequest(enum.Enum):
    """A shared resource an operator asks for (MXNet: ``ResourceRequest::Type``)."""

    RANDOM = "random"  # the context's random generator, serialized by its engine var
    TEMP_SPACE = "temp_space"  # the context's scratch buffer, serialized by its engine var


@dataclass
class OpContext:
    """What an operator's forward/backward receives (MXNet: ``OpContext``).

    Attributes
    ----------
    is_train : bool
        Training mode (BatchNorm uses batch statistics, Dropout drops).
    run_ctx : RunContext
        The context and stream of the worker running the op.
    requested : list
        The resources asked for by ``forward_resource`` / ``backward_resource``,
        in the order asked (see :mod:`mxnb.resource`).
    xp : module
        The array module of the arrays (numpy or cupy).
    """

    is_train: bool = False
    run_ctx: Any = None
    requested: Sequence[Any] = field(default_factory=list)
    xp: Any = np


class Operator:
    """The computation of an operator; subclasses override ``forward`` and ``backward``."""

    def forward(
        self,
        ctx: OpContext,
        in_data: Sequence[Any],
        req: Sequence[OpReqType],
        out_data: Sequence[Any],
        aux: Sequence[Any],
    ) -> None:
        """Compute ``out_data`` from ``in_data`` (and update ``aux`` in training)."""
        raise NotImplementedError(f"{type(self).__name__}.forward")

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
        """Compute ``in_grad`` from what ``declare_backward_dependency`` asked for."""
        raise NotImplementedError(f"{type(self).__name__}.backward")


class OperatorProperty:
    """The semantics of an operator; subclasses declare Params and override what differs.

    Parameters are declared as class attributes (``num_hidden = Param(int)``)
    and parsed from keyword arguments: ``FullyConnectedProp(num_hidden='10')``.

    Class attributes set by :func:`~mxnb.operator.registry.register`:
    ``type_string`` (the registered name).  Set ``key_var_num_args`` to the
    name of the parameter that counts a variable number of inputs
    (``'num_args'`` for Concat).
    """

    type_string: ClassVar[str] = ""
    key_var_num_args: ClassVar[str | None] = None
    params: ClassVar[dict[str, Param]] = {}

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        collected: dict[str, Param] = {}
        for klass in reversed(cls.__mro__):
            for name, value in vars(klass).items():
                if isinstance(value, Param):
                    collected[name] = value
                elif name in collected:  # a plain value in a subclass drops the parameter
                    del collected[name]
        cls.params = collected

    def __init__(self, **kwargs: Any) -> None:
        self._param_values: dict[str, Any] = {}
        self.init(kwargs)

    # -- parameters ------------------------------------------------------------
    @property
    def op_name(self) -> str:
        """The registered name, else the class name (used in error messages)."""
        return self.type_string or type(self).__name__

    def init(self, kwargs: dict[str, Any]) -> None:
        """Parse ``kwargs`` into the declared parameters (MXNet: ``Init``)."""
        unknown = [key for key in kwargs if key not in self.params]
        if unknown:
            allowed = ", ".join(sorted(self.params)) or "none"
            raise ParamError(
                f"{self.op_name}: unknown parameter {', '.join(map(repr, unknown))}; "
                f"its parameters are: {allowed}"
            )
        values: dict[str, Any] = {}
        for name, param in self.params.items():
            if name in kwargs:
                values[name] = param.parse(kwargs[name], op=self.op_name, field=name)
            elif param.required:
                raise ParamError(
                    f"{self.op_name}: required parameter '{name}' is missing "
                    f"({param.describe_type()}: {param.doc})"
                )
            else:
                values[name] = param.default
        self._param_values = values

    def get_params(self) -> dict[str, Any]:
        """Return the parsed parameter values (MXNet: ``GetParams``)."""
        return dict(self._param_values)

    def get_params_str(self) -> dict[str, str]:
        """Return the parameters as MXNet strings, as symbol JSON stores them."""
        return {name: format_value(value) for name, value in self._param_values.items()}

    # -- names -----------------------------------------------------------------
    def list_arguments(self) -> list[str]:
        """Names of the inputs, in order (default ``['data']``)."""
        return ["data"]

    def list_outputs(self) -> list[str]:
        """Names of the outputs (default ``['output']``)."""
        return ["output"]

    def list_auxiliary_states(self) -> list[str]:
        """Names of auxiliary states (e.g. BatchNorm's moving stats; default none)."""
        return []

    def num_outputs(self) -> int:
        """Number of outputs, visible or not."""
        return len(self.list_outputs())

    def num_visible_outputs(self) -> int:
        """Number of outputs a user sees (hidden ones serve backward only)."""
        return self.num_outputs()

    # -- inference -------------------------------------------------------------
    @partial_shape
    def infer_shape(
        self, in_shape: list[tuple | None], out_shape: list[tuple | None] | None = None
    ) -> tuple[list[tuple], list[tuple], list[tuple]] | None:
        """Return ``(in_shapes, out_shapes, aux_shapes)``, or None if not enough is known yet.

        Default: every input, output and aux state has one shape, merged from
        whatever is known of any of them (MXNet's ``ElemwiseShape``: both ways).
        Shapes may be partial (0: unknown dimension, see :mod:`mxnb.operator.partial`).
        Raise :class:`~mxnb.base.ShapeError` (see :meth:`shape_error`) on a conflict.
        """
        names = self.list_arguments()
        known = next((shape for shape in in_shape if is_known(shape)), None)
        for name, shape in zip(names, in_shape):
            if known is not None and is_known(shape) and tuple(shape) != tuple(known):
                raise self.shape_error(
                    f"{name} has shape {tuple(shape)} but {names[0]} has "
                    f"{tuple(known)}; they must match"
                )
        outputs = list(out_shape or [])
        try:
            merged = merge_all(
                [*in_shape, *outputs], [*names, *self.list_outputs()[: len(outputs)]]
            )
        except ShapeError as exc:
            raise self.shape_error(str(exc)) from None
        if merged is None:
            return None
        return (
            [merged] * len(names),
            [merged] * self.num_outputs(),
            [merged] * len(self.list_auxiliary_states()),
        )

    def infer_type(
        self, in_type: list[np.dtype | None]
    ) -> tuple[list[np.dtype], list[np.dtype], list[np.dtype]] | None:
        """Return ``(in_types, out_types, aux_types)``; default: all the first known dtype."""
        known = next((dtype for dtype in in_type if dtype is not None), None)
        if known is None:
            return None
        known = np.dtype(known)
        return (
            [known] * len(self.list_arguments()),
            [known] * self.num_outputs(),
            [known] * len(self.list_auxiliary_states()),
        )

    def shape_error(self, message: str, name: str = "") -> ShapeError:
        """Build a ShapeError prefixed with the op type and node name."""
        where = f"{self.op_name} '{name}'" if name else self.op_name
        return ShapeError(f"{where}: {message}")

    # -- memory and resources -------------------------------------------------------
    def declare_backward_dependency(
        self, out_grad: Sequence[Any], in_data: Sequence[Any], out_data: Sequence[Any]
    ) -> list[Any]:
        """Return the subset of ``out_grad + in_data + out_data`` backward reads.

        Default: all of them (safe, but keeps everything alive for backward).
        """
        return [*out_grad, *in_data, *out_data]

    def forward_inplace_option(
        self, in_data: Sequence[Any], out_data: Sequence[Any]
    ) -> list[tuple[Any, Any]]:
        """Return ``(input, output)`` pairs where the output may reuse the input's memory."""
        return []

    def backward_inplace_option(
        self,
        out_grad: Sequence[Any],
        in_data: Sequence[Any],
        out_data: Sequence[Any],
        in_grad: Sequence[Any],
    ) -> list[tuple[Any, Any]]:
        """Return ``(entry, in_grad)`` pairs where an input gradient may reuse the entry's memory."""
        return []

    def forward_resource(self, in_shape: Sequence[tuple]) -> list[ResourceRequest]:
        """Resources forward needs (default none)."""
        return []

    def backward_resource(self, in_shape: Sequence[tuple]) -> list[ResourceRequest]:
        """Resources backward needs (default none)."""
        return []

    def temp_space_bytes(
        self,
        in_shape: Sequence[tuple],
        in_type: Sequence[Any],
        req: Sequence[OpReqType] | None = None,
    ) -> int:
        """Bytes of TEMP_SPACE one pass asks for (default 0), at the forward's input shapes.

        ``req`` None: the forward (and a recompute); else the backward, with
        one request per argument (``OpReqType.NULL``: that gradient is not
        computed, and its scratch not asked for).

        The memory plan counts them (``MemoryPlan.workspace_bytes``), so the
        bytes a bound executor holds are known before it runs; an op that
        requests TEMP_SPACE says here how much it will ask for.
        """
        return 0

    # -- the computation -----------------------------------------------------------
    def create_operator(self, ctx: Any) -> Operator:
        """Return the :class:`Operator` that computes this op on ``ctx``."""
        raise NotImplementedError(f"{self.op_name}.create_operator")

    def create_operator_ex(
        self, ctx: Any, in_shapes: Sequence[tuple], in_types: Sequence[np.dtype]
    ) -> Operator:
        """Like ``create_operator``, knowing the input shapes and dtypes (custom ops need them)."""
        return self.create_operator(ctx)

    def copy(self) -> "OperatorProperty":
        """Return a new property with the same parameters."""
        clone = type(self).__new__(type(self))
        clone.__dict__.update(self.__dict__)
        clone._param_values = dict(self._param_values)
        return clone

    def __repr__(self) -> str:
        args = ", ".join(f"{key}={value!r}" for key, value in self._param_values.items())
        return f"{type(self).__name__}({args})"
