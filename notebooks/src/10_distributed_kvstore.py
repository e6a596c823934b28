# %% [markdown]
# # 10 — The distributed KVStore: two workers, one parameter server, one timeline
#
# Notebook 09 trained on two devices of *one* process. When one machine is not enough, MXNet
# runs a **parameter server**: servers hold the parameters (sharded by key), workers push
# gradients and pull weights back, and the optimizer runs on the servers. mxnb runs the
# servers as **Ray actors**, so the same job runs on this laptop and on a Ray cluster.
#
# **What you will learn**
#
# 1. how to start a 2-worker `dist_sync` job from a notebook with `python -m mxnb.launch`;
# 2. what the job looks like on **one timeline**: one row per worker and server, and the
#    arrows *push → server update → pull* (asserted: every update consumed both workers'
#    pushes, every pull read an update);
# 3. what changes with `dist_async`, on the same picture.

# %%
import pathlib
import shutil
import subprocess
import sys
import tempfile
import textwrap

import mxnb as mx
from mxnb.kvstore.dist_trace import ClusterTrace
from mxnb.widgets import FigureImage

workdir = pathlib.Path(tempfile.mkdtemp(prefix="mxnb-dist-"))

# %% [markdown]
# ## 1. The worker's script
#
# Every worker runs the same script. `mx.kv.create('dist_sync')` finds the job from the
# environment the launcher sets (`MXNB_DIST_RANK`, `MXNB_DIST_NUM_WORKERS`, ...). Each worker
# takes **its half of every batch** (the `NDArrayIter` sharding pattern: rows
# `rank::num_workers`), computes the gradient of a small linear model, pushes it and pulls the
# weights. With `kv.trace()` each process records its engine ops and its pushes / pulls; the
# servers record their updates; `kv.gather_trace()` merges them on rank 0.

# %%
WORKER = textwrap.dedent(
    """
    import sys
    import numpy as np
    import mxnb as mx

    for kvtype in ('dist_sync', 'dist_async'):
        kv = mx.kv.create(kvtype)
        rng = np.random.default_rng(0)
        x = rng.normal(size=(64, 4)).astype('float32')
        y = x @ np.array([1.0, -2.0, 0.5, 3.0], dtype='float32')
        x, y = x[kv.rank::kv.num_workers], y[kv.rank::kv.num_workers]  # this worker's shard
        keys = ['w', 'b'] if kvtype == 'dist_sync' else ['async_w', 'async_b']

        kv.init(keys, [mx.nd.zeros(4), mx.nd.zeros(1)])
        kv.set_optimizer(mx.optimizer.create('sgd', learning_rate=0.1, momentum=0.5,
                                             rescale_grad=1.0 / 64))
        w, b = mx.nd.zeros(4), mx.nd.zeros(1)
        with kv.trace():
            for step in range(4):
                kv.pull(keys, out=[w, b])
                err = x @ w.asnumpy() + b.asnumpy() - y
                kv.push(keys, [mx.nd.array(x.T @ err * 2), mx.nd.array([err.sum() * 2])])
            kv.pull(keys, out=[w, b])
            mx.nd.waitall()
        merged = kv.gather_trace()
        if merged is not None:
            merged.save(f'{sys.argv[1]}/{kvtype}.json')
        weights = ', '.join(f'{v:.3f}' for v in w.asnumpy())
        print(f'{kvtype} worker {kv.rank}: w = [{weights}]', flush=True)
    """
)
script = workdir / "worker.py"
_ = script.write_text(WORKER)

# %% [markdown]
# ## 2. Launch two workers and one server
#
# `python -m mxnb.launch -n 2 -s 1 <command>` starts a private Ray instance on this machine,
# the server actor, and the two worker processes (the script runs a sync part, then an async
# part, in the same job). It exits non-zero if a worker fails (after
# stopping the others); every wait on a dead peer is bounded by `--timeout`.


# %%
command = [sys.executable, "-m", "mxnb.launch", "-n", "2", "-s", "1", "--timeout", "60"]
command += [sys.executable, str(script), str(workdir)]
print("starting a private Ray instance, 1 server and 2 workers (about half a minute)...", flush=True)
result = subprocess.run(command, capture_output=True, text=True, timeout=240, check=False)
print(result.stdout.strip())
assert result.returncode == 0, result.stderr[-2000:]
sync_trace = ClusterTrace.load(workdir / "dist_sync.json")
async_trace = ClusterTrace.load(workdir / "dist_async.json")
print(sync_trace.process_names())


# %% [markdown]
# ## 3. One timeline for the cluster
#
# Each row is a process: the two workers and the server, on one clock (each process
# exported its trace with its own offset between the wall clock and `perf_counter`). Blue bars
# are pushes, green the server's updates, orange the pulls. An arrow goes from each push to the
# update that applied it, and from that update to every pull that read its result.
#
# **Sync** (`dist_sync`): an update waits for *both* workers' pushes of that step — two arrows
# into each green bar — and a worker's pull waits for that update. The slower worker sets the
# pace; in exchange, 2 workers × half a batch give exactly 1 worker × the whole batch.

# %%
display(FigureImage(sync_trace.figure()))  # noqa: F821 - the notebook's display

links = sync_trace.links()
pushes_per_update = {}
for source, target in links:
    if source[0] == "push":
        pushes_per_update[target] = pushes_per_update.get(target, 0) + 1
assert pushes_per_update and set(pushes_per_update.values()) == {2}, pushes_per_update
assert any(source[0] == "update" and target[0] == "pull" for source, target in links)
print(f"{len(pushes_per_update)} updates, each applied once both workers had pushed")

# %% [markdown]
# The same merged trace holds every process's **engine** ops: on the workers the
# `kvstore.push:<key>` / `kvstore.pull:<key>` ops on the copy lane (they overlap compute just
# as the local store's do), on the server the optimizer's fused `sgd_mom_update:<key>`. The
# `Timeline` widget draws them, lanes prefixed with their process; `to_chrome_trace()` writes the
# whole job for Perfetto (ui.perfetto.dev), one process per worker and server, arrows included.

# %%
merged = sync_trace.trace()
timeline = mx.widgets.Timeline(merged, highlight_critical=False)
display(timeline)  # noqa: F821 - a Timeline shows as its PNG
names = {event.name for event in merged.events if hasattr(event, "name")}
assert {"kvstore.push:w", "kvstore.pull:b", "sgd_mom_update:w"} <= names
# beside the notebook: double-click it in the file browser to open the trace viewer
job = pathlib.Path("job.trace.json")
document = sync_trace.to_chrome_trace(job)
print(len({e["pid"] for e in document["traceEvents"]}), "processes in", job)

# %% [markdown]
# ## 4. Async on the same picture
#
# With `dist_async` the server applies each push **as it arrives**: one arrow into each green
# bar, no waiting for the other worker, and a pull reads whatever was last applied. Workers
# never wait for each other — but they compute on weights that may miss the other worker's
# latest gradient (stale gradients), so the result is no longer the one of a single process.
# The script above ran this second part in the same job, on keys `async_w` and `async_b`.

# %%
display(FigureImage(async_trace.figure()))  # noqa: F821
fan_in = {}
for source, target in async_trace.links():
    if source[0] == "push":
        fan_in[target] = fan_in.get(target, 0) + 1
assert fan_in and set(fan_in.values()) == {1}
print(f"{len(fan_in)} updates, one per push")
shutil.rmtree(workdir)  # the worker script and the traces: nothing left in the temp folder
