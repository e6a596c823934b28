"""MemoryPlanView: block rows, in-place links, strategies compared, largest entries."""

from __future__ import annotations

import pytest

import mxnb as mx
from mxnb.executor import zoo
from mxnb.widgets import MemoryPlanView


@pytest.fixture(scope="module")
def strategies():
    return mx.executor.plan_strategies(zoo.mlp(), {"data": (32, 784)}, grad_req="write")


def test_rows_hold_every_planned_entry_without_overlap(strategies):
    view = MemoryPlanView(strategies)
    assert view.plan is strategies["both"]
    rows = view.rows()
    assert [row.block.id for row in rows] == [b.id for b in view.plan.blocks]
    placed = sorted(e.name for row in rows for e in row.entries)
    assert placed == sorted(e.name for e in view.plan.internal_entries())
    inplace = set(view.plan.inplace_pairs)
    for row in rows:  # entries sharing a block live one after another (in-place pairs touch)
        for before, after in zip(row.entries, row.entries[1:]):
            assert before.last_step <= after.first_step
            if before.last_step == after.first_step:
                assert (before.name, after.name) in inplace


def test_strategies_and_largest(strategies):
    view = MemoryPlanView(strategies, top=3)
    figures = view.strategy_bytes()
    assert set(figures) == {"naive", "inplace", "coshare", "both"}
    assert figures["naive"] == view.plan.naive_internal_bytes
    assert figures["both"] <= min(figures["inplace"], figures["coshare"]) <= figures["naive"]
    sizes = [e.nbytes for e in view.largest()]
    assert len(sizes) == 3 and sizes == sorted(sizes, reverse=True)


def test_single_plan_compares_with_naive_and_recomputes_with_symbol():
    net = zoo.mlp()
    plan = mx.executor.plan_memory(net, {"data": (8, 784)})
    assert set(MemoryPlanView(plan).strategy_bytes()) == {"naive", "both"}
    view = MemoryPlanView(plan, symbol=net, shapes={"data": (8, 784)})
    assert set(view.strategy_bytes()) == {"naive", "inplace", "coshare", "both"}


def test_executor_is_accepted():
    exe = zoo.mlp().simple_bind(mx.cpu(), data=(4, 784), grad_req="write")
    view = MemoryPlanView(exe)
    assert view.plan is exe.memory_plan
    # the executor's symbol is re-planned at its bound shapes to compare the strategies
    expected = mx.executor.plan_strategies(zoo.mlp(), {"data": (4, 784)}, grad_req="write")
    assert view.strategy_bytes() == {name: plan.internal_bytes for name, plan in expected.items()}
    assert view.strategy_bytes()["both"] == exe.memory_plan.internal_bytes


def test_headless_forms(strategies, tmp_path):
    view = MemoryPlanView(strategies)
    text = view.to_text()
    assert text.startswith("MemoryPlanView:") and "in-place:" in text and "largest entries" in text
    assert "<svg" in view.to_svg()
    view.to_png(tmp_path / "plan.png")
    dot = view.to_dot().source
    assert "in-place" in dot and "block 0" in dot


def test_rejects_other_objects():
    with pytest.raises(TypeError, match="MemoryPlan"):
        MemoryPlanView(42)


def test_interactive_chart_bars_tooltips_and_block_groups(strategies):
    import re

    view = MemoryPlanView(strategies)
    svg = view.to_svg()
    drawn = set(re.findall(r'id="(entry-[^"]+)"', svg))
    planned = {f"entry-{e.name}" for row in view.rows() for e in row.entries}
    assert drawn == planned
    tips = view.tooltips()
    assert set(tips) == planned
    pair = view.plan.inplace_pairs[0]
    target = view.plan.entry(pair[1])
    tip = tips[f"entry-{pair[1]}"]
    assert f"lives steps {target.first_step}..{target.last_step}" in tip
    assert f"block {target.storage_id} (" in tip
    assert tip.endswith(f"in place of {pair[0]}")
    groups = view.groups()
    assert groups[f"entry-{pair[0]}"] == groups[f"entry-{pair[1]}"] == target.storage_id
    widget = view.widget()
    assert widget.groups == groups and widget.tooltips == tips and 'id="entry-' in widget.svg
    bundle = view._repr_mimebundle_()
    assert "application/vnd.jupyter.widget-view+json" in bundle and "image/png" in bundle


def test_the_plan_drawn_beside_a_real_training_step():
    """measure_plan binds and runs one step: the view shows planned total against measured."""
    measured = mx.executor.measure_plan(zoo.lenet(), {"data": (4, 1, 28, 28)}, recompute="mirror")
    assert isinstance(measured, mx.executor.PlanMeasurement)
    assert measured.plan.recompute == "mirror" and measured.ctx.device_type == "cpu"
    assert measured.measured_bytes == measured.plan.total_bytes  # the honest peak
    view = MemoryPlanView(measured)
    assert view.plan is measured.plan and view.measured_bytes == measured.measured_bytes
    assert measured.temporaries_bytes > 0  # small ones: softmax's row maxima and sums, ...
    assert view.planned_against_measured() == {
        "planned": measured.plan.total_bytes,
        "measured": measured.measured_bytes,
        "temporaries": measured.temporaries_bytes,
    }
    line = view.measured_line()
    assert "= 1.00x the plan" in line and "workspace" in line and "kernel temporaries" in line
    assert line in view.to_text().splitlines()[1]
    svg = view.to_svg()
    assert "measured" in svg and "planned" in svg  # the two bars' labels


def test_measured_bytes_given_by_hand_and_checked():
    plan = mx.executor.plan_memory(zoo.mlp(), {"data": (8, 784)})
    view = MemoryPlanView(plan, measured_bytes=2 * plan.total_bytes)
    assert "= 2.00x the plan" in view.measured_line()
    assert MemoryPlanView(plan).measured_line() == "" and MemoryPlanView(plan).planned_against_measured() == {}
    for bad in (-1, 1.5, "10", True):
        with pytest.raises(ValueError, match=r"measured_bytes must be a byte count.*measure_plan"):
            MemoryPlanView(plan, measured_bytes=bad)
    with pytest.raises(TypeError, match=r"ctx must be an mx.Context.*got str 'gpu'"):
        mx.executor.measure_plan(zoo.mlp(), {"data": (8, 784)}, ctx="gpu")
