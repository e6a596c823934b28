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
     SVG they used to send (peer, measured once: it takes seconds);
  4. timeline lag (issue 22: a 1,362-op run showed "640 pending" for 27-40 s):
     a loop of NDArray ops (``x = x * 0.5 + 1``, deletes included) runs with
     the EngineMonitor's Timeline tab shown, then with a Timeline panel open;
     every message the view receives (the whole timeline, or a delta) is
     stamped with its time, and replayed afterwards as the browser applies it
     to count the ops it shows finished.  "Seconds behind" at a moment is how
     long ago the engine finished the first op the view does not show yet; the
     table gives the worst of the run (median of ``--repeat`` runs, and their
     range) and the catch-up after the engine went idle.  Target: <= 1 s at
     4,000 ops.  A second recorder, attached alongside, gives the engine's op
     end times.  The ops stream over ``--lag-seconds`` (3 s), the pushing
     thread doing Python work between steps.  Peer, in the same run: the same
     views sending the whole timeline every time (``TimelineFeed(incremental=
     False)``, how they drew before deltas), runs alternating with the deltas'.
     Kernel side only: the browser's part is table 5;
  5. the browser's part, in Chromium (``timeline_browser.mjs``, Debian's
     chromium through playwright-core as ``tests/widgets/js``): a recorded run
     of the lag loop folded in 20 steps; each step's delta applied to a
     ``TimelineDrawing`` against the whole timeline of that step drawn anew
     (peer), each with the layout after it.

The comm is a stand-in that serialises each message to JSON, as ipykernel does.

Run: ``.venv/bin/python benchmarks/extension.py [--ops 20000] [--repeat 3]
[--lag-ops 1000 4000 10000] [--lag-seconds 3] [--sections 12345]``.
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
from mxnb.widgets.timeline_feed import TimelineFeed, TimelineReplica


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
    from mxnb.engine.tracing import OpEnd, OpPush, OpReady, OpStart
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
        [f"Timeline.to_data() + JSON, {ops} ops", f"{data * 1e3:.1f}", ratio(data, svg),
         f"{svg / data:.0f}x faster"],
        [f"matplotlib Timeline.to_svg(), {ops} ops (peer)", f"{svg * 1e3:.1f}", "1.00x", ""],
    ]  # fmt: skip


class _Stamps:
    """What a timeline view received, stamped: (time, "full" | "delta", JSON text).

    Kept as text while the run goes (the JSON the comm would carry anyway) and
    replayed afterwards (:meth:`shown`), so the benchmark's own bookkeeping
    adds nothing in the length of the run to the measured thread.
    """

    def __init__(self) -> None:
        self.messages: list[tuple[float, str, str]] = []

    def record(self, kind: str, data: dict) -> None:
        self.messages.append((time.perf_counter(), kind, json.dumps(data)))

    def shown(self) -> list[tuple[float, int]]:
        """(time, finished ops shown) after each message, replayed as the browser applies them."""
        replica, updates = TimelineReplica(), []
        for when, kind, text in self.messages:
            if kind == "full":
                replica.full(json.loads(text))
            else:
                replica.delta(json.loads(text))
            updates.append((when, _done(replica.data)))
        return updates


def _done(data: dict) -> int:
    return sum(
        bar[4] in ("done", "failed", "skipped")
        for lane in data.get("lanes", ())
        if lane["kind"] == "worker"
        for bar in lane["bars"]
    )


def _behind(updates: list[tuple[float, int]], ends: list[float]) -> tuple[float, float]:
    """Worst seconds behind while running, and the catch-up after the last op ended.

    ``ends``: the engine's op end times, sorted.  Before an update arrives the
    view still shows the previous update's count ``k``; it is behind by
    ``now - ends[k]`` when op ``k + 1`` had ended by then.
    """
    worst, shown = 0.0, 0
    for when, count in updates:
        if shown < len(ends) and ends[shown] < when:
            worst = max(worst, when - ends[shown])
        shown = max(shown, count)
        if shown >= len(ends):
            return worst, max(0.0, when - ends[-1])
    return float("inf"), float("inf")  # never caught up


def _ndarray_loop(ops: int, seconds: float) -> None:
    """``x = x * 0.5 + 1`` until ``ops`` ops (deletes included) were pushed, over ``seconds``.

    Between steps the pushing thread does Python work (holding the interpreter
    as a training loop's Python does), so the ops stream in as in a notebook.
    """
    x = mx.nd.ones((256, 256))
    steps = ops // 4  # a mul, an add and two deletes per step
    began = time.perf_counter()
    for step in range(steps):
        x = x * 0.5 + 1
        until = began + seconds * (step + 1) / steps
        while time.perf_counter() < until:
            sum(range(100))
    x.wait_to_read()


def _monitor_view(stamps: _Stamps, incremental: bool):
    """An EngineMonitor on its Timeline tab; each full send and delta is stamped."""
    from mxnb.widgets import EngineMonitor

    monitor = EngineMonitor()
    monitor._timeline_feed = TimelineFeed(incremental)  # the peer: full sends
    canvas = monitor.timeline_canvas
    canvas.observe(lambda change: stamps.record("full", change["new"]), "timeline")
    send = canvas.send

    def stamped_send(content: dict, buffers=None) -> None:
        send(content, buffers)
        if "timeline_delta" in content:
            stamps.record("delta", content["timeline_delta"])

    canvas.send = stamped_send
    monitor.tabs.selected_index = 1
    return monitor


def _panel_view(stamps: _Stamps, incremental: bool):
    """A lab channel with the Timeline panel open; each timeline it sends is stamped."""
    comm = JsonComm()
    send = comm.send

    def stamped_send(data: dict) -> None:
        send(data)
        part = data.get("timeline")
        if part is not None:
            stamps.record(
                "full" if "data" in part else "delta", part.get("data", part.get("delta"))
            )

    comm.send = stamped_send
    channel = EngineChannel(comm, {"views": ["timeline"]})
    channel.feed = TimelineFeed(incremental)
    return channel


def _lag_once(make_view, incremental: bool, ops: int, seconds: float, settle: float):
    """One run under a fresh view: (ops, run s, worst s behind, s behind at idle, updates)."""
    from mxnb.engine.tracing import OpEnd, Trace

    stamps = _Stamps()
    view = make_view(stamps, incremental)
    reference = Trace().attach()  # the engine's own clock; building it leaves the view's alone
    try:
        began = time.perf_counter()
        _ndarray_loop(ops, seconds)
        mx.engine.get().wait_for_all()
        run = time.perf_counter() - began
        reference.detach()
        ends = sorted(e.time for e in reference.events if type(e) is OpEnd)
        # settled: nothing sent for 3 s (longer than a back-off), or the settle time is up
        deadline = time.perf_counter() + settle
        while time.perf_counter() < deadline:
            last = stamps.messages[-1][0] if stamps.messages else began
            if time.perf_counter() - last > 3.0:
                break
            time.sleep(0.05)
    finally:
        reference.detach()
        view.close()
    worst, catch_up = _behind(stamps.shown(), ends)
    return len(ends), run, worst, catch_up, len(stamps.messages)


def timeline_lag(ops: int, seconds: float, repeat: int, settle: float = 20.0) -> list[list[str]]:
    """Seconds the Timeline (monitor tab, then panel) shows the engine behind, at ``ops`` ops.

    Deltas (now) and full sends (before; the peer) run alternately, ``repeat``
    times each; the median run by the worst lag is shown (the machine's load
    varies run to run), with the range of the worst lag.
    """
    rows = []
    for label, make_view in (
        ("tab", _monitor_view),
        ("panel", _panel_view),
    ):
        runs: dict[bool, list] = {True: [], False: []}
        for _ in range(repeat):
            for incremental in (True, False):
                gc.collect()
                runs[incremental].append(_lag_once(make_view, incremental, ops, seconds, settle))
        medians = {}
        for incremental in (True, False):
            ordered = sorted(runs[incremental], key=lambda result: result[2])
            medians[incremental] = ordered[len(ordered) // 2]
        for incremental in (True, False):
            count, run, worst, catch_up, updates = medians[incremental]
            ordered = sorted(r[2] for r in runs[incremental])
            how = "deltas" if incremental else "full sends (peer)"
            rows.append(
                [f"{label}, {how}, {count} ops", f"{run:.2f}", f"{worst:.2f}",
                 f"{ordered[0]:.2f}-{ordered[-1]:.2f}", f"{catch_up:.2f}",
                 ratio(worst, medians[False][2]), str(updates)]
            )  # fmt: skip
    return rows


def browser_drawing(ops: int, chunks: int = 20) -> list[list[str]]:
    """The browser's part: following a run by deltas against drawing every message whole.

    A real run (the lag loop's NDArray ops) is recorded, then folded in ``chunks``
    steps as a live view would receive it; ``timeline_browser.mjs`` times, in
    Chromium, ``TimelineDrawing.apply`` of each delta against ``load`` of the
    whole timeline at that step (the peer, how the views drew before deltas).
    """
    import subprocess
    import tempfile

    from mxnb.engine.tracing import Trace
    from mxnb.widgets import Timeline
    from mxnb.widgets.model import EngineModel

    trace = Trace().attach()
    try:
        _ndarray_loop(ops, 1.0)
        mx.engine.get().wait_for_all()
    finally:
        trace.detach()
    events = list(trace.events)
    model, feed = EngineModel(), TimelineFeed()
    size = len(events) // chunks
    model.update(events[:size])
    stream: dict = {"full": feed.next(model)[1], "deltas": [], "wholes": []}
    for start in range(size, len(events), size):
        model.update(events[start : start + size])
        delta = feed.next(model)[1]
        stream["deltas"].append(delta)
        stream["wholes"].append({**Timeline(model).to_data(), "seq": delta["seq"]})
    script = os.path.join(os.path.dirname(__file__), "timeline_browser.mjs")
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as file:
        json.dump(stream, file)
    try:
        run = subprocess.run(
            ["node", script, file.name], capture_output=True, text=True, timeout=300, check=True
        )
    finally:
        os.unlink(file.name)
    result = json.loads(run.stdout.strip().splitlines()[-1])
    median = {mode: sorted(result[mode])[len(result[mode]) // 2] for mode in ("deltas", "full")}
    note = f"{result['ops']} ops drawn as {result['blocks']} blocks"
    return [
        [f"apply a delta, {ops} ops in {len(stream['deltas'])} messages",
         f"{median['deltas']:.2f}", f"{max(result['deltas']):.2f}",
         ratio(median["deltas"], median["full"]), note],
        ["draw the whole timeline (peer)", f"{median['full']:.2f}", f"{max(result['full']):.2f}",
         "1.00x", ""],
    ]  # fmt: skip


def _seconds(fn) -> float:
    began = time.perf_counter()
    fn()
    return time.perf_counter() - began


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ops", type=int, default=20000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--lag-ops", type=int, nargs="+", default=[1000, 4000, 10000])
    parser.add_argument("--lag-seconds", type=float, default=3.0, help="how long the ops stream")
    parser.add_argument("--sections", default="12345", help="which tables to print, e.g. 45")
    args = parser.parse_args()
    print(f"engine: {mx.engine.engine_type()}, load average {os.getloadavg()[0]:.2f}")
    lag_ops = args.lag_ops
    tables = {  # number: (title, header, rows)
        "1": ("1. kernel overhead of an open panel (target <= 1.5x)",
              ["workload", "wall ms", "wall vs none", "pusher CPU vs none", "note"],
              lambda: overhead(args.ops, args.repeat)),
        "2": ("2. panel update latency at 200 ops",
              ["what", "ms", "vs one redraw", "note"],
              lambda: latency(200, args.repeat)),
        "3": ("3. Timeline full send at 3,000 ops (monitor tab and panel)",
              ["what", "ms", "vs matplotlib", ""],
              lambda: timeline_redraw(3000, args.repeat)),
        "4": ("4. Timeline lag behind the engine, deltas against full sends (target: <= 1 s at 4,000 ops)",
              ["view, how, ops run", "run s", "worst s behind", "range", "s behind at idle",
               "worst vs full sends", "messages"],
              lambda: [r for n in lag_ops for r in timeline_lag(n, args.lag_seconds, args.repeat)]),
        "5": ("5. the browser's part: a delta applied against the whole timeline drawn",
              ["in Chromium, per message", "median ms", "max ms", "vs whole", "note"],
              lambda: [row for n in lag_ops for row in browser_drawing(n)]),
    }  # fmt: skip
    for number, (title, header, rows) in tables.items():
        if number in args.sections:
            print(table(header, rows(), title=title), flush=True)


if __name__ == "__main__":
    main()
