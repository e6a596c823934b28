# %% [markdown]
# # 03 — Operators: `Operator` / `OperatorProperty`, and SimpleOp
#
# MXNet splits an operator in two. The **`Operator`** does the arithmetic on arrays the
# system hands it. The **`OperatorProperty`** tells the system everything it must know
# *without running anything*: argument names, output shapes, and — the point of this
# chapter — **which values backward needs**. The memory planner believes that declaration:
# what backward does not need may be freed or overwritten as soon as forward is done.
#
# **What you will learn**
#
# 1. how to write and register an operator with `Operator` + `OperatorProperty`
#    (a FullyConnected-like and a Pooling-like one), and use it from `mx.nd` and `mx.sym`;
# 2. why their backward dependencies differ, and what that changes in the memory plan
#    (an in-place ReLU after one, not after the other);
# 3. how the system enforces the declaration: undeclared values arrive as `None`;
# 4. how SimpleOp turns one function and its gradient into a full operator — the smooth L1
#    of MXNet's notes — and how `check_numeric_gradient` catches a wrong gradient.

# %%
import numpy as np

import mxnb as mx
from mxnb import operator as op
from mxnb import widgets
from mxnb.engine.tracing import OpPush
from mxnb.testing import assert_almost_equal, check_numeric_gradient

rng = np.random.default_rng(0)

# %% [markdown]
# ## 1. A FullyConnected-like operator
#
# `y = x Wᵀ + b`. The property declares a typed parameter (`num_hidden`), the argument
# names (the symbol API turns `weight` and `bias` into variables `fc_weight`, `fc_bias`),
# and the shape rule: given `data`, it *completes* the shapes of `weight` and `bias`.
#
# Backward computes `dx = dy W`, `dW = dyᵀ x`, `db = Σ dy`. It reads `dy`, `x` and `W` —
# **never `y`**. So `declare_backward_dependency` returns `[out_grad, data, weight]`.


# %%
@op.register("MyFullyConnected")
class MyFullyConnectedProp(op.OperatorProperty):
    """y = data · weightᵀ + bias (like MXNet's FullyConnected, always with a bias)."""

    num_hidden = op.Param(int, low=1, doc="number of output features")

    def list_arguments(self):
        return ["data", "weight", "bias"]

    def infer_shape(self, in_shape):
        data = in_shape[0]
        if data is None:
            return None  # not enough known yet; the symbol infers again later
        features = int(np.prod(data[1:]))
        weight = (self.num_hidden, features)
        if in_shape[1] is not None and tuple(in_shape[1]) != weight:
            raise self.shape_error(
                f"weight has shape {tuple(in_shape[1])} but data {tuple(data)} gives "
                f"{features} input features; pass weight of shape {weight}"
            )
        return [tuple(data), weight, (self.num_hidden,)], [(data[0], self.num_hidden)], []

    def declare_backward_dependency(self, out_grad, in_data, out_data):
        return [out_grad[0], in_data[0], in_data[1]]  # dy, x, W — not y

    def create_operator(self, ctx):
        return MyFullyConnected()


class MyFullyConnected(op.Operator):
    """The arithmetic of MyFullyConnected on raw numpy arrays."""

    def forward(self, ctx, in_data, req, out_data, aux):
        x, weight, bias = in_data
        x = x.reshape(x.shape[0], -1)
        op.assign(out_data[0], req[0], x @ weight.T + bias)

    def backward(self, ctx, out_grad, in_data, out_data, req, in_grad, aux):
        dy = out_grad[0]
        x, weight, _ = in_data
        assert out_data[0] is None, "y was not declared, so it is not handed over"
        op.assign(in_grad[0], req[0], (dy @ weight).reshape(x.shape))
        op.assign(in_grad[1], req[1], dy.T @ x.reshape(x.shape[0], -1))
        op.assign(in_grad[2], req[2], dy.sum(axis=0))


# %% [markdown]
# Registering makes the operator available imperatively (`mx.nd`) and symbolically
# (`mx.sym`) at once. Parameters are parsed and checked like MXNet's (`'4'` is accepted,
# `0` is refused with the field named):

# %%
x = mx.nd.array(rng.standard_normal((2, 3)).astype(np.float32))
w = mx.nd.array(rng.standard_normal((4, 3)).astype(np.float32))
b = mx.nd.array(np.arange(4, dtype=np.float32))
y = mx.nd.MyFullyConnected(x, w, b, num_hidden="4")
assert_almost_equal(y.asnumpy(), x.asnumpy() @ w.asnumpy().T + b.asnumpy())
print(y.asnumpy())

try:
    mx.nd.MyFullyConnected(x, w, b, num_hidden=0)
except mx.MXNBError as error:
    print(type(error).__name__, "-", error)

# %% [markdown]
# In a symbol, only `data` needs a shape; the property fills in the rest:

# %%
data = mx.sym.Variable("data")
fc = mx.sym.MyFullyConnected(data, num_hidden=5, name="fc")
arg_shapes, out_shapes, _ = fc.infer_shape(data=(8, 3, 4))
print(dict(zip(fc.list_arguments(), arg_shapes)), out_shapes)
assert dict(zip(fc.list_arguments(), arg_shapes))["fc_weight"] == (5, 12)

# %% [markdown]
# ## 2. A Pooling-like operator
#
# 2×2 max pooling with stride 2. Its backward routes `dy` to the position of the maximum
# in each window; to find that position it compares `x` with `y`. So it reads
# **`dy`, `x` and `y`** — the output too.


# %%
@op.register("MyMaxPool")
class MyMaxPoolProp(op.OperatorProperty):
    """2x2 max pooling, stride 2, over NCHW data (like Pooling(kernel=(2,2), stride=(2,2)))."""

    def infer_shape(self, in_shape):
        data = in_shape[0]
        if data is None:
            return None
        if len(data) != 4 or data[2] % 2 or data[3] % 2:
            raise self.shape_error(
                f"data has shape {tuple(data)}; expected NCHW with even height and width"
            )
        n, c, h, w = data
        return [tuple(data)], [(n, c, h // 2, w // 2)], []

    def declare_backward_dependency(self, out_grad, in_data, out_data):
        return [out_grad[0], in_data[0], out_data[0]]  # dy, x and y

    def create_operator(self, ctx):
        return MyMaxPool()


class MyMaxPool(op.Operator):
    """The arithmetic of MyMaxPool: windows as a reshaped view."""

    def forward(self, ctx, in_data, req, out_data, aux):
        x = in_data[0]
        n, c, h, w = x.shape
        windows = x.reshape(n, c, h // 2, 2, w // 2, 2)
        op.assign(out_data[0], req[0], windows.max(axis=(3, 5)))

    def backward(self, ctx, out_grad, in_data, out_data, req, in_grad, aux):
        x, y, dy = in_data[0], out_data[0], out_grad[0]
        n, c, h, w = x.shape
        windows = x.reshape(n, c, h // 2, 2, w // 2, 2)
        is_max = windows == y[:, :, :, None, :, None]
        op.assign(in_grad[0], req[0], (is_max * dy[:, :, :, None, :, None]).reshape(x.shape))


# %% [markdown]
# Both operators pass the numeric gradient check (central differences of the forward,
# projected on a random direction; see section 4). Random inputs have no ties inside a
# window, so max pooling is differentiable there.

# %%
check_numeric_gradient(
    "MyFullyConnected",
    [rng.standard_normal((3, 4)), rng.standard_normal((2, 4)), rng.standard_normal(2)],
    params={"num_hidden": 2},
)
check_numeric_gradient("MyMaxPool", [rng.standard_normal((2, 3, 4, 4))])
print("both gradients match central differences")

# %% [markdown]
# ## 3. What the declaration changes: the memory plan
#
# Put a ReLU after each operator. ReLU's own backward needs only its output, and it may
# write its output **in place** over its input — *if nothing else still needs that input*.
#
# ```
#  data -> MyFullyConnected -> relu        data -> MyMaxPool -> relu
#          (backward: dy, x, W)                    (backward: dy, x, y)
# ```
#
# After the FC, nobody needs `fc_output` once ReLU has read it, so ReLU overwrites it.
# After the pooling, the pooling's backward still needs `pool_output`, so ReLU must write
# elsewhere. `mx.executor.plan_memory` plans forward + backward and reports the decision.

# %%
data = mx.sym.Variable("data")
after_fc = mx.sym.Activation(
    mx.sym.MyFullyConnected(data, num_hidden=64, name="fc"), act_type="relu", name="relu"
)
after_pool = mx.sym.Activation(mx.sym.MyMaxPool(data, name="pool"), act_type="relu", name="relu")

plan_fc = mx.executor.plan_memory(after_fc, {"data": (32, 128)}, grad_req="write")
plan_pool = mx.executor.plan_memory(after_pool, {"data": (32, 8, 16, 16)}, grad_req="write")
for plan in (plan_fc, plan_pool):
    plan.check()  # no two live entries share storage
    print(plan.inplace_pairs)

assert ("fc_output", "relu_output") in plan_fc.inplace_pairs
assert plan_fc.entry("relu_output").storage_id == plan_fc.entry("fc_output").storage_id
assert ("pool_output", "relu_output") not in plan_pool.inplace_pairs
assert plan_pool.entry("relu_output").storage_id != plan_pool.entry("pool_output").storage_id

# %% [markdown]
# The lifetimes say why: `fc_output` is last read at step 1 (ReLU's forward), while
# `pool_output` is read again by the pooling's backward, the last step.

# %%
for plan, name in ((plan_fc, "fc_output"), (plan_pool, "pool_output")):
    entry = plan.entry(name)
    print(
        f"{name:12s} written at step {entry.first_step}, last read at step "
        f"{entry.last_step} ({plan.steps[entry.last_step]})"
    )
assert plan_fc.entry("fc_output").last_step == 1
assert plan_pool.entry("pool_output").last_step == len(plan_pool.steps) - 1

# %% [markdown]
# The same decisions, seen by the engine. Bind each network and run forward + backward under
# the step engine (nothing runs before `waitall()`, so every dependency is recorded), with
# the vars drawn as nodes: each storage block the planner made is one engine var, named after
# the block and the entries it holds (`storage0 (fc_output +1)`: `fc_output` and one more
# share block 0), and `name@n` is the var after its n-th write.
# After the FC, `relu` writes `storage0` again (`storage0@2`): the block `fc` wrote, in place.
# After the pooling, `pool_backward` *reads* the pooling's output block `storage0`, so `relu`
# writes a block of its own. (`mx.engine.bulk(0)` makes the executor push every step as its
# own engine op; by default it groups consecutive steps into one *bulk segment*, notebook 09.)


# %%
def forward_backward_trace(net, shape):
    """Bind ``net`` and record one forward + backward under the step engine."""
    mx.engine.set_engine("step")
    with mx.engine.bulk(0), mx.engine.trace() as trace:
        exe = net.simple_bind(mx.cpu(), data=shape, grad_req="write")
        exe.arg_dict["data"][:] = rng.standard_normal(shape).astype(np.float32)
        exe.forward(is_train=True)
        exe.backward()  # head gradient: ones
        mx.nd.waitall()
    mx.engine.set_engine("threaded_per_device")
    return trace


fc_trace = forward_backward_trace(after_fc, (32, 128))
pool_trace = forward_backward_trace(after_pool, (8, 4, 8, 8))
ops = {push.name: push for push in fc_trace.events_of(OpPush)}
assert ops["relu"].mutate_vars == ops["fc"].mutate_vars  # relu overwrote fc's block
ops = {push.name: push for push in pool_trace.events_of(OpPush)}
assert set(ops["pool"].mutate_vars) <= set(ops["pool_backward"].const_vars)  # backward reads y
assert ops["relu"].mutate_vars != ops["pool"].mutate_vars
widgets.DependencyGraph(fc_trace, last=5, show_vars=True)

# %%
widgets.DependencyGraph(pool_trace, last=5, show_vars=True)

# %% [markdown]
# The declaration is a contract, and the system holds you to it: backward receives only
# what was declared, every other slot is `None` (that is the `assert` inside
# `MyFullyConnected.backward`). An operator that under-declares fails loudly instead of
# silently reading memory the planner already gave to someone else. The same symbol runs
# forward and backward through the executor:

# %%
exe = after_fc.simple_bind(mx.cpu(), data=(32, 128), grad_req="write")
for name, array in exe.arg_dict.items():
    array[:] = rng.standard_normal(array.shape).astype(np.float32) * 0.1
exe.forward(is_train=True)
exe.backward(mx.nd.ones((32, 64)))
x, w, b = (exe.arg_dict[k].asnumpy() for k in ("data", "fc_weight", "fc_bias"))
relu_mask = (x @ w.T + b) > 0
assert_almost_equal(exe.outputs[0].asnumpy(), np.maximum(x @ w.T + b, 0), rtol=1e-4, atol=1e-5)
assert_almost_equal(exe.grad_dict["fc_bias"].asnumpy(), relu_mask.sum(axis=0), rtol=1e-5, atol=1e-5)
print("executor forward/backward agree with numpy")

# %% [markdown]
# ## 4. SimpleOp: smooth L1 from one function and its gradient
#
# Most operators are "one array in, one array out, plus a scalar". SimpleOp (MXNet's
# `MXNET_REGISTER_SIMPLE_OP`) builds the whole `OperatorProperty` from a forward kernel and
# a gradient kernel. MXNet's notes use smooth L1 (from Fast R-CNN):
#
# $$f(x) = \begin{cases} \tfrac12 (\sigma x)^2 & |x| < 1/\sigma^2 \\ |x| - \tfrac{1}{2\sigma^2} & \text{otherwise}\end{cases}
# \qquad f'(x) = \begin{cases} \sigma^2 x & |x| < 1/\sigma^2 \\ \operatorname{sign}(x) & \text{otherwise}\end{cases}$$
#
# The gradient reads the **input** (`GradUses.INPUT`) — that is its backward dependency.
# Forward may write over its input (`IN_OUT`), backward may write `dx` over `dy` (`OUT_IN`).
# `set_enable_scalar` gives the op a `scalar` parameter (σ), seen by kernels as `env.scalar`.


# %%
def smooth_l1(src, env, ret, req, run_ctx):
    xp = env.xp  # numpy here; cupy on a real GPU
    sigma2 = env.scalar * env.scalar
    quadratic = 0.5 * sigma2 * src * src
    linear = xp.abs(src) - 0.5 / sigma2
    op.assign(ret, req, xp.where(xp.abs(src) < 1.0 / sigma2, quadratic, linear))


def smooth_l1_grad(out_grad, src, env, in_grad, req, run_ctx):
    xp = env.xp
    sigma2 = env.scalar * env.scalar
    local = xp.where(xp.abs(src) < 1.0 / sigma2, sigma2 * src, xp.sign(src))
    op.assign(in_grad, req, out_grad * local)


builder = (
    op.simple_op("my_smooth_l1")
    .set_function(smooth_l1, inplace=op.SimpleOpInplace.IN_OUT)
    .set_gradient(smooth_l1_grad, uses=op.GradUses.INPUT, inplace=op.SimpleOpInplace.OUT_IN)
    .set_enable_scalar(True)
    .describe("Smooth L1 loss of MXNet's notes (sigma as `scalar`).")
)
print(builder)

# %% [markdown]
# It is now an operator like any other, and it agrees with the library's `smooth_l1`
# (whose numerics match MXNet 1.9.1):

# %%
x = mx.nd.array([-2.0, -0.5, 0.0, 0.1, 3.0])
print(mx.nd.my_smooth_l1(x, scalar=1.0).asnumpy())
assert_almost_equal(
    mx.nd.my_smooth_l1(x, scalar=2.0).asnumpy(), mx.nd.smooth_l1(x, scalar=2.0).asnumpy()
)

# %% [markdown]
# `check_numeric_gradient` compares the gradient kernel with central differences
# `(f(x + ε/2) − f(x − ε/2)) / ε` of the forward kernel, in float64:

# %%
points = rng.uniform(-3, 3, size=(4, 5))
for sigma in (1.0, 2.0):
    check_numeric_gradient("my_smooth_l1", [points], params={"scalar": sigma})
print("gradient matches for sigma = 1 and 2")

# %% [markdown]
# Now the bug everyone writes once: forgetting σ² and the sign on the linear branch
# (`where(|x| < 1, x, 1)`). Re-running `set_gradient` re-registers the op (handy in a
# notebook). The check names the worst element, both values and the tolerance:


# %%
def smooth_l1_grad_wrong(out_grad, src, env, in_grad, req, run_ctx):
    xp = env.xp
    op.assign(in_grad, req, out_grad * xp.where(xp.abs(src) < 1.0, src, 1.0))


builder.set_gradient(smooth_l1_grad_wrong, uses=op.GradUses.INPUT)
try:
    check_numeric_gradient("my_smooth_l1", [points], params={"scalar": 1.0})
    raise RuntimeError("the wrong gradient was not caught")
except AssertionError as error:
    caught = error
print(type(caught).__name__, "-", caught)
assert "BACKWARD_data" in str(caught)

# %% [markdown]
# Put the right gradient back, and use the SimpleOp in a symbol, bound by the executor.
# Its `GradUses.INPUT` declaration keeps `fc_output` alive for backward — so, unlike the
# ReLU of section 3, the smooth L1 after the FC may **not** work in place:

# %%
builder.set_gradient(smooth_l1_grad, uses=op.GradUses.INPUT, inplace=op.SimpleOpInplace.OUT_IN)
check_numeric_gradient("my_smooth_l1", [points], params={"scalar": 1.0})

loss = mx.sym.my_smooth_l1(
    mx.sym.MyFullyConnected(data, num_hidden=64, name="fc"), scalar=1.0, name="loss"
)
plan = mx.executor.plan_memory(loss, {"data": (32, 128)}, grad_req="write")
plan.check()
print(plan.summary())
assert ("fc_output", "loss_output") not in plan.inplace_pairs
print(
    "\nthe same op, inference only (grad_req='null'):",
    mx.executor.plan_memory(loss, {"data": (32, 128)}, grad_req="null").inplace_pairs,
)

# %% [markdown]
# With no backward to feed (inference), nothing else reads `fc_output`, and the in-place
# option is taken.
#
# **Summary.** An `OperatorProperty` is a promise about data: which shapes come out and
# which values backward will read. The planner turns that promise into memory reuse; the
# executor enforces it by handing backward only what was declared; and
# `check_numeric_gradient` keeps the arithmetic honest.
