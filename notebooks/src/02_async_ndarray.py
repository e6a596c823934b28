# %% [markdown]
# # 02 — The asynchronous NDArray
#
# An `mx.nd` array is not its data. It is a block of memory from a storage pool, plus an
# **engine var** that orders every read and write of that block. Each operation is pushed to
# the dependency engine and **returns at once**; only `asnumpy()`, `wait_to_read()` and
# `mx.nd.waitall()` wait. That is how MXNet keeps Python out of the critical path.
#
# **What you will learn**
#
# 1. that ops return before they run, and `asnumpy` is where the waiting happens (timeline);
# 2. what waiting at the wrong place costs: a loop that waits serializes work that could
#    run on two workers;
# 3. how in-place updates and views are ordered by the array's var (read-after-write,
#    write-after-read, write-after-write edges);
# 4. why random draws are serialized (the random generator is a resource with its own var),
#    and why that makes seeds reproducible;
# 5. how freed arrays return to the storage pool and are handed out again (the memory view).

# %%
import time

import numpy as np
from IPython.display import display

import mxnb as mx
from mxnb import widgets
from mxnb.engine.tracing import OpEnd, OpPush, OpStart, StorageAlloc, WaitBegin, WaitEnd

mx.engine.set_engine("threaded_per_device")  # the default engine, stated for the reader
mx.random.seed(0)
print(mx.engine.get(), "workers:", mx.engine.get().workers())

# %% [markdown]
# ## 1. Ops return at once; `asnumpy` waits
#
# Three chained matrix products, `c = a·b`, `d = c·b`, `e = d·b`. We record the engine's
# events with `mx.engine.trace()` and note when the Python calls returned.

# %%
a = mx.nd.random.uniform(shape=(600, 600))
b = mx.nd.random.uniform(shape=(600, 600)) / 600
mx.nd.waitall()

with mx.engine.trace() as trace:
    start = time.perf_counter()
    c = mx.nd.dot(a, b)
    d = mx.nd.dot(c, b)
    e = mx.nd.dot(d, b)
    returned = time.perf_counter()
    result = e.asnumpy()  # the only line that waits
    done = time.perf_counter()

first_end = min(event.time for event in trace.events_of(OpEnd))
print(f"three pushes returned after {1e3 * (returned - start):.2f} ms")
print(f"the first dot finished after {1e3 * (first_end - start):.2f} ms")
print(f"asnumpy() returned after     {1e3 * (done - start):.2f} ms")
assert returned < first_end, "the calls returned before any product was computed"

# %% [markdown]
# The trace shows the main thread blocked in one wait (on `e`'s var) while a worker ran the
# three products one after the other — they form a chain, so there is nothing to overlap.
# Hatched bars are waits; the red outline is the critical path.

# %%
(wait,) = trace.events_of(WaitBegin)
wait_end = trace.events_of(WaitEnd)[0].time
assert wait_end >= max(event.time for event in trace.events_of(OpEnd))
expected = a.asnumpy() @ b.asnumpy() @ b.asnumpy() @ b.asnumpy()
np.testing.assert_allclose(result, expected, rtol=1e-4)
widgets.Timeline(trace)

# %% [markdown]
# ## 2. Waiting at the wrong place
#
# Six *independent* products. The first loop calls `asnumpy()` inside the loop (a habit
# from NumPy, or a `print` left in while debugging); the second pushes all six and waits
# once at the end.


# %%
def six_products(wait_inside):
    outputs = []
    for _ in range(6):
        y = mx.nd.dot(a, b)
        if wait_inside:
            y.asnumpy()
        outputs.append(y)
    mx.nd.waitall()
    return outputs


def most_ops_at_once(trace):
    """The largest number of ops running at the same moment in a trace."""
    changes = [(event.time, +1) for event in trace.events_of(OpStart)]
    changes += [(event.time, -1) for event in trace.events_of(OpEnd)]
    running = peak = 0
    for _, change in sorted(changes):
        running += change
        peak = max(peak, running)
    return peak


traces = {}
for wait_inside in (True, False):
    with mx.engine.trace() as traces[wait_inside]:
        start = time.perf_counter()
        six_products(wait_inside)
        print(
            f"wait inside the loop={wait_inside!s:5}: {1e3 * (time.perf_counter() - start):6.1f} ms, "
            f"at most {most_ops_at_once(traces[wait_inside])} products at once"
        )

assert most_ops_at_once(traces[True]) == 1  # each product waited for before the next push
assert most_ops_at_once(traces[False]) >= 2  # both CPU workers busy

# %% [markdown]
# Waiting inside the loop — one product at a time, the other worker idle:

# %%
widgets.Timeline(traces[True])

# %% [markdown]
# Waiting once at the end — both workers busy:

# %%
widgets.Timeline(traces[False])

# %% [markdown]
# ## 3. In-place updates and views, ordered by one var
#
# `a[:] = 0`, `a += 1` and writing through a view `a[0:2]` all *mutate* `a`'s var. The engine's
# rule — *two ops conflict when one of them writes a var the other touches; conflicting ops
# run in push order* — gives three kinds of edges:
#
# ```
#   r = dot(a, a)      reads a        (slow: still running when the next lines are pushed)
#   a[:] = 0           writes a   ──  waits for r:        write-after-read (WAR)
#   a += 1             writes a   ──  waits for a[:] = 0: write-after-write (WAW)
#   s = a.sum()        reads a    ──  waits for a += 1:   read-after-write (RAW)
#   v = a[0:2]; v[:] = 5   a view: same chunk, same var — ordered after s (WAR)
# ```

# %%
x = mx.nd.random.uniform(shape=(500, 500))
original = x.asnumpy()
with mx.engine.trace() as trace:
    r = mx.nd.dot(x, x)
    x[:] = 0
    x += 1
    s = x.sum()
    view = x[0:2]
    view[:] = 5
    mx.nd.waitall()

kinds = [
    (push.name, sorted({dep.kind.name for dep in push.waits_on}))
    for push in trace.events_of(OpPush)
]
for name, why in kinds:
    print(f"{name:24s} waits through: {', '.join(why) or '-'}")

# %% [markdown]
# Every edge is the one the rule demands, and the values prove the order: the product used
# the original `x` (the write waited for it), the sum saw `x` after `+= 1`, and the view
# wrote into `x` itself.

# %%
assert "WAR" in kinds[1][1] and "WAW" in kinds[2][1] and "RAW" in kinds[3][1]
np.testing.assert_allclose(r.asnumpy(), original @ original, rtol=1e-4)
assert s.asscalar() == 500 * 500
assert (x.asnumpy()[:2] == 5).all() and (x.asnumpy()[2:] == 1).all()
widgets.DependencyGraph(trace, show_vars=True)

# %% [markdown]
# ## 4. Random numbers are a serialized resource
#
# A sampler does not read or write any array you passed — yet two samplers on the same
# context are never run in parallel. Each asks for the context's **random resource**, whose
# generator carries its own engine var, and lists that var among the vars it *mutates*.
# So draws happen in push order, whatever the engine and however many workers: the same
# seed gives the same numbers.

# %%
with mx.engine.trace() as trace:
    u = mx.nd.random.uniform(shape=(4,))
    n = mx.nd.random.normal(shape=(4,))
    mx.nd.waitall()

random_var = mx.resource.request(mx.cpu(), mx.operator.ResourceRequest.RANDOM).var
first, second = trace.events_of(OpPush)
print(first.name, "mutates", first.mutate_vars, "|", second.name, "mutates", second.mutate_vars)
print("random resource var:", random_var.id, repr(random_var.name))
assert random_var.id in first.mutate_vars and random_var.id in second.mutate_vars

draws = []
for _ in range(2):
    mx.random.seed(42)
    draws.append(
        np.concatenate(
            [mx.nd.random.uniform(shape=(3,)).asnumpy(), mx.nd.random.normal(shape=(3,)).asnumpy()]
        )
    )
print(draws[0])
np.testing.assert_array_equal(draws[0], draws[1])

# %% [markdown]
# ## 5. Storage: freed blocks go back to a pool
#
# Allocating is the slow part of a small op, so the storage manager keeps freed blocks in a
# pool, by size class (powers of two), and hands them out again. A block is freed *through
# the engine* — `push_delete` runs after every op still using the array — so memory returns
# to the pool only once the work on it is done. The EngineMonitor's Memory tab shows it live.

# %%
mx.storage.release_all(mx.cpu())  # start from an empty pool, for a clear picture
monitor = widgets.EngineMonitor()
monitor.tabs.selected_index = 2  # the Memory tab; the others show the same run
display(monitor)
for step in range(5):
    x = mx.nd.ones((256, 256))
    y = x * 2
    del x, y  # the last references: their blocks are freed by the engine
    mx.nd.waitall()
monitor.detach()  # stop recording; the views stay
monitor.refresh()
trace = monitor.trace

allocs = trace.events_of(StorageAlloc)
print([("hit" if alloc.pool_hit else "miss") for alloc in allocs])
print(mx.storage.stats(mx.cpu()))
assert [alloc.pool_hit for alloc in allocs[:2]] == [False, False]  # the first step allocates
assert all(alloc.pool_hit for alloc in allocs[2:])  # every later step is served by the pool

# %% [markdown]
# The same memory view on its own: the blue line is memory handed to arrays, the dashed line
# what the process holds (in use + pooled); green marks are pool hits, red marks fresh
# allocations.

# %%
widgets.MemoryChart(trace)

# %% [markdown]
# ## 6. On a GPU: the launch and the device
#
# On a GPU an op "returns" when its kernels are *launched*, not when they have run. The GPU
# worker launches on its own stream and records a CUDA event there: the op's completion on
# the device. Whoever needs the result waits for that event — another stream on the device,
# the host only when it reads (`asnumpy`, `wait_to_read`). While tracing, the worker records
# one more event before the launch, so the timeline draws two lanes per GPU worker: its
# launches (`gpu(0)/0`) and when its kernels ran (`gpu(0)/0 device`). The Chrome file
# (`trace.to_chrome_trace`) joins each launch to its device run with a "launch" arrow.
#
# On a real GPU the device lane runs behind the launches: the host is free to launch the next
# op. Without one, this section runs on a *virtual* GPU whose `HostStream` runs each kernel
# as it is launched, so the two lanes coincide; the printout says which it was.

# %%
from mxnb.engine.device_timing import host_streams
from mxnb.engine.events import OpDevice
from mxnb.engine.threaded import ThreadedEnginePerDevice

before = (mx.engine.engine_type(), mx.context.virtual_gpus())
if mx.gpu(0).is_virtual or mx.context.num_gpus() == 0:  # no real GPU here
    ThreadedEnginePerDevice.virtual_streams = staticmethod(host_streams)
    mx.context.set_virtual_gpus(1)
    where = "a virtual GPU: its kernels run on the host as they are launched"
else:
    where = "a real GPU"
mx.engine.set_engine("threaded_per_device")  # its GPU workers get their streams when first used
with mx.engine.trace() as gpu_trace:
    a = mx.nd.ones((512, 512), ctx=mx.gpu(0))
    for _ in range(4):
        a = mx.nd.dot(a, a) * 1e-3
    a.wait_to_read()
runs = gpu_trace.events_of(OpDevice)
print(f"on {where}: {len(runs)} ops ran on the device, in lanes {sorted({r.stream for r in runs})}")
assert len(runs) >= 8 and all(r.stream.endswith(" device") and r.end >= r.time for r in runs)
widgets.Timeline(gpu_trace)

# %%
ThreadedEnginePerDevice.virtual_streams = None  # back as it was
mx.engine.set_engine(before[0])
mx.context.set_virtual_gpus(before[1])

# %% [markdown]
# **Summary.** NDArray calls push work and return; put the waits (`asnumpy`, `print`,
# `float(x)`) where you really need a value. In-place updates, views and even random draws
# are ordered by engine vars, so the results are the same as running line by line — only
# faster.
