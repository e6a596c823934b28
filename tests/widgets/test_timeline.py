"""Timeline, MemoryChart and StatsTable: lanes, wait marks, memory series, stats, headless forms."""

from __future__ import annotations

import pathlib

import pytest

import mxnb as mx
from mxnb.engine.tracing import OpEnd, OpStart, Trace
from mxnb.widgets import MemoryChart, StatsTable, Timeline


def test_lanes_waits_and_critical_path_in_text(diamond):
    timeline = Timeline(diamond)
    assert [lane.worker for lane in timeline.lanes()] == ["cpu(0)/0", "cpu(0)/1"]
    assert [iv.op_id for iv in timeline.lanes()[0].intervals] == [1, 2]
    assert timeline.wait_lanes() == {"MainThread": [(0.005, 0.006, "b")]}
    text = timeline.to_text()
    assert "critical path: #1 w -> #3 r2 -> #4 w2" in text


def test_svg_bars_carry_op_ids_for_the_extension(diamond):
    svg = Timeline(diamond).to_svg()
    for op_id in (1, 2, 3):
        assert f'id="op{op_id}"' in svg


def test_tooltips_give_each_bar_its_op_summary(diamond):
    tips = Timeline(diamond).tooltips()
    bars = {key for key in tips if key.startswith("op")}
    assert bars == {"op1", "op2", "op3"}  # the ops that started: the bars drawn
    assert all(key.startswith("idle") for key in set(tips) - bars)  # idle spans: their own
    assert tips["op1"] == "#1 w [done] | worker cpu(0)/0 | 1.000 ms"
    assert tips["op3"] == "#3 r2 [failed] | worker cpu(0)/1 | 2.500 ms | ValueError('boom')"


def test_zoom_sets_the_axis(diamond, tmp_path):
    timeline = Timeline(diamond, time_range=(3.0, 5.0))
    axes = timeline.figure().axes[0]
    assert axes.get_xlim() == (3.0, 5.0)
    path = timeline.to_png(tmp_path / "timeline.png")
    assert pathlib.Path(path).read_bytes()[:4] == b"\x89PNG"


def test_copy_workers_drawn_last(push):
    events = []
    for op_id, worker in enumerate(["copy/0", "cpu(0)/0"], start=1):
        events += [push(0, op_id, "op"), OpStart(0.1, op_id, worker, "t"), OpEnd(0.2, op_id)]
    labels = [t.get_text() for t in Timeline(events).figure().axes[0].get_yticklabels()]
    assert labels == ["cpu(0)/0", "copy/0 [copy]"]


def test_memory_chart_text_and_figure(diamond, tmp_path):
    chart = MemoryChart(diamond)
    assert "peak    5.0 KiB" in chart.to_text()
    assert "pool hits 1  misses 2" in chart.to_text()
    assert len(chart.figure().axes) == 1
    chart.to_png(tmp_path / "memory.png")
    assert "no storage events" in MemoryChart([]).to_text()


def test_stats_table_text_html_figure(diamond):
    table = StatsTable(diamond)
    text = table.to_text()
    assert text.splitlines()[0].split()[:3] == ["op", "count", "total"]
    assert any(line.startswith("r2") and line.split()[-1] == "1" for line in text.splitlines())
    assert "cpu(0)/1" in table.to_html()
    assert table._repr_mimebundle_()["text/plain"] == text
    assert len(table.figure().axes) == 2


@pytest.mark.timeout(60)
def test_chrome_trace_round_trip_draws_the_same(tmp_path):
    eng = mx.engine.create("naive")
    with mx.engine.trace() as trace:
        a = eng.new_var(name="a")
        eng.push_sync(lambda rctx: None, mx.cpu(), mutate_vars=[a], name="write_a")
        eng.push_sync(lambda rctx: None, mx.cpu(), const_vars=[a], name="read_a")
        eng.wait_for_all()
    path = tmp_path / "run.json"
    trace.to_chrome_trace(str(path))
    loaded = Trace.from_chrome_trace(str(path))
    original = Timeline(trace)
    again = Timeline(loaded)
    assert [op.name for op in again.model.ops.values()] == ["write_a", "read_a"]
    assert [lane.worker for lane in again.lanes()] == [lane.worker for lane in original.lanes()]
    assert "<svg" in again.to_svg()


def canvas_js(function: str, names: list[str]) -> list:
    """canvas.js's exported ``function`` of each of ``names``, run under node."""
    import json
    import subprocess

    canvas = pathlib.Path(mx.__file__).parent / "widgets" / "static" / "canvas.js"
    script = (
        f"const {{ {function} }} = await import({json.dumps(canvas.as_uri())});\n"
        f"console.log(JSON.stringify({json.dumps(names)}.map((n) => {function}(n))));"
    )
    run = subprocess.run(
        ["node", "--input-type=module", "-e", script], capture_output=True, text=True, timeout=60
    )
    assert run.returncode == 0, run.stderr
    return json.loads(run.stdout)


def test_every_view_colours_an_op_family_alike_python_and_browser():
    """One palette function: canvas.js opColour (the Timeline panel, the trace viewer) gives
    each name the colour name_colour gives it in the Python views (Timeline, Stats, diff)."""
    from mxnb.widgets._render import NameColours, name_colour

    names = ["write", "read", "delete:nd3", "delete:nd97", "_plus_scalar", "kvstore.push:w", "ü"]
    assert canvas_js("opColour", names) == [name_colour(n) for n in names]
    assert name_colour("delete:nd3") == name_colour("delete:nd97")  # one family, one colour
    colours = NameColours()
    assert [colours(n) for n in reversed(names)][::-1] == [name_colour(n) for n in names]


def test_legends_shorten_an_op_name_alike_python_and_browser():
    """canvas.js shortName (the Timeline panel's legend) cuts a name as short_name does."""
    from mxnb.widgets._render import short_name

    names = [
        "relu",
        "bulk[conv1, tanh1, pool1, conv2, tanh2, pool2, flatten, fc1, tanh3, fc2, softmax]",
        "bulk[pool1_backward, tanh1_backward, conv1_backward]",
        "bulk[a_very_long_first_step_name_here, and_the_second_one]",
        "kvstore.push:" + "w" * 60,
        "ü" * 45,
    ]
    shortened = [short_name(n) for n in names]
    assert canvas_js("shortName", names) == shortened
    assert shortened[1] == "bulk[conv1, …, softmax] (11 steps)" and shortened[0] == "relu"
    assert all(len(s) <= 40 for s in shortened[3:])


def test_a_notebook_shows_the_timeline_png_at_the_width_it_was_drawn():
    """Issue 39 (12): PNGs 1,340-1,540 px wide were shown at 953 px, their labels at 5 px.
    The notebook's PNG is narrowed to the output column, its text kept at its size."""
    import base64

    from mxnb.widgets._render import SHOWN_WIDTH_PX, png_width

    eng = mx.engine.get()
    with Trace() as trace:
        var = eng.new_var(name="v")
        for i in range(14):  # a legend of 14 op names, beside the axes
            eng.push_sync(
                lambda rctx: None, mx.cpu(), mutate_vars=[var], name=f"a_long_op_name_{i}"
            )
        eng.wait_for_all()
    view = Timeline(trace, width=14)
    wide = view.figure()
    import io

    buffer = io.BytesIO()
    wide.savefig(buffer, format="png", dpi=100, bbox_inches="tight")
    assert png_width(buffer.getvalue()) > SHOWN_WIDTH_PX  # as drawn: wider than the column
    shown = base64.b64decode(view._repr_mimebundle_()["image/png"])
    assert SHOWN_WIDTH_PX - 60 <= png_width(shown) <= SHOWN_WIDTH_PX


def test_memory_in_use_never_exceeds_held_when_the_recording_starts_mid_run():
    """Issue 39 (16): arrays made and pooled before the panel opened made 'in use' run above
    'held (incl. pool)' and off the top of the axis."""
    import gc

    from mxnb.engine.tracing import StorageAlloc, StorageFree

    before = [mx.nd.ones((128, 128)) for _ in range(4)]
    mx.nd.waitall()
    with Trace() as trace:
        del before[:2]  # freed while recording: allocated before it
        gc.collect()
        mx.nd.waitall()
        after = [mx.nd.ones((128, 128)) * 2 for _ in range(4)]  # pool hits among them
        mx.nd.waitall()
    kinds = {type(e) for e in trace.events}
    assert {StorageAlloc, StorageFree} <= kinds
    chart = MemoryChart(trace)
    for series in chart.model.memory.values():
        assert all(0 <= use <= held for use, held in zip(series.in_use, series.held))
        axes = chart.figure().axes[0]
        assert axes.get_ylim()[1] >= series.peak  # the line stays inside the axis
    del after


def test_canvas_js_exports_render_only_by_default():
    """Issue 39 (17): anywidget logged a deprecation warning for every canvas, since canvas.js
    also exported ``render`` by name; the default export is what anywidget and the lab use."""
    import json
    import pathlib
    import subprocess

    canvas = pathlib.Path(mx.__file__).parent / "widgets" / "static" / "canvas.js"
    script = (
        f"const m = await import({json.dumps(canvas.as_uri())});\n"
        "console.log(JSON.stringify([Object.keys(m).includes('render'), typeof m.default.render]));"
    )
    run = subprocess.run(
        ["node", "--input-type=module", "-e", script], capture_output=True, text=True, timeout=60
    )
    assert run.returncode == 0, run.stderr
    assert json.loads(run.stdout) == [False, "function"]


def test_back_to_back_waits_do_not_write_their_labels_over_each_other(push):
    """Issue 39 (12): a loop's waits wrote "wait x" labels on top of each other in the PNG."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    from mxnb.engine.tracing import VarNew, WaitBegin, WaitEnd

    events = [VarNew(0.0, 1, "x"), push(0.0, 1, "long_op", writes=[1])]
    events += [OpStart(0.0, 1, "cpu(0)/0", "w0"), OpEnd(0.1, 1)]
    for k in range(40):  # 40 waits of 1 ms, back to back: far too short for their labels
        events += [WaitBegin(0.05 + k * 1e-3, k, 1, "MainThread"), WaitEnd(0.0505 + k * 1e-3, k)]
    figure = Timeline(events).figure()
    renderer = FigureCanvasAgg(figure).get_renderer()
    labels = [t for t in figure.axes[0].texts if t.get_text().startswith("wait ")]
    assert 1 <= len(labels) < 40
    boxes = sorted((t.get_window_extent(renderer) for t in labels), key=lambda b: b.x0)
    assert all(a.x1 <= b.x0 for a, b in zip(boxes, boxes[1:])), "labels overlap"


def test_a_narrowed_notebook_timeline_spaces_its_wait_labels_at_the_width_it_is_shown(
    push, monkeypatch
):
    """Notebook 08: a timeline narrowed to the output column kept the wait labels it had spaced
    for its first width, so they ran into one another; it is drawn again at the new width."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    from mxnb.engine.tracing import VarNew, WaitBegin, WaitEnd

    events = [VarNew(0.0, 1, "x")]
    for i in range(12):  # twelve ops with long names: a wide legend, so the figure is narrowed
        name = f"bulk[conv{i}, tanh{i}, pool{i}, conv{i}b, tanh{i}b, fc{i}]"
        events += [push(i * 0.01, i + 1, name, writes=[1])]
        events += [OpStart(i * 0.01, i + 1, "cpu(0)/0", "w0"), OpEnd(i * 0.01 + 0.009, i + 1)]
    for k in range(40):  # back-to-back waits, their labels spaced by the figure's width
        events += [WaitBegin(k * 3e-3, k, 1, "MainThread"), WaitEnd(k * 3e-3 + 2e-3, k)]
    drawn = []
    original = Timeline.figure
    monkeypatch.setattr(Timeline, "figure", lambda view: drawn.append(original(view)) or drawn[-1])
    view = Timeline(events, width=20)  # drawn far wider than the column
    view.to_notebook_png()
    assert len(drawn) > 1 and drawn[-1].get_figwidth() < 10  # narrowed, and drawn again
    assert view.width == 20  # by a copy: the view is as it was
    shown = drawn[-1]
    renderer = FigureCanvasAgg(shown).get_renderer()
    labels = [t for t in shown.axes[0].texts if t.get_text().startswith("wait ")]
    boxes = sorted((t.get_window_extent(renderer) for t in labels), key=lambda b: b.x0)
    assert len(boxes) > 1
    assert all(a.x1 <= b.x0 for a, b in zip(boxes, boxes[1:])), "wait labels overlap"
    legend = [t.get_text() for t in shown.axes[0].get_legend().get_texts()]
    assert legend[0] == "bulk[conv0, …, fc0] (6 steps)"  # a legend of short names
