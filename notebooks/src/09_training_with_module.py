# %% [markdown]
# # 09 — Training with `Module`: LeNet on two (virtual) GPUs
#
# Notebook 07 wrote the training loop by hand. MXNet users do not: they call
# `mx.mod.Module(...).fit(...)`, and with a **list of devices** the module splits every batch
# across them, sums the gradients in a **KVStore** and sends the updated weights back.
#
# This machine has no GPU, so we ask for two *virtual* GPUs: host memory and numpy
# kernels, but their own engine lanes and copy ops — the scheduling is real.
#
# **What you will learn**
#
# 1. `Module.fit` over `mx.io.NDArrayIter` with `kvstore='device'`, a progress bar and a
#    live accuracy plot; LeNet-5 reaches **at least 97 % test accuracy** (asserted);
# 2. what one data-parallel step looks like on the engine timeline: one lane per device,
#    and the KVStore's gradient sync starting while backward is still running;
# 3. checkpoints in MXNet's own files, saved and loaded again.

# %%
import logging
import os
import tempfile

import numpy as np
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split

import mxnb as mx
from mxnb import widgets
from mxnb.engine.affinity import virtual_gpu_cores
from mxnb.engine.tracing import OpEnd, OpPush, OpStart
from mxnb.executor import zoo
from mxnb.executor.bulk import step_names

mx.context.set_virtual_gpus(2)
mx.random.seed(0)
np.random.seed(0)
logging.getLogger().setLevel(logging.WARNING)
BATCH = 32
devices = [mx.gpu(0), mx.gpu(1)]
print(devices)

# %% [markdown]
# A real GPU is a processor of its own. A virtual GPU runs its kernels in its engine workers
# on the host, so mxnb gives each virtual GPU **a core of its own** when the machine has a core
# per device (`MXNB_VIRTUAL_GPU_AFFINITY`, default `auto`; `off` leaves the threads free): its
# data then stays in that core's caches, as a device's memory stays on the device.

# %%
for ctx in devices:
    cores = virtual_gpu_cores(ctx.device_id)
    print(ctx, "runs on", "any core (too few here)" if cores is None else f"core {min(cores)}")

# %% [markdown]
# ## 1. The data, as iterators
#
# scikit-learn's digits (8×8, no download), upsampled to 16×16 so LeNet-5's two 5×5
# convolutions fit, standardized, and split 75 / 25. `NDArrayIter` serves batches of 32;
# the test iterator pads its last batch, and `predict` drops the padding again.

# %%
digits = load_digits()
images = digits.images.astype(np.float32) / 16.0
labels = digits.target.astype(np.float32)
train_x, test_x, train_y, test_y = train_test_split(
    images, labels, test_size=0.25, random_state=0, stratify=labels
)
mean, std = train_x.mean(), train_x.std()


def as_pictures(batch):
    """(n, 8, 8) -> (n, 1, 16, 16), standardized and upsampled 2x."""
    return np.kron((batch - mean) / std, np.ones((2, 2), np.float32))[:, None]


train_iter = mx.io.NDArrayIter(as_pictures(train_x), train_y, batch_size=BATCH, shuffle=True)
test_iter = mx.io.NDArrayIter(as_pictures(test_x), test_y, batch_size=BATCH)
print(train_iter.provide_data, train_iter.provide_label)

# %% [markdown]
# ## 2. LeNet-5 and `fit` over two devices
#
# Each batch of 32 becomes two slices of 16, one per virtual GPU. After backward, the module
# pushes each parameter's two gradients to the `device` KVStore (summed on one of the
# GPUs), the SGD update runs there, in place on that GPU's own weight (the store keeps
# its value in it), and the new weight is pulled to the other device.
# The learning rate follows a cosine schedule over the run. `progress=True` draws the bar,
# `live_plot=True` redraws the accuracy after every epoch.


# %%
print(zoo.lenet5_digits.__doc__.splitlines()[0])
EPOCHS = 8
steps = EPOCHS * int(np.ceil(len(train_x) / BATCH))
schedule = mx.lr_scheduler.CosineScheduler(max_update=steps, base_lr=0.03)
module = mx.mod.Module(zoo.lenet5_digits(), context=devices)
module.fit(
    train_iter,
    eval_data=test_iter,
    eval_metric="acc",
    num_epoch=EPOCHS,
    kvstore="device",
    optimizer="sgd",
    optimizer_params={"learning_rate": 0.03, "momentum": 0.9, "lr_scheduler": schedule},
    initializer=mx.init.Xavier(),
    progress=True,
    live_plot=True,
)

# %% [markdown]
# The module kept every epoch's metrics; the last validation accuracy is the claim.

# %%
for record in module.epoch_metrics:
    print(record["epoch"], dict(record["train"]), dict(record["validation"]))
test_accuracy = dict(module.score(test_iter, "acc"))["accuracy"]
predicted = module.predict(test_iter).asnumpy().argmax(axis=1)
exact = float((predicted == test_y).mean())
print(
    f"test accuracy {exact:.2%} on {len(test_y)} images (score, with padding: {test_accuracy:.2%})"
)
assert predicted.shape == test_y.shape
assert exact >= 0.97, f"LeNet-5 reached only {exact:.2%}"

# %% [markdown]
# ## 3. One data-parallel step on the timeline
#
# Record one step — forward, backward and the update through the KVStore — and draw it.
# Each virtual GPU has its own lane. The module issues the pushes in *backward order*
# (last layer first, with MXNet's priorities `-index`), right after backward has been
# queued: nothing waits in Python, so the engine starts each gradient's sync as soon as
# that gradient is written, while backward is still working through the first layers.
#
# The executor does not push one engine op per layer: as MXNet does in training, it
# pushes **bulk segments**, up to 15 consecutive steps run as one engine op (each engine op
# costs tens of microseconds of Python, paid again on every device). A segment is named
# after its steps, `bulk[conv1, relu1, ...]`, and ends at every step that writes a
# parameter's gradient, so the KVStore still gets each gradient as soon as it exists.
# `with mx.engine.bulk(0):` pushes every step on its own, to see each in the timeline.

# %%
train_iter.reset()
batch = next(iter(train_iter))
mx.nd.waitall()
with mx.engine.trace() as trace:
    module.forward_backward(batch)
    module.update()
    mx.nd.waitall()
bookkeeping = {push.op_id for push in trace.events_of(OpPush) if push.name.startswith("delete")}
focused = [event for event in trace.events if getattr(event, "op_id", None) not in bookkeeping]
widgets.Timeline(focused, width=12)

# %% [markdown]
# The trace lets us check the claim. The sync of `fc3`'s gradients (the first one issued)
# depends only on `fc3`'s backward on the two devices; it does not wait for `conv1`'s
# backward. Below: how the two overlapped in this run.

# %%
pushes = trace.events_of(OpPush)
started = {event.op_id: event.time for event in trace.events_of(OpStart)}
ended = {event.op_id: event.time for event in trace.events_of(OpEnd)}
by_id = {push.op_id: push for push in pushes}


def ancestors(op_id):
    """Every op ``op_id`` waited on, directly or through others."""
    seen, stack = set(), [op_id]
    while stack:
        for dep in by_id[stack.pop()].waits_on:
            if dep.op_id in by_id and dep.op_id not in seen:
                seen.add(dep.op_id)
                stack.append(dep.op_id)
    return seen


def is_backward(push):
    """A backward step's op, or a segment of them."""
    return any(name.endswith("_backward") for name in step_names(push.name))


syncs = [push for push in pushes if push.name.startswith("kvstore.")]
first_sync = next(push for push in syncs if push.name == "kvstore.reduce:fc3_weight")
conv1_backward = [push for push in pushes if "conv1_backward" in step_names(push.name)]
backward = [push for push in pushes if is_backward(push)]
lanes = sorted({push.ctx for push in backward})
print("backward lanes:", lanes)
print("one device's backward segments:")
for push in backward[: len(backward) // 2]:
    print("   ", push.name)
print("kvstore ops:", len(syncs), "e.g.", [push.name for push in syncs[:4]])
assert len(lanes) == 2 and len(conv1_backward) == 2
assert not {push.op_id for push in conv1_backward} & ancestors(first_sync.op_id)
last_backward_end = max(ended[push.op_id] for push in backward)
lead = (last_backward_end - started[first_sync.op_id]) * 1e3
if lead > 0:
    print(f"overlap: the fc3 gradient sync started {lead:.2f} ms before the last backward op ended")
else:
    print(f"no overlap in this run (the fc3 sync started {-lead:.2f} ms after backward ended):")
    print("the DAG allows it, but the workers ran the ops in this order; run the cell again")

# %% [markdown]
# ## 4. Checkpoints in MXNet's files
#
# `save_checkpoint` writes `prefix-symbol.json` and `prefix-0008.params` — MXNet's own
# binary format with `arg:` / `aux:` names, so MXNet 1.9.1's `mx.model.load_checkpoint`
# opens them too. We load the checkpoint into a new module on the CPU and score it again.

# %%
folder = tempfile.mkdtemp()
prefix = os.path.join(folder, "lenet")
module.save_checkpoint(prefix, EPOCHS)
print(sorted(os.listdir(folder)))
restored = mx.mod.Module.load(prefix, EPOCHS, context=mx.cpu())
restored.bind(test_iter.provide_data, test_iter.provide_label, for_training=False)
again = restored.predict(test_iter).asnumpy().argmax(axis=1)
print(f"restored module: test accuracy {(again == test_y).mean():.2%}")
assert (again == predicted).all()

# %% [markdown]
# **Summary.** `Module.fit` is the loop of notebook 07 plus a KVStore: batches are sliced
# over devices, gradients are summed while backward still runs, weights are broadcast
# back, and the result equals a one-device run up to float rounding (tested against real
# MXNet's `fit` in `tests/module/`).
