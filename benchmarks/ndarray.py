"""NDArray benchmark: the cost of a small imperative op, and large elementwise throughput.

Measured in one run, as ratios against peers measured in the same run:

* ``a += 1`` on a 1-element array and ``c = a + b`` on 100-element arrays, in
  µs per op (push + run, amortised over a loop ended by ``waitall``), beside
  plain numpy doing the same, and as a ratio to ``ThreadPoolExecutor(2)``'s
  per-task cost (submit + run + result).  Target: <= 0.8x the executor
  (about 10 µs; MXNet 1.9.1's own NDArray ops cost about 18 µs here).
  The "engine op µs" column is a bare engine op (no-op function, one read,
  one write) measured in the same run: the part of each figure that is the
  engine's, not the NDArray layer's.
* ``1000 x 1000`` float32 elementwise chains (``x = (a + b) * c - a`` …)
  relative to numpy computing the same chain.  Target: within 1.3x.

Every figure is the median of ``--repeat`` runs after a warm-up, per engine.

Run: ``python benchmarks/ndarray.py [--repeat 5] [--engines naive,threaded_per_device]``.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import numpy as np

import mxnb as mx

SMALL_TARGET = 0.8  # x ThreadPoolExecutor per-task cost
LARGE_TARGET = 1.3  # x numpy


def _median_time(run: Callable[[], None], repeat: int) -> float:
    run()  # warm-up: plans cached, pool filled
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def executor_task_us(count: int, repeat: int) -> float:
    """Per-task cost of ThreadPoolExecutor(2): submit ``count`` no-ops, wait for all."""
    pool = ThreadPoolExecutor(2)

    def noop() -> None:
        return None

    def run() -> None:
        futures = [pool.submit(noop) for _ in range(count)]
        for future in futures:
            future.result()

    try:
        return _median_time(run, repeat) / count * 1e6
    finally:
        pool.shutdown()


def engine_push_us(count: int, repeat: int) -> float:
    """µs per bare engine op (one const var, one mutate var, a no-op): the engine's own share."""
    eng = mx.engine.get()
    read, write = eng.new_var("bench_read"), eng.new_var("bench_write")
    ctx = mx.cpu()

    def noop(run_ctx: object) -> None:
        return None

    def run() -> None:
        for _ in range(count):
            eng.push_sync(noop, ctx, [read], [write], 0, "noop")
        eng.wait_for_all()

    return _median_time(run, repeat) / count * 1e6


def small_ops_us(count: int, repeat: int) -> dict[str, float]:
    """µs per op of the two small imperative ops, mxnb on the current engine and numpy."""
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
            c = a + b  # noqa: F841 - dropped: freed at once if idle, else in a batched delete op
        mx.nd.waitall()

    def np_iadd() -> None:
        for _ in range(count):
            one_np.__iadd__(1)

    def np_add() -> None:
        for _ in range(count):
            c = a_np + b_np  # noqa: F841

    return {
        "a += 1 (1 elem)": _median_time(mx_iadd, repeat) / count * 1e6,
        "c = a + b (100)": _median_time(mx_add, repeat) / count * 1e6,
        "numpy a += 1": _median_time(np_iadd, repeat) / count * 1e6,
        "numpy c = a + b": _median_time(np_add, repeat) / count * 1e6,
    }


def large_chain_ratio(repeat: int, length: int = 10) -> tuple[float, float]:
    """Seconds for a chain of ``length`` 1000x1000 float32 elementwise ops: (mxnb, numpy)."""
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

    return _median_time(mx_chain, repeat), _median_time(np_chain, repeat)


def _table(rows: list[tuple[str, ...]]) -> str:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(cell.ljust(width) for cell, width in zip(row, widths)) for row in rows]
    lines.insert(1, "  ".join("-" * width for width in widths))
    return "\n".join(lines)


def main() -> None:
    """Print the figures per engine."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--count", type=int, default=5000, help="small ops per timed run")
    parser.add_argument("--engines", default="naive,threaded_per_device")
    args = parser.parse_args()
    print("x executor: mxnb µs / ThreadPoolExecutor(2) per-task µs, the peer measured just before")
    rows = [
        (
            "engine",
            "op",
            "mxnb µs",
            "engine op µs",
            "executor µs",
            "numpy µs",
            "x executor",
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
            f"target <= {LARGE_TARGET}x",
        )
    ]
    previous = mx.engine.engine_type()
    try:
        for name in args.engines.split(","):
            mx.engine.set_engine(name)
            executor = executor_task_us(args.count, args.repeat)
            small = small_ops_us(args.count, args.repeat)
            bare = engine_push_us(args.count, args.repeat)
            for op, peer in (
                ("a += 1 (1 elem)", "numpy a += 1"),
                ("c = a + b (100)", "numpy c = a + b"),
            ):
                ratio = small[op] / executor
                rows.append(
                    (
                        name,
                        op,
                        f"{small[op]:.1f}",
                        f"{bare:.1f}",
                        f"{executor:.1f}",
                        f"{small[peer]:.2f}",
                        f"{ratio:.2f}",
                        "ok" if ratio <= SMALL_TARGET else "MISSED",
                    )
                )
            mine, peer = large_chain_ratio(args.repeat)
            ratio = mine / peer
            large_rows.append(
                (
                    name,
                    "x=(a+b)*c-a...",
                    f"{mine * 1e3:.1f}",
                    f"{peer * 1e3:.1f}",
                    f"{ratio:.2f}",
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
