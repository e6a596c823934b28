"""Networks of ``mx.rnn`` cells, written once for both MXNet 1.9.1 and mxnb.

Every builder takes the ``mx`` module (``mxnet`` or ``mxnb``) and returns
``(symbol, input shapes)``; :func:`run` binds it, feeds arguments and head
gradients from ``RandomState(0)`` in sorted-name order and returns the
outputs and gradients.  ``data/make_rnn_vectors.py`` runs them under MXNet
and commits the results; ``test_rnn_cells.py`` runs them under mxnb.
"""

from __future__ import annotations

import numpy as np

T, N, I, H = 3, 2, 4, 5


def _merged(mx, cell, layout="NTC", length=T, merge=True):
    data = mx.sym.Variable("data")
    outputs, _ = cell.unroll(length, inputs=data, layout=layout, merge_outputs=merge)
    if isinstance(outputs, list):
        outputs = mx.sym.Group(outputs)
    shape = (N, length, I) if layout == "NTC" else (length, N, I)
    return outputs, {"data": shape}


def rnn_tanh(mx):
    return _merged(mx, mx.rnn.RNNCell(H, activation="tanh", prefix="rnn_"))


def rnn_relu(mx):
    return _merged(mx, mx.rnn.RNNCell(H, activation="relu", prefix="rnn_"))


def lstm(mx):
    return _merged(mx, mx.rnn.LSTMCell(H, prefix="lstm_", forget_bias=0.5))


def gru_tnc_list(mx):
    return _merged(mx, mx.rnn.GRUCell(H, prefix="gru_"), layout="TNC", merge=False)


def stack(mx):
    cells = mx.rnn.SequentialRNNCell()
    cells.add(mx.rnn.LSTMCell(H, prefix="l0_"))
    cells.add(mx.rnn.DropoutCell(0.0, prefix="drop_"))
    cells.add(mx.rnn.GRUCell(H, prefix="l1_"))
    return _merged(mx, cells)


def bidirectional(mx):
    cell = mx.rnn.BidirectionalCell(
        mx.rnn.LSTMCell(H, prefix="fw_"), mx.rnn.GRUCell(H, prefix="bw_"), output_prefix="bi_"
    )
    return _merged(mx, cell)


def bidirectional_list(mx):
    cell = mx.rnn.BidirectionalCell(
        mx.rnn.RNNCell(H, prefix="fw_"), mx.rnn.RNNCell(H, prefix="bw_"), output_prefix="bi_"
    )
    return _merged(mx, cell, merge=False)


def residual(mx):
    return _merged(mx, mx.rnn.ResidualCell(mx.rnn.GRUCell(I, prefix="res_")))


def zoneout_inference(mx):
    cell = mx.rnn.ZoneoutCell(
        mx.rnn.LSTMCell(H, prefix="zo_"), zoneout_outputs=0.3, zoneout_states=0.2
    )
    return _merged(mx, cell)


def _fused(mode, bidirectional, layers=2, layout="TNC"):
    def build(mx):
        cell = mx.rnn.FusedRNNCell(
            H, num_layers=layers, mode=mode, bidirectional=bidirectional,
            get_next_state=True, prefix=f"{mode}_",
        )  # fmt: skip
        data = mx.sym.Variable("data")
        outputs, states = cell.unroll(T, inputs=data, layout=layout, merge_outputs=True)
        shape = (T, N, I) if layout == "TNC" else (N, T, I)
        return mx.sym.Group([outputs, *states]), {"data": shape}

    return build


CASES = {
    "rnn_tanh": rnn_tanh,
    "rnn_relu": rnn_relu,
    "lstm": lstm,
    "gru_tnc_list": gru_tnc_list,
    "stack": stack,
    "bidirectional": bidirectional,
    "bidirectional_list": bidirectional_list,
    "residual": residual,
    "zoneout_inference": zoneout_inference,
    "fused_lstm_bi": _fused("lstm", True),
    "fused_gru": _fused("gru", False),
    "fused_gru_bi": _fused("gru", True, layers=1),
    "fused_rnn_tanh_bi": _fused("rnn_tanh", True),
    "fused_rnn_relu": _fused("rnn_relu", False, layout="NTC"),
    "fused_lstm": _fused("lstm", False, layers=3),
}
TRAINING = {name: not name.startswith("zoneout") for name in CASES}


def run(mx, name):
    """Bind case ``name``, run forward (and backward in training); return arrays by key."""
    net, shapes = CASES[name](mx)
    exe = net.simple_bind(mx.cpu(), **shapes)
    rng = np.random.RandomState(0)
    for key in sorted(exe.arg_dict):
        array = exe.arg_dict[key]
        array[:] = rng.uniform(-0.5, 0.5, size=array.shape).astype("float32")
    training = TRAINING[name]
    exe.forward(is_train=training)
    result = {f"out{i}": out.asnumpy() for i, out in enumerate(exe.outputs)}
    if training:
        heads = [
            mx.nd.array(rng.uniform(-1, 1, size=out.shape).astype("float32")) for out in exe.outputs
        ]
        exe.backward(heads)
        for key in sorted(exe.grad_dict):
            grad = exe.grad_dict[key]
            if grad is not None:
                result[f"grad:{key}"] = grad.asnumpy()
    result["arguments"] = np.array(net.list_arguments())
    return result
