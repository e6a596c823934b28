"""Small contrib and index operators of MXNet 1.x that numpy does in a few lines.

Idea: ``_contrib_div_sqrt_dim`` (x / sqrt(last axis)), ``_contrib_quadratic``
(a x^2 + b x + c), ``_contrib_index_copy`` (rows of a new tensor written into
a copy of an old one), ``_contrib_index_array`` (every element's coordinates),
``_ravel_multi_index`` / ``_unravel_index`` (flat index <-> coordinates, a
leading -1 meaning "unbounded"), ``_contrib_quantize`` / ``_contrib_dequantize``
(MXNet's symmetric int8 and affine uint8 quantization), ``amp_cast`` /
``amp_multicast`` (AMP's casts) and ``make_loss`` (MakeLoss's 1.x alias).

Rule: gradients as MXNet 1.9.1: index inputs, index arrays, quantization and
the index conversions get none (zeros); ``index_copy`` sends the head gradient
to the old tensor except at the copied rows, and those rows to the new tensor.

State kept: none beyond the registry entries.

Example::

    >>> import numpy as np
    >>> from mxnb.operator import eager
    >>> outs, _, _ = eager.run_forward('_ravel_multi_index', [np.array([[1.0], [2.0]])],
    ...                                {'shape': (3, 4)})
    >>> outs[0].tolist()
    [6.0]
"""

from __future__ import annotations

import numpy as np

from ..param import AXIS, ANY, DType, Param, Shape
from ..registry import register, register_alias
from ._common import KernelProp, write

__all__: list[str] = []

register_alias("make_loss", "MakeLoss")


class _NoGradProp(KernelProp):
    """An op whose inputs get zero gradients."""

    def declare_backward_dependency(self, out_grad, in_data, out_data):  # type: ignore[no-untyped-def]
        """Nothing."""
        return []

    def backward(self, ctx, out_grad, in_data, out_data, req, in_grad, aux):  # type: ignore[no-untyped-def]
        """Zeros."""
        for grad, how in zip(in_grad, req):
            write(grad, how, 0)


@register("_contrib_div_sqrt_dim")
class DivSqrtDimProp(KernelProp):
    """``data / sqrt(data.shape[-1])`` (the attention scaling)."""

    def declare_backward_dependency(self, out_grad, in_data, out_data):  # type: ignore[no-untyped-def]
        """The head gradient and the data (for its last axis)."""
        return [out_grad[0], in_data[0]]

    def forward(self, ctx, in_data, req, out_data, aux):  # type: ignore[no-untyped-def]
        """Divide by the square root of the last axis."""
        x = in_data[0]
        write(out_data[0], req[0], x / np.sqrt(x.shape[-1]).astype(x.dtype))

    def backward(self, ctx, out_grad, in_data, out_data, req, in_grad, aux):  # type: ignore[no-untyped-def]
        """The same scaling of the head gradient."""
        g = out_grad[0]
        write(in_grad[0], req[0], g / np.sqrt(in_data[0].shape[-1]).astype(g.dtype))


@register("_contrib_quadratic")
class QuadraticProp(KernelProp):
    """``a * data**2 + b * data + c``."""

    a = Param(float, unbounded=ANY, default=0.0, doc="Coefficient of the square.")
    b = Param(float, unbounded=ANY, default=0.0, doc="Coefficient of the linear term.")
    c = Param(float, unbounded=ANY, default=0.0, doc="Constant term.")

    def declare_backward_dependency(self, out_grad, in_data, out_data):  # type: ignore[no-untyped-def]
        """The head gradient and the data."""
        return [out_grad[0], in_data[0]]

    def forward(self, ctx, in_data, req, out_data, aux):  # type: ignore[no-untyped-def]
        """The polynomial, in the data's dtype."""
        x = in_data[0]
        write(out_data[0], req[0], (self.a * x * x + self.b * x + self.c).astype(x.dtype))

    def backward(self, ctx, out_grad, in_data, out_data, req, in_grad, aux):  # type: ignore[no-untyped-def]
        """g * (2 a x + b)."""
        x = in_data[0]
        write(in_grad[0], req[0], (out_grad[0] * (2 * self.a * x + self.b)).astype(x.dtype))


@register("_contrib_index_copy")
class IndexCopyProp(KernelProp):
    """A copy of ``old_tensor`` whose rows ``index_vector`` are ``new_tensor``'s rows."""

    def list_arguments(self) -> list[str]:
        """Old tensor, row indices, new rows."""
        return ["old_tensor", "index_vector", "new_tensor"]

    def infer_shape(self, in_shape):  # type: ignore[no-untyped-def]
        """The old tensor's shape."""
        if in_shape[0] is None:
            return None
        return [tuple(s) if s is not None else None for s in in_shape], [tuple(in_shape[0])], []

    def infer_type(self, in_type):  # type: ignore[no-untyped-def]
        """The old tensor's dtype; the indices keep their own."""
        old = in_type[0] if in_type[0] is not None else in_type[2]
        if old is None:
            return None
        return [old, in_type[1] or np.dtype("int64"), old], [old], []

    def declare_backward_dependency(self, out_grad, in_data, out_data):  # type: ignore[no-untyped-def]
        """The head gradient and the indices."""
        return [out_grad[0], in_data[1]]

    def forward(self, ctx, in_data, req, out_data, aux):  # type: ignore[no-untyped-def]
        """Copy, then overwrite the indexed rows."""
        out = np.array(in_data[0], copy=True)
        out[in_data[1].astype(np.int64)] = in_data[2]
        write(out_data[0], req[0], out)

    def backward(self, ctx, out_grad, in_data, out_data, req, in_grad, aux):  # type: ignore[no-untyped-def]
        """Old: g with the copied rows zeroed; index: 0; new: g at the copied rows."""
        rows = in_data[1].astype(np.int64)
        old = np.array(out_grad[0], copy=True)
        old[rows] = 0
        write(in_grad[0], req[0], old)
        write(in_grad[1], req[1], 0)
        write(in_grad[2], req[2], out_grad[0][rows])


@register("_contrib_index_array")
class IndexArrayProp(_NoGradProp):
    """Each element's coordinates (on ``axes`` only, if given): shape ``data.shape + (k,)``."""

    axes = Param(Shape, unbounded=AXIS, default=None, optional=True, doc="Axes to report.")

    def _axes(self, ndim: int) -> tuple[int, ...]:
        return tuple(range(ndim)) if self.axes is None else tuple(
            a % ndim if ndim else a for a in self.axes)  # fmt: skip

    def infer_shape(self, in_shape):  # type: ignore[no-untyped-def]
        """``data.shape + (number of axes,)``."""
        if in_shape[0] is None:
            return None
        shape = tuple(in_shape[0])
        return [shape], [shape + (len(self._axes(len(shape))),)], []

    def infer_type(self, in_type):  # type: ignore[no-untyped-def]
        """int64 coordinates."""
        return [in_type[0]], [np.dtype("int64")], []

    def forward(self, ctx, in_data, req, out_data, aux):  # type: ignore[no-untyped-def]
        """``np.indices`` moved to the last axis."""
        shape = in_data[0].shape
        grid = np.indices(shape, dtype=np.int64) if shape else np.zeros((0,), np.int64)
        picked = np.stack([grid[a] for a in self._axes(len(shape))], axis=-1) if shape else grid
        write(out_data[0], req[0], picked.reshape(out_data[0].shape))


class _RavelBase(_NoGradProp):
    shape = Param(
        Shape, unbounded=AXIS, doc="Shape of the array indexed (a leading -1: unbounded)."
    )

    def _strides(self) -> np.ndarray:
        dims = list(self.shape)
        strides = np.ones(len(dims), dtype=np.int64)
        for i in range(len(dims) - 2, -1, -1):
            strides[i] = strides[i + 1] * dims[i + 1]
        return strides


@register("_ravel_multi_index")
class RavelMultiIndexProp(_RavelBase):
    """Coordinates ``(ndim, n)`` -> flat indices ``(n,)``."""

    def infer_shape(self, in_shape):  # type: ignore[no-untyped-def]
        """``(ndim, n...)`` -> ``(n...)``."""
        if in_shape[0] is None:
            return None
        return [tuple(in_shape[0])], [tuple(in_shape[0][1:])], []

    def forward(self, ctx, in_data, req, out_data, aux):  # type: ignore[no-untyped-def]
        """The dot of the coordinates with the row-major strides."""
        coords = in_data[0].astype(np.int64)
        flat = np.tensordot(self._strides(), coords, axes=(0, 0))
        write(out_data[0], req[0], flat.astype(out_data[0].dtype))


@register("_unravel_index")
class UnravelIndexProp(_RavelBase):
    """Flat indices ``(n,)`` -> coordinates ``(ndim, n)``."""

    def infer_shape(self, in_shape):  # type: ignore[no-untyped-def]
        """``(n...)`` -> ``(ndim, n...)``."""
        if in_shape[0] is None:
            return None
        return [tuple(in_shape[0])], [(len(self.shape),) + tuple(in_shape[0])], []

    def forward(self, ctx, in_data, req, out_data, aux):  # type: ignore[no-untyped-def]
        """Divide by the strides (the leading axis takes whatever is left)."""
        flat = in_data[0].astype(np.int64)
        dims = list(self.shape)
        coords = []
        for i, stride in enumerate(self._strides()):
            value = flat // stride
            coords.append(value if i == 0 and dims[0] < 0 else value % dims[i] if i else value)
            flat = flat % stride
        write(out_data[0], req[0], np.stack(coords).astype(out_data[0].dtype))


register_alias("ravel_multi_index", "_ravel_multi_index")
register_alias("unravel_index", "_unravel_index")


@register("_contrib_quantize")
class QuantizeProp(_NoGradProp):
    """Quantize ``data`` in [min_range, max_range] to int8 (symmetric) or uint8 (affine)."""

    out_type = Param(str, default="uint8", choices=("int8", "uint8"), doc="Integer type.")

    def list_arguments(self) -> list[str]:
        """Data and its range."""
        return ["data", "min_range", "max_range"]

    def list_outputs(self) -> list[str]:
        """The integers and the range they stand for."""
        return ["output", "min_output", "max_output"]

    def infer_shape(self, in_shape):  # type: ignore[no-untyped-def]
        """Data's shape, and (1,) ranges."""
        if in_shape[0] is None:
            return None
        return [tuple(in_shape[0]), (1,), (1,)], [tuple(in_shape[0]), (1,), (1,)], []

    def infer_type(self, in_type):  # type: ignore[no-untyped-def]
        """``out_type`` and float32 ranges."""
        f32 = np.dtype("float32")
        return [in_type[0], f32, f32], [np.dtype(self.out_type), f32, f32], []

    def forward(self, ctx, in_data, req, out_data, aux):  # type: ignore[no-untyped-def]
        """MXNet's rounding: away from zero by adding 0.5 before truncating."""
        x, low, high = in_data[0], float(in_data[1].ravel()[0]), float(in_data[2].ravel()[0])
        if self.out_type == "int8":
            real = max(abs(low), abs(high))
            # MXNet 1.9.1 on CPU saturates to the whole int8 range: -128 below the range
            q = np.clip(np.trunc(np.sign(x) * (np.abs(x) * (127.0 / real) + 0.5)), -128, 127)
            low, high = -real, real
        else:
            q = np.minimum((x - low) * (255.0 / (high - low)) + 0.5, 255.0)
        write(out_data[0], req[0], np.trunc(q).astype(self.out_type))
        write(out_data[1], req[1], low)
        write(out_data[2], req[2], high)


@register("_contrib_dequantize")
class DequantizeProp(QuantizeProp):
    """Integers back to float32 in the range they stand for."""

    out_type = Param(str, default="float32", choices=("float32",), doc="Float type.")

    def list_outputs(self) -> list[str]:
        """The floats."""
        return ["output"]

    def infer_shape(self, in_shape):  # type: ignore[no-untyped-def]
        """Data's shape."""
        if in_shape[0] is None:
            return None
        return [tuple(in_shape[0]), (1,), (1,)], [tuple(in_shape[0])], []

    def infer_type(self, in_type):  # type: ignore[no-untyped-def]
        """float32."""
        f32 = np.dtype("float32")
        return [in_type[0], f32, f32], [f32], []

    def forward(self, ctx, in_data, req, out_data, aux):  # type: ignore[no-untyped-def]
        """int8: q * range / 127.5, uint8: q * range / 255.5 (MXNet 1.9.1's CPU values)."""
        q, low, high = in_data[0], float(in_data[1].ravel()[0]), float(in_data[2].ravel()[0])
        if q.dtype == np.int8:
            # MXNet 1.9.1 on CPU (MKL-DNN) divides by 255 / 2, not by the 127 it multiplied with
            real = max(abs(low), abs(high))
            out = q.astype(np.float32) * np.float32(real / 127.5)
        else:  # likewise 255.5 for uint8 (MXNet 1.9.1 on CPU, checked with low = 0)
            real = max(abs(low), abs(high))
            out = q.astype(np.float32) * np.float32(real / 255.5)
        write(out_data[0], req[0], out)


@register("amp_cast")
class AmpCastProp(KernelProp):
    """AMP's cast: ``Cast`` to ``dtype`` (the gradient cast back)."""

    dtype = Param(DType, doc="Output data type.")

    def infer_type(self, in_type):  # type: ignore[no-untyped-def]
        """Output has ``dtype``."""
        return [in_type[0]], [np.dtype(self.dtype)], []

    def declare_backward_dependency(self, out_grad, in_data, out_data):  # type: ignore[no-untyped-def]
        """The head gradient."""
        return [out_grad[0]]

    def forward(self, ctx, in_data, req, out_data, aux):  # type: ignore[no-untyped-def]
        """astype."""
        write(out_data[0], req[0], in_data[0].astype(out_data[0].dtype))

    def backward(self, ctx, out_grad, in_data, out_data, req, in_grad, aux):  # type: ignore[no-untyped-def]
        """The head gradient in the input's dtype."""
        write(in_grad[0], req[0], out_grad[0].astype(in_grad[0].dtype))


@register("amp_multicast")
class AmpMulticastProp(KernelProp):
    """Cast ``num_outputs`` arrays to their widest float type (narrowest with cast_narrow)."""

    key_var_num_args = "num_outputs"
    num_outputs = Param(int, low=1, doc="Number of inputs and outputs.")
    cast_narrow = Param(bool, default=False, doc="Cast to the narrowest type instead.")

    def init(self, kwargs):  # type: ignore[no-untyped-def]
        """Parse; ``num_outputs`` stays callable as the interface's method too (as SliceChannel)."""
        from .join import _CountParam

        super().init(kwargs)
        self._param_values["num_outputs"] = _CountParam(self._param_values["num_outputs"])

    def list_arguments(self) -> list[str]:
        """``data_0 ...``."""
        return [f"data_{i}" for i in range(self.num_outputs)]

    def list_outputs(self) -> list[str]:
        """One per input."""
        return [f"output{i}" for i in range(self.num_outputs)]

    def infer_shape(self, in_shape):  # type: ignore[no-untyped-def]
        """Each output has its input's shape."""
        if any(s is None for s in in_shape):
            return None
        return [tuple(s) for s in in_shape], [tuple(s) for s in in_shape], []

    def infer_type(self, in_type):  # type: ignore[no-untyped-def]
        """The common type."""
        if any(t is None for t in in_type):
            return None
        sizes = sorted({np.dtype(t) for t in in_type}, key=lambda t: t.itemsize)
        common = sizes[0] if self.cast_narrow else sizes[-1]
        return list(in_type), [common] * len(in_type), []

    def declare_backward_dependency(self, out_grad, in_data, out_data):  # type: ignore[no-untyped-def]
        """The head gradients."""
        return list(out_grad)

    def forward(self, ctx, in_data, req, out_data, aux):  # type: ignore[no-untyped-def]
        """astype each."""
        for x, out, how in zip(in_data, out_data, req):
            write(out, how, x.astype(out.dtype))

    def backward(self, ctx, out_grad, in_data, out_data, req, in_grad, aux):  # type: ignore[no-untyped-def]
        """Each head gradient in its input's dtype."""
        for g, grad, how in zip(out_grad, in_grad, req):
            write(grad, how, g.astype(grad.dtype))
