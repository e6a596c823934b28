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

import numpy as np

from ...base import NotSupportedError
from ..param import ANY, UNUSED, DType, Param, Shape
from ..partial import partial_shape
from ..registry import register
from ._common import KernelProp, write

__all__ = ["ArangeProp", "FullProp", "LikeProp"]


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
    infer_range = Param(bool, default=False, doc="Unsupported in mxnb (symbolic range inference).")

    def init(self, kwargs: dict) -> None:
        """Parse the parameters; ``infer_range=True`` is refused clearly."""
        super().init(kwargs)
        if self.infer_range:
            raise NotSupportedError(
                "_arange: infer_range=True is not supported; give start and stop"
            )

    def _bounds(self) -> tuple[float, float]:
        return (0.0, self.start) if self.stop is None else (self.start, self.stop)

    def out_shape(self) -> tuple:
        """``(ceil((stop - start) / step) * repeat,)``."""
        start, stop = self._bounds()
        if self.step == 0:
            raise self.shape_error("step must not be 0")
        return (max(math.ceil((stop - start) / self.step), 0) * self.repeat,)

    def forward(self, ctx, in_data, req, out_data, aux):
        """xp.arange then repeat."""
        xp = ctx.xp
        count = out_data[0].shape[0] // self.repeat
        start, _ = self._bounds()
        values = start + xp.arange(count, dtype="float64") * self.step
        write(out_data[0], req[0], xp.repeat(values, self.repeat))


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
