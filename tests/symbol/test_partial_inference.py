"""Partial shape inference, MXNet 1.x's rules: 0 is an unknown dimension, ``()`` an unknown shape.

Expected values are MXNet 1.9.1's answers for the same graphs (run by hand in
the MXNet venv), except where a comment says mxnb infers more: MXNet's
shape functions give up in a few places where the answer is forced.
"""

from __future__ import annotations

import numpy as np
import pytest

import mxnb as mx
from mxnb.base import ShapeError

V = mx.sym.Variable


def args_of(sym, **shapes):
    arg_shapes, _, _ = sym.infer_shape(**shapes)
    return dict(zip(sym.list_arguments(), arg_shapes))


def partial(sym, **shapes):
    arg_shapes, out_shapes, _ = sym.infer_shape_partial(**shapes)
    return dict(zip(sym.list_arguments(), arg_shapes)), out_shapes


def test_elementwise_unknown_dims_fill_each_other():
    a, b = V("a", shape=(0, 10)), V("b", shape=(12, 0))
    assert args_of(a + b) == {"a": (12, 10), "b": (12, 10)}


def test_fully_connected_batch_comes_back_from_the_output():
    r"""
    a (?, 10) -- fc(21) --+-- out      c (5, ?) gives the batch and takes num_hidden
                  c ------/
    """
    net = mx.sym.FullyConnected(V("a", shape=(0, 10)), num_hidden=21, name="fc") + V(
        "c", shape=(5, 0)
    )
    shapes = args_of(net)
    assert shapes["a"] == (5, 10) and shapes["c"] == (5, 21)
    assert shapes["fc_weight"] == (21, 10)


def test_fully_connected_data_features_from_the_weight():
    """mxnb infers more than MXNet here (MXNet stops: data (0, 0) has no known features)."""
    net = mx.sym.FullyConnected(V("x"), weight=V("w"), num_hidden=4, no_bias=True) + V("y")
    args, _ = partial(net, x=(0, 0), w=(4, 10), y=(3, 4))
    assert args["x"] == (3, 10)
    args, _ = partial(net, x=(0, 0, 5), w=(4, 10), y=(3, 4))
    assert args["x"] == (3, 2, 5)
    args, _ = partial(net, w=(4, 10), y=(3, 4))
    assert args["x"] == ()  # the rank of data is not forced: as MXNet


def test_slice_channel_both_ways():
    sliced = mx.sym.SliceChannel(V("a", shape=(0, 10)), num_outputs=10, axis=1, squeeze_axis=True)
    assert args_of(sliced[1] + V("c", shape=(5,)))["a"] == (5, 10)
    sliced = mx.sym.SliceChannel(V("a", shape=(0, 15, 0)), num_outputs=3, squeeze_axis=False)
    assert args_of(sliced[1] + V("c", shape=(3, 5, 2)))["a"] == (3, 15, 2)
    # mxnb: the data's rank follows from the outputs' (MXNet leaves it unknown)
    sliced = mx.sym.SliceChannel(V("x"), num_outputs=2, axis=1)
    assert partial(sliced[0] + V("y"), y=(2, 3))[0]["x"] == (2, 6)


def test_convolution_batch_and_stride_one_spatial_from_the_output():
    a = V("a", shape=(0, 10, 0, 0))
    conv = mx.sym.Convolution(a, num_filter=21, kernel=(3, 3), dilate=(1, 1), pad=(1, 1))
    assert args_of(conv + V("c", shape=(5, 21, 32, 32)))["a"] == (5, 10, 32, 32)
    strided = mx.sym.Convolution(V("x"), num_filter=4, kernel=(3, 3), stride=(2, 2), name="conv")
    args, _ = partial(strided + V("y"), x=(0, 2, 0, 0), y=(5, 4, 7, 7))
    assert args["x"] == (5, 2, 0, 0)  # stride 2: the size is not forced (as MXNet)
    assert args["conv_weight"] == (4, 2, 3, 3)


def test_concat_sums_and_fills_the_one_unknown_input():
    c = mx.sym.Concat(V("a", shape=(0, 10)), V("b", shape=(0, 5)), num_args=2, dim=1)
    d = V("d", shape=(2, 0)) + c
    assert args_of(d) == {"d": (2, 15), "a": (2, 10), "b": (2, 5)}
    # mxnb: the one input of unknown width gets the rest (MXNet leaves (2, 0))
    joined = mx.sym.Concat(V("x"), V("b"), dim=1) + V("y")
    assert partial(joined, x=(0, 0), b=(0, 5), y=(2, 15))[0]["x"] == (2, 10)


def test_reshape_special_values_with_unknown_dims():
    x, y = V("x"), V("y")
    assert partial(mx.sym.Reshape(x, shape=(-1, 5)), x=(0, 10))[1] == [(0, 5)]
    assert partial(mx.sym.Reshape(x, shape=(0, -1)), x=(0, 10, 2))[1] == [(0, 0)]
    assert partial(mx.sym.Reshape(x, shape=(-2,)), x=(0, 3))[1] == [(0, 3)]
    assert partial(mx.sym.Reshape(x, shape=(-3, 2)), x=(0, 3, 2))[1] == [(0, 2)]
    assert partial(mx.sym.Reshape(x, shape=(-4, 2, -1, 0)), x=(0, 3))[1] == [(2, 0, 3)]
    # backward: the known output fixes the one unknown dim of data by the element count
    assert partial(mx.sym.Reshape(x, shape=(-1, 5)) + y, x=(0, 10), y=(6, 5))[0]["x"] == (3, 10)
    assert partial(mx.sym.Reshape(x, shape=(-3, 2)) + y, x=(0, 3, 2), y=(12, 2))[0]["x"] == (
        4,
        3,
        2,
    )
    assert partial(mx.sym.Reshape(x, shape=(6, 5)) + y, y=(6, 5))[0]["x"] == ()


def test_dot_batch_dot_embedding_transpose_pick():
    x, y = V("x"), V("y")
    assert partial(mx.sym.dot(x, y), x=(0, 3, 4), y=(4, 5))[1] == [(0, 3, 5)]
    assert partial(mx.sym.batch_dot(x, y), x=(0, 3, 4), y=(0, 4, 5))[1] == [(0, 3, 5)]
    # mxnb: K comes from lhs (MXNet gives up and returns ())
    assert partial(mx.sym.batch_dot(x, y), x=(0, 3, 4), y=(0, 0, 5)) == (
        {"x": (0, 3, 4), "y": (0, 4, 5)},
        [(0, 3, 5)],
    )
    embed = mx.sym.Embedding(data=x, weight=V("w"), input_dim=100, output_dim=10)
    assert partial(embed, x=(0, 5), w=(100, 10))[1] == [(0, 5, 10)]
    transposed = mx.sym.transpose(x, axes=(0, 3, 2, 1))
    assert partial(transposed, x=(0, 3, 224, 224))[1] == [(0, 224, 224, 3)]
    assert partial(mx.sym.transpose(x, axes=(1, 0, 2)) + y, y=(3, 5, 4))[0]["x"] == (5, 3, 4)
    picked = mx.sym.pick(x, V("index"), axis=1)
    assert partial(picked, x=(0, 3, 3), index=(0, 3))[1] == [(0, 3)]
    # backward, through several ops: dot's output fixes its operands' free dims
    args, _ = partial(mx.sym.dot(x, V("w")) + y, x=(0, 3), w=(3, 0), y=(4, 5))
    assert args == {"x": (4, 3), "w": (3, 5), "y": (4, 5)}


def test_broadcast_infers_forward_only():
    x, y = V("x"), V("y")
    assert partial(mx.sym.broadcast_add(x, y), x=(0, 3), y=(4, 1))[1] == [(4, 3)]
    assert partial(mx.sym.broadcast_add(x, y), x=(0, 3), y=(1, 3))[1] == [(0, 3)]


def test_unknown_in_the_middle_is_inferred_from_both_ends():
    r"""
    data (?, 8) -- fc1(16) -- h (?, 16) -- slice(2) --+-- [0] (?, 8) * z
                                                      +-- [1] + b (4, 8)
    z is _zeros (0, 8); b gives the batch; it flows back to data and on to z.
    """
    data = V("data", shape=(0, 8))
    hidden = mx.sym.FullyConnected(data, num_hidden=16, name="fc1")
    parts = mx.sym.SliceChannel(hidden, num_outputs=2, axis=1)
    zeros = mx.sym.zeros(shape=(0, 8), name="z")
    net = mx.sym.Group([parts[0] * zeros, parts[1] + V("b", shape=(4, 8))])
    internals = net.get_internals()
    _, outs, _ = internals.infer_shape()
    shape_of = dict(zip(internals.list_outputs(), outs))
    assert shape_of["data"] == (4, 8) and shape_of["z_output"] == (4, 8)
    exe = net.simple_bind(mx.cpu())
    exe.forward()
    assert exe.outputs[0].shape == (4, 8)


def test_shape_completely_unknown_and_incomplete_bind_errors_name_the_node():
    ret = mx.sym.sin(V("data"))
    assert ret.infer_shape_partial() == ([()], [()], [])
    declared = mx.sym.sin(V("data", shape=()))  # () declares nothing (MXNet 1.x)
    assert declared.infer_shape_partial() == ([()], [()], [])
    assert declared.infer_shape(data=(2, 3))[1] == [(2, 3)]
    net = mx.sym.FullyConnected(mx.sym.zeros(shape=(0, 3), name="z"), num_hidden=4, name="fc")
    with pytest.raises(ShapeError, match=r"_zeros 'z' output \(\?, 3\)"):
        net.simple_bind(mx.cpu())
    fc = mx.sym.FullyConnected(V("x"), num_hidden=4, name="fc")
    with pytest.raises(ShapeError, match=r"'x' \(known so far: x \(\?, 5\)\)"):
        fc.simple_bind(mx.cpu(), x=(0, 5))
    with pytest.warns(UserWarning, match=r"x: \(0, 5\)"):
        assert fc.infer_shape(x=(0, 5)) == (None, None, None)


def test_partial_conflicts_name_the_node_and_the_axis():
    net = V("a", shape=(0, 10)) + V("c", shape=(3, 11))
    with pytest.raises(ShapeError, match=r"elemwise_add .*\(\?, 10\) and \(3, 11\).*axis 1"):
        net.infer_shape()
    with pytest.raises(ShapeError, match="Concat"):
        mx.sym.Concat(V("a"), V("b"), dim=1).infer_shape_partial(a=(2, 0), b=(3, 0))


def test_types_flow_both_ways_as_in_mxnet():
    x, y = V("x"), V("y")

    def types(sym, **known):
        arg_types, out_types, _ = sym.infer_type_partial(**known)
        return [t and np.dtype(t).name for t in arg_types], [np.dtype(t).name for t in out_types]

    net = mx.sym.FullyConnected(x, num_hidden=3, name="fc") + y
    assert types(net, y=np.float16) == (["float16"] * 4, ["float16"])
    sliced = mx.sym.SliceChannel(x, num_outputs=2)[0] + y  # one of two outputs known is enough
    assert types(sliced, y=np.float16) == (["float16", "float16"], ["float16"])
    assert types(mx.sym.zeros(shape=(0, 3), dtype="float16") + x) == (["float16"], ["float16"])
    cast = mx.sym.Cast(x, dtype="float16") + y  # Cast's input dtype is not forced
    assert types(cast) == ([None, "float16"], ["float16"])


def test_layers_around_the_listed_ops_pass_partial_shapes_both_ways():
    x, y = V("x"), V("y")
    args, _ = partial(mx.sym.BatchNorm(x, name="bn") + y, x=(0, 3, 0, 0), y=(2, 3, 4, 4))
    assert args["x"] == (2, 3, 4, 4) and args["bn_gamma"] == (3,)
    assert partial(mx.sym.LeakyReLU(x) + y, y=(2, 3))[0]["x"] == (2, 3)
    assert partial(mx.sym.Flatten(x) + y, x=(0, 3, 0), y=(2, 12))[0]["x"] == (2, 3, 4)
    assert partial(mx.sym.expand_dims(x, axis=1) + y, y=(2, 1, 3))[0]["x"] == (2, 3)
    assert partial(mx.sym.swapaxes(x, dim1=0, dim2=1) + y, y=(2, 5, 3))[0]["x"] == (5, 2, 3)
    assert partial(mx.sym.Activation(x, act_type="relu") + y, x=(0, 3), y=(5, 0))[1] == [(5, 3)]


def test_pooling_keeps_batch_and_channels_both_ways():
    x, y = V("x"), V("y")
    pooled = mx.sym.Pooling(x, kernel=(2, 2), stride=(2, 2), pool_type="max")
    assert partial(pooled, x=(0, 3, 8, 8))[1] == [(0, 3, 4, 4)]
    assert partial(pooled + y, x=(0, 0, 8, 8), y=(5, 3, 4, 4))[0]["x"] == (5, 3, 8, 8)
    global_pool = mx.sym.Pooling(x, global_pool=True, kernel=(1, 1), pool_type="avg")
    assert partial(global_pool, x=(2, 3, 0, 0))[1] == [(2, 3, 1, 1)]


def test_reductions_where_stack_one_hot_tile_take_with_unknown_dims():
    x, y, c = V("x"), V("y"), V("c")
    assert partial(mx.sym.sum(x, axis=1) + y, x=(0, 3, 0), y=(2, 5))[0]["x"] == (2, 3, 5)
    kept = mx.sym.sum(x, axis=1, keepdims=True) + y
    assert partial(kept, x=(0, 3, 0), y=(2, 1, 5))[0]["x"] == (2, 3, 5)
    assert partial(mx.sym.argmax(x, axis=0), x=(0, 3))[1] == [(3,)]
    assert partial(mx.sym.where(c, x, y), c=(0, 2), x=(0, 2), y=(5, 0))[0] == {
        "c": (5, 2),
        "x": (5, 2),
        "y": (5, 2),
    }
    stacked = mx.sym.stack(x, y, axis=1) + c
    assert partial(stacked, c=(2, 2, 3))[0] == {"x": (2, 3), "y": (2, 3), "c": (2, 2, 3)}
    assert partial(mx.sym.one_hot(x, depth=4) + y, y=(3, 5, 4))[0]["x"] == (3, 5)
    assert partial(mx.sym.tile(x, reps=(2, 1)), x=(0, 3))[1] == [(0, 3)]
    assert partial(mx.sym.take(x, y), x=(0, 3), y=(4,))[1] == [(4, 3)]
    regression = mx.sym.LinearRegressionOutput(x, name="lro")
    assert partial(regression, x=(0, 3))[0] == {"x": (0, 3), "lro_label": (0, 3)}
    assert partial(regression + y, y=(4, 3))[0]["x"] == (4, 3)


def test_broadcast_to_keeps_and_fills_the_axes_its_shape_leaves_open():
    x, y = V("x"), V("y")
    assert partial(mx.sym.broadcast_to(x, shape=(4, 0, 3)), x=(0, 2, 1))[1] == [(4, 2, 3)]
    grown = mx.sym.broadcast_to(x, shape=(4, 0, 3)) + y
    assert partial(grown, x=(1, 0, 1), y=(4, 5, 3))[0]["x"] == (1, 5, 1)


def test_a_partial_shape_passed_for_a_declared_variable_must_fit_it():
    net = mx.sym.FullyConnected(V("data", shape=(2, 6)), num_hidden=3)
    assert net.infer_shape(data=(0, 6))[1] == [(2, 3)]
    with pytest.raises(ShapeError, match=r"declared with shape \(2, 6\) but \(\?, 7\)"):
        net.infer_shape(data=(0, 7))
