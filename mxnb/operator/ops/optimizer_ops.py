"""Fused optimizer updates: sgd_update, sgd_mom_update, adam_update, ... as operators.

Idea (MXNet: src/operator/optimizer_op-inl.h): an optimizer step is one
operator that reads the weight and the gradient and rewrites the weight and
its optimizer states in one kernel, so an update is ONE engine op, ordered
against every reader of the weight by the engine's rule.  ``mx.optimizer``
calls these ops with ``out=weight``; users may call them too
(``mx.nd.sgd_mom_update(w, g, mom, lr=0.1, momentum=0.9, out=w)``).

Rule: the arguments are ``weight, grad``; the states the op rewrites
(``mom``, ``mean``/``var``, ``n``, ``z``, ...) are declared as auxiliary
states, which is how mxnb marks inputs an op mutates (MXNet's
``FMutateInputs``). The gradient is first rescaled (Adam and RMSProp add the
weight decay to it), then clipped to ``[-clip_gradient, clip_gradient]``
when ``clip_gradient >= 0``; kernels compute in the weight's dtype with the
scalars rounded to it, as MXNet's ``DType`` kernels do. Every update (SGD,
momentum SGD, NAG, Adam, RMSProp, FTRL, sign SGD, Signum) is written once
as a :class:`~mxnb.operator.fused.FusedMap`: one kernel on a GPU, and on
numpy the same statements a block at a time, so no temporary of the
weight's size is made. The states
are written before the weight, each element from its own old values, so
``out=weight`` is safe (NAG's momentum reads the new weight on purpose).

State kept: :data:`MAPS`, the fused maps made so far (the states are the
caller's arrays).

Example::

    >>> import mxnb as mx
    >>> w = mx.nd.ones(2); g = mx.nd.ones(2)
    >>> mx.nd.sgd_update(w, g, lr=0.5, out=w).asnumpy().tolist()
    [0.5, 0.5]
    >>> from mxnb.operator.registry import get
    >>> print(get("sgd_mom_update").create_property(lr=0.1, clip_gradient=1.0).statements())
    rescaled = clip(rescale_grad * grad, -clip_gradient, clip_gradient)
    mom = momentum * mom - lr_wd * weight - lr * rescaled
    out = weight + mom
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..fused import FusedMap
from ..param import ANY, Param
from ..registry import register
from ._common import KernelProp, computes_into, write

__all__ = ["MAPS", "UpdateProp"]


#: The updates' fused maps, one per op and clipping options (:meth:`UpdateProp.clipping`): each
#: dtype's kernel is compiled and checked once, however many properties share it (Adam's
#: learning rate, and so its property, changes every step).
MAPS: dict[tuple, FusedMap] = {}


class UpdateProp(KernelProp):
    """Base of the update ops: inputs ``weight, grad``, mutated states as aux, one output.

    A subclass gives its update as :meth:`formula`, statements of a fused map
    that read ``rescaled`` (the gradient rescaled and clipped), the weight,
    the states and the scalars, and set the states and ``out``.
    """

    states: tuple[str, ...] = ()
    #: Whether the weight decay joins the gradient before it is clipped (Adam, RMSProp).
    decay_in_gradient = False

    lr = Param(float, unbounded=ANY, doc="Learning rate (a negative rate ascends).")
    wd = Param(float, unbounded=ANY, default=0.0, doc="Weight decay (L2 penalty).")
    rescale_grad = Param(
        float, unbounded=ANY, default=1.0, doc="The gradient is multiplied by this first."
    )
    clip_gradient = Param(
        float,
        unbounded="any value; c < 0: no clipping",
        default=-1.0,
        doc="Clip the rescaled gradient to [-c, c]; c < 0: no clipping.",
    )

    def list_arguments(self) -> list[str]:
        """``weight, grad``."""
        return ["weight", "grad"]

    def list_auxiliary_states(self) -> list[str]:
        """The optimizer states this op rewrites."""
        return list(self.states)

    def declare_backward_dependency(self, out_grad, in_data, out_data):
        """Nothing: updates are not differentiated."""
        return []

    def init(self, kwargs: dict[str, Any]) -> None:
        """Parse the parameters (and forget the scalars and the map made from earlier ones)."""
        super().init(kwargs)
        self._scalars: dict[Any, dict[str, Any]] = {}
        self._maps: dict[tuple, FusedMap] = {}

    def scalars(self, dtype: Any) -> dict[str, Any]:
        """Every float parameter rounded to ``dtype`` (MXNet's ``DType(param)``), and ``lr_wd`` =
        lr * wd in it: numpy scalars, on every device (a kernel takes them by value; made on a
        GPU, each would be a copy to the device, and Adam's change every step).

        Made once per dtype: a property's parameters do not change, and the
        imperative invoke reuses the property of equal parameters, so an
        optimizer's update for one key makes them once.
        """
        values = self._scalars.get(dtype)
        if values is None:
            *names, _ = self.scalar_names()
            kind = np.dtype(dtype).type
            values = {name: kind(getattr(self, name)) for name in names}
            values["lr_wd"] = values["lr"] * values["wd"]
            self._scalars[dtype] = values
        return values

    def scalar_names(self) -> tuple[str, ...]:
        """The float parameters, then ``lr_wd``: the fused map's inputs after ``weight, grad``."""
        return (*(n for n in self.params if isinstance(getattr(self, n), float)), "lr_wd")

    def fused_map(self, *variant: Any) -> FusedMap:
        """This update as one fused map: inputs ``weight, grad`` and :meth:`scalar_names`,
        outputs the states and ``out``.  Made on first use, one per op, :meth:`clipping` and
        ``variant`` (what a call adds: NAG's output over its weight)."""
        found = self._maps.get(variant)
        if found is None:
            key = (self.op_name, self.clipping(), variant)
            found = MAPS.get(key)
            if found is None:
                inputs, outputs = ("weight", "grad", *self.scalar_names()), (*self.states, "out")
                text = self.statements(*variant)
                found = MAPS[key] = FusedMap(self.op_name, inputs, outputs, text)
            self._maps[variant] = found
        return found

    def clipping(self) -> tuple[bool, ...]:
        """Which clips the statements hold (the gradient's): with ``variant``, all that varies
        them, so the maps are keyed by it (:meth:`statements` reads the clips from it)."""
        return (self.clip_gradient >= 0,)

    def formula(self, *variant: Any) -> str:
        """The statements that set the states and ``out`` (see the class docstring)."""
        raise NotImplementedError(self.op_name)

    def statements(self, *variant: Any) -> str:
        """The whole update: ``rescaled`` as these parameters make it, then :meth:`formula`."""
        gradient = "rescale_grad * grad" + (" + wd * weight" if self.decay_in_gradient else "")
        if self.clipping()[0]:  # the text depends on the clips through clipping() alone
            gradient = f"clip({gradient}, -clip_gradient, clip_gradient)"
        lines = (line.strip() for line in self.formula(*variant).strip().splitlines())
        return "\n".join((f"rescaled = {gradient}", *lines))

    def variant(self, xp: Any, weight: Any, into: Any) -> tuple:
        """What this call adds to the statements' options (none; NAG overrides it)."""
        return ()

    def forward(self, ctx, in_data, req, out_data, aux):
        """Rewrite the states in ``aux`` and compute the new weight: one fused map.

        The new weight goes straight into the output when it is written
        (WRITE_TO / WRITE_INPLACE) in the weight's dtype; else into a
        temporary that :func:`write` then stores as ``req`` says.
        """
        weight, grad = in_data
        xp, out = ctx.xp, out_data[0]
        values = self.scalars(weight.dtype)
        into = out if computes_into(req[0], out, weight) else xp.empty_like(weight)
        fused = self.fused_map(*self.variant(xp, weight, into))
        fused(xp, weight, grad, *values.values(), out=(*aux, into))
        write(out, req[0], into)


@register("sgd_update")
class SGDUpdateProp(UpdateProp):
    """``weight = (1 - lr * wd) * weight - lr * clip(rescale_grad * grad)``."""

    lazy_update = Param(bool, default=True, doc="Only for row_sparse gradients (unused).")

    def formula(self) -> str:
        """Plain SGD."""
        return "out = (1 - lr_wd) * weight - lr * rescaled"


@register("sgd_mom_update")
class SGDMomUpdateProp(UpdateProp):
    """``mom = momentum * mom - lr * wd * weight - lr * grad; weight += mom`` (MXNet's order)."""

    states = ("mom",)
    momentum = Param(float, low=0.0, high=1.0, default=0.0, doc="Decay of the momentum.")
    lazy_update = Param(bool, default=True, doc="Only for row_sparse gradients (unused).")

    def formula(self) -> str:
        """SGD with momentum."""
        return """
            mom = momentum * mom - lr_wd * weight - lr * rescaled
            out = weight + mom
        """


@register("nag_mom_update")
class NAGMomUpdateProp(UpdateProp):
    """Nesterov momentum, as MXNet 1.9.1's kernel computes it.

    ``m = momentum * mom; weight' = weight - m + (momentum + 1) * (m - lr * (grad + wd * weight));
    mom = m - lr * (grad + wd * w)``, where ``w`` is the NEW weight when the output is
    the weight itself (``out=weight``, how the optimizer calls it): MXNet's kernel
    reads the weight after writing it.  We reproduce that so results match: the new
    momentum reads ``out`` then, a statement after ``out`` is written (a map of its own).
    """

    states = ("mom",)
    momentum = Param(float, low=0.0, high=1.0, default=0.0, doc="Decay of the momentum.")

    def variant(self, xp: Any, weight: Any, into: Any) -> tuple:
        """Whether the new weight goes over the weight (then the momentum reads it)."""
        return (bool(into is weight or xp.may_share_memory(into, weight)),)

    def formula(self, over_weight: bool = False) -> str:
        """Nesterov momentum, the weight written first."""
        decayed = "out" if over_weight else "weight"
        return f"""
            scaled = momentum * mom
            out = weight - scaled + (momentum + 1) * (scaled - lr * (rescaled + wd * weight))
            mom = scaled - lr * (rescaled + wd * {decayed})
        """


@register("adam_update")
class AdamUpdateProp(UpdateProp):
    """``mean = b1*mean + (1-b1)*g; var = b2*var + (1-b2)*g^2; w -= lr * mean / (sqrt(var) + eps)``, g with wd."""

    states = ("mean", "var")
    decay_in_gradient = True
    beta1 = Param(float, low=0.0, high=1.0, default=0.9, doc="Decay of the first moment.")
    beta2 = Param(float, low=0.0, high=1.0, default=0.999, doc="Decay of the second moment.")
    epsilon = Param(float, low=0.0, default=1e-8, doc="Added to the denominator.")
    lazy_update = Param(bool, default=True, doc="Only for row_sparse gradients (unused).")

    def formula(self) -> str:
        """Adam (bias correction is folded into ``lr`` by the optimizer)."""
        return """
            mean = beta1 * mean + (1 - beta1) * rescaled
            var = beta2 * var + (1 - beta2) * rescaled * rescaled
            out = weight - lr * mean / (sqrt(var) + epsilon)
        """


class _RMSPropBase(UpdateProp):
    """Shared parameters of the RMSProp updates; the weight decay joins the gradient before clipping."""

    decay_in_gradient = True
    gamma1 = Param(
        float, low=0.0, high=1.0, default=0.95, doc="Decay of the squared-gradient average."
    )
    epsilon = Param(float, low=0.0, default=1e-8, doc="Added inside the square root.")
    clip_weights = Param(
        float,
        unbounded="any value; c < 0: no clipping",
        default=-1.0,
        doc="Clip the weight to [-c, c]; c < 0: no clipping.",
    )

    def clipping(self) -> tuple[bool, ...]:
        """The gradient's clip and the weight's."""
        return (self.clip_gradient >= 0, self.clip_weights >= 0)

    def clipped_weight(self, expression: str) -> str:
        """``expression``, the new weight, clipped to ``clip_weights`` when that is >= 0."""
        if self.clipping()[1]:
            return f"clip({expression}, -clip_weights, clip_weights)"
        return expression


@register("rmsprop_update")
class RMSPropUpdateProp(_RMSPropBase):
    """``n = (1-gamma1)*g^2 + gamma1*n; weight -= lr * g / sqrt(n + epsilon)`` (Tieleman & Hinton)."""

    states = ("n",)

    def formula(self) -> str:
        """Plain RMSProp."""
        return f"""
            n = (1 - gamma1) * rescaled * rescaled + gamma1 * n
            out = {self.clipped_weight("weight - lr * (rescaled / sqrt(n + epsilon))")}
        """


@register("rmspropalex_update")
class RMSPropAlexUpdateProp(_RMSPropBase):
    """Centred RMSProp (Graves 2013): ``delta = gamma2*delta - lr*g/sqrt(n - g_avg^2 + eps); weight += delta``."""

    states = ("n", "g", "delta")
    gamma2 = Param(float, low=0.0, high=1.0, default=0.9, doc="Decay of the update (momentum).")

    def formula(self) -> str:
        """Centred RMSProp (``g`` is the state: the average gradient)."""
        return f"""
            n = (1 - gamma1) * rescaled * rescaled + gamma1 * n
            g = (1 - gamma1) * rescaled + gamma1 * g
            delta = gamma2 * delta - lr * (rescaled / sqrt(n - g * g + epsilon))
            out = {self.clipped_weight("weight + delta")}
        """


@register("ftrl_update")
class FtrlUpdateProp(UpdateProp):
    """FTRL-proximal: ``z``, ``n`` accumulate; ``w = (sign(z)*lamda1 - z) / ((beta + sqrt(n))/lr + wd) * (|z| > lamda1)``."""

    states = ("z", "n")
    lamda1 = Param(float, low=0.0, default=0.01, doc="L1 regularisation strength.")
    beta = Param(float, low=0.0, default=1.0, doc="Per-coordinate learning-rate offset.")

    def formula(self) -> str:
        """Follow the regularised leader.  MXNet's ``(|z| > lamda1)`` is ``kept``: the
        statements have no comparison, so ``sign(|z| - lamda1)``'s -1 / 0 / 1 is mapped to
        0 / 0 / 1 (exactly: ``a > b`` exactly when ``a - b > 0``, in floating point too)."""
        return """
            z = z + rescaled - (sqrt(n + rescaled * rescaled) - sqrt(n)) * weight / lr
            n = n + rescaled * rescaled
            above = sign(abs(z) - lamda1)
            kept = (above + above * above) / 2
            out = (sign(z) * lamda1 - z) / ((beta + sqrt(n)) / lr + wd) * kept
        """


@register("signsgd_update")
class SignSGDUpdateProp(UpdateProp):
    """``weight = (1 - lr * wd) * weight - lr * sign(grad)``."""

    def formula(self) -> str:
        """Sign SGD."""
        return "out = (1 - lr_wd) * weight - lr * sign(rescaled)"


@register("signum_update")
class SignumUpdateProp(UpdateProp):
    """``mom = momentum*mom - (1-momentum)*(wd*weight + grad); weight = (1 - lr*wd_lh)*weight + lr*sign(mom)``."""

    states = ("mom",)
    momentum = Param(float, low=0.0, high=1.0, default=0.0, doc="Decay of the momentum.")
    wd_lh = Param(
        float, unbounded=ANY, default=0.0, doc="Decoupled weight decay (Loshchilov & Hutter)."
    )

    def formula(self) -> str:
        """Signum."""
        return """
            mom = momentum * mom - (1 - momentum) * (wd * weight + rescaled)
            out = (1 - lr * wd_lh) * weight + lr * sign(mom)
        """
