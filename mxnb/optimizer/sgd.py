"""Momentum methods: SGD, NAG and Signum, each one fused update op per step.

Idea (MXNet: ``SGD``, ``NAG``, ``Signum`` in python/mxnet/optimizer/optimizer.py):
with momentum the state is one array shaped like the weight; without, there
is no state and the plain op runs (``sgd_update`` / ``signsgd_update``).
Each update is a single engine op (``out=weight``), so it is ordered after
every reader of the weight and before every later reader.

Rule: ``update`` first counts the update, then reads lr and wd for the
parameter (schedule, multipliers), then pushes the op.

State kept: per parameter, the momentum array (or None).

Example::

    >>> import mxnb as mx
    >>> opt = mx.optimizer.SGD(learning_rate=0.1, momentum=0.9)
    >>> w = mx.nd.ones(2); state = opt.create_state(0, w)
    >>> opt.update(0, w, mx.nd.ones(2), state)
    >>> [round(float(v), 3) for v in w.asnumpy()]
    [0.9, 0.9]
"""

from __future__ import annotations

from typing import Any

from .. import ndarray as nd
from .optimizer import Optimizer, register

__all__ = ["NAG", "SGD", "Signum"]


def _momentum_state(momentum: float, weight: Any) -> Any:
    """A zero momentum shaped like ``weight``, or None without momentum."""
    if momentum == 0.0:
        return None
    return nd.zeros(weight.shape, ctx=weight.context, dtype=weight.dtype)


@register
class SGD(Optimizer):
    """Stochastic gradient descent, with momentum, weight decay and multi-precision.

    ``state = momentum * state - lr * (rescale_grad * grad + wd * weight); weight += state``.
    """

    def __init__(self, momentum: float = 0.0, lazy_update: bool = True, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.momentum = self._number("momentum", momentum, low=0, high=1)
        self.lazy_update = lazy_update

    def create_state(self, index: Any, weight: Any) -> Any:
        """The momentum (None when ``momentum == 0``)."""
        return _momentum_state(self.momentum, weight)

    def update(self, index: Any, weight: Any, grad: Any, state: Any) -> None:
        """One ``sgd_mom_update`` (or ``sgd_update``) op writing ``weight``."""
        if state is None:
            self._fused_update("sgd_update", index, weight, grad, lazy_update=self.lazy_update)
        else:
            self._fused_update(
                "sgd_mom_update",
                index,
                weight,
                grad,
                [state],
                momentum=self.momentum,
                lazy_update=self.lazy_update,
            )


@register
class NAG(Optimizer):
    """Nesterov accelerated gradient (``nag_mom_update``; ``sgd_update`` without momentum)."""

    def __init__(self, momentum: float = 0.0, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.momentum = self._number("momentum", momentum, low=0, high=1)

    def create_state(self, index: Any, weight: Any) -> Any:
        """The momentum (None when ``momentum == 0``)."""
        return _momentum_state(self.momentum, weight)

    def update(self, index: Any, weight: Any, grad: Any, state: Any) -> None:
        """One ``nag_mom_update`` (or ``sgd_update``) op writing ``weight``."""
        if state is None:
            self._fused_update("sgd_update", index, weight, grad)
        else:
            self._fused_update(
                "nag_mom_update", index, weight, grad, [state], momentum=self.momentum
            )


@register
class Signum(Optimizer):
    """Sign of the momentum (Bernstein et al. 2018); ``signsgd_update`` without momentum.

    ``wd_lh`` is the decoupled weight decay of Loshchilov & Hutter.
    """

    def __init__(
        self, learning_rate: float = 0.01, momentum: float = 0.9, wd_lh: float = 0.0, **kwargs: Any
    ) -> None:
        super().__init__(learning_rate=learning_rate, **kwargs)
        self.momentum = self._number("momentum", momentum, low=0, high=1)
        self.wd_lh = self._number("wd_lh", wd_lh)

    def create_state(self, index: Any, weight: Any) -> Any:
        """The momentum (None when ``momentum == 0``)."""
        return _momentum_state(self.momentum, weight)

    def update(self, index: Any, weight: Any, grad: Any, state: Any) -> None:
        """One ``signum_update`` (or ``signsgd_update``) op writing ``weight``."""
        if state is None:
            self._fused_update("signsgd_update", index, weight, grad)
        else:
            extra = {"wd_lh": self.wd_lh} if self.wd_lh else {}
            self._fused_update(
                "signum_update", index, weight, grad, [state], momentum=self.momentum, **extra
            )
