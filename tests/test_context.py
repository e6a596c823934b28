"""Context, RunContext and the error hierarchy."""

import threading

import pytest

import mxnb as mx
from mxnb.base import ContextError, DTypeError, MXNBError, ShapeError, np_dtype


def test_errors_share_one_root_and_the_expected_builtins():
    assert issubclass(ShapeError, MXNBError) and issubclass(ShapeError, ValueError)
    assert issubclass(DTypeError, TypeError)


def test_context_equality_str_and_default():
    assert mx.cpu() == mx.Context("cpu", 0)
    assert str(mx.gpu(1)) == "gpu(1)"
    assert mx.current_context() == mx.cpu(0)


def test_with_context_scopes_per_thread():
    seen = []
    with mx.Context("cpu", 1):
        assert mx.current_context() == mx.cpu(1)
        thread = threading.Thread(target=lambda: seen.append(mx.current_context()))
        thread.start()
        thread.join()
    assert seen == [mx.cpu(0)]
    assert mx.current_context() == mx.cpu(0)


def test_bad_context_names_what_is_allowed():
    with pytest.raises(ContextError, match="unknown device type 'tpu'"):
        mx.Context("tpu", 0)


def test_gpu_without_cupy_or_virtual_gpus_says_what_to_do():
    mx.context.set_virtual_gpus(0)
    with pytest.raises(ContextError, match="MXNB_VIRTUAL_GPUS"):
        mx.gpu(0).array_module


def test_virtual_gpu_is_labelled_and_uses_numpy():
    import numpy as np

    mx.context.set_virtual_gpus(2)
    try:
        assert mx.gpu(1).is_virtual
        assert repr(mx.gpu(1)) == "gpu(1) [virtual]"
        assert mx.gpu(1).array_module is np
    finally:
        mx.context.set_virtual_gpus(0)


def test_dtype_errors_list_the_supported_dtypes():
    with pytest.raises(DTypeError, match="float32"):
        np_dtype("complex64")


def test_the_real_gpu_count_is_asked_once():
    """Without cupy each ``import cupy`` searches the whole path (~0.2 ms): ``is_virtual`` and
    ``array_module``, asked per array on virtual GPUs, must not pay it every time."""
    mx.context.set_virtual_gpus(2)
    try:
        for _ in range(5):
            assert mx.gpu(1).is_virtual
            mx.gpu(0).array_module
        info = mx.context._real_gpu_count.cache_info()
        assert info.misses <= 1 and info.hits >= 10
    finally:
        mx.context.set_virtual_gpus(0)
