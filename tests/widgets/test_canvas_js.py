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

from mxnb.engine.trace import OpEnd, OpReady, OpStart, VarNew
from mxnb.widgets import DependencyGraph, Timeline

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
        "op_ids": [f"op{op.op_id}" for op in graph.visible_ops()],
        "var_ids": sorted(set(re.findall(r"\bvar\d+_\d+\b", var_graph.to_dot().source))),
    }


def test_canvas_js_draws_selects_shows_tooltips_zooms_and_pans_in_chromium(
    training_step, tmp_path, node_tests
):
    """Every test in js/canvas.test.mjs passes in Chromium, none skipped."""
    fixtures = canvas_fixtures(training_step)
    assert fixtures["op_ids"] == ["op11", "op12", "op13", "op14"]
    assert fixtures["var_ids"]
    for name in ("dag", "vars", "timeline"):
        assert 'id="op12"' in fixtures[name]
    assert set(fixtures["timeline_tips"]) == set(fixtures["op_ids"])
    path = tmp_path / "canvas_fixtures.json"
    path.write_text(json.dumps(fixtures), encoding="utf-8")

    node_tests(JS / "canvas.test.mjs", path, timeout=240)
