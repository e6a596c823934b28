"""MXNet 1.9.1's FusedRNN initializer on packed RNN parameters (run by hand).

    /work/mxnet-venv/bin/python tests/rnn/data/make_fused_init.py

For each case (mode, layers, bidirectional, forget_bias), the ``parameters``
vector of a ``FusedRNNCell(3)`` over inputs of 4 features, initialized by
``mx.init.FusedRNN(None, ...)`` under the global initializer
``Constant(0.5)`` (deterministic), and by ``FusedRNN(One(), ...)``.
Writes ``fused_init.npz``: ``global:CASE`` and ``one:CASE``.
"""

from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
CASES = [
    ("lstm", 1, False, 1.0),
    ("lstm", 2, True, 2.5),
    ("gru", 2, False, 1.0),
    ("rnn_tanh", 1, True, 1.0),
]


def case_name(mode, layers, bidirectional, forget_bias):
    return f"{mode}-{layers}-{int(bidirectional)}-{forget_bias}"


def size(mx, mode, layers, bidirectional):
    cell = mx.rnn.FusedRNNCell(
        3, num_layers=layers, mode=mode, bidirectional=bidirectional, prefix="f_"
    )
    out, _ = cell.unroll(2, mx.sym.Variable("data"), layout="TNC", merge_outputs=True)
    return dict(zip(out.list_arguments(), out.infer_shape(data=(2, 2, 4))[0]))["f_parameters"]


def main():
    import mxnet as mx

    out = {}
    for mode, layers, bidirectional, forget_bias in CASES:
        name = case_name(mode, layers, bidirectional, forget_bias)
        shape = size(mx, mode, layers, bidirectional)
        for key, inner in (("global", None), ("one", mx.init.One())):
            init = mx.init.FusedRNN(inner, 3, layers, mode, bidirectional, forget_bias)
            arr = mx.nd.zeros(shape)
            init._init_weight(
                mx.init.InitDesc("f_parameters", global_init=mx.init.Constant(0.5)), arr
            )
            out[f"{key}:{name}"] = arr.asnumpy()
    np.savez(HERE / "fused_init.npz", **out)


if __name__ == "__main__":
    main()
