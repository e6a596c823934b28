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


def test_positional_values_after_the_inputs_are_parameters_in_declaration_order():
    # MXNet 1.9.1: mx.nd.depth_to_space(x, 2) and mx.sym.Activation(x, 'relu').
    x = mx.nd.array(np.arange(8.0).reshape(1, 4, 1, 2))
    assert mx.nd.depth_to_space(x, 2).shape == (1, 1, 2, 4)
    assert mx.nd.space_to_depth(mx.nd.depth_to_space(x, 2), 2).asnumpy().tolist() == (
        x.asnumpy().tolist()
    )
    data = mx.sym.Variable("data")
    assert mx.sym.Activation(data, "relu").attr("act_type") == "relu"
    block = mx.sym.depth_to_space(data, 2)
    assert block.list_arguments() == ["data"]
    assert block.infer_shape(data=(1, 4, 1, 2))[1] == [(1, 1, 2, 4)]
    # None before the parameters is an input not given, as in MXNet
    fc = mx.sym.FullyConnected(data, None, None, 3, True)
    assert fc.list_arguments() == ["data", fc.name + "_weight"]


def test_positional_parameters_too_many_or_twice_are_type_errors():
    # MXNet: "depth_to_space() got multiple values for argument 'block_size'" (a TypeError).
    data = mx.sym.Variable("data")
    x = mx.nd.ones((1, 4, 1, 1))
    with pytest.raises(TypeError, match="'block_size' given both by position and by keyword"):
        mx.nd.depth_to_space(x, 2, block_size=2)
    with pytest.raises(TypeError, match="'block_size' given both"):
        mx.sym.depth_to_space(data, 2, block_size=2)
    with pytest.raises(mx.MXNetError, match=r"2 positional parameter value.*\(block_size\)"):
        mx.sym.depth_to_space(data, 2, 3)
    with pytest.raises(mx.MXNetError, match="NDArray arguments must come before parameters"):
        mx.nd.depth_to_space(x, 2, x)


def test_an_input_given_as_none_by_keyword_is_not_given():
    # MXNet 1.9.1: SequenceReverse(data=..., sequence_length=None, use_sequence_length=False).
    seq = mx.sym.Variable("seq")
    rev = mx.sym.SequenceReverse(data=seq, sequence_length=None, use_sequence_length=False)
    assert rev.list_arguments() == ["seq"]
    out = rev.bind(mx.cpu(), {"seq": mx.nd.array([[1.0], [2.0], [3.0]])}).forward()[0]
    assert out.asnumpy().ravel().tolist() == [3.0, 2.0, 1.0]
    x = mx.nd.array([[1.0], [2.0], [3.0]])
    out = mx.nd.SequenceReverse(x, sequence_length=None, use_sequence_length=False)
    assert out.asnumpy().ravel().tolist() == [3.0, 2.0, 1.0]
    # a None for a key that is not an input of this configuration changes nothing;
    # a real value for an unknown parameter is still refused
    with pytest.raises(mx.MXNetError, match="unknown parameter 'sequence_lenght'"):
        mx.nd.SequenceReverse(x, sequence_lenght=2)
