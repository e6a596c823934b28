"""Small operator properties for planning tests (semantics only, like MXNet's, no kernels needed).

They mirror the backward dependencies and in-place options of MXNet's
FullyConnected, Activation, elementwise add and SoftmaxOutput, so plans made
from them can be reasoned about by hand, independent of the operator library.
"""

from __future__ import annotations

from mxnb.operator.base import OperatorProperty
from mxnb.operator.param import Param
from mxnb.symbol.graph import Node, NodeEntry


class ToyFC(OperatorProperty):
    """y = x W^T: backward reads out_grad, data and weight (not the output)."""

    type_string = "ToyFC"
    num_hidden = Param(int, doc="output features")

    def list_arguments(self):
        return ["data", "weight"]

    def infer_shape(self, in_shape):
        data = in_shape[0]
        if data is None:
            return None
        return [data, (self.num_hidden, data[1])], [(data[0], self.num_hidden)], []

    def declare_backward_dependency(self, out_grad, in_data, out_data):
        return [out_grad[0], in_data[0], in_data[1]]


class ToyRelu(OperatorProperty):
    """relu: forward may run in place; backward reads out_grad and the output only."""

    type_string = "ToyRelu"

    def declare_backward_dependency(self, out_grad, in_data, out_data):
        return [out_grad[0], out_data[0]]

    def forward_inplace_option(self, in_data, out_data):
        return [(in_data[0], out_data[0])]

    def backward_inplace_option(self, out_grad, in_data, out_data, in_grad):
        return [(out_grad[0], in_grad[0])]


class ToyAdd(OperatorProperty):
    """lhs + rhs: backward reads out_grad only; forward may reuse lhs."""

    type_string = "ToyAdd"

    def list_arguments(self):
        return ["lhs", "rhs"]

    def declare_backward_dependency(self, out_grad, in_data, out_data):
        return [out_grad[0]]

    def forward_inplace_option(self, in_data, out_data):
        return [(in_data[0], out_data[0])]


class ToySoftmaxOutput(OperatorProperty):
    """A loss: backward reads the label and the output, never a head gradient."""

    type_string = "ToySoftmaxOutput"

    def list_arguments(self):
        return ["data", "label"]

    def infer_shape(self, in_shape):
        data = in_shape[0]
        if data is None:
            return None
        return [data, (data[0],)], [data], []

    def declare_backward_dependency(self, out_grad, in_data, out_data):
        return [in_data[1], out_data[0]]


class ToySymbol:
    """Just enough of a Symbol for the planner: a list of head entries."""

    def __init__(self, outputs):
        self._outputs = list(outputs)


def var(name):
    """A variable entry."""
    return NodeEntry(Node(None, name, [], {}), 0)


def apply(prop, name, *inputs):
    """Apply ``prop`` to ``inputs``; weight variables are made as MXNet does (``name_weight``)."""
    entries = list(inputs)
    for arg in prop.list_arguments()[len(entries) :]:
        entries.append(var(f"{name}_{arg}"))
    return NodeEntry(Node(prop, name, entries, {}), 0)


def mlp(num_layers=2, hidden=8, classes=4):
    """data -> (fc, relu) * num_layers -> fc -> softmax."""
    x = var("data")
    for i in range(num_layers):
        x = apply(ToyFC(num_hidden=hidden), f"fc{i + 1}", x)
        x = apply(ToyRelu(), f"relu{i + 1}", x)
    x = apply(ToyFC(num_hidden=classes), "fc_out", x)
    return ToySymbol([apply(ToySoftmaxOutput(), "softmax", x)])
