"""Specification of the graph contract: nodes, entries, topological order, inference."""

from __future__ import annotations

import numpy as np
import pytest

from mxnb.base import GraphError, ShapeError
from mxnb.operator.base import OperatorProperty
from mxnb.operator.param import Param
from mxnb.symbol.graph import Node, NodeEntry, input_names, topo_sort
from mxnb.symbol.inference import infer_shapes, infer_types


class DenseProp(OperatorProperty):
    """y = x W^T + b: fills its weight and bias shapes from data (backward inference)."""

    type_string = "TestDense"
    num_hidden = Param(int, doc="units")

    def list_arguments(self):
        return ["data", "weight", "bias"]

    def infer_shape(self, in_shape):
        data = in_shape[0]
        if data is None:
            return None
        weight = (self.num_hidden, int(np.prod(data[1:])))
        if in_shape[1] is not None and tuple(in_shape[1]) != weight:
            raise self.shape_error(f"weight has shape {in_shape[1]}, expected {weight}")
        return [data, weight, (self.num_hidden,)], [(data[0], self.num_hidden)], []


class NormProp(OperatorProperty):
    """Same-shape op with two aux states."""

    type_string = "TestNorm"

    def list_auxiliary_states(self):
        return ["moving_mean", "moving_var"]

    def infer_shape(self, in_shape):
        if in_shape[0] is None:
            return None
        data = tuple(in_shape[0])
        return [data], [data], [(data[1],), (data[1],)]


class AddProp(OperatorProperty):
    """Default (same-shape) inference with two arguments."""

    type_string = "TestAdd"

    def list_arguments(self):
        return ["lhs", "rhs"]


def var(name, **attrs):
    return Node(None, name, [], dict(attrs))


def test_topo_sort_is_dfs_post_order_over_inputs_in_order():
    r"""
    a   b
     \ / \
     add  |
       \  /
       add2
    """
    a, b = var("a"), var("b")
    add = Node(AddProp(), "add", [NodeEntry(a, 0), NodeEntry(b, 0)], {})
    add2 = Node(AddProp(), "add2", [NodeEntry(add, 0), NodeEntry(b, 0)], {})
    assert [n.name for n in topo_sort([NodeEntry(add2, 0)])] == ["a", "b", "add", "add2"]
    assert a.is_variable and not add.is_variable
    assert a.num_outputs() == 1 and add.num_outputs() == 1
    assert NodeEntry(add, 0) == NodeEntry(add, 0) and var("a") != a


def test_topo_sort_reports_a_cycle_as_its_path():
    a = var("a")
    x = Node(AddProp(), "x", [NodeEntry(a, 0), NodeEntry(a, 0)], {})
    y = Node(AddProp(), "y", [NodeEntry(x, 0), NodeEntry(a, 0)], {})
    x.inputs[1] = NodeEntry(y, 0)
    with pytest.raises(GraphError, match="cycle"):
        topo_sort([NodeEntry(y, 0)])


def test_deep_chain_does_not_hit_the_recursion_limit():
    node = var("x")
    for i in range(5000):
        node = Node(OperatorProperty(), f"n{i}", [NodeEntry(node, 0)], {})
    assert len(topo_sort([NodeEntry(node, 0)])) == 5001


def test_forward_and_backward_propagation_fills_weights_and_aux():
    data, w, b, mean, var_ = var("data"), var("w"), var("b"), var("mean"), var("var")
    fc = Node(
        DenseProp(num_hidden=4), "fc", [NodeEntry(data, 0), NodeEntry(w, 0), NodeEntry(b, 0)], {}
    )
    bn = Node(NormProp(), "bn", [NodeEntry(fc, 0), NodeEntry(mean, 0), NodeEntry(var_, 0)], {})
    shapes = infer_shapes([NodeEntry(bn, 0)], {"data": (8, 3, 5)})
    assert shapes[NodeEntry(w, 0)] == (4, 15)
    assert shapes[NodeEntry(b, 0)] == (4,)
    assert shapes[NodeEntry(mean, 0)] == (4,)
    assert shapes[NodeEntry(bn, 0)] == (8, 4)
    assert len(shapes) == 7  # every entry, variables included
    nodes = topo_sort([NodeEntry(bn, 0)])
    assert input_names(nodes, "aux") == ["mean", "var"]
    assert input_names(nodes, "read_only") == ["data", "w", "b"]


def test_output_shape_flows_backward_through_same_shape_ops():
    r"""
    a   b          c is known: (2, 3)
     \ /
     add --- add2 --- c
    """
    a, b, c = var("a"), var("b"), var("c", __shape__="(2, 3)")
    add = Node(AddProp(), "add", [NodeEntry(a, 0), NodeEntry(b, 0)], {})
    add2 = Node(AddProp(), "add2", [NodeEntry(add, 0), NodeEntry(c, 0)], {})
    shapes = infer_shapes([NodeEntry(add2, 0)], {})
    assert shapes[NodeEntry(a, 0)] == (2, 3)
    assert shapes[NodeEntry(b, 0)] == (2, 3)


def test_conflict_names_node_argument_and_shapes():
    data, w, b = var("data"), var("w"), var("b")
    fc = Node(
        DenseProp(num_hidden=4), "fc1", [NodeEntry(data, 0), NodeEntry(w, 0), NodeEntry(b, 0)], {}
    )
    with pytest.raises(ShapeError) as info:
        infer_shapes([NodeEntry(fc, 0)], {"data": (8, 5), "w": (4, 6)})
    message = str(info.value)
    assert "TestDense 'fc1'" in message and "(4, 6)" in message and "(4, 5)" in message


def test_unknown_shapes_name_what_to_pass_unless_partial():
    data, w, b = var("data"), var("w"), var("b")
    fc = Node(
        DenseProp(num_hidden=4), "fc", [NodeEntry(data, 0), NodeEntry(w, 0), NodeEntry(b, 0)], {}
    )
    with pytest.raises(ShapeError, match="'data'.*data=") as info:
        infer_shapes([NodeEntry(fc, 0)], {})
    assert "'w'" in str(info.value)
    partial = infer_shapes([NodeEntry(fc, 0)], {}, partial=True)
    assert all(value is None for value in partial.values())


def test_infer_types_from_known_and_dtype_attr():
    a, b = var("a", __dtype__="1"), var("b")
    add = Node(AddProp(), "add", [NodeEntry(a, 0), NodeEntry(b, 0)], {})
    types = infer_types([NodeEntry(add, 0)], {})
    assert types[NodeEntry(b, 0)] == np.float64
    assert types[NodeEntry(add, 0)] == np.float64
    assert infer_types([NodeEntry(add, 0)], {"a": np.float16})[NodeEntry(add, 0)] == np.float16
