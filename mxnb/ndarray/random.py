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

from ..base import np_dtype
from . import _extra_ops  # noqa: F401 - registers the samplers the op library lacks
from .invoke import invoke
from .ndarray import NDArray

__all__ = ["multinomial", "normal", "randint", "randn", "uniform"]


def _shape(shape: Any) -> tuple:
    if shape is None:
        return (1,)
    if isinstance(shape, int):
        return (shape,)
    return tuple(shape)


def _sample(
    op: str, params: dict[str, Any], shape: Any, dtype: Any, ctx: Any, out: NDArray | None
) -> NDArray:
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
