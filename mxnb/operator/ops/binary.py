"""Binary elementwise operators: ``elemwise_*`` (same shape) and ``broadcast_*``.

Idea (MXNet: src/operator/tensor/elemwise_binary_op*.cc and
elemwise_binary_broadcast_op*.cc): each op is a :class:`BinaryRule`, a forward
formula, a gradient formula per side and a statement of what the gradients
read (:mod:`.elemwise` explains the scheme); one property class per op and
kind is generated from the table :data:`BINARY`.

Rules:
    * broadcast ops align shapes on the right; their gradients are summed
      back to each input's shape;
    * comparison ops return 0/1 in the input's dtype and have zero gradient;
    * the output may take the left input's memory.

State kept: the table ``BINARY`` (name -> rule) and the alias tables.

Example::

    >>> import numpy as np
    >>> from mxnb.operator import eager
    >>> a, b = np.array([1.0, 2.0], np.float32), np.array([3.0], np.float32)
    >>> eager.run_forward('broadcast_mul', [a, b])[0][0].tolist()
    [3.0, 6.0]
"""

from __future__ import annotations

import ast
import functools
import hashlib
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from ..fused import FusedMap
from ..partial import is_known, partial_shape
from ..registry import register, register_alias
from ..statements import names
from .elemwise import BOTH, INPUT, NONE, OUTPUT, mod_grad, mod_values  # noqa: F401
from ._common import (
    KernelProp,
    UfuncKernel,
    broadcast_shape,
    reduce_to,
    ufunc_into,
    ufunc_types_direct,
    write,
)

__all__ = ["BINARY", "BinaryProp", "BinaryRule"]


@dataclass(frozen=True)
class BinaryRule:
    """Forward ``f(xp, a, b)``; gradients ``ga(xp, g, a, b, y)`` / ``gb``; ``uses`` what they read."""

    forward: Callable[..., Any]
    grad_lhs: Callable[..., Any] | None
    grad_rhs: Callable[..., Any] | None
    uses: str
    doc: str
    ufunc: str = ""  # the xp ufunc that IS forward: computed with out= (see ufunc_into)
    gradients: tuple[str, str] | None = None  # the gradients' text, when they are statements


def _arithmetic(forward: Callable[..., Any], lhs: str, rhs: str, uses: str, doc: str) -> BinaryRule:
    """A rule whose gradients are statements of :mod:`~mxnb.operator.statements` over ``g`` (the
    head gradient), ``a`` and ``b`` (the inputs): run here as those Python expressions, and
    inlined by the executor's pointwise fusion as the same text (:meth:`BinaryProp.backward_fused`)."""
    lambdas = [eval(f"lambda xp, g, a, b, y: {text}") for text in (lhs, rhs)]  # noqa: S307 - our texts
    return BinaryRule(forward, *lambdas, uses, doc, gradients=(lhs, rhs))


def _cmp(fn: Callable[..., Any], doc: str) -> BinaryRule:
    return BinaryRule(
        fn, None, None, NONE, doc + " Returns 1 or 0 in the input dtype; zero gradient."
    )


BINARY: dict[str, BinaryRule] = {
    "add": _arithmetic(lambda xp, a, b: a + b, "g", "g", NONE, "lhs + rhs."),
    "sub": _arithmetic(lambda xp, a, b: a - b, "g", "-g", NONE, "lhs - rhs."),
    "mul": _arithmetic(lambda xp, a, b: a * b, "g * b", "g * a", INPUT, "lhs * rhs."),
    "div": _arithmetic(lambda xp, a, b: a / b, "g / b", "-g * a / (b * b)", INPUT, "lhs / rhs."),
    "mod": BinaryRule(
        lambda xp, a, b: mod_values(xp, a, b),
        lambda xp, g, a, b, y: mod_grad(xp, g, lambda: g),
        lambda xp, g, a, b, y: mod_grad(xp, g, lambda: -g * xp.floor(a / b)),
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

    def backward_fused(self, in_types, out_types):
        """add's, sub's, mul's and div's gradients of same-shape inputs as one map (da, db)."""
        texts = self.rule.gradients
        if self.broadcast or texts is None or not ufunc_types_direct(in_types, out_types):
            return None
        return _gradient_map(texts), _GRADIENT_SLOTS

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


#: How :func:`_gradient_map`'s names bind to backward's slots.
_GRADIENT_SLOTS = {"g": ("out_grad", 0), "a": ("in_data", 0), "b": ("in_data", 1),
                   "da": ("in_grad", 0), "db": ("in_grad", 1)}  # fmt: skip


@functools.cache
def _gradient_map(texts: tuple[str, str]) -> FusedMap:
    """``da = <lhs>`` / ``db = <rhs>`` as one map over the names they read (made once)."""
    statements = f"da = {texts[0]}\ndb = {texts[1]}"
    reads = set().union(*(names(ast.parse(text, mode="eval").body) for text in texts))
    name = "arithmetic_backward_" + hashlib.sha1(statements.encode()).hexdigest()[:8]
    return FusedMap(name, tuple(n for n in ("g", "a", "b") if n in reads), ("da", "db"), statements)


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
