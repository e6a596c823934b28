"""Distributed KVStore benchmark: push+pull throughput against Ray's own transport, LeNet scaling.

Figures, each a ratio against a peer measured in the same run on one local
Ray instance (workers are Ray tasks, :func:`mxnb.launch.run_tasks`):

1. **Throughput**: 2 workers each push + pull a ResNet-18-shaped parameter
   set twice over (2 x 11.7 M float32 = 93.5 MB, 122 keys, the largest above
   ``MXNET_KVSTORE_BIGARRAY_BOUND`` split across the servers) through 1 and
   2 servers, no updater, in MB/s per worker (bytes pushed + pulled / time),
   and the server calls a round took (the keys share calls: :mod:`mxnb.kvstore.dist_batch`).
   Peer: the same 2 workers moving the same arrays with Ray alone,
   ``ray.put`` -> an echo actor -> ``ray.get``.  Target: >= 0.5x.  The peer
   swings from run to run, so ``--rounds`` rounds interleave peer, 1 server and
   2 servers; a round's figure is the median of its timed repetitions, the
   ratio is taken within each round, and the table shows the rounds' median
   (and range).
2. **Per-key cost**: where one key's push + pull spends its time (an empty Ray
   actor call, ``ray.put``, an engine op), a key alone (one server call each way)
   and a key inside a list of 122 (the calls shared): the figures
   docs/scaling.md builds on.
3. **Step time**: a data-parallel LeNet-5 step (``Module.fit``, ``dist_sync``,
   batch 32 per worker) on 2 workers against 1 worker: weak scaling, the
   ratio of samples per second.

Run: ``python benchmarks/dist_kvstore.py [--reps 3] [--rounds 3]``.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable
from typing import Any

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
import ray
from _util import table

import mxnb as mx
from mxnb.executor import zoo
from mxnb.launch import run_tasks, start_ray


def values(results: list) -> list:
    """The workers' results; a worker's failure stops the benchmark with its message."""
    for result in results:
        if isinstance(result, Exception):
            raise SystemExit(f"dist_kvstore: a worker failed: {result}")
    return results


def resnet18_shapes() -> dict[str, tuple[int, ...]]:
    """The parameter shapes of ResNet-18 (ImageNet, 1000 classes), from the symbol."""
    net = zoo.resnet(18)
    shapes, _, _ = net.infer_shape(data=(1, 3, 224, 224))
    names = net.list_arguments()
    return {n: s for n, s in zip(names, shapes) if n not in ("data", "softmax_label")}


def param_set() -> dict[str, np.ndarray]:
    """Twice ResNet-18's parameters (copies ``a.*`` and ``b.*``): about 100 MB of float32."""
    rng = np.random.default_rng(0)
    arrays = {}
    for copy in ("a", "b"):
        for name, shape in resnet18_shapes().items():
            arrays[f"{copy}.{name}"] = rng.standard_normal(shape, dtype=np.float32)
    return arrays


def kvstore_rounds(kv, reps: int) -> tuple[list[float], float]:
    """Seconds of each round of push + pull of every key (after one warm-up round), and the
    server calls per round (batched: far fewer than 2 x the key parts)."""
    arrays = {k: mx.nd.array(v) for k, v in param_set().items()}
    keys = sorted(arrays)
    kv.init(keys, [arrays[k] for k in keys])
    outs = [mx.nd.zeros(arrays[k].shape) for k in keys]
    times = []
    for rep in range(reps + 1):
        kv.barrier()
        if rep == 1:
            calls = kv.calls
        start = time.perf_counter()
        kv.push(keys, [arrays[k] for k in keys])
        kv.pull(keys, out=outs)
        mx.nd.waitall()
        times.append(time.perf_counter() - start)
    return times[1:], (kv.calls - calls) / reps


@ray.remote(num_cpus=0)
class Echo:
    """The peer's far end: returns what it is given (Ray moves it both ways)."""

    def echo(self, value: np.ndarray) -> np.ndarray:
        return value


def ray_rounds(echo, reps: int) -> list[float]:
    """The same arrays through Ray alone: ``ray.put`` -> echo actor -> ``ray.get``."""
    arrays = list(param_set().values())
    times = []
    for _ in range(reps + 1):
        start = time.perf_counter()
        refs = [echo.echo.remote(ray.put(a)) for a in arrays]
        for value, ref in zip(arrays, refs):
            np.copyto(np.empty_like(value), ray.get(ref))  # land it in a worker-owned array
        times.append(time.perf_counter() - start)
    return times[1:]


def median_ms(fn: Callable[[], Any], times: int) -> float:
    """Median milliseconds of ``fn()`` over ``times`` calls (after one warm-up call)."""
    fn()
    spans = []
    for _ in range(times):
        start = time.perf_counter()
        fn()
        spans.append(time.perf_counter() - start)
    return 1e3 * float(np.median(spans))


def per_key_costs(kv, reps: int) -> list[tuple[str, float]]:
    """Where one key's push + pull spends its time (1 worker, 1 server), in ms: the pieces, a
    key alone (one call each way), and a key inside a batch of 122 (calls shared)."""
    server, engine = kv.servers[0], mx.engine.get()
    small, mega = np.ones(1, np.float32), np.ones(250_000, np.float32)
    flag = mx.nd.zeros(1)

    def engine_op() -> None:
        engine.push_async(lambda rc, done: done(), mx.cpu(), [], [flag._var], 0, "noop", copy=True)
        flag.wait_to_read()

    def round_trip(key: Any, value: mx.nd.NDArray, out: Any) -> Callable[[], None]:
        def run() -> None:
            kv.push(key, value)
            kv.pull(key, out=out)
            mx.nd.waitall()

        return run

    keys = [f"k{i}" for i in range(122)]
    kv.init(["one", "mega"] + keys, [mx.nd.zeros(1), mx.nd.zeros(mega.size)] + [flag] * 122)
    outs = [mx.nd.zeros(1) for _ in keys]
    n = reps * 10
    batch = median_ms(round_trip(keys, [mx.nd.ones(1)] * 122, outs), reps)
    return [
        ("Ray actor call, empty (ping)", median_ms(lambda: ray.get(server.ping.remote()), n)),
        ("ray.put, 1 element", median_ms(lambda: ray.put(small), n)),
        ("ray.put, 1 MB", median_ms(lambda: ray.put(mega), n)),
        ("engine op (async, empty) + wait", median_ms(engine_op, n)),
        (
            "push + pull, 1-element key alone",
            median_ms(round_trip("one", mx.nd.ones(1), outs[0]), n),
        ),
        (
            "push + pull, 1 MB key alone",
            median_ms(round_trip("mega", mx.nd.ones(mega.size), mx.nd.zeros(mega.size)), n),
        ),
        ("push + pull, 1-element key in a list of 122 (per key)", batch / 122),
    ]


def lenet_steps(kv, batches: int) -> float:
    """Seconds per ``Module.fit`` batch of LeNet-5 (batch 32 per worker) on random digits."""
    rng = np.random.default_rng(kv.rank)
    x = rng.standard_normal((32 * batches, 1, 16, 16)).astype(np.float32)
    y = rng.integers(0, 10, 32 * batches).astype(np.float32)
    module = mx.mod.Module(zoo.lenet5_digits(), context=mx.cpu())
    train = mx.io.NDArrayIter(x, y, batch_size=32)
    mx.random.seed(0)
    ends: list[float] = []
    module.fit(
        train,
        num_epoch=1,
        kvstore=kv,
        optimizer="sgd",
        batch_end_callback=lambda param: ends.append(time.perf_counter()),
    )
    return (ends[-1] - ends[1]) / (len(ends) - 2)  # the first two batches warm up


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--batches", type=int, default=8)
    args = parser.parse_args()
    start_ray(num_cpus=4, object_store_mb=600)
    try:
        megabytes = sum(a.nbytes for a in param_set().values()) / 1e6
        echo = Echo.remote()

        @ray.remote(num_cpus=1)
        def peer_worker() -> list[float]:
            return ray_rounds(echo, args.reps)

        # Interleaved rounds (the peer swings from run to run): each round measures the peer,
        # 1 server and 2 servers back to back; a round's figure is the median of its
        # workers' timed repetitions, and the ratios are taken within a round.
        rounds: dict[str, list[float]] = {"peer": [], "1": [], "2": []}
        calls: dict[str, list[float]] = {"1": [], "2": []}
        for _ in range(args.rounds):
            timings = ray.get([peer_worker.remote() for _ in range(2)])
            rounds["peer"].append(float(np.median(np.concatenate(timings))))
            for servers in (1, 2):
                results = values(
                    run_tasks(kvstore_rounds, 2, servers, "dist_sync", 120.0, reps=args.reps)
                )
                rounds[str(servers)].append(
                    float(np.median(np.concatenate([t for t, _ in results])))
                )
                calls[str(servers)].append(float(np.mean([c for _, c in results])))
        peer = np.array(rounds["peer"])
        rows = []
        for servers in ("1", "2"):
            ours = np.array(rounds[servers])
            ratios = peer / ours
            rows.append(
                [
                    f"push+pull, 2 workers, {servers} server(s)",
                    f"{2 * megabytes / np.median(ours):.0f}",
                    f"{2 * megabytes / np.median(peer):.0f}",
                    f"{np.median(ratios):.2f}x ({ratios.min():.2f}-{ratios.max():.2f})",
                    f"{np.median(calls[servers]):.0f}",
                ]
            )
        print(f"parameter set: {megabytes:.1f} MB, {len(param_set())} keys, {args.rounds} rounds")
        print(
            table(
                ["what", "mxnb MB/s", "ray put/get MB/s", "mxnb / ray (min-max)", "calls / round"],
                rows,
            )
        )
        costs = values(run_tasks(per_key_costs, 1, 1, "dist_sync", 120.0, reps=args.reps))[0]
        print(
            table(
                ["per-key cost (1 worker, 1 server)", "ms"], [[w, f"{ms:.3f}"] for w, ms in costs]
            )
        )
        one = values(run_tasks(lenet_steps, 1, 1, "dist_sync", 300.0, batches=args.batches))[0]
        two = max(values(run_tasks(lenet_steps, 2, 1, "dist_sync", 300.0, batches=args.batches)))
        print(
            table(
                ["LeNet-5 step (batch 32 / worker)", "ms / step", "samples / s"],
                [
                    ["1 worker", f"{1e3 * one:.1f}", f"{32 / one:.0f}"],
                    ["2 workers", f"{1e3 * two:.1f}", f"{64 / two:.0f}"],
                ],
            )
        )
        print(f"2 workers vs 1 (samples / s): {(64 / two) / (32 / one):.2f}x")
    finally:
        ray.shutdown()


if __name__ == "__main__":
    main()
