"""``mx.sym.load`` / ``load_json`` against hostile and careless files.

Specification: a file that is not a well-formed symbol file raises
:class:`FormatError` naming the field (``nodes[2].inputs[0]``, ``heads[0]``),
never ``AttributeError``, ``KeyError``, ``UnicodeDecodeError`` or
``RecursionError``; and a graph that loads never fails later in
``infer_shape`` because of something the file said (an output index past a
node's outputs, a malformed ``__shape__``).  ``mx.sym.load`` adds the file name.
"""

from __future__ import annotations

import copy
import json

import pytest

import mxnb as mx
from mxnb.base import FormatError, GraphError, ParamError


def _valid() -> dict:
    data = mx.sym.Variable("data")
    fc = mx.sym.FullyConnected(data, num_hidden=4, name="fc")
    net = mx.sym.Activation(fc, act_type="relu", name="relu")
    return json.loads(net.tojson())


def _mutated(change) -> str:
    document = copy.deepcopy(_valid())
    change(document)
    return json.dumps(document)


def _set(path, value):
    def change(document):
        target = document
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = value

    return change


@pytest.mark.parametrize(
    ("label", "change", "field"),
    [
        ("node not an object", _set(["nodes", 1], "fc"), r"nodes\[1\]: a node must be an object"),
        ("op not a string", _set(["nodes", 3, "op"], 7), r"nodes\[3\]\.op"),
        ("name not a string", _set(["nodes", 0, "name"], None), r"nodes\[0\]\.name"),
        ("attrs a list", _set(["nodes", 3, "attrs"], ["num_hidden"]), r"nodes\[3\]\.attrs"),
        ("inputs not a list", _set(["nodes", 3, "inputs"], 0), r"nodes\[3\]\.inputs"),
        (
            "negative input node",
            _set(["nodes", 3, "inputs", 0], [-1, 0, 0]),
            r"nodes\[3\]\.inputs\[0\]",
        ),
        (
            "negative output index",
            _set(["nodes", 3, "inputs", 0], [0, -1, 0]),
            r"nodes\[3\]\.inputs\[0\]",
        ),
        ("float index", _set(["nodes", 3, "inputs", 0], [0, 0.5, 0]), r"nodes\[3\]\.inputs\[0\]"),
        ("forward reference", _set(["nodes", 3, "inputs", 0], [4, 0, 0]), "come before it"),
        ("input past outputs", _set(["nodes", 4, "inputs", 0], [3, 5, 0]), "has no output 5"),
        ("head past outputs", _set(["heads", 0], [4, 1, 0]), r"heads\[0\].*has no output 1"),
        ("head past nodes", _set(["heads", 0], [99, 0, 0]), r"heads\[0\]"),
        ("heads empty", _set(["heads"], []), "'heads'"),
        ("nodes not a list", _set(["nodes"], {"0": {}}), "'nodes'"),
        ("bad version", _set(["attrs", "mxnet_version"], ["int", "x"]), "mxnet_version"),
        ("bad shape attr", _set(["nodes", 0, "attrs"], {"__shape__": "(a, b)"}), "__shape__"),
        ("bad dtype attr", _set(["nodes", 0, "attrs"], {"__dtype__": "99"}), "__dtype__"),
        ("variable with inputs", _set(["nodes", 0, "inputs"], [[0, 0, 0]]), "come before it"),
        (
            "unsupported dtype attr",
            _set(["nodes", 0, "attrs"], {"__dtype__": "complex128"}),
            r"nodes\[0\].*__dtype__ 'complex128'",
        ),
        (
            "two variables of one name",
            _set(["nodes", 1, "name"], "data"),
            r"nodes\[1\].*'data' is already the name of nodes\[0\]",
        ),
    ],
)
def test_malformed_fields_are_format_errors_naming_the_field(label, change, field):
    with pytest.raises(FormatError, match=field):
        mx.sym.load_json(_mutated(change))


def test_unknown_operators_and_bad_params_are_format_errors_of_their_kind():
    text = _mutated(_set(["nodes", 3, "op"], "NoSuchOp"))
    with pytest.raises(FormatError, match="NoSuchOp") as info:
        mx.sym.load_json(text)
    assert isinstance(info.value, GraphError)  # existing callers catch GraphError
    text = _mutated(_set(["nodes", 3, "attrs"], {"num_hidden": "-3"}))
    with pytest.raises(FormatError, match=r"nodes\[3\].*num_hidden") as info:
        mx.sym.load_json(text)
    assert isinstance(info.value, ParamError)


def test_deep_nesting_and_binary_input_are_format_errors():
    with pytest.raises(FormatError, match="nested too deeply"):
        mx.sym.load_json("[" * 100_000 + "]" * 100_000)
    with pytest.raises(FormatError, match="not UTF-8"):
        mx.sym.load_json(b"\x89PNG\r\n\x1a\n\xff\xff")


def test_load_names_the_file(tmp_path):
    path = tmp_path / "model-symbol.json"
    path.write_bytes(b"\x00\x01\x02\xff binary")
    with pytest.raises(FormatError, match="model-symbol.json"):
        mx.sym.load(str(path))


def test_a_valid_file_still_loads_and_infers():
    net = mx.sym.load_json(json.dumps(_valid()))
    _, out_shapes, _ = net.infer_shape(data=(2, 3))
    assert out_shapes == [(2, 4)]


def test_a_passed_shape_must_fit_a_declared_partial_shape():
    """A file's partial ``__shape__`` (0: unknown) is checked against the shape passed (was: ignored)."""
    document = _valid()
    document["nodes"][0]["attrs"] = {"__shape__": "(0, 5)"}
    net = mx.sym.load_json(json.dumps(document))
    assert net.infer_shape(data=(4, 5))[0][0] == (4, 5)
    with pytest.raises(
        mx.base.ShapeError, match=r"partial shape \(\?, 5\) but \(4, 3\) was passed"
    ):
        net.infer_shape(data=(4, 3))
