"""Symbol files written by MXNet 1.9.1 itself load, infer and write back as mxnb's own graphs.

The fixtures in ``data/mxnet191_*`` were written by real MXNet 1.9.1 from the zoo networks
(see ``data/README.md``), so these tests check both halves of the file format: MXNet reads
what mxnb writes (it produced these files from ours) and mxnb reads what MXNet writes.
"""

from __future__ import annotations

import json
import pathlib

import pytest

import mxnb as mx
from mxnb.executor import zoo

DATA = pathlib.Path(__file__).parent / "data"
CASES = {"lenet": "lenet", "resnet18": "resnet18", "inception_bn": "inception_bn"}


def _structure(text: str) -> tuple:
    """Nodes (op, name, params, inputs), arg_nodes and heads: what defines the graph."""
    doc = json.loads(text)
    nodes = [
        (node["op"], node["name"], node.get("attrs", {}), node["inputs"]) for node in doc["nodes"]
    ]
    return nodes, doc["arg_nodes"], doc["heads"]


@pytest.mark.parametrize("name", sorted(CASES))
def test_mxnet_written_file_is_the_same_graph_as_ours(name):
    text = (DATA / f"mxnet191_{name}-symbol.json").read_text()
    loaded = mx.sym.load_json(text)
    ours = zoo.build(CASES[name])
    assert _structure(loaded.tojson()) == _structure(text)
    assert _structure(ours.tojson()) == _structure(text)
    assert loaded.list_arguments() == ours.list_arguments()
    assert loaded.list_auxiliary_states() == ours.list_auxiliary_states()


@pytest.mark.parametrize("name", sorted(CASES))
def test_mxnet_written_file_infers_the_same_shapes(name):
    shapes = zoo.input_shapes(CASES[name], 2)
    loaded = mx.sym.load(str(DATA / f"mxnet191_{name}-symbol.json"))
    assert loaded.infer_shape(**shapes) == zoo.build(CASES[name]).infer_shape(**shapes)


def test_mxnet_written_lenet_runs_forward_like_the_zoo_network():
    shapes = zoo.input_shapes("lenet", 2)
    loaded = mx.sym.load(str(DATA / "mxnet191_lenet-symbol.json"))
    ours = zoo.build("lenet")
    exe_loaded = loaded.simple_bind(mx.cpu(), grad_req="null", **shapes)
    exe_ours = ours.simple_bind(mx.cpu(), grad_req="null", **shapes)
    for name, array in exe_ours.arg_dict.items():
        array[:] = mx.nd.random.uniform(-0.1, 0.1, shape=array.shape)
        exe_loaded.arg_dict[name][:] = array
    out_loaded = exe_loaded.forward()[0].asnumpy()
    out_ours = exe_ours.forward()[0].asnumpy()
    assert (out_loaded == out_ours).all()
