"""The debugger in the views: idle spans on the Timeline, idle seconds in Stats, TraceDiffView, lineage."""

from __future__ import annotations

import json
import pathlib

import pytest

from mxnb.engine.events import OpEnd, OpPush, OpReady, OpStart, VarNew
from mxnb.engine.tracing import Dependency, DepKind, Trace
from mxnb.widgets import DependencyGraph, StatsTable, Timeline, TraceDiffView


def planted(slow_b: float = 0.0):
    """A (10 ms, writes x) and D (2 ms) at once; B reads x; ``slow_b`` more seconds for B."""
    return [
        VarNew(0.0, 1, "x"),
        VarNew(0.0, 2, "y"),
        OpPush(0.0, 1, "A", "cpu(0)", (), (1,), 0, ()),
        OpReady(0.0, 1),
        OpPush(0.0, 2, "D", "cpu(0)", (), (2,), 0, ()),
        OpReady(0.0, 2),
        OpPush(0.0, 3, "B", "cpu(0)", (1,), (), 0, (Dependency(1, 1, DepKind.RAW),)),
        OpStart(0.0, 1, "cpu(0)/0", "w0"),
        OpStart(0.0, 2, "cpu(0)/1", "w1"),
        OpEnd(0.002, 2),
        OpEnd(0.010, 1),
        OpReady(0.010, 3),
        OpStart(0.010, 3, "cpu(0)/0", "w0"),
        OpEnd(0.012 + slow_b, 3),
    ]


def test_timeline_draws_idle_spans_by_reason_with_var_and_op_on_hover():
    timeline = Timeline(planted())
    data = timeline.to_data()
    assert data["idle"] == [
        [
            "cpu(0)/1",
            2.0,
            10.0,
            "waiting_on_var",
            "cpu(0)/1 idle 8.000 ms: waiting on var 'x', held by op #1 A",
        ],
        ["cpu(0)/1", 10.0, 12.0, "nothing_pushed", "cpu(0)/1 idle 2.000 ms: nothing pushed yet"],
    ]
    svg = timeline.to_svg()
    assert 'id="idle0"' in svg and 'id="idle1"' in svg
    assert timeline.tooltips()["idle0"] == data["idle"][0][4]
    assert Timeline(planted(), show_idle=False).to_data()["idle"] == []


def test_stats_table_shows_the_idle_summary():
    table = StatsTable(planted())
    assert table.idle_summary()["cpu(0)/1"] == pytest.approx(
        {"waiting_on_var": 0.008, "nothing_pushed": 0.002, "ready_not_started": 0.0}
    )
    text = table.to_text()
    assert "waiting on var ms" in text and "8.000" in text
    assert "idle: waiting on var ms" in table.to_html()


def test_a_live_stats_view_leaves_idle_out_past_its_limit(monkeypatch):
    """The monitor and the lab panel redraw over the whole run: idle time only up to a size."""
    from mxnb.widgets import stats

    assert StatsTable(planted(), idle=None).idle_summary()  # 3 ops: shown
    monkeypatch.setattr(stats, "LIVE_IDLE_OPS", 2)
    live = StatsTable(planted(), idle=None)
    assert live.idle_summary() == {} and "waiting on var ms" not in live.to_text()
    assert "trace.idle_summary()" in live.to_html()
    assert StatsTable(planted()).idle_summary()  # a table of a finished trace always shows it


def test_trace_diff_view_marks_the_planted_slowdown(tmp_path):
    view = TraceDiffView(Trace(planted()), Trace(planted(slow_b=0.005)), top=1)
    assert view.marked() == {"a": {3: "+5.000 ms"}, "b": {3: "+5.000 ms"}}
    assert view.diff.rows[0].name == "B"
    svg = view.to_svg()
    assert 'id="b-op3"' in svg and 'id="a-op3"' in svg and "+5.000 ms" in svg
    view.to_png(tmp_path / "diff.png")
    assert (tmp_path / "diff.png").stat().st_size > 1000
    data = view.to_data()
    assert data["rows"][0]["name"] == "B" and data["rows"][0]["change_ms"] == pytest.approx(5.0)
    assert data["a"]["lanes"] and data["b"]["lanes"]
    assert "makespan ms" in view.to_text()
    assert data["a"]["span"] == data["b"]["span"]  # one time axis
    assert data["b"]["marks"] == [[3, "#d62728", "+5.000 ms"]]


def back_to_back(scale: float) -> list:
    """Twelve ops of 1-3 ms run back to back on one worker; the even ones take ``scale`` times as long."""
    events, t = [], 0.0
    for i in range(12):
        seconds = (0.001 + 0.002 * (i % 3 == 0)) * (scale if i % 2 == 0 else 1.0)
        events += [
            OpPush(t, i + 1, f"op{i}", "cpu(0)", (), (i + 1,), 0, ()),
            OpStart(t, i + 1, "cpu(0)/0", "w0"),
            OpEnd(t + seconds, i + 1),
        ]
        t += seconds
    return events


def test_trace_diff_view_numbers_its_marks_and_they_never_overlap():
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    view = TraceDiffView(back_to_back(1.0), back_to_back(1.5), top=6)
    figure = view.figure()
    renderer = FigureCanvasAgg(figure).get_renderer()
    for axes in figure.axes:
        marks = [text for text in axes.texts if text.get_text().isdigit()]
        assert sorted(int(text.get_text()) for text in marks) == [1, 2, 3, 4, 5, 6]
        boxes = sorted((text.get_window_extent(renderer) for text in marks), key=lambda b: b.x0)
        for left, right in zip(boxes, boxes[1:]):  # six neighbouring ops, 1-3 ms each
            assert left.x1 <= right.x0, "two marks overlap"
    legend = figure.axes[0].get_legend()
    key = [text.get_text() for text in legend.get_texts()]
    ranked = view.diff.rows[:6]
    assert key[-6:] == [f"{row.name}: {view.marked()['b'][row.b]}" for row in ranked]


def test_trace_diff_view_saves_the_file_the_lab_diff_viewer_opens(tmp_path):
    view = TraceDiffView(Trace(planted()), Trace(planted(slow_b=0.005)), top=2)
    path = view.save(tmp_path / "runs.diff.json")
    document = json.loads(pathlib.Path(path).read_text())
    assert document["mxnb_trace_diff"] == 1
    assert document["rows"] == view.to_data()["rows"] and "makespan ms" in document["summary"]
    assert [lane["name"] for lane in document["a"]["lanes"]][-2:] == ["cpu(0)/0", "cpu(0)/1"]


def test_canvases_carry_the_lineage_a_click_marks():
    links = {"op1": [], "op2": [], "op3": ["op1"]}
    assert Timeline(planted()).canvas().links == links
    assert DependencyGraph(planted()).canvas().links == links
    assert Trace(planted()).lineage(3) == ([1], [])


def test_the_monitor_marks_a_clicked_ops_lineage_on_both_canvases():
    from mxnb.widgets import EngineMonitor

    monitor = EngineMonitor(Trace(planted()))
    try:
        monitor.dag_canvas.selected = "op3"
        assert monitor.timeline_canvas.lineage == {
            "op": "op3",
            "ancestors": ["op1"],
            "descendants": [],
        }
        assert monitor.dag_canvas.lineage == monitor.timeline_canvas.lineage
    finally:
        monitor.close()


def test_a_live_timeline_gets_the_idle_spans_once_the_run_is_quiet():
    from mxnb.widgets.model import EngineModel
    from mxnb.widgets.timeline_feed import TimelineFeed

    events = planted()
    model, feed = EngineModel(events[:-1]), TimelineFeed()  # B still running
    assert feed.next(model)[1]["idle"] == [] and feed.idle(model) is None
    model.update(events[-1:])  # B ended: every op finished
    kind, delta = feed.next(model)
    idle = feed.idle(model)
    assert kind == "delta" and idle["seq"] == delta["seq"]
    assert idle["spans"] == Timeline(planted()).to_data()["idle"]
