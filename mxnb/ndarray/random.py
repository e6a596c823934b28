"""``mx.nd.random``: sampling into NDArrays from the context's random resource.

Idea (MXNet: python/mxnet/ndarray/random.py): each sampler is an operator
asking for the RANDOM resource, so draws are pushed to the engine like any
op and serialized on the context's generator var — the same
``mx.random.seed(n)`` gives the same numbers whatever the engine.

Example::

    >>> import mxnb as mx
    >>> mx.random.seed(1)
    >>> mx.nd.random.uniform(0, 1, shape=(2,)).shape
    (2,)
"""

from __future__ import annotations

from typing import Any

from ..base import ParamError, np_dtype
from .invoke import invoke
from .ndarray import NDArray

__all__ = [
    "exponential",
    "gamma",
    "generalized_negative_binomial",
    "multinomial",
    "negative_binomial",
    "normal",
    "poisson",
    "randint",
    "randn",
    "shuffle",
    "uniform",
]


def _shape(shape: Any) -> tuple:
    if shape is None:
        return (1,)
    if isinstance(shape, int):
        return (shape,)
    return tuple(shape)


def _sample(
    op: str, params: dict[str, Any], shape: Any, dtype: Any, ctx: Any, out: NDArray | None
) -> NDArray:
    arrays = [value for value in params.values() if isinstance(value, NDArray)]
    if arrays:  # MXNet's _sample_<d>: one set of draws per parameter element
        if len(arrays) != len(params):
            raise ParamError(
                f"mx.nd.random ({op}): the parameters {sorted(params)} must be all numbers or "
                f"all NDArrays; got a mix"
            )
        sample_params: dict[str, Any] = {} if shape is None else {"shape": _shape(shape)}
        if dtype is not None:
            sample_params["dtype"] = np_dtype(dtype).name
        return invoke(op.replace("_random_", "_sample_"), arrays, sample_params, out=out)[0]
    if out is not None:
        params["shape"] = out.shape
        params["dtype"] = out.dtype.name
        invoke(op, [], params, out=out, ctx=out.context)
        return out
    params["shape"] = _shape(shape)
    if dtype is not None:
        params["dtype"] = np_dtype(dtype).name
    return invoke(op, [], params, ctx=ctx)[0]


def uniform(
    low: float = 0.0,
    high: float = 1.0,
    shape: Any = None,
    dtype: Any = None,
    ctx: Any = None,
    out: NDArray | None = None,
    **kwargs: Any,
) -> NDArray:
    """Samples uniformly distributed on ``[low, high)`` (the ``_random_uniform`` op)."""
    return _sample("_random_uniform", {"low": low, "high": high}, shape, dtype, ctx, out)


def normal(
    loc: float = 0.0,
    scale: float = 1.0,
    shape: Any = None,
    dtype: Any = None,
    ctx: Any = None,
    out: NDArray | None = None,
    **kwargs: Any,
) -> NDArray:
    """Samples from a normal distribution (the ``_random_normal`` op)."""
    return _sample("_random_normal", {"loc": loc, "scale": scale}, shape, dtype, ctx, out)


def randn(
    *shape: int, loc: float = 0.0, scale: float = 1.0, dtype: Any = None, ctx: Any = None
) -> NDArray:
    """Normal samples of the given shape: ``randn(2, 3)``."""
    return normal(loc, scale, shape=shape or (1,), dtype=dtype, ctx=ctx)


def randint(
    low: int,
    high: int,
    shape: Any = None,
    dtype: Any = None,
    ctx: Any = None,
    out: NDArray | None = None,
    **kwargs: Any,
) -> NDArray:
    """Integers drawn uniformly from ``[low, high)`` (the ``_random_randint`` op; int32 default)."""
    return _sample("_random_randint", {"low": int(low), "high": int(high)}, shape, dtype, ctx, out)


def multinomial(
    data: NDArray,
    shape: Any = None,
    get_prob: bool = False,
    out: NDArray | None = None,
    dtype: Any = "int32",
) -> Any:
    """Draw category indices from the distributions in ``data``'s last axis (MXNet: same name).

    Returns the draws, or ``[draws, log_probabilities]`` with ``get_prob``.
    """
    params = {"get_prob": get_prob, "dtype": np_dtype(dtype).name}
    if shape is not None:
        params["shape"] = _shape(shape)
    outputs = invoke("_sample_multinomial", [data], params, out=out)
    return outputs if get_prob else outputs[0]


def gamma(
    alpha: Any = 1.0,
    beta: Any = 1.0,
    shape: Any = None,
    dtype: Any = None,
    ctx: Any = None,
    out: NDArray | None = None,
    **kwargs: Any,
) -> NDArray:
    """Gamma samples, shape ``alpha`` and scale ``beta`` (numbers, or NDArrays: one draw set each)."""
    return _sample("_random_gamma", {"alpha": alpha, "beta": beta}, shape, dtype, ctx, out)


def exponential(
    scale: Any = 1.0,
    shape: Any = None,
    dtype: Any = None,
    ctx: Any = None,
    out: NDArray | None = None,
    **kwargs: Any,
) -> NDArray:
    """Exponential samples of mean ``scale`` (the op's ``lam`` is ``1 / scale``, as in MXNet)."""
    return _sample("_random_exponential", {"lam": 1.0 / scale}, shape, dtype, ctx, out)


def poisson(
    lam: Any = 1.0,
    shape: Any = None,
    dtype: Any = None,
    ctx: Any = None,
    out: NDArray | None = None,
    **kwargs: Any,
) -> NDArray:
    """Poisson samples of rate ``lam`` (float32 counts by default, as MXNet)."""
    return _sample("_random_poisson", {"lam": lam}, shape, dtype, ctx, out)


def negative_binomial(
    k: Any = 1,
    p: Any = 1.0,
    shape: Any = None,
    dtype: Any = None,
    ctx: Any = None,
    out: NDArray | None = None,
    **kwargs: Any,
) -> NDArray:
    """Failures before the ``k``-th success, success probability ``p``."""
    return _sample("_random_negative_binomial", {"k": k, "p": p}, shape, dtype, ctx, out)


def generalized_negative_binomial(
    mu: Any = 1.0,
    alpha: Any = 1.0,
    shape: Any = None,
    dtype: Any = None,
    ctx: Any = None,
    out: NDArray | None = None,
    **kwargs: Any,
) -> NDArray:
    """Negative binomial of mean ``mu`` and dispersion ``alpha`` (a gamma-Poisson mixture)."""
    params = {"mu": mu, "alpha": alpha}
    return _sample("_random_generalized_negative_binomial", params, shape, dtype, ctx, out)


def shuffle(data: NDArray, out: NDArray | None = None, **kwargs: Any) -> NDArray:
    """A random permutation of ``data`` along its first axis."""
    return invoke("_shuffle", [data], {}, out=out)[0]
