"""Higher-order gradients: ``autograd.grad(..., create_graph=True)`` as recorded ``mx.nd`` ops.

Idea (MXNet: ``Imperative::Backward`` with ``create_graph``, where each op's
``FGradient`` is itself a graph of differentiable ops): the ordinary backward
(:mod:`mxnb.autograd`) pushes one engine op per node that calls the kernel's
``backward`` on raw arrays — fast, but nothing about it is recorded.  To
differentiate a gradient again, the gradient must be *computed with recorded
ops*.  This module walks the same recorded nodes in reverse order and, for
each, evaluates the op's gradient formula on NDArrays while recording is on,
so the result is a recorded array whose own backward exists.

Where the formulas come from:
    * elementwise unary, scalar and binary ops: the gradient formula of their
      rule (``UnaryRule.gradient`` ...) — the very lambda the kernel runs — is
      evaluated with an ``xp`` whose functions are ``mx.nd`` ops (:class:`_NDArrayMath`),
      so ``g * cos(x)`` becomes recorded ``cos`` and ``_mul`` ops;
    * ``Activation`` uses its act_type's formula the same way;
    * structural ops (Reshape, Flatten, expand_dims, _copy, sum, mean,
      FullyConnected, dot, ElementWiseSum, BlockGrad) have short formulas here.
Any other op raises ``NotSupportedError`` naming it.

Rules: the gradient a node receives from several consumers is summed with a
recorded ``add_n``; a head gradient is a constant; without ``retain_graph``
the first-order graph is freed afterwards (as in :func:`mxnb.autograd.grad`).

State kept: none (one pass; the result arrays carry their recorded history).

Example::

    >>> import mxnb as mx
    >>> x = mx.nd.array([0.5, 1.0]); x.attach_grad()
    >>> with mx.autograd.record():
    ...     y = mx.nd.sin(x)
    ...     (dx,) = mx.autograd.grad(y, [x], create_graph=True)
    >>> dx.backward()
    >>> [round(v, 4) for v in x.grad.asnumpy().tolist()]   # d2/dx2 sin = -sin
    [-0.4794, -0.8415]
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .base import NotSupportedError

__all__ = ["grad_with_graph"]


class _NDArrayMath:
    """``xp`` for gradient formulas: each ``xp.<f>`` is the ``mx.nd`` function of that name."""

    def __init__(self, op_name: str) -> None:
        self._op_name = op_name

    def __getattr__(self, name: str) -> Callable[..., Any]:
        from . import ndarray as nd

        function = getattr(nd, name, None)
        if function is None:
            raise NotSupportedError(
                f"autograd.grad(create_graph=True): the gradient of {self._op_name} uses "
                f"xp.{name}, which has no mx.nd counterpart; higher-order gradients through "
                f"{self._op_name} are not supported"
            )
        return function


def _reduce_to(grad: Any, shape: tuple) -> Any:
    """Sum a broadcast gradient back to ``shape`` with recorded ops."""
    from . import ndarray as nd

    shape = tuple(shape)
    if tuple(grad.shape) == shape:
        return grad
    extra = grad.ndim - len(shape)
    axes = list(range(extra))
    axes += [extra + i for i, dim in enumerate(shape) if dim == 1 and grad.shape[extra + i] != 1]
    summed = nd.sum(grad, axis=tuple(axes), keepdims=True) if axes else grad
    return summed.reshape(shape)


def _rule_gradients(node: Any, out_grads: list[Any], wanted: list[bool]) -> list[Any]:
    """Gradients of a rule-driven elementwise op (unary, scalar, binary) or Activation."""
    from .operator.ops.binary import BinaryRule
    from .operator.ops.scalar import ScalarRule

    prop = node.prop
    xp = _NDArrayMath(prop.op_name)
    g = out_grads[0]
    x_saved = node.saved_inputs
    y = node.saved_outputs[0]
    if prop.op_name == "Activation":
        from .operator.ops.activation import _ACTIVATIONS

        return [_ACTIVATIONS[prop.act_type][1](xp, g, x_saved[0], y)]
    rule = prop.rule
    if isinstance(rule, BinaryRule):
        if rule.grad_lhs is None:
            return [None, None]
        a, b = x_saved
        grads = []
        for want, formula, (shape, _) in zip(wanted, (rule.grad_lhs, rule.grad_rhs), node.in_meta):
            grads.append(_reduce_to(formula(xp, g, a, b, y), shape) if want else None)
        return grads
    if rule.gradient is None:
        return [None]
    if isinstance(rule, ScalarRule):
        return [rule.gradient(xp, g, x_saved[0], y, prop.scalar)]
    return [rule.gradient(xp, g, x_saved[0], y)]


def _reshape_back(node: Any, out_grads: list[Any], wanted: list[bool]) -> list[Any]:
    return [out_grads[0].reshape(node.in_meta[0][0])]


def _reduce_back(node: Any, out_grads: list[Any], wanted: list[bool]) -> list[Any]:
    """sum / mean: broadcast the head gradient back over the reduced axes."""
    from . import ndarray as nd

    prop = node.prop
    shape = tuple(node.in_meta[0][0])
    ndim = len(shape)
    if prop.axis is None:
        axes = set(range(ndim))
    else:
        axes = {a % ndim for a in prop.axis}
    if getattr(prop, "exclude", False):
        axes = set(range(ndim)) - axes
    kept = tuple(1 if i in axes else dim for i, dim in enumerate(shape))
    grad = nd.broadcast_to(out_grads[0].reshape(kept), shape)
    if prop.op_name == "mean":
        count = 1
        for i in axes:
            count *= shape[i]
        grad = grad / float(count)
    return [grad]


def _fully_connected_back(node: Any, out_grads: list[Any], wanted: list[bool]) -> list[Any]:
    """out = x W^T + b: dx = g W, dW = g^T x, db = sum(g)."""
    from . import ndarray as nd

    g = out_grads[0]
    data, weight = node.saved_inputs[0], node.saved_inputs[1]
    data_shape = tuple(node.in_meta[0][0])
    flat = data.reshape((data_shape[0], -1)) if node.prop.flatten else data
    grads = [
        nd.dot(g, weight).reshape(data_shape) if wanted[0] else None,
        nd.dot(g, flat, transpose_a=True) if wanted[1] else None,
    ]
    if len(node.inputs) > 2:
        grads.append(nd.sum(g, axis=0) if wanted[2] else None)
    return grads


def _dot_back(node: Any, out_grads: list[Any], wanted: list[bool]) -> list[Any]:
    """2-d dot without transposes: dA = g B^T, dB = A^T g."""
    from . import ndarray as nd

    prop = node.prop
    a, b = node.saved_inputs
    if prop.transpose_a or prop.transpose_b or a.ndim != 2 or b.ndim != 2:
        raise NotSupportedError(
            "autograd.grad(create_graph=True): higher-order gradients through dot support "
            "2-d operands without transpose_a / transpose_b"
        )
    g = out_grads[0]
    return [
        nd.dot(g, b, transpose_b=True) if wanted[0] else None,
        nd.dot(a, g, transpose_a=True) if wanted[1] else None,
    ]


_STRUCTURAL: dict[str, Callable[[Any, list[Any], list[bool]], list[Any]]] = {
    "Reshape": _reshape_back,
    "Flatten": _reshape_back,
    "expand_dims": _reshape_back,
    "squeeze": _reshape_back,
    "_copy": lambda node, grads, wanted: [grads[0]],
    "ElementWiseSum": lambda node, grads, wanted: [grads[0]] * len(node.inputs),
    "BlockGrad": lambda node, grads, wanted: [None],
    "sum": _reduce_back,
    "mean": _reduce_back,
    "FullyConnected": _fully_connected_back,
    "dot": _dot_back,
}


def _input_gradients(node: Any, out_grads: list[Any], wanted: list[bool]) -> list[Any]:
    """The gradient of each input of ``node`` as recorded NDArrays (None: zero)."""
    prop = node.prop
    formula = _STRUCTURAL.get(prop.op_name)
    if formula is not None:
        return formula(node, out_grads, wanted)
    if hasattr(prop, "rule") or prop.op_name == "Activation":
        return _rule_gradients(node, out_grads, wanted)
    raise NotSupportedError(
        f"autograd.grad(create_graph=True): no differentiable gradient formula for "
        f"{prop.op_name}; higher-order gradients support elementwise ops, Activation, "
        f"{', '.join(sorted(_STRUCTURAL))}"
    )


def _total(grads: list[Any], shape: tuple, dtype: Any, ctx: Any) -> Any:
    from . import ndarray as nd

    if not grads:
        return nd.full(shape, 0, ctx=ctx, dtype=dtype)  # any shape, a 0-d one too
    if len(grads) == 1:
        return grads[0]
    return nd.add_n(*grads)


def grad_with_graph(
    heads: Any, variables: list[Any], head_grads: Any, retain: bool, train: bool
) -> list[Any]:
    """``autograd.grad(heads, variables, head_grads, create_graph=True)``: recorded gradients."""
    from . import autograd
    from . import ndarray as nd

    plan = autograd._Backward(heads, head_grads, variables, True, train)
    order = plan._topological()
    node_needs = plan._node_needs(order)
    contributions = plan._head_contributions(nd, node_needs)
    was_recording = autograd.set_recording(True)
    was_training = autograd.set_training(train)
    try:
        for node in reversed(order):
            if not node_needs[node]:
                continue
            out_grads = [
                _total(contributions.pop((node, index), []), shape, dtype, node.ctx)
                for index, (shape, dtype) in enumerate(node.out_meta)
            ]
            wanted = [plan._needs(entry, node_needs) for entry in node.inputs]
            in_grads = _input_gradients(node, out_grads, wanted)
            for entry, want, grad in zip(node.inputs, wanted, in_grads):
                if want and grad is not None:
                    contributions.setdefault(entry.key, []).append(grad)
        results = []
        for variable in variables:
            leaf = variable.__dict__["_ag"].leaf
            grads = contributions.get(leaf, [])
            results.append(_total(grads, variable.shape, variable.dtype, variable.context))
    finally:
        autograd.set_recording(was_recording)
        autograd.set_training(was_training)
    if not retain:
        for node in order:
            autograd._free(node)
    return results
