"""The input-less samplers: :class:`SamplerProp` and the uniform, normal and randint ops.

Idea: a sampler has no inputs; its parameters (``shape``, ``ctx``,
``dtype``) and the RANDOM resource make its output.  :class:`SamplerProp` is
the base every ``_random_<distribution>`` op builds on (:mod:`.samplers` holds
the other distributions).  They follow MXNet's names and parameters; each is
registered only when no op of that name exists yet.

* ``_random_uniform`` / ``_random_normal`` / ``_random_randint`` (aliases
  ``random_uniform``, ``uniform``, ``random_normal``, ``normal``,
  ``random_randint``, as MXNet): samplers without inputs (MXNet: src/operator/random/sample_op.cc); they ask for the
  RANDOM resource, so they are serialized on the context's generator var and
  the same seed gives the same numbers whatever the engine.

Example::

    >>> import mxnb as mx
    >>> mx.random.seed(7); a = mx.nd.random.uniform(shape=(3,)).asnumpy()
    >>> mx.random.seed(7); b = mx.nd.random.uniform(shape=(3,)).asnumpy()
    >>> bool((a == b).all())
    True
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ...base import ParamError
from ..base import (
    OpContext,
    Operator,
    OperatorProperty,
    OpReqType,
    ResourceRequest,
    assign,
)
from ..param import ANY, DType, Param, Shape
from ..registry import find, register, register_alias

__all__ = ["SamplerOperator", "SamplerProp"]


class SamplerOperator(Operator):
    """Draws a sampler's output from the RANDOM resource's generator (no per-call state)."""

    def __init__(self, prop: SamplerProp) -> None:
        self.prop = prop

    def forward(
        self,
        ctx: OpContext,
        in_data: Sequence[Any],
        req: Sequence[OpReqType],
        out_data: Sequence[Any],
        aux: Sequence[Any],
    ) -> None:
        out = out_data[0]
        values = self.prop.sample(ctx.requested[0].generator, tuple(out.shape))
        assign(out, req[0], ctx.xp.asarray(values.astype(out.dtype, copy=False)))

    def backward(self, ctx, out_grad, in_data, out_data, req, in_grad, aux):  # type: ignore[no-untyped-def]
        """Samplers without inputs have no gradient to compute."""


class SamplerProp(OperatorProperty):
    """Base of the input-less samplers: output of ``shape`` and ``dtype`` from the RANDOM resource."""

    shape = Param(Shape, low=0, default=Shape(), doc="Shape of the output.")
    ctx = Param(str, default="", doc="Context of the output (given to mx.nd as ctx=).")
    dtype = Param(DType, default=DType("float32"), doc="Data type of the output.")
    #: positional values fill these last: ``random_normal(0, 1, (2, 2))`` (MXNet's order)
    trailing_params = ("shape", "ctx", "dtype")

    def list_arguments(self) -> list[str]:
        """Samplers take no input arrays."""
        return []

    def infer_shape(self, in_shape: list) -> tuple[list, list, list]:
        """The output has the ``shape`` parameter."""
        return [], [tuple(self.shape)], []

    def infer_type(self, in_type: list) -> tuple[list, list, list]:
        """The output has the ``dtype`` parameter."""
        return [], [np.dtype(self.dtype)], []

    def forward_resource(self, in_shape: Sequence[tuple]) -> list[ResourceRequest]:
        """One RANDOM resource: the context's generator."""
        return [ResourceRequest.RANDOM]

    def declare_backward_dependency(self, out_grad, in_data, out_data):  # type: ignore[no-untyped-def]
        """Nothing: there is no input gradient."""
        return []

    def create_operator(self, ctx: Any) -> Operator:
        """The operator draws from ``ctx.requested[0].generator``."""
        return SamplerOperator(self)

    def sample(self, generator: np.random.Generator, shape: tuple) -> np.ndarray:
        """Draw an array of ``shape``."""
        raise NotImplementedError


class _UniformProp(SamplerProp):
    """Draw samples from a uniform distribution on [low, high)."""

    low = Param(float, unbounded=ANY, default=0.0, doc="Lower bound of the distribution.")
    high = Param(float, unbounded=ANY, default=1.0, doc="Upper bound of the distribution.")

    def sample(self, generator: np.random.Generator, shape: tuple) -> np.ndarray:
        """Uniform samples on [low, high); ``low > high`` fails when the op runs, as in MXNet."""
        if self.low > self.high:
            raise ParamError(
                f"_random_uniform: low={self.low:g} is above high={self.high:g}; "
                "low must be less or equal to high"
            )
        return generator.uniform(self.low, self.high, size=shape)


class _NormalProp(SamplerProp):
    """Draw samples from a normal (Gaussian) distribution."""

    loc = Param(float, unbounded=ANY, default=0.0, doc="Mean of the distribution.")
    scale = Param(
        float,
        unbounded="any value at push; a negative one fails when the op runs",
        default=1.0,
        doc="Standard deviation of the distribution (>= 0).",
    )

    def sample(self, generator: np.random.Generator, shape: tuple) -> np.ndarray:
        """Normal samples with mean loc and standard deviation scale.

        A negative scale fails here, when the op runs, as MXNet's kernel check does:
        the array raises the error on every read (``mx.nd.random.normal(0, -1)``
        itself does not raise)."""
        if self.scale < 0:
            raise ParamError(
                f"_random_normal: scale={self.scale:g} is negative; the standard deviation "
                "must be >= 0"
            )
        return generator.normal(self.loc, self.scale, size=shape)


class _RandintProp(SamplerProp):
    """Draw integers uniformly from [low, high)."""

    low = Param(int, unbounded=ANY, doc="Lower bound (inclusive).")
    high = Param(int, unbounded=ANY, doc="Upper bound (exclusive).")
    dtype = Param(DType, default=DType("int32"), doc="Data type of the output (int32 or int64).")

    def sample(self, generator: np.random.Generator, shape: tuple) -> np.ndarray:
        """Integers in [low, high)."""
        return generator.integers(self.low, self.high, size=shape)


def _register_missing() -> None:
    for name, cls in (
        ("_random_uniform", _UniformProp),
        ("_random_normal", _NormalProp),
        ("_random_randint", _RandintProp),
    ):
        if find(name) is None:
            register(name)(cls)
    for alias, name in (
        ("random_uniform", "_random_uniform"),
        ("uniform", "_random_uniform"),
        ("random_normal", "_random_normal"),
        ("normal", "_random_normal"),
        ("random_randint", "_random_randint"),
    ):
        if find(alias) is None:
            register_alias(alias, name)


_register_missing()
