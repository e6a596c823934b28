"""MXNet 1.x's other samplers: gamma, exponential, Poisson, (generalized) negative binomial, shuffle.

Idea (MXNet: src/operator/random/sample_op.cc, multisample_op.cc, shuffle_op.cc):
every distribution comes as two ops.  ``_random_<d>`` has no inputs: its
parameters are numbers and its output has the ``shape`` parameter.
``_sample_<d>`` takes the parameters as arrays of one shape ``S`` and draws
``shape`` samples per parameter set: the output is ``S + shape``.  Both ask for
the RANDOM resource, so they run in the order of the context's generator var and
the same ``mx.random.seed`` gives the same numbers.  ``_shuffle`` permutes an
array along its first axis.

Rule: MXNet's parameterizations - gamma(alpha = shape, beta = scale),
exponential(lam = rate; ``mx.nd.random.exponential`` takes ``scale = 1 / lam``),
poisson(lam), negative_binomial(k failures-to-stop, p success), and
generalized_negative_binomial(mu mean, alpha dispersion: a Poisson whose rate
is Gamma(1 / alpha, alpha * mu) distributed; alpha = 0 is a plain Poisson).
Discrete samplers return float32 by default, as in MXNet.  None has a gradient.

State kept: none beyond the registry entries.

Example::

    >>> import numpy as np
    >>> import mxnb as mx
    >>> mx.random.seed(3)
    >>> x = mx.nd.random.poisson(lam=4.0, shape=(1000,)).asnumpy()
    >>> bool(abs(x.mean() - 4.0) < 0.3)
    True
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..base import ResourceRequest
from ..param import ANY, DType, Param, Shape
from ..registry import register, register_alias
from ._common import KernelProp, write

from .sampling import SamplerProp  # the input-less base; _random_uniform / _normal live there

__all__ = ["DISTRIBUTIONS", "ShuffleProp"]


def _gamma(gen: np.random.Generator, alpha: Any, beta: Any, size: tuple) -> np.ndarray:
    return gen.gamma(alpha, beta, size=size)


def _exponential(gen: np.random.Generator, lam: Any, size: tuple) -> np.ndarray:
    return gen.exponential(1.0 / np.asarray(lam, dtype=np.float64), size=size)


def _poisson(gen: np.random.Generator, lam: Any, size: tuple) -> np.ndarray:
    return gen.poisson(lam, size=size)


def _negative_binomial(gen: np.random.Generator, k: Any, p: Any, size: tuple) -> np.ndarray:
    return gen.negative_binomial(k, p, size=size)


def _generalized_negative_binomial(
    gen: np.random.Generator, mu: Any, alpha: Any, size: tuple
) -> np.ndarray:
    mu, alpha = np.broadcast_to(mu, size), np.broadcast_to(alpha, size)
    rate = np.where(alpha > 0, gen.gamma(1.0 / np.maximum(alpha, 1e-30), alpha * mu), mu)
    return gen.poisson(rate)


def _uniform(gen: np.random.Generator, low: Any, high: Any, size: tuple) -> np.ndarray:
    return gen.uniform(low, high, size=size)


def _normal(gen: np.random.Generator, loc: Any, scale: Any, size: tuple) -> np.ndarray:
    return gen.normal(loc, scale, size=size)


#: name -> (parameter names with their defaults, sampler, default output dtype)
DISTRIBUTIONS: dict[str, tuple[dict[str, float], Any, str]] = {
    "uniform": ({"low": 0.0, "high": 1.0}, _uniform, "float32"),
    "normal": ({"loc": 0.0, "scale": 1.0}, _normal, "float32"),
    "gamma": ({"alpha": 1.0, "beta": 1.0}, _gamma, "float32"),
    "exponential": ({"lam": 1.0}, _exponential, "float32"),
    "poisson": ({"lam": 1.0}, _poisson, "float32"),
    "negative_binomial": ({"k": 1.0, "p": 1.0}, _negative_binomial, "float32"),
    "generalized_negative_binomial": (
        {"mu": 1.0, "alpha": 1.0},
        _generalized_negative_binomial,
        "float32",
    ),
}


class _RandomProp(SamplerProp):
    """Base of ``_random_<d>``: numbers as parameters, output of ``shape`` (see SamplerProp)."""

    distribution = ""

    def sample(self, generator: np.random.Generator, shape: tuple) -> np.ndarray:
        """Draw ``shape`` samples with the numeric parameters."""
        names, draw, _ = DISTRIBUTIONS[self.distribution]
        return draw(generator, *(getattr(self, n) for n in names), size=shape)


class _SampleProp(KernelProp):
    """Base of ``_sample_<d>``: parameter arrays of one shape ``S``; output ``S + shape``."""

    distribution = ""
    shape = Param(Shape, low=0, default=Shape(), doc="Samples drawn per parameter set.")
    dtype = Param(DType, default=None, optional=True, doc="Output dtype; None: the parameters'.")

    def list_arguments(self) -> list[str]:
        """The distribution's parameters, as arrays."""
        return list(DISTRIBUTIONS[self.distribution][0])

    def infer_shape(self, in_shape: list) -> Any:
        """All parameters share one shape ``S``; the output is ``S + shape``."""
        known = [tuple(s) for s in in_shape if s is not None]
        if not known:
            return None
        return [known[0]] * len(in_shape), [known[0] + tuple(self.shape)], []

    def infer_type(self, in_type: list) -> Any:
        """The output dtype: ``dtype``, or the parameters' dtype."""
        known = [t for t in in_type if t is not None]
        if not known:
            return None
        out = known[0] if self.dtype in (None, "None") else np.dtype(self.dtype)
        return [known[0]] * len(in_type), [out], []

    def forward_resource(self, in_shape: Any) -> list[ResourceRequest]:
        """The context's random generator."""
        return [ResourceRequest.RANDOM]

    def declare_backward_dependency(self, out_grad, in_data, out_data):  # type: ignore[no-untyped-def]
        """Nothing: samplers have no gradient."""
        return []

    def forward(self, ctx, in_data, req, out_data, aux):  # type: ignore[no-untyped-def]
        """Draw ``shape`` samples for each parameter set (parameters broadcast over the draws)."""
        _, draw, _ = DISTRIBUTIONS[self.distribution]
        out = out_data[0]
        extra = (1,) * len(tuple(self.shape))
        params = [np.asarray(p, dtype=np.float64).reshape(tuple(p.shape) + extra) for p in in_data]
        values = draw(ctx.requested[0].generator, *params, size=tuple(out.shape))
        write(out, req[0], ctx.xp.asarray(values.astype(out.dtype)))

    def backward(self, ctx, out_grad, in_data, out_data, req, in_grad, aux):  # type: ignore[no-untyped-def]
        """MXNet's multisample ops have no gradient: write zeros."""
        for grad, how in zip(in_grad, req):
            write(grad, how, 0)


def _make(distribution: str) -> None:
    names, _, _ = DISTRIBUTIONS[distribution]
    fields = {n: Param(float, unbounded=ANY, default=d, doc=f"The {n} parameter.")
              for n, d in names.items()}  # fmt: skip
    doc = f"Draw samples from a {distribution.replace('_', ' ')} distribution."
    if distribution not in ("uniform", "normal"):  # those two: .sampling
        random_cls = type(f"_Random_{distribution}", (_RandomProp,),
                          {"__doc__": doc, "distribution": distribution, **fields})  # fmt: skip
        register(f"_random_{distribution}")(random_cls)
        register_alias(f"random_{distribution}", f"_random_{distribution}")
    sample_doc = doc + " Parameters are arrays; one set of draws per element."
    sample_cls = type(f"_Sample_{distribution}", (_SampleProp,),
                      {"__doc__": sample_doc, "distribution": distribution})  # fmt: skip
    register(f"_sample_{distribution}")(sample_cls)
    register_alias(f"sample_{distribution}", f"_sample_{distribution}")


for _name in DISTRIBUTIONS:
    _make(_name)


@register("_shuffle")
class ShuffleProp(KernelProp):
    """Randomly permute an array along its first axis (each slice moves whole)."""

    def list_arguments(self) -> list[str]:
        """The array to shuffle."""
        return ["data"]

    def infer_shape(self, in_shape: list) -> Any:
        """Same shape as the input."""
        if in_shape[0] is None:
            return None
        return [tuple(in_shape[0])], [tuple(in_shape[0])], []

    def forward_resource(self, in_shape: Any) -> list[ResourceRequest]:
        """The context's random generator."""
        return [ResourceRequest.RANDOM]

    def declare_backward_dependency(self, out_grad, in_data, out_data):  # type: ignore[no-untyped-def]
        """Nothing: MXNet's shuffle has no gradient."""
        return []

    def forward(self, ctx, in_data, req, out_data, aux):  # type: ignore[no-untyped-def]
        """One random permutation of the first axis."""
        data = in_data[0]
        order = ctx.requested[0].generator.permutation(data.shape[0]) if data.ndim else None
        write(out_data[0], req[0], data if order is None else data[ctx.xp.asarray(order)])

    def backward(self, ctx, out_grad, in_data, out_data, req, in_grad, aux):  # type: ignore[no-untyped-def]
        """No gradient: zeros."""
        write(in_grad[0], req[0], 0)


register_alias("shuffle", "_shuffle")
