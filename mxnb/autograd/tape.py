"""The tape: what a recorded op keeps for backward, and the marked variables.

Idea (MXNet: ``Imperative::RecordOp``): while recording, every op the
imperative invoke pushes becomes a :class:`_Node` holding its operator, its
property and only the arrays its backward declared it needs
(``declare_backward_dependency``); each output NDArray gets an :class:`_Entry`
pointing at it.  Arrays marked with ``attach_grad`` / ``mark_variables`` are
the leaves (:class:`_Leaf`), where gradients land.

Rules: an op with no recorded or marked input is not recorded (it needs no
gradient); writing into an array that is already on the tape while recording
raises (its gradients would be wrong); a freed node's outputs are constants.

State kept: ``NDArray._ag`` (the array's entry) and the nodes it reaches.

Example::

    >>> import mxnb as mx
    >>> x = mx.nd.ones(2); x.attach_grad()
    >>> with mx.autograd.record():
    ...     y = x * 3
    >>> y._ag.node.prop.op_name
    '_mul_scalar'
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..base import ParamError
from ..operator.base import OperatorProperty, OpReqType
from .recording import AutogradError

# ---------------------------------------------------------------------------
# the recorded graph
# ---------------------------------------------------------------------------

_GRAD_REQS = {"write": OpReqType.WRITE_TO, "add": OpReqType.ADD_TO, "null": OpReqType.NULL}


@dataclass(eq=False)
class _Leaf:
    """A marked variable: where its gradient goes and how it is written."""

    grad: Any  # NDArray, or None for a 'null' variable
    grad_req: str  # 'write' | 'add' | 'null'


@dataclass(eq=False)
class _Node:
    """One recorded operator call (MXNet: an nnvm node with its AGInfo)."""

    prop: OperatorProperty
    operator: Any  # the Operator the forward ran; None once freed
    is_train: bool
    ctx: Any
    inputs: list[_Entry | None]  # entry of each input at record time; None: a constant
    saved_inputs: list[Any]  # NDArray when backward declared it, else None
    saved_outputs: list[Any]  # NDArray when backward declared it, else None
    aux: list[Any]  # aux-state NDArrays (BatchNorm moving stats)
    in_meta: list[tuple[tuple, np.dtype]]  # (shape, dtype) of each input
    out_meta: list[tuple[tuple, np.dtype]]  # (shape, dtype) of each output
    needs_out_grad: list[bool]  # out_grad[i] declared by backward
    freed: bool = False


@dataclass(eq=False)
class _Entry:
    """What an NDArray is to autograd: a leaf, or output ``index`` of ``node``."""

    node: _Node | None = None
    index: int = 0
    leaf: _Leaf | None = None

    @property
    def key(self) -> Any:
        """A hashable identity: the leaf, or (node, index)."""
        return self.leaf if self.leaf is not None else (self.node, self.index)


class _Token:
    """Stands for one data entry when asking ``declare_backward_dependency``."""

    __slots__ = ("index", "kind")

    def __init__(self, kind: str, index: int) -> None:
        self.kind = kind
        self.index = index


def _entry_of(array: Any) -> _Entry | None:
    entry = array.__dict__.get("_ag")
    if entry is None:
        return None
    if entry.node is not None and entry.node.freed:
        return None  # a freed graph: the array is a constant from now on
    if entry.leaf is not None and entry.leaf.grad_req == "null" and entry.leaf.grad is None:
        return None
    return entry


def _record_op(
    prop: OperatorProperty,
    operator: Any,
    inputs: Sequence[Any],
    outputs: Sequence[Any],
    aux: Sequence[Any],
    is_train: bool,
) -> None:
    """Record one pushed op (called by the imperative invoke while recording).

    Nothing is recorded when no input is a leaf or a recorded output
    (MXNet: the op does not need a gradient).
    """
    entries = [_entry_of(array) for array in inputs]
    if all(entry is None for entry in entries):
        return
    for output in outputs:
        existing = output.__dict__.get("_ag")
        if existing is not None and not (existing.node is not None and existing.node.freed):
            raise AutogradError(
                f"{prop.op_name}: writing into an array that is already part of the recorded "
                f"graph (an attached variable or a recorded output) would make its gradients "
                f"wrong; do not use in-place operations (+=, x[:] = ..., out=x) inside "
                f"autograd.record(), or call backward first / write outside the record block"
            )
    num_outputs = len(outputs)
    save_in, save_out, needs_out_grad = _dependencies(prop, len(inputs), num_outputs)
    node = _Node(
        prop=prop,
        operator=operator,
        is_train=is_train,
        ctx=outputs[0].context if outputs else inputs[0].context,
        inputs=entries,
        saved_inputs=[x if keep else None for x, keep in zip(inputs, save_in)],
        saved_outputs=[y if keep else None for y, keep in zip(outputs, save_out)],
        aux=list(aux),
        in_meta=[(x.shape, x.dtype) for x in inputs],
        out_meta=[(y.shape, y.dtype) for y in outputs],
        needs_out_grad=needs_out_grad,
    )
    for index, output in enumerate(outputs):
        output.__dict__["_ag"] = _Entry(node=node, index=index)


def _dependencies(
    prop: OperatorProperty, num_inputs: int, num_outputs: int
) -> tuple[list[bool], list[bool], list[bool]]:
    """Which inputs / outputs / out_grads backward reads, asked once per property and arity.

    The imperative invoke caches properties, so the answer is cached on the
    property (``declare_backward_dependency`` depends only on the parameters).
    """
    cache = prop.__dict__.get("_autograd_dependencies")
    if cache is None:
        cache = prop.__dict__["_autograd_dependencies"] = {}
    key = (num_inputs, num_outputs)
    found = cache.get(key)
    if found is None:
        grad_tokens = [_Token("out_grad", i) for i in range(num_outputs)]
        in_tokens = [_Token("in_data", i) for i in range(num_inputs)]
        out_tokens = [_Token("out_data", i) for i in range(num_outputs)]
        declared = prop.declare_backward_dependency(grad_tokens, in_tokens, out_tokens)
        wanted = {(token.kind, token.index) for token in declared}
        found = (
            [("in_data", i) in wanted for i in range(num_inputs)],
            [("out_data", i) in wanted for i in range(num_outputs)],
            [("out_grad", i) in wanted for i in range(num_outputs)],
        )
        cache[key] = found
    return found


# ---------------------------------------------------------------------------
# variables
# ---------------------------------------------------------------------------


def mark_variables(variables: Any, gradients: Any, grad_reqs: Any = "write") -> None:
    """Mark arrays as leaves whose gradients go into ``gradients`` (MXNet: ``mark_variables``).

    ``grad_reqs`` is one of ``'write' | 'add' | 'null'`` or a list of them.
    """
    variables = _as_list(variables)
    gradients = _as_list(gradients)
    if len(variables) != len(gradients):
        raise ParamError(
            f"mark_variables: {len(variables)} variables but {len(gradients)} gradient arrays"
        )
    reqs = [grad_reqs] * len(variables) if isinstance(grad_reqs, str) else list(grad_reqs)
    if len(reqs) != len(variables):
        raise ParamError(f"mark_variables: {len(reqs)} grad_reqs for {len(variables)} variables")
    for variable, gradient, req in zip(variables, gradients, reqs):
        if req not in _GRAD_REQS:
            raise ParamError(f"grad_req must be 'write', 'add' or 'null'; got {req!r}")
        if gradient is not None and tuple(gradient.shape) != tuple(variable.shape):
            raise ParamError(
                f"mark_variables: gradient of shape {tuple(gradient.shape)} for a variable of "
                f"shape {tuple(variable.shape)}; they must match"
            )
        variable.__dict__["_ag"] = _Entry(leaf=_Leaf(grad=gradient, grad_req=req))


def attach_grad(array: Any, grad_req: str = "write") -> None:
    """Give ``array`` a zero gradient buffer and mark it as a leaf (``x.attach_grad()``)."""
    from .. import ndarray as nd

    if grad_req not in _GRAD_REQS:
        raise ParamError(
            f"attach_grad: grad_req must be 'write', 'add' or 'null'; got {grad_req!r}"
        )
    gradient = nd.zeros_like(array)
    mark_variables([array], [gradient], grad_req)


def get_grad(array: Any) -> Any:
    """Return the gradient buffer of a marked array (``x.grad``), None otherwise."""
    entry = array.__dict__.get("_ag")
    if entry is None or entry.leaf is None:
        return None
    return entry.leaf.grad


def detach(array: Any) -> Any:
    """Return a view of ``array`` sharing its memory that autograd treats as a constant."""
    return array._view(array._raw())


def _as_list(value: Any) -> list[Any]:
    if value is None:
        return []
    if isinstance(value, (list, tuple)):
        return list(value)
    return [value]
