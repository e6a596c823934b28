"""Region and flow operators of MXNet 1.x: Correlation, GridGenerator, ROIPooling.

Idea: ``Correlation`` is FlowNet's cost volume (each output channel one
displacement between two maps), ``GridGenerator`` makes the sampling grid a
spatial transformer reads (from affine matrices or from a flow field), and
``ROIPooling`` max-pools each region of interest of a feature map to a fixed
size, as Fast R-CNN does.

Rule: forward and gradients as MXNet 1.9.1 (its rounding of region corners,
its bin edges, its normalization of grids); an even correlation kernel, or a
displacement grid that does not fit the input, is refused at shape inference.

State kept: none beyond the registry entries.

Example::

    >>> import numpy as np
    >>> from mxnb.operator import eager
    >>> grid = eager.run_forward('GridGenerator', [np.array([[1.0, 0, 0, 0, 1, 0]])],
    ...                          {'target_shape': (2, 3)})[0][0]
    >>> grid[0, 0].tolist()
    [[-1.0, 0.0, 1.0], [-1.0, 0.0, 1.0]]
"""

from __future__ import annotations

import numpy as np

from ..param import Param, Shape
from ..registry import register
from ._common import KernelProp, write

__all__: list[str] = []


@register("Correlation")
class CorrelationProp(KernelProp):
    """FlowNet's correlation of two NCHW maps over a grid of displacements.

    Output channel ``(dy, dx)`` at ``(i, j)`` is the mean over a ``kernel_size``
    window and all channels of ``data1 * data2`` shifted by ``(dy, dx) * stride2``
    (``is_multiply``) or of ``|data1 - data2|``; both inputs are zero-padded by
    ``pad_size``, and windows start every ``stride1`` pixels.
    """

    kernel_size = Param(int, low=1, default=1, doc="Window size (odd).")
    max_displacement = Param(int, low=0, default=1, doc="Largest displacement.")
    stride1 = Param(int, low=1, default=1, doc="Step between windows.")
    stride2 = Param(int, low=1, default=1, doc="Step between displacements.")
    pad_size = Param(int, low=0, default=0, doc="Zero padding of both inputs.")
    is_multiply = Param(bool, default=True, doc="Product (else absolute difference).")

    def list_arguments(self) -> list[str]:
        """The two maps."""
        return ["data1", "data2"]

    def _grid(self) -> tuple[int, int]:
        radius = self.max_displacement // self.stride2
        return radius, 2 * radius + 1

    def _top(self, shape: tuple) -> tuple[int, int]:
        border = self.max_displacement + (self.kernel_size - 1) // 2
        size = [(s + 2 * self.pad_size - 2 * border) for s in shape[2:]]
        return tuple(-(-d // self.stride1) for d in size)  # type: ignore[return-value]

    def infer_shape(self, in_shape):  # type: ignore[no-untyped-def]
        """``(N, grid^2, top_h, top_w)``; an even kernel or a grid that does not fit is refused."""
        shape = in_shape[0] if in_shape[0] is not None else in_shape[1]
        if shape is None:
            return None
        if self.kernel_size % 2 == 0:
            raise self.shape_error(f"kernel_size={self.kernel_size} must be odd")
        top = self._top(tuple(shape))
        if min(top) < 1:
            raise self.shape_error(
                f"kernel_size={self.kernel_size} and max_displacement={self.max_displacement} "
                f"do not fit an input of shape {tuple(shape)} padded by {self.pad_size}"
            )
        return [tuple(shape), tuple(shape)], [(shape[0], self._grid()[1] ** 2) + top], []

    def infer_type(self, in_type):  # type: ignore[no-untyped-def]
        """One dtype for both inputs and the output."""
        dtype = in_type[0] if in_type[0] is not None else in_type[1]
        return None if dtype is None else ([dtype, dtype], [dtype], [])

    def declare_backward_dependency(self, out_grad, in_data, out_data):  # type: ignore[no-untyped-def]
        """The head gradient and both inputs."""
        return [out_grad[0], in_data[0], in_data[1]]

    def _pairs(self, x1: np.ndarray, x2: np.ndarray, top: tuple[int, int]):  # type: ignore[no-untyped-def]
        """(channel, window offset, window of x1, window of x2, their slices) for every term."""
        p, k, s1, md = self.pad_size, self.kernel_size, self.stride1, self.max_displacement
        pad = ((0, 0), (0, 0), (p, p), (p, p))
        a, b = np.pad(x1.astype(np.float64), pad), np.pad(x2.astype(np.float64), pad)
        radius, width = self._grid()
        for channel in range(width * width):
            dy, dx = (
                (channel // width - radius) * self.stride2,
                (channel % width - radius) * self.stride2,
            )
            for h in range(k):
                for w in range(k):
                    rows = slice(md + h, md + h + s1 * (top[0] - 1) + 1, s1)
                    cols = slice(md + w, md + w + s1 * (top[1] - 1) + 1, s1)
                    rows2 = slice(rows.start + dy, rows.stop + dy, s1)
                    cols2 = slice(cols.start + dx, cols.stop + dx, s1)
                    yield channel, a, b, (rows, cols), (rows2, cols2)

    def forward(self, ctx, in_data, req, out_data, aux):  # type: ignore[no-untyped-def]
        """Sum the window terms per displacement, then divide by kernel_size^2 * C."""
        x1, x2 = in_data
        out = np.zeros(out_data[0].shape, dtype=np.float64)
        for channel, a, b, (r1, c1), (r2, c2) in self._pairs(x1, x2, out.shape[2:]):
            u, v = a[:, :, r1, c1], b[:, :, r2, c2]
            out[:, channel] += (u * v if self.is_multiply else np.abs(u - v)).sum(axis=1)
        write(out_data[0], req[0], out / (self.kernel_size**2 * x1.shape[1]))

    def backward(self, ctx, out_grad, in_data, out_data, req, in_grad, aux):  # type: ignore[no-untyped-def]
        """Each term's partial derivatives, scattered back and the padding cropped."""
        x1, x2 = in_data
        g = out_grad[0].astype(np.float64) / (self.kernel_size**2 * x1.shape[1])
        p = self.pad_size
        shape = (x1.shape[0], x1.shape[1], x1.shape[2] + 2 * p, x1.shape[3] + 2 * p)
        g1, g2 = np.zeros(shape), np.zeros(shape)
        for channel, a, b, (r1, c1), (r2, c2) in self._pairs(x1, x2, g.shape[2:]):
            u, v, head = a[:, :, r1, c1], b[:, :, r2, c2], g[:, channel : channel + 1]
            if self.is_multiply:
                g1[:, :, r1, c1] += head * v
                g2[:, :, r2, c2] += head * u
            else:
                sign = np.where(u >= v, 1.0, -1.0)
                g1[:, :, r1, c1] += head * sign
                g2[:, :, r2, c2] -= head * sign
        crop = (slice(None), slice(None), slice(p, p + x1.shape[2]), slice(p, p + x1.shape[3]))
        write(in_grad[0], req[0], g1[crop])
        write(in_grad[1], req[1], g2[crop])


@register("GridGenerator")
class GridGeneratorProp(KernelProp):
    """Sampling grids in [-1, 1]: from affine matrices (N, 6) or from flow fields (N, 2, H, W).

    ``affine``: grid = theta @ [x_t, y_t, 1] over a ``target_shape`` grid of
    normalized coordinates; ``warp``: grid = (pixel + flow) normalized by (size - 1) / 2.
    Channel 0 holds x (columns), channel 1 y (rows).
    """

    transform_type = Param(str, default="affine", choices=("affine", "warp"), doc="Grid source.")
    target_shape = Param(Shape, low=0, default=(0, 0), doc="(H, W) of an affine grid.")

    def infer_shape(self, in_shape):  # type: ignore[no-untyped-def]
        """``(N, 2, H, W)``."""
        if in_shape[0] is None:
            return None
        shape = tuple(in_shape[0])
        if self.transform_type == "affine":
            return [shape], [(shape[0], 2) + tuple(self.target_shape)], []
        return [shape], [shape], []

    def declare_backward_dependency(self, out_grad, in_data, out_data):  # type: ignore[no-untyped-def]
        """The head gradient and the input (for its shape)."""
        return [out_grad[0], in_data[0]]

    @staticmethod
    def _base(h: int, w: int) -> np.ndarray:
        """Rows x_t, y_t, 1 of the normalized target grid, flattened row-major: (3, H*W)."""
        ys, xs = np.meshgrid(np.linspace(-1, 1, h), np.linspace(-1, 1, w), indexing="ij")
        return np.stack([xs.ravel(), ys.ravel(), np.ones(h * w)])

    def forward(self, ctx, in_data, req, out_data, aux):  # type: ignore[no-untyped-def]
        """theta @ base, or the flow added to the pixel grid and normalized."""
        x = in_data[0].astype(np.float64)
        n, _, h, w = out_data[0].shape
        if self.transform_type == "affine":
            out = np.matmul(x.reshape(n, 2, 3), self._base(h, w)).reshape(n, 2, h, w)
        else:
            rows, cols = np.meshgrid(np.arange(h), np.arange(w), indexing="ij")
            out = np.stack(
                [(x[:, 0] + cols) / ((w - 1) / 2.0) - 1, (x[:, 1] + rows) / ((h - 1) / 2.0) - 1], 1
            )
        write(out_data[0], req[0], out)

    def backward(self, ctx, out_grad, in_data, out_data, req, in_grad, aux):  # type: ignore[no-untyped-def]
        """g @ base^T, or the head gradient scaled by the normalization."""
        g = out_grad[0].astype(np.float64)
        n, _, h, w = g.shape
        if self.transform_type == "affine":
            grad = np.matmul(g.reshape(n, 2, h * w), self._base(h, w).T).reshape(n, 6)
        else:
            grad = np.stack([g[:, 0] / ((w - 1) / 2.0), g[:, 1] / ((h - 1) / 2.0)], 1)
        write(in_grad[0], req[0], grad)


@register("ROIPooling")
class ROIPoolingProp(KernelProp):
    """Max-pool each region of interest ``[batch, x1, y1, x2, y2]`` to ``pooled_size``.

    Corners are scaled by ``spatial_scale`` and rounded half away from zero; bin
    ``(ph, pw)`` spans ``floor(ph * bin) .. ceil((ph + 1) * bin)`` of the region,
    clipped to the map; an empty bin is 0.  The gradient goes to each bin's arg-max.
    """

    pooled_size = Param(Shape, low=1, doc="(height, width) of each pooled region.")
    spatial_scale = Param(float, low=0.0, doc="Scale from region to map coordinates.")

    def list_arguments(self) -> list[str]:
        """The map and the regions."""
        return ["data", "rois"]

    def infer_shape(self, in_shape):  # type: ignore[no-untyped-def]
        """``(R, C) + pooled_size``."""
        if any(s is None for s in in_shape):
            return None
        data, rois = tuple(in_shape[0]), tuple(in_shape[1])
        return [data, rois], [(rois[0], data[1]) + tuple(self.pooled_size)], []

    def declare_backward_dependency(self, out_grad, in_data, out_data):  # type: ignore[no-untyped-def]
        """The head gradient and both inputs (the arg-max is recomputed)."""
        return [out_grad[0], in_data[0], in_data[1]]

    def _bins(self, roi: np.ndarray, height: int, width: int):  # type: ignore[no-untyped-def]
        """(ph, pw, rows, cols) of every bin of one region."""
        x1, y1, x2, y2 = (
            np.sign(v) * np.floor(abs(v) * self.spatial_scale + 0.5) for v in roi[1:5]
        )
        ph_n, pw_n = self.pooled_size
        bin_h, bin_w = max(y2 - y1 + 1, 1) / ph_n, max(x2 - x1 + 1, 1) / pw_n
        for ph in range(ph_n):
            h0 = int(min(max(np.floor(ph * bin_h) + y1, 0), height))
            h1 = int(min(max(np.ceil((ph + 1) * bin_h) + y1, 0), height))
            for pw in range(pw_n):
                w0 = int(min(max(np.floor(pw * bin_w) + x1, 0), width))
                w1 = int(min(max(np.ceil((pw + 1) * bin_w) + x1, 0), width))
                yield ph, pw, slice(h0, h1), slice(w0, w1)

    def _pool(self, data: np.ndarray, rois: np.ndarray, grad_head: np.ndarray | None = None):  # type: ignore[no-untyped-def]
        """The pooled values, or (with the head gradient) the data gradient."""
        r_n = rois.shape[0]
        out = np.zeros((r_n, data.shape[1]) + tuple(self.pooled_size), dtype=data.dtype)
        grad = np.zeros(data.shape, dtype=np.float64)
        for r in range(r_n):
            n = int(rois[r, 0])
            for ph, pw, rows, cols in self._bins(rois[r], data.shape[2], data.shape[3]):
                window = data[n, :, rows, cols].reshape(data.shape[1], -1)
                if window.shape[1] == 0:
                    continue
                best = window.argmax(axis=1)
                out[r, :, ph, pw] = window[np.arange(data.shape[1]), best]
                if grad_head is not None:
                    hh, ww = np.unravel_index(
                        best, (rows.stop - rows.start, cols.stop - cols.start)
                    )
                    np.add.at(grad[n], (np.arange(data.shape[1]), hh + rows.start, ww + cols.start),
                              grad_head[r, :, ph, pw])  # fmt: skip
        return out if grad_head is None else grad

    def forward(self, ctx, in_data, req, out_data, aux):  # type: ignore[no-untyped-def]
        """Max over each bin."""
        write(out_data[0], req[0], self._pool(in_data[0], in_data[1]))

    def backward(self, ctx, out_grad, in_data, out_data, req, in_grad, aux):  # type: ignore[no-untyped-def]
        """The head gradient to each bin's arg-max; the regions get none."""
        write(in_grad[0], req[0], self._pool(in_data[0], in_data[1], out_grad[0]))
        write(in_grad[1], req[1], 0)
