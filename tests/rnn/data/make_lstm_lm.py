"""Write the LSTM language model exported by MXNet 1.9.1 (run by hand under real MXNet, not mxnb).

    MXNET_SUBGRAPH_BACKEND=NONE MXNET_MKLDNN_ENABLED=0 \
        /work/mxnet-venv/bin/python tests/rnn/data/make_lstm_lm.py

Two ``mx.rnn.LSTMCell(200)`` stacked, unrolled over 35 steps with the zero
begin states ``begin_state()`` gives (``_zeros`` nodes of shape ``(0, 200)``:
the batch size is left for inference), as MXNet's bucketing example builds
its model: Embedding(10000 -> 200), the stack, Reshape(-1, 200),
FullyConnected(10000), SoftmaxOutput.  Writes ``lstm_lm-symbol.json``; the
tests bind it at batch 32, ``benchmarks/mxnet_reference.py`` measures
MXNet's own memory plan for it.

Also writes ``lstm_lm_reference.npz``: one training pass of MXNet at batch 32
with inputs from :func:`inputs` (the tests make the same ones): the
probability each row gives its label (``picked``) and the sum and the first
row of every gradient (``sum:NAME``, ``row:NAME``).
"""

from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
SEQ_LEN, NUM_HIDDEN, NUM_EMBED, VOCAB = 35, 200, 200, 10000


def build(mx):
    """The LM, built with ``mx`` (``mxnet`` here; the tests build it with ``mxnb`` too)."""
    data = mx.sym.Variable("data")
    label = mx.sym.Variable("softmax_label")
    embed = mx.sym.Embedding(data=data, input_dim=VOCAB, output_dim=NUM_EMBED, name="embed")
    stack = mx.rnn.SequentialRNNCell()
    for layer in range(2):
        stack.add(mx.rnn.LSTMCell(num_hidden=NUM_HIDDEN, prefix=f"lstm_l{layer}_"))
    outputs, _ = stack.unroll(SEQ_LEN, inputs=embed, merge_outputs=True)
    pred = mx.sym.Reshape(outputs, shape=(-1, NUM_HIDDEN))
    pred = mx.sym.FullyConnected(data=pred, num_hidden=VOCAB, name="pred")
    label = mx.sym.Reshape(label, shape=(-1,))
    return mx.sym.SoftmaxOutput(data=pred, label=label, name="softmax")


def inputs(shapes: dict) -> dict:
    """Arguments in sorted name order from RandomState(0): token ids, then small uniform weights."""
    rng = np.random.RandomState(0)
    values = {}
    for name in sorted(shapes):
        if name in ("data", "softmax_label"):
            values[name] = rng.randint(0, VOCAB, size=shapes[name]).astype("float32")
        else:
            values[name] = rng.uniform(-0.1, 0.1, size=shapes[name]).astype("float32")
    return values


def reference(mx, net) -> None:
    shapes = {"data": (32, SEQ_LEN), "softmax_label": (32, SEQ_LEN)}
    req = {name: "null" if name in shapes else "write" for name in net.list_arguments()}
    exe = net.simple_bind(mx.cpu(), grad_req=req, **shapes)
    values = inputs({name: array.shape for name, array in exe.arg_dict.items()})
    for name, value in values.items():
        exe.arg_dict[name][:] = value
    exe.forward(is_train=True)
    exe.backward()
    out = exe.outputs[0].asnumpy()
    labels = values["softmax_label"].reshape(-1).astype("int64")
    record = {"picked": out[np.arange(out.shape[0]), labels]}
    for name, grad in exe.grad_dict.items():
        if name in ("data", "softmax_label") or grad is None:
            continue
        grad = grad.asnumpy()
        record[f"sum:{name}"] = np.array(grad.sum(dtype="float64"))
        record[f"row:{name}"] = grad.reshape(grad.shape[0], -1)[0] if grad.ndim > 1 else grad
    np.savez_compressed(HERE / "lstm_lm_reference.npz", **record)


if __name__ == "__main__":
    import mxnet as mx

    net = build(mx)
    _, out_shapes, _ = net.infer_shape(data=(32, SEQ_LEN), softmax_label=(32, SEQ_LEN))
    assert out_shapes == [(32 * SEQ_LEN, VOCAB)], out_shapes
    net.save(str(HERE / "lstm_lm-symbol.json"))
    reference(mx, net)
    print("wrote", HERE / "lstm_lm-symbol.json", "and lstm_lm_reference.npz")
