# %% [markdown]
# # 13 — Exercises that grade themselves
#
# The other notebooks explain; this one asks you to *do*. Each exercise shows its task, gives
# you a cell of starting code, and a check cell that grades it with `mx.exercises.check`.
# A race cannot be graded by running the code once, so the concurrency exercises are graded
# on **every legal schedule**: the step engine enumerates the orders the dependency rule
# allows (bounded; large programs are sampled, and the result says so), each result is
# compared with the sequential one, and what each op touched (watched as debug mode does)
# is compared with the vars it declared. A failing check shows a **counterexample**: the
# ops in the order they ran, drawn as a timeline with the racing ops outlined in red.
#
# **What you will do**
#
# 1. five engine exercises: declare `const_vars` / `mutate_vars` (a read-modify-write, two
#    parallel readers, a reduction, an async op and its callback, a delete after readers);
# 2. an NDArray loop without a wait inside it;
# 3. backward dependencies that make an in-place ReLU legal;
# 4. a custom op whose gradient passes `check_numeric_gradient`;
# 5. a memory planner, scored in bytes against mxnb's plan and MXNet 1.9.1's;
# 6. find and fix a race;
# 7. and watch recomputation with the `RecomputeStepper`.
#
# The cells hold the **starting code**: run the notebook as it is and every check shows what
# is still wrong. Edit a cell, re-run it and its check. Teachers find the reference
# solutions with `mx.exercises.solution(name)` (the test suite runs this notebook with them
# filled in, and every check passes).

# %%
import tempfile

from IPython.display import Image, display

import mxnb as mx

print(mx.exercises.list())
results = {}  # exercise name -> the Result of its latest check

# %% [markdown]
# ## How the engine exercises work
#
# Each engine exercise is a function `program(eng, ctx, v, ops)` that pushes ops:
#
# * `eng` takes `push_sync`, `push_async` and `push_delete` as `mx.engine.get()` does;
# * `v` holds the engine vars by name (`v.x`), one per array the ops share;
# * `ops` holds the op functions (`ops.double(run_ctx)`), and `ops.device` for the async one.
#
# The op functions are given; you choose each push's `const_vars` (vars it only reads) and
# `mutate_vars` (vars it writes). `check` pushes your program on a fresh step engine, runs
# it in every order the dependency rule allows, and compares each result with the reference
# run one op at a time.

# %% [markdown]
# ## Engine 1: a read-modify-write

# %%
display(mx.exercises.show("engine_read_modify_write"))


# %%
# exercise: engine_read_modify_write
def program(eng, ctx, v, ops):
    """double, add_one, report: fill in the vars each op reads (const) and writes (mutate)."""
    eng.push_sync(ops.double, ctx, const_vars=[], mutate_vars=[], name="double")
    eng.push_sync(ops.add_one, ctx, const_vars=[], mutate_vars=[], name="add_one")
    eng.push_sync(ops.report, ctx, const_vars=[], mutate_vars=[], name="report")


# %%
results["engine_read_modify_write"] = mx.exercises.check("engine_read_modify_write", program)
display(results["engine_read_modify_write"])

# %% [markdown]
# ## Engine 2: two readers in parallel

# %%
display(mx.exercises.show("engine_parallel_readers"))


# %%
# exercise: engine_parallel_readers
def program(eng, ctx, v, ops):
    """fill x; square and negate read it (in parallel, please); combine their results."""
    eng.push_sync(ops.fill, ctx, const_vars=[], mutate_vars=[], name="fill")
    eng.push_sync(ops.square, ctx, const_vars=[], mutate_vars=[], name="square")
    eng.push_sync(ops.negate, ctx, const_vars=[], mutate_vars=[], name="negate")
    eng.push_sync(ops.combine, ctx, const_vars=[], mutate_vars=[], name="combine")


# %%
results["engine_parallel_readers"] = mx.exercises.check("engine_parallel_readers", program)
display(results["engine_parallel_readers"])

# %% [markdown]
# ## Engine 3: a reduction into a shared accumulator

# %%
display(mx.exercises.show("engine_reduction"))


# %%
# exercise: engine_reduction
def program(eng, ctx, v, ops):
    """Three loads, a zero, three adds into acc, a report."""
    for k in (1, 2, 3):
        load = getattr(ops, f"load_{k}")
        eng.push_sync(load, ctx, const_vars=[], mutate_vars=[], name=f"load_{k}")
    eng.push_sync(ops.zero, ctx, const_vars=[], mutate_vars=[], name="zero")
    for k in (1, 2, 3):
        add = getattr(ops, f"add_{k}")
        eng.push_sync(add, ctx, const_vars=[], mutate_vars=[], name=f"add_{k}")
    eng.push_sync(ops.report, ctx, const_vars=[], mutate_vars=[], name="report")


# %%
results["engine_reduction"] = mx.exercises.check("engine_reduction", program)
display(results["engine_reduction"])

# %% [markdown]
# ## Engine 4: an async op and its callback

# %%
display(mx.exercises.show("engine_async_callback"))


# %%
# exercise: engine_async_callback
def program(eng, ctx, v, ops):
    """fill src; copy it on the device (async); consume the copy."""

    def copy(run_ctx, on_complete):
        ops.device.submit(ops.copy_job)  # the job runs later, on the device
        on_complete()  # is the copy done here?

    eng.push_sync(ops.fill, ctx, const_vars=[], mutate_vars=[], name="fill")
    eng.push_async(copy, ctx, const_vars=[], mutate_vars=[], name="copy")
    eng.push_sync(ops.consume, ctx, const_vars=[], mutate_vars=[], name="consume")


# %%
results["engine_async_callback"] = mx.exercises.check("engine_async_callback", program)
display(results["engine_async_callback"])

# %% [markdown]
# ## Engine 5: a delete that waits for its readers

# %%
display(mx.exercises.show("engine_delete_after_readers"))


# %%
# exercise: engine_delete_after_readers
def program(eng, ctx, v, ops):
    """fill x, two readers, then free x."""
    eng.push_sync(ops.fill, ctx, const_vars=[], mutate_vars=[v.x], name="fill")
    eng.push_sync(ops.reader_1, ctx, const_vars=[v.x], mutate_vars=[v.a], name="reader_1")
    eng.push_sync(ops.reader_2, ctx, const_vars=[v.x], mutate_vars=[v.b], name="reader_2")
    ops.free(None)  # frees x now: are the readers done?


# %%
results["engine_delete_after_readers"] = mx.exercises.check("engine_delete_after_readers", program)
display(results["engine_delete_after_readers"])

# %% [markdown]
# ## NDArray: a loop without a wait inside

# %%
display(mx.exercises.show("ndarray_loop_without_wait"))


# %%
# exercise: ndarray_loop_without_wait
def loop(x, steps):
    """x <- 0.5 x + 1, steps times; history: the mean after each step."""
    history = []
    for _ in range(steps):
        x = 0.5 * x + 1
        history.append(x.mean().asscalar())
    return x, history


# %%
results["ndarray_loop_without_wait"] = mx.exercises.check("ndarray_loop_without_wait", loop)
display(results["ndarray_loop_without_wait"])

# %% [markdown]
# ## Operators: backward dependencies for an in-place ReLU

# %%
display(mx.exercises.show("operator_inplace_relu"))


# %%
# exercise: operator_inplace_relu
def declare_backward_dependency(out_grad, in_data, out_data):
    """What the ReLU's backward reads (MXNet's default: everything)."""
    return [*out_grad, *in_data, *out_data]


# %%
results["operator_inplace_relu"] = mx.exercises.check(
    "operator_inplace_relu", declare_backward_dependency
)
display(results["operator_inplace_relu"])

# %% [markdown]
# ## CustomOp: a gradient that passes the numeric check

# %%
display(mx.exercises.show("customop_gradient"))


# %%
# exercise: customop_gradient
class Softplus(mx.operator.CustomOp):
    """y = log(1 + exp(x))."""

    def forward(self, is_train, req, in_data, out_data, aux):
        self.assign(out_data[0], req[0], mx.nd.log(1 + mx.nd.exp(in_data[0])))

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        self.assign(in_grad[0], req[0], out_grad[0])  # the derivative is missing


# %%
results["customop_gradient"] = mx.exercises.check("customop_gradient", Softplus)
display(results["customop_gradient"])

# %% [markdown]
# ## Memory planning: write the planner

# %%
display(mx.exercises.show("memory_planner"))


# %%
# exercise: memory_planner
def plan(entries):
    """Every entry its own storage (legal, and the most memory there is)."""
    return {entry.name: index for index, entry in enumerate(entries)}


# %%
results["memory_planner"] = mx.exercises.check("memory_planner", plan)
display(results["memory_planner"])

# %% [markdown]
# ## Debugging: find and fix the race

# %%
display(mx.exercises.show("debugging_find_the_race"))


# %%
# exercise: debugging_find_the_race
def program(eng, ctx, v, ops):
    """load -> normalize (in place) -> forward, stats -> log.  One declaration is wrong."""
    eng.push_sync(ops.load, ctx, const_vars=[], mutate_vars=[v.batch], name="load")
    eng.push_sync(ops.normalize, ctx, const_vars=[v.batch], mutate_vars=[], name="normalize")
    eng.push_sync(ops.forward, ctx, const_vars=[v.batch], mutate_vars=[v.loss], name="forward")
    eng.push_sync(ops.stats, ctx, const_vars=[v.batch], mutate_vars=[v.mean], name="stats")
    eng.push_sync(ops.log, ctx, const_vars=[v.loss], mutate_vars=[v.logged], name="log")


# %%
results["debugging_find_the_race"] = mx.exercises.check("debugging_find_the_race", program)
display(results["debugging_find_the_race"])

# %% [markdown]
# ## Your scores
#
# One line per exercise: ✓ passed, ✗ not yet (and why).

# %%
for name, result in results.items():
    mark = "✓" if result.passed else "✗"
    print(f"{mark} {name:<30} {result.reason or 'passed'}")
assert list(results) == mx.exercises.list()

# %% [markdown]
# ## Watching recomputation: the RecomputeStepper
#
# Training keeps every forward value backward reads alive from its forward step to its
# backward reader. `RecomputeStepper(executor)` walks an executor's forward and backward
# and shows, at each step, the entries alive under the plain plan, MXNet's `'mirror'` rule
# (cheap values dropped after forward and computed again in backward) and a byte budget.
# Recomputed entries are outlined in red in the frame where they come back. The bytes shown
# are the plans' own (`plan.live_bytes()`).

# %%
from mxnb.executor import zoo

exe = zoo.build("lenet").simple_bind(mx.cpu(), grad_req="write", **zoo.input_shapes("lenet", 32))
stepper = mx.exercises.RecomputeStepper(exe)
first_back = next(
    k for k, frame in enumerate(stepper.frames()) if any(f.recomputed for f in frame.values())
)
stepper.goto(first_back)
print(stepper.to_text())
for label, frame in stepper.frame().items():
    assert frame.live_bytes == stepper.plans[label].live_bytes()[frame.index]
display(stepper)

# %% [markdown]
# In JupyterLab, `stepper.widget()` gives a slider over the frames. Headless, the walk
# exports as PNG frames or an animated GIF:

# %%
folder = tempfile.mkdtemp()
gif = stepper.to_gif(f"{folder}/lenet_recompute.gif", dpi=45)
display(Image(filename=gif))
