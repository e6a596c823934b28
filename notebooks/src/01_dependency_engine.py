# %% [markdown]
# # 01 — The dependency engine
#
# MXNet's architecture notes start with one idea: every piece of work is a function pushed
# together with the **vars** it reads (`const_vars`) and the vars it writes (`mutate_vars`).
# The engine knows nothing of arrays; from the vars alone it decides what may run in
# parallel and what must wait, and it runs each function as soon as it can.
#
# > **The rule.** The execution of any two functions where one of them modifies at least one
# > common var is serialized in their push order. Readers of a var between two writes may run
# > in any order, in parallel.
#
# **What you will learn**
#
# 1. `push_sync` and `push_async`, `const_vars` vs `mutate_vars`;
# 2. the rule, live: parallel readers and serialized writers, checked on the trace and drawn
#    as a dependency graph and a timeline;
# 3. `wait_for_var` vs `wait_for_all`;
# 4. the step engine: run ready ops by hand and walk through the schedules the rule allows;
# 5. a parallel speedup, measured on two independent chains.

# %%
import threading
import time

import numpy as np
from IPython.display import display

import mxnb as mx
from mxnb import widgets
from mxnb.engine.tracing import OpEnd, OpPush, OpStart

engine = mx.engine.set_engine("threaded_per_device")
print(engine, "with CPU workers", engine.workers())

# %% [markdown]
# ## 1. Pushing work
#
# A var is a handle — a name for "something that is read and written", here a Python list.
# `push_sync(fn, ctx, const_vars, mutate_vars)` queues `fn(run_ctx)`; it returns an op id at
# once. The function runs on a worker of the context's pool.

# %%
log = []
a = engine.new_var(name="a")
b = engine.new_var(name="b")


def write_a(run_ctx):
    log.append(f"write a on {run_ctx.worker}")


def a_to_b(run_ctx):
    log.append("read a, write b")


engine.push_sync(write_a, mx.cpu(), mutate_vars=[a], name="write_a")
engine.push_sync(a_to_b, mx.cpu(), const_vars=[a], mutate_vars=[b], name="a_to_b")
engine.wait_for_var(b)  # blocks until every write pushed on b so far is done
print(log)
assert log[0].startswith("write a") and log[1] == "read a, write b"

# %% [markdown]
# `push_async` is for work that finishes *later*, on someone else's thread — a GPU kernel's
# completion callback, a network reply. The function receives `on_complete`; the op is done
# (and its writes visible to waiters) only when `on_complete()` is called. Passing an
# exception, `on_complete(error)`, fails the op (notebook 06).


# %%
def fetch_later(run_ctx, on_complete):
    def reply():
        time.sleep(0.05)
        log.append("async reply arrived")
        on_complete()

    threading.Thread(target=reply).start()  # fn returns now; the op is still running


engine.push_async(fetch_later, mx.cpu(), mutate_vars=[b], name="fetch_b")
engine.push_sync(lambda run_ctx: log.append("read b"), mx.cpu(), const_vars=[b], name="read_b")
engine.wait_for_all()
print(log[-2:])
assert log[-2:] == ["async reply arrived", "read b"]

# %% [markdown]
# ## 2. The rule, live: parallel readers, serialized writers
#
# ```
#        w1            writes x
#      /  |  \
#    r1   r2   r3      read x: may run together
#      \  |  /
#        w2            writes x: waits for all three readers (write-after-read)
# ```
#
# Each op sleeps 100 ms, standing in for real work (sleeping, like numpy's kernels, releases
# the GIL, so two workers really run at once). The **EngineMonitor** below records the
# engine's events and redraws while the ops run: the DAG tab colours ops by state (waiting,
# ready, running, done), the Timeline tab shows the workers' lanes, and Inspect says why an
# op waited. Re-run the cell to watch it again.

# %%
monitor = widgets.EngineMonitor()
display(monitor)
x = engine.new_var(name="x")


def work(label):
    def fn(run_ctx):
        time.sleep(0.1)

    fn.__name__ = label
    return fn


engine.push_sync(work("w1"), mx.cpu(), mutate_vars=[x], name="w1")
for label in ("r1", "r2", "r3"):
    engine.push_sync(work(label), mx.cpu(), const_vars=[x], name=label)
engine.push_sync(work("w2"), mx.cpu(), mutate_vars=[x], name="w2")
engine.wait_for_all()
monitor.detach()  # stop recording; the views stay
monitor.refresh()
rule_trace = monitor.trace

name_of = {push.op_id: push.name for push in rule_trace.events_of(OpPush)}
start = {name_of[e.op_id]: e.time for e in rule_trace.events_of(OpStart)}
end = {name_of[e.op_id]: e.time for e in rule_trace.events_of(OpEnd)}
readers = ["r1", "r2", "r3"]
overlapping = [
    (p, q) for p in readers for q in readers if p < q and start[p] < end[q] and start[q] < end[p]
]
print("reader pairs that overlapped in time:", overlapping)
assert overlapping, "readers of x ran in parallel"
assert all(start[r] >= end["w1"] for r in readers), "readers came after the first writer"
assert all(start["w2"] >= end[r] for r in readers), "the second writer came after every reader"

# %% [markdown]
# The dependency graph is drawn from the trace alone. Edges carry the var and the reason:
# RAW (read after write), WAR (write after read), WAW (write after write).

# %%
widgets.DependencyGraph(rule_trace)

# %% [markdown]
# The timeline shows what *did* happen: `w1` alone, two readers side by side on the two
# workers, the third after, then `w2`.

# %%
widgets.Timeline(rule_trace)

# %% [markdown]
# ## 3. `wait_for_var` vs `wait_for_all`
#
# `wait_for_var(v)` waits for the writes pushed on `v` so far — not for unrelated work.
# `wait_for_all()` waits for everything. Below, a slow op on `slow` does not hold up a wait on
# `fast`.

# %%
slow, fast = engine.new_var(name="slow"), engine.new_var(name="fast")
engine.push_sync(lambda run_ctx: time.sleep(0.3), mx.cpu(), mutate_vars=[slow], name="slow_op")
engine.push_sync(lambda run_ctx: None, mx.cpu(), mutate_vars=[fast], name="fast_op")
begin = time.perf_counter()
engine.wait_for_var(fast)
waited_var = time.perf_counter() - begin
engine.wait_for_all()
waited_all = time.perf_counter() - begin
print(
    f"wait_for_var(fast): {waited_var * 1e3:.1f} ms, then wait_for_all: {waited_all * 1e3:.1f} ms"
)
assert waited_var < waited_all

# %% [markdown]
# ## 4. The step engine: schedules by hand
#
# The step engine does the same bookkeeping, but a ready op only *waits in a list* until you
# say `step()` (the next one), `run_op(id)` (a chosen one) or `run()`. It shows exactly which
# schedules the rule allows. `mx.engine.create('step')` makes a private one. Given a step
# engine, the EngineMonitor adds **Step / Run / Run chosen / Run until** buttons; below, the
# cells call the same methods (`monitor.step()`, `monitor.run_op(id)`), so the DAG tab
# redraws after each move.


# %%
def recorder(order, label):
    """An op function that appends ``label`` to ``order`` when it runs."""
    return lambda run_ctx: order.append(label)


stepper = mx.engine.create("step")
step_monitor = widgets.EngineMonitor(engine=stepper)
display(step_monitor)
order = []
v = stepper.new_var(name="v")
ids = {}
ids["w1"] = stepper.push_sync(recorder(order, "w1"), mx.cpu(), mutate_vars=[v], name="w1")
ids["r1"] = stepper.push_sync(recorder(order, "r1"), mx.cpu(), const_vars=[v], name="r1")
ids["r2"] = stepper.push_sync(recorder(order, "r2"), mx.cpu(), const_vars=[v], name="r2")
ids["w2"] = stepper.push_sync(recorder(order, "w2"), mx.cpu(), mutate_vars=[v], name="w2")
step_monitor.refresh()
print("ready:", [op.name for op in stepper.ready_ops()])
assert [op.name for op in stepper.ready_ops()] == ["w1"]
states = {op.name: op.state.name for op in step_monitor.model.ops.values()}
print("as the monitor sees them:", states)
assert states["w1"] == "READY" and states["w2"] == "WAITING"

# %% [markdown]
# Only `w1` is ready. Can we run `w2` first? The engine refuses, and says why:

# %%
try:
    stepper.run_op(ids["w2"])
except mx.MXNBError as error:
    print(type(error).__name__, "-", error)

# %% [markdown]
# Run `w1`: both readers become ready at once. Pick **`r2` before `r1`** — a legal schedule,
# since readers do not conflict. `w2` becomes ready only after both readers ran.

# %%
step_monitor.step()
print("after w1, ready:", [op.name for op in stepper.ready_ops()])
step_monitor.run_op(ids["r2"])
print("after r2, ready:", [op.name for op in stepper.ready_ops()])
assert "w2" not in [op.name for op in stepper.ready_ops()]
step_monitor.run_op(ids["r1"])
print("after r1, ready:", [op.name for op in stepper.ready_ops()])
step_monitor.run()
step_monitor.detach()  # stop recording; the views stay
stepper.shutdown()
assert all(op.state.name == "DONE" for op in step_monitor.model.ops.values())
print("schedule:", order)
assert order == ["w1", "r2", "r1", "w2"]

# %% [markdown]
# Now enumerate *every* schedule the rule allows, by trying each ready op in turn (a
# depth-first walk, replaying each prefix on a fresh step engine). Add an op `u` that writes
# an unrelated var `other`:
#
# ```
#   w1 -> {r1, r2} -> w2        on var v
#   u                           on var other: may go anywhere
# ```
#
# The readers may swap (2 ways) and `u` may take any of 5 places: 10 schedules, and in
# every one `w1` comes before both readers and `w2` after them.

# %%
GRAPH = [
    ("w1", ["v"], "write"),
    ("r1", ["v"], "read"),
    ("r2", ["v"], "read"),
    ("w2", ["v"], "write"),
    ("u", ["other"], "write"),
]


def push_graph(eng, order):
    """Push GRAPH on ``eng``; return op name -> op id."""
    vars_ = {name: eng.new_var(name=name) for name in ("v", "other")}
    ids = {}
    for name, var_names, mode in GRAPH:
        touched = [vars_[n] for n in var_names]
        const, mutate = (touched, []) if mode == "read" else ([], touched)
        ids[name] = eng.push_sync(recorder(order, name), mx.cpu(), const, mutate, name=name)
    return ids


def schedules(prefix=()):
    """Every complete schedule extending ``prefix`` (a tuple of op names)."""
    eng, order = mx.engine.create("step"), []
    ids = push_graph(eng, order)
    for name in prefix:
        eng.run_op(ids[name])
    ready = [op.name for op in eng.ready_ops()]
    eng.shutdown()
    if not ready:
        return [prefix]
    return [schedule for name in ready for schedule in schedules(prefix + (name,))]


legal = schedules()
for schedule in legal:
    print(" -> ".join(schedule))
assert len(legal) == 10
for schedule in legal:
    position = {name: index for index, name in enumerate(schedule)}
    assert position["w1"] < position["r1"] < position["w2"] and position["r2"] < position["w2"]
    assert position["w1"] < position["r2"]

# %% [markdown]
# ## 5. A parallel speedup on two independent chains
#
# Two chains of six ops each, one writing var `p`, one writing var `q`. Inside a chain every
# op writes the chain's var, so it is serial; the chains share nothing, so the engine runs
# them side by side. We time the same pushes on the **naive** engine (everything in the
# pushing thread, one after the other) and on the threaded engine, for two kinds of work:
#
# * `device`: each op waits 20 ms without using the CPU — what a CPU worker does while a GPU
#   kernel or a copy runs. The ideal speedup is 2.
# * `matmul`: each op multiplies 500×500 matrices with numpy (BLAS limited to one thread per
#   op, as MXNet gives each CPU worker one core). The speedup is at most the number of free
#   cores — on a busy machine, less.

# %%
from threadpoolctl import threadpool_limits  # ships with scikit-learn

rng = np.random.default_rng(0)
matrix = rng.standard_normal((500, 500)) / 500**0.5
workloads = {
    "device": lambda run_ctx: time.sleep(0.02),
    "matmul": lambda run_ctx: matrix @ matrix,
}


def push_chains(eng, fn):
    chain_vars = [eng.new_var(name="p"), eng.new_var(name="q")]
    for _ in range(6):
        for var in chain_vars:
            eng.push_sync(fn, mx.cpu(), mutate_vars=[var], name=f"chain_{var.name}")
    eng.wait_for_all()


def best_time(kind, fn, repeats=3):
    eng = mx.engine.create(kind)
    push_chains(eng, fn)  # warm up
    best = float("inf")
    for _ in range(repeats):
        begin = time.perf_counter()
        push_chains(eng, fn)
        best = min(best, time.perf_counter() - begin)
    eng.shutdown()
    return best


with threadpool_limits(1):
    for work_name, fn in workloads.items():
        naive = best_time("naive", fn)
        threaded = best_time("threaded_per_device", fn)
        print(
            f"{work_name:7s} naive {naive * 1e3:6.1f} ms   threaded {threaded * 1e3:6.1f} ms   "
            f"speedup {naive / threaded:.2f}x"
        )

# %% [markdown]
# Speedups depend on the machine, so they are printed, not asserted. What the engine
# guarantees is the structure, which the trace confirms: ops of the two chains overlapped,
# and within a chain no two ops did.

# %%
with mx.engine.trace() as trace:
    push_chains(engine, workloads["device"])
name_of = {push.op_id: push.name for push in trace.events_of(OpPush)}
spans = {e.op_id: [e.time] for e in trace.events_of(OpStart)}
for e in trace.events_of(OpEnd):
    spans[e.op_id].append(e.time)
ops = [(name_of[i], s, t) for i, (s, t) in spans.items()]
cross = sum(1 for n, s, t in ops for m, u, w in ops if n < m and s < w and u < t)
within = sum(1 for n, s, t in ops for m, u, w in ops if n == m and (s, t) < (u, w) and u < t)
print(f"overlapping pairs across chains: {cross}, within a chain: {within}")
assert within == 0 and cross > 0
widgets.Timeline(trace)

# %% [markdown]
# **Summary.** Declare what you read and what you write; the engine does the rest — parallel
# where the rule allows, serialized in push order where it does not. The step engine lets you
# check that claim schedule by schedule.
