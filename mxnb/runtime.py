"""What this build of mxnb can do (MXNet: python/mxnet/runtime.py ``Features``).

Idea: MXNet reports its compile-time features (CUDA, MKLDNN, OPENMP ...) so
code can branch on them; mxnb reports the same names, with what is true of
this Python build (no CUDA kernels unless cupy is importable, no MKLDNN, ...).

State kept: none; ``Features()`` is computed when made.

Example::

    >>> import mxnb as mx
    >>> features = mx.runtime.Features()
    >>> features.is_enabled('CUDA') in (True, False), 'MKLDNN' in features
    (True, True)
"""

from __future__ import annotations

import importlib.util
from collections import OrderedDict
from dataclasses import dataclass

from .base import ParamError

__all__ = ["Feature", "Features", "feature_list"]

_FEATURE_NAMES = (
    "CUDA", "CUDNN", "NCCL", "CUDA_RTC", "TENSORRT", "CPU_SSE", "CPU_AVX", "F16C",
    "BLAS_OPEN", "BLAS_MKL", "LAPACK", "MKLDNN", "OPENCV", "CAFFE", "DIST_KVSTORE",
    "INT64_TENSOR_SIZE", "SIGNAL_HANDLER", "DEBUG", "TVM_OP", "OPENMP",
)  # fmt: skip


@dataclass(frozen=True)
class Feature:
    """One feature: its name and whether this build has it."""

    name: str
    enabled: bool

    def __repr__(self) -> str:
        return f"{'✔' if self.enabled else '✖'} {self.name}"


def _enabled() -> set[str]:
    found = {"LAPACK", "INT64_TENSOR_SIZE", "SIGNAL_HANDLER", "DIST_KVSTORE"}
    if importlib.util.find_spec("cupy") is not None:
        found.add("CUDA")
    return found


def feature_list() -> list[Feature]:
    """Every feature MXNet names, with whether this build has it."""
    enabled = _enabled()
    return [Feature(name, name in enabled) for name in _FEATURE_NAMES]


class Features(OrderedDict):
    """Feature name -> :class:`Feature`, as MXNet's ``mx.runtime.Features()``."""

    def __init__(self) -> None:
        super().__init__((feature.name, feature) for feature in feature_list())

    def is_enabled(self, feature_name: str) -> bool:
        """Whether ``feature_name`` is enabled; raises for a name MXNet does not know."""
        name = feature_name.upper()
        if name not in self:
            raise ParamError(
                f"runtime.Features: unknown feature {feature_name!r}; known: {', '.join(self)}"
            )
        return self[name].enabled
