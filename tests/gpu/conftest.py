"""Where the GPU tests run: ``strict`` (virtual GPUs through cupy's names and signatures, every
machine) and ``real`` (cupy on a real ``gpu(0)``; skipped, saying why, where there is none)."""

from __future__ import annotations

import pytest

import mxnb as mx
from mxnb.context import _real_gpu_count
from mxnb.testing.cupy_strict import strict_virtual_gpus


def _why_no_real_gpu() -> str:
    try:
        import cupy  # noqa: F401
    except ImportError:
        return (
            "no real GPU: cupy is not installed (the strict run checked the same code on the CPU)"
        )
    if _real_gpu_count() == 0:
        return "no real GPU: cupy sees no device (the strict run checked the same code on the CPU)"
    return ""


@pytest.fixture(params=["strict", pytest.param("real", marks=pytest.mark.gpu)])
def gpu(request):
    """``gpu(0)``: a strict virtual GPU, or the real one (skipped with the reason where absent)."""
    if request.param == "real":
        why = _why_no_real_gpu()
        if why:
            pytest.skip(why)
        yield mx.gpu(0)
        return
    with strict_virtual_gpus(1):
        yield mx.gpu(0)
