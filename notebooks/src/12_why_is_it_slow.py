# %% [markdown]
# # 12 — Why is it slow? Idle time explained, a lint, what-if replays, two runs compared
#
# Profilers look at a timeline and guess why a worker sat idle. mxnb's engine records every
# op's push, its ready and start times and the vars it waited on, so the trace *knows*. This
# chapter takes one slow program through the debugger, step by step:
#
# 1. **idle** — `trace.idle()` gives every idle stretch of every worker exactly one reason:
#    *nothing pushed* (the front end had not pushed the work), *waiting on a var* (with the var
#    and the op holding it) or *ready, not started*;
# 2. **lint** — `mx.engine.lint(trace)` names the mistake and its fix;
# 3. **replay** — `trace.replay(workers=..., scale=...)` predicts what more workers or faster
#    ops would buy, without running anything;
# 4. **fix** — and run again;
# 5. **diff** — `trace.diff(other)` compares the two runs op by op, and `TraceDiffView` draws
#    them aligned.

# %%
import time

import mxnb as mx
from mxnb import widgets

engine = mx.engine.set_engine("threaded_per_device")
CPU = mx.cpu()


def work(seconds):
    """A kernel that takes ``seconds`` (sleeping: it leaves the interpreter to the others)."""
    return lambda run_ctx: time.sleep(seconds)


# %% [markdown]
# ## The program
#
# Four rounds; each loads two inputs (independent: they may run at once) and computes on
# both. The author checks each round's result before starting the next — a `wait_for_var`
# inside the loop:
#
# ```
#   round i:   load_a (15 ms)   load_b (15 ms)
#                     \           /
#                      compute (30 ms)       <- wait_for_var(result) here
# ```


# %%
def rounds(wait_each_round, n=4):
    """Push the four rounds; wait for each round's result inside the loop, or once at the end."""
    computes = []
    for i in range(n):
        a, b = engine.new_var(name=f"a{i}"), engine.new_var(name=f"b{i}")
        result = engine.new_var(name=f"result{i}")
        engine.push_sync(work(0.015), CPU, mutate_vars=[a], name="load_a")
        engine.push_sync(work(0.015), CPU, mutate_vars=[b], name="load_b")
        computes.append(engine.push_sync(work(0.03), CPU, [a, b], [result], name="compute"))
        if wait_each_round:
            engine.wait_for_var(result)
    engine.wait_for_all()
    return computes


with mx.engine.trace() as slow:
    slow_computes = rounds(wait_each_round=True)
widgets.Timeline(slow)

# %% [markdown]
# ## 1. Why were the workers idle?
#
# Under each lane of the timeline a thin strip says why the worker was idle: grey *nothing
# pushed*, red *waiting on a var*, yellow *ready, not started*. Here one worker runs each
# `compute` while the other sits idle: nothing was pushed — the front end was blocked in
# its wait. The summary adds it up per lane and reason:

# %%
summary = slow.idle_summary()
for lane, reasons in summary.items():
    print(lane, {reason: f"{1e3 * seconds:.1f} ms" for reason, seconds in reasons.items()})
total = {
    r: sum(row[r] for row in summary.values())
    for r in ("nothing_pushed", "waiting_on_var", "ready_not_started")
}
assert total["nothing_pushed"] > total["waiting_on_var"] + total["ready_not_started"]
widgets.StatsTable(slow)

# %% [markdown]
# Every stretch of idle time has exactly one reason, and the spans of a lane add up to its
# idle time: nothing is left "unknown". A span waiting on a var names the var and the op
# that held it; here are the longest spans:

# %%
ops = slow.ops()
for span in sorted(slow.idle(), key=lambda s: s.start - s.end)[:4]:
    name = ops[span.op].label if span.op in ops else "-"
    print(f"{span.lane}: {1e3 * (span.end - span.start):5.1f} ms {span.reason:18s} op {name}")
first, last = min(e.time for e in slow.events), max(e.time for e in slow.events)
for lane in summary:
    busy = sum(op.end - op.start for op in ops.values() if op.worker == lane)
    idle = sum(s.end - s.start for s in slow.idle() if s.lane == lane)
    assert abs(idle + busy - (last - first)) < 1e-6

# %% [markdown]
# ## 2. The lint names the mistake
#
# The trace shows the signature: the thread waited in every round for ops that needed
# nothing from the earlier rounds.

# %%
findings = mx.engine.lint(slow)
for finding in findings:
    print(f"[{finding.rule}] {finding.message}")
assert [f.rule for f in findings] == ["wait_in_loop"]

# %% [markdown]
# ## 3. What if? Replays before the fix
#
# Would more workers help? `replay` list-schedules the recorded program — the same
# dependencies, the same measured run times, the same front end with its waits — on four
# workers instead. And what would a twice faster `compute` buy?

# %%
as_run = slow.replay()
more_workers = slow.replay(workers=4)
faster_compute = slow.replay(scale={"compute": 0.5})
print(f"replayed as run: {1e3 * as_run.makespan:.1f} ms")
print(f"on 4 workers:    {1e3 * more_workers.makespan:.1f} ms")
print(f"compute 2x:      {1e3 * faster_compute.makespan:.1f} ms")
assert (
    more_workers.makespan > 0.9 * as_run.makespan
)  # more workers buy nothing: the waits serialise
assert faster_compute.makespan < 0.85 * as_run.makespan
widgets.Timeline(more_workers.trace)

# %% [markdown]
# The replayed trace is a trace like any other — the four-worker timeline above shows two
# workers that never get anything to do. Lineage says what each op depends on and what
# depends on it (clicking an op in `widgets.Timeline(...).canvas()` marks both):

# %%
ancestors, descendants = slow.lineage(slow_computes[1])
print("compute #1 depends on", [ops[i].name for i in ancestors], "and feeds", descendants)
assert sorted(ops[i].name for i in ancestors) == ["load_a", "load_b"] and descendants == []

# %% [markdown]
# ## 4. The fix: wait once, after the loop

# %%
with mx.engine.trace() as fast:
    rounds(wait_each_round=False)
assert mx.engine.lint(fast) == []
widgets.Timeline(fast)

# %% [markdown]
# ## 5. The two runs compared
#
# Ops are matched across the runs by name, vars and occurrence; the rows are ranked by how
# much each op's run time changed, and the runs' makespan, overlap (ops running at once),
# critical path and idle time by reason sit side by side:

# %%
diff = slow.diff(fast)
print(diff.to_text(top=5))
assert not diff.only_a() and not diff.only_b()  # the same ops ran
assert diff.b.makespan < diff.a.makespan  # measured sleeps: about 0.75x; a busy machine narrows it
assert diff.b.overlap > diff.a.overlap
assert diff.b.idle["nothing_pushed"] < diff.a.idle["nothing_pushed"]
widgets.TraceDiffView(slow, fast)

# %% [markdown]
# Now more workers *would* help — the replay of the fixed run says how much:

# %%
fixed_on_4 = fast.replay(workers=4)
print(
    f"fixed: {1e3 * fast.replay().makespan:.1f} ms on 2 workers, {1e3 * fixed_on_4.makespan:.1f} ms on 4"
)
assert fixed_on_4.makespan < 0.8 * fast.replay().makespan

# %% [markdown]
# **Summary.** `trace.idle()` explains every idle microsecond (nothing pushed / waiting on a
# var, naming it and its holder / ready but not started); `mx.engine.lint` names the mistake
# and its fix; `trace.replay` answers "what if" before you buy hardware or optimise a kernel;
# `trace.diff` and `TraceDiffView` show what a change did, op by op.
