"""``mx.sym.random``: random-number nodes (``_random_uniform`` / ``_random_normal`` / ``_random_randint``).

Idea (MXNet: ``mx.sym.random``): sampling is an operator with no inputs whose
parameters give the distribution and the output shape; it draws from the
context's random resource when the graph runs.  Named like MXNet's nodes
(``_random_uniform0``).

Example::

    >>> import mxnb as mx
    >>> noise = mx.sym.random.normal(0, 1, shape=(2, 3))
    >>> noise.infer_shape()[1]
    [(2, 3)]
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..base import NotSupportedError
from .creation import create
from .symbol import Symbol

__all__ = ["normal", "randint", "uniform"]


def _sample(
    op: str, params: dict[str, Any], shape: Any, dtype: Any, kwargs: dict[str, Any]
) -> Symbol:
    for key, value in params.items():
        if isinstance(value, Symbol):
            raise NotSupportedError(
                f"mx.sym.random: a Symbol as {key} (MXNet's _sample_* ops) is not supported; "
                f"pass a number"
            )
    if shape is not None:
        params["shape"] = shape if isinstance(shape, Sequence) else (int(shape),)
    if dtype is not None:
        params["dtype"] = dtype
    return create(op, hint=op, **params, **kwargs)


def uniform(
    low: float = 0.0, high: float = 1.0, shape: Any = None, dtype: Any = None, **kwargs: Any
) -> Symbol:
    """Samples uniformly from ``[low, high)`` (the ``_random_uniform`` operator)."""
    return _sample("_random_uniform", {"low": low, "high": high}, shape, dtype, kwargs)


def normal(
    loc: float = 0.0, scale: float = 1.0, shape: Any = None, dtype: Any = None, **kwargs: Any
) -> Symbol:
    """Samples from a normal distribution (the ``_random_normal`` operator)."""
    return _sample("_random_normal", {"loc": loc, "scale": scale}, shape, dtype, kwargs)


def randint(low: int, high: int, shape: Any = None, dtype: Any = None, **kwargs: Any) -> Symbol:
    """Samples integers uniformly from ``[low, high)`` (the ``_random_randint`` operator)."""
    return _sample("_random_randint", {"low": low, "high": high}, shape, dtype, kwargs)
