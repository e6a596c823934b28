"""Where a long chain's bind + forward + backward time goes, phase by phase (issue 20, section 4).

Idea: the target "a 20,000-op chain within 10x of a 2,000-op one" holds when
every phase grows linearly.  This script runs the same sequence as
``memory_plan.long_chains`` (1k, 2k, 4k, 20k ops; each size builds and plans
its graph, then is bound and run from a collected heap and ends with a full
collection) and prints, for 2k and 20k, each phase's wall time, CPU time of
every thread, and the garbage collections that ran inside it (count per
generation, seconds).  The 20k / 2k ratio per phase shows which one grows
faster than the graph.  A ratio above 10 in the CPU column is a real
super-linear cost; one only in the wall column is the machine's load.

Then ``--rounds N`` runs the sequence N more times, each in a fresh process,
and prints each run's 20k / 2k ratio, wall and CPU, and their median: on a
busy machine one run says little.

Run: ``.venv/bin/python benchmarks/long_graphs.py [--rounds N]``.
"""

from __future__ import annotations

import gc
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

from memory_plan import _chain as chain  # the chain long_chains measures

import mxnb as mx
from mxnb.executor.graph import build_graph
from mxnb.executor.tournament import plan_graph

PHASES = ("bind", "forward", "backward", "waitall", "final gc")


class _Collections:
    """Counts the collector's passes per generation and their seconds (``gc.callbacks``)."""

    def __init__(self) -> None:
        self.counts = [0, 0, 0]
        self.seconds = 0.0
        self._start = 0.0
        gc.callbacks.append(self._note)

    def _note(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self._start = time.perf_counter()
        else:
            self.counts[info["generation"]] += 1
            self.seconds += time.perf_counter() - self._start

    def reset(self) -> None:
        """Start counting afresh."""
        self.counts = [0, 0, 0]
        self.seconds = 0.0


def bind_and_run(net: Any, collections: _Collections) -> dict[str, tuple]:
    """Bind, forward, backward, wait, collect: per phase (wall s, CPU s, gc counts, gc s)."""
    rows: dict[str, tuple] = {}
    exe = None

    def timed(name: str, fn: Callable[[], Any]) -> Any:
        collections.reset()
        cpu, wall = time.process_time(), time.perf_counter()
        out = fn()
        rows[name] = (
            time.perf_counter() - wall,
            time.process_time() - cpu,
            tuple(collections.counts),
            collections.seconds,
        )
        return out

    gc.collect()
    exe = timed("bind", lambda: net.simple_bind(mx.cpu(), x=(4, 4)))
    timed("forward", lambda: exe.forward(is_train=True))
    timed("backward", lambda: exe.backward(mx.nd.ones((4, 4))))
    timed("waitall", mx.nd.waitall)
    timed("final gc", gc.collect)
    return rows


def _totals(rows: dict[str, tuple]) -> tuple[float, float]:
    return sum(row[0] for row in rows.values()), sum(row[1] for row in rows.values())


def phase_table(collections: _Collections, show: bool = True) -> tuple[float, float]:
    """The sequence of ``long_chains``; the phases of 2k and 20k side by side.

    Returns the 20k / 2k ratios of the totals: wall, CPU.
    """
    measured = {}
    for length in (1000, 2000, 4000, 20000):
        net = chain(length)
        graph = build_graph(net, {"x": (4, 4)}, grad_req="write")  # as long_chains: kept alive
        plan_graph(graph)
        mx.executor.plan_memory(net, {"x": (4, 4)}, grad_req="write")
        measured[length] = bind_and_run(net, collections)
    small, large = measured[2000], measured[20000]
    (wall_a, cpu_a), (wall_b, cpu_b) = _totals(small), _totals(large)
    if not show:
        return wall_b / wall_a, cpu_b / cpu_a
    header = (
        f"{'phase':>9} {'2k wall':>8} {'2k CPU':>7} {'2k gc (0,1,2) s':>20} "
        f"{'20k wall':>9} {'20k CPU':>8} {'20k gc (0,1,2) s':>24} {'wall x':>7} {'CPU x':>6}"
    )
    print(header)
    print("-" * len(header))
    for name in PHASES:
        a, b = small[name], large[name]
        print(
            f"{name:>9} {a[0]:>8.3f} {a[1]:>7.3f} {a[2]!s:>13} {a[3]:>6.3f} "
            f"{b[0]:>9.3f} {b[1]:>8.3f} {b[2]!s:>17} {b[3]:>6.3f} "
            f"{b[0] / max(a[0], 1e-6):>7.1f} {b[1] / max(a[1], 1e-6):>6.1f}"
        )
    print(
        f"{'total':>9} {wall_a:>8.3f} {cpu_a:>7.3f} {'':>20} {wall_b:>9.3f} {cpu_b:>8.3f} "
        f"{'':>24} {wall_b / wall_a:>7.1f} {cpu_b / cpu_a:>6.1f}   (target <= 10x)"
    )
    return wall_b / wall_a, cpu_b / cpu_a


def rounds(count: int) -> None:
    """``count`` more runs of the sequence, each in a fresh process; their ratios and median.

    A fresh process each: the collector's state after one 20k run (its
    thresholds grow with the heap it has seen) would flatter the next.
    """
    walls, cpus = [], []
    for index in range(count):
        out = subprocess.run(
            [sys.executable, __file__, "--ratios-only"],
            capture_output=True,
            text=True,
            check=True,
            timeout=600,
        ).stdout.split()
        walls.append(float(out[-2]))
        cpus.append(float(out[-1]))
        print(f"round {index + 1}: 20k / 2k {walls[-1]:.1f}x wall, {cpus[-1]:.1f}x CPU", flush=True)
    print(
        f"median of {count}: {statistics.median(walls):.1f}x wall, "
        f"{statistics.median(cpus):.1f}x CPU (target <= 10x)"
    )


def main() -> None:
    collections = _Collections()
    if "--ratios-only" in sys.argv:  # one round of rounds(): print the two ratios
        wall, cpu = phase_table(collections, show=False)
        print(wall, cpu)
        return
    count = int(sys.argv[sys.argv.index("--rounds") + 1]) if "--rounds" in sys.argv else 0
    print(
        f"bind + forward + backward of a chain of small ops, by phase ({mx.engine.engine_type()})"
    )
    phase_table(collections)
    if count:
        rounds(count)


if __name__ == "__main__":
    main()
