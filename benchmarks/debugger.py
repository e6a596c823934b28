"""Debugger benchmark: how fast two traces diff, and how well a replay predicts a real run.

Figures, not tests (issue 33).

Diff: two traces of 5,000 ops each (two chains of no-op ops on the naive
engine, one op slowed by 5 ms in run B) are compared with ``Trace.diff``; the peer is
``Trace.ops()`` of the same two traces (building their models, which the diff
does too), timed in the same run.  Target: < 2 s.

Replay: a program is recorded once, then ``Trace.replay`` predicts the
makespan (first push to last end) of a run under a change — other worker
counts, ops slowed by injected sleeps, the naive engine's program on a pool,
a LeNet training step — and the changed program is run and measured; each figure is the median of
``--rounds`` interleaved rounds (record + predict, then measure), so both
sides see the same load on a shared machine.  Target: predicted within 10 % of measured in
at least five scenarios.

Run: ``PYTHONPATH=. python benchmarks/debugger.py [--rounds 5]``.

Figures (debug3, the 2 shared cores at load 3-5, ``--rounds 5``): diff 0.44-0.62 s
(2.2-6.3x the peer); replay errors -0.9..+1.4 % in the six sleep-dominated
scenarios (same run, conv 2x slower, 1 and 3 workers instead of 2, the naive
engine's program on 2 workers, the naive engine from a threaded run), the LeNet
step replayed -1.2 % (2 workers) and +11.0 % (1 worker; its run time swings
from 30 to 500 ms with the machine's load): 7 of 8 within 10 %.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))

from _util import table

import mxnb as mx
from mxnb.engine.replay import makespan
from mxnb.engine.trace_model import TraceModel

CPU = mx.cpu()


def engine_with(kind: str, workers: int | None = None) -> mx.engine.Engine:
    """A private engine of ``kind``; ``workers``: its CPU worker count."""
    old = os.environ.get("MXNB_CPU_WORKER_NTHREADS")
    if workers is not None:
        os.environ["MXNB_CPU_WORKER_NTHREADS"] = str(workers)
    try:
        return mx.engine.create(kind)
    finally:
        if old is None:
            os.environ.pop("MXNB_CPU_WORKER_NTHREADS", None)
        else:
            os.environ["MXNB_CPU_WORKER_NTHREADS"] = old


def sleeper(seconds: float):
    return lambda rctx: time.sleep(seconds)


def pipeline(engine, slow: float = 1.0, ops: int = 6) -> mx.engine.Trace:
    """Three chains: 'conv' ops (4 ms x ``slow``) feed 'fc' ops (2 ms); a wait at the end."""
    with mx.engine.trace() as tr:
        for chain in range(3):
            var, out = engine.new_var(name=f"x{chain}"), engine.new_var(name=f"y{chain}")
            for i in range(ops):
                engine.push_sync(sleeper(0.004 * slow), CPU, mutate_vars=[var], name=f"conv{i}")
                engine.push_sync(sleeper(0.002), CPU, [var], [out], name=f"fc{i}")
        engine.wait_for_all()
    return tr


def scenario(rounds: int, record, predict, measure) -> tuple[float, float]:
    """Medians of ``rounds`` interleaved rounds: (predicted from a fresh recording, measured)."""
    predicted, actual = [], []
    for _ in range(rounds):
        predicted.append(predict(record()))
        actual.append(makespan(TraceModel(measure().events)))
    return statistics.median(predicted), statistics.median(actual)


def lenet_step(workers: int | None):
    """A LeNet forward / backward / SGD step on the process-wide threaded engine: (run, trace)."""
    from mxnb.executor import zoo

    old = os.environ.get("MXNB_CPU_WORKER_NTHREADS")
    if workers is not None:
        os.environ["MXNB_CPU_WORKER_NTHREADS"] = str(workers)
    mx.engine.set_engine("threaded_per_device")
    if old is None:
        os.environ.pop("MXNB_CPU_WORKER_NTHREADS", None)
    else:
        os.environ["MXNB_CPU_WORKER_NTHREADS"] = old
    batch = 64
    exe = zoo.lenet().simple_bind(CPU, data=(batch, 1, 28, 28), grad_req="write")
    rng = np.random.default_rng(0)
    for name, array in exe.arg_dict.items():
        if name not in ("data", "softmax_label"):
            array[:] = rng.uniform(-0.1, 0.1, array.shape).astype(np.float32)
    data = mx.nd.array(rng.standard_normal((batch, 1, 28, 28)).astype(np.float32))
    label = mx.nd.array(rng.integers(0, 10, batch).astype(np.float32))
    params = [n for n in exe.arg_dict if n not in ("data", "softmax_label")]

    def run() -> mx.engine.Trace:
        mx.nd.waitall()
        with mx.engine.trace() as tr:
            exe.forward(is_train=True, data=data, softmax_label=label)
            exe.backward()
            for name in params:
                exe.arg_dict[name] -= 0.01 * exe.grad_dict[name]
            mx.nd.waitall()
        return tr

    run()  # warm up
    return run


def replay_scenarios(rounds: int) -> list[list[str]]:
    rows = []

    def add(name: str, record, predict, measure) -> None:
        predicted, actual = scenario(rounds, record, predict, measure)
        error = (predicted - actual) / actual
        rows.append([name, f"{1e3 * predicted:.1f}", f"{1e3 * actual:.1f}", f"{100 * error:+.1f}%"])
        print(
            f"  {name}: predicted {1e3 * predicted:.1f} ms, measured {1e3 * actual:.1f} ms",
            flush=True,
        )

    two = engine_with("threaded_per_device", 2)
    one = engine_with("threaded_per_device", 1)
    three = engine_with("threaded_per_device", 3)
    naive = engine_with("naive")
    on_two = lambda: pipeline(two)
    add(
        "same program, replayed (threaded, 2 workers)",
        on_two,
        lambda t: t.replay().makespan,
        on_two,
    )
    add(
        "conv slowed 2x by injected sleeps",
        on_two,
        lambda t: t.replay(scale={"conv*": 2.0}).makespan,
        lambda: pipeline(two, slow=2.0),
    )
    add(
        "1 worker instead of 2",
        on_two,
        lambda t: t.replay(workers=1).makespan,
        lambda: pipeline(one),
    )
    add(
        "3 workers instead of 2",
        on_two,
        lambda t: t.replay(workers=3).makespan,
        lambda: pipeline(three),
    )
    add(
        "naive engine's program on 2 workers",
        lambda: pipeline(naive),
        lambda t: t.replay(workers=2).makespan,
        on_two,
    )
    add(
        "the naive engine, from a threaded run",
        on_two,
        lambda t: t.replay(workers=1).makespan,
        lambda: pipeline(naive),
    )
    for engine in (two, one, three, naive):
        engine.shutdown()
    step_two = lenet_step(2)
    add(
        "LeNet training step (2 workers), replayed",
        step_two,
        lambda t: t.replay().makespan,
        step_two,
    )
    step_one = lenet_step(1)
    add(
        "LeNet training step (1 worker), replayed",
        step_one,
        lambda t: t.replay().makespan,
        step_one,
    )
    return rows


def chain_trace(engine, ops: int, slow_op: int | None = None) -> mx.engine.Trace:
    with mx.engine.trace() as tr:
        a, b = engine.new_var(name="a"), engine.new_var(name="b")
        for i in range(ops // 2):
            for var, side in ((a, "left"), (b, "right")):
                seconds = 0.005 if (i == slow_op and side == "right") else 0.0
                engine.push_sync(sleeper(seconds), CPU, mutate_vars=[var], name=f"{side}")
        engine.wait_for_all()
    return tr


def diff_figures() -> list[list[str]]:
    engine = engine_with("naive")  # the fewest threads: the least noise beside the planted 5 ms
    a, b = chain_trace(engine, 5000), chain_trace(engine, 5000, slow_op=1234)
    engine.shutdown()
    _ = a.events, b.events  # built once, outside the timings
    start = time.perf_counter()
    a.ops(), b.ops()
    peer = time.perf_counter() - start
    start = time.perf_counter()
    d = a.diff(b)
    seconds = time.perf_counter() - start
    first = d.rows[0]
    return [
        ["ops per trace", f"{len(a.ops())} / {len(b.ops())}"],
        ["Trace.diff seconds", f"{seconds:.3f}"],
        ["peer: Trace.ops() of both, seconds", f"{peer:.3f}"],
        ["diff / peer", f"{seconds / peer:.1f}x"],
        ["first row (the planted 5 ms)", f"{first.name} {1e3 * first.change:+.3f} ms"],
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    print(
        table(
            ["figure", "value"], diff_figures(), title="diff of two 5,000-op traces (target < 2 s)"
        )
    )
    print()
    rows = replay_scenarios(args.rounds)
    print(
        table(
            ["scenario", "predicted ms", "measured ms", "error"],
            rows,
            title="replay against measured runs (target: within 10 % in >= 5 scenarios)",
        )
    )
    within = sum(abs(float(r[3].rstrip("%"))) <= 10 for r in rows)
    print(f"{within} of {len(rows)} scenarios within 10 %")


if __name__ == "__main__":
    main()
