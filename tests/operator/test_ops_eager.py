"""The eager reference runner: what an operator is handed, exactly as the executor will hand it."""

from __future__ import annotations

from typing import ClassVar

import numpy as np
import pytest

from mxnb.base import ShapeError
from mxnb.operator import OperatorProperty, ResourceRequest, eager
from mxnb.operator.ops._common import KernelProp, write


class _ProbeProp(KernelProp):
    """y = 2x with a hidden second output; backward declares only out_grad[0] and in_data[0]."""

    seen: ClassVar[dict] = {}

    def list_outputs(self):
        return ["output", "hidden"]

    def num_visible_outputs(self):
        return 1

    def list_auxiliary_states(self):
        return ["counter"]

    def forward_resource(self, in_shape):
        return [ResourceRequest.RANDOM, ResourceRequest.TEMP_SPACE]

    def declare_backward_dependency(self, out_grad, in_data, out_data):
        return [out_grad[0], in_data[0]]

    def forward(self, ctx, in_data, req, out_data, aux):
        _ProbeProp.seen["forward_resources"] = ctx.requested
        _ProbeProp.seen["is_train"] = ctx.is_train
        write(out_data[0], req[0], 2 * in_data[0])
        write(out_data[1], req[1], in_data[0])
        aux[0] += 1

    def backward(self, ctx, out_grad, in_data, out_data, req, in_grad, aux):
        _ProbeProp.seen["backward"] = (out_grad, in_data, out_data, list(req), ctx.is_train)
        write(in_grad[0], req[0], 2 * out_grad[0])


def test_backward_gets_none_for_what_it_did_not_declare():
    x = np.arange(3.0)
    counter = np.zeros(3)
    outs, aux_out, state = eager.run_forward(_ProbeProp(), [x], aux=[counter])
    assert [o.tolist() for o in outs] == [[0.0, 2.0, 4.0], [0.0, 1.0, 2.0]]
    assert aux_out[0].tolist() == [1, 1, 1] and counter.tolist() == [0, 0, 0]
    random, temp = _ProbeProp.seen["forward_resources"]
    assert isinstance(random.generator, np.random.Generator)
    assert temp.get_space((2, 2), np.float32).shape == (2, 2)
    grads = eager.run_backward(state, [np.ones(3)])
    out_grad, in_data, out_data, req, is_train = _ProbeProp.seen["backward"]
    assert out_grad[1] is None and out_data == [None, None] and in_data[0] is x
    assert out_grad[0].tolist() == [1, 1, 1], "undeclared head gradients are not handed over"
    assert req == [1] and is_train, "WRITE_TO; backward runs in training mode as MXNet's autograd"
    assert grads[0].tolist() == [2.0, 2.0, 2.0]


def test_temp_space_reuses_one_block():
    space = eager.EagerTempSpace()
    first = space.get_space((4, 4), np.float32)
    second = space.get_space((2, 8), np.float32)
    assert np.shares_memory(first, second)


def test_wrong_input_count_names_the_arguments():
    with pytest.raises(
        ShapeError, match=r"FullyConnected: expected 3 inputs \(data, weight, bias\), got 1"
    ):
        eager.run_forward("FullyConnected", [np.ones((2, 3))], {"num_hidden": 4})


def test_numeric_gradient_check_reports_the_worst_element():
    class WrongProp(KernelProp):
        """y = x*x with a gradient of x (wrong by a factor 2)."""

        def forward(self, ctx, in_data, req, out_data, aux):
            write(out_data[0], req[0], in_data[0] ** 2)

        def backward(self, ctx, out_grad, in_data, out_data, req, in_grad, aux):
            write(in_grad[0], req[0], out_grad[0] * in_data[0])

    with pytest.raises(
        AssertionError, match="gradient of data differs from central differences at index"
    ):
        eager.numeric_gradient_check(WrongProp(), [np.array([1.0, 3.0])])
    assert isinstance(WrongProp(), OperatorProperty)
