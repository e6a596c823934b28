"""SoftmaxOutput's plain-rows backward (the (N, C) fast path) against its general path.

Specification: for 2-D data with integer labels, ``req='write'`` and no
smoothing / ignore / out_grad, backward takes ``_backward_rows`` (4 numpy
calls); every other case takes the one-hot path.  Both must give the same
gradient, bit for bit, for each normalization and grad_scale.
"""

from __future__ import annotations

import numpy as np
import pytest

import mxnb as mx
from mxnb.operator.ops.softmax import SoftmaxOutputProp


def _data_grad(normalization: str, grad_scale: float) -> np.ndarray:
    rng = np.random.RandomState(3)
    data = mx.sym.Variable("data")
    net = mx.sym.SoftmaxOutput(
        data, name="softmax", normalization=normalization, grad_scale=grad_scale
    )
    exe = net.simple_bind(mx.cpu(), data=(6, 5))
    exe.arg_dict["data"][:] = rng.randn(6, 5).astype(np.float32)
    exe.arg_dict["softmax_label"][:] = np.array([0, 4, 2, 2, 1, 3], dtype=np.float32)
    exe.forward(is_train=True)
    exe.backward()
    return exe.grad_dict["data"].asnumpy()


@pytest.mark.parametrize("normalization", ["null", "batch"])
@pytest.mark.parametrize("grad_scale", [1.0, 0.5])
def test_plain_rows_path_equals_the_general_path(monkeypatch, normalization, grad_scale):
    calls = []
    rows = SoftmaxOutputProp._backward_rows
    monkeypatch.setattr(
        SoftmaxOutputProp,
        "_backward_rows",
        lambda self, *args: calls.append(1) or rows(self, *args),
    )
    fast = _data_grad(normalization, grad_scale)
    assert calls  # the fast path ran
    monkeypatch.setattr(SoftmaxOutputProp, "_plain_rows", lambda self, y, label, req: False)
    general = _data_grad(normalization, grad_scale)
    np.testing.assert_array_equal(fast, general)
