"""softmax, log_softmax and the loss layers: SoftmaxOutput, *RegressionOutput, MakeLoss.

Idea (MXNet: src/operator/nn/softmax*, softmax_output*, regression_output*,
make_loss*): the loss layers end a network.  Their backward ignores the head
gradient: it declares output and label, not out_grad, and writes the loss's
gradient itself (SoftmaxOutput: ``softmax - one_hot(label)``, scaled by
``grad_scale`` and the normalization).

Rules: ``softmax`` / ``log_softmax`` normalize over ``axis`` (optionally
dividing by ``temperature`` first); SoftmaxOutput's ``ignore_label``,
``use_ignore``, ``multi_output``, ``preserve_shape`` and ``normalization``
follow MXNet 1.9.1.

State kept: none.

Example::

    >>> import numpy as np
    >>> from mxnb.operator import eager
    >>> x = np.array([[1.0, 2.0, 3.0]])
    >>> eager.run_forward('softmax', [x])[0][0].round(3).tolist()
    [[0.09, 0.245, 0.665]]
"""

from __future__ import annotations

import math
from typing import Any

from ...base import NotSupportedError, ParamError
from ..base import OpReqType
from ..param import ANY, AXIS, DType, Param
from ..partial import is_known, merge, partial_shape
from ..registry import register
from ._common import KernelProp, computes_into, fmt, normalize_axis, write

__all__ = ["LogSoftmaxProp", "MakeLossProp", "SoftmaxOutputProp", "SoftmaxProp"]


# ---------------------------------------------------------------------------
# softmax family
# ---------------------------------------------------------------------------


def _softmax(xp: Any, x: Any, axis: int, temperature: float = 1.0, out: Any = None) -> Any:
    """``exp((x - max) / t)``, normalized along ``axis``: computed in ``out`` (a new array when
    None; ``out`` may be ``x``), so no temporary of x's size is made."""
    peak = x.max(axis=axis, keepdims=True)
    out = xp.empty_like(x) if out is None else out
    xp.subtract(x, peak, out=out)
    if temperature != 1:  # dividing by 1 changes nothing
        xp.true_divide(out, temperature, out=out)
    xp.exp(out, out=out)
    xp.true_divide(out, out.sum(axis=axis, keepdims=True), out=out)
    return out


class _SoftmaxBase(KernelProp):
    axis = Param(int, unbounded=AXIS, default=-1, doc="The axis to normalize over.")
    temperature = Param(
        float,
        unbounded="any value but 0",
        default=None,
        optional=True,
        doc="Divide the input by it first.",
    )
    dtype = Param(DType, default=None, optional=True, doc="Output dtype (default: the input's).")
    use_length = Param(bool, default=False, doc="Not supported (masked softmax).")
    log = False

    def infer_type(self, in_type):
        """The output has ``dtype`` when given."""
        if in_type[0] is None:
            return None
        import numpy as np

        out = np.dtype(self.dtype) if self.dtype else np.dtype(in_type[0])
        return [np.dtype(in_type[0])], [out], []

    def init(self, kwargs: dict[str, Any]) -> None:
        """Parse the parameters; ``use_length=True`` (masked softmax) is refused clearly."""
        super().init(kwargs)
        if self.temperature == 0:
            raise ParamError(
                f"{self.op_name} parameter 'temperature': 0 divides by zero; pass any value but "
                f"0, or None for 1"
            )
        if self.use_length:
            raise NotSupportedError(
                f"{self.op_name}: use_length=True (masked softmax) is not supported"
            )

    def declare_backward_dependency(self, out_grad, in_data, out_data):
        """Head gradient and output."""
        return [out_grad[0], out_data[0]]

    def forward(self, ctx, in_data, req, out_data, aux):
        """softmax (or its log) along ``axis``, max-shifted for stability."""
        xp, x = ctx.xp, in_data[0]
        axis = normalize_axis(self.axis, x.ndim, self.op_name)
        t = self.temperature or 1.0
        if self.log:
            shifted = (x - x.max(axis=axis, keepdims=True)) / t
            value = shifted - xp.log(xp.exp(shifted).sum(axis=axis, keepdims=True))
        else:
            direct = computes_into(req[0], out_data[0], x)
            value = _softmax(xp, x, axis, t, out_data[0] if direct else None)
        write(out_data[0], req[0], value)

    def backward(self, ctx, out_grad, in_data, out_data, req, in_grad, aux):
        """softmax: y (dy - sum(dy y)); log_softmax: dy - exp(y) sum(dy); divided by temperature."""
        xp = ctx.xp
        g, y = out_grad[0], out_data[0]
        axis = normalize_axis(self.axis, y.ndim, self.op_name)
        t = self.temperature or 1.0
        if self.log:
            value = g - xp.exp(y) * g.sum(axis=axis, keepdims=True)
        elif computes_into(req[0], in_grad[0], y) and not (
            xp.may_share_memory(in_grad[0], g) or xp.may_share_memory(in_grad[0], y)
        ):
            value = in_grad[0]  # the same operations, computed in the gradient
            xp.multiply(g, y, out=value)
            xp.subtract(g, value.sum(axis=axis, keepdims=True), out=value)
            xp.multiply(y, value, out=value)
        else:
            value = y * (g - (g * y).sum(axis=axis, keepdims=True))
        if t != 1.0:
            value = xp.true_divide(value, t, out=value if value is in_grad[0] else None)
        write(in_grad[0], req[0], value)


@register("softmax")
class SoftmaxProp(_SoftmaxBase):
    """softmax(x) = exp(x) / sum(exp(x)) along ``axis``."""


@register("log_softmax")
class LogSoftmaxProp(_SoftmaxBase):
    """log(softmax(x)) along ``axis``, computed stably."""

    log = True


@register("SoftmaxOutput")
class SoftmaxOutputProp(KernelProp):
    """Softmax with a cross-entropy gradient; a loss layer, so the head gradient is ignored."""

    grad_scale = Param(float, unbounded=ANY, default=1.0, doc="Scale of the gradient.")
    ignore_label = Param(
        float,
        unbounded=ANY,
        default=-1.0,
        doc="Label whose rows get zero gradient (with use_ignore).",
    )
    multi_output = Param(
        bool, default=False, doc="Softmax over axis 1 of (N, C, ...) with labels (N, ...)."
    )
    use_ignore = Param(bool, default=False, doc="Zero the gradient of rows labelled ignore_label.")
    preserve_shape = Param(
        bool, default=False, doc="Softmax over the last axis, keeping the shape."
    )
    normalization = Param(
        str,
        default="null",
        choices=("null", "batch", "valid"),
        doc="Divide the gradient by 1, the batch size, or the number of valid labels.",
    )
    out_grad = Param(bool, default=False, doc="Multiply the gradient by the head gradient.")
    smooth_alpha = Param(
        float,
        low=0,
        high=1,
        default=0.0,
        doc="Label smoothing: spread alpha over the other classes.",
    )

    def list_arguments(self):
        """``data, label``."""
        return ["data", "label"]

    def _label_shape(self, data: tuple) -> tuple:
        if self.multi_output:
            return (data[0],) + tuple(data[2:])
        if self.preserve_shape:
            return tuple(data[:-1])
        return (data[0],)

    @partial_shape
    def infer_shape(self, in_shape, out_shape=None):
        """label is ``(N,)`` (or data without the class axis); output has data's shape.

        Partial shapes: data and output share theirs, both ways.
        """
        data = merge(in_shape[0], (out_shape or [None])[0], "data and output")
        if data is None:
            return None
        given = in_shape[1]
        if not is_known(data) or (given is not None and not is_known(given)):
            label = self._label_shape(data)
            if given is not None:
                label = merge(given, data if len(given) == len(data) else label, "label")
            return [data, label], [data], []
        label = self._label_shape(data)
        given = in_shape[1]
        if given is not None and tuple(given) != label and tuple(given) != data:
            raise self.shape_error(
                f"label has shape {fmt(given)} but data {fmt(data)} needs labels of shape {fmt(label)}"
            )
        return [data, tuple(given) if given is not None else label], [data], []

    def declare_backward_dependency(self, out_grad, in_data, out_data):
        """Label and output; the head gradient only with ``out_grad=True``."""
        deps = [in_data[1], out_data[0]]
        return [out_grad[0], *deps] if self.out_grad else deps

    def forward_inplace_option(self, in_data, out_data):
        """In place (data -> output)."""
        return [(in_data[0], out_data[0])]

    def _class_axis(self, ndim: int) -> int:
        return ndim - 1 if self.preserve_shape else 1

    def forward(self, ctx, in_data, req, out_data, aux):
        """softmax over the class axis (for 2-D+ data without multi_output: over the flattened rest)."""
        xp, x = ctx.xp, in_data[0]
        if not self.multi_output and not self.preserve_shape and x.ndim > 2:
            value = _softmax(xp, x.reshape(x.shape[0], -1), 1).reshape(x.shape)
        else:
            out = out_data[0] if computes_into(req[0], out_data[0], x) else None
            value = _softmax(xp, x, self._class_axis(x.ndim), out=out)
        write(out_data[0], req[0], value)

    def backward(self, ctx, out_grad, in_data, out_data, req, in_grad, aux):
        """(softmax - onehot(label)) * grad_scale / normalizer; ignored rows get 0.

        A label of data's own shape holds probabilities (MXNet: soft labels): the
        gradient is softmax - label.  With multi_output the 'null' and 'batch'
        normalizers also divide by the positions per sample, as MXNet does.
        """
        xp = ctx.xp
        y = out_data[0]
        label = in_data[1]
        if y.ndim > 1 and tuple(label.shape) == tuple(y.shape):  # soft labels
            scale = self.grad_scale / (y.shape[0] if self.normalization == "batch" else 1)
            write(in_grad[0], req[0], (y - label) * scale)
            write(in_grad[1], req[1], 0)
            return
        if self._plain_rows(y, label, req):
            self._backward_rows(xp, y, label, in_grad[0])
            write(in_grad[1], req[1], 0)
            return
        flat = not self.multi_output and not self.preserve_shape and y.ndim > 2
        prob = y.reshape(y.shape[0], -1) if flat else y
        axis = self._class_axis(prob.ndim)
        classes = prob.shape[axis]
        label = (
            label.reshape(self._label_shape(prob.shape))
            if label.size == math.prod(self._label_shape(prob.shape))
            else label
        )
        index = xp.clip(label.astype("int64"), 0, classes - 1)
        one_hot = (
            xp.expand_dims(index, axis)
            == xp.arange(classes).reshape((1,) * axis + (classes,) + (1,) * (prob.ndim - axis - 1))
        ).astype(prob.dtype)
        if self.smooth_alpha:
            one_hot = one_hot * (1 - self.smooth_alpha) + (1 - one_hot) * (
                self.smooth_alpha / (classes - 1)
            )
        grad = prob - one_hot
        valid = label != self.ignore_label
        if self.use_ignore:
            grad = grad * xp.expand_dims(valid, axis).astype(prob.dtype)
        if self.normalization == "batch":
            normalizer = prob.shape[0]
        elif self.normalization == "valid":
            normalizer = max(int(valid.sum()), 1)
        else:
            normalizer = 1
        if self.multi_output and self.normalization != "valid":
            normalizer *= math.prod(prob.shape[2:])
        grad = grad * (self.grad_scale / normalizer)
        if self.out_grad:
            grad = grad * out_grad[0].reshape(grad.shape)
        write(in_grad[0], req[0], grad.reshape(in_grad[0].shape))
        write(in_grad[1], req[1], 0)

    def _plain_rows(self, y: Any, label: Any, req: Any) -> bool:
        """The common case, classes along axis 1 of ``(N, C)``: :meth:`_backward_rows` applies."""
        return (
            y.ndim == 2
            and label.shape == y.shape[:1]
            and req[0] == OpReqType.WRITE_TO
            and not (self.smooth_alpha or self.use_ignore or self.out_grad)
            and self.normalization != "valid"
        )

    def _backward_rows(self, xp: Any, y: Any, label: Any, grad: Any) -> None:
        """``grad = (y - onehot(label)) * scale`` with 1 subtracted in place: 4 small numpy calls.

        The same values as the general path (``y - 1`` or ``y - 0``, then the
        same multiplication), without building the one-hot matrix: a loss
        layer's arrays are small, and small numpy calls hold the GIL.
        """
        rows, classes = y.shape
        index = xp.clip(label.astype("int64"), 0, classes - 1)
        grad[...] = y
        grad[xp.arange(rows), index] -= 1
        scale = self.grad_scale / (rows if self.normalization == "batch" else 1)
        if scale != 1:
            grad *= scale


# ---------------------------------------------------------------------------
# regression outputs and MakeLoss
# ---------------------------------------------------------------------------


class _RegressionOutput(KernelProp):
    grad_scale = Param(float, unbounded=ANY, default=1.0, doc="Scale of the gradient.")
    kind = "linear"

    def list_arguments(self):
        """``data, label``."""
        return ["data", "label"]

    @partial_shape
    def infer_shape(self, in_shape, out_shape=None):
        """label has data's shape (or ``(N,)`` when data is ``(N, 1)``).

        Partial shapes: data and output share theirs, both ways, and a label
        of the data's rank too.
        """
        data = merge(in_shape[0], (out_shape or [None])[0], "data and output")
        if data is None:
            return None
        data = tuple(data)
        label = in_shape[1]
        if not is_known(data) or (label is not None and not is_known(label)):
            if label is None or len(label) == len(data):
                data = merge(data, label, "data and label")
                label = data
            return [data, tuple(label)], [data], []
        label = in_shape[1]
        if label is not None and math.prod(label) != math.prod(data):
            raise self.shape_error(
                f"label {fmt(label)} must have as many elements as data {fmt(data)}"
            )
        return [data, tuple(label) if label is not None else data], [data], []

    def declare_backward_dependency(self, out_grad, in_data, out_data):
        """Label and output (the head gradient is ignored)."""
        return [in_data[1], out_data[0]]

    def forward_inplace_option(self, in_data, out_data):
        """In place."""
        return [(in_data[0], out_data[0])]

    def forward(self, ctx, in_data, req, out_data, aux):
        """Identity (logistic: sigmoid)."""
        xp, x = ctx.xp, in_data[0]
        write(out_data[0], req[0], 1 / (1 + xp.exp(-x)) if self.kind == "logistic" else x)

    def backward(self, ctx, out_grad, in_data, out_data, req, in_grad, aux):
        """(out - label) * grad_scale / outputs-per-sample (MAE: the sign of it)."""
        xp, y = ctx.xp, out_data[0]
        label = in_data[1].reshape(y.shape)
        per_sample = max(y.size // y.shape[0], 1) if y.ndim else 1
        diff = y - label
        if self.kind == "mae":
            diff = xp.sign(diff)
        write(in_grad[0], req[0], diff * (self.grad_scale / per_sample))
        write(in_grad[1], req[1], 0)


@register("LinearRegressionOutput")
class LinearRegressionOutputProp(_RegressionOutput):
    """Identity forward; gradient (out - label) for a squared loss."""


@register("LogisticRegressionOutput")
class LogisticRegressionOutputProp(_RegressionOutput):
    """Sigmoid forward; gradient (out - label) for a logistic loss."""

    kind = "logistic"


@register("MAERegressionOutput")
class MAERegressionOutputProp(_RegressionOutput):
    """Identity forward; gradient sign(out - label) for an absolute loss."""

    kind = "mae"


@register("MakeLoss")
class MakeLossProp(KernelProp):
    """Make a loss out of any value: identity forward, gradient ``grad_scale`` (head ignored)."""

    grad_scale = Param(float, unbounded=ANY, default=1.0, doc="Gradient scale.")
    valid_thresh = Param(
        float,
        unbounded=ANY,
        default=0.0,
        doc="With normalization='valid': elements above it count.",
    )
    normalization = Param(
        str,
        default="null",
        choices=("null", "batch", "valid"),
        doc="Divide the gradient by 1, the batch size, or the valid count.",
    )

    def declare_backward_dependency(self, out_grad, in_data, out_data):
        """Nothing, or the output for normalization='valid'."""
        return [out_data[0]] if self.normalization == "valid" else []

    def forward_inplace_option(self, in_data, out_data):
        """In place."""
        return [(in_data[0], out_data[0])]

    def forward(self, ctx, in_data, req, out_data, aux):
        """Identity."""
        write(out_data[0], req[0], in_data[0])

    def backward(self, ctx, out_grad, in_data, out_data, req, in_grad, aux):
        """grad_scale / normalizer everywhere."""
        shape = in_grad[0].shape
        if self.normalization == "batch":
            normalizer = shape[0] if shape else 1
        elif self.normalization == "valid":
            normalizer = max(int((out_data[0] > self.valid_thresh).sum()), 1)
        else:
            normalizer = 1
        write(in_grad[0], req[0], self.grad_scale / normalizer)
