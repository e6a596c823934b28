"""``mx.rnn`` as MXNet users write it: names, states, weights, fused vs unfused, the RNN op."""

from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path

import numpy as np
import pytest

import mxnb as mx
from mxnb.base import GraphError, NotSupportedError
from mxnb.operator.ops import rnn as rnn_op

DATA = Path(__file__).resolve().parent / "data"
AUTO_NAME = re.compile(r"^_?[a-z_]+\d+$")  # MXNet's NameManager names (_plus3, split0)


def load_script(name: str):
    spec = importlib.util.spec_from_file_location(name, DATA / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_building_the_lm_here_gives_the_graph_mxnet_exported():
    """Same ops, same wiring, same parameters and names (auto-numbered names aside)."""
    ours = json.loads(load_script("make_lstm_lm").build(mx).tojson())["nodes"]
    theirs = json.loads((DATA / "lstm_lm-symbol.json").read_text())["nodes"]
    assert len(ours) == len(theirs)
    for mine, reference in zip(ours, theirs):
        assert mine["op"] == reference["op"]
        assert mine["inputs"] == reference["inputs"]
        assert mine.get("attrs", {}) == reference.get("attrs", {}), reference["name"]
        if not AUTO_NAME.match(reference["name"]):
            assert mine["name"] == reference["name"]


def test_begin_state_names_shapes_and_custom_function():
    cell = mx.rnn.LSTMCell(6, prefix="lstm_")
    states = cell.begin_state()
    assert [state.name for state in states] == ["lstm_begin_state_0", "lstm_begin_state_1"]
    assert cell.state_shape == [(0, 6), (0, 6)]
    fed = cell.begin_state(func=mx.sym.Variable)
    assert [state.name for state in fed] == ["lstm_begin_state_2", "lstm_begin_state_3"]
    outputs, _ = cell.unroll(2, mx.sym.Variable("data"), begin_state=fed, merge_outputs=True)
    shapes = dict(zip(outputs.list_arguments(), outputs.infer_shape(data=(3, 2, 4))[0]))
    assert shapes["lstm_begin_state_2"] == (3, 6)  # the batch comes from the data
    assert json.loads(mx.rnn.LSTMCell(2, prefix="x_", forget_bias=0.25)._iB.tojson())["nodes"][0][
        "attrs"
    ]["__init__"] == json.dumps(["lstmbias", {"forget_bias": 0.25}])


def test_modified_cells_must_be_called_through_the_modifier():
    base = mx.rnn.GRUCell(3, prefix="g_")
    wrapped = mx.rnn.ResidualCell(base)
    with pytest.raises(GraphError, match="modifier"):
        base.begin_state()
    assert len(wrapped.begin_state()) == 1
    with pytest.raises(GraphError, match="unfuse"):
        mx.rnn.ZoneoutCell(mx.rnn.FusedRNNCell(3))
    with pytest.raises(GraphError, match="stepped"):
        mx.rnn.FusedRNNCell(3)(mx.sym.Variable("x"), [])


@pytest.mark.parametrize(
    ("mode", "bidirectional"), [("lstm", True), ("gru", False), ("rnn_relu", True)]
)
def test_fused_equals_unfused_with_unpacked_weights(mode, bidirectional):
    """FusedRNNCell and its unfuse() compute the same, weights converted by unpack/pack."""
    fused_cell = mx.rnn.FusedRNNCell(
        4, num_layers=2, mode=mode, bidirectional=bidirectional, prefix="f_"
    )
    data = mx.sym.Variable("data")
    fused_out, _ = fused_cell.unroll(3, data, layout="NTC", merge_outputs=True)
    stack = fused_cell.unfuse()
    plain_out, _ = stack.unroll(3, data, layout="NTC", merge_outputs=True)
    shapes = {"data": (2, 3, 5)}
    fused_exe = fused_out.simple_bind(mx.cpu(), grad_req="null", **shapes)
    plain_exe = plain_out.simple_bind(mx.cpu(), grad_req="null", **shapes)
    rng = np.random.RandomState(1)
    x = rng.uniform(-1, 1, size=(2, 3, 5))
    packed = rng.uniform(-0.5, 0.5, size=fused_exe.arg_dict["f_parameters"].shape)
    fused_exe.arg_dict["data"][:] = x
    fused_exe.arg_dict["f_parameters"][:] = packed
    per_gate = fused_cell.unpack_weights({"f_parameters": mx.nd.array(packed)})
    per_cell = stack.pack_weights(per_gate)  # the cells' i2h / h2h weights, gates joined
    plain_exe.arg_dict["data"][:] = x
    for name, array in plain_exe.arg_dict.items():
        if name != "data":
            array[:] = per_cell[name]
    fused_exe.forward()
    plain_exe.forward()
    np.testing.assert_allclose(
        fused_exe.outputs[0].asnumpy(), plain_exe.outputs[0].asnumpy(), rtol=1e-5, atol=1e-6
    )
    repacked = fused_cell.pack_weights(stack.unpack_weights(per_cell))["f_parameters"]
    np.testing.assert_allclose(repacked.asnumpy(), packed.astype(np.float32))


def test_rnn_operator_gradient_is_numerically_right():
    from mxnb.testing import check_numeric_gradient

    sym = mx.sym.RNN(
        data=mx.sym.Variable("data"), parameters=mx.sym.Variable("params"),
        state=mx.sym.Variable("h0"), state_cell=mx.sym.Variable("c0"),
        state_size=3, num_layers=2, bidirectional=True, mode="lstm", state_outputs=True,
    )  # fmt: skip
    size = rnn_op.packed_size("lstm", 2, 2, 3, 2)
    rng = np.random.RandomState(0)
    location = {
        "data": rng.uniform(-1, 1, (3, 2, 2)),
        "params": rng.uniform(-0.5, 0.5, (size,)),
        "h0": rng.uniform(-1, 1, (4, 2, 3)),
        "c0": rng.uniform(-1, 1, (4, 2, 3)),
    }
    check_numeric_gradient(sym, location, numeric_eps=1e-4, rtol=1e-3, atol=1e-5)


def test_rnn_operator_shapes_and_refusals():
    sym = mx.sym.RNN(data=mx.sym.Variable("data"), state_size=4, num_layers=1, mode="gru", name="r")
    assert sym.list_arguments() == ["data", "r_parameters", "r_state"]
    args, outs, _ = sym.infer_shape(data=(5, 2, 3))
    assert args == [(5, 2, 3), (rnn_op.packed_size("gru", 1, 3, 4, 1),), (1, 2, 4)]
    assert outs == [(5, 2, 4)]
    # the input size comes back from the packed parameters' length
    args, _, _ = sym.infer_shape_partial(data=(5, 2, 0), r_parameters=(args[1][0],))
    assert args[0] == (5, 2, 3)
    with pytest.raises(NotSupportedError, match="projection_size"):
        mx.sym.RNN(data=mx.sym.Variable("d"), state_size=2, num_layers=1, mode="lstm",
                   projection_size=2)  # fmt: skip


def test_weight_initializer_attributes_are_mxnets():
    """MXNet 1.9.1 writes exactly these ``__init__`` attributes (an initializer reads them)."""
    cell = mx.rnn.FusedRNNCell(4, num_layers=2, mode="gru", prefix="gru_")
    attrs = json.loads(cell._parameter.tojson())["nodes"][0]["attrs"]
    assert attrs["__init__"] == (
        '["fusedrnn", {"init": null, "num_hidden": 4, "num_layers": 2, "mode": "gru", '
        '"bidirectional": false, "forget_bias": 1.0}]'
    )


def test_encode_sentences_as_mxnet():
    """MXNet 1.9.1's answers; with ``unknown_token`` mxnb keeps that token's id (MXNet re-numbers it)."""
    assert mx.rnn.encode_sentences([["a", "b", "c"]], start_label=-1) == (
        [[0, 1, 2]],
        {"\n": -1, "a": 0, "b": 1, "c": 2},
    )
    encoded, vocab = mx.rnn.encode_sentences(
        [["a", "x"]], vocab={"a": 0, "<unk>": 1}, unknown_token="<unk>"
    )
    assert encoded == [[0, 1]] and vocab == {"a": 0, "<unk>": 1}
    with pytest.raises(mx.MXNBError, match="'x' is not in the vocabulary"):
        mx.rnn.encode_sentences([["x"]], vocab={"a": 0})


def test_rnn_dropout_between_layers_is_differentiated_with_the_masks_forward_drew():
    """p > 0: masks are drawn in training (and kept for backward), never in inference."""
    sym = mx.sym.RNN(
        data=mx.sym.Variable("data"), state_size=3, num_layers=2, mode="gru", p=0.5, name="r"
    )
    assert sym.list_outputs() == ["r_output"]  # the mask is hidden
    shapes = {"data": (4, 2, 3)}
    exe = sym.simple_bind(mx.cpu(), type_dict={"data": np.float64}, **shapes)
    rng = np.random.RandomState(0)
    for array in exe.arg_dict.values():
        array[:] = rng.uniform(-1, 1, size=array.shape)
    projection = rng.uniform(-1, 1, size=(4, 2, 3))

    def objective() -> float:
        mx.random.seed(11)
        exe.forward(is_train=True)
        return float((exe.outputs[0].asnumpy() * projection).sum())

    objective()
    exe.backward(mx.nd.array(projection, dtype=np.float64))
    for name in ("data", "r_parameters"):
        analytic = exe.grad_dict[name].asnumpy().ravel()
        values = exe.arg_dict[name].asnumpy()
        flat = values.ravel()
        for index in rng.choice(flat.size, size=6, replace=False):
            original = flat[index]
            flat[index] = original + 1e-6
            exe.arg_dict[name][:] = values
            up = objective()
            flat[index] = original - 1e-6
            exe.arg_dict[name][:] = values
            down = objective()
            flat[index] = original
            exe.arg_dict[name][:] = values
            assert abs((up - down) / 2e-6 - analytic[index]) < 1e-5 * max(1.0, abs(analytic[index]))
    exe.forward(is_train=False)
    inference = exe.outputs[0].asnumpy()
    exe.forward(is_train=True)
    assert not np.allclose(exe.outputs[0].asnumpy(), inference)  # dropout acted in training
    exe.forward(is_train=False)
    np.testing.assert_array_equal(exe.outputs[0].asnumpy(), inference)
