r"""SvgCanvas's ES module (static/canvas.js) in headless Chromium, on SVG the views emit.

The Python side draws a small trace with the real views (graphviz DAG, the op/var
DAG, the matplotlib timeline) and hands the SVG to ``js/canvas.test.mjs``, which
mounts canvas.js on a fake anywidget model in Chromium and drives it with real
mouse events: clicks, hover, wheel, drag, double-click, model changes.

    #11 init_weight      writes weight
         |  weight RAW
    #12 fc1              reads data, weight; writes out
       /       \
    #13 relu   #14 sgd_update     out WAW / weight WAR

``make test`` installs what it needs: node, Debian's chromium, ``npm ci`` in js/.
"""

from __future__ import annotations

import json
import pathlib
import re

import pytest

from mxnb.engine.tracing import OpEnd, OpReady, OpStart, VarNew
from mxnb.widgets import DependencyGraph, Timeline
from mxnb.widgets.dag import lineage_links
from mxnb.widgets.model import EngineModel
from mxnb.widgets.timeline_feed import TimelineFeed

JS = pathlib.Path(__file__).parent / "js"


@pytest.fixture
def training_step(push):
    """Events of one small training step, ops numbered from 11 (multi-digit ids)."""
    return [
        VarNew(0.0, 3, "data"),
        VarNew(0.0, 4, "weight"),
        VarNew(0.0, 5, "out"),
        push(0.000, 11, "init_weight", writes=[4]),
        push(0.001, 12, "fc1", reads=[3, 4], writes=[5], waits=[(11, 4, "RAW")]),
        push(0.001, 13, "relu", writes=[5], waits=[(12, 5, "WAW")]),
        push(0.002, 14, "sgd_update", writes=[4], waits=[(12, 4, "WAR")]),
        OpReady(0.000, 11),
        OpStart(0.001, 11, "cpu(0)/0", "w0"),
        OpEnd(0.002, 11),
        OpReady(0.002, 12),
        OpStart(0.002, 12, "cpu(0)/1", "w1"),
        OpEnd(0.004, 12),
        OpReady(0.004, 13),
        OpReady(0.004, 14),
        OpStart(0.004, 13, "cpu(0)/0", "w0"),
        OpStart(0.0045, 14, "cpu(0)/1", "w1"),
        OpEnd(0.005, 13),
        OpEnd(0.006, 14),
    ]


def canvas_fixtures(events) -> dict:
    """The SVG documents the JS test draws, and the clickable ids the views put in them."""
    graph = DependencyGraph(events)
    var_graph = DependencyGraph(events, show_vars=True)
    timeline = Timeline(events)
    return {
        "dag": graph.to_svg(),
        "dag_tips": {f"op{op.op_id}": op.summary() for op in graph.visible_ops()},
        "vars": var_graph.to_svg(),
        "timeline": timeline.to_svg(),
        "timeline_tips": timeline.tooltips(),
        "timeline_data": timeline.to_data(flows=True),
        "links": lineage_links(graph.model),
        "op_ids": [f"op{op.op_id}" for op in graph.visible_ops()],
        "var_ids": sorted(set(re.findall(r"\bvar\d+_\d+\b", var_graph.to_dot().source))),
    }


def wide_dag(push) -> dict:
    """A 40-op training-like DAG (issue 39 item 10): every op reads the last four outputs.

    Each op waits on its (up to) four predecessors: 150 dependency edges, of which the
    reduction draws the 39 of the chain; drawn all, they make a picture wider
    than the JS test's 600-px frame.
    """
    events = [VarNew(0.0, v, f"act{v}") for v in range(1, 41)]
    for i in range(1, 41):
        holders = range(max(1, i - 4), i)
        events.append(
            push(
                i * 1e-3,
                i,
                f"layer{i}",
                reads=list(holders),
                writes=[i],
                waits=[(h, h, "RAW") for h in holders],
            )  # fmt: skip
        )
    graph = DependencyGraph(events, last=None)
    svg = graph.to_svg()
    drawn = len(re.findall(r'class="edge"', svg))
    # every edge drawn (implied=True): 719 pt wide, 10-pt text shrunk to 8 px in a 600-px frame
    tangle = DependencyGraph(events, last=None, implied=True).to_svg()
    return {"svg": svg, "edges": drawn, "hidden": graph.hidden_edges, "tangle": tangle}


def timeline_stream(push, ops: int = 3000, chunks: int = 40) -> dict:
    """A live timeline as the tab / panel receive it: a full send, then deltas; and the end.

    A chain of ``ops`` ops (each waits on the previous: a long critical path) on two
    workers, mostly 8 us long with a 2 ms op every 100 (drawn alone; nothing waits
    on it, so every op starts after what it waits on ended), folded
    ``chunks`` times while they run, so deltas carry new, running and finished bars.
    """
    events = []
    for i in range(1, ops + 1):
        t = i * 1e-5
        long = 2e-3 if i % 100 == 0 else 8e-6
        holder = i - 2 if (i - 1) % 100 == 0 else i - 1  # a long op's successor skips it
        waits = [(holder, 1, "RAW")] if holder > 0 else []
        events += [
            push(t, i, "add" if i % 2 else "mul", writes=[1], waits=waits),
            OpReady(t, i),
            OpStart(t, i, f"cpu(0)/{i % 2}", "w"),
            OpEnd(t + long, i),
        ]
    events.sort(key=lambda e: e.time)  # the long ops end while later ones run
    model, feed = EngineModel(), TimelineFeed()
    size = len(events) // chunks
    model.update(events[:size])
    full = feed.next(model)[1]
    deltas = []
    for start in range(size, len(events), size):
        model.update(events[start : start + size])
        deltas.append(feed.next(model)[1])
    # a live feed draws no idle spans (Trace.idle() is read after the fact)
    final = {**Timeline(model, show_idle=False).to_data(), "seq": deltas[-1]["seq"]}
    return {"full": full, "deltas": deltas, "final": final, "ops": ops}


def test_canvas_js_draws_selects_shows_tooltips_zooms_and_pans_in_chromium(
    training_step, push, tmp_path, node_tests
):
    """Every test in js/canvas.test.mjs passes in Chromium, none skipped."""
    fixtures = canvas_fixtures(training_step)
    assert fixtures["op_ids"] == ["op11", "op12", "op13", "op14"]
    assert fixtures["var_ids"]
    for name in ("dag", "vars", "timeline"):
        assert 'id="op12"' in fixtures[name]
    bars = {key for key in fixtures["timeline_tips"] if key.startswith("op")}
    assert bars == set(fixtures["op_ids"])
    # 11 -> 12 -> (13, 14): the lineage the JS marks on a click
    assert fixtures["links"] == {
        "op11": [],
        "op12": ["op11"],
        "op13": ["op12"],
        "op14": ["op11", "op12"],  # sgd_update rewrites weight: WAW on #11, WAR on #12
    }
    reasons = {span[3] for span in fixtures["timeline_data"]["idle"]}
    assert reasons == {"nothing_pushed", "ready_not_started", "waiting_on_var"}
    fixtures["timeline_stream"] = timeline_stream(push)
    fixtures["wide_dag"] = wide = wide_dag(push)
    assert (wide["edges"], wide["hidden"]) == (39, 150 - 39)
    assert "111 implied dependencies hidden" in wide["svg"]
    sizes = {float(size) for size in re.findall(r'font-size="([\d.]+)"', wide["svg"])}
    assert min(sizes) >= 10, sizes  # graphviz points: the canvas keeps them >= 10 px
    path = tmp_path / "canvas_fixtures.json"
    path.write_text(json.dumps(fixtures), encoding="utf-8")

    node_tests(JS / "canvas.test.mjs", path, timeout=240)
