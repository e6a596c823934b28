"""mx.test_utils with MXNet's signatures: each helper checks what it claims."""

import numpy as np
import pytest

import mxnb as mx
from mxnb import test_utils as tu


def test_np_reduce_matches_numpy():
    data = np.random.default_rng(0).standard_normal((2, 3, 4))
    for axis in (None, 1, (0, 2), -1):
        for keepdims in (False, True):
            got = tu.np_reduce(data, axis, keepdims, np.sum)
            want = np.sum(data, axis=axis, keepdims=keepdims)
            np.testing.assert_allclose(got, want, rtol=1e-12)


def test_simple_forward():
    x = mx.sym.Variable("x")
    y = mx.sym.Variable("y")
    out = tu.simple_forward(x * y + 1, x=np.array([1.0, 2.0]), y=np.array([3.0, 4.0]))
    assert out.tolist() == [4.0, 9.0]
    both = tu.simple_forward(mx.sym.Group([x + 1, x * 2]), x=np.array([1.0]))
    assert [o.tolist() for o in both] == [[2.0], [2.0]]


def test_check_symbolic_forward_and_backward_mxnet_signatures():
    x = mx.sym.Variable("x")
    sym = mx.sym.square(x)
    data = np.array([[1.0, -2.0]])
    tu.check_symbolic_forward(sym, [data], [data**2], 1e-5, 1e-6, None, mx.cpu())
    grads = tu.check_symbolic_backward(sym, [data], [np.ones_like(data)], [2 * data], ctx=mx.cpu())
    assert grads["x"].tolist() == [[2.0, -4.0]]
    with pytest.raises(AssertionError):
        tu.check_symbolic_forward(sym, [data], [data])


def test_check_symbolic_forward_equal_nan():
    x = mx.sym.Variable("x")
    data = np.array([np.nan, 4.0])
    tu.check_symbolic_forward(x * 2, [data], [data * 2], equal_nan=True)
    with pytest.raises(AssertionError):
        tu.check_symbolic_forward(x * 2, [data], [data * 2])


def test_check_numeric_gradient_positional_aux_states():
    data = mx.sym.Variable("data")
    sym = mx.sym.tanh(data)
    grads = tu.check_numeric_gradient(sym, [np.array([0.1, -0.3, 0.7])], None, 1e-4, 1e-2)
    assert sorted(grads) == ["data"]


def test_sparse_grad_types_are_refused_by_name():
    x = mx.sym.Variable("x")
    with pytest.raises(mx.MXNetError, match="sparse"):
        tu.check_numeric_gradient(x * 2, [np.ones(2)], grad_stype_dict={"x": "row_sparse"})


def test_check_consistency_of_two_spellings():
    data = mx.sym.Variable("data")
    regular = mx.sym.square(data)
    other = data * data
    ctx = {"ctx": mx.cpu(), "data": (2, 3)}
    tu.check_consistency([regular, other], ctx_list=[ctx, ctx])
    with pytest.raises(AssertionError):
        tu.check_consistency([regular, data * 2], ctx_list=[ctx, ctx])
    with pytest.raises(mx.MXNetError, match="2 symbols for 1"):
        tu.check_consistency([regular, other], ctx_list=[ctx])


def test_assert_almost_equal_broadcasts_like_mxnet():
    tu.assert_almost_equal(np.float32(2.0), np.array([2.0]))  # numpy 0-d vs MXNet's (1,)
    assert tu.almost_equal(np.ones((2, 3)), np.ones(3))
    assert not tu.almost_equal(np.ones((2, 3)), np.ones(3), use_broadcast=False)
    with pytest.raises(AssertionError, match="shape"):
        tu.assert_almost_equal(np.ones(2), np.ones(3))
    assert not tu.almost_equal(np.array([1.0, 2.0]), np.array([1.0, 2.5]))
