"""A variable that is itself a graph output gets that output's head gradient (MXNet passes it through)."""

import numpy as np
import pytest

import mxnb as mx


def test_a_lone_variable_output_passes_its_head_gradient_through():
    x = mx.sym.Variable("x")
    ex = mx.sym.Group([x]).simple_bind(mx.cpu(), x=(2,))
    ex.forward(is_train=True)
    ex.backward([mx.nd.array([10.0, 20.0])])
    np.testing.assert_array_equal(ex.grad_dict["x"].asnumpy(), [10.0, 20.0])


@pytest.mark.parametrize("req", ["write", "add"])
def test_the_head_gradient_adds_to_the_other_contributions(req):
    x, w = mx.sym.Variable("x"), mx.sym.Variable("w")
    y = x * w + x
    group = mx.sym.Group([y, x, mx.sym.BlockGrad(x * 3)])
    ex = group.simple_bind(mx.cpu(), x=(2,), w=(2,), grad_req=req)
    xv, wv = np.array([1.0, 2.0]), np.array([3.0, 4.0])
    ex.arg_dict["x"][:] = xv
    ex.arg_dict["w"][:] = wv
    ex.grad_dict["x"][:] = 100.0
    ex.grad_dict["w"][:] = 100.0
    ex.forward(is_train=True)
    dy, dx_head = np.array([1.0, 1.0]), np.array([10.0, 20.0])
    ex.backward([mx.nd.array(dy), mx.nd.array(dx_head), mx.nd.array([5.0, 5.0])])
    start = 100.0 if req == "add" else 0.0
    # d/dx (x*w + x) = w + 1, plus the head gradient of x itself; BlockGrad gives nothing
    np.testing.assert_allclose(ex.grad_dict["x"].asnumpy(), start + dy * (wv + 1) + dx_head)
    np.testing.assert_allclose(ex.grad_dict["w"].asnumpy(), start + dy * xv)
