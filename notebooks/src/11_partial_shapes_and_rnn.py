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
# 5. what the planner makes of the exported model, beside MXNet 1.9.1's own plan;
# 6. how a `BucketingModule` trains one model on sentences of several lengths, every
#    bucket's graph sharing one set of parameters and one memory pool.

# %%
import json
import pathlib
import random

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
# What one unrolled step is made of: a 2-step LSTM cell drawn by `plot_network` (parameters
# hidden, as `mx.viz` does). The exported model above is this picture 35 times, two layers
# high: 969 nodes, which the lab's symbol viewer opens grouped by time step (`lstm_l0_t3_*`).

# %%
step_cell = mx.rnn.LSTMCell(8, prefix="lstm_")
step_out, _ = step_cell.unroll(2, mx.sym.Variable("data"), layout="TNC", merge_outputs=True)
mx.widgets.plot_network(step_out, shape={"data": (2, 1, 4)})

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

# %% [markdown]
# ## 6. Sentences of several lengths: `BucketingModule`
#
# Unrolled over 35 steps, the model above is one graph; a 4-word sentence padded to 35
# wastes most of it. `mx.rnn.BucketSentenceIter` sorts sentences into **buckets** by
# length (here 4 and 8 tokens) and gives each batch its `bucket_key`.
# `mx.mod.BucketingModule` calls `sym_gen(key)` for each key it sees, binding one
# `Module` per bucket. The default (largest) bucket owns the parameters; every other
# bucket binds with `shared_module=` it, as in MXNet: its weights and gradients **are**
# the default bucket's arrays, and its data and intermediate values live in the default
# bucket's memory.

# %%
vocab, hidden = 12, 16
rng = np.random.RandomState(7)
sentences = []
for _ in range(32):  # counting patterns: 3 5 7 9 ..., learnable
    start, step = rng.randint(1, vocab), rng.randint(1, 3)
    sentences.append([1 + (start + step * k) % (vocab - 1) for k in range(rng.randint(2, 9))])
random.seed(1)  # the iterator shuffles at every reset: batch order, sentences in a bucket
np.random.seed(1)
train = mx.rnn.BucketSentenceIter(sentences, batch_size=4, buckets=[4, 8], invalid_label=0)
cell = mx.rnn.LSTMCell(hidden, prefix="lstm_")


def sym_gen(seq_len):
    """The network for sentences of ``seq_len`` tokens: (symbol, data names, label names)."""
    embed = mx.sym.Embedding(mx.sym.Variable("data"), input_dim=vocab, output_dim=8, name="embed")
    cell.reset()
    outputs, _ = cell.unroll(seq_len, inputs=embed, merge_outputs=True)
    pred = mx.sym.FullyConnected(
        mx.sym.Reshape(outputs, shape=(-1, hidden)), num_hidden=vocab, name="pred"
    )
    label = mx.sym.Reshape(mx.sym.Variable("softmax_label"), shape=(-1,))
    return mx.sym.SoftmaxOutput(pred, label, name="softmax"), ("data",), ("softmax_label",)


mx.random.seed(1)  # the initial weights
model = mx.mod.BucketingModule(sym_gen, default_bucket_key=train.default_bucket_key)
model.fit(
    train,
    num_epoch=8,
    eval_metric=mx.metric.Perplexity(0),
    optimizer="adam",
    optimizer_params={"learning_rate": 0.02},
    initializer=mx.init.Xavier(),
)
perplexity = [dict(record["train"])["perplexity"] for record in model.epoch_metrics]
print("perplexity per epoch:", np.round(perplexity, 2))
assert perplexity[-1] < perplexity[0] / 2

# %% [markdown]
# (Adam overshoots in the second epoch on so little data; MXNet 1.9.1 does the same. The
# test suite trains a model like this one with MXNet's own `BucketingModule` and checks
# that mxnb ends with the same parameters: `tests/rnn/test_bucketing.py`.)
#
# Two buckets were bound. Their graphs differ (4 and 8 steps), but every parameter and
# its gradient is one NDArray, so an update through either bucket trains both:

# %%
short = model._buckets[4]._exec_group.execs[0]
long = model._buckets[8]._exec_group.execs[0]
print(len(short.symbol.get_internals().list_outputs()), "vs",
      len(long.symbol.get_internals().list_outputs()), "graph entries")  # fmt: skip
for name in sorted(model.get_params()[0]):
    same = short.arg_dict[name] is long.arg_dict[name]
    print(f"{name:16} {short.arg_dict[name].shape!s:9} same array in both buckets: {same}")
    assert same and short.grad_dict[name] is long.grad_dict[name]

# %% [markdown]
# The memory is shared too (MXNet's `shared_exec` rule). The short bucket's data and
# label are views of the long bucket's arrays, and every block its memory plan asks for
# is taken from the long bucket's pool (the smallest free block that fits). So binding
# the second bucket allocated no new memory for intermediate values:

# %%
print(
    "data shares the long bucket's memory:",
    short.arg_dict["data"]._chunk is long.arg_dict["data"]._chunk,
)
print(f"short bucket plans {short.memory_plan.internal_bytes:,} B, borrowed {short.borrowed_bytes:,} B;"
      f" long bucket {long.memory_plan.internal_bytes:,} B")  # fmt: skip
assert short.arg_dict["data"]._chunk is long.arg_dict["data"]._chunk
assert short.borrowed_bytes == short.memory_plan.internal_bytes

# %% [markdown]
# `save_checkpoint` writes MXNet 1.9.1's files: the shared parameters once, a symbol per
# bucket, and the list of bucket keys. `BucketingModule.load` reads them back (MXNet's
# own bucketing checkpoints too):

# %%
import tempfile

with tempfile.TemporaryDirectory() as folder:
    model.save_checkpoint(f"{folder}/lm", 8)
    print(sorted(p.name for p in pathlib.Path(folder).iterdir()))
    again = mx.mod.BucketingModule.load(f"{folder}/lm", 8, sym_gen, default_bucket_key=8)
    again.bind(train.provide_data, train.provide_label, for_training=False)
    scores = []
    for module in (model, again):  # the iterator shuffles (and drops part of a batch): seed it
        random.seed(0)
        np.random.seed(0)
        sample = mx.rnn.BucketSentenceIter(sentences, batch_size=4, buckets=[4, 8], invalid_label=0)
        scores.append(module.score(sample, mx.metric.Perplexity(0))[0][1])
    before, after = scores
print(f"perplexity before saving {before:.4f}, after loading {after:.4f}")
assert abs(before - after) < 1e-4 * before
