"""What one imperative call of an operator needs, worked out once: the invoke plan.

Idea (MXNet: the shape / type inference and ``FCompute`` lookup of
``Imperative::Invoke``): for an operator with given parameters on inputs of
given shapes, dtypes and context, infer the outputs' shapes and dtypes,
request the resources, create the operator once when it holds no per-call
state, and find a *direct kernel* when its forward is exactly one ufunc call.
:mod:`.invoke` caches these plans, so a repeated small op skips all of it.

Rule: an input whose shape or dtype disagrees with what the op infers is an
error naming the input; an inferred output shape is never rounded.

State kept: none (a :class:`_Plan` is data; the caches are :mod:`.invoke`'s).

Example::

    >>> import numpy as np
    >>> from mxnb import cpu
    >>> from mxnb.operator import registry
    >>> prop = registry.get('elemwise_add').create_property()
    >>> plan = _make_plan(prop, 'add', cpu(), [(2,), (2,)], [np.dtype('float32')] * 2, 0)
    >>> plan.out_shapes, plan.direct is not None
    ([(2,)], True)
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from .. import resource as _resource
from ..base import DTypeError, MXNBError, ShapeError, as_shape
from ..context import Context
from ..operator.base import OperatorProperty, OpReqType
from ..operator.ops._common import PropOperator
from ..operator.ops.sampling import SamplerOperator
from ..operator.simple_op import _SimpleOperator

__all__ = ["_Plan", "_make_plan"]

_WRITE_TO = OpReqType.WRITE_TO


@dataclass
class _Plan:
    """What one (op, params, input shapes, dtypes, context) needs, computed once."""

    prop: OperatorProperty
    label: str  # op name shown in the engine trace and errors
    ctx: Context
    in_shapes: list[tuple]
    in_types: list[np.dtype]
    out_shapes: list[tuple]
    out_types: list[np.dtype]
    aux_shapes: list[tuple]
    aux_types: list[np.dtype]
    resources: list[Any]  # Resource objects for OpContext.requested, in the order asked
    resource_vars: list[Any]
    reqs: list[OpReqType]
    num_visible: int
    arg_names: list[str]
    xp: Any
    single_output: bool  # one output (the common case: skips list building)
    out_nbytes: list[int]  # bytes of each output
    operator: Any = None  # cached when the operator holds no per-call state
    op_ctx: Any = None  # the OpContext of the last run (reused for the same worker and mode)
    direct: Any = None  # direct kernel: (ufunc, scalar or None, scalar first), see _direct_kernel
    generation: int = -1  # registry.generation when the plan was last checked current


def _make_plan(
    prop: OperatorProperty,
    label: str,
    ctx: Context,
    in_shapes: list[tuple],
    in_types: list[np.dtype],
    num_aux: int,
) -> _Plan:
    """The plan of ``prop`` on inputs of these shapes and dtypes: outputs, resources, operator."""
    op = prop.op_name
    arg_names = prop.list_arguments()
    aux_names = prop.list_auxiliary_states()
    if len(in_shapes) != len(arg_names) or num_aux != len(aux_names):
        takes = [*arg_names, *aux_names]
        raise MXNBError(
            f"{op}: takes {len(takes)} input array(s) ({', '.join(takes) or 'none'}), "
            f"got {len(in_shapes) + num_aux}"
        )
    out_shapes, aux_shapes, out_types, aux_types = _infer(prop, in_shapes, in_types)
    out_shapes = [  # never truncated: an op answering 2.5 is a bug to report, not to round
        as_shape(shape, f"{op}: inferred output {index}") for index, shape in enumerate(out_shapes)
    ]
    requests = prop.forward_resource([tuple(shape) for shape in in_shapes])
    resources = _resource.manager.request_all(ctx, requests) if requests else []
    num_outputs = prop.num_outputs()
    out_types = [np.dtype(dtype) for dtype in out_types]
    operator = _reusable_operator(prop, ctx, in_shapes, in_types)
    direct = None
    if operator is not None and not resources and not aux_names and num_outputs == 1:
        direct = _direct_kernel(prop, ctx.array_module, list(in_types), out_types)
    return _Plan(
        prop=prop,
        label=label,
        ctx=ctx,
        in_shapes=list(in_shapes),
        in_types=list(in_types),
        out_shapes=out_shapes,
        out_types=out_types,
        aux_shapes=[tuple(shape) for shape in aux_shapes],
        aux_types=[np.dtype(dtype) for dtype in aux_types],
        resources=resources,
        resource_vars=[res.var for res in resources],
        reqs=[_WRITE_TO] * num_outputs,
        num_visible=prop.num_visible_outputs(),
        arg_names=arg_names,
        xp=ctx.array_module,
        single_output=num_outputs == 1,
        out_nbytes=[
            math.prod(shape) * dtype.itemsize for shape, dtype in zip(out_shapes, out_types)
        ],
        operator=operator,
        direct=direct,
    )


def _infer(
    prop: OperatorProperty, in_shapes: list[tuple], in_types: list[np.dtype]
) -> tuple[list, list, list, list]:
    """The op's output and aux shapes and dtypes; errors name the input that disagrees."""
    op = prop.op_name
    arg_names = prop.list_arguments()
    shapes = prop.infer_shape([tuple(shape) for shape in in_shapes])
    if shapes is None:
        described = ", ".join(f"{name}={shape}" for name, shape in zip(arg_names, in_shapes))
        raise ShapeError(f"{op}: cannot infer output shapes from inputs {described or '(none)'}")
    inferred_in, out_shapes, aux_shapes = shapes
    for name, given, wanted in zip(arg_names, in_shapes, inferred_in):
        if wanted is not None and tuple(given) != tuple(wanted):
            raise ShapeError(
                f"{op}: input {name} has shape {tuple(given)} but the op expects {tuple(wanted)}"
            )
    types = prop.infer_type(list(in_types))
    if types is None:
        raise DTypeError(
            f"{op}: cannot infer output dtypes from inputs {[t.name for t in in_types]}"
        )
    inferred_types, out_types, aux_types = types
    for name, given, wanted in zip(arg_names, in_types, inferred_types):
        if wanted is not None and np.dtype(given) != np.dtype(wanted):
            raise DTypeError(
                f"{op}: input {name} has dtype {np.dtype(given).name} but the op expects "
                f"{np.dtype(wanted).name} (inferred from its other inputs); cast it with "
                f".astype('{np.dtype(wanted).name}')"
            )
    return list(out_shapes), list(aux_shapes), list(out_types), list(aux_types)


def _direct_kernel(
    prop: OperatorProperty, xp: Any, in_types: list[np.dtype], out_types: list[np.dtype]
) -> tuple[Any, Any, bool] | None:
    """``(ufunc, scalar, scalar_first)`` for an op whose forward is one ufunc call, else None.

    The direct kernel of the hot path (:func:`_push_direct`): the pushed
    function calls the ufunc itself, with no OpContext and no dispatch
    through the operator.  Only for a property that says its forward is that
    call (``forward_ufunc``, see :class:`mxnb.operator.ops._common.KernelProp`).
    """
    forward_ufunc = getattr(prop, "forward_ufunc", None)
    spec = forward_ufunc(in_types, out_types) if forward_ufunc is not None else None
    if spec is None:
        return None
    arity = len(in_types) + (spec.scalar is not None)
    if arity not in (1, 2) or (spec.scalar is not None and len(in_types) != 1):
        return None
    return getattr(xp, spec.ufunc), spec.scalar, spec.scalar_first


#: Operator classes that only forward to their property: one instance serves every call.
_STATELESS = (SamplerOperator, PropOperator, _SimpleOperator)


def _reusable_operator(
    prop: OperatorProperty, ctx: Context, in_shapes: list, in_types: list
) -> Any:
    """The operator to cache in a plan, or None to create one per call (custom ops keep state)."""
    operator = prop.create_operator_ex(ctx, in_shapes, in_types)
    if type(operator) in _STATELESS:
        return operator
    return None
