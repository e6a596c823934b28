# %% [markdown]
# # 06 — Debugging dependencies: three classic bugs
#
# The engine is only as right as the vars you declare. Declare too little and ops race;
# declare too much and they serialize; and when an op fails, the failure must reach whoever
# waits for its result. This notebook stages each bug, shows how the views expose it, and
# fixes it.
#
# **What you will learn**
#
# 1. **a race** from a missing declared dependency: no edge in the dependency graph where
#    there should be one — and debug mode, which catches a kernel writing into an array it
#    declared read-only;
# 2. **an accidental serialization** through a shared var: the timeline shows one busy
#    worker, the graph shows the culprit var, `trace.explain` says it in words;
# 3. **a failing op**: its error is re-raised by every wait that depends on it, with the
#    op's name and the original traceback; dependent ops are skipped; the engine stays usable.

# %%
import time

import numpy as np

import mxnb as mx
from mxnb import operator as op
from mxnb import widgets
from mxnb.engine.tracing import OpEnd, OpPush, OpStart

engine = mx.engine.set_engine("threaded_per_device")
mx.random.seed(0)


def spans(trace):
    """op name -> (start, end) for every op of a trace that ran."""
    names = {push.op_id: push.name for push in trace.events_of(OpPush)}
    start = {event.op_id: event.time for event in trace.events_of(OpStart)}
    return {
        names[e.op_id]: (start[e.op_id], e.time) for e in trace.events_of(OpEnd) if e.op_id in start
    }


def overlapped(span, other):
    return span[0] < other[1] and other[0] < span[1]


# %% [markdown]
# ## Bug 1: a missing dependency — a race
#
# A producer fills a buffer (slowly); a consumer sums it. The consumer's author forgot to
# list the buffer's var among its `const_vars`:
#
# ```
#   produce   writes buffer (var 'buffer')
#   consume   reads buffer — declared: nothing      <- no edge: free to run at once
# ```

# %%
buffer = np.zeros(1000)
result = {}


def produce(run_ctx):
    time.sleep(0.2)  # a slow kernel
    buffer[:] = 1.0


def consume(run_ctx):
    result["sum"] = buffer.sum()


with mx.engine.trace() as racy:  # vars made while recording show by name in the views
    buffer_var = engine.new_var(name="buffer")
    engine.push_sync(produce, mx.cpu(), mutate_vars=[buffer_var], name="produce")
    engine.push_sync(consume, mx.cpu(), name="consume")  # BUG: const_vars=[buffer_var] missing
    engine.wait_for_all()
print("sum seen by consume:", result["sum"], "(expected 1000.0)")
assert result["sum"] == 0.0  # it read the buffer before the producer wrote it

# %% [markdown]
# The dependency graph has **no edge** between `produce` and `consume`, and the timeline shows
# them running at the same time on two workers. A missing edge where data flows is the
# signature of this bug.

# %%
assert not any(push.waits_on for push in racy.events_of(OpPush) if push.name == "consume")
assert overlapped(spans(racy)["produce"], spans(racy)["consume"])
widgets.DependencyGraph(racy, show_vars=True)

# %%
widgets.Timeline(racy)

# %% [markdown]
# The fix is the declaration. Now the graph has the read-after-write edge, and the
# consumer sees the data:

# %%
buffer[:] = 0
with mx.engine.trace() as fixed:
    buffer_var = engine.new_var(name="buffer")
    engine.push_sync(produce, mx.cpu(), mutate_vars=[buffer_var], name="produce")
    engine.push_sync(consume, mx.cpu(), const_vars=[buffer_var], name="consume")
    engine.wait_for_all()
print("sum seen by consume:", result["sum"])
assert result["sum"] == 1000.0
(consume_push,) = [push for push in fixed.events_of(OpPush) if push.name == "consume"]
assert [dep.kind.name for dep in consume_push.waits_on] == ["RAW"]
widgets.DependencyGraph(fixed, show_vars=True)

# %% [markdown]
# ### The same bug inside an operator, caught by debug mode
#
# Operators get the race in a subtler form: a kernel that writes into an input it only
# *reads* (its const input). Every other reader of that array may see the damage, depending
# on timing. Here a SimpleOp "saves memory" by scaling its input in place:


# %%
def scale_in_place(src, env, ret, req, run_ctx):
    src *= 2.0  # BUG: src is a const input
    op.assign(ret, req, src)


op.simple_op("scale_buggy").set_function(scale_in_place)
x = mx.nd.ones((4,))
y = mx.nd.scale_buggy(x)
y.wait_to_read()  # x.asnumpy() alone would not wait: the op only *reads* x, as declared
print("x after the op:", x.asnumpy(), "<- the input changed")
assert (x.asnumpy() == 2).all()

# %% [markdown]
# In debug mode (`mx.engine.debug()` or `mx.engine.set_debug(True)`), kernels receive
# read-only views of their const inputs, so the first write fails at once, naming the op
# and the argument:

# %%
x = mx.nd.ones((4,))
with mx.engine.debug():
    try:
        mx.nd.scale_buggy(x).asnumpy()
        raise RuntimeError("debug mode did not catch the write")
    except mx.MXNBError as error:
        caught = error
print(type(caught).__name__, "-", caught)
assert "scale_buggy" in str(caught)
assert (x.asnumpy() == 1).all()  # the input is intact

# %% [markdown]
# ## Bug 2: an accidental serialization through a shared var
#
# Two independent pipelines, each with its own data var. To count processed items, both
# were given a shared `stats` var — as a var they *write*. Every op now writes `stats`, so
# the rule serializes all of them: the pipelines can no longer overlap.
#
# ```
#   left_0 ─ WAW(stats) ─ right_0 ─ WAW(stats) ─ left_1 ─ ...   (one long chain)
# ```

# %%
counter = {"items": 0}


def stage(run_ctx):
    time.sleep(0.08)  # the pipeline's work (a device kernel, say)
    counter["items"] += 1


def run_pipelines(shared_stats):
    left, right, stats = (engine.new_var(name=n) for n in ("left", "right", "stats"))
    extra = [stats] if shared_stats else []
    for i in range(4):
        engine.push_sync(stage, mx.cpu(), mutate_vars=[left, *extra], name=f"left_{i}")
        engine.push_sync(stage, mx.cpu(), mutate_vars=[right, *extra], name=f"right_{i}")
    engine.wait_for_all()


with mx.engine.trace() as serialized:
    run_pipelines(shared_stats=True)
timing = spans(serialized)
cross = [
    (a, b)
    for a in timing
    for b in timing
    if a < b and a[0] != b[0] and overlapped(timing[a], timing[b])
]
print("left/right pairs that overlapped:", cross)
assert not cross

# %% [markdown]
# The timeline shows it at a glance: two workers, but never two bars at once.

# %%
widgets.Timeline(serialized)

# %% [markdown]
# Which var did it? The graph labels each edge with the var and the reason; every `right_i`
# waits on `left_i` through `stats` — a var the two pipelines should not share. The trace
# can also say it in words:

# %%
print(serialized.explain("right_2"))
widgets.DependencyGraph(serialized)

# %%
var_names = serialized.var_names()
culprits = {
    var_names.get(dep.var_id, dep.var_id)
    for push in serialized.events_of(OpPush)
    if push.name.startswith("right")
    for dep in push.waits_on
    if "left" in next(p.name for p in serialized.events_of(OpPush) if p.op_id == dep.op_id)
}
print("vars linking the two pipelines:", culprits)
assert culprits == {"stats"}

# %% [markdown]
# The fix: a counter that is only incremented does not need ordering between the pipelines
# (use a lock or an atomic counter inside the op, or one stats var per pipeline). Without the
# shared var, the pipelines overlap again:

# %%
with mx.engine.trace() as parallel:
    run_pipelines(shared_stats=False)
timing = spans(parallel)
cross = [
    (a, b)
    for a in timing
    for b in timing
    if a < b and a[0] != b[0] and overlapped(timing[a], timing[b])
]
print(f"{len(cross)} left/right pairs overlapped")
assert cross
widgets.Timeline(parallel)

# %% [markdown]
# ## Bug 3: a failing op, and who hears about it
#
# An op that raises does not crash a worker. The engine stores the error on the vars the op
# *writes*; ops that read those vars are **skipped** and inherit the error; and every wait on
# them — `wait_for_var`, `wait_for_all`, `asnumpy` — raises an `OpError` naming the failing op,
# with the original exception chained as `__cause__`.
#
# ```
#   checked_log   fails on a negative input
#       │ RAW
#     plus_one    skipped (inherits the error)
#       │ RAW
#     asnumpy()   raises OpError: op 'checked_log' failed: ValueError: ...
# ```


# %%
def checked_log(src, env, ret, req, run_ctx):
    if (src <= 0).any():
        raise ValueError(f"log of a non-positive value ({src.min()}); clip the input first")
    op.assign(ret, req, np.log(src))


op.simple_op("checked_log").set_function(checked_log)

with mx.engine.trace() as failing:
    x = mx.nd.array([1.0, -2.0, 3.0])
    y = mx.nd.checked_log(x)
    z = y + 1
    unrelated = mx.nd.ones((2,)) * 5  # does not depend on the failure
    try:
        z.asnumpy()
        raise RuntimeError("the failure was not reported")
    except mx.MXNBError as error:
        failure = error
    mx.nd.waitall()

print(type(failure).__name__, "-", failure)
print("caused by:", repr(failure.__cause__))
assert failure.op_name == "checked_log"
assert isinstance(failure.__cause__, ValueError)
assert (unrelated.asnumpy() == 5).all()  # the engine stayed usable

# %% [markdown]
# The trace records who failed and who was skipped; the dependency graph draws the failed op
# and the skipped ones downstream of it.

# %%
ends = {
    push.name: end
    for push in failing.events_of(OpPush)
    for end in failing.events_of(OpEnd)
    if end.op_id == push.op_id
}
print(
    {
        name: ("failed" if end.error and not end.skipped else "skipped" if end.skipped else "ok")
        for name, end in ends.items()
    }
)
assert ends["checked_log"].error and not ends["checked_log"].skipped
assert ends["_plus_scalar"].skipped
widgets.DependencyGraph(failing)

# %% [markdown]
# After the fix, the same arrays work again — nothing in the engine is poisoned:

# %%
y = mx.nd.checked_log(mx.nd.clip(x, 1e-3, 10.0)) + 1
print(y.asnumpy())
np.testing.assert_allclose(
    y.asnumpy(), np.log(np.clip([1.0, -2.0, 3.0], 1e-3, 10.0)) + 1, rtol=1e-6
)

# %% [markdown]
# **Summary.** *Missing edge where data flows* → race: declare the var (and use debug mode to
# catch kernels that write their inputs). *One var linking everything* → serialization: find
# it on the graph, give each pipeline its own. *An error* → it surfaces at the wait that
# needs the value, naming the op that failed.
