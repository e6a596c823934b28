"""Widgets benchmark: what watching the engine costs, and how fast the views draw.

Figures (each against a peer measured in the same run):
  1. tiny-op throughput with an EngineMonitor attached and redrawing (its
     background thread redraws the DAG tab at most 5x a second) relative to
     the same pushes with no monitor, as wall time and as CPU time of the
     pushing thread; target <= 1.5x slower;
  2. DAG redraw time (model -> DOT -> SVG by graphviz) for 200 and 1,000 ops,
     with the share spent in graphviz's ``dot`` itself;
  3. MemoryPlanView for ResNet-18 (SVG and PNG) relative to planning its memory.

Run: ``.venv/bin/python benchmarks/widgets.py [--ops 20000] [--repeat 3]``.
"""

from __future__ import annotations

import argparse
import gc
import os
import sys
import time
from functools import partial

sys.path.insert(0, os.path.dirname(__file__))

from _util import best_of, ratio, table

import mxnb as mx
from mxnb.engine.tracing import (
    Dependency,
    DepKind,
    OpEnd,
    OpPush,
    OpReady,
    OpStart,
    Trace,
)
from mxnb.widgets import DependencyGraph, EngineMonitor, MemoryPlanView
from mxnb.widgets._render import run_dot
from mxnb.widgets.model import EngineModel


def noop(rctx):
    return None


def push_tiny_ops(eng, count: int) -> tuple[float, float]:
    """Push ``count`` tiny ops over 8 vars (reads and writes mixed).

    Returns the wall seconds until all ran and the CPU seconds the pushing
    thread spent (pushing, and helping run ops while it waits).
    """
    variables = [eng.new_var(name=f"v{i}") for i in range(8)]
    cpu = mx.cpu()
    start = time.perf_counter()
    cpu_start = time.thread_time()
    for i in range(count):
        a = variables[i % 8]
        b = variables[(i * 3 + 1) % 8]
        if a is b:
            eng.push_sync(noop, cpu, mutate_vars=[a], name="write")
        else:
            eng.push_sync(noop, cpu, const_vars=[a], mutate_vars=[b], name="read_write")
    eng.wait_for_all()
    seconds = time.perf_counter() - start
    cpu_seconds = time.thread_time() - cpu_start
    for var in variables:
        eng.push_delete(var)
    eng.wait_for_all()
    return seconds, cpu_seconds


def throughput(count: int, repeat: int) -> list[list[str]]:
    """Wall time and the pushing thread's CPU time: no recorder, a bare Trace, a live monitor.

    Rounds alternate so machine load hits all three alike; best of ``repeat``
    each.  Events a round built are collected (``gc.collect``) before the next
    round starts, so no round pays for the previous one's garbage.
    """
    eng = mx.engine.get()
    push_tiny_ops(eng, 2000)  # warm up workers
    plain, traced, watched, redraws = [], [], [], []
    for _ in range(repeat):
        gc.collect()
        plain.append(push_tiny_ops(eng, count))
        with Trace():
            traced.append(push_tiny_ops(eng, count))
        gc.collect()
        monitor = EngineMonitor(engine=eng, interval=0.2)
        try:
            watched.append(push_tiny_ops(eng, count))
            redraws.append(monitor.redraws)
        finally:
            monitor.close()
        del monitor
    rows = []
    base_wall = min(w for w, _ in plain)
    base_cpu = min(c for _, c in plain)
    for label, runs, note in (
        ("no monitor", plain, ""),
        ("bare Trace attached", traced, "engine's tracing cost"),
        ("EngineMonitor redrawing", watched, f"{max(redraws)} redraws"),
    ):
        wall = min(w for w, _ in runs)
        cpu = min(c for _, c in runs)
        rows.append(
            [
                f"{count} tiny ops, {label}",
                f"{wall * 1e3:.1f}",
                f"{count / wall:,.0f}",
                ratio(wall, base_wall),
                ratio(cpu, base_cpu),
                note,
            ]
        )
    return rows


def synthetic_events(count: int) -> list:
    """``count`` finished ops on 16 vars: each reads one var and writes another."""
    events = []
    last_writer: dict[int, int] = {}
    t = 0.0
    for op_id in range(1, count + 1):
        read, write = op_id % 16, (op_id * 7 + 3) % 16
        waits = []
        if read in last_writer:
            waits.append(Dependency(last_writer[read], read, DepKind.RAW))
        if write in last_writer and write != read:
            waits.append(Dependency(last_writer[write], write, DepKind.WAW))
        reads = (read,) if read != write else ()
        events.append(
            OpPush(t, op_id, f"op{op_id % 5}", "cpu(0)", reads, (write,), 0, tuple(waits))
        )
        events += [
            OpReady(t, op_id),
            OpStart(t, op_id, f"cpu(0)/{op_id % 4}", "w"),
            OpEnd(t + 1e-4, op_id),
        ]
        last_writer[write] = op_id
        t += 1e-4
    return events


def dag_redraw(repeat: int) -> list[list[str]]:
    rows = []
    for count in (200, 1000):
        model = EngineModel(synthetic_events(count))
        graph = DependencyGraph(model, last=None)
        total = best_of(graph.to_svg, repeat)
        source = graph.to_dot().source
        layout = best_of(partial(run_dot, source, "svg"), repeat)
        rows.append(
            [
                f"DAG redraw, {count} ops",
                f"{total * 1e3:.1f}",
                f"{100 * layout / total:.0f}% in dot",
                ratio(total, layout),
            ]
        )
    return rows


def plan_view(repeat: int) -> list[list[str]]:
    from mxnb.executor import zoo

    net = zoo.resnet(num_layers=18)
    shapes = {"data": (1, 3, 224, 224)}
    plan_seconds = best_of(lambda: mx.executor.plan_memory(net, shapes), repeat)
    plan = mx.executor.plan_memory(net, shapes)
    view = MemoryPlanView(plan)
    svg = best_of(view.to_svg, repeat)
    png = best_of(lambda: view.to_png("/tmp/mxnb_bench_plan.png"), repeat)
    text = best_of(view.to_text, repeat)
    return [
        ["plan_memory(ResNet-18) (peer)", f"{plan_seconds * 1e3:.1f}", "1.00x"],
        ["MemoryPlanView(ResNet-18).to_svg()", f"{svg * 1e3:.1f}", ratio(svg, plan_seconds)],
        ["MemoryPlanView(ResNet-18).to_png()", f"{png * 1e3:.1f}", ratio(png, plan_seconds)],
        ["MemoryPlanView(ResNet-18).to_text()", f"{text * 1e3:.1f}", ratio(text, plan_seconds)],
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ops", type=int, default=20000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    print(f"engine: {mx.engine.engine_type()}, load average {os.getloadavg()[0]:.2f}")
    print(
        table(
            ["workload", "wall ms", "ops/s", "wall vs none", "pusher CPU vs none", "note"],
            throughput(args.ops, args.repeat),
            title="1. tiny-op throughput with a monitor attached (target <= 1.5x)",
        )
    )
    print(
        table(
            ["view", "ms", "graphviz share", "vs dot alone"],
            dag_redraw(args.repeat),
            title="2. DAG redraw (model -> DOT -> SVG)",
        )
    )
    print(
        table(
            ["what", "ms", "vs planning"],
            plan_view(args.repeat),
            title="3. MemoryPlanView for ResNet-18",
        )
    )


if __name__ == "__main__":
    main()
