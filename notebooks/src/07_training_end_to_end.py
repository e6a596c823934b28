# %% [markdown]
# # 07 — Training end to end: digits with an MLP and LeNet
#
# Everything so far, working together: symbols describe the networks, `simple_bind` infers
# the shapes and plans the memory, the executor pushes one engine op per step, NDArray
# arithmetic updates the weights asynchronously — and the views show one training step.
#
# The data is scikit-learn's bundled **handwritten digits** (1,797 images of 8×8 pixels,
# 10 classes), loaded from the package with no download.
#
# **What you will learn**
#
# 1. how to bind a network for training and write the SGD-with-momentum loop MXNet's
#    `Module.fit` runs (forward, backward, update — all pushed, nothing waits);
# 2. how to watch it: a progress bar and a live loss plot, without slowing the engine;
# 3. that both networks reach **at least 95 % test accuracy** (asserted);
# 4. what one training step looks like on the engine timeline, and that every update
#    waited for the gradient it reads;
# 5. how the executor runs a string of elementwise steps as one fused kernel, and that the
#    numbers do not change.

# %%
import io
import time

import numpy as np
from IPython.display import Image, display
from matplotlib.figure import Figure
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split

import mxnb as mx
from mxnb import widgets
from mxnb.engine.tracing import OpEnd, OpPush, OpStart
from mxnb.executor import zoo
from mxnb.executor.bulk import step_names

mx.random.seed(0)
SEED = 0
BATCH = 32

# %% [markdown]
# ## 1. The data
#
# A stratified 75 / 25 split, pixels standardized with the training set's mean and
# standard deviation.

# %%
digits = load_digits()
images = digits.images.astype(np.float32) / 16.0
labels = digits.target.astype(np.float32)
train_x, test_x, train_y, test_y = train_test_split(
    images, labels, test_size=0.25, random_state=SEED, stratify=labels
)
mean, std = train_x.mean(), train_x.std()
print(f"{len(train_x)} training images, {len(test_x)} test images, shape {train_x.shape[1:]}")

# %% [markdown]
# ## 2. The networks
#
# The MLP is MXNet's MNIST MLP from the model zoo (`fc 128 → relu → fc 64 → relu → fc 10 →
# softmax`), fed the 64 pixels as a vector.
#
# LeNet-5 needs a larger picture than 8×8 to fit two 5×5 convolutions, so each digit is
# upsampled 2× (nearest neighbour) to 16×16: `conv 5×5 (6, pad 2) → relu → max-pool →
# conv 5×5 (16) → relu → max-pool → fc 120 → fc 84 → fc 10 → softmax` — LeNet-5's widths.


# %%
def lenet5():
    """LeNet-5 for 16x16 single-channel images."""
    data = mx.sym.Variable("data")
    x = mx.sym.Convolution(data, kernel=(5, 5), pad=(2, 2), num_filter=6, name="conv1")
    x = mx.sym.Activation(x, act_type="relu", name="relu1")
    x = mx.sym.Pooling(x, pool_type="max", kernel=(2, 2), stride=(2, 2), name="pool1")
    x = mx.sym.Convolution(x, kernel=(5, 5), num_filter=16, name="conv2")
    x = mx.sym.Activation(x, act_type="relu", name="relu2")
    x = mx.sym.Pooling(x, pool_type="max", kernel=(2, 2), stride=(2, 2), name="pool2")
    x = mx.sym.Flatten(x, name="flatten")
    x = mx.sym.FullyConnected(x, num_hidden=120, name="fc1")
    x = mx.sym.Activation(x, act_type="relu", name="relu3")
    x = mx.sym.FullyConnected(x, num_hidden=84, name="fc2")
    x = mx.sym.Activation(x, act_type="relu", name="relu4")
    x = mx.sym.FullyConnected(x, num_hidden=10, name="fc3")
    return mx.sym.SoftmaxOutput(x, name="softmax")


def as_vectors(images):
    """(n, 8, 8) -> (n, 64), standardized."""
    return ((images - mean) / std).reshape(len(images), -1)


def as_pictures(images):
    """(n, 8, 8) -> (n, 1, 16, 16), standardized and upsampled 2x."""
    big = np.kron((images - mean) / std, np.ones((2, 2), np.float32))
    return big[:, None]


networks = {"MLP": (zoo.mlp(), as_vectors), "LeNet-5": (lenet5(), as_pictures)}
for name, (net, prepare) in networks.items():
    _, out_shapes, _ = net.infer_shape(data=prepare(train_x[:32]).shape, softmax_label=(32,))
    print(f"{name:8s} arguments: {net.list_arguments()}  output: {out_shapes}")

# %% [markdown]
# `plot_network` draws a symbol like `mx.viz.plot_network`; with input shapes, each edge
# carries the shape of the tensor it carries (batch axis left out).

# %%
widgets.plot_network(networks["LeNet-5"][0], shape={"data": (BATCH, 1, 16, 16)})

# %% [markdown]
# ## 3. Watching without slowing down
#
# A progress bar (ipywidgets; plain text when they are missing) and a loss plot redrawn
# every few steps. Reading the loss means waiting for the step's output, so each step's
# output is *copied* (an engine op, asynchronous) and read one step later, after the next
# step has been pushed: the engine always has work queued while Python computes and draws.

# %%
try:
    import ipywidgets
except ImportError:  # a text fallback keeps the notebook runnable anywhere
    ipywidgets = None


class Progress:
    """A progress bar with a caption: ipywidgets if available, else printed lines."""

    def __init__(self, total, title):
        self.total, self.title = total, title
        if ipywidgets is not None:
            self.bar = ipywidgets.IntProgress(min=0, max=total, description=title)
            self.caption = ipywidgets.Label()
            display(ipywidgets.HBox([self.bar, self.caption]))

    def update(self, done, caption):
        if ipywidgets is not None:
            self.bar.value = done
            self.caption.value = caption
        elif done == self.total or done % max(1, self.total // 4) == 0:
            print(f"{self.title}: {done}/{self.total} {caption}")


class LossPlot:
    """A loss curve redrawn in place (one display handle, a PNG per redraw)."""

    def __init__(self, title):
        self.title = title
        self.handle = display(Image(data=self._png([])), display_id=True)

    def _png(self, losses):
        figure = Figure(figsize=(6, 2.4))
        axes = figure.add_subplot(1, 1, 1)
        if losses:
            steps = np.arange(1, len(losses) + 1)
            axes.plot(steps, losses, color="#bbbbbb", linewidth=0.8, label="batch")
            window = min(20, len(losses))
            smooth = np.convolve(losses, np.ones(window) / window, mode="valid")
            axes.plot(steps[window - 1 :], smooth, color="#1f77b4", label=f"mean of {window}")
            axes.legend(loc="upper right", fontsize=8)
        axes.set_xlabel("step")
        axes.set_ylabel("cross-entropy")
        axes.set_title(self.title, fontsize=10)
        figure.tight_layout()
        buffer = io.BytesIO()
        figure.savefig(buffer, format="png", dpi=80)
        return buffer.getvalue()

    def update(self, losses):
        if self.handle is not None:  # None when run as a plain script
            self.handle.update(Image(data=self._png(losses)))


# %% [markdown]
# ## 4. The training loop
#
# `simple_bind` allocates the arguments, their gradients and the planned internal storage.
# Weights get He initialisation, biases zero. Each step:
#
# 1. `exe.forward(is_train=True, data=..., softmax_label=...)` copies the batch in and pushes
#    the forward ops;
# 2. `exe.backward()` pushes the backward ops (`SoftmaxOutput` is a loss: no head gradient);
# 3. SGD with momentum, in place: `m = 0.9·m − lr/batch · grad`, `w += m` — NDArray ops,
#    pushed, ordered after the backward op that writes `grad` by its var.
#
# The learning rate follows a cosine from `lr` to 0.

# %%
DATA_ARGS = ("data", "softmax_label")


def initialise(exe, rng):
    for name, array in exe.arg_dict.items():
        if name.endswith("weight"):
            fan_in = int(np.prod(array.shape[1:]))
            array[:] = rng.standard_normal(array.shape).astype(np.float32) * np.sqrt(2.0 / fan_in)
        elif name.endswith("bias"):
            array[:] = 0


def sgd_step(exe, momenta, learning_rate):
    for name, momentum in momenta.items():
        momentum *= 0.9
        momentum -= (learning_rate / BATCH) * exe.grad_dict[name]
        weight = exe.arg_dict[name]
        weight += momentum


def batch_loss(probabilities, batch_labels):
    """Mean cross-entropy of a batch; ``probabilities`` is an NDArray (this waits for it)."""
    probabilities = probabilities.asnumpy()
    picked = probabilities[np.arange(len(batch_labels)), batch_labels.astype(int)]
    return float(-np.log(picked + 1e-8).mean())


def fit(name, net, prepare, epochs, learning_rate):
    rng = np.random.default_rng(SEED)
    x = prepare(train_x)
    exe = net.simple_bind(mx.cpu(), data=(BATCH,) + x.shape[1:], softmax_label=(BATCH,))
    initialise(exe, rng)
    momenta = {n: mx.nd.zeros(exe.arg_dict[n].shape) for n in exe.arg_dict if n not in DATA_ARGS}
    steps_per_epoch = len(x) // BATCH
    total = epochs * steps_per_epoch
    progress, plot = Progress(total, name), LossPlot(f"{name}: training loss")
    losses, pending, step, start = [], None, 0, time.perf_counter()
    for epoch in range(epochs):
        order = rng.permutation(len(x))
        for first in range(0, steps_per_epoch * BATCH, BATCH):
            index = order[first : first + BATCH]
            lr = learning_rate * 0.5 * (1 + np.cos(np.pi * step / total))
            exe.forward(is_train=True, data=x[index], softmax_label=train_y[index])
            exe.backward()
            sgd_step(exe, momenta, lr)
            step += 1
            if pending is not None:  # the previous step's loss, read while this step runs
                losses.append(batch_loss(*pending))
            # An asynchronous copy: the next forward may only overwrite the output after it.
            pending = (exe.outputs[0].copy(), train_y[index])
            if step % 20 == 0 or step == total:
                plot.update(losses)
                progress.update(
                    step, f"epoch {epoch + 1}/{epochs}  loss {np.mean(losses[-20:]):.3f}"
                )
    losses.append(batch_loss(*pending))
    plot.update(losses)
    seconds = time.perf_counter() - start
    params = {n: exe.arg_dict[n] for n in momenta}
    return exe, params, losses, seconds


def accuracy(net, prepare, params):
    x = prepare(test_x)
    exe = net.simple_bind(mx.cpu(), data=x.shape, softmax_label=(len(x),), grad_req="null")
    exe.copy_params_from(params)
    probabilities = exe.forward(is_train=False, data=x)[0].asnumpy()
    return float((probabilities.argmax(axis=1) == test_y).mean())


# %% [markdown]
# ### The MLP

# %%
net, prepare = networks["MLP"]
mlp_exe, mlp_params, mlp_losses, seconds = fit("MLP", net, prepare, epochs=6, learning_rate=0.03)
mlp_accuracy = accuracy(net, prepare, mlp_params)
print(f"MLP: {len(mlp_losses)} steps in {seconds:.1f} s, test accuracy {mlp_accuracy:.2%}")

# %% [markdown]
# ### LeNet-5

# %%
net, prepare = networks["LeNet-5"]
lenet_exe, lenet_params, lenet_losses, seconds = fit(
    "LeNet-5", net, prepare, epochs=6, learning_rate=0.03
)
lenet_accuracy = accuracy(net, prepare, lenet_params)
print(f"LeNet-5: {len(lenet_losses)} steps in {seconds:.1f} s, test accuracy {lenet_accuracy:.2%}")

# %% [markdown]
# ## 5. The stated result
#
# On the 450 held-out digits both networks must reach **95 %** or better (they typically
# land around 97–98 %). The loss must also have fallen: the last 20 steps average well
# below the first 20.

# %%
for name, value, losses in (
    ("MLP", mlp_accuracy, mlp_losses),
    ("LeNet-5", lenet_accuracy, lenet_losses),
):
    print(
        f"{name:8s} test accuracy {value:.2%}   loss {np.mean(losses[:20]):.3f} -> "
        f"{np.mean(losses[-20:]):.3f}"
    )
    assert value >= 0.95, f"{name} reached only {value:.2%}"
    assert np.mean(losses[-20:]) < 0.25 * np.mean(losses[:20])

# %% [markdown]
# ## 6. One training step on the engine timeline
#
# Record one LeNet-5 step — forward, backward, momentum update — and draw it. Forward and
# backward form a chain (each layer needs the previous one), but each weight's update needs
# only its own gradient: the updates of the last layers may run on the second worker while
# backward is still working through the first layers. The executor pushes its steps as
# *bulk segments*, as MXNet does in training: up to 15 consecutive steps in one engine op
# named after them (`bulk[conv1, relu1, ...]`), ending at every step that writes a
# gradient, so each update can still start as soon as its gradient exists.
# `with mx.engine.bulk(0):` shows every step as its own op.

# %%
momenta = {n: mx.nd.zeros(lenet_exe.arg_dict[n].shape) for n in lenet_params}
index = np.arange(BATCH)
mx.nd.waitall()
with mx.engine.trace() as trace:
    lenet_exe.forward(is_train=True, data=as_pictures(train_x[index]), softmax_label=train_y[index])
    lenet_exe.backward()
    sgd_step(lenet_exe, momenta, 0.0)
    mx.nd.waitall()

# Views accept any list of events: leave out the storage bookkeeping (freeing temporaries).
bookkeeping = {push.op_id for push in trace.events_of(OpPush) if push.name.startswith("delete")}
focused = [event for event in trace.events if getattr(event, "op_id", None) not in bookkeeping]
widgets.Timeline(focused, width=12)

# %% [markdown]
# The trace also lets us check the rule rather than believe it: every op that *reads* a var
# written by a backward step started only after that backward step ended (read after
# write), and the backward steps ran in reverse layer order.

# %%
pushes = trace.events_of(OpPush)
started = {event.op_id: event.time for event in trace.events_of(OpStart)}
ended = {event.op_id: event.time for event in trace.events_of(OpEnd)}
backward = [
    push for push in pushes if any(name.endswith("_backward") for name in step_names(push.name))
]
checked = 0
for producer in backward:
    for reader in pushes:
        if reader.op_id > producer.op_id and set(reader.const_vars) & set(producer.mutate_vars):
            assert started[reader.op_id] >= ended[producer.op_id], (reader.name, producer.name)
            checked += 1
order = [
    name
    for push in sorted(backward, key=lambda push: started[push.op_id])
    for name in step_names(push.name)
]
print(f"{checked} read-after-write pairs respected; backward order: {order}")
assert order.index("fc3_backward") < order.index("conv1_backward")

# %% [markdown]
# ## 7. Many small steps, one kernel: pointwise fusion
#
# An LSTM cell ends in nine elementwise ops (four activations, three products, a sum, a
# tanh), and its backward in nine more. On a GPU each is a kernel launch, and launching
# costs more than the arithmetic. Inside a bulk segment the executor runs such a run of
# steps as **one fused kernel**, written from the ops' own formulas, as MXNet does on GPUs
# (`MXNET_USE_FUSION`). It is on by default for GPU contexts; `fusion.fused_on()` switches
# it on here, on the CPU, so we can compare a training step fused and unfused.

# %%
from mxnb.executor import fusion
from mxnb.executor.zoo import lstm
from mxnb.testing.fake_cupy import fake_virtual_gpus

cell_net = lstm.lstm_unrolled(1, 3, num_hidden=8, num_embed=8, num_classes=10)
cell_shapes = lstm.lstm_shapes(4, 1, 3, num_hidden=8, num_embed=8)
rng = np.random.default_rng(SEED)
arg_shapes = cell_net.infer_shape(**cell_shapes)[0]
cell_values = {
    name: rng.uniform(-1, 1, shape).astype(np.float32)
    for name, shape in zip(cell_net.list_arguments(), arg_shapes)
}
cell_values["softmax_label"] = rng.integers(0, 10, cell_shapes["softmax_label"]).astype(np.float32)


def lstm_step(ctx, fused, exe=None):
    """One training step of the LSTM on ``ctx``, fused or not: the executor and its numbers."""
    if exe is None:
        exe = cell_net.simple_bind(ctx, **cell_shapes)
        for name, value in cell_values.items():
            exe.arg_dict[name][:] = value
    with fusion.fused_on(fused):
        exe.forward(is_train=True)
        exe.backward()
        mx.nd.waitall()
    grads = [exe.grad_dict[name].asnumpy() for name in sorted(exe.grad_dict)]
    return exe, [exe.outputs[0].asnumpy(), *grads]


_, unfused_numbers = lstm_step(mx.cpu(), fused=False)
fused_exe, fused_numbers = lstm_step(mx.cpu(), fused=True)
for run in fusion.fused_runs(fused_exe)[:2]:
    print(" + ".join(run))
assert all(np.array_equal(a, b) for a, b in zip(unfused_numbers, fused_numbers))
print("outputs and every gradient: the same bits, fused or not")

# %% [markdown]
# The kernel is generated from the ops' formulas, in a language that is both Python and
# CUDA C. Here is the CUDA C of the first cell's forward run. Every value is written to its
# array, as the unfused steps would leave it for backward, except one whose memory the
# next step takes in place (the planner's choice): that one is a local, `T ...`.

# %%
steps, kernel = fusion.fused_kernels(fused_exe)[0]
print(kernel.source())

# %% [markdown]
# What a GPU would launch per training step, counted on a stand-in GPU (`fake_virtual_gpus`:
# cupy's kernel classes run by numpy, launches counted; array operators such as `g * b` are
# not counted, so the unfused figure is a floor):

# %%
with fake_virtual_gpus(1) as stand_in:
    launches = {}
    for fused in (False, True):
        exe, _ = lstm_step(mx.gpu(0), fused)  # the first call of a kernel is checked
        before = stand_in.launches
        lstm_step(mx.gpu(0), fused, exe)
        launches[fused] = stand_in.launches - before
print(f"kernel launches per step: unfused {launches[False]}, fused {launches[True]}")
assert launches[True] < launches[False]

# %% [markdown]
# **Summary.** The training loop is a few lines of pushes; the engine orders them by the
# vars they touch, the planner keeps the memory small, and one `asnumpy()` per step (one
# step late, on a copy) is the only place Python waits.
