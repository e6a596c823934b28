"""Learning-rate schedules: the learning rate as a function of the update count.

Idea (MXNet: python/mxnet/lr_scheduler.py): an optimizer asks its scheduler
for the rate before every update, passing ``num_update`` (the largest update
count over its parameters).  A schedule may start with a warm-up, linear from
``warmup_begin_lr`` to ``base_lr`` or constant at ``warmup_begin_lr``, for
``warmup_steps`` updates.

Rule: the numbers equal MXNet 1.9.1's for the same arguments (tested against
vectors from real MXNet), including the stateful step counting of
FactorScheduler / MultiFactorScheduler, which assume ``num_update`` never
decreases.

State kept (per scheduler): ``base_lr`` (current rate of the step schedules,
the peak otherwise), ``count`` (the update count of the last step).

Example::

    >>> from mxnb.optimizer.lr_scheduler import FactorScheduler
    >>> schedule = FactorScheduler(step=2, factor=0.5, base_lr=1.0)
    >>> [schedule(n) for n in range(1, 6)]
    [1.0, 1.0, 0.5, 0.5, 0.25]
"""

from __future__ import annotations

import itertools
import logging
import math
from collections.abc import Sequence

from ..base import MXNBError

_LOG = logging.getLogger(__name__)

__all__ = [
    "CosineScheduler",
    "FactorScheduler",
    "LRScheduler",
    "MultiFactorScheduler",
    "PolyScheduler",
]


class LRScheduler:
    """Base of the schedules: the warm-up, then :meth:`__call__` of a subclass."""

    def __init__(
        self,
        base_lr: float = 0.01,
        warmup_steps: int = 0,
        warmup_begin_lr: float = 0.0,
        warmup_mode: str = "linear",
    ) -> None:
        self.base_lr = base_lr
        if not isinstance(warmup_steps, int) or warmup_steps < 0:
            raise MXNBError(f"LRScheduler: warmup_steps must be an int >= 0, got {warmup_steps!r}")
        if warmup_mode not in ("linear", "constant"):
            raise MXNBError(
                f"LRScheduler: warmup_mode must be 'linear' or 'constant', got {warmup_mode!r}"
            )
        if warmup_begin_lr > base_lr:
            raise MXNBError(
                f"LRScheduler: warmup_begin_lr={warmup_begin_lr} is above base_lr={base_lr}; "
                "a warm-up rises towards base_lr"
            )
        self.warmup_steps = warmup_steps
        self.warmup_begin_lr = warmup_begin_lr
        self.warmup_final_lr = base_lr
        self.warmup_mode = warmup_mode

    def get_warmup_lr(self, num_update: int) -> float:
        """The rate during warm-up (``num_update < warmup_steps``)."""
        if self.warmup_mode == "linear":
            increase = (
                (self.warmup_final_lr - self.warmup_begin_lr) * num_update / self.warmup_steps
            )
            return self.warmup_begin_lr + increase
        return self.warmup_begin_lr

    def __call__(self, num_update: int) -> float:
        """The learning rate for update number ``num_update``."""
        raise NotImplementedError(type(self).__name__)


class FactorScheduler(LRScheduler):
    """Multiply the rate by ``factor`` every ``step`` updates, never below ``stop_factor_lr``."""

    def __init__(
        self,
        step: int,
        factor: float = 1.0,
        stop_factor_lr: float = 1e-8,
        base_lr: float = 0.01,
        warmup_steps: int = 0,
        warmup_begin_lr: float = 0.0,
        warmup_mode: str = "linear",
    ) -> None:
        super().__init__(base_lr, warmup_steps, warmup_begin_lr, warmup_mode)
        if step < 1:
            raise MXNBError(f"FactorScheduler: step must be >= 1, got {step}")
        if factor > 1.0:
            raise MXNBError(f"FactorScheduler: factor must be <= 1 to decay the rate, got {factor}")
        self.step = step
        self.factor = factor
        self.stop_factor_lr = stop_factor_lr
        self.count = 0

    def __call__(self, num_update: int) -> float:
        """Decay once for every ``step`` updates passed since the last call."""
        if num_update < self.warmup_steps:
            return self.get_warmup_lr(num_update)
        while num_update > self.count + self.step:
            self.count += self.step
            self.base_lr *= self.factor
            if self.base_lr < self.stop_factor_lr:
                self.base_lr = self.stop_factor_lr
                _LOG.info(
                    "Update[%d]: now learning rate arrived at %0.5e, will not change in the future",
                    num_update,
                    self.base_lr,
                )
            else:
                _LOG.info("Update[%d]: Change learning rate to %0.5e", num_update, self.base_lr)
        return self.base_lr


class MultiFactorScheduler(LRScheduler):
    """Multiply the rate by ``factor`` when ``num_update`` passes each of the increasing ``step``."""

    def __init__(
        self,
        step: Sequence[int],
        factor: float = 1.0,
        base_lr: float = 0.01,
        warmup_steps: int = 0,
        warmup_begin_lr: float = 0.0,
        warmup_mode: str = "linear",
    ) -> None:
        super().__init__(base_lr, warmup_steps, warmup_begin_lr, warmup_mode)
        steps = list(step)
        if not steps or any(s < 1 for s in steps):
            raise MXNBError(f"MultiFactorScheduler: step must be a list of ints >= 1, got {step!r}")
        if any(later <= earlier for earlier, later in itertools.pairwise(steps)):
            raise MXNBError(f"MultiFactorScheduler: step must increase, got {steps}")
        if factor > 1.0:
            raise MXNBError(f"MultiFactorScheduler: factor must be <= 1, got {factor}")
        self.step = steps
        self.cur_step_ind = 0
        self.factor = factor
        self.count = 0

    def __call__(self, num_update: int) -> float:
        """Decay once per step boundary passed."""
        if num_update < self.warmup_steps:
            return self.get_warmup_lr(num_update)
        while self.cur_step_ind <= len(self.step) - 1:
            if num_update > self.step[self.cur_step_ind]:
                self.count = self.step[self.cur_step_ind]
                self.cur_step_ind += 1
                self.base_lr *= self.factor
                _LOG.info("Update[%d]: Change learning rate to %0.5e", num_update, self.base_lr)
            else:
                return self.base_lr
        return self.base_lr


class _DecayToFinal(LRScheduler):
    """A schedule falling from ``base_lr`` to ``final_lr`` over ``max_update`` updates."""

    def __init__(
        self,
        max_update: int,
        base_lr: float,
        final_lr: float,
        warmup_steps: int,
        warmup_begin_lr: float,
        warmup_mode: str,
    ) -> None:
        super().__init__(base_lr, warmup_steps, warmup_begin_lr, warmup_mode)
        if not isinstance(max_update, int) or max_update < 1:
            raise MXNBError(
                f"{type(self).__name__}: max_update must be an int >= 1, got {max_update!r}"
            )
        self.base_lr_orig = self.base_lr
        self.max_update = max_update
        self.final_lr = final_lr
        self.max_steps = self.max_update - self.warmup_steps

    def fraction(self, progress: float) -> float:
        """How much of ``base_lr - final_lr`` is left at ``progress`` in [0, 1]."""
        raise NotImplementedError

    def __call__(self, num_update: int) -> float:
        """The rate at ``num_update`` (``final_lr`` after ``max_update``)."""
        if num_update < self.warmup_steps:
            return self.get_warmup_lr(num_update)
        if num_update <= self.max_update:
            progress = float(num_update - self.warmup_steps) / float(self.max_steps)
            self.base_lr = self.final_lr + (self.base_lr_orig - self.final_lr) * self.fraction(
                progress
            )
        return self.base_lr


class PolyScheduler(_DecayToFinal):
    """Polynomial decay: ``final + (base - final) * (1 - progress) ** pwr``."""

    def __init__(
        self,
        max_update: int,
        base_lr: float = 0.01,
        pwr: float = 2,
        final_lr: float = 0.0,
        warmup_steps: int = 0,
        warmup_begin_lr: float = 0.0,
        warmup_mode: str = "linear",
    ) -> None:
        super().__init__(max_update, base_lr, final_lr, warmup_steps, warmup_begin_lr, warmup_mode)
        self.power = pwr

    def fraction(self, progress: float) -> float:
        """``(1 - progress) ** pwr``."""
        return pow(1 - progress, self.power)


class CosineScheduler(_DecayToFinal):
    """Cosine decay: ``final + (base - final) * (1 + cos(pi * progress)) / 2``."""

    def __init__(
        self,
        max_update: int,
        base_lr: float = 0.01,
        final_lr: float = 0.0,
        warmup_steps: int = 0,
        warmup_begin_lr: float = 0.0,
        warmup_mode: str = "linear",
    ) -> None:
        super().__init__(max_update, base_lr, final_lr, warmup_steps, warmup_begin_lr, warmup_mode)

    def fraction(self, progress: float) -> float:
        """``(1 + cos(pi * progress)) / 2``."""
        return (1 + math.cos(math.pi * progress)) / 2
