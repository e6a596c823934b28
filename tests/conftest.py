"""Fixtures shared across test folders."""

import pytest

import mxnb as mx


@pytest.fixture
def two_virtual_gpus():
    """Two virtual GPUs (``[gpu(0), gpu(1)]``) for the test; the previous count is restored after it."""
    before = mx.context.virtual_gpus()
    mx.context.set_virtual_gpus(2)
    yield [mx.gpu(0), mx.gpu(1)]
    mx.nd.waitall()
    mx.context.set_virtual_gpus(before)
