"""Scalar elementwise operators: ``op(data, scalar)``, e.g. ``_plus_scalar``, ``_rminus_scalar``.

Idea (MXNet: src/operator/tensor/elemwise_binary_scalar_op*.cc): an op with
one array input and the scalar as its parameter ``scalar`` (a float), each a
:class:`ScalarRule` (forward, gradient, what the gradient reads); the
reversed forms (``_rminus_scalar``: ``s - x``) are rules of their own.  One
property class per op is generated from the table :data:`SCALAR`, on the
same one-input semantics as the unary ops (:mod:`.elemwise`).

Rules: comparisons return 0/1 in the input's dtype with zero gradient; the
output may take the input's memory, the input gradient the head gradient's.

State kept: the table ``SCALAR`` (name -> rule) and the alias table.

Example::

    >>> import numpy as np
    >>> from mxnb.operator import eager
    >>> x = np.array([1.0, 2.0], np.float32)
    >>> eager.run_forward('_rminus_scalar', [x], {'scalar': 5})[0][0].tolist()
    [4.0, 3.0]
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any


from ..param import ANY, Param
from ..registry import register, register_alias
from .elemwise import BOTH, INPUT, NONE, OUTPUT, OneToOneRuleProp, mod_grad, scalar_mod  # noqa: F401
from ._common import (
    UfuncKernel,
    ufunc_into,
    ufunc_types_direct,
    write,
)

__all__ = ["SCALAR", "ScalarProp", "ScalarRule"]


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
        lambda xp, x, s: scalar_mod(xp, x, s, False),
        lambda xp, g, x, y, s: mod_grad(xp, g, lambda: g),
        NONE,
        "data modulo scalar.",
    ),
    "_rmod_scalar": ScalarRule(
        lambda xp, x, s: scalar_mod(xp, x, s, True),
        lambda xp, g, x, y, s: mod_grad(xp, g, lambda: -g * xp.floor(s / x)),
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
# mod scalars too: MXNet's mod gives 0 for a zero divisor, numpy's does not, see mod_values.)
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


class ScalarProp(OneToOneRuleProp):
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
