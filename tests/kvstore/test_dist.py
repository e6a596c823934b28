"""dist_sync / dist_async on a local Ray instance (one per module): workers are Ray tasks here,
processes of the launcher in test_launch.py."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time

import numpy as np
import pytest
import ray

import mxnb as mx
from mxnb.kvstore.dist import DistError
from mxnb.kvstore.dist_server import states_from_bytes
from mxnb.launch import run_tasks, start_ray

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]
BATCH, EPOCHS = 8, 3


@pytest.fixture(scope="module")
def cluster():
    """One private Ray instance for the module (loopback node address, small object store)."""
    ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])
    address = start_ray(num_cpus=4, object_store_mb=200)
    assert address.startswith("127.0.0.1:"), address  # a private instance listens on loopback
    assert {node["NodeManagerAddress"] for node in ray.nodes()} == {"127.0.0.1"}
    yield address
    ray.shutdown()


def network():
    data = mx.sym.Variable("data")
    net = mx.sym.FullyConnected(data, num_hidden=6, name="fc1")
    net = mx.sym.Activation(net, act_type="relu", name="relu1")
    net = mx.sym.FullyConnected(net, num_hidden=3, name="fc2")
    return mx.sym.SoftmaxOutput(net, name="softmax")


def problem():
    rng = np.random.default_rng(7)
    x = rng.normal(size=(48, 5)).astype("float32")
    y = rng.integers(0, 3, size=48).astype("float32")
    params = {
        "fc1_weight": rng.normal(scale=0.3, size=(6, 5)),
        "fc1_bias": np.zeros(6),
        "fc2_weight": rng.normal(scale=0.3, size=(3, 6)),
        "fc2_bias": np.zeros(3),
    }
    return x, y, {k: mx.nd.array(v.astype("float32")) for k, v in params.items()}


def fit(x, y, params, batch, kvstore):
    module = mx.mod.Module(network(), context=mx.cpu())
    train = mx.io.NDArrayIter(x, y, batch_size=batch, shuffle=False)
    module.fit(
        train,
        num_epoch=EPOCHS,
        kvstore=kvstore,
        optimizer="sgd",
        optimizer_params={"learning_rate": 0.5, "momentum": 0.9, "wd": 0.001},
        arg_params=params,
        initializer=None,
    )
    params = {k: v.asnumpy() for k, v in module.get_params()[0].items()}
    return params, module._optimizer.rescale_grad


def sync_fit(kv):
    """The NDArrayIter sharding pattern (docs/scaling.md): rows ``rank::num_workers`` and a
    batch of ``global batch / num_workers``, so that the workers' batch ``i`` together are
    exactly the rows of the single process's batch ``i``."""
    x, y, params = problem()
    x, y = x[kv.rank :: kv.num_workers], y[kv.rank :: kv.num_workers]
    return fit(x, y, params, BATCH // kv.num_workers, kv)


def test_sync_sgd_momentum_two_workers_equal_one_process(cluster):
    x, y, params = problem()
    alone, rescale = fit(x, y, params, BATCH, "local")
    assert rescale == 1 / BATCH
    results = run_tasks(sync_fit, 2, 2, "dist_sync")
    for result in results:
        assert not isinstance(result, Exception), result
        together, rescale = result
        assert rescale == 1 / BATCH  # Module: 1 / (batch of a worker x num_workers), as MXNet
        for name, value in alone.items():
            np.testing.assert_allclose(together[name], value, rtol=1e-5, atol=1e-6, err_msg=name)
    moved = np.abs(alone["fc1_weight"] - params["fc1_weight"].asnumpy()).max()
    assert moved > 0.05  # the comparison is not of untouched parameters


RECORDS = os.path.join(os.path.dirname(__file__), "..", "io", "data", "images.rec")


def record_labels(kv):
    """This worker's labels of one epoch of ImageRecordIter sharded by the job's rank."""
    it = mx.io.ImageRecordIter(
        path_imgrec=RECORDS,
        data_shape=(3, 10, 12),
        batch_size=1,
        num_parts=kv.num_workers,
        part_index=kv.rank,
    )
    labels = [float(label) for batch in it for label in batch.label[0].asnumpy()]
    it.close()
    return labels


def test_image_record_iter_is_sharded_by_rank(cluster):
    alone = record_labels(mx.kv.create("local"))  # local: rank 0 of 1 worker, the whole file
    parts = run_tasks(record_labels, 2, 1, "dist_sync")
    assert len(alone) == 10
    assert parts[0] and parts[1]
    assert parts[0] + parts[1] == alone  # contiguous, disjoint, covering the file in order


def async_regression(kv, steps=60):
    rng = np.random.default_rng(kv.rank)
    truth = np.array([1.5, -2.0, 0.5], dtype="float32")
    kv.init("w", mx.nd.zeros(3))
    kv.set_optimizer(mx.optimizer.create("sgd", learning_rate=0.1))
    w = mx.nd.zeros(3)
    losses = []
    for _ in range(steps):
        x = rng.normal(size=(16, 3)).astype("float32")
        kv.pull("w", out=w)
        err = x @ w.asnumpy() - x @ truth
        losses.append(float((err**2).mean()))
        kv.push("w", mx.nd.array(x.T @ err / len(x)))
    kv.pull("w", out=w)
    return losses, w.asnumpy()


def test_async_converges(cluster):
    results = run_tasks(async_regression, 2, 1, "dist_async")
    for losses, w in results:
        assert losses[-1] < 0.01 * losses[0]
        np.testing.assert_allclose(w, [1.5, -2.0, 0.5], atol=0.05)


def big_array(kv):
    os.environ["MXNET_KVSTORE_BIGARRAY_BOUND"] = "1000"
    size = 3001
    kv.init("big", mx.nd.zeros(size))
    kv.init("small", mx.nd.zeros(10))
    placement = [(server, part) for server, part, _ in kv.placement("big", size)]
    kv.push("big", mx.nd.array(np.arange(size, dtype="float32")))
    out = mx.nd.zeros(size)
    kv.pull("big", out=out)
    value = out.asnumpy()  # waits for the engine's init, push and pull ops
    held = ray.get([server.held.remote() for server in kv.servers])
    return placement, value, held


def test_big_array_is_split_across_servers(cluster):
    results = run_tasks(big_array, 2, 2, "dist_sync")
    for placement, value, held in results:
        assert placement == [(0, 0), (1, 1)]
        np.testing.assert_array_equal(value, 2 * np.arange(3001, dtype="float32"))
        assert ("big", 0) in held[0] and ("big", 1) in held[1], held
        assert held[0][("big", 0)] + held[1][("big", 1)] == 3001


def barrier_times(kv):
    if kv.rank == 1:
        time.sleep(1.0)
    arrived = time.time()
    kv.barrier()
    return arrived, time.time()


def test_barrier_waits_for_every_worker(cluster):
    results = run_tasks(barrier_times, 3, 1, "dist_sync")
    last_arrival = max(arrived for arrived, _ in results)
    assert all(left >= last_arrival for _, left in results)


def init_with_my_own_shape(kv):
    shape = (2,) if kv.rank == 0 else (3,)
    kv.init(7, mx.nd.ones(shape))
    kv.push(7, mx.nd.ones(shape))
    out = mx.nd.zeros(shape)
    kv.pull(7, out=out)
    return out.asnumpy().tolist()


def test_workers_that_init_a_key_with_different_shapes_all_fail_naming_both(cluster):
    """Before: the server summed (2,) and (3,) pushes by broadcasting, rank 0 pulled garbage."""
    started = time.time()
    results = run_tasks(init_with_my_own_shape, 2, 1, "dist_sync", timeout=30)
    assert all(isinstance(result, Exception) for result in results), results
    for result in results:
        assert re.search(
            r"key 7: worker \d gives shape \((2|3),\) float32 but worker \d gave \((2|3),\)",
            str(result),
        ), result
    assert time.time() - started < 30  # told at once, not after the servers' timeout


def states_round_trip(kv, path):
    kv.init(["a", "b"], [mx.nd.ones(4), mx.nd.ones((2, 3))])
    kv.set_optimizer(mx.optimizer.create("sgd", learning_rate=0.1, momentum=0.9))
    for step in range(2):
        kv.push(["a", "b"], [mx.nd.ones(4) * step, mx.nd.ones((2, 3))])
    kv.save_optimizer_states(path)
    kv.push("a", mx.nd.ones(4) * 5)  # changes the momentum of "a"
    kv.load_optimizer_states(path)
    again = path + ".again"
    kv.save_optimizer_states(again)
    first, second = np.load(path), np.load(again)
    return sorted(first.files), all(
        np.array_equal(first[name], second[name]) for name in first.files
    )


def test_optimizer_states_round_trip(cluster, tmp_path):
    path = str(tmp_path / "states")
    results = run_tasks(states_round_trip, 1, 2, "dist_sync", path=path)
    files, equal = results[0]
    assert files == ["server0", "server1"] and equal
    with open(path, "rb") as stream, pytest.raises(DistError, match="2 servers, this job has 3"):
        states_from_bytes(stream.read(), 3, path)


def traced_steps(kv):
    kv.init(["w", "v"], [mx.nd.zeros(3), mx.nd.zeros(5)])
    kv.set_optimizer(mx.optimizer.create("sgd", learning_rate=0.1, momentum=0.9))
    out = [mx.nd.zeros(3), mx.nd.zeros(5)]
    with kv.trace():
        for _ in range(2):
            kv.push(["w", "v"], [mx.nd.ones(3), mx.nd.ones(5)])
            kv.pull(["w", "v"], out=out)
        mx.nd.waitall()
    merged = kv.gather_trace()
    if merged is None:
        return None
    names = {}
    for pid, _ in enumerate(merged.process_names(), start=1):
        names[pid] = {
            e["name"]
            for e in merged.to_chrome_trace()["traceEvents"]
            if e.get("pid") == pid and e.get("ph") == "X"
        }
    lanes = [lane.worker for lane in mx.widgets.Timeline(merged.trace()).lanes()]
    return merged.process_names(), names, merged.links(), lanes


def test_merged_trace_has_every_workers_and_servers_ops(cluster):
    results = run_tasks(traced_steps, 2, 2, "dist_sync", 30.0)
    assert results[1] is None  # only rank 0 gets the merged trace
    assert not isinstance(results[0], Exception), results[0]
    processes, names, links, lanes = results[0]
    assert processes == ["worker 0", "worker 1", "server 0", "server 1"]
    for pid in (1, 2):  # workers: engine push / pull ops and the kvstore lane
        assert {"kvstore.push:w", "kvstore.pull:v", "push w", "pull v"} <= names[pid]
    updates = names[3] | names[4]  # the servers ran the optimizer's fused op per key
    assert {"sgd_mom_update:w", "sgd_mom_update:v", "update w", "update v"} <= updates
    kinds = {(src[0], dst[0]) for src, dst in links}
    assert kinds == {("push", "update"), ("update", "pull")}
    # 2 keys x 2 steps: 2 pushes into each update, each update read by 2 pulls
    assert len(links) == 2 * 2 * (2 + 2)
    assert any(lane.startswith("worker1 ") for lane in lanes)
    assert any(lane.startswith("server0 ") for lane in lanes)


def dies_mid_training(kv):
    kv.init("w", mx.nd.zeros(4))
    out = mx.nd.zeros(4)
    for step in range(5):
        if kv.rank == 1 and step == 2:
            os._exit(3)
        kv.push("w", mx.nd.ones(4))
        kv.pull("w", out=out)
        out.wait_to_read()
    return "finished"


def survivor(kv):
    started = time.time()
    try:
        dies_mid_training(kv)
    except mx.base.MXNBError as exc:  # the engine's OpError, caused by the DistError
        return type(exc.__cause__).__name__, str(exc), time.time() - started
    return None, "no error", time.time() - started


def assert_worker_1_died_and_0_was_told(results, bound=4.0):
    """Worker 1 was killed in step 3; worker 0 got a DistError naming them within the bound."""
    assert isinstance(results[1], ray.exceptions.RayError)  # the killed worker
    cause, message, took = results[0]
    assert cause == "DistError", message
    assert "step 3" in message and "workers [1]" in message, message
    assert took < bound + 30.0


def test_dead_worker_makes_the_others_fail_within_the_bound(cluster):
    def scenario(kv):
        return dies_mid_training(kv) if kv.rank == 1 else survivor(kv)

    results = run_tasks(scenario, 2, 1, "dist_sync", timeout=4.0)
    assert_worker_1_died_and_0_was_told(results)


# -- the batched path: one call per server carries many keys (mxnb.kvstore.dist_batch) ----------
SHAPES = {"k0": (3,), "k1": (40, 30), "k2": (200, 150), "k3": (5,), "k4": (3001,), "k5": (7, 2)}


def gradients(rank, step):
    """Worker ``rank``'s gradients of ``step``: different per key, rank and step."""
    rng = np.random.default_rng(100 * step + rank)
    return {k: rng.standard_normal(shape).astype("float32") for k, shape in SHAPES.items()}


def list_against_per_key(kv):
    """Keys ``a.*`` pushed and pulled as one list (batched), ``b.*`` one key at a time, each
    waited for (one call per key): the same gradients give the same weights."""
    os.environ["MXNET_KVSTORE_BIGARRAY_BOUND"] = "1000"  # k4 is split across the servers
    keys = sorted(SHAPES)
    start = [mx.nd.ones(SHAPES[k]) for k in keys]
    kv.init([f"a.{k}" for k in keys] + [f"b.{k}" for k in keys], start + start)
    kv.set_optimizer(mx.optimizer.create("sgd", learning_rate=0.1, momentum=0.9, wd=0.01))
    outs = {f"{c}.{k}": mx.nd.zeros(SHAPES[k]) for c in "ab" for k in keys}
    calls = {}
    for copy in "ab":
        mx.nd.waitall()
        before = kv.calls
        for step in range(3):
            grads = gradients(kv.rank, step)
            if copy == "a":
                kv.push([f"a.{k}" for k in keys], [mx.nd.array(grads[k]) for k in keys])
                kv.pull([f"a.{k}" for k in keys], out=[outs[f"a.{k}"] for k in keys])
            for k in keys if copy == "b" else []:
                kv.push(f"b.{k}", mx.nd.array(grads[k]))
                kv.pull(f"b.{k}", out=outs[f"b.{k}"])
                outs[f"b.{k}"].wait_to_read()
        mx.nd.waitall()
        calls[copy] = kv.calls - before
    return {k: v.asnumpy() for k, v in outs.items()}, calls


def test_list_push_pull_equals_per_key(cluster):
    results = run_tasks(list_against_per_key, 2, 2, "dist_sync")
    for result in results:
        assert not isinstance(result, Exception), result
        values, calls = result
        for key in SHAPES:
            np.testing.assert_array_equal(values[f"a.{key}"], values[f"b.{key}"], err_msg=key)
            assert np.abs(values[f"a.{key}"] - 1).max() > 0.01  # the optimizer ran
        # per key: 3 steps x (6 keys + the second parts of k1, k2, k4) x (push + pull)
        assert calls["b"] == 3 * 9 * 2, calls
        assert calls["a"] < calls["b"], calls  # batched: keys shared calls


def sync_sums_with_a_slow_worker(kv):
    """No optimizer: each step's pulled value is the sum of both workers' pushes of that step,
    although worker 1 pushes late (worker 0's batched pull waits on the server)."""
    keys = sorted(SHAPES)
    kv.init(keys, [mx.nd.zeros(SHAPES[k]) for k in keys])
    outs = [mx.nd.zeros(SHAPES[k]) for k in keys]
    pulled = []
    for step in range(1, 4):
        if kv.rank == 1:
            time.sleep(0.3)
        kv.push(keys, [mx.nd.ones(SHAPES[k]) * (kv.rank + 1) * step for k in keys])
        kv.pull(keys, out=outs)
        pulled.append(
            [float(o.asnumpy().min()) for o in outs] + [float(o.asnumpy().max()) for o in outs]
        )
    return pulled


def test_batched_sync_step_waits_for_every_worker(cluster):
    results = run_tasks(sync_sums_with_a_slow_worker, 2, 2, "dist_sync")
    for result in results:
        assert not isinstance(result, Exception), result
        assert result == [[3.0 * step] * 2 * len(SHAPES) for step in (1, 2, 3)]


def dies_mid_batch(kv):
    keys = sorted(SHAPES)
    kv.init(keys, [mx.nd.zeros(SHAPES[k]) for k in keys])
    outs = [mx.nd.zeros(SHAPES[k]) for k in keys]
    started = time.time()
    for step in range(4):
        if kv.rank == 1 and step == 2:
            kv.push(keys[:3], [mx.nd.ones(SHAPES[k]) for k in keys[:3]])  # half a step's batch
            mx.nd.waitall()
            os._exit(3)
        kv.push(keys, [mx.nd.ones(SHAPES[k]) for k in keys])
        kv.pull(keys, out=outs)
        try:
            mx.nd.waitall()
        except mx.base.MXNBError as exc:
            return type(exc.__cause__).__name__, str(exc), time.time() - started
    return None, "no error", time.time() - started


def test_a_worker_dying_mid_batch_fails_the_others_within_the_bound(cluster):
    results = run_tasks(dies_mid_batch, 2, 2, "dist_sync", timeout=4.0)
    assert_worker_1_died_and_0_was_told(results)


SCRIPT = os.path.join(os.path.dirname(__file__), "dist_script.py")


def launch(cluster, timeout, *script_args):
    command = [sys.executable, "-m", "mxnb.launch", "-n", "2", "-s", "1", "--launcher", "ray"]
    command += ["--address", cluster, "--timeout", str(timeout), sys.executable, SCRIPT]
    started = time.time()
    result = subprocess.run(
        command + list(script_args), check=False, capture_output=True, text=True, timeout=300
    )
    return result, time.time() - started


def test_launcher_runs_every_worker_with_its_rank(cluster):
    result, _ = launch(cluster, 30, "train")
    assert result.returncode == 0, result.stderr[-3000:]
    # no updater: each step's value is the sum of the pushes, 1 + 2
    for rank in (0, 1):
        assert f"[worker {rank}] rank {rank} of 2: w = [3.0, 3.0]" in result.stdout


def test_launcher_stops_the_job_when_a_worker_dies(cluster, tmp_path):
    """Worker 1 exits with 3; worker 0 would sleep 10 minutes: the launcher kills it and exits 3."""
    pidfile = tmp_path / "rank0.pid"
    result, took = launch(cluster, 5, "die", str(pidfile))
    assert result.returncode == 3, result.stderr[-3000:]
    assert "worker 1 exited with code 3; stopping the others" in result.stderr
    assert took < 120  # far less than worker 0's sleep
    survivor = int(pidfile.read_text())
    with pytest.raises(ProcessLookupError):
        os.kill(survivor, 0)  # stopped (and reaped), not left running


def _marked(marker):
    """The pids of processes whose environment holds ``marker`` (the launcher's and below)."""
    pids = []
    for entry in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{entry}/environ", "rb") as handle:
                if marker.encode() in handle.read():
                    pids.append(int(entry))
        except OSError:
            continue
    return pids


def _runs(marker, prefix):
    """True once a process of the job marked ``marker`` has a command line starting with ``prefix``."""
    for pid in _marked(marker):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as handle:
                if handle.read().startswith(prefix.encode()):
                    return True
        except OSError:
            continue
    return False


def _interrupt_launcher(until):
    """Start ``mxnb.launch -n 1 sleep 60``, Ctrl-C it once ``until(marker)``; its code and leftovers.

    Whatever fails, the launcher is reaped and every process of the job killed.
    """
    marker = f"{os.getpid()}-{time.time()}"
    launcher = subprocess.Popen(
        [sys.executable, "-m", "mxnb.launch", "-n", "1", "sleep", "60"],
        env={**os.environ, "MXNB_TEST_MARK": marker},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        # SIGINT raises in the launcher even when this run ignores it (a background job)
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),  # noqa: PLW1509
    )
    try:
        deadline = time.time() + 90
        while not until(marker) and time.time() < deadline:
            time.sleep(0.05)
        assert until(marker), "the launcher never reached the point to interrupt"
        launcher.send_signal(signal.SIGINT)
        code = launcher.wait(60)
        stderr = launcher.stderr.read()
    finally:
        launcher.kill()
        launcher.wait()
        launcher.stderr.close()
        left = _marked(marker)
        for pid in left:
            os.kill(pid, signal.SIGKILL)
    return code, stderr, left


def test_ctrl_c_while_the_launcher_starts_ray_leaves_no_process():
    """Before: Ray's agents (the dashboard and runtime-env agents) outlived the launcher."""
    code, stderr, left = _interrupt_launcher(lambda marker: len(_marked(marker)) >= 6)
    assert code == 130, stderr
    assert "interrupted" in stderr
    assert not left, f"{len(left)} processes of the job left running"


@pytest.mark.parametrize(
    "prefix",
    ["ray::", "sleep"],
    ids=["while-the-servers-start", "while-the-job-runs"],
)
def test_ctrl_c_after_ray_started_exits_130_and_leaves_no_process(prefix):
    """Before: Ctrl-C while the servers started stopped the job, then the launcher
    crashed in Ray's exit hooks (exit code -11, not 130)."""
    code, stderr, left = _interrupt_launcher(lambda marker: _runs(marker, prefix))
    assert code == 130, stderr
    assert "interrupted" in stderr
    assert not left, f"{len(left)} processes of the job left running"
