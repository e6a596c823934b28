"""NDArray benchmark: the cost of a small imperative op, and large elementwise throughput.

Measured in one run, as ratios against peers measured in the same run:

* ``a += 1`` on a 1-element array and ``c = a + b`` on 100-element arrays, in
  µs per op (push + run, amortised over a loop ended by ``waitall``), beside
  plain numpy doing the same, and as a ratio to ``ThreadPoolExecutor(2)``'s
  per-task cost (submit + run + result) measured in the same rounds.
  Target: <= 0.8x the executor (MXNet 1.9.1's own NDArray ops cost about
  18 µs here).
  The "engine op µs" column is a bare engine op (no-op function, one read,
  one write) measured in the same run: the part of each figure that is the
  engine's, not the NDArray layer's.
* ``1000 x 1000`` float32 elementwise chains (``x = (a + b) * c - a`` …)
  relative to numpy computing the same chain.  Target: within 1.3x.

Each measurement is taken ``--repeat`` times after a warm-up, per engine, in
rounds: every round times the peer and then each mxnb figure, back to back,
so a ratio compares figures taken close in time (this machine's speed drifts
by tens of percent within seconds).  Figures are medians over the rounds;
each ratio is the median of the per-round ratios, and ``spread`` gives the
lowest and highest per-round ratio.

Run: ``python benchmarks/ndarray.py [--repeat 7] [--engines naive,threaded_per_device]``.
"""

from __future__ import annotations

import argparse
import functools
import os
import statistics
import sys
import time
from collections.abc import Callable

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from _util import ExecutorPeer

import mxnb as mx

SMALL_TARGET = 0.8  # x ThreadPoolExecutor per-task cost
LARGE_TARGET = 1.3  # x numpy


def _round_times(runs: dict[str, Callable[[], None]], repeat: int) -> dict[str, list[float]]:
    """Seconds of each run, ``repeat`` rounds; a round runs each once, in order, back to back."""
    for run in runs.values():
        run()  # warm-up: plans cached, pool filled
    times: dict[str, list[float]] = {name: [] for name in runs}
    for _ in range(repeat):
        for name, run in runs.items():
            start = time.perf_counter()
            run()
            times[name].append(time.perf_counter() - start)
    return times


def engine_push_run(count: int) -> Callable[[], None]:
    """A bare engine op (one const var, one mutate var, a no-op): the engine's own share."""
    eng = mx.engine.get()
    read, write = eng.new_var("bench_read"), eng.new_var("bench_write")
    ctx = mx.cpu()

    def noop(run_ctx: object) -> None:
        return None

    def run() -> None:
        for _ in range(count):
            eng.push_sync(noop, ctx, [read], [write], 0, "noop")
        eng.wait_for_all()

    return run


def small_op_runs(count: int) -> dict[str, Callable[[], None]]:
    """The two small imperative ops, mxnb on the current engine and numpy."""
    one = mx.nd.ones((1,))
    a, b = mx.nd.ones((100,)), mx.nd.ones((100,))
    one_np = np.ones((1,), np.float32)
    a_np, b_np = np.ones((100,), np.float32), np.ones((100,), np.float32)

    def mx_iadd() -> None:
        nonlocal one
        for _ in range(count):
            one += 1
        mx.nd.waitall()

    def mx_add() -> None:
        for _ in range(count):
            c = a + b  # noqa: F841 - dropped: freed at once if idle, else its block is parked
        mx.nd.waitall()

    def np_iadd() -> None:
        for _ in range(count):
            one_np.__iadd__(1)

    def np_add() -> None:
        for _ in range(count):
            c = a_np + b_np  # noqa: F841

    return {
        "a += 1 (1 elem)": mx_iadd,
        "c = a + b (100)": mx_add,
        "numpy a += 1": np_iadd,
        "numpy c = a + b": np_add,
    }


def large_chain_runs(length: int = 10) -> dict[str, Callable[[], None]]:
    """A chain of ``length`` 1000x1000 float32 elementwise ops: mxnb and numpy."""
    rng = np.random.default_rng(0)
    a_np, b_np, c_np = (rng.random((1000, 1000), dtype=np.float32) for _ in range(3))
    a, b, c = mx.nd.array(a_np), mx.nd.array(b_np), mx.nd.array(c_np)

    def mx_chain() -> None:
        x = a + b
        for step in range(length - 1):
            x = x * c if step % 2 == 0 else x - a
        x.wait_to_read()

    def np_chain() -> None:
        x = a_np + b_np
        for step in range(length - 1):
            x = x * c_np if step % 2 == 0 else x - a_np

    return {"numpy": np_chain, "mxnb": mx_chain}


def _ratio(mine: list[float], peer: list[float]) -> tuple[float, float, float]:
    """Median, lowest and highest of the per-round ratios mine / peer."""
    ratios = sorted(m / p for m, p in zip(mine, peer))
    return statistics.median(ratios), ratios[0], ratios[-1]


def _table(rows: list[tuple[str, ...]]) -> str:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(cell.ljust(width) for cell, width in zip(row, widths)) for row in rows]
    lines.insert(1, "  ".join("-" * width for width in widths))
    return "\n".join(lines)


def main() -> None:
    """Print the figures per engine."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7, help="rounds per engine")
    parser.add_argument("--count", type=int, default=5000, help="small ops per timed run")
    parser.add_argument("--engines", default="naive,threaded_per_device")
    args = parser.parse_args()
    count = args.count
    print("x executor: mxnb µs / ThreadPoolExecutor(2) per-task µs, measured in the same rounds")
    rows = [
        (
            "engine",
            "op",
            "mxnb µs",
            "engine op µs",
            "executor µs",
            "numpy µs",
            "x executor",
            "spread",
            f"target <= {SMALL_TARGET}x",
        )
    ]
    large_rows = [
        (
            "engine",
            "1000x1000 chain of 10",
            "mxnb ms",
            "numpy ms",
            "x numpy",
            "spread",
            f"target <= {LARGE_TARGET}x",
        )
    ]
    previous = mx.engine.engine_type()
    try:
        for name in args.engines.split(","):
            mx.engine.set_engine(name)
            peer = ExecutorPeer()
            try:
                runs = {
                    "executor": functools.partial(peer.run, count),
                    **small_op_runs(count),
                    "engine": engine_push_run(count),
                }
                times = _round_times(runs, args.repeat)
            finally:
                peer.close()
            us = {key: statistics.median(values) / count * 1e6 for key, values in times.items()}
            for op, peer in (
                ("a += 1 (1 elem)", "numpy a += 1"),
                ("c = a + b (100)", "numpy c = a + b"),
            ):
                ratio, low, high = _ratio(times[op], times["executor"])
                rows.append(
                    (
                        name,
                        op,
                        f"{us[op]:.1f}",
                        f"{us['engine']:.1f}",
                        f"{us['executor']:.1f}",
                        f"{us[peer]:.2f}",
                        f"{ratio:.2f}",
                        f"{low:.2f}-{high:.2f}",
                        "ok" if ratio <= SMALL_TARGET else "MISSED",
                    )
                )
            chain = _round_times(large_chain_runs(), args.repeat)
            ratio, low, high = _ratio(chain["mxnb"], chain["numpy"])
            large_rows.append(
                (
                    name,
                    "x=(a+b)*c-a...",
                    f"{statistics.median(chain['mxnb']) * 1e3:.1f}",
                    f"{statistics.median(chain['numpy']) * 1e3:.1f}",
                    f"{ratio:.2f}",
                    f"{low:.2f}-{high:.2f}",
                    "ok" if ratio <= LARGE_TARGET else "MISSED",
                )
            )
    finally:
        mx.engine.set_engine(previous)
    print()
    print(_table(rows))
    print()
    print(_table(large_rows))


if __name__ == "__main__":
    main()
