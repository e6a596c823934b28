"""Elementwise operators: unary math, binary (same shape and broadcast), scalar, comparison.

Idea (MXNet: src/operator/tensor/elemwise_*): each op is one formula for the
forward value and one for the gradient, plus a statement of what the gradient
reads.  That statement becomes ``declare_backward_dependency``: ``relu``,
``sigmoid``, ``tanh``, ``exp`` and ``sqrt`` use their OUTPUT, ``log``,
``sin`` and ``abs`` their INPUT, ``negative`` and ``elemwise_add`` only the
head gradient — so the memory planner can free the rest early.

Rules:
    * forward may run in place (input -> output) and backward may write the
      input gradient over the head gradient; kernels compute every value
      before writing any output, so aliasing is safe;
    * broadcast ops align shapes on the right; their gradients are summed
      back to each input's shape;
    * comparison ops return 0/1 in the input's dtype and have zero gradient;
    * scalar ops take the scalar as parameter ``scalar`` (float).

State kept: the tables ``UNARY``, ``BINARY`` and ``SCALAR`` (name -> formulas)
from which one registered property class per op is generated.

Example::

    >>> import numpy as np
    >>> from mxnb.operator import eager
    >>> outs, _, state = eager.run_forward('relu', [np.array([-1.0, 2.0], np.float32)])
    >>> outs[0].tolist(), eager.run_backward(state, [np.ones(2, np.float32)])[0].tolist()
    ([0.0, 2.0], [0.0, 1.0])
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from ..param import ANY, DType, Param
from ..partial import is_known, partial_shape
from ..registry import register, register_alias
from ._common import (
    KernelProp,
    UfuncKernel,
    broadcast_shape,
    reduce_to,
    ufunc_into,
    ufunc_types_direct,
    write,
)

__all__ = ["BINARY", "SCALAR", "UNARY", "BinaryRule", "ScalarRule", "UnaryRule"]

NONE, INPUT, OUTPUT, BOTH = "none", "input", "output", "both"


# ---------------------------------------------------------------------------
# unary
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class UnaryRule:
    """Forward ``f(xp, x)`` and gradient ``g(xp, dy, x, y)`` of a unary op; ``uses`` what g reads."""

    forward: Callable[..., Any]
    gradient: Callable[..., Any] | None  # None: the gradient is zero
    uses: str
    doc: str
    ufunc: str = ""  # the xp ufunc that IS forward: computed with out= (see ufunc_into)


def _mod(xp: Any, a: Any, b: Any) -> Any:
    """a mod b with the sign of b; a zero divisor gives 0, for every dtype (as MXNet's ``mod``).

    numpy's ``mod`` gives nan (floats) or 0 with a warning (integers) there;
    the divisor is made 1 where it is 0 and those places are set to 0.
    """
    zero = b == 0
    return xp.where(zero, 0, xp.mod(a, xp.where(zero, 1, b)))


def _scalar_mod(xp: Any, x: Any, s: float, reverse: bool) -> Any:
    """``x mod s`` (``s mod x`` when ``reverse``), the scalar in x's dtype first (MXNet's ``DType(s)``)."""
    scalar = xp.asarray(s, dtype=x.dtype)
    return _mod(xp, scalar, x) if reverse else _mod(xp, x, scalar)


def _mod_grad(xp: Any, g: Any, value: Callable[[], Any]) -> Any:
    """A gradient of mod: ``value()`` for floating-point results, zeros for integer ones.

    MXNet 1.9.1 defines mod's gradients (1 for the dividend, -floor(a / b) for
    the divisor) only for floating-point types; for integers both are 0.  The
    head gradient ``g`` has the result's dtype.
    """
    if g.dtype.kind in "iu":
        return xp.zeros_like(g)
    return value()


def _sigmoid(xp: Any, x: Any) -> Any:
    return 1 / (1 + xp.exp(-x))


UNARY: dict[str, UnaryRule] = {
    "relu": UnaryRule(
        lambda xp, x: xp.maximum(x, 0),
        lambda xp, g, x, y: g * (y > 0),
        OUTPUT,
        "Rectified linear unit, max(x, 0).",
    ),
    "sigmoid": UnaryRule(
        _sigmoid,
        lambda xp, g, x, y: g * y * (1 - y),
        OUTPUT,
        "Logistic sigmoid, 1 / (1 + exp(-x)).",
    ),
    "tanh": UnaryRule(
        lambda xp, x: xp.tanh(x), lambda xp, g, x, y: g * (1 - y * y), OUTPUT, "Hyperbolic tangent."
    ),
    "exp": UnaryRule(lambda xp, x: xp.exp(x), lambda xp, g, x, y: g * y, OUTPUT, "Exponential."),
    "expm1": UnaryRule(
        lambda xp, x: xp.expm1(x),
        lambda xp, g, x, y: g * (y + 1),
        OUTPUT,
        "exp(x) - 1, accurate near 0.",
    ),
    "log": UnaryRule(
        lambda xp, x: xp.log(x), lambda xp, g, x, y: g / x, INPUT, "Natural logarithm."
    ),
    "log1p": UnaryRule(
        lambda xp, x: xp.log1p(x),
        lambda xp, g, x, y: g / (1 + x),
        INPUT,
        "log(1 + x), accurate near 0.",
    ),
    "log2": UnaryRule(
        lambda xp, x: xp.log2(x),
        lambda xp, g, x, y: g / (x * math.log(2)),
        INPUT,
        "Base-2 logarithm.",
    ),
    "log10": UnaryRule(
        lambda xp, x: xp.log10(x),
        lambda xp, g, x, y: g / (x * math.log(10)),
        INPUT,
        "Base-10 logarithm.",
    ),
    "sqrt": UnaryRule(
        lambda xp, x: xp.sqrt(x), lambda xp, g, x, y: g * 0.5 / y, OUTPUT, "Square root."
    ),
    "rsqrt": UnaryRule(
        lambda xp, x: 1 / xp.sqrt(x),
        lambda xp, g, x, y: g * -0.5 * y * y * y,
        OUTPUT,
        "Reciprocal square root, 1 / sqrt(x).",
    ),
    "cbrt": UnaryRule(
        lambda xp, x: xp.cbrt(x), lambda xp, g, x, y: g / (3 * y * y), OUTPUT, "Cube root."
    ),
    "square": UnaryRule(lambda xp, x: x * x, lambda xp, g, x, y: g * 2 * x, INPUT, "x * x."),
    "reciprocal": UnaryRule(lambda xp, x: 1 / x, lambda xp, g, x, y: -g / (x * x), INPUT, "1 / x."),
    "abs": UnaryRule(
        lambda xp, x: xp.abs(x), lambda xp, g, x, y: g * xp.sign(x), INPUT, "Absolute value."
    ),
    "negative": UnaryRule(
        lambda xp, x: -x, lambda xp, g, x, y: -g, NONE, "Numerical negative, -x."
    ),
    "sin": UnaryRule(lambda xp, x: xp.sin(x), lambda xp, g, x, y: g * xp.cos(x), INPUT, "Sine."),
    "cos": UnaryRule(lambda xp, x: xp.cos(x), lambda xp, g, x, y: -g * xp.sin(x), INPUT, "Cosine."),
    "tan": UnaryRule(
        lambda xp, x: xp.tan(x), lambda xp, g, x, y: g * (1 + y * y), OUTPUT, "Tangent."
    ),
    "arcsin": UnaryRule(
        lambda xp, x: xp.arcsin(x),
        lambda xp, g, x, y: g / xp.sqrt(1 - x * x),
        INPUT,
        "Inverse sine.",
    ),
    "arccos": UnaryRule(
        lambda xp, x: xp.arccos(x),
        lambda xp, g, x, y: -g / xp.sqrt(1 - x * x),
        INPUT,
        "Inverse cosine.",
    ),
    "arctan": UnaryRule(
        lambda xp, x: xp.arctan(x), lambda xp, g, x, y: g / (1 + x * x), INPUT, "Inverse tangent."
    ),
    "sinh": UnaryRule(
        lambda xp, x: xp.sinh(x), lambda xp, g, x, y: g * xp.cosh(x), INPUT, "Hyperbolic sine."
    ),
    "cosh": UnaryRule(
        lambda xp, x: xp.cosh(x), lambda xp, g, x, y: g * xp.sinh(x), INPUT, "Hyperbolic cosine."
    ),
    "softsign": UnaryRule(
        lambda xp, x: x / (1 + xp.abs(x)),
        lambda xp, g, x, y: g / ((1 + xp.abs(x)) * (1 + xp.abs(x))),
        INPUT,
        "x / (1 + |x|).",
    ),
    "sign": UnaryRule(lambda xp, x: xp.sign(x), None, NONE, "Sign, -1, 0 or 1 (zero gradient)."),
    "floor": UnaryRule(lambda xp, x: xp.floor(x), None, NONE, "Round down (zero gradient)."),
    "ceil": UnaryRule(lambda xp, x: xp.ceil(x), None, NONE, "Round up (zero gradient)."),
    "round": UnaryRule(
        lambda xp, x: xp.sign(x) * xp.floor(xp.abs(x) + 0.5),
        None,
        NONE,
        "Round half away from zero, as MXNet (zero gradient).",
    ),
    "rint": UnaryRule(lambda xp, x: xp.rint(x), None, NONE, "Round half to even (zero gradient)."),
    "trunc": UnaryRule(lambda xp, x: xp.trunc(x), None, NONE, "Round toward zero (zero gradient)."),
    "fix": UnaryRule(lambda xp, x: xp.trunc(x), None, NONE, "Round toward zero (zero gradient)."),
    "_copy": UnaryRule(lambda xp, x: x.copy(), lambda xp, g, x, y: g, NONE, "Copy of the input."),
    "BlockGrad": UnaryRule(
        lambda xp, x: x.copy(),
        None,
        NONE,
        "Identity forward; stops the gradient (its gradient is zero).",
    ),
}

UNARY_ALIASES = {"identity": "_copy", "stop_gradient": "BlockGrad"}

# Unary rules whose forward is exactly one xp ufunc: their kernels compute with out=.
_UNARY_UFUNCS = {
    **{name: name for name in ("tanh", "exp", "expm1", "log", "log1p", "log2", "log10")},
    **{name: name for name in ("sqrt", "cbrt", "negative", "sin", "cos", "tan", "arcsin")},
    **{name: name for name in ("arccos", "arctan", "sinh", "cosh", "sign", "floor", "ceil")},
    **{name: name for name in ("rint", "trunc")},
    "fix": "trunc",
    "abs": "absolute",
}
for _name, _ufunc in _UNARY_UFUNCS.items():
    UNARY[_name] = replace(UNARY[_name], ufunc=_ufunc)


class _OneToOneRuleProp(KernelProp):
    """Shared semantics of one-input elementwise ops driven by a rule (unary and scalar ops).

    Backward reads the head gradient plus whatever the rule's gradient uses
    (input, output or both; nothing when the gradient is zero), the output may
    take the input's memory, and the input gradient the head gradient's.
    """

    def declare_backward_dependency(self, out_grad, in_data, out_data):
        """Head gradient when the gradient is not zero, plus the input or output it reads."""
        rule = self.rule
        if rule.gradient is None:
            return []
        deps = [out_grad[0]]
        if rule.uses in (INPUT, BOTH):
            deps.append(in_data[0])
        if rule.uses in (OUTPUT, BOTH):
            deps.append(out_data[0])
        return deps

    def forward_inplace_option(self, in_data, out_data):
        """The output may take the input's memory."""
        return [(in_data[0], out_data[0])]

    def backward_inplace_option(self, out_grad, in_data, out_data, in_grad):
        """The input gradient may take the head gradient's memory."""
        return [(out_grad[0], in_grad[0])]


class UnaryProp(_OneToOneRuleProp):
    """Base of the generated unary elementwise properties."""

    rule: UnaryRule

    def forward(self, ctx, in_data, req, out_data, aux):
        """out = f(x) (straight into out when f is one ufunc: :func:`ufunc_into`)."""
        rule = self.rule
        if rule.ufunc and ufunc_into(ctx.xp, rule.ufunc, out_data[0], req[0], in_data[0]):
            return
        write(out_data[0], req[0], rule.forward(ctx.xp, in_data[0]))

    def forward_ufunc(self, in_types, out_types):
        """``ufunc(x, out)`` when :meth:`forward` takes that path (see KernelProp)."""
        ufunc = self.rule.ufunc
        if not ufunc or type(self).forward is not UnaryProp.forward:
            return None
        return UfuncKernel(ufunc) if ufunc_types_direct(in_types, out_types) else None

    def backward(self, ctx, out_grad, in_data, out_data, req, in_grad, aux):
        """dx = g(dy, x, y), or zeros."""
        rule = self.rule
        if rule.gradient is None:
            write(in_grad[0], req[0], 0)
            return
        write(in_grad[0], req[0], rule.gradient(ctx.xp, out_grad[0], in_data[0], out_data[0]))


def _make_unary(name: str, rule: UnaryRule) -> type:
    cls = type(f"UnaryProp_{name.strip('_')}", (UnaryProp,), {"rule": rule, "__doc__": rule.doc})
    return register(name)(cls)


for _name, _rule in UNARY.items():
    _make_unary(_name, _rule)
for _alias, _target in UNARY_ALIASES.items():
    register_alias(_alias, _target)


# ---------------------------------------------------------------------------
# binary: elemwise_* (same shape) and broadcast_* (numpy-style broadcasting)
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class BinaryRule:
    """Forward ``f(xp, a, b)``; gradients ``ga(xp, g, a, b, y)`` / ``gb``; ``uses`` what they read."""

    forward: Callable[..., Any]
    grad_lhs: Callable[..., Any] | None
    grad_rhs: Callable[..., Any] | None
    uses: str
    doc: str
    ufunc: str = ""  # the xp ufunc that IS forward: computed with out= (see ufunc_into)


def _cmp(fn: Callable[..., Any], doc: str) -> BinaryRule:
    return BinaryRule(
        fn, None, None, NONE, doc + " Returns 1 or 0 in the input dtype; zero gradient."
    )


BINARY: dict[str, BinaryRule] = {
    "add": BinaryRule(
        lambda xp, a, b: a + b,
        lambda xp, g, a, b, y: g,
        lambda xp, g, a, b, y: g,
        NONE,
        "lhs + rhs.",
    ),
    "sub": BinaryRule(
        lambda xp, a, b: a - b,
        lambda xp, g, a, b, y: g,
        lambda xp, g, a, b, y: -g,
        NONE,
        "lhs - rhs.",
    ),
    "mul": BinaryRule(
        lambda xp, a, b: a * b,
        lambda xp, g, a, b, y: g * b,
        lambda xp, g, a, b, y: g * a,
        INPUT,
        "lhs * rhs.",
    ),
    "div": BinaryRule(
        lambda xp, a, b: a / b,
        lambda xp, g, a, b, y: g / b,
        lambda xp, g, a, b, y: -g * a / (b * b),
        INPUT,
        "lhs / rhs.",
    ),
    "mod": BinaryRule(
        lambda xp, a, b: _mod(xp, a, b),
        lambda xp, g, a, b, y: _mod_grad(xp, g, lambda: g),
        lambda xp, g, a, b, y: _mod_grad(xp, g, lambda: -g * xp.floor(a / b)),
        INPUT,
        "lhs modulo rhs (sign of rhs).",
    ),
    "power": BinaryRule(
        lambda xp, a, b: a**b,
        lambda xp, g, a, b, y: g * b * a ** (b - 1),
        lambda xp, g, a, b, y: g * a**b * xp.log(a),
        INPUT,
        "lhs ** rhs.",
    ),
    "maximum": BinaryRule(
        lambda xp, a, b: xp.maximum(a, b),
        lambda xp, g, a, b, y: g * (a >= b),
        lambda xp, g, a, b, y: g * (a < b),
        INPUT,
        "Elementwise maximum.",
    ),
    "minimum": BinaryRule(
        lambda xp, a, b: xp.minimum(a, b),
        lambda xp, g, a, b, y: g * (a <= b),
        lambda xp, g, a, b, y: g * (a > b),
        INPUT,
        "Elementwise minimum.",
    ),
    "hypot": BinaryRule(
        lambda xp, a, b: xp.hypot(a, b),
        lambda xp, g, a, b, y: g * a / y,
        lambda xp, g, a, b, y: g * b / y,
        BOTH,
        "sqrt(lhs**2 + rhs**2).",
    ),
    "equal": _cmp(lambda xp, a, b: a == b, "lhs == rhs."),
    "not_equal": _cmp(lambda xp, a, b: a != b, "lhs != rhs."),
    "greater": _cmp(lambda xp, a, b: a > b, "lhs > rhs."),
    "greater_equal": _cmp(lambda xp, a, b: a >= b, "lhs >= rhs."),
    "lesser": _cmp(lambda xp, a, b: a < b, "lhs < rhs."),
    "lesser_equal": _cmp(lambda xp, a, b: a <= b, "lhs <= rhs."),
    "logical_and": _cmp(lambda xp, a, b: (a != 0) & (b != 0), "lhs and rhs."),
    "logical_or": _cmp(lambda xp, a, b: (a != 0) | (b != 0), "lhs or rhs."),
    "logical_xor": _cmp(lambda xp, a, b: (a != 0) ^ (b != 0), "lhs xor rhs."),
}

# Binary rules whose forward is exactly one xp ufunc: their kernels compute with out=.
_BINARY_UFUNCS = {
    "add": "add",
    "sub": "subtract",
    "mul": "multiply",
    "div": "divide",
    "power": "power",
    "maximum": "maximum",
    "minimum": "minimum",
    "hypot": "hypot",
}
for _name, _ufunc in _BINARY_UFUNCS.items():
    BINARY[_name] = replace(BINARY[_name], ufunc=_ufunc)

# MXNet names: elemwise_add/_sub/_mul/_div; the rest are _name (same shape) and broadcast_name.
_ELEMWISE_NAMES = {
    "add": "elemwise_add",
    "sub": "elemwise_sub",
    "mul": "elemwise_mul",
    "div": "elemwise_div",
}
_ELEMWISE_ALIASES = {
    "elemwise_add": ["_add", "_plus", "_Plus"],
    "elemwise_sub": ["_sub", "_minus", "_Minus"],
    "elemwise_mul": ["_mul", "_Mul"],
    "elemwise_div": ["_div", "_Div"],
    "_power": ["_Power"],
    "_mod": ["_Mod"],
    "_maximum": ["_Maximum"],
    "_minimum": ["_Minimum"],
}
_BROADCAST_ALIASES = {"broadcast_add": ["broadcast_plus"], "broadcast_sub": ["broadcast_minus"]}


class BinaryProp(KernelProp):
    """Base of the generated binary properties (``broadcast`` chooses the shape rule)."""

    rule: BinaryRule
    broadcast: bool = False

    def list_arguments(self):
        """``['lhs', 'rhs']``."""
        return ["lhs", "rhs"]

    @partial_shape
    def infer_shape(self, in_shape, out_shape=None):
        """Same shape (elemwise_*: known dims flow both ways) or broadcast shape (forward)."""
        lhs, rhs = in_shape
        if not self.broadcast:
            return super().infer_shape(in_shape, out_shape)
        if lhs is None or rhs is None:
            return None
        if is_known(lhs) and is_known(rhs):
            out = broadcast_shape(self, tuple(lhs), tuple(rhs))
        else:
            out = _partial_broadcast(self, tuple(lhs), tuple(rhs))
        return [tuple(lhs), tuple(rhs)], [out], []

    def declare_backward_dependency(self, out_grad, in_data, out_data):
        """Head gradient, plus the inputs / output the gradient formulas read."""
        rule = self.rule
        if rule.grad_lhs is None:
            return []
        deps = [out_grad[0]]
        if rule.uses in (INPUT, BOTH):
            deps += [in_data[0], in_data[1]]
        if rule.uses in (OUTPUT, BOTH):
            deps.append(out_data[0])
        return deps

    def forward_inplace_option(self, in_data, out_data):
        """Same-shape ops may write over either operand; broadcast ops may not."""
        if self.broadcast:
            return []
        return [(in_data[0], out_data[0]), (in_data[1], out_data[0])]

    def backward_inplace_option(self, out_grad, in_data, out_data, in_grad):
        """The lhs gradient may take the head gradient's memory (same-shape ops)."""
        if self.broadcast:
            return []
        return [(out_grad[0], in_grad[0])]

    def forward(self, ctx, in_data, req, out_data, aux):
        """out = f(lhs, rhs) (straight into out when f is one ufunc: :func:`ufunc_into`)."""
        rule = self.rule
        lhs, rhs = in_data
        if rule.ufunc and ufunc_into(ctx.xp, rule.ufunc, out_data[0], req[0], lhs, rhs):
            return
        write(out_data[0], req[0], rule.forward(ctx.xp, lhs, rhs))

    def forward_ufunc(self, in_types, out_types):
        """``ufunc(lhs, rhs, out)`` when :meth:`forward` takes that path (see KernelProp)."""
        ufunc = self.rule.ufunc
        if not ufunc or type(self).forward is not BinaryProp.forward:
            return None
        return UfuncKernel(ufunc) if ufunc_types_direct(in_types, out_types) else None

    def backward(self, ctx, out_grad, in_data, out_data, req, in_grad, aux):
        """Both gradients are computed before either is written (in-place safety)."""
        xp, rule = ctx.xp, self.rule
        if rule.grad_lhs is None:
            write(in_grad[0], req[0], 0)
            write(in_grad[1], req[1], 0)
            return
        g, a, b, y = out_grad[0], in_data[0], in_data[1], out_data[0]
        grads = [
            rule.grad_lhs(xp, g, a, b, y) if req[0] else None,
            rule.grad_rhs(xp, g, a, b, y) if req[1] else None,
        ]
        for i in range(2):
            if grads[i] is not None:
                value = grads[i]
                if self.broadcast:
                    value = reduce_to(xp, xp.broadcast_to(value, g.shape), in_grad[i].shape)
                write(in_grad[i], req[i], value)


def _partial_broadcast(op: Any, lhs: tuple, rhs: tuple) -> tuple:
    """Broadcast two partial shapes: an unknown dim (0) meets 1 or itself as unknown."""
    ndim = max(len(lhs), len(rhs))
    left = (1,) * (ndim - len(lhs)) + lhs
    right = (1,) * (ndim - len(rhs)) + rhs
    probe_left = tuple(a or 1 for a in left)  # check the known dims with the usual rule
    probe_right = tuple(b or 1 for b in right)
    broadcast_shape(op, probe_left, probe_right)
    out = []
    for a, b in zip(left, right):
        if a == 0 or b == 0:
            known = a or b
            out.append(known if known > 1 else 0)
        else:
            out.append(max(a, b))
    return tuple(out)


def _make_binary(name: str, rule: BinaryRule, broadcast: bool) -> type:
    kind = "broadcast" if broadcast else "elemwise"
    doc = f"{rule.doc} ({'with broadcasting' if broadcast else 'operands of the same shape'})"
    attrs = {"rule": rule, "broadcast": broadcast, "__doc__": doc}
    return register(name)(type(f"BinaryProp_{kind}_{name.strip('_')}", (BinaryProp,), attrs))


for _key, _rule in BINARY.items():
    _make_binary(_ELEMWISE_NAMES.get(_key, f"_{_key}"), _rule, broadcast=False)
    _make_binary(f"broadcast_{_key}", _rule, broadcast=True)
for _target, _aliases in {**_ELEMWISE_ALIASES, **_BROADCAST_ALIASES}.items():
    for _alias in _aliases:
        register_alias(_alias, _target)


# ---------------------------------------------------------------------------
# scalar ops: op(data, scalar)
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class ScalarRule:
    """Forward ``f(xp, x, s)`` and gradient ``g(xp, dy, x, y, s)``; ``uses`` what g reads."""

    forward: Callable[..., Any]
    gradient: Callable[..., Any] | None
    uses: str
    doc: str
    ufunc: str = ""  # the xp ufunc that IS forward, as ufunc(data, scalar): computed with out=
    reverse: bool = False  # the ufunc takes (scalar, data): _rminus_scalar, _rdiv_scalar ...


def _smooth_l1(xp: Any, x: Any, sigma: float) -> Any:
    s2 = sigma * sigma
    return xp.where(xp.abs(x) < 1 / s2, 0.5 * s2 * x * x, xp.abs(x) - 0.5 / s2)


def _smooth_l1_grad(xp: Any, g: Any, x: Any, y: Any, sigma: float) -> Any:
    s2 = sigma * sigma
    return g * xp.where(xp.abs(x) < 1 / s2, s2 * x, xp.sign(x))


def _scmp(fn: Callable[..., Any], doc: str) -> ScalarRule:
    return ScalarRule(fn, None, NONE, doc + " Returns 1 or 0 in the input dtype; zero gradient.")


SCALAR: dict[str, ScalarRule] = {
    "_plus_scalar": ScalarRule(
        lambda xp, x, s: x + s, lambda xp, g, x, y, s: g, NONE, "data + scalar."
    ),
    "_minus_scalar": ScalarRule(
        lambda xp, x, s: x - s, lambda xp, g, x, y, s: g, NONE, "data - scalar."
    ),
    "_rminus_scalar": ScalarRule(
        lambda xp, x, s: s - x, lambda xp, g, x, y, s: -g, NONE, "scalar - data."
    ),
    "_mul_scalar": ScalarRule(
        lambda xp, x, s: x * s, lambda xp, g, x, y, s: g * s, NONE, "data * scalar."
    ),
    "_div_scalar": ScalarRule(
        lambda xp, x, s: x / s, lambda xp, g, x, y, s: g / s, NONE, "data / scalar."
    ),
    "_rdiv_scalar": ScalarRule(
        lambda xp, x, s: s / x, lambda xp, g, x, y, s: -g * s / (x * x), INPUT, "scalar / data."
    ),
    "_mod_scalar": ScalarRule(
        lambda xp, x, s: _scalar_mod(xp, x, s, False),
        lambda xp, g, x, y, s: _mod_grad(xp, g, lambda: g),
        NONE,
        "data modulo scalar.",
    ),
    "_rmod_scalar": ScalarRule(
        lambda xp, x, s: _scalar_mod(xp, x, s, True),
        lambda xp, g, x, y, s: _mod_grad(xp, g, lambda: -g * xp.floor(s / x)),
        INPUT,
        "scalar modulo data.",
    ),
    "_power_scalar": ScalarRule(
        lambda xp, x, s: x**s, lambda xp, g, x, y, s: g * s * x ** (s - 1), INPUT, "data ** scalar."
    ),
    "_rpower_scalar": ScalarRule(
        lambda xp, x, s: s**x, lambda xp, g, x, y, s: g * y * math.log(s), OUTPUT, "scalar ** data."
    ),
    "_maximum_scalar": ScalarRule(
        lambda xp, x, s: xp.maximum(x, s),
        lambda xp, g, x, y, s: g * (x >= s),
        INPUT,
        "max(data, scalar).",
    ),
    "_minimum_scalar": ScalarRule(
        lambda xp, x, s: xp.minimum(x, s),
        lambda xp, g, x, y, s: g * (x <= s),
        INPUT,
        "min(data, scalar).",
    ),
    "_hypot_scalar": ScalarRule(
        lambda xp, x, s: xp.hypot(x, s),
        lambda xp, g, x, y, s: g * x / y,
        BOTH,
        "sqrt(data**2 + scalar**2).",
    ),
    "smooth_l1": ScalarRule(
        _smooth_l1,
        _smooth_l1_grad,
        INPUT,
        "Smooth L1 with sigma = scalar: 0.5*(sigma*x)**2 if |x| < 1/sigma**2, "
        "else |x| - 0.5/sigma**2.",
    ),
    "_equal_scalar": _scmp(lambda xp, x, s: x == s, "data == scalar."),
    "_not_equal_scalar": _scmp(lambda xp, x, s: x != s, "data != scalar."),
    "_greater_scalar": _scmp(lambda xp, x, s: x > s, "data > scalar."),
    "_greater_equal_scalar": _scmp(lambda xp, x, s: x >= s, "data >= scalar."),
    "_lesser_scalar": _scmp(lambda xp, x, s: x < s, "data < scalar."),
    "_lesser_equal_scalar": _scmp(lambda xp, x, s: x <= s, "data <= scalar."),
    "_logical_and_scalar": _scmp(lambda xp, x, s: (x != 0) & (s != 0), "data and scalar."),
    "_logical_or_scalar": _scmp(lambda xp, x, s: (x != 0) | (s != 0), "data or scalar."),
    "_logical_xor_scalar": _scmp(lambda xp, x, s: (x != 0) ^ (s != 0), "data xor scalar."),
}

# Scalar rules whose forward is exactly one xp ufunc, (ufunc, scalar first): computed with out=.
# (_power_scalar is left out: ``x ** s`` takes numpy's fast paths for some exponents; the
# mod scalars too: MXNet's mod gives 0 for a zero divisor, numpy's does not, see _mod.)
_SCALAR_UFUNCS = {
    "_plus_scalar": ("add", False),
    "_minus_scalar": ("subtract", False),
    "_rminus_scalar": ("subtract", True),
    "_mul_scalar": ("multiply", False),
    "_div_scalar": ("divide", False),
    "_rdiv_scalar": ("divide", True),
    "_rpower_scalar": ("power", True),
    "_maximum_scalar": ("maximum", False),
    "_minimum_scalar": ("minimum", False),
    "_hypot_scalar": ("hypot", False),
}
for _name, (_ufunc, _reverse) in _SCALAR_UFUNCS.items():
    SCALAR[_name] = replace(SCALAR[_name], ufunc=_ufunc, reverse=_reverse)

_SCALAR_ALIASES = {
    "_plus_scalar": ["_PlusScalar"],
    "_minus_scalar": ["_MinusScalar"],
    "_rminus_scalar": ["_RMinusScalar"],
    "_mul_scalar": ["_MulScalar"],
    "_div_scalar": ["_DivScalar"],
    "_rdiv_scalar": ["_RDivScalar"],
    "_power_scalar": ["_PowerScalar"],
    "_rpower_scalar": ["_RPowerScalar"],
    "_maximum_scalar": ["_MaximumScalar"],
    "_minimum_scalar": ["_MinimumScalar"],
    "_mod_scalar": ["_ModScalar"],
    "_rmod_scalar": ["_RModScalar"],
}


class ScalarProp(_OneToOneRuleProp):
    """Base of the generated scalar properties: ``op(data, scalar)``."""

    rule: ScalarRule
    scalar = Param(float, unbounded=ANY, default=1.0, doc="The scalar operand.")
    is_int = Param(
        bool, default=True, doc="Whether the scalar was given as an int (MXNet 1.9 flag)."
    )

    def forward(self, ctx, in_data, req, out_data, aux):
        """out = f(data, scalar) (straight into out when f is one ufunc: :func:`ufunc_into`)."""
        rule = self.rule
        data, scalar = in_data[0], self.scalar
        if rule.ufunc:
            operands = (scalar, data) if rule.reverse else (data, scalar)
            if ufunc_into(ctx.xp, rule.ufunc, out_data[0], req[0], *operands):
                return
        write(out_data[0], req[0], rule.forward(ctx.xp, data, scalar))

    def forward_ufunc(self, in_types, out_types):
        """``ufunc(data, scalar, out)`` (or scalar first) when :meth:`forward` takes that path."""
        rule = self.rule
        if not rule.ufunc or type(self).forward is not ScalarProp.forward:
            return None
        if not ufunc_types_direct(in_types, out_types):
            return None
        return UfuncKernel(rule.ufunc, self.scalar, rule.reverse)

    def backward(self, ctx, out_grad, in_data, out_data, req, in_grad, aux):
        """dx = g(dy, data, out, scalar), or zeros."""
        rule = self.rule
        if rule.gradient is None:
            write(in_grad[0], req[0], 0)
            return
        value = rule.gradient(ctx.xp, out_grad[0], in_data[0], out_data[0], self.scalar)
        write(in_grad[0], req[0], value)


for _name, _rule in SCALAR.items():
    register(_name)(
        type(f"ScalarProp{_name}", (ScalarProp,), {"rule": _rule, "__doc__": _rule.doc})
    )
for _target, _aliases in _SCALAR_ALIASES.items():
    for _alias in _aliases:
        register_alias(_alias, _target)


# ---------------------------------------------------------------------------
# Cast and ElementWiseSum
# ---------------------------------------------------------------------------


@register("Cast")
class CastProp(KernelProp):
    """Cast the input to ``dtype``; the gradient is cast back to the input's dtype."""

    dtype = Param(DType, doc="Output data type.")

    def infer_type(self, in_type):
        """Output has ``dtype`` (known before the input is); the input keeps its own."""
        data = None if in_type[0] is None else np.dtype(in_type[0])
        return [data], [np.dtype(self.dtype)], []

    def declare_backward_dependency(self, out_grad, in_data, out_data):
        """Only the head gradient."""
        return [out_grad[0]]

    def forward_inplace_option(self, in_data, out_data):
        """In place (MXNet allows it; the planner only uses it when sizes match)."""
        return [(in_data[0], out_data[0])]

    def forward(self, ctx, in_data, req, out_data, aux):
        """out = data.astype(dtype)."""
        write(out_data[0], req[0], in_data[0].astype(out_data[0].dtype, copy=False))

    def backward(self, ctx, out_grad, in_data, out_data, req, in_grad, aux):
        """dx = dy cast to the input dtype."""
        write(in_grad[0], req[0], out_grad[0].astype(in_grad[0].dtype, copy=False))


register_alias("cast", "Cast")


@register("ElementWiseSum")
class ElementWiseSumProp(KernelProp):
    """Sum of ``num_args`` arrays of the same shape (``add_n``)."""

    key_var_num_args = "num_args"
    num_args = Param(int, low=1, doc="Number of inputs to be summed.")

    def list_arguments(self):
        """``arg0 … arg{num_args-1}``."""
        return [f"arg{i}" for i in range(self.num_args)]

    def declare_backward_dependency(self, out_grad, in_data, out_data):
        """Only the head gradient (every input gradient is a copy of it)."""
        return [out_grad[0]]

    def forward_inplace_option(self, in_data, out_data):
        """The output may take the first input's memory."""
        return [(in_data[0], out_data[0])]

    def backward_inplace_option(self, out_grad, in_data, out_data, in_grad):
        """The first gradient may take the head gradient's memory."""
        return [(out_grad[0], in_grad[0])]

    def forward(self, ctx, in_data, req, out_data, aux):
        """out = sum of the inputs (accumulated in a fresh buffer, in-place safe)."""
        total = in_data[0].copy()
        for array in in_data[1:]:
            total += array
        write(out_data[0], req[0], total)

    def backward(self, ctx, out_grad, in_data, out_data, req, in_grad, aux):
        """Every input gradient is the head gradient; the one sharing its memory is written last."""
        g = out_grad[0]
        for i in reversed(range(len(in_grad))):
            write(in_grad[i], req[i], g)


register_alias("add_n", "ElementWiseSum")
register_alias("_sum", "ElementWiseSum")
