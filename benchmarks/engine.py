"""Engine benchmark: microseconds per tiny op, two-chain matmul speedup, tracing cost.

Figures, not tests.  Every figure is printed beside a peer measured in the
same run: ``concurrent.futures.ThreadPoolExecutor(2)`` (submit + run + wait,
no dependency tracking at all) and a plain Python loop calling the function.

Workloads (N tiny no-op functions each, timed from the first push to the end
of ``wait_for_all``):
    independent   every op writes its own var
    chain         every op writes the same var (each waits for the previous)
    fan           one writer, N-2 readers of its var, one writer after them

Targets (issue 2): threaded engines <= 0.3x TPE per op, naive <= 0.15x,
two independent chains of 1500x1500 float64 matmuls >= 1.8x faster than in
sequence (BLAS pinned to one thread, run in a subprocess), tracing adds <=
0.6 us per op.

Run: ``python benchmarks/engine.py`` (``--quick`` for a smaller N).
"""

from __future__ import annotations

import gc
import json
import os
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor, wait

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from _util import best_of, ratio, table

import mxnb as mx

N = 20_000
ENGINES = ("naive", "threaded", "threaded_per_device", "step")


def noop(rctx: object) -> None:
    """The tiny op."""


def engine_workload(eng: mx.engine.Engine, kind: str, n: int) -> float:
    """Return seconds for n tiny ops of ``kind`` on ``eng`` (push to wait_for_all)."""
    ctx = mx.cpu()
    push = eng.push_sync
    if kind == "independent":
        variables = [eng.new_var() for _ in range(n)]
        start = time.perf_counter()
        for var in variables:
            push(noop, ctx, (), (var,))
    elif kind == "chain":
        var = eng.new_var()
        start = time.perf_counter()
        for _ in range(n):
            push(noop, ctx, (), (var,))
    else:
        var = eng.new_var()
        start = time.perf_counter()
        push(noop, ctx, (), (var,))
        for _ in range(n - 2):
            push(noop, ctx, (var,), ())
        push(noop, ctx, (), (var,))
    eng.wait_for_all()
    return time.perf_counter() - start


def tpe_cost(n: int) -> float:
    """Seconds for n no-op tasks through ThreadPoolExecutor(2): submit all, wait for all."""

    def task() -> None:
        pass

    with ThreadPoolExecutor(2) as pool:
        pool.submit(task).result()

        def run() -> None:
            wait([pool.submit(task) for _ in range(n)])

        return best_of(run, 3)


def loop_cost(n: int) -> float:
    """Seconds for calling the no-op n times in a plain loop."""

    def run() -> None:
        for _ in range(n):
            noop(None)

    return best_of(run, 3)


KINDS = ("independent", "chain", "fan")


def tiny_ops(n: int) -> list[list[str]]:
    tpe = tpe_cost(n) / n * 1e6
    loop = loop_cost(n) / n * 1e6
    rows = [
        ["ThreadPoolExecutor(2)", f"{tpe:.2f}", f"{tpe:.2f}", f"{tpe:.2f}", "1.00x"],
        ["plain loop", f"{loop:.2f}", f"{loop:.2f}", f"{loop:.2f}", ratio(loop, tpe)],
    ]
    for name in ENGINES:
        engine = mx.engine.create(name)
        try:
            engine_workload(engine, "independent", 2000)  # warm up
            us = [
                min(engine_workload(engine, kind, n) for _ in range(3)) / n * 1e6 for kind in KINDS
            ]
        finally:
            engine.shutdown()
        worst = max(u / tpe for u in us)
        rows.append([name, *(f"{u:.2f}" for u in us), f"{worst:.2f}x"])
    print(
        table(
            ["engine", "independent us/op", "chain us/op", "fan us/op", "worst vs TPE"],
            rows,
            title=f"Tiny ops (N={n}); targets: threaded <= 0.30x TPE, naive <= 0.15x",
        )
    )
    return rows


def tracing_cost(n: int) -> None:
    """CPU seconds (all threads) of traced and untraced chains, alternating, best of 5 each.

    CPU time, not wall time: on a shared machine it is the steadier measure of
    the work tracing adds.  Building the events (lazily, when the trace is
    first read) is timed apart, with the garbage collection its events cost:
    it happens off the hot path.
    """
    rows = []
    for name in ("naive", "threaded_per_device"):
        engine = mx.engine.create(name)
        plain, traced, build = [], [], []
        try:
            engine_workload(engine, "chain", 2000)
            for _ in range(5):
                start = time.process_time()
                engine_workload(engine, "chain", n)
                plain.append(time.process_time() - start)
                recorder = mx.engine.trace().attach()
                start = time.process_time()
                engine_workload(engine, "chain", n)
                traced.append(time.process_time() - start)
                start = time.process_time()
                recorder.detach()  # builds the events
                events = len(recorder)
                del recorder
                gc.collect()  # the collections the built events cost are the build's, not the next run's
                build.append(time.process_time() - start)
        finally:
            engine.shutdown()
        rows.append(
            [
                name,
                f"{min(plain) / n * 1e6:.2f}",
                f"{min(traced) / n * 1e6:.2f}",
                f"{(min(traced) - min(plain)) / n * 1e6:.2f}",
                f"{min(build) / n * 1e6:.2f}",
                str(events),
            ]
        )
    print(
        table(
            ["engine (chain)", "CPU us/op", "traced", "tracing adds", "building events", "events"],
            rows,
            title="Tracing cost, CPU us per op (target: adds <= 0.6 us/op)",
        )
    )


MATMUL_CHILD = r"""
import json, sys, time
import numpy as np
import mxnb as mx
size, length = int(sys.argv[1]), int(sys.argv[2])
rng = np.random.default_rng(0)
inputs = [rng.random((size, size)) for _ in range(2)]
state = [x.copy() for x in inputs]
def step(i):
    def fn(rctx):
        state[i] = (state[i] @ inputs[i]) / size
    return fn
def sequential():
    for i in (0, 1):
        for _ in range(length):
            step(i)(None)
def on_engine(eng):
    variables = [eng.new_var(name=f"chain{i}") for i in (0, 1)]
    for _ in range(length):
        for i in (0, 1):
            eng.push_sync(step(i), mx.cpu(), mutate_vars=[variables[i]], name=f"matmul{i}")
    eng.wait_for_all()
step(0)(None)
engines = {name: mx.engine.create(name) for name in ("threaded", "threaded_per_device")}
import threading
def two_threads():
    workers = [threading.Thread(target=lambda i=i: [step(i)(None) for _ in range(length)]) for i in (0, 1)]
    for w in workers: w.start()
    for w in workers: w.join()
best = dict.fromkeys(["sequential", "two plain threads", "threaded", "threaded_per_device"], float("inf"))
for _ in range(3):  # interleaved rounds, best of each: other load on the machine comes and goes
    t = time.perf_counter(); sequential(); best["sequential"] = min(best["sequential"], time.perf_counter() - t)
    t = time.perf_counter(); two_threads(); best["two plain threads"] = min(best["two plain threads"], time.perf_counter() - t)
    for name, eng in engines.items():
        t = time.perf_counter(); on_engine(eng); best[name] = min(best[name], time.perf_counter() - t)
for eng in engines.values():
    eng.shutdown()
print(json.dumps(best))
"""


def matmul_speedup(size: int = 1500, length: int = 4) -> None:
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
    result = subprocess.run(
        [sys.executable, "-c", MATMUL_CHILD, str(size), str(length)],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    best = json.loads(result.stdout.strip().splitlines()[-1])
    sequential = best["sequential"]
    rows = [["sequential (one thread)", f"{sequential:.2f}", "1.00x"]]
    for name in ("two plain threads", "threaded", "threaded_per_device"):
        rows.append([name, f"{best[name]:.2f}", f"{sequential / best[name]:.2f}x"])
    print(
        table(
            ["two chains", "seconds", "speedup"],
            rows,
            title=f"Two independent chains of {length} {size}x{size} float64 matmuls, BLAS pinned to 1 thread (target >= 1.8x)",
        )
    )


def main() -> None:
    n = 5_000 if "--quick" in sys.argv else N
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    print(
        f"mxnb engine benchmark on {os.cpu_count()} cores, Python {sys.version.split()[0]}, "
        f"load average {load} (other work on the machine skews the figures)\n"
    )
    tiny_ops(n)
    print()
    tracing_cost(n)
    print()
    matmul_speedup(length=2 if "--quick" in sys.argv else 4)


if __name__ == "__main__":
    main()
