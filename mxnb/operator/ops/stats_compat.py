"""MXNet 1.x statistics, checks, softmax variants and ``split_v2``.

Idea: ``moments`` (mean and variance over ``axes``), ``all_finite`` /
``multi_all_finite`` (the AMP overflow checks: 1.0 when every element is
finite), ``softmax_cross_entropy`` (the summed cross-entropy of integer
labels), ``softmin`` (softmax of ``-x``), ``SoftmaxActivation`` (the 1.x layer:
softmax per instance or per channel) and ``_split_v2`` (split at indices or in
equal sections; ``mx.nd.split_v2`` / ``mx.sym.split_v2`` build its parameters).

Rule: gradients as MXNet 1.9.1: d mean / dx = 1 / n, d var / dx = 2 (x - mean) / n;
cross-entropy: (softmax - one_hot) times the head gradient; labels and checks
get no gradient.

State kept: none beyond the registry entries.

Example::

    >>> import numpy as np
    >>> from mxnb.operator import eager
    >>> outs, _, _ = eager.run_forward('moments', [np.array([1.0, 3.0])], {'axes': (0,)})
    >>> [o.tolist() for o in outs]
    [[2.0], [1.0]]
"""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np

from ..param import AXIS, Param, Shape
from ..registry import register
from ._common import KernelProp, normalize_axes, normalize_axis, write
from .softmax import _softmax, _SoftmaxBase

__all__ = ["split_v2_params"]


@register("moments")
class MomentsProp(KernelProp):
    """Mean and variance of ``data`` over ``axes`` (all axes when not given)."""

    axes = Param(Shape, unbounded=AXIS, default=None, optional=True, doc="Axes to reduce.")
    keepdims = Param(bool, default=False, doc="Keep the reduced axes with size 1.")

    def list_outputs(self) -> list[str]:
        """Mean and variance."""
        return ["mean", "var"]

    def _axes(self, ndim: int) -> tuple:
        return tuple(range(ndim)) if self.axes is None else normalize_axes(self.axes, ndim)

    def infer_shape(self, in_shape):  # type: ignore[no-untyped-def]
        """The reduced shape ((1,) when everything is reduced without keepdims)."""
        if in_shape[0] is None:
            return None
        shape = tuple(in_shape[0])
        axes = self._axes(len(shape))
        if self.keepdims:
            out = tuple(1 if i in axes else s for i, s in enumerate(shape))
        else:
            out = tuple(s for i, s in enumerate(shape) if i not in axes) or (1,)
        return [shape], [out, out], []

    def declare_backward_dependency(self, out_grad, in_data, out_data):  # type: ignore[no-untyped-def]
        """Both head gradients, the data and the mean."""
        return [out_grad[0], out_grad[1], in_data[0], out_data[0]]

    def forward(self, ctx, in_data, req, out_data, aux):  # type: ignore[no-untyped-def]
        """Mean, then the mean squared deviation."""
        x = in_data[0]
        axes = self._axes(x.ndim)
        mean = x.mean(axis=axes, keepdims=True)
        var = ((x - mean) ** 2).mean(axis=axes, keepdims=True)
        write(out_data[0], req[0], mean.reshape(out_data[0].shape))
        write(out_data[1], req[1], var.reshape(out_data[1].shape))

    def backward(self, ctx, out_grad, in_data, out_data, req, in_grad, aux):  # type: ignore[no-untyped-def]
        """g_mean / n + g_var * 2 (x - mean) / n."""
        x = in_data[0]
        axes = self._axes(x.ndim)
        kept = tuple(1 if i in axes else s for i, s in enumerate(x.shape))
        n = x.size // max(int(np.prod(kept)), 1)
        mean = out_data[0].reshape(kept)
        g_mean, g_var = out_grad[0].reshape(kept), out_grad[1].reshape(kept)
        write(in_grad[0], req[0], (g_mean + g_var * 2 * (x - mean)) / n)


class _FiniteProp(KernelProp):
    """A (1,) float32 flag: 1 when every element of every input is finite."""

    init_output = Param(bool, default=True, doc="Start from 1 (else keep the output's value).")

    def infer_shape(self, in_shape):  # type: ignore[no-untyped-def]
        """Inputs as given; the flag is (1,)."""
        if any(s is None for s in in_shape):
            return None
        return [tuple(s) for s in in_shape], [(1,)], []

    def infer_type(self, in_type):  # type: ignore[no-untyped-def]
        """float32 flag."""
        if any(t is None for t in in_type):
            return None
        return list(in_type), [np.dtype("float32")], []

    def declare_backward_dependency(self, out_grad, in_data, out_data):  # type: ignore[no-untyped-def]
        """Nothing: a check has no gradient."""
        return []

    def forward(self, ctx, in_data, req, out_data, aux):  # type: ignore[no-untyped-def]
        """All finite, and (without init_output) the flag already there."""
        flag = all(bool(ctx.xp.isfinite(x).all()) for x in in_data)
        if not self.init_output:
            flag = flag and bool(out_data[0][0])
        write(out_data[0], req[0], float(flag))

    def backward(self, ctx, out_grad, in_data, out_data, req, in_grad, aux):  # type: ignore[no-untyped-def]
        """Zero."""
        for grad, how in zip(in_grad, req):
            write(grad, how, 0)


@register("all_finite")
class AllFiniteProp(_FiniteProp):
    """1.0 when every element of ``data`` is finite, else 0.0."""

    def list_arguments(self) -> list[str]:
        """One array."""
        return ["data"]


@register("multi_all_finite")
class MultiAllFiniteProp(_FiniteProp):
    """1.0 when every element of the ``num_arrays`` inputs is finite, else 0.0."""

    num_arrays = Param(int, low=1, default=1, doc="How many arrays.")

    def list_arguments(self) -> list[str]:
        """``num_arrays`` arrays."""
        return [f"array_{i}" for i in range(self.num_arrays)]


@register("softmax_cross_entropy")
class SoftmaxCrossEntropyProp(KernelProp):
    """sum over the batch of -log softmax(data)[label]; output (1,)."""

    def list_arguments(self) -> list[str]:
        """Scores (N, C) and integer labels (N,)."""
        return ["data", "label"]

    def infer_shape(self, in_shape):  # type: ignore[no-untyped-def]
        """data (N, C), label (N,), output (1,)."""
        data = in_shape[0]
        if data is None:
            return None
        data = tuple(data)
        if len(data) != 2:
            raise self.shape_error(f"data must be (batch, classes), found {data}")
        return [data, (data[0],)], [(1,)], []

    def declare_backward_dependency(self, out_grad, in_data, out_data):  # type: ignore[no-untyped-def]
        """The head gradient, data and labels."""
        return [out_grad[0], in_data[0], in_data[1]]

    def _parts(self, xp: Any, data: Any, label: Any) -> tuple[Any, Any]:
        prob = _softmax(xp, data, 1)
        return prob, xp.clip(label.astype("int64"), 0, data.shape[1] - 1)

    def forward(self, ctx, in_data, req, out_data, aux):  # type: ignore[no-untyped-def]
        """Sum of the negative log-probabilities of the labels."""
        xp = ctx.xp
        prob, label = self._parts(xp, *in_data)
        picked = prob[xp.arange(prob.shape[0]), label]
        write(out_data[0], req[0], -xp.log(picked).sum(keepdims=True))

    def backward(self, ctx, out_grad, in_data, out_data, req, in_grad, aux):  # type: ignore[no-untyped-def]
        """(softmax - one_hot(label)) times the head gradient; labels get zero."""
        xp = ctx.xp
        prob, label = self._parts(xp, *in_data)
        prob[xp.arange(prob.shape[0]), label] -= 1
        write(in_grad[0], req[0], prob * out_grad[0].reshape(()))
        write(in_grad[1], req[1], 0)


@register("softmin")
class SoftminProp(_SoftmaxBase):
    """softmin(x) = softmax(-x) along ``axis``."""

    def forward(self, ctx, in_data, req, out_data, aux):  # type: ignore[no-untyped-def]
        """softmax of the negated input."""
        super().forward(ctx, [-in_data[0]], req, out_data, aux)

    def backward(self, ctx, out_grad, in_data, out_data, req, in_grad, aux):  # type: ignore[no-untyped-def]
        """softmax's gradient, negated."""
        g, y = out_grad[0], out_data[0]
        axis = normalize_axis(self.axis, y.ndim, self.op_name)
        value = -y * (g - (g * y).sum(axis=axis, keepdims=True))
        t = self.temperature or 1.0
        write(in_grad[0], req[0], value / t if t != 1.0 else value)


@register("SoftmaxActivation")
class SoftmaxActivationProp(KernelProp):
    """MXNet 1.x's softmax layer: per instance (the last axis) or per channel (axis 1)."""

    mode = Param(str, default="instance", choices=("instance", "channel"), doc="What to normalize.")

    def list_arguments(self) -> list[str]:
        """One input."""
        return ["data"]

    def declare_backward_dependency(self, out_grad, in_data, out_data):  # type: ignore[no-untyped-def]
        """Head gradient and output."""
        return [out_grad[0], out_data[0]]

    def _flat(self, x: Any) -> Any:
        return x.reshape(-1, x.shape[-1]) if self.mode == "instance" else x

    def forward(self, ctx, in_data, req, out_data, aux):  # type: ignore[no-untyped-def]
        """Softmax over axis 1 (instance mode: of the input seen as 2-d, last axis kept)."""
        x = in_data[0]
        write(out_data[0], req[0], _softmax(ctx.xp, self._flat(x), 1).reshape(x.shape))

    def backward(self, ctx, out_grad, in_data, out_data, req, in_grad, aux):  # type: ignore[no-untyped-def]
        """y (g - sum(g y)) over the same axis."""
        y, g = self._flat(out_data[0]), self._flat(out_grad[0])
        value = y * (g - (g * y).sum(axis=1, keepdims=True))
        write(in_grad[0], req[0], value.reshape(in_grad[0].shape))


@register("_split_v2")
class SplitV2Prop(KernelProp):
    """Split ``data`` along ``axis`` at ``indices`` (starting with 0), or in ``sections`` parts."""

    indices = Param(Shape, unbounded=AXIS, default=(), doc="Split points, starting with 0.")
    axis = Param(int, unbounded=AXIS, default=0, doc="The axis to split.")
    squeeze_axis = Param(bool, default=False, doc="Drop the axis (parts of size 1 only).")
    sections = Param(int, low=0, default=0, doc="Equal parts (when indices is empty).")

    def list_arguments(self) -> list[str]:
        """One input."""
        return ["data"]

    def list_outputs(self) -> list[str]:
        """One output per part."""
        count = self.sections if self.sections else len(self.indices)
        return [f"output{i}" for i in range(count)]

    def _bounds(self, size: int) -> list[tuple[int, int]]:
        if self.sections:
            step = size // self.sections
            return [(i * step, (i + 1) * step) for i in range(self.sections)]
        points = list(self.indices) + [size]
        return list(itertools.pairwise(points))

    def infer_shape(self, in_shape):  # type: ignore[no-untyped-def]
        """Each part: data's shape with the part's length on ``axis``."""
        if in_shape[0] is None:
            return None
        shape = tuple(in_shape[0])
        axis = normalize_axis(self.axis, len(shape), self.op_name)
        outs = []
        for begin, end in self._bounds(shape[axis]):
            part = list(shape)
            part[axis] = end - begin
            if self.squeeze_axis:
                del part[axis]
            outs.append(tuple(part))
        return [shape], outs, []

    def declare_backward_dependency(self, out_grad, in_data, out_data):  # type: ignore[no-untyped-def]
        """The head gradients."""
        return list(out_grad)

    def forward(self, ctx, in_data, req, out_data, aux):  # type: ignore[no-untyped-def]
        """Slices along ``axis``."""
        x = in_data[0]
        axis = normalize_axis(self.axis, x.ndim, self.op_name)
        for (begin, end), out, how in zip(self._bounds(x.shape[axis]), out_data, req):
            part = ctx.xp.take(x, ctx.xp.arange(begin, end), axis=axis)
            write(out, how, part.reshape(out.shape))

    def backward(self, ctx, out_grad, in_data, out_data, req, in_grad, aux):  # type: ignore[no-untyped-def]
        """The head gradients concatenated back."""
        shape = in_grad[0].shape
        axis = normalize_axis(self.axis, len(shape), self.op_name)
        parts = []
        for (begin, end), g in zip(self._bounds(shape[axis]), out_grad):
            part = list(shape)
            part[axis] = end - begin
            parts.append(g.reshape(part))
        write(in_grad[0], req[0], ctx.xp.concatenate(parts, axis=axis))


def split_v2_params(
    indices_or_sections: Any, axis: int = 0, squeeze_axis: bool = False
) -> dict[str, Any]:
    """The ``_split_v2`` parameters for MXNet's ``split_v2(ary, indices_or_sections, ...)``."""
    params: dict[str, Any] = {"axis": axis, "squeeze_axis": squeeze_axis}
    if isinstance(indices_or_sections, int):
        params["sections"] = indices_or_sections
    else:
        params["indices"] = (0, *indices_or_sections)
    return params
