"""MXNet 1.x layers for sequence models and classifiers: Sequence*, LayerNorm, SVMOutput.

Idea: ``SequenceMask`` / ``SequenceReverse`` / ``SequenceLast`` treat a batch of
padded sequences, laid out time-major (``axis=0``: (T, N, ...)) or batch-major
(``axis=1``), with one valid length per sequence when ``use_sequence_length``.
``LayerNorm`` normalizes over one axis and scales by ``gamma``, shifts by
``beta``.  ``SVMOutput`` is a loss layer: identity forward, hinge-loss gradient
(L1 with ``use_linear``, else squared) that ignores the head gradient.

Rule: as MXNet 1.9.1 (src/operator/sequence_*.cc, nn/layer_norm.cc,
svm_output.cc).  Lengths are read as integers; positions at or beyond a
sequence's length are padding (masked, left in place, or never the last).

State kept: none beyond the registry entries.

Example::

    >>> import numpy as np
    >>> from mxnb.operator import eager
    >>> x, lengths = np.arange(6.0).reshape(3, 2), np.array([1.0, 3.0])
    >>> outs, _, _ = eager.run_forward(
    ...     'SequenceMask', [x, lengths], {'use_sequence_length': True, 'value': -1.0})
    >>> outs[0].tolist()
    [[0.0, 1.0], [-1.0, 3.0], [-1.0, 5.0]]
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..param import ANY, AXIS, Param
from ..registry import register
from ._common import KernelProp, normalize_axis, write

__all__ = ["LayerNormProp", "SVMOutputProp"]


class _SequenceProp(KernelProp):
    """Common part: data plus optional lengths, on a time axis 0 or 1."""

    use_sequence_length = Param(bool, default=False, doc="Read one length per sequence.")
    axis = Param(
        int, low=0, high=1, default=0, doc="The time axis (0: (T, N, ...), 1: (N, T, ...))."
    )

    def list_arguments(self) -> list[str]:
        """data, and sequence_length when used."""
        return ["data", "sequence_length"] if self.use_sequence_length else ["data"]

    def infer_type(self, in_type):  # type: ignore[no-untyped-def]
        """The output has data's dtype; lengths keep theirs."""
        if in_type[0] is None:
            return None
        rest = [t if t is not None else in_type[0] for t in in_type[1:]]
        return [in_type[0], *rest], [in_type[0]], []

    def infer_shape(self, in_shape):  # type: ignore[no-untyped-def]
        """Output like data (SequenceLast: without the time axis); lengths (N,)."""
        if in_shape[0] is None:
            return None
        data = tuple(in_shape[0])
        return [data, (data[1 - self.axis],)][: len(in_shape)], [self._out_shape(data)], []

    def _out_shape(self, data: tuple) -> tuple:
        return data

    def _time_major(self, x: Any) -> Any:
        return x if self.axis == 0 else x.swapaxes(0, 1)

    def _lengths(self, in_data: Any, steps: int, batch: int) -> np.ndarray:
        if not self.use_sequence_length:
            return np.full(batch, steps, dtype=np.int64)
        return np.asarray(in_data[1]).astype(np.int64).reshape(batch)

    def declare_backward_dependency(self, out_grad, in_data, out_data):  # type: ignore[no-untyped-def]
        """The head gradient and the lengths."""
        return [out_grad[0], *in_data[1:]]


@register("SequenceMask")
class SequenceMaskProp(_SequenceProp):
    """Set the padding positions of each sequence to ``value``."""

    value = Param(float, unbounded=ANY, default=0.0, doc="The value written into padding.")

    def _mask(self, in_data: Any, shape: tuple) -> np.ndarray:
        steps, batch = (shape[0], shape[1]) if self.axis == 0 else (shape[1], shape[0])
        keep = np.arange(steps)[:, None] < self._lengths(in_data, steps, batch)[None, :]
        keep = keep if self.axis == 0 else keep.T
        return keep.reshape(keep.shape + (1,) * (len(shape) - 2))

    def forward(self, ctx, in_data, req, out_data, aux):  # type: ignore[no-untyped-def]
        """data where valid, value in padding."""
        keep = ctx.xp.asarray(self._mask(in_data, in_data[0].shape))
        write(out_data[0], req[0], ctx.xp.where(keep, in_data[0], self.value))

    def backward(self, ctx, out_grad, in_data, out_data, req, in_grad, aux):  # type: ignore[no-untyped-def]
        """The head gradient where valid, zero in padding; lengths get zero."""
        keep = ctx.xp.asarray(self._mask(in_data, out_grad[0].shape))
        write(in_grad[0], req[0], out_grad[0] * keep)
        for grad, how in zip(in_grad[1:], req[1:]):
            write(grad, how, 0)


@register("SequenceReverse")
class SequenceReverseProp(_SequenceProp):
    """Reverse the valid part of each sequence along the time axis; padding stays in place."""

    def _reverse(self, in_data: Any, x: Any) -> Any:
        xt = self._time_major(x)
        out = xt.copy()
        for b, length in enumerate(self._lengths(in_data, xt.shape[0], xt.shape[1])):
            out[:length, b] = xt[:length, b][::-1]
        return self._time_major(out)

    def forward(self, ctx, in_data, req, out_data, aux):  # type: ignore[no-untyped-def]
        """Per-sequence reversal."""
        write(out_data[0], req[0], self._reverse(in_data, in_data[0]))

    def backward(self, ctx, out_grad, in_data, out_data, req, in_grad, aux):  # type: ignore[no-untyped-def]
        """The same reversal of the head gradient; lengths get zero."""
        write(in_grad[0], req[0], self._reverse(in_data, out_grad[0]))
        for grad, how in zip(in_grad[1:], req[1:]):
            write(grad, how, 0)


@register("SequenceLast")
class SequenceLastProp(_SequenceProp):
    """The last valid element of each sequence: data without its time axis."""

    def _out_shape(self, data: tuple) -> tuple:
        return data[: self.axis] + data[self.axis + 1 :]

    def forward(self, ctx, in_data, req, out_data, aux):  # type: ignore[no-untyped-def]
        """Pick time step length - 1 of each sequence."""
        xt = self._time_major(in_data[0])
        last = self._lengths(in_data, xt.shape[0], xt.shape[1]) - 1
        write(out_data[0], req[0], xt[ctx.xp.asarray(last), ctx.xp.arange(xt.shape[1])])

    def backward(self, ctx, out_grad, in_data, out_data, req, in_grad, aux):  # type: ignore[no-untyped-def]
        """The head gradient at each sequence's last step; lengths get zero."""
        xp = ctx.xp
        grad = self._time_major(xp.zeros(in_grad[0].shape, dtype=out_grad[0].dtype))
        last = self._lengths(in_data, grad.shape[0], grad.shape[1]) - 1
        grad[xp.asarray(last), xp.arange(grad.shape[1])] = out_grad[0]
        write(in_grad[0], req[0], self._time_major(grad))
        for g, how in zip(in_grad[1:], req[1:]):
            write(g, how, 0)


def _wide64(xp: Any, x: Any) -> Any:
    """``x`` in float64: LayerNorm sums over whole rows and columns (the gamma gradient
    of a (4096, 512) input adds 4096 products per element); a float32 sum along a
    non-contiguous axis adds one by one and lost 1e-3 of the result, against
    MXNet 1.9.1's wider accumulation.  Results are cast back on write."""
    return x.astype(xp.float64) if x.dtype.kind == "f" and x.dtype.itemsize < 8 else x


@register("LayerNorm")
class LayerNormProp(KernelProp):
    """gamma * (x - mean) / sqrt(var + eps) + beta, statistics over ``axis``."""

    axis = Param(int, unbounded=AXIS, default=-1, doc="The axis to normalize over.")
    eps = Param(float, low=0.0, default=1e-5, doc="Added to the variance.")
    output_mean_var = Param(bool, default=False, doc="Also output the mean and the std.")

    def list_arguments(self) -> list[str]:
        """data, gamma, beta."""
        return ["data", "gamma", "beta"]

    def list_outputs(self) -> list[str]:
        """The output, the mean and the std."""
        return ["output", "mean", "std"]

    def num_visible_outputs(self) -> int:
        """Mean and std are visible with output_mean_var."""
        return 3 if self.output_mean_var else 1

    def infer_shape(self, in_shape):  # type: ignore[no-untyped-def]
        """gamma and beta: (data.shape[axis],); mean and std: data's shape with 1 on axis."""
        if in_shape[0] is None:
            return None
        data = tuple(in_shape[0])
        axis = normalize_axis(self.axis, len(data), self.op_name)
        stat = data[:axis] + (1,) + data[axis + 1 :]
        return [data, (data[axis],), (data[axis],)], [data, stat, stat], []

    def _parts(self, x: Any) -> tuple[int, tuple, Any, Any]:
        """axis, gamma's broadcast shape, mean and std; ``x`` in float64 (see :func:`_wide64`)."""
        axis = normalize_axis(self.axis, x.ndim, self.op_name)
        shape = tuple(x.shape[axis] if i == axis else 1 for i in range(x.ndim))
        mean = x.mean(axis=axis, keepdims=True)
        std = ((x - mean) ** 2).mean(axis=axis, keepdims=True) + self.eps
        return axis, shape, mean, std**0.5

    def forward(self, ctx, in_data, req, out_data, aux):  # type: ignore[no-untyped-def]
        """Normalize, scale, shift."""
        x, gamma, beta = (_wide64(ctx.xp, a) for a in in_data)
        _, shape, mean, std = self._parts(x)
        write(out_data[0], req[0], gamma.reshape(shape) * (x - mean) / std + beta.reshape(shape))
        write(out_data[1], req[1], mean)
        write(out_data[2], req[2], std)

    def declare_backward_dependency(self, out_grad, in_data, out_data):  # type: ignore[no-untyped-def]
        """The head gradient, data and gamma."""
        return [out_grad[0], in_data[0], in_data[1]]

    def backward(self, ctx, out_grad, in_data, out_data, req, in_grad, aux):  # type: ignore[no-untyped-def]
        """dx = w - mean(w) - xhat mean(w xhat) with w = g gamma / std; dgamma, dbeta summed."""
        x, gamma = _wide64(ctx.xp, in_data[0]), _wide64(ctx.xp, in_data[1])
        g = _wide64(ctx.xp, out_grad[0])
        axis, shape, mean, std = self._parts(x)
        xhat = (x - mean) / std
        others = tuple(i for i in range(x.ndim) if i != axis)
        w = g * gamma.reshape(shape) / std
        dx = w - w.mean(axis=axis, keepdims=True) - xhat * (w * xhat).mean(axis=axis, keepdims=True)
        write(in_grad[0], req[0], dx)
        write(in_grad[1], req[1], (g * xhat).sum(axis=others))
        write(in_grad[2], req[2], g.sum(axis=others))


@register("SVMOutput")
class SVMOutputProp(KernelProp):
    """Identity forward; hinge-loss gradient against integer labels (a loss layer)."""

    margin = Param(float, unbounded=ANY, default=1.0, doc="The margin.")
    regularization_coefficient = Param(
        float, unbounded=ANY, default=1.0, doc="Scale of the gradient."
    )
    use_linear = Param(bool, default=False, doc="L1 hinge (else squared hinge).")

    def list_arguments(self) -> list[str]:
        """Scores (N, C) and labels (N,)."""
        return ["data", "label"]

    def infer_shape(self, in_shape):  # type: ignore[no-untyped-def]
        """Output like data; labels (N,)."""
        if in_shape[0] is None:
            return None
        data = tuple(in_shape[0])
        return [data, (data[0],)], [data], []

    def declare_backward_dependency(self, out_grad, in_data, out_data):  # type: ignore[no-untyped-def]
        """The labels and the scores (the head gradient is ignored)."""
        return [in_data[1], out_data[0]]

    def forward(self, ctx, in_data, req, out_data, aux):  # type: ignore[no-untyped-def]
        """The scores unchanged."""
        write(out_data[0], req[0], in_data[0])

    def backward(self, ctx, out_grad, in_data, out_data, req, in_grad, aux):  # type: ignore[no-untyped-def]
        """-y [margin > y x] (L1) or -2 y max(margin - y x, 0) (L2), y = +1 at the label else -1."""
        xp = ctx.xp
        x = out_data[0].reshape(out_data[0].shape[0], -1)
        label = in_data[1].astype("int64").reshape(-1)
        y = xp.where(xp.arange(x.shape[1])[None, :] == label[:, None], 1.0, -1.0)
        slack = self.margin - y * x
        if self.use_linear:
            grad = -y * (slack > 0)
        else:
            grad = -2 * y * xp.maximum(slack, 0)
        grad = grad * self.regularization_coefficient
        write(in_grad[0], req[0], grad.reshape(in_grad[0].shape))
        write(in_grad[1], req[1], 0)
