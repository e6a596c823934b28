"""Image-side operators of MXNet 1.x: normalize, adaptive average pooling, histogram.

Idea: ``_image_normalize`` ((x - mean[c]) / std[c] over the channel axis of a
CHW or NCHW tensor), ``_contrib_AdaptiveAvgPooling2D`` (average pooling to a
fixed output size, each output cell averaging the input cells
floor(i*H/oH) .. ceil((i+1)*H/oH)), and ``_histogram`` (counts over ``bin_cnt``
equal bins of ``range``, or over given bin edges; ``mx.nd.histogram`` /
``mx.sym.histogram`` pick the form).

Rule: gradients as MXNet 1.9.1: normalize divides the head gradient by std;
adaptive pooling spreads each cell's gradient evenly over its window; the
histogram has none.  Counts are int64 (MXNet's default for ``_histogram``).

State kept: none beyond the registry entries.

Example::

    >>> import numpy as np
    >>> from mxnb.operator import eager
    >>> x = np.arange(16.0).reshape(1, 1, 4, 4)
    >>> outs, _, _ = eager.run_forward('_contrib_AdaptiveAvgPooling2D', [x], {'output_size': (2, 2)})
    >>> outs[0].ravel().tolist()
    [2.5, 4.5, 10.5, 12.5]
"""

from __future__ import annotations

import ast
import math

import numpy as np

from ..param import Param, Shape
from ..registry import register
from ._common import KernelProp, write

__all__ = ["histogram_params"]


@register("_image_normalize")
class ImageNormalizeProp(KernelProp):
    """``(data - mean[c]) / std[c]`` over axis 0 (CHW) or axis 1 (NCHW)."""

    mean = Param(str, default="(0.0,)", doc="Per-channel mean, a number or a tuple of floats.")
    std = Param(str, default="(1.0,)", doc="Per-channel std, a number or a tuple of floats.")

    def _stats(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        channels = x.shape[0] if x.ndim == 3 else x.shape[1]
        mean = np.broadcast_to(_floats(self.mean), (channels,))
        std = np.broadcast_to(_floats(self.std), (channels,))
        shape = (channels, 1, 1) if x.ndim == 3 else (1, channels, 1, 1)
        return mean.reshape(shape), std.reshape(shape)

    def declare_backward_dependency(self, out_grad, in_data, out_data):  # type: ignore[no-untyped-def]
        """The head gradient and the data (for its channel count)."""
        return [out_grad[0], in_data[0]]

    def forward(self, ctx, in_data, req, out_data, aux):  # type: ignore[no-untyped-def]
        """Shift and scale per channel."""
        x = in_data[0]
        mean, std = self._stats(x)
        write(out_data[0], req[0], ((x - mean) / std).astype(x.dtype))

    def backward(self, ctx, out_grad, in_data, out_data, req, in_grad, aux):  # type: ignore[no-untyped-def]
        """g / std."""
        _, std = self._stats(in_data[0])
        write(in_grad[0], req[0], (out_grad[0] / std).astype(in_grad[0].dtype))


def _floats(text: str) -> np.ndarray:
    """A tuple-of-floats parameter as written (``'(0, 1.5)'`` or ``'2'``)."""
    return np.atleast_1d(np.asarray(ast.literal_eval(str(text)), dtype=np.float64))


def _windows(size: int, out: int) -> list[tuple[int, int]]:
    return [(i * size // out, math.ceil((i + 1) * size / out)) for i in range(out)]


@register("_contrib_AdaptiveAvgPooling2D")
class AdaptiveAvgPooling2DProp(KernelProp):
    """Average-pool NCHW ``data`` to ``output_size`` (one value: square)."""

    output_size = Param(Shape, low=1, default=(1,), doc="(height, width) or one size for both.")

    def _size(self) -> tuple[int, int]:
        size = tuple(self.output_size)
        return (size[0], size[0]) if len(size) == 1 else (size[0], size[1])

    def infer_shape(self, in_shape):  # type: ignore[no-untyped-def]
        """``(N, C) + output_size``."""
        if in_shape[0] is None:
            return None
        shape = tuple(in_shape[0])
        return [shape], [shape[:2] + self._size()], []

    def declare_backward_dependency(self, out_grad, in_data, out_data):  # type: ignore[no-untyped-def]
        """The head gradient and the data (for its size)."""
        return [out_grad[0], in_data[0]]

    def forward(self, ctx, in_data, req, out_data, aux):  # type: ignore[no-untyped-def]
        """Each output cell is the mean of its window."""
        x = in_data[0]
        out = np.empty(out_data[0].shape, dtype=x.dtype)
        oh, ow = self._size()
        for i, (h0, h1) in enumerate(_windows(x.shape[2], oh)):
            for j, (w0, w1) in enumerate(_windows(x.shape[3], ow)):
                out[:, :, i, j] = x[:, :, h0:h1, w0:w1].mean(axis=(2, 3))
        write(out_data[0], req[0], out)

    def backward(self, ctx, out_grad, in_data, out_data, req, in_grad, aux):  # type: ignore[no-untyped-def]
        """Each cell's gradient, divided evenly over its window (windows may overlap)."""
        x, g = in_data[0], out_grad[0]
        grad = np.zeros(x.shape, dtype=g.dtype)
        oh, ow = self._size()
        for i, (h0, h1) in enumerate(_windows(x.shape[2], oh)):
            for j, (w0, w1) in enumerate(_windows(x.shape[3], ow)):
                area = (h1 - h0) * (w1 - w0)
                grad[:, :, h0:h1, w0:w1] += g[:, :, i : i + 1, j : j + 1] / area
        write(in_grad[0], req[0], grad)


@register("_histogram")
class HistogramProp(KernelProp):
    """Counts of ``data`` over ``bin_cnt`` bins of ``range``, or over the edges ``bins``."""

    bin_cnt = Param(int, low=1, default=None, optional=True, doc="Number of equal bins.")
    range = Param(str, default=None, optional=True, doc="(low, high) of the equal bins.")

    def list_arguments(self) -> list[str]:
        """Data, and the bin edges when no ``bin_cnt`` is given."""
        return ["data"] if self.bin_cnt is not None else ["data", "bins"]

    def list_outputs(self) -> list[str]:
        """Counts and edges."""
        return ["output", "bin_edges"]

    def infer_shape(self, in_shape):  # type: ignore[no-untyped-def]
        """``(bins,)`` counts and ``(bins + 1,)`` edges."""
        if any(s is None for s in in_shape):
            return None
        n = self.bin_cnt if self.bin_cnt is not None else in_shape[1][0] - 1
        return [tuple(s) for s in in_shape], [(n,), (n + 1,)], []

    def infer_type(self, in_type):  # type: ignore[no-untyped-def]
        """int64 counts; edges in the data's float type."""
        if in_type[0] is None:
            return None
        return list(in_type), [np.dtype("int64"), np.dtype(in_type[0])], []

    def declare_backward_dependency(self, out_grad, in_data, out_data):  # type: ignore[no-untyped-def]
        """Nothing."""
        return []

    def forward(self, ctx, in_data, req, out_data, aux):  # type: ignore[no-untyped-def]
        """``np.histogram``."""
        data = np.asarray(in_data[0]).ravel()
        if self.bin_cnt is not None:
            counts, edges = np.histogram(data, self.bin_cnt, range=tuple(_floats(self.range)))
        else:
            counts, edges = np.histogram(data, np.asarray(in_data[1]))
        write(out_data[0], req[0], counts)
        write(out_data[1], req[1], edges)

    def backward(self, ctx, out_grad, in_data, out_data, req, in_grad, aux):  # type: ignore[no-untyped-def]
        """Zeros."""
        for grad, how in zip(in_grad, req):
            write(grad, how, 0)


def histogram_params(bins: object, range: object) -> tuple[bool, dict[str, object]]:  # noqa: A002
    """MXNet's front end: (bins is an array, the op's parameters); an int needs a range."""
    if isinstance(bins, int) and not isinstance(bins, bool):
        if range is None:
            raise ValueError("histogram: bins is a count, so range=(low, high) must be given")
        return False, {"bin_cnt": bins, "range": tuple(range)}  # type: ignore[arg-type]
    return True, {}
