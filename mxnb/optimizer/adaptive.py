"""Adaptive methods: Adam, AdaGrad, RMSProp (plain and centred), AdaDelta, FTRL.

Idea (MXNet: python/mxnet/optimizer/optimizer.py): these keep running
statistics of the gradient per coordinate and scale each step by them.
Adam, RMSProp and FTRL are one fused op per step; AdaGrad and AdaDelta are a
few NDArray ops, as in MXNet 1.9.1 (each op is still an engine op on the
weight's and the state's vars).

Rule: Adam folds its bias correction into the learning rate,
``lr * sqrt(1 - beta2^t) / (1 - beta1^t)`` with ``t`` the parameter's update
count; AdaDelta ignores the learning rate, as MXNet's does.

State kept: per parameter, the arrays named in each ``create_state``.

Example::

    >>> import mxnb as mx
    >>> opt = mx.optimizer.Adam(learning_rate=0.1)
    >>> w = mx.nd.ones(2); state = opt.create_state(0, w)
    >>> opt.update(0, w, mx.nd.ones(2), state)
    >>> [round(float(v), 3) for v in w.asnumpy()]
    [0.9, 0.9]
"""

from __future__ import annotations

import math
from typing import Any

from .. import ndarray as nd
from .optimizer import Optimizer, register

__all__ = ["AdaDelta", "AdaGrad", "Adam", "Ftrl", "RMSProp"]


def _zeros_like(weight: Any) -> Any:
    return nd.zeros(weight.shape, ctx=weight.context, dtype=weight.dtype)


def _rescale_clip(optimizer: Optimizer, grad: Any) -> Any:
    """``clip(grad * rescale_grad, -clip_gradient, clip_gradient)`` as NDArray ops (a new array)."""
    grad = grad * optimizer.rescale_grad
    if optimizer.clip_gradient is not None:
        grad = nd.clip(grad, -optimizer.clip_gradient, optimizer.clip_gradient)
    return grad


@register
class Adam(Optimizer):
    """Adam (Kingma & Ba 2014) through ``adam_update``."""

    def __init__(
        self,
        learning_rate: float = 0.001,
        beta1: float = 0.9,
        beta2: float = 0.999,
        epsilon: float = 1e-8,
        lazy_update: bool = True,
        **kwargs: Any,
    ) -> None:
        super().__init__(learning_rate=learning_rate, **kwargs)
        # beta = 1 divides by zero in the bias correction (MXNet 1.9.1: ZeroDivisionError)
        self.beta1 = self._number("beta1", beta1, low=0, high=1, high_open=True)
        self.beta2 = self._number("beta2", beta2, low=0, high=1, high_open=True)
        self.epsilon = self._number("epsilon", epsilon, low=0)
        self.lazy_update = lazy_update

    def create_state(self, index: Any, weight: Any) -> Any:
        """``(mean, var)``, zeros."""
        return (_zeros_like(weight), _zeros_like(weight))

    def update(self, index: Any, weight: Any, grad: Any, state: Any) -> None:
        """One ``adam_update`` op with the bias-corrected learning rate."""
        self._fused_update(
            "adam_update",
            index,
            weight,
            grad,
            state,
            lr_scale=lambda t: math.sqrt(1.0 - self.beta2**t) / (1.0 - self.beta1**t),
            lazy_update=self.lazy_update,
            beta1=self.beta1,
            beta2=self.beta2,
            epsilon=self.epsilon,
        )


@register
class AdaGrad(Optimizer):
    """AdaGrad (Duchi et al. 2011): ``history += g^2; weight -= lr * (g / sqrt(history + eps) + wd * weight)``."""

    def __init__(self, eps: float = 1e-7, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.float_stable_eps = self._number("eps", eps, low=0)

    def create_state(self, index: Any, weight: Any) -> Any:
        """The squared-gradient history, zeros."""
        return _zeros_like(weight)

    def update(self, index: Any, weight: Any, grad: Any, state: Any) -> None:
        """A few NDArray ops, as MXNet 1.9.1's dense AdaGrad."""
        self._update_count(index)
        lr = self._get_lr(index)
        wd = self._get_wd(index)
        history = state
        grad = _rescale_clip(self, grad)
        history[:] += nd.square(grad)
        div = grad / nd.sqrt(history + self.float_stable_eps)
        weight[:] += (div + weight * wd) * -lr


@register
class RMSProp(Optimizer):
    """RMSProp: Tieleman & Hinton (``rmsprop_update``) or centred, Graves (``rmspropalex_update``)."""

    def __init__(
        self,
        learning_rate: float = 0.001,
        gamma1: float = 0.9,
        gamma2: float = 0.9,
        epsilon: float = 1e-8,
        centered: bool = False,
        clip_weights: float | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(learning_rate=learning_rate, **kwargs)
        self.gamma1 = self._number("gamma1", gamma1, low=0, high=1)
        self.gamma2 = self._number("gamma2", gamma2, low=0, high=1)
        self.centered = centered
        self.epsilon = self._number("epsilon", epsilon, low=0)
        self.clip_weights = self._number("clip_weights", clip_weights, optional=True)

    def create_state(self, index: Any, weight: Any) -> Any:
        """``(n,)``, or ``(n, g, delta)`` when centred; zeros."""
        if self.centered:
            return (_zeros_like(weight), _zeros_like(weight), _zeros_like(weight))
        return (_zeros_like(weight),)

    def update(self, index: Any, weight: Any, grad: Any, state: Any) -> None:
        """One ``rmsprop_update`` / ``rmspropalex_update`` op."""
        params = {"gamma1": self.gamma1, "epsilon": self.epsilon}
        if self.clip_weights:
            params["clip_weights"] = self.clip_weights
        if self.centered:
            self._fused_update(
                "rmspropalex_update", index, weight, grad, state, gamma2=self.gamma2, **params
            )
        else:
            self._fused_update("rmsprop_update", index, weight, grad, state, **params)


@register
class AdaDelta(Optimizer):
    """AdaDelta (Zeiler 2012); the learning rate is not used."""

    def __init__(self, rho: float = 0.90, epsilon: float = 1e-5, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.rho = self._number("rho", rho, low=0, high=1)
        self.epsilon = self._number("epsilon", epsilon, low=0)

    def create_state(self, index: Any, weight: Any) -> Any:
        """``(acc_g, acc_delta)``, zeros."""
        return (_zeros_like(weight), _zeros_like(weight))

    def update(self, index: Any, weight: Any, grad: Any, state: Any) -> None:
        """NDArray ops, as MXNet 1.9.1 (without rescaling the caller's ``grad`` in place)."""
        wd = self._get_wd(index)
        self._update_count(index)
        grad = _rescale_clip(self, grad)
        acc_g, acc_delta = state
        acc_g[:] *= self.rho
        acc_g[:] += (1.0 - self.rho) * grad * grad
        current_delta = nd.sqrt(acc_delta + self.epsilon) / nd.sqrt(acc_g + self.epsilon) * grad
        acc_delta[:] *= self.rho
        acc_delta[:] += (1.0 - self.rho) * current_delta * current_delta
        weight[:] -= current_delta + wd * weight


@register
class Ftrl(Optimizer):
    """FTRL-proximal (McMahan et al. 2013) through ``ftrl_update``."""

    def __init__(
        self, lamda1: float = 0.01, learning_rate: float = 0.1, beta: float = 1, **kwargs: Any
    ) -> None:
        super().__init__(learning_rate=learning_rate, **kwargs)
        self.lamda1 = self._number("lamda1", lamda1)
        self.beta = self._number("beta", beta)

    def create_state(self, index: Any, weight: Any) -> Any:
        """``(z, n)``, zeros."""
        return (_zeros_like(weight), _zeros_like(weight))

    def update(self, index: Any, weight: Any, grad: Any, state: Any) -> None:
        """One ``ftrl_update`` op."""
        self._fused_update(
            "ftrl_update", index, weight, grad, state, lamda1=self.lamda1, beta=self.beta
        )
