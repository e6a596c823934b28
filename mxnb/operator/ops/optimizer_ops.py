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
``FMutateInputs``).  The gradient is first rescaled, then clipped to
``[-clip_gradient, clip_gradient]`` when ``clip_gradient >= 0``; kernels
compute in the weight's dtype with the scalars rounded to it, as MXNet's
``DType`` kernels do.  Every value is computed before the output is written,
so ``out=weight`` is safe.

State kept: none (the states are the caller's arrays).

Example::

    >>> import mxnb as mx
    >>> w = mx.nd.ones(2); g = mx.nd.ones(2)
    >>> mx.nd.sgd_update(w, g, lr=0.5, out=w).asnumpy().tolist()
    [0.5, 0.5]
"""

from __future__ import annotations

from typing import Any

from ..param import ANY, Param
from ..registry import register
from ._common import KernelProp, ufunc_into, write

__all__ = ["UpdateProp"]


class UpdateProp(KernelProp):
    """Base of the update ops: inputs ``weight, grad``, mutated states as aux, one output."""

    states: tuple[str, ...] = ()

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
        """Parse the parameters (and forget the scalars made from earlier ones)."""
        super().init(kwargs)
        self._scalars: dict[Any, dict[str, Any]] = {}

    def scalar(self, xp: Any, value: float, dtype: Any) -> Any:
        """``value`` rounded to the kernel's dtype (MXNet's ``DType(param)``)."""
        return xp.asarray(value, dtype=dtype)[()]

    def scalars(self, xp: Any, dtype: Any) -> dict[str, Any]:
        """Every float parameter rounded to ``dtype``, and ``lr_wd`` = lr * wd in it.

        Made once per (array module, dtype): a property's parameters do not
        change, and the imperative invoke reuses the property of equal
        parameters, so an optimizer's update for one key makes them once.
        """
        key = (xp, dtype)
        values = self._scalars.get(key)
        if values is None:
            values = {
                name: self.scalar(xp, getattr(self, name), dtype)
                for name in self.params
                if isinstance(getattr(self, name), float)
            }
            values["lr_wd"] = values["lr"] * values["wd"]
            self._scalars[key] = values
        return values

    def rescaled(self, xp: Any, grad: Any) -> Any:
        """``clip(rescale_grad * grad, clip_gradient)`` (no clip when clip_gradient < 0)."""
        s = self.scalars(xp, grad.dtype)
        value = s["rescale_grad"] * grad
        if self.clip_gradient >= 0:
            value = xp.clip(value, -s["clip_gradient"], s["clip_gradient"])
        return value

    def forward(self, ctx, in_data, req, out_data, aux):
        """Compute the new weight (and rewrite the states in ``aux``)."""
        weight, grad = in_data
        xp = ctx.xp
        values = self.scalars(xp, weight.dtype)
        new_weight = self.step(xp, weight, self.rescaled(xp, grad), aux, values)
        write(out_data[0], req[0], new_weight)

    def step(self, xp: Any, weight: Any, grad: Any, states: list, s: dict) -> Any:
        """Return the new weight from the rescaled, clipped ``grad``; update ``states`` in place."""
        raise NotImplementedError(self.op_name)


@register("sgd_update")
class SGDUpdateProp(UpdateProp):
    """``weight = (1 - lr * wd) * weight - lr * clip(rescale_grad * grad)``."""

    lazy_update = Param(bool, default=True, doc="Only for row_sparse gradients (unused).")

    def step(self, xp, weight, grad, states, s):
        """Plain SGD."""
        return (1 - s["lr"] * s["wd"]) * weight - s["lr"] * grad


@register("sgd_mom_update")
class SGDMomUpdateProp(UpdateProp):
    """``mom = momentum * mom - lr * wd * weight - lr * grad; weight += mom``."""

    states = ("mom",)
    momentum = Param(float, low=0.0, high=1.0, default=0.0, doc="Decay of the momentum.")
    lazy_update = Param(bool, default=True, doc="Only for row_sparse gradients (unused).")

    def forward(self, ctx, in_data, req, out_data, aux):
        """SGD with momentum, the momentum rewritten in place and the weight written once.

        The same float operations in the same order as
        ``mom = momentum * mom - lr * wd * weight - lr * grad; out = weight + mom``
        (MXNet's kernel), with two temporaries instead of six: the update runs
        on every key of every step, between the devices' kernels.
        """
        weight, grad = in_data
        xp = ctx.xp
        s = self.scalars(xp, weight.dtype)
        grad = self.rescaled(xp, grad)
        mom = aux[0]
        mom *= s["momentum"]
        mom -= s["lr_wd"] * weight
        mom -= s["lr"] * grad
        if not ufunc_into(xp, "add", out_data[0], req[0], weight, mom):  # safe when out is weight
            write(out_data[0], req[0], weight + mom)


@register("nag_mom_update")
class NAGMomUpdateProp(UpdateProp):
    """Nesterov momentum, as MXNet 1.9.1's kernel computes it.

    ``m = momentum * mom; weight' = weight - m + (momentum + 1) * (m - lr * (grad + wd * weight));
    mom = m - lr * (grad + wd * w)``, where ``w`` is the NEW weight when the output is
    the weight itself (``out=weight``, how the optimizer calls it): MXNet's kernel
    reads the weight after writing it.  We reproduce that so results match.
    """

    states = ("mom",)
    momentum = Param(float, low=0.0, high=1.0, default=0.0, doc="Decay of the momentum.")

    def forward(self, ctx, in_data, req, out_data, aux):
        """Compute the new weight and momentum (see the class docstring)."""
        weight, grad = in_data
        xp = ctx.xp
        lr, wd, momentum = (
            self.scalar(xp, v, weight.dtype) for v in (self.lr, self.wd, self.momentum)
        )
        grad = self.rescaled(xp, grad)
        mom = aux[0]
        scaled = momentum * mom
        new_weight = weight - scaled + (momentum + 1) * (scaled - lr * (grad + wd * weight))
        aliased = out_data[0] is not None and xp.shares_memory(out_data[0], weight)
        decay_from = new_weight if aliased else weight
        mom[...] = scaled - lr * (grad + wd * decay_from)
        write(out_data[0], req[0], new_weight)


@register("adam_update")
class AdamUpdateProp(UpdateProp):
    """``mean = b1*mean + (1-b1)*g; var = b2*var + (1-b2)*g^2; w -= lr * mean / (sqrt(var) + eps)``, g with wd."""

    states = ("mean", "var")
    beta1 = Param(float, low=0.0, high=1.0, default=0.9, doc="Decay of the first moment.")
    beta2 = Param(float, low=0.0, high=1.0, default=0.999, doc="Decay of the second moment.")
    epsilon = Param(float, low=0.0, default=1e-8, doc="Added to the denominator.")
    lazy_update = Param(bool, default=True, doc="Only for row_sparse gradients (unused).")

    def rescaled(self, xp, grad):
        """Adam clips after adding weight decay: see :meth:`step`."""
        return grad

    def step(self, xp, weight, grad, states, s):
        """Adam (bias correction is folded into ``lr`` by the optimizer)."""
        mean, var = states
        grad = s["rescale_grad"] * grad + s["wd"] * weight
        if self.clip_gradient >= 0:
            grad = xp.clip(grad, -s["clip_gradient"], s["clip_gradient"])
        mean[...] = s["beta1"] * mean + (1 - s["beta1"]) * grad
        var[...] = s["beta2"] * var + (1 - s["beta2"]) * grad * grad
        return weight - s["lr"] * mean / (xp.sqrt(var) + s["epsilon"])


class _RMSPropBase(UpdateProp):
    """Shared parameters of the RMSProp updates; the weight decay joins the gradient before clipping."""

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

    def rescaled(self, xp, grad):
        """The gradient is rescaled together with the weight decay in :meth:`step`."""
        return grad

    def decayed(self, xp, weight, grad, s):
        """``clip(rescale_grad * grad + wd * weight)``."""
        grad = s["rescale_grad"] * grad + s["wd"] * weight
        if self.clip_gradient >= 0:
            grad = xp.clip(grad, -s["clip_gradient"], s["clip_gradient"])
        return grad

    def clipped_weight(self, xp, weight, s):
        """The weight clipped to ``clip_weights`` when that is >= 0."""
        if self.clip_weights >= 0:
            return xp.clip(weight, -s["clip_weights"], s["clip_weights"])
        return weight


@register("rmsprop_update")
class RMSPropUpdateProp(_RMSPropBase):
    """``n = (1-gamma1)*g^2 + gamma1*n; weight -= lr * g / sqrt(n + epsilon)`` (Tieleman & Hinton)."""

    states = ("n",)

    def step(self, xp, weight, grad, states, s):
        """Plain RMSProp."""
        n = states[0]
        grad = self.decayed(xp, weight, grad, s)
        n[...] = (1 - s["gamma1"]) * grad * grad + s["gamma1"] * n
        return self.clipped_weight(xp, weight - s["lr"] * (grad / xp.sqrt(n + s["epsilon"])), s)


@register("rmspropalex_update")
class RMSPropAlexUpdateProp(_RMSPropBase):
    """Centred RMSProp (Graves 2013): ``delta = gamma2*delta - lr*g/sqrt(n - g_avg^2 + eps); weight += delta``."""

    states = ("n", "g", "delta")
    gamma2 = Param(float, low=0.0, high=1.0, default=0.9, doc="Decay of the update (momentum).")

    def step(self, xp, weight, grad, states, s):
        """Centred RMSProp."""
        n, g, delta = states
        grad = self.decayed(xp, weight, grad, s)
        n[...] = (1 - s["gamma1"]) * grad * grad + s["gamma1"] * n
        g[...] = (1 - s["gamma1"]) * grad + s["gamma1"] * g
        delta[...] = s["gamma2"] * delta - s["lr"] * (grad / xp.sqrt(n - g * g + s["epsilon"]))
        return self.clipped_weight(xp, weight + delta, s)


@register("ftrl_update")
class FtrlUpdateProp(UpdateProp):
    """FTRL-proximal: ``z``, ``n`` accumulate; ``w = (sign(z)*lamda1 - z) / ((beta + sqrt(n))/lr + wd) * (|z| > lamda1)``."""

    states = ("z", "n")
    lamda1 = Param(float, low=0.0, default=0.01, doc="L1 regularisation strength.")
    beta = Param(float, low=0.0, default=1.0, doc="Per-coordinate learning-rate offset.")

    def step(self, xp, weight, grad, states, s):
        """Follow the regularised leader."""
        z, n = states
        lr = s["lr"]
        z[...] = z + grad - (xp.sqrt(n + grad * grad) - xp.sqrt(n)) * weight / lr
        n[...] = n + grad * grad
        value = (xp.sign(z) * s["lamda1"] - z) / ((s["beta"] + xp.sqrt(n)) / lr + s["wd"])
        return value * (xp.abs(z) > s["lamda1"]).astype(weight.dtype)


@register("signsgd_update")
class SignSGDUpdateProp(UpdateProp):
    """``weight = (1 - lr * wd) * weight - lr * sign(grad)``."""

    def step(self, xp, weight, grad, states, s):
        """Sign SGD."""
        return (1 - s["lr"] * s["wd"]) * weight - s["lr"] * xp.sign(grad)


@register("signum_update")
class SignumUpdateProp(UpdateProp):
    """``mom = momentum*mom - (1-momentum)*(wd*weight + grad); weight = (1 - lr*wd_lh)*weight + lr*sign(mom)``."""

    states = ("mom",)
    momentum = Param(float, low=0.0, high=1.0, default=0.0, doc="Decay of the momentum.")
    wd_lh = Param(
        float, unbounded=ANY, default=0.0, doc="Decoupled weight decay (Loshchilov & Hutter)."
    )

    def step(self, xp, weight, grad, states, s):
        """Signum."""
        mom = states[0]
        mom[...] = s["momentum"] * mom - (1 - s["momentum"]) * (s["wd"] * weight + grad)
        return (1 - s["lr"] * s["wd_lh"]) * weight + s["lr"] * xp.sign(mom)
