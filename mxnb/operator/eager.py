"""A synchronous reference runner for operators: no engine, no NDArray, just arrays.

Idea: the shortest path from an :class:`OperatorProperty` to numbers.
:func:`run_forward` infers shapes and dtypes, allocates the outputs, hands
the op its resources and runs ``forward``; :func:`run_backward` hands the op
*only* the entries its ``declare_backward_dependency`` named (the others are
``None``, exactly as the executor will do) and returns the input gradients.
Conformance tests and ``mxnb.testing.check_numeric_gradient`` run ops
through here, so an op that reads something it did not declare fails here
first.

Rules:
    * inputs are arrays of one array module (numpy here); they are not copied
      or modified; aux states are copied, and the updated copies returned;
    * outputs are written with ``req = WRITE_TO``; gradients too;
    * resources: RANDOM -> :class:`EagerRandom` (``.generator``, a numpy
      Generator), TEMP_SPACE -> :class:`EagerTempSpace` (``.get_space``),
      the same attribute names as :mod:`mxnb.resource`'s real resources.

State kept: :class:`EagerState` (property, operator, context, inputs,
outputs, aux states) links a forward to its backward.

Example::

    >>> import numpy as np
    >>> from mxnb.operator import eager
    >>> x = np.array([[1.0, -2.0]], np.float32)
    >>> outs, grads = eager.run('relu', [x], head_grads=[np.ones((1, 2), np.float32)])
    >>> outs[0].tolist(), grads[0].tolist()
    ([[1.0, 0.0]], [[1.0, 0.0]])
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..base import ShapeError
from .base import OpContext, Operator, OperatorProperty, OpReqType, ResourceRequest
from .registry import get

__all__ = [
    "EagerRandom",
    "EagerState",
    "EagerTempSpace",
    "make_property",
    "numeric_gradient_check",
    "run",
    "run_backward",
    "run_forward",
]


class EagerRandom:
    """A RANDOM resource for eager runs: ``.generator`` is a ``numpy.random.Generator``."""

    def __init__(self, seed: int | None = 0, generator: Any = None) -> None:
        self.generator = generator if generator is not None else np.random.default_rng(seed)


class EagerTempSpace:
    """A TEMP_SPACE resource for eager runs: one scratch block, grown to the largest request.

    As MXNet's temp space (and :class:`mxnb.resource.TempSpaceResource`):
    every ``get_space`` call returns memory over the *same* block, so an op
    takes one space per call of forward or backward and must not hold it
    across calls.
    """

    def __init__(self, xp: Any = np) -> None:
        self.xp = xp
        self._block: Any = None

    def get_space(self, shape: Sequence[int], dtype: Any = np.float32) -> Any:
        """Return an uninitialised array of ``shape`` and ``dtype`` over the scratch block."""
        shape = tuple(int(s) for s in shape)
        dtype = np.dtype(dtype)
        nbytes = math.prod(shape) * dtype.itemsize
        if self._block is None or self._block.size < nbytes:
            self._block = self.xp.empty(max(nbytes, 1), dtype=np.uint8)
        return self._block[:nbytes].view(dtype).reshape(shape)


@dataclass
class EagerState:
    """What :func:`run_backward` needs from the forward run."""

    prop: OperatorProperty
    operator: Operator
    ctx: OpContext
    inputs: list[Any]
    outputs: list[Any]
    aux: list[Any]
    in_shapes: list[tuple] = field(default_factory=list)
    in_types: list[np.dtype] = field(default_factory=list)


def make_property(
    op: str | OperatorProperty, params: dict | None = None, num_inputs: int | None = None
):
    """Return a property for ``op`` (a registered name or a property instance).

    For variable-arity ops (``key_var_num_args``), the count parameter is
    filled from ``num_inputs`` when not given.
    """
    if isinstance(op, OperatorProperty):
        if params:
            raise TypeError("pass params only with an operator name, not with a property instance")
        return op
    info = get(op)
    params = dict(params or {})
    key = info.prop_cls.key_var_num_args
    if key and key not in params and num_inputs is not None:
        params[key] = num_inputs
    return info.create_property(**params)


def _resources(requests: Sequence[ResourceRequest], xp: Any, rng: Any) -> list[Any]:
    found = []
    for request in requests:
        if request == ResourceRequest.RANDOM:
            found.append(rng if rng is not None else EagerRandom(0))
        elif request == ResourceRequest.TEMP_SPACE:
            found.append(EagerTempSpace(xp))
        else:
            raise ValueError(f"unknown resource request {request!r}")
    return found


def run_forward(
    op: str | OperatorProperty,
    inputs: Sequence[Any],
    params: dict | None = None,
    aux: Sequence[Any] | None = None,
    is_train: bool = False,
    random: Any = None,
) -> tuple[list[Any], list[Any], EagerState]:
    """Run one operator's forward; return ``(outputs, aux_out, state)``.

    Parameters
    ----------
    op : str or OperatorProperty
        A registered name (``'FullyConnected'``) or a property instance.
    inputs : list of arrays
        The arguments, in ``list_arguments()`` order (aux states excluded).
    params : dict, optional
        Operator parameters, as values or MXNet strings.
    aux : list of arrays, optional
        Auxiliary states (BatchNorm moving stats); copied, and the updated
        copies returned as ``aux_out``.  Zeros of the inferred shape when omitted.
    is_train : bool
        Training mode (BatchNorm batch statistics, Dropout masks).
    random : object with ``.generator``, optional
        The RANDOM resource (default: :class:`EagerRandom` seeded with 0).

    Returns
    -------
    outputs : list of arrays (all outputs, hidden ones included)
    aux_out : list of arrays
    state : EagerState, for :func:`run_backward`
    """
    prop = make_property(op, params, num_inputs=len(inputs))
    arguments = prop.list_arguments()
    if len(inputs) != len(arguments):
        raise ShapeError(
            f"{prop.op_name}: expected {len(arguments)} inputs ({', '.join(arguments)}), got {len(inputs)}"
        )
    xp = np
    inputs = list(inputs)
    in_shapes = [tuple(x.shape) for x in inputs]
    in_types, outputs, aux_out = _allocate(prop, inputs, aux)
    requested = _resources(prop.forward_resource(in_shapes), xp, random)
    ctx = OpContext(is_train=is_train, run_ctx=None, requested=requested, xp=xp)
    operator = prop.create_operator_ex(None, in_shapes, in_types)
    operator.forward(ctx, inputs, [OpReqType.WRITE_TO] * len(outputs), outputs, aux_out)
    state = EagerState(prop, operator, ctx, inputs, outputs, aux_out, in_shapes, in_types)
    return outputs, aux_out, state


def _allocate(
    prop: OperatorProperty, inputs: list[Any], aux: Sequence[Any] | None
) -> tuple[list[Any], list[Any], list[Any]]:
    """Infer the op's shapes and dtypes; return the input dtypes, zero outputs and the aux states."""
    in_shapes = [tuple(x.shape) for x in inputs]
    inferred = prop.infer_shape(list(in_shapes))
    if inferred is None:
        raise ShapeError(f"{prop.op_name}: cannot infer output shapes from inputs {in_shapes}")
    _, out_shapes, aux_shapes = inferred
    types = prop.infer_type([np.dtype(x.dtype) for x in inputs])
    if types is None:
        raise ShapeError(f"{prop.op_name}: cannot infer output dtypes")
    in_types, out_types, aux_types = types
    outputs = [np.zeros(tuple(shape), dtype=dtype) for shape, dtype in zip(out_shapes, out_types)]
    if aux is None:  # zeros of the inferred shape
        aux_out = [
            np.zeros(tuple(shape), dtype=dtype) for shape, dtype in zip(aux_shapes, aux_types)
        ]
    else:  # copies: the caller's arrays are not updated
        aux_out = [np.array(a, copy=True) for a in aux]
    return list(in_types), outputs, aux_out


class _Token:
    """A stand-in for one data entry, so declare_backward_dependency's answer can be read back."""

    __slots__ = ("index", "kind")

    def __init__(self, kind: str, index: int) -> None:
        self.kind = kind
        self.index = index

    def __repr__(self) -> str:
        return f"{self.kind}[{self.index}]"


def run_backward(
    state: EagerState,
    head_grads: Sequence[Any | None] | None = None,
    req: Sequence[OpReqType] | None = None,
    is_train: bool = True,
) -> list[Any]:
    """Run the backward of the forward ``state`` came from; return one gradient per argument.

    ``is_train`` is the mode backward runs in; True by default, as MXNet's
    ``autograd.backward(train_mode=True)``: a BatchNorm run forward in
    inference mode then differentiates through its saved (moving) statistics
    with the full batch formula, exactly as MXNet 1.9.1 does.

    ``head_grads`` gives one gradient per output (visible outputs at least;
    missing or ``None`` entries are zeros).  Only the entries the op's
    ``declare_backward_dependency`` names are handed to ``backward``; the rest
    are ``None``.  ``req`` defaults to WRITE_TO for every argument.
    """
    prop, xp = state.prop, state.ctx.xp
    n_out = len(state.outputs)
    heads = list(head_grads or [])
    heads += [None] * (n_out - len(heads))
    heads = [xp.zeros_like(o) if h is None else h for h, o in zip(heads, state.outputs)]
    grad_tokens = [_Token("out_grad", i) for i in range(n_out)]
    in_tokens = [_Token("in_data", i) for i in range(len(state.inputs))]
    out_tokens = [_Token("out_data", i) for i in range(n_out)]
    declared = prop.declare_backward_dependency(grad_tokens, in_tokens, out_tokens)
    wanted = {(t.kind, t.index) for t in declared}
    out_grad = [h if ("out_grad", i) in wanted else None for i, h in enumerate(heads)]
    in_data = [x if ("in_data", i) in wanted else None for i, x in enumerate(state.inputs)]
    out_data = [y if ("out_data", i) in wanted else None for i, y in enumerate(state.outputs)]
    in_grad = [xp.zeros(x.shape, dtype=x.dtype) for x in state.inputs]
    if req is None:
        req = [OpReqType.WRITE_TO] * len(in_grad)
    requested = _resources(prop.backward_resource(state.in_shapes), xp, None)
    ctx = OpContext(
        is_train=is_train, run_ctx=None, requested=requested or state.ctx.requested, xp=xp
    )
    state.operator.backward(ctx, out_grad, in_data, out_data, list(req), in_grad, state.aux)
    return in_grad


def run(
    op: str | OperatorProperty,
    inputs: Sequence[Any],
    params: dict | None = None,
    aux: Sequence[Any] | None = None,
    is_train: bool = False,
    head_grads: Sequence[Any] | None = None,
    random: Any = None,
) -> tuple[list[Any], list[Any] | None]:
    """Forward, then backward when ``head_grads`` is given; return ``(outputs, in_grads or None)``."""
    outputs, _, state = run_forward(op, inputs, params, aux, is_train, random)
    if head_grads is None:
        return outputs, None
    return outputs, run_backward(state, head_grads)


def numeric_gradient_check(
    op: str | OperatorProperty,
    inputs: Sequence[Any],
    params: dict | None = None,
    aux: Sequence[Any] | None = None,
    is_train: bool = False,
    wrt: Sequence[int] | None = None,
    eps: float = 1e-6,
    rtol: float = 1e-5,
    atol: float = 1e-7,
    seed: int = 0,
) -> None:
    """Compare the op's backward with central differences (float64 recommended).

    The scalar checked is ``sum_i <output_i, head_i>`` over the visible
    outputs with random heads; each element of each input in ``wrt``
    (default: every input) is nudged by ``±eps``.  Raises AssertionError
    naming the op, the input and the worst element when they disagree.
    Random resources are re-seeded identically for every evaluation.
    """
    rng = np.random.default_rng(seed)
    inputs = [np.array(x, copy=True) for x in inputs]
    outputs, _, state = run_forward(op, inputs, params, aux, is_train, EagerRandom(seed))
    prop = state.prop
    visible = prop.num_visible_outputs()
    heads = [rng.standard_normal(o.shape).astype(o.dtype) for o in outputs[:visible]]
    analytic = run_backward(state, heads)

    def objective() -> float:
        outs, _, _ = run_forward(prop, inputs, None, aux, is_train, EagerRandom(seed))
        return float(sum(np.sum(o.astype(np.float64) * h) for o, h in zip(outs[:visible], heads)))

    names = prop.list_arguments()
    for index in wrt if wrt is not None else range(len(inputs)):
        x = inputs[index]
        numeric = np.zeros(x.shape, dtype=np.float64)
        flat = x.reshape(-1)
        numeric_flat = numeric.reshape(-1)
        for k in range(flat.size):
            keep = flat[k]
            flat[k] = keep + eps
            plus = objective()
            flat[k] = keep - eps
            minus = objective()
            flat[k] = keep
            numeric_flat[k] = (plus - minus) / (2 * eps)
        error = np.abs(analytic[index] - numeric) - (atol + rtol * np.abs(numeric))
        if np.any(error > 0):
            worst = np.unravel_index(int(np.argmax(error)), error.shape)
            raise AssertionError(
                f"{prop.op_name}: gradient of {names[index]} differs from central differences at "
                f"index {worst}: backward {analytic[index][worst]!r}, numeric {numeric[worst]!r} "
                f"(rtol={rtol}, atol={atol})"
            )
