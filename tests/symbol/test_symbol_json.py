"""Specification of symbol JSON: MXNet 1.x's format, written as MXNet writes it, read as MXNet reads it.

Fixtures in ``data/`` (written for these tests in the formats of real files):
    mlp-symbol.json                 ``Symbol.tojson()`` of MXNet 1.9.1's classic MLP
    gluon_resnet_block-symbol.json  a Gluon ``export`` (1.4.1): parameters as strings,
                                    ``__init__`` / ``__shape__`` attrs, ``_copy`` and ``elemwise_add``
    legacy_000800-symbol.json       an MXNet 0.8 file: ``param``/``attr``, two-element inputs,
                                    bare hidden keys, BatchNorm without its aux states
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import mxnb as mx
from mxnb.base import FormatError, GraphError

DATA = Path(__file__).parent / "data"

EXPECTED_SMALL = """{
  "nodes": [
    {
      "op": "null", 
      "name": "data", 
      "inputs": []
    }, 
    {
      "op": "null", 
      "name": "fc_weight", 
      "attrs": {"num_hidden": "2"}, 
      "inputs": []
    }, 
    {
      "op": "null", 
      "name": "fc_bias", 
      "attrs": {"num_hidden": "2"}, 
      "inputs": []
    }, 
    {
      "op": "TestDense", 
      "name": "fc", 
      "attrs": {"num_hidden": "2"}, 
      "inputs": [[0, 0, 0], [1, 0, 0], [2, 0, 0]]
    }, 
    {
      "op": "TestAct", 
      "name": "act", 
      "attrs": {
        "__ctx_group__": "dev1", 
        "act_type": "relu"
      }, 
      "inputs": [[3, 0, 0]]
    }
  ], 
  "arg_nodes": [0, 1, 2], 
  "node_row_ptr": [0, 1, 2, 3, 4, 5], 
  "heads": [[4, 0, 0]], 
  "attrs": {"mxnet_version": ["int", 10901]}
}"""


def small_net():
    fc = mx.sym.TestDense(mx.sym.Variable("data"), num_hidden=2, name="fc")
    return mx.sym.TestAct(fc, act_type="relu", name="act", attr={"ctx_group": "dev1"})


def test_tojson_writes_mxnet_layout_exactly():
    """dmlc's JSONWriter layout: ", " + newline, sorted attrs, one-entry dicts inline."""
    assert small_net().tojson() == EXPECTED_SMALL


def test_round_trip_is_identical_and_keeps_everything():
    net = small_net()
    text = net.tojson()
    loaded = mx.sym.load_json(text)
    assert loaded.tojson() == text
    assert loaded.list_arguments() == net.list_arguments()
    assert loaded.attr_dict() == net.attr_dict()
    assert loaded.infer_shape(data=(3, 5)) == net.infer_shape(data=(3, 5))


def test_multi_output_heads_aux_and_long_lists_round_trip():
    data = mx.sym.Variable("data")
    parts = [mx.sym.TestDense(data, num_hidden=2, name=f"fc{i}") for i in range(11)]
    cat = mx.sym.TestConcat(*parts, dim=1, name="cat")
    bn = mx.sym.TestNorm(cat, name="bn")
    hidden_mean = mx.sym.Symbol._from_outputs([mx.sym.graph.NodeEntry(bn._outputs[0].node, 1)])
    group = mx.sym.Group([bn, hidden_mean, data])
    text = group.tojson()
    assert '"inputs": [\n        [' in text  # more than ten entries: one per line, as dmlc does
    loaded = mx.sym.load_json(text)
    assert loaded.tojson() == text
    assert loaded.list_outputs() == ["bn_output", "bn_mean", "data"]
    assert loaded.list_auxiliary_states() == ["bn_moving_mean", "bn_moving_var"]
    doc = json.loads(text)
    assert doc["node_row_ptr"][-1] == sum(
        3 if node["op"] == "TestNorm" else 1 for node in doc["nodes"]
    )


def test_strings_are_escaped_and_parameters_kept_as_written():
    x = mx.sym.Variable("x", init='["zero", {}]')
    net = mx.sym.TestNorm(x, eps="1e-05", name="bn")
    text = net.tojson()
    assert r'"__init__": "[\"zero\", {}]"' in text
    assert '"eps": "1e-05"' in text  # not re-formatted to 1e-05 -> 0.00001
    assert mx.sym.load_json(text).attr_dict()["x"]["__init__"] == '["zero", {}]'


def test_save_and_load_a_file(tmp_path):
    net = small_net()
    path = tmp_path / "net-symbol.json"
    net.save(str(path))
    assert mx.sym.load(str(path)).tojson() == net.tojson()


def test_unknown_operators_are_all_listed_in_one_error():
    doc = json.loads(small_net().tojson())
    doc["nodes"][3]["op"] = "FancyDense"
    doc["nodes"][4]["op"] = "Swish"
    with pytest.raises(GraphError) as info:
        mx.sym.load_json(json.dumps(doc))
    message = str(info.value)
    assert "2 operators" in message
    assert "FancyDense (node fc)" in message and "Swish (node act)" in message


def test_malformed_files_are_format_errors():
    with pytest.raises(FormatError, match="not a symbol JSON"):
        mx.sym.load_json("{nodes: ")
    with pytest.raises(FormatError, match="'nodes' and 'heads'"):
        mx.sym.load_json('{"arg:data": 1}')
    doc = json.loads(small_net().tojson())
    doc["nodes"][3]["inputs"] = [[0, 0, 0]]
    with pytest.raises(GraphError, match="TestDense 'fc'.*1 inputs but takes 3"):
        mx.sym.load_json(json.dumps(doc))
    doc = json.loads(small_net().tojson())
    doc["heads"] = [[9, 0, 0]]
    with pytest.raises(FormatError, match="node 9"):
        mx.sym.load_json(json.dumps(doc))


def test_mxnet_mlp_file_loads_and_writes_back_byte_for_byte():
    text = (DATA / "mlp-symbol.json").read_text()
    net = mx.sym.load_json(text)
    assert net.tojson() == text
    assert net.list_arguments() == [
        "data",
        "fc1_weight",
        "fc1_bias",
        "fc2_weight",
        "fc2_bias",
        "fc3_weight",
        "fc3_bias",
        "softmax_label",
    ]
    arg_shapes, out_shapes, _ = net.infer_shape(data=(32, 784))
    assert arg_shapes[1] == (128, 784) and arg_shapes[-1] == (32,)
    assert out_shapes == [(32, 10)]


def test_gluon_export_loads_infers_and_round_trips():
    net = mx.sym.load(str(DATA / "gluon_resnet_block-symbol.json"))
    assert net.list_auxiliary_states()[:2] == [
        "resnetv10_batchnorm0_running_mean",
        "resnetv10_batchnorm0_running_var",
    ]
    attrs = net.attr_dict()
    assert attrs["resnetv10_batchnorm0_gamma"]["__init__"] == "ones"
    assert attrs["resnetv10_batchnorm0_fwd"]["eps"] == "1e-05"
    ops = [node["op"] for node in json.loads(net.tojson())["nodes"]]
    assert "_copy" in ops and "elemwise_add" in ops
    # "__shape__": "(8, 0, 3, 3)" — 0 means unknown: inference fills in the input channels
    arg_shapes, out_shapes, aux_shapes = net.infer_shape(data=(2, 3, 16, 16))
    shapes = dict(zip(net.list_arguments(), arg_shapes))
    assert shapes["resnetv10_conv0_weight"] == (8, 3, 3, 3)
    assert shapes["resnetv10_dense0_weight"] == (10, 8)
    assert out_shapes == [(2, 10)] and aux_shapes == [(8,)] * 6
    text = net.tojson()
    assert mx.sym.load_json(text).tojson() == text


def test_mxnet_0_8_file_is_upgraded_as_mxnet_does():
    net = mx.sym.load(str(DATA / "legacy_000800-symbol.json"))
    assert net.list_auxiliary_states() == ["batchnorm0_moving_mean", "batchnorm0_moving_var"]
    attrs = net.attr_dict()
    assert attrs["data"] == {  # MXNet 1.9.1 lists hidden keys under both names
        "__ctx_group__": "stage1",
        "ctx_group": "stage1",
        "__lr_mult__": "0.2",
        "lr_mult": "0.2",
    }
    assert attrs["fc1"]["__wd_mult__"] == "0.3"
    assert attrs["fc1_weight"]["__lr_mult__"] == "1.2"  # the op's weight_lr_mult, moved
    assert attrs["batchnorm0_moving_var"]["__init__"] == '["one", {}]'
    assert attrs["batchnorm0_moving_mean"]["__ctx_group__"] == "stage2"
    _, out_shapes, aux_shapes = net.infer_shape(data=(4, 20))
    assert out_shapes == [(4, 16)] and aux_shapes == [(16,), (16,)]
    text = net.tojson()
    assert mx.sym.load_json(text).tojson() == text
