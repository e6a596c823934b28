"""MXNet 1.x API behaviour that MXNet's own unit tests rely on (issue 21, third pass).

Each test states the MXNet 1.9.1 behaviour it checks; the values were confirmed
with MXNet 1.9.1 itself.
"""

from __future__ import annotations

import numpy as np
import pytest

import mxnb as mx
from mxnb import test_utils as tu


@pytest.mark.parametrize("req", ["write", "add", "null"])
def test_check_symbolic_backward_grad_req_on_automatic_data_name(req):
    # mx.sym.softmin(axis=0) has no data given: its input is the variable 'softmin0_data'.
    # 'write' gives the gradient, 'add' adds it to the start value, 'null' leaves the start value.
    with mx.name.NameManager():
        sym = mx.sym.square()
    assert sym.list_arguments() == ["square0_data"]
    data = np.array([[1.0, -2.0]])
    grads = tu.check_symbolic_backward(sym, [data], [np.ones_like(data)], [2 * data], grad_req=req)
    assert grads["square0_data"].shape == (1, 2)
    if req == "write":
        assert grads["square0_data"].tolist() == [[2.0, -4.0]]


def test_check_symbolic_backward_grad_req_per_argument_and_wrong_values():
    a, b = mx.sym.Variable("a"), mx.sym.Variable("b")
    ones = np.ones((2,))
    grads = tu.check_symbolic_backward(
        a * b, [ones * 2, ones * 3], [ones], [ones * 3, ones * 2], grad_req={"a": "write"}
    )
    assert grads["a"].tolist() == [3.0, 3.0]
    with pytest.raises(AssertionError):  # 'write' must give b's gradient, 2, not 4
        tu.check_symbolic_backward(
            a * b, [ones * 2, ones * 3], [ones], {"b": ones * 4}, grad_req="write"
        )
    with pytest.raises(mx.MXNetError, match="grad_req"):
        tu.check_symbolic_backward(a * b, [ones, ones], [ones], [ones, ones], grad_req="sum")
