"""plot_network / print_summary: mx.viz's pictures and tables from a symbol's JSON and shapes."""

from __future__ import annotations

import re

import pytest

import mxnb as mx
from mxnb.executor import zoo
from mxnb.widgets import plot_network, print_summary


def small_net():
    r"""
    data -> conv (Convolution) -> relu (Activation) -> pool (Pooling) -> fc (FullyConnected)
         -> softmax (SoftmaxOutput) <- softmax_label
    """
    data = mx.sym.Variable("data")
    net = mx.sym.Convolution(data, kernel=(3, 3), num_filter=4, name="conv")
    net = mx.sym.Activation(net, act_type="relu", name="relu")
    net = mx.sym.Pooling(net, kernel=(2, 2), stride=(2, 2), pool_type="max", name="pool")
    net = mx.sym.FullyConnected(net, num_hidden=10, name="fc")
    return mx.sym.SoftmaxOutput(net, name="softmax")


def test_plot_network_nodes_edges_and_shapes():
    dot = plot_network(small_net(), shape={"data": (2, 1, 8, 8)})
    source = dot.source
    # weights hidden, inputs drawn as ovals, ops as boxes coloured by family
    assert "conv_weight" not in source and "fc_bias" not in source
    assert re.search(r"\bdata \[label=data .*shape=oval", source)
    assert re.search(r'conv \[label="Convolution\n3x3/1, 4\nconv" fillcolor="#fb8072"', source)
    assert re.search(r'relu \[label="Activation\nrelu\nrelu" fillcolor="#ffffb3"', source)
    # edges point back from consumer to producer with the carried shape (batch axis dropped)
    edges = set(re.findall(r"(\w+) -> (\w+) \[label=\"?([\dx]+)\"?", source))
    assert {
        ("conv", "data", "1x8x8"),
        ("relu", "conv", "4x6x6"),
        ("pool", "relu", "4x6x6"),
    } <= edges
    assert ("fc", "pool", "4x3x3") in edges and ("softmax", "fc", "10") in edges


def test_plot_network_shows_weights_when_asked():
    source = plot_network(small_net(), hide_weights=False).source
    assert "conv_weight" in source and "fc_bias" in source


def test_print_summary_counts_parameters(capsys):
    print_summary(zoo.mlp(), shape={"data": (32, 784)})
    out = capsys.readouterr().out
    assert "Layer (type)" in out and "Output Shape" in out and "Param #" in out
    assert re.search(r"fc1\(FullyConnected\)\s+128\s+100480\s+data", out)
    assert "Total params: 109386" in out  # 784*128+128 + 128*64+64 + 64*10+10


def test_plot_network_resnet_renders(tmp_path):
    dot = plot_network(zoo.resnet(num_layers=18), shape={"data": (1, 3, 224, 224)})
    assert "BatchNorm" in dot.source
    svg = dot.pipe(format="svg").decode()
    assert "<svg" in svg


def test_bad_shape_name_is_a_clear_error():
    with pytest.raises(mx.MXNBError):
        plot_network(small_net(), shape={"nonsense": (1, 2)})
