"""``mx.random``: seeding the random resources and sampling into NDArrays.

Idea (MXNet: python/mxnet/random.py): ``mx.random.seed(n)`` reseeds the
random generator of every context (or of one); each generator is guarded by
its own engine var, so the reseed is ordered with the random ops around it
and the same seed gives the same numbers whatever the engine.  The samplers
are those of :mod:`mxnb.ndarray.random`.

Example::

    >>> import mxnb as mx
    >>> mx.random.seed(42)
    >>> first = mx.random.uniform(shape=(2,)).asnumpy()
    >>> mx.random.seed(42)
    >>> bool((mx.random.uniform(shape=(2,)).asnumpy() == first).all())
    True
"""

from __future__ import annotations

from typing import Any

from . import resource as _resource
from .ndarray.random import normal, randint, randn, uniform

__all__ = ["normal", "randint", "randn", "seed", "uniform"]


def seed(seed_state: int, ctx: Any = "all") -> None:
    """Seed the random generators of every context (``ctx='all'``) or of ``ctx``."""
    _resource.seed(seed_state, ctx)
