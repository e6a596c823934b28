"""More normalizations: InstanceNorm, L2Normalization and SyncBatchNorm on one device.

Idea (MXNet: src/operator/instance_norm*, l2_normalization*,
contrib/sync_batch_norm*): each normalizes groups of values by a statistic of
the group; they differ in which axes make a group.

    * ``InstanceNorm``: one group per (sample, channel) over the spatial axes;
      ``gamma * (x - mean) / sqrt(var + eps) + beta`` with per-channel gamma
      and beta, biased variance; mean and var are hidden outputs;
    * ``L2Normalization``: ``x / sqrt(sum(x**2) + eps)`` with the sum over
      every axis but the first (``mode='instance'``), over the channel axis
      (``'channel'``) or over the spatial axes (``'spatial'``); the norm is
      a hidden output that backward reads;
    * ``SyncBatchNorm`` (``mx.nd.contrib.SyncBatchNorm``): BatchNorm whose
      statistics are shared by ``ndev`` devices under one ``key``.  On one
      device it IS BatchNorm on axis 1, except that its third output is the
      variance (BatchNorm's is ``1/sqrt(var + eps)``), as in MXNet 1.9.1.

Rule: float16 data are summed in float32 and the result cast back, as
MXNet's kernels accumulate in a wider type; gradients follow the closed forms
in each ``backward`` (checked against central differences and MXNet 1.9.1's
vectors in ``tests/operator/data/norm_more_vectors.npz``).

State kept: none beyond the registry entries.

Example::

    >>> import numpy as np
    >>> from mxnb.operator import eager
    >>> x = np.array([[3.0, 4.0]], np.float32)
    >>> eager.run_forward('L2Normalization', [x], {'eps': 0.0})[0][0].tolist()
    [[0.6000000238418579, 0.800000011920929]]
"""

from __future__ import annotations

from typing import Any

from ...base import NotSupportedError
from ..param import Param
from ..registry import register
from ._common import KernelProp, fmt, write
from .norm import BatchNormProp

__all__ = ["InstanceNormProp", "L2NormalizationProp", "SyncBatchNormProp"]


def _wide(xp: Any, x: Any) -> Any:
    """``x`` in float32 when it is float16 (sums accumulate in the wider type)."""
    return x.astype(xp.float32) if x.dtype == xp.float16 else x


# ---------------------------------------------------------------------------
# InstanceNorm
# ---------------------------------------------------------------------------


@register("InstanceNorm")
class InstanceNormProp(KernelProp):
    """Normalize each (sample, channel) over its spatial axes, then scale and shift per channel."""

    eps = Param(float, low=0.0, default=1e-3, doc="Added to the variance before the square root.")

    def list_arguments(self) -> list[str]:
        """``data, gamma, beta``."""
        return ["data", "gamma", "beta"]

    def list_outputs(self) -> list[str]:
        """``output`` and the hidden per-(sample, channel) ``mean`` and ``var``."""
        return ["output", "mean", "var"]

    def num_visible_outputs(self) -> int:
        """Only ``output``."""
        return 1

    def infer_shape(self, in_shape):  # type: ignore[no-untyped-def]
        """gamma and beta ``(C,)``; mean and var ``(N, C)``; data needs at least 3 axes."""
        if in_shape[0] is None:
            return None
        data = tuple(in_shape[0])
        if len(data) < 3:
            raise self.shape_error(
                f"data has shape {fmt(data)} but needs at least 3 axes (batch, channel, spatial...)"
            )
        channel = (data[1],)
        for name, given in zip(("gamma", "beta"), in_shape[1:3]):
            if given is not None and tuple(given) != channel:
                raise self.shape_error(
                    f"{name} has shape {fmt(given)} but data {fmt(data)} has {data[1]} channels; "
                    f"pass {name} of shape {fmt(channel)}"
                )
        stat = data[:2]
        return [data, channel, channel], [data, stat, stat], []

    def declare_backward_dependency(self, out_grad, in_data, out_data):  # type: ignore[no-untyped-def]
        """Head gradient, data, gamma and the saved mean / var."""
        return [out_grad[0], in_data[0], in_data[1], out_data[1], out_data[2]]

    @staticmethod
    def _groups(x: Any) -> Any:
        """x as (N, C, spatial)."""
        return x.reshape(x.shape[0], x.shape[1], -1)

    def forward(self, ctx, in_data, req, out_data, aux):  # type: ignore[no-untyped-def]
        """out = gamma * (x - mean) / sqrt(var + eps) + beta per (sample, channel)."""
        xp = ctx.xp
        x = _wide(xp, self._groups(in_data[0]))
        gamma, beta = (_wide(xp, a).reshape(1, -1, 1) for a in in_data[1:3])
        mean = x.mean(axis=2)
        centered = x - mean[:, :, None]
        var = (centered * centered).mean(axis=2)
        out = centered / xp.sqrt(var + self.eps)[:, :, None] * gamma + beta
        write(out_data[0], req[0], out.reshape(in_data[0].shape))
        write(out_data[1], req[1], mean)
        write(out_data[2], req[2], var)

    def backward(self, ctx, out_grad, in_data, out_data, req, in_grad, aux):  # type: ignore[no-untyped-def]
        """dx = invstd * (w - mean(w) - xhat * mean(w * xhat)), w = dy * gamma; dgamma, dbeta summed."""
        xp = ctx.xp
        x = _wide(xp, self._groups(in_data[0]))
        g = _wide(xp, self._groups(out_grad[0]))
        gamma = _wide(xp, in_data[1]).reshape(1, -1, 1)
        mean = _wide(xp, out_data[1])[:, :, None]
        invstd = (1 / xp.sqrt(_wide(xp, out_data[2]) + self.eps))[:, :, None]
        xhat = (x - mean) * invstd
        w = g * gamma
        dx = invstd * (
            w - w.mean(axis=2, keepdims=True) - xhat * (w * xhat).mean(axis=2, keepdims=True)
        )
        write(in_grad[0], req[0], dx.reshape(in_data[0].shape))
        write(in_grad[1], req[1], (g * xhat).sum(axis=(0, 2)))
        write(in_grad[2], req[2], g.sum(axis=(0, 2)))


# ---------------------------------------------------------------------------
# L2Normalization
# ---------------------------------------------------------------------------

_L2_MIN_AXES = {"instance": 2, "channel": 3, "spatial": 3}


@register("L2Normalization")
class L2NormalizationProp(KernelProp):
    """Divide by the L2 norm of each instance, each channel vector or each spatial map."""

    eps = Param(float, low=0.0, default=1e-10, doc="Added to the sum of squares.")
    mode = Param(
        str,
        default="instance",
        choices=("instance", "channel", "spatial"),
        doc="Sum over all but axis 0 (instance), over axis 1 (channel) or over axes 2.. (spatial).",
    )

    def list_outputs(self) -> list[str]:
        """``output`` and the hidden ``norm``."""
        return ["output", "norm"]

    def num_visible_outputs(self) -> int:
        """Only ``output``."""
        return 1

    def _norm_shape(self, data: tuple) -> tuple:
        """The norm's shape: the data's without the summed axes."""
        if self.mode == "instance":
            return data[:1]
        if self.mode == "channel":
            return data[:1] + data[2:]
        return data[:2]

    def infer_shape(self, in_shape):  # type: ignore[no-untyped-def]
        """Output like data; the hidden norm as :meth:`_norm_shape` says."""
        if in_shape[0] is None:
            return None
        data = tuple(in_shape[0])
        needed = _L2_MIN_AXES[self.mode]
        if len(data) < needed:
            raise self.shape_error(
                f"mode='{self.mode}' needs data with at least {needed} axes, got {fmt(data)}"
            )
        return [data], [data, self._norm_shape(data)], []

    def declare_backward_dependency(self, out_grad, in_data, out_data):  # type: ignore[no-untyped-def]
        """Head gradient, output and the norm."""
        return [out_grad[0], out_data[0], out_data[1]]

    def _keep(self, x: Any) -> tuple[Any, tuple]:
        """x as (N, sum axis, rest) and the sum axis of that view."""
        if self.mode == "instance":
            return x.reshape(x.shape[0], -1, 1), 1
        if self.mode == "channel":
            return x.reshape(x.shape[0], x.shape[1], -1), 1
        return x.reshape(x.shape[0], x.shape[1], -1), 2

    def forward(self, ctx, in_data, req, out_data, aux):  # type: ignore[no-untyped-def]
        """out = x / sqrt(sum(x**2) + eps)."""
        xp = ctx.xp
        x, axis = self._keep(_wide(xp, in_data[0]))
        norm = xp.sqrt((x * x).sum(axis=axis, keepdims=True) + self.eps)
        write(out_data[0], req[0], (x / norm).reshape(in_data[0].shape))
        write(out_data[1], req[1], norm.reshape(out_data[1].shape))

    def backward(self, ctx, out_grad, in_data, out_data, req, in_grad, aux):  # type: ignore[no-untyped-def]
        """dx = (dy - y * sum(dy * y)) / norm."""
        xp = ctx.xp
        y, axis = self._keep(_wide(xp, out_data[0]))
        g, _ = self._keep(_wide(xp, out_grad[0]))
        norm = _wide(xp, out_data[1]).reshape(
            (y.shape[0], 1, y.shape[2]) if axis == 1 else (y.shape[0], y.shape[1], 1)
        )
        dx = (g - y * (g * y).sum(axis=axis, keepdims=True)) / norm
        write(in_grad[0], req[0], dx.reshape(in_grad[0].shape))


# ---------------------------------------------------------------------------
# SyncBatchNorm
# ---------------------------------------------------------------------------


@register("_contrib_SyncBatchNorm")
class SyncBatchNormProp(BatchNormProp):
    """BatchNorm over axis 1 with statistics shared by ``ndev`` devices; here one device."""

    ndev = Param(int, low=1, default=1, doc="Devices that share the statistics (only 1 here).")
    key = Param(str, doc="Name shared by the copies of this layer on every device.")
    saves_variance = True  # MXNet's SyncBatchNorm shows the variance as its third output
    # Plain values in place of BatchNorm's parameters that MXNet's SyncBatchNorm does not have:
    axis = 1  # it always normalizes axis 1
    cudnn_off = False
    min_calib_range = None
    max_calib_range = None

    def init(self, kwargs: dict[str, Any]) -> None:
        """Parse the parameters; more than one device cannot synchronise in one process."""
        super().init(kwargs)
        if self.ndev != 1:
            raise NotSupportedError(
                f"{self.op_name}: ndev={self.ndev} needs {self.ndev} devices exchanging statistics, "
                "which mxnb does not do; use ndev=1 (one device: BatchNorm) or BatchNorm"
            )
