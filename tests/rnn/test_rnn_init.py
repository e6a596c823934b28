"""The FusedRNN initializer (named by mx.rnn.FusedRNNCell's parameters), against MXNet 1.9.1."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest

import mxnb as mx

DATA = Path(__file__).resolve().parent / "data"
_spec = importlib.util.spec_from_file_location("make_fused_init", DATA / "make_fused_init.py")
ref = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(ref)


@pytest.mark.parametrize("case", ref.CASES, ids=lambda case: ref.case_name(*case))
def test_fused_rnn_initializer_equals_mxnet(case):
    mode, layers, bidirectional, forget_bias = case
    name = ref.case_name(*case)
    shape = ref.size(mx, mode, layers, bidirectional)
    with np.load(DATA / "fused_init.npz") as expected:
        for key, inner in (("global", None), ("one", mx.init.One())):
            init = mx.init.FusedRNN(inner, 3, layers, mode, bidirectional, forget_bias)
            arr = mx.nd.zeros(shape)
            desc = mx.init.InitDesc("f_parameters", {"__init__": init.dumps()})
            mx.init.Constant(0.5)(
                desc, arr
            )  # the global initializer, as Module.init_params calls it
            np.testing.assert_array_equal(arr.asnumpy(), expected[f"{key}:{name}"], err_msg=key)


def test_a_module_over_a_fused_cell_initializes_and_trains():
    cell = mx.rnn.FusedRNNCell(4, num_layers=1, mode="lstm", prefix="f_", forget_bias=3.0)
    outputs, _ = cell.unroll(3, mx.sym.Variable("data"), layout="NTC", merge_outputs=True)
    loss = mx.sym.MakeLoss(mx.sym.sum(outputs * outputs), name="loss")
    module = mx.mod.Module(loss, data_names=("data",), label_names=())
    module.bind([("data", (2, 3, 5))])
    module.init_params(mx.init.Xavier())
    packed = module.get_params()[0]["f_parameters"]
    parts = mx.rnn.FusedRNNCell(4, 1, "lstm", prefix="").unpack_weights({"parameters": packed})
    assert (parts["l0_i2h_f_bias"].asnumpy() == 3.0).all()
    assert (parts["l0_h2h_i_bias"].asnumpy() == 0.0).all()
    assert np.abs(parts["l0_i2h_i_weight"].asnumpy()).max() > 0  # Xavier, through the name rules
    before = packed.asnumpy()
    module.init_optimizer(optimizer="sgd", optimizer_params={"learning_rate": 0.1})
    batch = mx.io.DataBatch([mx.nd.ones((2, 3, 5))], [])
    module.forward_backward(batch)
    module.update()
    assert not np.array_equal(module.get_params()[0]["f_parameters"].asnumpy(), before)


def test_fused_rnn_without_any_initializer_says_what_to_give():
    init = mx.init.FusedRNN(None, 3, 1, "gru")
    with pytest.raises(mx.initializer.InitError, match="give FusedRNN an init"):
        init._init_weight(mx.init.InitDesc("p"), mx.nd.zeros(ref.size(mx, "gru", 1, False)))
