"""Specification of symbol construction: naming, implicit variables, composition, groups, attrs.

The operators used here are the small properties of ``conftest.py`` (TestDense,
TestNorm, TestAct, TestConcat) plus the elementwise ops of the library.
"""

from __future__ import annotations

import copy
import pickle

import numpy as np
import pytest

import mxnb as mx
from mxnb.base import GraphError, NotSupportedError, ParamError


def test_variable_records_shape_dtype_init_and_hidden_attrs():
    data = mx.sym.Variable(
        "data",
        shape=(32, 784),
        dtype="float16",
        lr_mult=0.5,
        wd_mult=0,
        init="zeros",
        __layout__="NC",
    )
    assert data.name == "data"
    assert data.list_arguments() == ["data"] and data.list_outputs() == ["data"]
    assert data.attr("__shape__") == "(32, 784)"
    assert data.attr("__dtype__") == "2"  # MXNet's type flag of float16
    assert data.attr("lr_mult") == "0.5"  # hidden keys are found by their short name
    assert data.list_attr() == {  # MXNet lists hidden keys under both names
        "__shape__": "(32, 784)",
        "__dtype__": "2",
        "__lr_mult__": "0.5",
        "lr_mult": "0.5",
        "__wd_mult__": "0",
        "wd_mult": "0",
        "__init__": "zeros",
        "__layout__": "NC",
    }
    assert mx.sym.var is mx.sym.Variable
    with pytest.raises(ValueError, match="double underscores"):
        mx.sym.Variable("x", layout="NC")


def test_operator_creates_implicit_variables_named_after_the_node():
    data = mx.sym.Variable("data")
    fc = mx.sym.TestDense(data, num_hidden=10, name="fc1")
    assert fc.list_arguments() == ["data", "fc1_weight", "fc1_bias"]
    assert fc.list_outputs() == ["fc1_output"]
    assert fc.name == "fc1"
    assert fc.attr("num_hidden") == "10"
    # nnvm copies the node's attributes onto the variables it creates
    assert fc.attr_dict()["fc1_weight"] == {"num_hidden": "10"}
    no_bias = mx.sym.TestDense(data, num_hidden=3, no_bias=True, name="fc2")
    assert no_bias.list_arguments() == ["data", "fc2_weight"]


def test_aux_states_are_variables_in_aux_slots():
    bn = mx.sym.TestNorm(mx.sym.Variable("x"), name="bn")
    assert bn.list_arguments() == ["x", "bn_gamma", "bn_beta"]
    assert bn.list_auxiliary_states() == ["bn_moving_mean", "bn_moving_var"]
    assert bn.list_inputs() == ["x", "bn_gamma", "bn_beta", "bn_moving_mean", "bn_moving_var"]
    assert bn.list_outputs() == ["bn_output"]  # hidden outputs are not visible
    internals = bn.get_internals()  # hidden outputs stay hidden, as in nnvm's GetInternals
    assert internals.list_outputs()[-2:] == ["bn_moving_var", "bn_output"]


def test_keyword_inputs_and_explicit_aux():
    data = mx.sym.Variable("data")
    weight = mx.sym.Variable("shared_weight")
    fc = mx.sym.TestDense(data=data, weight=weight, num_hidden=4, name="fc")
    assert fc.list_arguments() == ["data", "shared_weight", "fc_bias"]
    mean = mx.sym.Variable("running_mean")
    bn = mx.sym.TestNorm(fc, moving_mean=mean, name="bn")
    assert bn.list_auxiliary_states() == ["running_mean", "bn_moving_var"]


def test_automatic_names_count_per_lowercased_operator():
    data = mx.sym.Variable("data")
    first = mx.sym.TestDense(data, num_hidden=2)
    second = mx.sym.TestDense(first, num_hidden=2)
    act = mx.sym.TestAct(second, act_type="relu")
    assert [first.name, second.name, act.name] == ["testdense0", "testdense1", "testact0"]
    assert second.list_arguments()[-1] == "testdense1_bias"
    with mx.sym.NameManager():
        assert mx.sym.TestAct(data, act_type="tanh").name == "testact0"
    with mx.sym.Prefix("block1_"):
        named = mx.sym.TestDense(data, num_hidden=2, name="fc")
        auto = mx.sym.TestAct(data, act_type="tanh")
    assert named.name == "block1_fc" and named.list_arguments()[1] == "block1_fc_weight"
    assert auto.name == "block1_testact0"


def test_variable_arity_operator_counts_its_inputs():
    a, b, c = (mx.sym.Variable(n) for n in "abc")
    cat = mx.sym.TestConcat(a, b, c, dim=0, name="cat")
    assert cat.list_arguments() == ["a", "b", "c"]
    assert cat.attr("num_args") == "3"
    total = mx.sym.add_n(a, b, name="sum")
    assert total.list_arguments() == ["a", "b"]


def test_bad_inputs_and_params_say_what_to_do():
    data = mx.sym.Variable("data")
    with pytest.raises(GraphError, match="'bogus' is not an input.*data, weight, bias"):
        mx.sym.TestDense(data, num_hidden=2, bogus=data, name="fc")
    with pytest.raises(ParamError, match="num_hidden"):
        mx.sym.TestDense(data, name="fc")
    with pytest.raises(ParamError, match="act_type"):
        mx.sym.TestAct(data, act_type="swish")
    with pytest.raises(GraphError, match="positional inputs"):
        mx.sym.TestAct(data, data, act_type="relu")
    with pytest.raises(TypeError, match="by keyword"):
        mx.sym.TestDense(data, 10, num_hidden=2)
    group = mx.sym.Group([data, data])
    with pytest.raises(GraphError, match="2 outputs"):
        mx.sym.TestAct(group, act_type="relu")
    with pytest.raises(AttributeError):
        mx.sym.NoSuchOperator  # noqa: B018


def test_group_indexing_and_iteration():
    data = mx.sym.Variable("data")
    fc1 = mx.sym.TestDense(data, num_hidden=2, name="fc1")
    fc2 = mx.sym.TestDense(data, num_hidden=3, name="fc2")
    group = mx.sym.Group([fc1, fc2])
    assert group.list_outputs() == ["fc1_output", "fc2_output"]
    assert group.name is None
    assert repr(group) == "<Symbol group [fc1_output, fc2_output]>"
    assert repr(fc1) == "<Symbol fc1>"
    assert group[1].name == "fc2" and group["fc1_output"].name == "fc1"
    assert [s.name for s in group] == ["fc1", "fc2"]
    assert len(group) == 2 and group[0:1].list_outputs() == ["fc1_output"]
    assert group.list_arguments() == ["data", "fc1_weight", "fc1_bias", "fc2_weight", "fc2_bias"]
    with pytest.raises(ValueError, match="fc1_output, fc2_output"):
        group["fc3_output"]


def test_internals_and_children():
    data = mx.sym.Variable("data")
    net = mx.sym.TestAct(
        mx.sym.TestDense(data, num_hidden=2, name="fc1"), act_type="relu", name="relu1"
    )
    internals = net.get_internals()
    assert internals.list_outputs() == [
        "data",
        "fc1_weight",
        "fc1_bias",
        "fc1_output",
        "relu1_output",
    ]
    fc1 = internals["fc1_output"]
    assert fc1.list_arguments() == ["data", "fc1_weight", "fc1_bias"]
    assert net.get_children().list_outputs() == ["fc1_output"]
    assert fc1.get_children().list_outputs() == ["data", "fc1_weight", "fc1_bias"]
    assert data.get_children() is None


def test_composition_replaces_variables_on_a_copy():
    r"""
    net:    data -> fc(4) -> act          head: data2 -> fc(3)
    net(data=head):   data2 -> fc(3) -> fc(4) -> act
    """
    data = mx.sym.Variable("data")
    net = mx.sym.TestAct(mx.sym.TestDense(data, num_hidden=4, name="fc"), act_type="relu")
    head = mx.sym.TestDense(mx.sym.Variable("data2"), num_hidden=3, name="head")
    composed = net(data=head)
    assert composed.list_arguments() == [
        "data2",
        "head_weight",
        "head_bias",
        "fc_weight",
        "fc_bias",
    ]
    assert net.list_arguments() == ["data", "fc_weight", "fc_bias"]  # the original is unchanged
    positional = net(head)
    assert positional.list_arguments() == composed.list_arguments()
    assert composed.infer_shape(data2=(5, 7))[1] == [(5, 4)]
    with pytest.raises(GraphError, match="'nope' is not an input"):
        net(nope=head)


def test_copy_is_deep_and_pickle_round_trips():
    data = mx.sym.Variable("data")
    net = mx.sym.TestDense(data, num_hidden=4, name="fc")
    clone = copy.copy(net)
    clone._set_attr(name="renamed")
    assert net.name == "fc" and clone.name == "renamed"
    deep = copy.deepcopy(net)
    assert deep.tojson() == net.tojson()
    restored = pickle.loads(pickle.dumps(net))
    assert restored.tojson() == net.tojson()


def test_set_attr_attr_dict_and_attr_scope():
    data = mx.sym.Variable("data")
    with mx.sym.AttrScope(ctx_group="dev1", lr_mult="0.1"):
        fc = mx.sym.TestDense(data, num_hidden=4, name="fc", attr={"mood": "happy"})
    assert fc.attr("ctx_group") == "dev1" and fc.attr("__lr_mult__") == "0.1"
    assert fc.attr("mood") == "happy"
    assert fc.attr_dict()["fc_weight"]["__ctx_group__"] == "dev1"  # inherited by implicit vars
    assert "__ctx_group__" not in data.list_attr()  # created outside the scope
    fc._set_attr(num_hidden="6", wd_mult="0")
    assert fc.attr("num_hidden") == "6" and fc.attr("__wd_mult__") == "0"
    assert fc.infer_shape(data=(2, 3))[1] == [(2, 6)]
    with pytest.raises(ValueError, match="string"):
        fc._set_attr(foo=1)
    with pytest.raises(NotSupportedError):
        fc.list_attr(recursive=True)


def test_arithmetic_uses_registered_ops_named_like_mxnet():
    a = mx.sym.Variable("a")
    b = mx.sym.Variable("b")
    expr = (a + b) * 2 - a / b
    internals = expr.get_internals().list_outputs()
    assert internals == [
        "a",
        "b",
        "_plus0_output",
        "_mulscalar0_output",
        "_div0_output",
        "_minus0_output",
    ]
    ops = {node["name"]: node["op"] for node in __import__("json").loads(expr.tojson())["nodes"]}
    assert ops["_plus0"] == "elemwise_add"
    assert ops["_mulscalar0"] == "_mul_scalar"
    assert (1 - a).get_internals().list_outputs()[-1] == "_rminusscalar0_output"
    assert (-a).attr("scalar") == "-1.0"
    assert (a**2).attr("scalar") == "2.0" and (2**a).name == "_rpowerscalar0"
    assert (a > 0).name == "_greater_scalar0"
    assert (a + b).infer_shape(a=(2, 3))[0] == [(2, 3), (2, 3)]
    assert hash(a) != hash(b)  # == builds a symbol, hashing stays by identity


def test_zeros_ones_full_arange_nodes():
    """Creation functions make one node of the ``_zeros``/``_ones``/``_full``/``_arange`` op."""
    factories = (
        (lambda: mx.sym.zeros((2, 3)), "_zeros"),
        (lambda: mx.sym.ones((2, 3), dtype="float64"), "_ones"),
        (lambda: mx.sym.full((2, 3), 7), "_full"),
        (lambda: mx.sym.arange(0, 6), "_arange"),
    )
    for factory, op in factories:
        if mx.operator.registry.find(op) is None:  # until the op library provides it
            with pytest.raises(GraphError, match=op):
                factory()
            continue
        symbol = factory()
        assert symbol.list_arguments() == []
        assert symbol.name.startswith(op)


def test_generated_functions_have_docs_and_dir_lists_ops():
    assert "num_hidden" in mx.sym.TestDense.__doc__
    assert "TestDense" in dir(mx.sym) and "Variable" in dir(mx.sym)
    assert "reshape" in dir(mx.sym.Variable("x")) or mx.operator.registry.find("reshape") is None


def test_debug_str_lists_nodes():
    net = mx.sym.TestDense(mx.sym.Variable("data"), num_hidden=2, name="fc")
    text = net.debug_str()
    assert "Variable:data" in text and "Op:TestDense, Name=fc" in text and "num_hidden=2" in text


def test_custom_operator_symbol_round_trips_through_json():
    from mxnb import operator as op

    class Scale(op.CustomOp):
        def forward(self, is_train, req, in_data, out_data, aux):
            self.assign(out_data[0], req[0], in_data[0] * float(self.factor))

    @op.register("symbol_test_scale")
    class ScaleProp(op.CustomOpProp):
        def __init__(self, factor="2"):
            super().__init__(need_top_grad=True)
            self.factor = factor

        def infer_shape(self, in_shape):
            return in_shape, [in_shape[0]], []

        def create_operator(self, ctx, shapes, dtypes):
            scale = Scale()
            scale.factor = self.factor
            return scale

    x = mx.sym.Variable("x")
    net = mx.sym.Custom(x, op_type="symbol_test_scale", factor=3, name="scale")
    assert net.list_arguments() == ["x"] and net.infer_shape(x=(2,))[1] == [(2,)]
    text = net.tojson()
    assert '"op": "Custom"' in text and '"factor": "3"' in text
    loaded = mx.sym.load_json(text)
    assert loaded.tojson() == text
    assert loaded.eval(x=mx.nd.array([1.0, 2.0]))[0].asnumpy().tolist() == [3.0, 6.0]


def test_real_operator_errors_name_the_node():
    data = mx.sym.Variable("data")
    net = mx.sym.FullyConnected(data, num_hidden=10, name="fc1")
    with pytest.raises(mx.base.ShapeError, match="fc1"):
        net.infer_shape(data=(32, 100), fc1_weight=(10, 784))
    with pytest.raises(ParamError, match="Convolution 'conv'.*kernel"):
        mx.sym.Convolution(data, num_filter=3, name="conv")


def test_fluent_methods_apply_registered_ops_to_the_symbol():
    x = mx.sym.Variable("x")
    assert x.reshape((3, -1)).infer_shape(x=(6, 4))[1] == [(3, 8)]
    assert x.reshape(shape=(2, 12)).infer_shape(x=(6, 4))[1] == [(2, 12)]
    assert x.sum(axis=1).infer_shape(x=(6, 4))[1] == [(6,)]
    halves = x.split(num_outputs=2, axis=1)
    assert halves.name == "split0" and halves.infer_shape(x=(6, 4))[1] == [(6, 2), (6, 2)]
    assert x.astype("float16").infer_type(x="float32")[1] == [np.float16]
    with pytest.raises(AttributeError):
        x.no_such_method  # noqa: B018


def test_random_nodes_have_no_inputs_and_a_shape():
    noise = mx.sym.random.uniform(-1, 1, shape=(2, 3))
    assert noise.name == "_random_uniform0" and noise.list_arguments() == []
    assert (noise + mx.sym.random.normal(shape=(2, 3))).infer_shape()[1] == [(2, 3)]
    with pytest.raises(ParamError, match="all numbers or all Symbols"):
        mx.sym.random.uniform(mx.sym.Variable("low"), 1, shape=(2,))
    per_element = mx.sym.random.uniform(mx.sym.Variable("low"), mx.sym.Variable("high"), shape=(2,))
    assert per_element.infer_shape(low=(3,), high=(3,))[1] == [(3, 2)]  # MXNet's _sample_uniform
