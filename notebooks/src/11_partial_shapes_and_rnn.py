# %% [markdown]
# # 11 — Shapes that flow both ways, and MXNet's `mx.rnn`
#
# A network exported from MXNet does not always say every shape. The language model
# MXNet's `mx.rnn` builds starts its LSTMs from zero states made by `_zeros` nodes of
# shape `(0, 200)`: the **0 is "unknown"**, the batch size, which only the rest of the
# graph can tell. MXNet infers it by running shape inference **forward and backward**
# until nothing changes; so does mxnb.
#
# **What you will learn**
#
# 1. MXNet's rule for partial shapes: 0 is an unknown dimension, `()` an unknown shape;
# 2. how known dimensions travel through an operator in both directions;
# 3. how the fixed point fills the zero begin states of an exported LSTM language model;
# 4. how to build the same model with `mx.rnn` cells, and a fused `RNN` operator;
# 5. what the planner makes of the exported model, beside MXNet 1.9.1's own plan.

# %%
import json
import pathlib

import numpy as np

import mxnb as mx

ROOT = pathlib.Path(mx.__file__).resolve().parents[1]
LM_JSON = ROOT / "tests" / "rnn" / "data" / "lstm_lm-symbol.json"  # written by MXNet 1.9.1

# %% [markdown]
# ## 1. A 0 is a dimension nobody has said yet
#
# `infer_shape_partial` returns what can be known: `0` where a dimension is still open,
# `()` where even the number of dimensions is. Here `a` knows its columns, `b` its rows;
# the sum must have one shape, so each fills the other's gap.

# %%
a = mx.sym.Variable("a", shape=(0, 10))
b = mx.sym.Variable("b", shape=(12, 0))
arg_shapes, out_shapes, _ = (a + b).infer_shape_partial()
print(arg_shapes, out_shapes)
assert arg_shapes == [(12, 10), (12, 10)] and out_shapes == [(12, 10)]

# %% [markdown]
# ## 2. Through an operator, both ways
#
# Each operator's shape function answers for its inputs *and* outputs from whatever is
# known of either. A FullyConnected with a known output gives its data the batch size;
# its weight gives the data's features. Below, `x` is `(?, ?)` and learns both.

# %%
x = mx.sym.Variable("x")
fc = mx.sym.FullyConnected(x, weight=mx.sym.Variable("w"), num_hidden=4, no_bias=True, name="fc")
net = fc + mx.sym.Variable("y")
arg_shapes, _, _ = net.infer_shape_partial(x=(0, 0), w=(4, 10), y=(3, 4))
print(dict(zip(net.list_arguments(), arg_shapes)))
assert dict(zip(net.list_arguments(), arg_shapes))["x"] == (3, 10)

# %% [markdown]
# ## 3. The exported language model
#
# Two `LSTMCell(200)`, 35 steps, vocabulary 10,000, written by MXNet 1.9.1. Its four
# begin states are `_zeros` of shape `(0, 200)`:

# %%
lm = mx.sym.load(str(LM_JSON))
zeros = [node for node in json.loads(LM_JSON.read_text())["nodes"] if node["op"] == "_zeros"]
print([(node["name"], node["attrs"]["shape"]) for node in zeros])
assert len(zeros) == 4

# %% [markdown]
# Nothing fixes their batch going forward: the first `h2h` FullyConnected reads a
# `(?, 200)` state and gives `(?, 800)`. The batch arrives from the other side: the gates
# are `i2h + h2h`, and `i2h` reads the embedded words, `(32, 800)`. Going backward, the
# sum fixes `h2h`'s output, `h2h` fixes its data, and the data *is* the zeros.

# %%
internals = lm.get_internals()
names = internals.list_outputs()
before = dict(zip(names, internals.infer_shape_partial()[1]))
after = dict(zip(names, internals.infer_shape(data=(32, 35), softmax_label=(32, 35))[1]))
for name in ("lstm_l0_begin_state_0_output", "lstm_l0_t0_h2h_output", "lstm_l0_t0_i2h_output"):
    print(f"{name:32} alone: {before[name]!s:12} with data (32, 35): {after[name]}")
assert before["lstm_l0_begin_state_0_output"] == (0, 200)
assert after["lstm_l0_begin_state_0_output"] == (32, 200)

# %% [markdown]
# So the model binds and runs like any other, and the zeros take the inferred shape:

# %%
exe = lm.simple_bind(mx.cpu(), data=(32, 35), softmax_label=(32, 35), grad_req="null")
exe.forward(data=mx.nd.array(np.random.randint(0, 10000, size=(32, 35))))
print(exe.outputs[0].shape)
assert exe.outputs[0].shape == (32 * 35, 10000)
assert np.allclose(exe.outputs[0].asnumpy().sum(axis=1), 1.0, atol=1e-4)  # softmax rows

# %% [markdown]
# A dimension that nothing fixes is an error that names the node, with what is known:

# %%
orphan = mx.sym.FullyConnected(mx.sym.zeros(shape=(0, 3), name="z"), num_hidden=4, name="fc")
try:
    orphan.simple_bind(mx.cpu())
except mx.base.ShapeError as error:
    print(error)
    assert "_zeros 'z' output (?, 3)" in str(error)

# %% [markdown]
# ## 4. Building it here: `mx.rnn`
#
# The same cells, with MXNet's names, gate order and zero begin states. Built here, the
# graph is the one MXNet exported, node for node:

# %%
stack = mx.rnn.SequentialRNNCell()
for layer in range(2):
    stack.add(mx.rnn.LSTMCell(num_hidden=200, prefix=f"lstm_l{layer}_"))
embed = mx.sym.Embedding(mx.sym.Variable("data"), input_dim=10000, output_dim=200, name="embed")
outputs, states = stack.unroll(35, inputs=embed, merge_outputs=True)
print(outputs.infer_shape(data=(32, 35))[1], [state.name for state in states])
ours = [node["op"] for node in json.loads(outputs.tojson())["nodes"]]
theirs = [node["op"] for node in json.loads(LM_JSON.read_text())["nodes"]]
assert ours == theirs[: len(ours)]

# %% [markdown]
# A `FusedRNNCell` computes the whole stack in one `RNN` operator with one packed
# parameter vector; `unfuse()` gives the cells back, and `unpack_weights` converts the
# parameters, so both compute the same:

# %%
fused = mx.rnn.FusedRNNCell(8, num_layers=2, mode="lstm", prefix="f_")
data = mx.sym.Variable("data")
fused_out, _ = fused.unroll(5, data, layout="TNC", merge_outputs=True)
cells = fused.unfuse()
cells_out, _ = cells.unroll(5, data, layout="TNC", merge_outputs=True)
fused_exe = fused_out.simple_bind(mx.cpu(), data=(5, 3, 4), grad_req="null")
cells_exe = cells_out.simple_bind(mx.cpu(), data=(5, 3, 4), grad_req="null")
rng = np.random.RandomState(0)
inputs = rng.uniform(-1, 1, size=(5, 3, 4))
packed = rng.uniform(-0.3, 0.3, size=fused_exe.arg_dict["f_parameters"].shape)
fused_exe.forward(data=mx.nd.array(inputs), f_parameters=mx.nd.array(packed))
weights = cells.pack_weights(fused.unpack_weights({"f_parameters": mx.nd.array(packed)}))
cells_exe.forward(data=mx.nd.array(inputs), **weights)
print(len(fused_out.get_internals().list_outputs()), "entries fused vs",
      len(cells_out.get_internals().list_outputs()), "unfused")  # fmt: skip
assert np.allclose(fused_exe.outputs[0].asnumpy(), cells_exe.outputs[0].asnumpy(), atol=1e-5)

# %% [markdown]
# ## 5. The plan for the exported model
#
# `benchmarks/mxnet_reference.json` holds MXNet 1.9.1's own plan for this JSON at batch
# 32: 46,873,600 bytes for inference (measured exactly), "116 MB allocated" for training.

# %%
shapes = {"data": (32, 35), "softmax_label": (32, 35)}
reference = json.loads((ROOT / "benchmarks" / "mxnet_reference.json").read_text())
mxnet = {
    (run["mode"]): run
    for run in reference["runs"]
    if run["network"] == "lstm_lm" and run["batch"] == 32
}
for mode, req in (("inference", "null"), ("training", "write")):
    plan = mx.executor.plan_memory(lm, shapes, grad_req=req)
    theirs = mxnet[mode]["bytes"] or mxnet[mode]["mb"] * 2**20
    print(
        f"{mode:9}  mxnb {plan.internal_bytes / 2**20:6.1f} MiB   MXNet {theirs / 2**20:6.1f} MiB"
    )
    assert plan.internal_bytes <= theirs
