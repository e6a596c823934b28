"""Specification of Symbol.infer_shape / infer_shape_partial / infer_type (MXNet 1.x semantics)."""

from __future__ import annotations

import numpy as np
import pytest

import mxnb as mx
from mxnb.base import DTypeError, GraphError, ShapeError


def mlp():
    data = mx.sym.Variable("data")
    fc1 = mx.sym.TestDense(data, num_hidden=16, name="fc1")
    act = mx.sym.TestAct(fc1, act_type="relu", name="relu1")
    bn = mx.sym.TestNorm(act, name="bn")
    return mx.sym.TestDense(bn, num_hidden=4, name="fc2")


def test_forward_inference_fills_weights_outputs_and_aux():
    net = mlp()
    arg_shapes, out_shapes, aux_shapes = net.infer_shape(data=(8, 3, 5))
    assert dict(zip(net.list_arguments(), arg_shapes)) == {
        "data": (8, 3, 5),
        "fc1_weight": (16, 15),
        "fc1_bias": (16,),
        "bn_gamma": (16,),
        "bn_beta": (16,),
        "fc2_weight": (4, 16),
        "fc2_bias": (4,),
    }
    assert out_shapes == [(8, 4)]
    assert aux_shapes == [(16,), (16,)]
    assert net.infer_shape((8, 3, 5)) == (arg_shapes, out_shapes, aux_shapes)  # positional


def test_backward_inference_from_a_known_output_through_same_shape_ops():
    r"""
    a ----\
           + ---- act ---- * ---- (c known: (4, 2))
    b ----/                |
                           c
    """
    a, b, c = (mx.sym.Variable(n) for n in "abc")
    net = mx.sym.TestAct(a + b, act_type="tanh") * c
    arg_shapes, out_shapes, _ = net.infer_shape(c=(4, 2))
    assert arg_shapes == [(4, 2), (4, 2), (4, 2)]
    assert out_shapes == [(4, 2)]


def test_variable_shape_attribute_is_used():
    data = mx.sym.Variable("data", shape=(2, 6))
    net = mx.sym.TestDense(data, num_hidden=3, name="fc")
    assert net.infer_shape()[1] == [(2, 3)]
    # a shape passed in wins over the declared one, as in MXNet 1.x (test_symbol_infer_shape_var)
    assert net.infer_shape(data=(2, 7))[0][0] == (2, 7)


def test_conflicting_shapes_name_node_argument_and_shapes():
    net = mlp()
    with pytest.raises(ShapeError) as info:
        net.infer_shape(data=(8, 15), fc1_weight=(16, 10))
    message = str(info.value)
    assert "TestDense 'fc1'" in message
    assert "(16, 10)" in message and "(16, 15)" in message


def test_incomplete_inference_warns_and_returns_nones_like_mxnet():
    net = mlp()
    with pytest.warns(UserWarning, match="data"):
        assert net.infer_shape() == (None, None, None)
    args, outs, _aux = net.infer_shape_partial()
    assert args[0] == () and outs == [()]
    a, b = mx.sym.Variable("a"), mx.sym.Variable("b")
    joined = mx.sym.TestConcat(a, b, dim=1)
    args, outs, _ = joined.infer_shape_partial(a=(2, 3))
    assert args == [(2, 3), ()] and outs == [()]


def test_zero_dims_mean_unknown():
    net = mlp()
    with pytest.warns(UserWarning):
        assert net.infer_shape(data=(0, 15)) == (None, None, None)


def test_unknown_argument_names_are_rejected():
    net = mlp()
    with pytest.raises(GraphError, match="'date' is not an input.*data"):
        net.infer_shape(date=(1, 2))
    with pytest.raises(ShapeError, match="not a shape"):
        net.infer_shape(data="big")


def test_infer_type_returns_numpy_types():
    a, b = mx.sym.Variable("a"), mx.sym.Variable("b")
    net = mx.sym.TestAct(a + b, act_type="relu")
    assert net.infer_type(a="float16") == ([np.float16, np.float16], [np.float16], [])
    assert net.infer_type(b=np.float64)[1] == [np.float64]
    assert net.infer_type() == (None, None, None)
    assert net.infer_type_partial() == ([None, None], [None], [])
    typed = mx.sym.Variable("x", dtype="int32")
    assert mx.sym.TestAct(typed, act_type="relu").infer_type()[1] == [np.int32]
    with pytest.raises(GraphError):
        net.infer_type(c="float32")


def test_infer_type_conflict_is_a_dtype_error():
    class _Fixed(mx.operator.OperatorProperty):
        def infer_type(self, in_type):
            return [np.dtype("float32")], [np.dtype("float32")], []

    mx.operator.register("TestFixedFloat32")(_Fixed)
    net = mx.sym.TestFixedFloat32(mx.sym.Variable("x"), name="fixed")
    with pytest.raises(DTypeError, match="TestFixedFloat32 'fixed'.*float64.*float32"):
        net.infer_type(x="float64")


def test_grouped_outputs_infer_together():
    data = mx.sym.Variable("data")
    group = mx.sym.Group(
        [
            mx.sym.TestDense(data, num_hidden=2, name="a"),
            mx.sym.TestDense(data, num_hidden=5, name="b"),
        ]
    )
    assert group.infer_shape(data=(3, 4))[1] == [(3, 2), (3, 5)]


def test_partial_shape_attributes_are_checked_not_trusted():
    """Gluon exports declare ``__shape__`` with 0 for dims fixed later: (4, 0) fits (4, 6)."""
    weight = mx.sym.Variable("w", shape=(4, 0))
    net = mx.sym.TestDense(mx.sym.Variable("data"), weight=weight, num_hidden=4, name="fc")
    assert net.infer_shape(data=(2, 6))[0][1] == (4, 6)
    wrong = mx.sym.Variable("w", shape=(5, 0))
    net = mx.sym.TestDense(mx.sym.Variable("data"), weight=wrong, num_hidden=4, name="fc")
    with pytest.raises(ShapeError, match=r"declared with shape \(5, \?\)"):
        net.infer_shape(data=(2, 6))
