"""Lab panels benchmark: what an open engine panel costs the kernel, and how fast it updates.

Figures (each against a peer measured in the same run):
  1. 20,000 tiny ops pushed with a panel channel open (DAG + Timeline views, the
     kernel side of the lab extension: mxnb/widgets/lab.py) relative to the same
     pushes with no panel, wall time and the pushing thread's CPU; target <= 1.5x,
     the same bar as the EngineMonitor's;
  2. update latency: with 200 ops in the trace, one more op pushed, until the
     channel has sent a DAG whose SVG holds that op's node; target <= 250 ms.
     The browser's part (inserting the SVG) is a few ms more, measured by the lab
     test's screenshots, not here.  Peer: one DAG redraw of the same model;
  3. a Timeline redraw at 3,000 ops as the monitor and the panel now do it
     (``Timeline.to_data()``, drawn by the browser) relative to the matplotlib
     SVG they used to send (peer, measured once: it takes seconds).

The comm is a stand-in that serialises each message to JSON, as ipykernel does.

Run: ``.venv/bin/python benchmarks/extension.py [--ops 20000] [--repeat 3]``.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))

from _util import ratio, table
from widgets import noop, push_tiny_ops

import mxnb as mx
from mxnb.widgets import DependencyGraph
from mxnb.widgets.lab import EngineChannel


class JsonComm:
    """A comm that serialises what it sends (the kernel's cost), keeping the last message."""

    def __init__(self) -> None:
        self.sent = 0
        self.last: dict = {}

    def send(self, data: dict) -> None:
        json.dumps(data)
        self.sent += 1
        self.last = data

    def on_msg(self, callback) -> None:
        pass

    def on_close(self, callback) -> None:
        pass


def overhead(count: int, repeat: int) -> list[list[str]]:
    eng = mx.engine.get()
    push_tiny_ops(eng, 2000)  # warm up workers
    plain, watched, sent = [], [], []
    for _ in range(repeat):
        gc.collect()
        plain.append(push_tiny_ops(eng, count))
        gc.collect()
        comm = JsonComm()
        channel = EngineChannel(comm, {"views": ["dag", "timeline"]})
        try:
            watched.append(push_tiny_ops(eng, count))
            sent.append(comm.sent)
        finally:
            channel.close()
    best = {
        "no panel": (plain, ""),
        "DAG + Timeline panels open": (watched, f"{max(sent)} updates sent"),
    }
    walls = {label: min(w for w, _ in runs) for label, (runs, _) in best.items()}
    cpus = {label: min(c for _, c in runs) for label, (runs, _) in best.items()}
    return [
        [f"{count} tiny ops, {label}", f"{walls[label] * 1e3:.1f}",
         ratio(walls[label], walls["no panel"]), ratio(cpus[label], cpus["no panel"]), note]
        for label, (_, note) in best.items()
    ]  # fmt: skip


def latency(ops: int, repeat: int) -> list[list[str]]:
    eng = mx.engine.get()
    results, redraw = [], []
    for _ in range(repeat):
        comm = JsonComm()
        channel = EngineChannel(comm, {"views": ["dag"]})
        try:
            var = eng.new_var(name="a")
            for i in range(ops):
                eng.push_sync(noop, mx.cpu(), mutate_vars=[var], name=f"w{i}")
            eng.wait_for_all()
            deadline = time.monotonic() + 10
            while (
                channel.model.consumed < len(channel.trace.events) and time.monotonic() < deadline
            ):
                time.sleep(0.01)
            time.sleep(0.5)  # settled: the next update is the new op's
            began = time.perf_counter()
            op_id = eng.push_sync(noop, mx.cpu(), mutate_vars=[var], name="late")
            node = f'id="op{op_id}"'
            while node not in comm.last.get("dag", {}).get("svg", ""):
                if time.perf_counter() - began > 10:
                    break
                time.sleep(0.002)
            results.append(time.perf_counter() - began)
            start = time.perf_counter()
            DependencyGraph(channel.model, last=channel.last).to_svg()
            redraw.append(time.perf_counter() - start)
        finally:
            channel.close()
            eng.wait_for_all()
    best, peer = min(results), min(redraw)
    return [
        [f"push -> DAG node sent, {ops} ops traced", f"{best * 1e3:.1f}", ratio(best, peer),
         "target <= 250 ms"],
        ["one DAG redraw of the same model (peer)", f"{peer * 1e3:.1f}", "1.00x", ""],
    ]  # fmt: skip


def timeline_redraw(ops: int, repeat: int) -> list[list[str]]:
    from mxnb.engine.trace import OpEnd, OpPush, OpReady, OpStart
    from mxnb.widgets import Timeline
    from mxnb.widgets.model import EngineModel

    events = []
    for i in range(1, ops + 1):
        t = i * 1e-5
        events += [
            OpPush(t, i, "add" if i % 2 else "mul", "cpu(0)", (), (i % 16,), 0, (), "main"),
            OpReady(t, i),
            OpStart(t, i, f"cpu(0)/{i % 2}", "w"),
            OpEnd(t + 8e-6, i),
        ]
    model = EngineModel(events)
    data = min(_seconds(lambda: json.dumps(Timeline(model).to_data())) for _ in range(repeat))
    svg = _seconds(lambda: Timeline(model).to_svg())
    return [
        [f"Timeline.to_data() + JSON, {ops} ops", f"{data * 1e3:.1f}", ratio(data, svg)],
        [f"matplotlib Timeline.to_svg(), {ops} ops (peer)", f"{svg * 1e3:.1f}", "1.00x"],
    ]


def _seconds(fn) -> float:
    began = time.perf_counter()
    fn()
    return time.perf_counter() - began


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ops", type=int, default=20000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    print(f"engine: {mx.engine.engine_type()}, load average {os.getloadavg()[0]:.2f}")
    print(
        table(
            ["workload", "wall ms", "wall vs none", "pusher CPU vs none", "note"],
            overhead(args.ops, args.repeat),
            title="1. kernel overhead of an open panel (target <= 1.5x)",
        )
    )
    print(
        table(
            ["what", "ms", "vs one redraw", "note"],
            latency(200, args.repeat),
            title="2. panel update latency at 200 ops",
        )
    )
    print(
        table(
            ["what", "ms", "vs matplotlib"],
            timeline_redraw(3000, args.repeat),
            title="3. Timeline redraw at 3,000 ops (monitor tab and panel)",
        )
    )


if __name__ == "__main__":
    main()
