# %% [markdown]
# # 04 — Prototyping a custom operator
#
# You have an idea for a layer. Before writing a kernel in C++, prototype it in a cell with
# MXNet's Python custom-op API — `CustomOp` (forward, backward) and `CustomOpProp` (names,
# `infer_shape`, backward dependencies) — and let the tools find the bugs: **debug mode**
# catches a kernel that writes where it should only read, **`check_numeric_gradient`**
# catches a wrong backward, and the **memory plan** shows what your declarations cost.
#
# Our layer: LeCun's scaled tanh, `y = A·tanh(S·x)` with `A = 1.7159`, `S = 2/3`. Its
# gradient can be written from the *output* alone: `dy/dx = A·S·(1 − (y/A)²)`.
#
# **What you will learn**
#
# 1. how to write and register a custom op in a cell, and re-run the cell to iterate;
# 2. two classic prototype bugs and the tool that catches each;
# 3. how to use the op in a symbol and check the whole network's gradient;
# 4. what `declare_backward_dependency` changes in memory, and how promoting the prototype to
#    a SimpleOp unlocks in-place execution.

# %%
import numpy as np

import mxnb as mx
from mxnb import operator as op
from mxnb import widgets
from mxnb.engine.tracing import OpEnd, OpPush, OpStart
from mxnb.testing import assert_almost_equal, check_numeric_gradient

A, S = 1.7159, 2.0 / 3.0
rng = np.random.default_rng(0)
mx.random.seed(0)

# %% [markdown]
# ## 1. The first draft
#
# `forward` and `backward` receive NDArrays and may use any `mx.nd` op; `self.assign` writes
# as `req` says (`'write'`, `'add'`, `'null'`). Keyword arguments reach the property's
# constructor **as strings**, as in MXNet. The first draft "saves memory" by scaling its input
# in place, and its backward forgets part of the chain rule. Both bugs are typical.


# %%
class ScaledTanh(op.CustomOp):
    """y = A * tanh(S * x) — first draft (two bugs)."""

    def __init__(self, amplitude, slope):
        super().__init__()
        self.amplitude, self.slope = amplitude, slope

    def forward(self, is_train, req, in_data, out_data, aux):
        x = in_data[0]
        x *= self.slope  # BUG 1: writes into the input
        self.assign(out_data[0], req[0], self.amplitude * mx.nd.tanh(x))

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        y = out_data[0] / self.amplitude
        local = self.amplitude * (1 - y * y)  # BUG 2: the factor S of the chain rule is missing
        self.assign(in_grad[0], req[0], out_grad[0] * local)


@op.register("scaled_tanh")
class ScaledTanhProp(op.CustomOpProp):
    """Properties of scaled_tanh: one input, one output of the same shape."""

    def __init__(self, amplitude="1.7159", slope="0.6666666666666666"):
        super().__init__(need_top_grad=True)
        self.amplitude, self.slope = float(amplitude), float(slope)

    def list_arguments(self):
        return ["data"]

    def list_outputs(self):
        return ["output"]

    def infer_shape(self, in_shape):
        return [in_shape[0]], [in_shape[0]], []

    def create_operator(self, ctx, shapes, dtypes):
        return ScaledTanh(self.amplitude, self.slope)


# %% [markdown]
# It runs, and the output even looks right. But look at the input afterwards:

# %%
x = mx.nd.array([-3.0, -1.0, 0.0, 0.5, 2.0])
y = mx.nd.Custom(x, op_type="scaled_tanh")
print("y =", y.asnumpy())
print("x after the op =", x.asnumpy(), "<- changed!")
assert_almost_equal(y.asnumpy(), A * np.tanh(S * np.array([-3.0, -1.0, 0.0, 0.5, 2.0])), rtol=1e-5)
assert not np.allclose(x.asnumpy(), [-3.0, -1.0, 0.0, 0.5, 2.0])

# %% [markdown]
# ## 2. Bug 1, caught by debug mode
#
# The engine ordered this op as a *reader* of `x`. Writing into `x` races with every other
# reader and corrupts the value backward will see. In debug mode, const inputs are handed
# over read-only, so the first write fails, naming the op and the argument:

# %%
x = mx.nd.array([-3.0, -1.0, 0.0, 0.5, 2.0])
with mx.engine.debug():
    try:
        mx.nd.Custom(x, op_type="scaled_tanh").asnumpy()
        raise RuntimeError("debug mode missed the write")
    except mx.MXNBError as error:
        caught = error
print(str(caught)[:400])
assert "const input 'data'" in str(caught)
assert (x.asnumpy() == [-3.0, -1.0, 0.0, 0.5, 2.0]).all()

# %% [markdown]
# The fix: compute into a new array (`self.slope * x`). Re-running the cell that defines the
# class is all it takes — `@op.register` replaces the earlier definition.


# %%
class ScaledTanh(op.CustomOp):  # noqa: F811 - the second draft replaces the first
    """y = A * tanh(S * x) — second draft (bug 1 fixed)."""

    def __init__(self, amplitude, slope):
        super().__init__()
        self.amplitude, self.slope = amplitude, slope

    def forward(self, is_train, req, in_data, out_data, aux):
        self.assign(out_data[0], req[0], self.amplitude * mx.nd.tanh(self.slope * in_data[0]))

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        y = out_data[0] / self.amplitude
        local = self.amplitude * (1 - y * y)  # BUG 2 is still here
        self.assign(in_grad[0], req[0], out_grad[0] * local)


x = mx.nd.array([-3.0, -1.0, 0.0, 0.5, 2.0])
with mx.engine.debug():
    y = mx.nd.Custom(x, op_type="scaled_tanh")
    print("y =", y.asnumpy(), " x =", x.asnumpy())

# %% [markdown]
# ## 3. Bug 2, caught by the gradient check
#
# `check_numeric_gradient` runs forward at `x ± ε/2` and compares the difference quotient with
# what backward returns, projected on a random direction. Parameters of a custom op are passed
# like any op's (`op_type` included):

# %%
points = rng.uniform(-2, 2, size=(4, 6))
params = {"op_type": "scaled_tanh"}
try:
    check_numeric_gradient("Custom", [points], params=params)
    raise RuntimeError("the gradient check missed the bug")
except AssertionError as error:
    caught = error
print(caught)

# %% [markdown]
# The backward values are `1/S = 1.5` times too large everywhere — the missing slope factor.
# Third draft, and a clean check:


# %%
class ScaledTanh(op.CustomOp):  # noqa: F811
    """y = A * tanh(S * x) — third draft: correct."""

    def __init__(self, amplitude, slope):
        super().__init__()
        self.amplitude, self.slope = amplitude, slope

    def forward(self, is_train, req, in_data, out_data, aux):
        self.assign(out_data[0], req[0], self.amplitude * mx.nd.tanh(self.slope * in_data[0]))

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        y = out_data[0] / self.amplitude
        local = self.amplitude * self.slope * (1 - y * y)
        self.assign(in_grad[0], req[0], out_grad[0] * local)


check_numeric_gradient("Custom", [points], params=params)
check_numeric_gradient("Custom", [points], params={**params, "amplitude": "1.0", "slope": "3.0"})
print("gradient matches central differences (two parameter settings)")

# %% [markdown]
# ## 4. In a symbol
#
# `mx.sym.Custom(data=..., op_type=...)` puts the op in a graph like any other; shape
# inference calls our `infer_shape`. A small classifier, its gradient checked end to end
# through the executor:


# %%
def classifier():
    """data -> fc1 (16) -> scaled_tanh -> fc2 (3)."""
    data = mx.sym.Variable("data")
    hidden = mx.sym.FullyConnected(data, num_hidden=16, name="fc1")
    activated = mx.sym.Custom(data=hidden, op_type="scaled_tanh", name="stanh")
    return mx.sym.FullyConnected(activated, num_hidden=3, name="fc2")


net = classifier()
arg_shapes, out_shapes, _ = net.infer_shape(data=(5, 8))
print(dict(zip(net.list_arguments(), arg_shapes)), "->", out_shapes)
widgets.plot_network(net, shape={"data": (5, 8)})

# %% [markdown]
# The whole network's gradient, checked through the executor:

# %%
location = {
    name: rng.standard_normal(shape) * 0.5 for name, shape in zip(net.list_arguments(), arg_shapes)
}
gradients = check_numeric_gradient(net, location)
print("checked:", sorted(gradients))

# %% [markdown]
# And the imperative path agrees with the executor — `autograd` records the custom op as one
# node and calls our backward:

# %%
exe = net.simple_bind(mx.cpu(), data=(5, 8), grad_req="write")
for name, value in location.items():
    exe.arg_dict[name][:] = value.astype(np.float32)
exe.forward(is_train=True)
head = rng.standard_normal((5, 3)).astype(np.float32)
exe.backward(mx.nd.array(head))

inputs = {name: mx.nd.array(value.astype(np.float32)) for name, value in location.items()}
for array in inputs.values():
    array.attach_grad()
with mx.autograd.record():
    h = mx.nd.FullyConnected(
        inputs["data"], inputs["fc1_weight"], inputs["fc1_bias"], num_hidden=16
    )
    out = mx.nd.FullyConnected(
        mx.nd.Custom(h, op_type="scaled_tanh"),
        inputs["fc2_weight"],
        inputs["fc2_bias"],
        num_hidden=3,
    )
out.backward(mx.nd.array(head))
for name in ("data", "fc1_weight"):
    assert_almost_equal(
        exe.grad_dict[name].asnumpy(), inputs[name].grad.asnumpy(), rtol=1e-4, atol=1e-5
    )
print("executor and autograd gradients agree")

# %% [markdown]
# ### What the engine sees
#
# To the engine, the custom op is one op (`stanh`, `stanh_backward`) reading and writing the
# executor's storage vars. Inside, our Python code pushes *more* engine ops (`tanh`,
# `_mul_scalar`, ...) and the custom op waits for the arrays it wrote before it completes.
# A worker that waits does not sit idle: it helps run ready ops (the `cpu(0)/help` lane), so
# nesting cannot deadlock even with every worker busy. (`mx.engine.bulk(0)`: the executor
# pushes each step as its own engine op, not grouped in bulk segments, notebook 09.)

# %%
exe.forward(is_train=True)
mx.nd.waitall()
with mx.engine.bulk(0), mx.engine.trace() as custom_trace:
    exe.forward(is_train=True)
    exe.backward(mx.nd.array(head))
    mx.nd.waitall()

pushes = custom_trace.events_of(OpPush)
begin = {event.op_id: event.time for event in custom_trace.events_of(OpStart)}
finish = {event.op_id: event.time for event in custom_trace.events_of(OpEnd)}
(stanh,) = [push for push in pushes if push.name == "stanh"]
nested = [
    push
    for push in pushes
    if begin[stanh.op_id] <= push.time <= finish[stanh.op_id] and not push.name.startswith("delete")
]
print("pushed from inside stanh:", [push.name for push in nested])
assert nested and all(finish[push.op_id] <= finish[stanh.op_id] for push in nested)
widgets.Timeline(custom_trace)

# %% [markdown]
# ## 5. What the declaration costs in memory
#
# By default a custom op declares that backward reads **everything**: `out_grad`, the inputs
# and the outputs. So the planner keeps `fc1_output` (our op's input) alive until our
# backward runs. But our backward only reads `out_grad` and the **output**. Say so:


# %%
def plan_of(symbol, batch=64):
    plan = mx.executor.plan_memory(symbol, {"data": (batch, 8)}, grad_req="write")
    plan.check()
    return plan


before = plan_of(net)


@op.register("scaled_tanh")
class ScaledTanhProp(ScaledTanhProp):
    """scaled_tanh, declaring that backward reads only out_grad and the output."""

    def declare_backward_dependency(self, out_grad, in_data, out_data):
        return [out_grad[0], out_data[0]]


net = classifier()  # a symbol holds the property it was built with: build it again
after = plan_of(net)
for label, plan in (("declares everything", before), ("out_grad + output", after)):
    entry = plan.entry("fc1_output")
    print(
        f"{label:20s} fc1_output alive steps {entry.first_step}..{entry.last_step}  "
        f"planned {plan.internal_bytes:,} B"
    )
assert after.entry("fc1_output").last_step < before.entry("fc1_output").last_step
assert after.internal_bytes < before.internal_bytes
check_numeric_gradient(net, location)  # still correct: backward never needed the input
print("the narrowed declaration passes the gradient check")

# %% [markdown]
# ## 6. Promoting the prototype: in place
#
# MXNet's Python custom ops never run in place. Once the prototype is right, promote it — here
# to a SimpleOp (notebook 03) whose gradient uses only the output (`GradUses.OUTPUT`) and whose
# forward may overwrite its input (`IN_OUT`). Because backward does not need the input, the
# planner now lets the output take the input's storage **even in training**:


# %%
def scaled_tanh_kernel(src, env, ret, req, run_ctx):
    op.assign(ret, req, A * env.xp.tanh(S * src))


def scaled_tanh_grad(out_grad, out_value, env, in_grad, req, run_ctx):
    y = out_value / A
    op.assign(in_grad, req, out_grad * A * S * (1 - y * y))


(
    op.simple_op("scaled_tanh_simple")
    .set_function(scaled_tanh_kernel, inplace=op.SimpleOpInplace.IN_OUT)
    .set_gradient(scaled_tanh_grad, uses=op.GradUses.OUTPUT, inplace=op.SimpleOpInplace.OUT_IN)
)
check_numeric_gradient("scaled_tanh_simple", [points])
hidden = mx.sym.FullyConnected(mx.sym.Variable("data"), num_hidden=16, name="fc1")
promoted = mx.sym.FullyConnected(
    mx.sym.scaled_tanh_simple(hidden, name="stanh"), num_hidden=3, name="fc2"
)
final = plan_of(promoted)
print("in-place pairs:", final.inplace_pairs)
print(
    f"planned bytes: custom op, default {before.internal_bytes:,} B -> narrowed "
    f"{after.internal_bytes:,} B -> SimpleOp in place {final.internal_bytes:,} B"
)
assert ("fc1_output", "stanh_output") in final.inplace_pairs
assert final.internal_bytes < after.internal_bytes

# %% [markdown]
# ## 7. Writing the math once: a fused kernel for the GPU
#
# On a GPU every array expression in a kernel is a launch of its own: `A * xp.tanh(S * src)` is
# three. `mxnb.operator.fused.FusedMap` takes the formula as statements that are both Python and
# CUDA C. On a GPU they become **one** `cupy.ElementwiseKernel`, checked against the plain path on
# its first call (and dropped, with a warning, if it does not compile or disagrees); on the CPU
# numpy runs the same statements, computed into the output. BatchNorm is built this way.

# %%
from mxnb.operator.fused import FusedMap  # noqa: E402
from mxnb.testing.fake_cupy import FakeCupy  # noqa: E402

forward = FusedMap("scaled_tanh", ("x", "a", "s"), ("y",), "y = a * tanh(s * x)")
backward = FusedMap(
    "scaled_tanh_grad", ("dy", "y", "a", "s"), ("dx",),
    "t = y / a\ndx = dy * a * s * (1 - t * t)",
)  # fmt: skip
print("the CUDA C a GPU compiles:\n" + backward.source())
(y,) = forward(np, points, A, S)
(dx,) = backward(np, np.ones_like(points), y, A, S)
assert np.allclose(y, A * np.tanh(S * points))
assert np.allclose(dx, A * S * (1 - np.tanh(S * points) ** 2))
# FakeCupy: cupy's kernel classes on numpy (no GPU here), counting what a GPU would launch
gpu_like = FakeCupy()
for _ in range(3):
    forward(gpu_like, points, A, S)
print(f"three calls on a GPU: {gpu_like.launches} launches (the first also ran the plain path "
      f"to verify the kernel, {gpu_like.calls} array calls in all)")  # fmt: skip
assert gpu_like.launches == 3

# %% [markdown]
# The optimizer's updates are written the same way. `sgd_mom_update` with gradient clipping is
# three statements: one kernel on a GPU (with `clip`, which CUDA's math library lacks, defined in
# the kernel's preamble). On the CPU, numpy runs them a block at a time for a large weight, so no
# temporary of the weight's size is made, and as one Python function of array expressions for a
# small one (a bias), where that is faster.

# %%
from mxnb.operator.registry import get  # noqa: E402
from mxnb.testing.fake_cupy import fake_virtual_gpus  # noqa: E402

update = get("sgd_mom_update").create_property(lr=0.1, momentum=0.9, clip_gradient=1.0)
print("the statements:\n" + update.statements())
with fake_virtual_gpus() as gpu_like:
    weight, grad, mom = (mx.nd.ones((4, 3), ctx=mx.gpu(0)) for _ in range(3))
    for step in range(3):
        mx.nd.sgd_mom_update(weight, grad, mom, lr=0.1, momentum=0.9, clip_gradient=1.0, out=weight)
    weight.wait_to_read()
kernel = update.fused_map()  # the map the three calls ran: one per text
print("\nthe CUDA C a GPU compiles:\n" + kernel.preamble() + "\n" + kernel.source())
print("\nthe Python numpy runs on a small weight:\n" + kernel.python_source)
print(f"\nthree updates on a GPU: {gpu_like.launches} kernel launches")
assert gpu_like.launches == 3

# %% [markdown]
# **Summary.** Prototype in Python against NDArrays; run under `mx.engine.debug()` to catch
# writes to inputs; gate every draft on `check_numeric_gradient`; then declare exactly what
# backward reads — the planner turns an honest declaration into memory.
