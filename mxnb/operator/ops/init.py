"""Creation operators: _zeros, _ones, _full, _arange, _eye, zeros_like, ones_like.

Idea (MXNet: src/operator/tensor/init_op*): creation ops have no inputs (or
only use an input's shape), so they can sit in a graph as nodes like any
other op; ``mx.nd.zeros`` and friends are thin calls of them.

Rule: the output shape and dtype come from the parameters alone (``*_like``:
from the input); the gradient with respect to a ``*_like`` input is zero and
reads nothing.

Example::

    >>> import numpy as np
    >>> from mxnb.operator import eager
    >>> eager.run_forward('_arange', [], {'start': 1, 'stop': 4})[0][0].tolist()
    [1.0, 2.0, 3.0]
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..param import ANY, UNUSED, DType, Param, Shape
from ..partial import partial_shape
from ..registry import register
from ._common import KernelProp, write

__all__ = ["ArangeProp", "FullProp", "LikeProp", "arange_values"]


class _CreateProp(KernelProp):
    """Base of the creation ops: no inputs, shape and dtype from parameters."""

    shape = Param(Shape, low=0, default=(), doc="Output shape.")
    ctx = Param(str, default="", doc="Device context (the caller places the output).")
    dtype = Param(DType, default="float32", doc="Output dtype.")
    fill = 0.0

    def list_arguments(self):
        """No inputs."""
        return []

    def out_shape(self) -> tuple:
        """The output shape."""
        return tuple(self.shape)

    @partial_shape
    def infer_shape(self, in_shape, out_shape=None):
        """``([], [shape], [])``; a 0 in ``shape`` is a dimension the graph infers (MXNet 1.x)."""
        return [], [self.out_shape()], []

    def infer_type(self, in_type):
        """``([], [dtype], [])``."""
        return [], [np.dtype(self.dtype)], []

    def declare_backward_dependency(self, out_grad, in_data, out_data):
        """Nothing."""
        return []

    def forward(self, ctx, in_data, req, out_data, aux):
        """Fill the output."""
        write(out_data[0], req[0], self.fill)

    def backward(self, ctx, out_grad, in_data, out_data, req, in_grad, aux):
        """No inputs, nothing to do."""


@register("_zeros")
class ZerosProp(_CreateProp):
    """An array of zeros."""


@register("_ones")
class OnesProp(_CreateProp):
    """An array of ones."""

    fill = 1.0


@register("_full")
class FullProp(_CreateProp):
    """An array filled with ``value``."""

    value = Param(float, unbounded=ANY, doc="The fill value.")

    def forward(self, ctx, in_data, req, out_data, aux):
        """Fill with ``value``."""
        write(out_data[0], req[0], self.value)


@register("_arange")
class ArangeProp(_CreateProp):
    """Evenly spaced values in ``[start, stop)``, each repeated ``repeat`` times."""

    shape = Param(Shape, unbounded=UNUSED, default=(), doc="Unused.")
    start = Param(
        float,
        unbounded="any finite value",
        default=0.0,
        doc="Start value (the stop when stop is None).",
    )
    stop = Param(
        float,
        unbounded="any finite value",
        default=None,
        optional=True,
        doc="Stop value (exclusive).",
    )
    step = Param(float, unbounded="any finite value but 0", default=1.0, doc="Spacing.")
    repeat = Param(int, default=1, low=1, doc="Repetitions of each value.")
    infer_range = Param(
        bool,
        default=False,
        doc="With stop None: the length comes from the graph (what the output is combined with).",
    )

    def _bounds(self) -> tuple[float, float | None]:
        if self.stop is None and not self.infer_range:
            return 0.0, self.start
        return self.start, self.stop

    def out_shape(self) -> tuple:
        """``(ceil((stop - start) / step) * repeat,)``; ``(0,)`` (unknown) when inferred."""
        start, stop = self._bounds()
        if self.step == 0:
            raise self.shape_error("step must not be 0")
        if stop is None:
            return (0,)
        return (max(math.ceil((stop - start) / self.step), 0) * self.repeat,)

    @partial_shape
    def infer_shape(self, in_shape, out_shape=None):
        """The length from the parameters, or with ``infer_range`` from the output's consumers."""
        if self.infer_range and self.stop is None:
            return [], [out_shape[0] if out_shape and out_shape[0] else None], []
        return [], [self.out_shape()], []

    def forward(self, ctx, in_data, req, out_data, aux):
        """MXNet's kernel: ``start + i * step`` in the output dtype (each repeated)."""
        count = out_data[0].shape[0] // self.repeat
        start, _ = self._bounds()
        values = arange_values(start, self.step, count, out_data[0].dtype, ctx.xp)
        write(out_data[0], req[0], ctx.xp.repeat(values, self.repeat))


def arange_values(start: float, step: float, count: int, dtype: Any, xp: Any = np) -> Any:
    """``start + i * step`` for ``i < count`` as MXNet computes it: start and step are cast
    to ``dtype`` first (C's cast: toward zero, unsigned types wrap), then the sum is taken in
    ``dtype``; so ``arange(0.5, 5.5, 0.7, dtype=int32)`` is eight zeros, as in MXNet 1.9.1.
    """
    dtype = np.dtype(dtype)
    index = xp.arange(count, dtype=np.int64)
    if dtype.kind in "iub":
        first, stride = (math.trunc(value) for value in (start, step))
        return (first + index * stride).astype(dtype)
    first, stride = dtype.type(start), dtype.type(step)
    return first + index.astype(dtype) * stride


@register("_eye")
class EyeProp(_CreateProp):
    """A 2-D array with ones on the ``k``-th diagonal."""

    shape = Param(Shape, unbounded=UNUSED, default=(), doc="Unused.")
    N = Param(int, low=0, doc="Rows.")
    M = Param(int, default=0, low=0, doc="Columns (0: N).")
    k = Param(int, unbounded=ANY, default=0, doc="Diagonal index.")

    def out_shape(self) -> tuple:
        """``(N, M or N)``."""
        return (self.N, self.M or self.N)

    def forward(self, ctx, in_data, req, out_data, aux):
        """xp.eye."""
        rows, cols = out_data[0].shape
        write(out_data[0], req[0], ctx.xp.eye(rows, cols, k=self.k))


class LikeProp(KernelProp):
    """Base of zeros_like / ones_like: the input's shape and dtype, constant values."""

    fill = 0.0

    def declare_backward_dependency(self, out_grad, in_data, out_data):
        """Nothing: the values do not depend on the input."""
        return []

    def forward(self, ctx, in_data, req, out_data, aux):
        """Fill."""
        write(out_data[0], req[0], self.fill)

    def backward(self, ctx, out_grad, in_data, out_data, req, in_grad, aux):
        """Zero gradient."""
        write(in_grad[0], req[0], 0)


register("zeros_like")(
    type("ZerosLikeProp", (LikeProp,), {"__doc__": "Zeros shaped like the input."})
)
register("ones_like")(
    type("OnesLikeProp", (LikeProp,), {"fill": 1.0, "__doc__": "Ones shaped like the input."})
)
