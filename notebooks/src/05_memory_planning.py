# %% [markdown]
# # 05 — Memory planning: in-place and co-share
#
# When a network is bound, every intermediate result (each layer's output, each gradient)
# needs memory. Giving each its own block is simple and wasteful. MXNet's executor plans
# instead, in topological order, with two strategies from its architecture notes:
#
# * **in-place** — an output takes its input's storage when the op allows it (ReLU, the
#   elementwise ops) and no one else still needs the input;
# * **co-share** — storage whose last reader has run goes back to a free pool, and a later
#   entry of a close enough size reuses it (best fit).
#
# **What you will learn**
#
# 1. how to read a memory plan: entries, lifetimes (steps), storage blocks, in-place pairs;
# 2. what each strategy saves, on an MLP, LeNet and ResNet-18;
# 3. how batch size and training vs inference change the plan, and why;
# 4. that storage reuse becomes real engine dependencies (write-after-read on a block);
# 5. how mxnb's plans compare with the figures MXNet 1.9.1 reports for the same graphs;
# 6. how recomputation trades compute for memory, and where each point of the trade-off lies.

# %%
import io
import json
import pathlib

import numpy as np
from IPython.display import Image, display

import mxnb as mx
from mxnb import widgets
from mxnb.engine.tracing import OpPush
from mxnb.executor import zoo


def mib(nbytes):
    """Bytes in MiB (2**20 bytes), the unit MXNet's "Total N MB allocated" uses."""
    return nbytes / 2**20


def show(figure):
    """Display a matplotlib Figure as a PNG (works with any matplotlib backend)."""
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=90, bbox_inches="tight")
    display(Image(data=buffer.getvalue()))


# %% [markdown]
# ## 1. Reading a plan: the MLP
#
# `mx.executor.plan_memory(symbol, shapes, grad_req)` runs the same planning pass
# `simple_bind` runs, and returns the plan as plain data. MXNet's MNIST MLP
# (`fc1 → relu1 → fc2 → relu2 → fc3 → softmax`), batch 32, inference:

# %%
mlp = zoo.mlp()
plan = mx.executor.plan_memory(mlp, {"data": (32, 784)}, grad_req="null")
plan.check()  # the invariants: no two live entries share a block, blocks big enough, ...
print(plan.summary())

# %% [markdown]
# Reading it: each ReLU took its FullyConnected's storage in place (`in-place from`),
# and `fc3_output` re-used the block of `relu1_output` once `fc2` had read it — co-share.
# The six internal entries fit in two blocks.

# %%
assert ("fc1_output", "relu1_output") in plan.inplace_pairs
assert ("fc2_output", "relu2_output") in plan.inplace_pairs
assert plan.entry("fc3_output").storage_id == plan.entry("relu1_output").storage_id
assert plan.entry("fc3_output").inplace_source is None  # co-shared, not in place
assert len(plan.blocks) == 2 and len(list(plan.internal_entries())) == 6
print(
    f"{len(list(plan.internal_entries()))} entries in {len(plan.blocks)} blocks; "
    f"{plan.naive_internal_bytes:,} B naive -> {plan.internal_bytes:,} B planned"
)

# %% [markdown]
# The `MemoryPlanView` draws the same plan for training (forward, then backward): a row per
# storage block, a bar per entry over the steps it is alive, red marks where an entry took
# its input's storage in place, and the four strategies side by side. Bars in one row never
# overlap — that is what `plan.check()` verifies.

# %%
mlp_strategies = mx.executor.plan_strategies(mlp, {"data": (32, 784)}, grad_req="write")
assert set(mlp_strategies) == {"naive", "inplace", "coshare", "both"}
widgets.MemoryPlanView(mlp_strategies)

# %% [markdown]
# ## 2. The strategies compared
#
# The same graph planned four ways — nothing, in-place only, co-share only, both — for
# three networks at batch 32, training (forward + backward).

# %%
networks = {name: zoo.build(name) for name in ("mlp", "lenet", "resnet18")}


def plans_for(name, batch, grad_req):
    net, shapes = networks[name], zoo.input_shapes(name, batch)
    return {
        strategy: mx.executor.plan_memory(
            net,
            shapes,
            grad_req=grad_req,
            inplace="inplace" in strategy,
            coshare="coshare" in strategy,
        )
        for strategy in ("none", "inplace", "coshare", "inplace+coshare")
    }


comparison = {name: plans_for(name, 32, "write") for name in networks}
print(f"{'network':10s}" + "".join(f"{s:>18s}" for s in comparison["mlp"]) + "   saved")
for name, plans in comparison.items():
    row = "".join(f"{mib(p.internal_bytes):15.2f} MiB" for p in plans.values())
    saved = plans["none"].internal_bytes / plans["inplace+coshare"].internal_bytes
    print(f"{name:10s}{row}   {saved:4.1f}x")
for plans in comparison.values():
    for p in plans.values():
        p.check()
    both = plans["inplace+coshare"].internal_bytes
    assert both <= plans["inplace"].internal_bytes <= plans["none"].internal_bytes
    assert both <= plans["coshare"].internal_bytes <= plans["none"].internal_bytes

# %% [markdown]
# Co-share does most of the work on deep networks (ResNet-18's many activations reuse a few
# large blocks); in-place adds the rest, mostly at ReLUs and elementwise sums.
#
# The live-bytes curve explains the floor: no plan can use less than the most bytes alive at
# one step (`peak_bytes`), and the planner gets close to it.

# %%
from matplotlib.figure import Figure

figure = Figure(figsize=(9, 2.8))
axes = figure.add_subplot(1, 1, 1)
best = comparison["resnet18"]["inplace+coshare"]
axes.plot(np.array(best.live_bytes()) / 2**20, label="bytes alive at each step")
axes.axhline(mib(best.internal_bytes), color="tab:red", linestyle="--", label="planned total")
axes.axhline(mib(best.naive_internal_bytes), color="tab:grey", linestyle=":", label="naive total")
axes.set_xlabel("step (forward, then backward)")
axes.set_ylabel("MiB")
axes.set_title("ResNet-18, batch 32, training")
axes.legend(fontsize=8)
print(
    f"planned {mib(best.internal_bytes):.1f} MiB, peak alive {mib(best.peak_bytes):.1f} MiB "
    f"({best.internal_bytes / best.peak_bytes:.2f}x the peak)"
)
assert best.peak_bytes <= best.internal_bytes
show(figure)

# %% [markdown]
# ## 3. Batch size, and training vs inference
#
# Activations scale with the batch; weights do not (they are arguments, outside the plan).
# So the planned bytes grow linearly with batch size:

# %%
for name in networks:
    sizes = {b: plans_for(name, b, "null")["inplace+coshare"].internal_bytes for b in (1, 32, 64)}
    print(
        f"{name:9s} inference: "
        + ", ".join(f"batch {b}: {mib(v):8.2f} MiB" for b, v in sizes.items())
    )
    assert abs(sizes[64] / sizes[32] - 2.0) < 0.02

# %% [markdown]
# Training costs far more than inference, and not only because gradients need memory:
# backward reads forward activations (FullyConnected its input, ReLU its output, BatchNorm
# its statistics), so they stay alive until their backward step instead of being overwritten
# by the next layer. The entries alive at ResNet-18's peak are mostly forward outputs
# waiting for backward:

# %%
for name in networks:
    inference = plans_for(name, 32, "null")["inplace+coshare"].internal_bytes
    training = comparison[name]["inplace+coshare"].internal_bytes
    print(
        f"{name:9s} inference {mib(inference):8.2f} MiB   training {mib(training):8.2f} MiB   "
        f"x{training / inference:.1f}"
    )
    assert training > inference

live = best.live_bytes()
peak_step = int(np.argmax(live))
alive = [e for e in best.internal_entries() if e.alive_at(peak_step)]
kinds = {
    kind: sum(e.nbytes for e in alive if e.kind.value == kind) for kind in ("forward", "backward")
}
print(
    f"at the peak (step {peak_step}, {best.steps[peak_step]}): "
    + ", ".join(f"{kind} {mib(n):.1f} MiB" for kind, n in kinds.items())
)
assert kinds["forward"] > kinds["backward"]

# %% [markdown]
# ## 4. Reuse is a real dependency
#
# The executor gives each storage block one engine var. An op that writes into a block reused
# from an earlier entry therefore *waits for the earlier entry's readers* — a write-after-read
# edge the engine enforces. In the MLP, `fc3` writes block 0, which `fc2` reads (it holds
# `relu1_output`):
#
# ```
#   fc1 -> relu1 (in place) -> fc2 -> relu2 (in place) -> fc3 -> softmax (in place)
#   block 0                    reads block 0, writes 1    writes block 0: waits for fc2 (WAR)
# ```
#
# To see every edge, bind and run one forward pass under the **step engine** (notebook 01):
# nothing runs until `waitall()`, so every dependency is still pending when the next op is
# pushed, and the trace records it. `mx.engine.bulk(0)` makes the executor push each step as
# its own engine op (by default it groups up to 15 consecutive steps into one *bulk segment*
# that runs them in this same order, notebook 09).

# %%
mx.engine.set_engine("step")
with mx.engine.bulk(0), mx.engine.trace() as trace:
    exe = mlp.simple_bind(mx.cpu(), data=(32, 784), grad_req="null")
    exe.forward(is_train=False, data=np.random.default_rng(0).random((32, 784)))
    mx.nd.waitall()
mx.engine.set_engine("threaded_per_device")

names = trace.var_names()  # a block's var is named after it and the entries it holds
war = [
    (push.name, names[dep.var_id])
    for push in trace.events_of(OpPush)
    for dep in push.waits_on
    if dep.kind.name == "WAR" and names.get(dep.var_id, "").startswith("storage")
]
print("writes into reused storage that waited for earlier readers:", war)
assert any(op == "fc3" and var.startswith("storage0 (") for op, var in war)
widgets.DependencyGraph(trace, last=7)  # the data copy and the six forward ops

# %% [markdown]
# ## 5. Beside MXNet
#
# `benchmarks/mxnet_reference.json` holds what MXNet 1.9.1's `GraphExecutor` allocated for
# the same zoo graphs and shapes (exact bytes where they were measured, else its log line
# "Total N MB allocated", N = bytes >> 20). mxnb's planner should never need more.

# %%
reference_path = (
    pathlib.Path(mx.__file__).resolve().parents[1] / "benchmarks" / "mxnet_reference.json"
)
reference = json.loads(reference_path.read_text())
print(f"MXNet {reference['mxnet_version']}")
print(f"{'network':9s} {'batch':>5s} {'mode':9s} {'mxnb':>14s} {'MXNet':>16s}")
for run in reference["runs"]:
    if run["network"] not in networks or run["batch"] == 1:
        continue
    grad_req = "null" if run["mode"] == "inference" else "write"
    ours = plans_for(run["network"], run["batch"], grad_req)["inplace+coshare"].internal_bytes
    if run["bytes"] is not None:
        theirs = f"{run['bytes']:>14,} B"
        assert ours <= run["bytes"], run
    else:
        theirs = f"{run['mb']:>11d} MiB"
        assert ours >> 20 <= run["mb"], run
    print(f"{run['network']:9s} {run['batch']:5d} {run['mode']:9s} {ours:>12,} B {theirs}")

# %% [markdown]
# ## 6. Recomputation: trading compute for memory
#
# In training most of the plan is forward values kept alive for backward. Chen, Xu, Zhang and
# Guestrin ("Training Deep Nets with Sublinear Memory Cost", 2016) drop most of them after the
# forward pass and **recompute** them when backward reaches them. `recompute=` on
# `plan_memory`, `simple_bind` and `bind` chooses how:
#
# * `'mirror'` — MXNet's `MXNET_BACKWARD_DO_MIRROR` rule: recompute cheap ops (activations,
#   elementwise, BatchNorm, pooling; Dropout replays its kept mask) from the expensive
#   outputs kept around them;
# * `'sqrt'` — the paper's segments: about √n checkpoints, each segment recomputed from its
#   checkpoint when backward reaches it;
# * a byte budget — the plan with the least recomputation whose planned bytes fit.
#
# Every point below is a real plan (in-place and co-share included) of ResNet-18 training at
# batch 32; the cost is counted in FLOPs per operator, so the x axis is a property of the
# plan: `recompute_flops / forward_flops`, in extra forward passes. The dashed lines are
# MXNet 1.9.1's own plans for the same graph, plain and with its mirror.
#
# Recomputation frees large forward values early and needs large gradients late, which whole
# blocks (one entry at a time) serve badly; so plans with recomputation may also pack their
# entries at byte offsets into one *arena* block, which brings them down to their peak of
# live bytes. The arena helps with no recomputation too: MXNet's blocks hold more than is ever
# live at once, so the curve starts at the plain plan *packed* — a budget between it and the
# plain plan costs no recomputation at all. (Without a budget, `plan_memory` keeps MXNet's
# kind of plan, blocks only.)

# %%
resnet = zoo.resnet(18)
resnet_shapes = zoo.input_shapes("resnet18", 32)
mirror_path = reference_path.parent / "mxnet_mirror_reference.json"
mxnet_mirror = {
    (r["network"], r["mirror"]): r["mb"] for r in json.loads(mirror_path.read_text())["runs"]
}
marks = {
    "MXNet 1.9.1": mxnet_mirror["resnet18", 0] * 2**20,
    "MXNet mirror": mxnet_mirror["resnet18", 1] * 2**20,
}
curve = widgets.TradeoffView(resnet, resnet_shapes, marks=marks, select="mirror")
show(curve.figure())
plain = next(point for point in curve.points if point.label == "none")
packed = curve.front[0]
mirror = curve.selected
print(
    f"plain {mib(plain.internal_bytes):.0f} MiB, packed {mib(packed.internal_bytes):.0f} MiB "
    f"(no recomputation); mirror {mib(mirror.internal_bytes):.0f} MiB "
    f"for {mirror.recompute_ratio:.3f} of a forward pass; MXNet's mirror "
    f"{mxnet_mirror['resnet18', 1]} MiB"
)
assert packed.recompute_ratio == 0 and packed.internal_bytes <= plain.internal_bytes
assert mirror.internal_bytes < 0.8 * packed.internal_bytes
assert mirror.internal_bytes < marks["MXNet mirror"] and mirror.recompute_ratio < 0.05
assert mirror.internal_bytes <= marks["MXNet 1.9.1"] / 2  # half of MXNet's own plan

# %% [markdown]
# **One point explained.** At `'mirror'` the kept values are the convolution outputs and the
# residual sums read by two nodes; everything between them is a *segment* recomputed in
# backward. The strip under the curve colours them; the text lists them, and the plan view
# hatches the recomputed entries: they live only from their recompute step to their backward
# reader.

# %%
print("\n".join(curve.to_text().splitlines()[-6:]))
assert all("conv" not in step for run in curve.segments() for step in run)
show(widgets.MemoryPlanView(mirror.plan).figure())

# %% [markdown]
# **A plan is a promise; measure it.** `mx.executor.measure_plan` binds a plan on a context
# of its own, runs one real forward and backward pass, and reads the storage pool's
# high-water mark beyond the bound arrays (the arguments, their gradients and aux states).
# The planned total is the blocks plus the largest temporary workspace an op asks for (a
# convolution's columns). The view draws the two side by side: here LeNet at `'mirror'`,
# measured to the byte.

# %%
measured = mx.executor.measure_plan(zoo.lenet(), zoo.input_shapes("lenet", 16), recompute="mirror")
print(widgets.MemoryPlanView(measured).measured_line())
assert measured.measured_bytes == measured.plan.total_bytes
show(widgets.MemoryPlanView(measured).figure())

# %% [markdown]
# **What kernels allocate beside the plan.** The pool lends only what the plan says; a kernel's
# own numpy temporaries are not in it. numpy evaluates `g * (1 - y * y)` one operator at a time,
# each a new array the size of the data. mxnb's kernels compute in their outputs instead, and
# an elementwise formula runs a block of about 1 MiB at a time (`mxnb/operator/split.py`:
# MXNet's one-pass CPU kernels, done with numpy), so its temporaries are a block's size,
# whatever the batch. `mx.executor.allocation_peak` measures what a call held at once, and
# `measure_plan` reports a training step's kernel temporaries beside the plan (the unrolled
# LSTM below held 64 MiB of softmax copies beside its 50 MiB plan at batch 16, before).

# %%
from mxnb.operator.ops.elemwise import TANH_GRAD

rng = np.random.default_rng(0)
y = np.tanh(rng.standard_normal((16, 256, 1024), dtype="float32"))
g = rng.standard_normal(y.shape, dtype="float32")
whole = mx.executor.allocation_peak(lambda: g * (1 - y * y))
blocks = mx.executor.allocation_peak(lambda: TANH_GRAD(np, g, y, out=(g,)))
print(f"tanh's gradient of {y.nbytes / 2**20:.0f} MiB: numpy's expression holds "
      f"{whole / 2**20:.1f} MiB (its result and a temporary), the fused map in blocks "
      f"{blocks / 2**20:.1f} MiB")
lstm = mx.executor.measure_plan(zoo.build("lstm"), zoo.input_shapes("lstm", 8))
print(widgets.MemoryPlanView(lstm).measured_line())
assert blocks < whole / 8 and lstm.temporaries_bytes < lstm.plan.total_bytes / 8

# %% [markdown]
# **Training LeNet with `recompute='sqrt'`.** Recompute steps are engine ops like any other
# (they are on the timeline, their outputs live in the plan's blocks). Dropout would replay its
# mask and BatchNorm would update its moving statistics once, so the gradients are not close
# to the plain plan's: they are the same bits, step after step.

# %%
lenet = zoo.lenet()
lenet_shapes = zoo.input_shapes("lenet", 16)
executors = {
    mode: lenet.simple_bind(mx.cpu(), recompute=mode, **lenet_shapes) for mode in (None, "sqrt")
}
print(executors["sqrt"].memory_plan.summary().splitlines()[-1])
rng = np.random.default_rng(0)
start = {
    name: rng.standard_normal(array.shape).astype("float32") * 0.1
    for name, array in executors[None].arg_dict.items()
}
for exe in executors.values():
    for name, value in start.items():
        exe.arg_dict[name][:] = value
for step in range(3):
    images = rng.standard_normal(lenet_shapes["data"]).astype("float32")
    labels = rng.integers(0, 10, lenet_shapes["softmax_label"]).astype("float32")
    grads = {}
    for mode, exe in executors.items():
        exe.forward(is_train=True, data=images, softmax_label=labels)
        exe.backward()
        grads[mode] = {name: g.asnumpy() for name, g in exe.grad_dict.items()}
        for name, weight in exe.arg_dict.items():
            if name not in ("data", "softmax_label"):
                weight[:] = weight.asnumpy() - 0.1 * grads[mode][name]
    for name in grads[None]:
        np.testing.assert_array_equal(grads["sqrt"][name], grads[None][name])
    print(f"step {step}: all {len(grads[None])} gradients identical")

# %% [markdown]
# **The exact planner.** The budget search walks one family of checkpoint sets (mirror, then
# segments of growing size), so what it finds depends on the graph's shape. With
# `solver='milp'` the choice of what to recompute becomes a mixed-integer program (Checkmate,
# Jain et al. 2020) over the executor's own schedule — one bit per forward step, the liveness
# of every copy and kept value at every step — solved by HiGHS (`scipy.optimize.milp`). Each
# answer is planned for real and checked; the plan carries the solver's proven `mip_gap`.
# Below, a small ResNet-18 at two budgets: the exact plans fit the same budgets with a
# fraction of the greedy plans' recomputation.

# %%
small = zoo.resnet(18, num_classes=10)
small_shapes = {"data": (4, 3, 32, 32)}
greedy_points = mx.executor.tradeoff_curve(small, small_shapes)
front = mx.executor.pareto(greedy_points)
after = [point.label for point in front].index("mirror") + 1  # the first segment point
budgets = [(front[after - 1].internal_bytes + front[after].internal_bytes) // 2,
           front[-1].internal_bytes]  # fmt: skip
exact = []
for budget in budgets:
    greedy = mx.executor.plan_memory(small, small_shapes, budget=budget)
    plan = mx.executor.plan_memory(small, small_shapes, budget=budget, solver="milp", time_limit=30)
    plan.check()
    exact.append(plan)
    print(
        f"budget {mib(budget):.2f} MiB: greedy {mib(greedy.internal_bytes):.2f} MiB at "
        f"{greedy.recompute_ratio:.3f} of a forward, exact {mib(plan.internal_bytes):.2f} MiB at "
        f"{plan.recompute_ratio:.3f} ({plan.solver}, gap {plan.mip_gap})"
    )
    assert plan.internal_bytes <= budget and plan.recompute_flops <= greedy.recompute_flops
show(widgets.TradeoffView(greedy_points, exact=exact).figure())

# %% [markdown]
# **The optimal curve, and why it has steps.** `mx.executor.optimal_curve` asks the exact
# planner at budgets every `step` of the plain plan. Then, for every step of the curve wider
# than `max_step`, it probes half a `max_step` under the step's higher point (a plan there
# splits the step) and, when that finds nothing in between, asks just under the higher point.
# Either a plan turns up between the two points, or the solver proves (gap 0) that everything
# under the higher point costs at least the lower point: the step is then the graph's own, and
# a budget inside it gets the lower point's plan at the lower point's cost. On a deep MLP every
# activation is a big, equal block, so the curve moves in steps of one activation each, and
# each is proven.

# %%
deep = mx.sym.Variable("data")
for i in range(6):
    deep = mx.sym.FullyConnected(deep, num_hidden=128, name=f"fc{i}")
    deep = mx.sym.Activation(deep, act_type="relu", name=f"relu{i}")
deep = mx.sym.SoftmaxOutput(mx.sym.FullyConnected(deep, num_hidden=10, name="out"), name="softmax")
deep_shapes = {"data": (16, 64)}
optimal = mx.executor.optimal_curve(deep, deep_shapes, step=0.1, time_limit=20)
for step in optimal.steps:
    print(step.describe())
assert all(step.proven or step.share <= 0.05 for step in optimal.steps)
show(widgets.TradeoffView(mx.executor.tradeoff_curve(deep, deep_shapes),
                          exact=optimal).figure())

# %% [markdown]
# **When the program is too big: a window.** In an unrolled LSTM every later step reads the
# early steps' values, so a recomputed value could be needed again anywhere in backward, and
# the program has a trigger column for each forward step at each backward step: some 470,000
# for the zoo's LSTM, more than HiGHS solves in two minutes on two cores. A *window* of `W`
# steps admits only plans whose recomputes run at most `W` steps before backward needs them.
# `Model` picks the widest window that keeps the program under `MAX_TRIGGERS` columns (none
# when the full program fits, as for every other graph here), and a plan solved in one says so:
# `plan.milp_window`, and its gap is proven among the windowed plans only. Below, 96 % of the
# plain plan: the greedy family's plan beside the windowed program's answer.

# %%
from mxnb.executor.milp import Model
from mxnb.executor.planning import plan_graph_and_memory
from mxnb.executor.tournament import plan_best

lstm, lstm_shapes = zoo.build("lstm"), zoo.input_shapes("lstm", 32)
graph, lstm_plain = plan_graph_and_memory(lstm, lstm_shapes)
model = Model(graph)
print(f"{len(model.steps)} of {len(graph.steps)} steps may be recomputed; full program "
      f"{model.triggers(None):,} trigger columns, window of {model.window} steps "
      f"{model.triggers(model.window):,}")  # fmt: skip
budget = int(0.96 * lstm_plain.internal_bytes)
answer = model.solve(budget, time_limit=60)
_, real = plan_best(lstm, lstm_shapes, nodes=answer.nodes)  # the answer planned for real
greedy = mx.executor.plan_memory(lstm, lstm_shapes, budget=budget)
print(f"budget {mib(budget):.1f} MiB: greedy {len(greedy.recomputed_nodes)} steps recomputed, "
      f"{greedy.recompute_ratio:.4f} of a forward; windowed program {len(answer.nodes)} steps, "
      f"{real.recompute_ratio:.4f} of a forward, gap {answer.mip_gap:.2g} within the window, "
      f"{mib(real.internal_bytes):.1f} MiB planned for real")  # fmt: skip
assert model.window is not None and real.internal_bytes <= budget
assert real.recompute_flops <= greedy.recompute_flops

# %% [markdown]
# **Summary.** A plan is data: entries with lifetimes, blocks, in-place pairs. In-place needs
# an op's permission *and* an input no one else reads; co-share needs only lifetimes. What
# backward reads (notebook 03) decides how long forward outputs live — which is why training
# costs a multiple of inference.
