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

from ..base import ParamError
from .creation import create
from .symbol import Symbol

__all__ = [
    "exponential",
    "gamma",
    "generalized_negative_binomial",
    "multinomial",
    "negative_binomial",
    "normal",
    "poisson",
    "randint",
    "shuffle",
    "uniform",
]


def _sample(
    op: str, params: dict[str, Any], shape: Any, dtype: Any, kwargs: dict[str, Any]
) -> Symbol:
    symbols = [value for value in params.values() if isinstance(value, Symbol)]
    if symbols:  # MXNet's _sample_<d>: the parameters are arrays, one draw set per element
        if len(symbols) != len(params):
            raise ParamError(
                f"mx.sym.random ({op}): the parameters {sorted(params)} must be all numbers or "
                f"all Symbols; got a mix"
            )
        op = op.replace("_random_", "_sample_")
        params = {}
        if shape is not None:
            params["shape"] = shape if isinstance(shape, Sequence) else (int(shape),)
        if dtype is not None:
            params["dtype"] = dtype
        return create(op, *symbols, hint=op, **params, **kwargs)
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


def gamma(
    alpha: Any = 1.0, beta: Any = 1.0, shape: Any = None, dtype: Any = None, **kwargs: Any
) -> Symbol:
    """Gamma samples, shape ``alpha`` and scale ``beta`` (``_random_gamma`` / ``_sample_gamma``)."""
    return _sample("_random_gamma", {"alpha": alpha, "beta": beta}, shape, dtype, kwargs)


def exponential(scale: Any = 1.0, shape: Any = None, dtype: Any = None, **kwargs: Any) -> Symbol:
    """Exponential samples of mean ``scale`` (the op's ``lam`` is ``1 / scale``, as in MXNet)."""
    return _sample("_random_exponential", {"lam": 1.0 / scale}, shape, dtype, kwargs)


def poisson(lam: Any = 1.0, shape: Any = None, dtype: Any = None, **kwargs: Any) -> Symbol:
    """Poisson samples of rate ``lam``."""
    return _sample("_random_poisson", {"lam": lam}, shape, dtype, kwargs)


def negative_binomial(
    k: Any = 1, p: Any = 1.0, shape: Any = None, dtype: Any = None, **kwargs: Any
) -> Symbol:
    """Failures before the ``k``-th success, success probability ``p``."""
    return _sample("_random_negative_binomial", {"k": k, "p": p}, shape, dtype, kwargs)


def generalized_negative_binomial(
    mu: Any = 1.0, alpha: Any = 1.0, shape: Any = None, dtype: Any = None, **kwargs: Any
) -> Symbol:
    """Negative binomial of mean ``mu`` and dispersion ``alpha``."""
    params = {"mu": mu, "alpha": alpha}
    return _sample("_random_generalized_negative_binomial", params, shape, dtype, kwargs)


def multinomial(
    data: Symbol, shape: Any = None, get_prob: bool = False, dtype: Any = "int32", **kwargs: Any
) -> Symbol:
    """Category draws from the distributions in ``data``'s last axis (``_sample_multinomial``)."""
    params: dict[str, Any] = {"get_prob": get_prob, "dtype": dtype}
    if shape is not None:
        params["shape"] = shape if isinstance(shape, Sequence) else (int(shape),)
    return create("_sample_multinomial", data, hint="_sample_multinomial", **params, **kwargs)


def shuffle(data: Symbol, **kwargs: Any) -> Symbol:
    """A random permutation of ``data`` along its first axis (``_shuffle``)."""
    return create("_shuffle", data, hint="_shuffle", **kwargs)
