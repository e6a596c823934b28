"""Real networks built with the operator library infer their shapes as MXNet does.

MLP, LeNet, a ResNet basic block and an unrolled LSTM made only of
FullyConnected, SliceChannel, Activation and elementwise arithmetic.
"""

from __future__ import annotations

import numpy as np
import pytest

import mxnb as mx


def mlp():
    data = mx.sym.Variable("data")
    net = mx.sym.FullyConnected(data, num_hidden=128, name="fc1")
    net = mx.sym.Activation(net, act_type="relu", name="relu1")
    net = mx.sym.FullyConnected(net, num_hidden=10, name="fc2")
    return mx.sym.SoftmaxOutput(net, name="softmax")


def lenet():
    data = mx.sym.Variable("data")
    net = mx.sym.Convolution(data, kernel=(5, 5), num_filter=20, name="conv1")
    net = mx.sym.Activation(net, act_type="tanh")
    net = mx.sym.Pooling(net, pool_type="max", kernel=(2, 2), stride=(2, 2))
    net = mx.sym.Convolution(net, kernel=(5, 5), num_filter=50, name="conv2")
    net = mx.sym.Activation(net, act_type="tanh")
    net = mx.sym.Pooling(net, pool_type="max", kernel=(2, 2), stride=(2, 2))
    net = mx.sym.Flatten(net)
    net = mx.sym.FullyConnected(net, num_hidden=500, name="fc1")
    net = mx.sym.Activation(net, act_type="tanh")
    net = mx.sym.FullyConnected(net, num_hidden=10, name="fc2")
    return mx.sym.SoftmaxOutput(net, name="softmax")


def residual_block(data, channels, name):
    r"""
    data --conv-bn-relu-conv-bn--+-- relu
      \__________________________/
    """
    body = mx.sym.Convolution(
        data, kernel=(3, 3), pad=(1, 1), num_filter=channels, no_bias=True, name=f"{name}_conv1"
    )
    body = mx.sym.BatchNorm(body, name=f"{name}_bn1")
    body = mx.sym.Activation(body, act_type="relu")
    body = mx.sym.Convolution(
        body, kernel=(3, 3), pad=(1, 1), num_filter=channels, no_bias=True, name=f"{name}_conv2"
    )
    body = mx.sym.BatchNorm(body, name=f"{name}_bn2")
    return mx.sym.Activation(body + data, act_type="relu", name=f"{name}_relu")


def lstm_cell(x, h, c, hidden, step):
    """One LSTM step from FullyConnected and elementwise ops (weights shared across steps)."""
    i2h = mx.sym.FullyConnected(
        x,
        weight=WEIGHTS["i2h_weight"],
        bias=WEIGHTS["i2h_bias"],
        num_hidden=4 * hidden,
        name=f"t{step}_i2h",
    )
    h2h = mx.sym.FullyConnected(
        h,
        weight=WEIGHTS["h2h_weight"],
        bias=WEIGHTS["h2h_bias"],
        num_hidden=4 * hidden,
        name=f"t{step}_h2h",
    )
    gates = mx.sym.SliceChannel(i2h + h2h, num_outputs=4, name=f"t{step}_slice")
    in_gate = mx.sym.Activation(gates[0], act_type="sigmoid")
    forget_gate = mx.sym.Activation(gates[1], act_type="sigmoid")
    in_transform = mx.sym.Activation(gates[2], act_type="tanh")
    out_gate = mx.sym.Activation(gates[3], act_type="sigmoid")
    next_c = forget_gate * c + in_gate * in_transform
    next_h = out_gate * mx.sym.Activation(next_c, act_type="tanh")
    return next_h, next_c


WEIGHTS = {
    name: mx.sym.Variable(name) for name in ("i2h_weight", "i2h_bias", "h2h_weight", "h2h_bias")
}


def test_mlp_shapes():
    net = mlp()
    assert net.list_arguments() == [
        "data",
        "fc1_weight",
        "fc1_bias",
        "fc2_weight",
        "fc2_bias",
        "softmax_label",
    ]
    arg_shapes, out_shapes, aux_shapes = net.infer_shape(data=(32, 784))
    assert arg_shapes == [(32, 784), (128, 784), (128,), (10, 128), (10,), (32,)]
    assert out_shapes == [(32, 10)] and aux_shapes == []
    assert net.infer_type(data="float32")[1] == [np.float32]


def test_lenet_shapes():
    net = lenet()
    arg_shapes, out_shapes, _ = net.infer_shape(data=(8, 1, 28, 28))
    shapes = dict(zip(net.list_arguments(), arg_shapes))
    assert shapes["conv1_weight"] == (20, 1, 5, 5)
    assert shapes["conv2_weight"] == (50, 20, 5, 5)
    assert shapes["fc1_weight"] == (500, 800)
    assert out_shapes == [(8, 10)]
    internals = net.get_internals()
    assert internals["flatten0_output"].infer_shape(data=(8, 1, 28, 28))[1] == [(8, 800)]


def test_resnet_block_shapes_and_aux_states():
    data = mx.sym.Variable("data")
    net = residual_block(residual_block(data, 16, "stage1_unit1"), 16, "stage1_unit2")
    assert net.list_auxiliary_states()[:2] == [
        "stage1_unit1_bn1_moving_mean",
        "stage1_unit1_bn1_moving_var",
    ]
    arg_shapes, out_shapes, aux_shapes = net.infer_shape(data=(4, 16, 8, 8))
    assert out_shapes == [(4, 16, 8, 8)]
    assert aux_shapes == [(16,)] * 8
    assert dict(zip(net.list_arguments(), arg_shapes))["stage1_unit2_conv1_weight"] == (
        16,
        16,
        3,
        3,
    )
    text = net.tojson()
    assert mx.sym.load_json(text).tojson() == text


def test_unrolled_lstm_shares_weights_and_infers_every_step():
    hidden, steps, batch, features = 8, 3, 2, 5
    h = mx.sym.Variable("h0")
    c = mx.sym.Variable("c0")
    outputs = []
    for step in range(steps):
        h, c = lstm_cell(mx.sym.Variable(f"x{step}"), h, c, hidden, step)
        outputs.append(h)
    net = mx.sym.Group(outputs)
    arguments = net.list_arguments()
    assert arguments.count("i2h_weight") == 1  # one variable shared by every step
    shapes = {f"x{step}": (batch, features) for step in range(steps)}
    arg_shapes, out_shapes, _ = net.infer_shape(h0=(batch, hidden), c0=(batch, hidden), **shapes)
    by_name = dict(zip(arguments, arg_shapes))
    assert by_name["i2h_weight"] == (4 * hidden, features)
    assert by_name["h2h_weight"] == (4 * hidden, hidden)
    assert out_shapes == [(batch, hidden)] * steps


def test_lstm_cell_state_shape_flows_backward_from_the_hidden_state():
    """c0 is never given: it gets its shape from forget_gate * c0 (elementwise)."""
    h, c = lstm_cell(mx.sym.Variable("x"), mx.sym.Variable("h0"), mx.sym.Variable("c0"), 4, 0)
    arg_shapes, _, _ = mx.sym.Group([h, c]).infer_shape(x=(3, 6), h0=(3, 4))
    assert dict(zip(mx.sym.Group([h, c]).list_arguments(), arg_shapes))["c0"] == (3, 4)


@pytest.mark.timeout(60)
def test_eval_and_simple_bind_delegate_to_the_executor():
    a = mx.sym.Variable("a")
    b = mx.sym.Variable("b")
    (result,) = (a * 2 + b).eval(a=mx.nd.array([1.0, 2.0]), b=mx.nd.array([10.0, 20.0]))
    assert result.asnumpy().tolist() == [12.0, 24.0]
    exe = mlp().simple_bind(mx.cpu(), data=(4, 784))
    assert exe.arg_dict["fc1_weight"].shape == (128, 784)
    with pytest.raises(mx.base.NotSupportedError, match="group2ctx"):
        mlp().simple_bind(mx.cpu(), group2ctx={"a": mx.cpu()}, data=(4, 784))
