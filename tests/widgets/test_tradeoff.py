"""TradeoffView and the recomputed marks of MemoryPlanView."""

from __future__ import annotations

import dataclasses

import pytest

import mxnb as mx
from mxnb.executor import zoo
from mxnb.widgets import MemoryPlanView, TradeoffView

SHAPES = {"data": (4, 3, 32, 32)}


@pytest.fixture(scope="module")
def points():
    return mx.executor.tradeoff_curve(zoo.resnet(18, num_classes=10), SHAPES)


def test_curve_is_the_pareto_front_and_marks_are_kept(points):
    view = TradeoffView(points, marks={"MXNet": 3 * 2**20, "MXNet mirror": 2.9 * 2**20})
    assert view.front == mx.executor.pareto(points)
    assert view.front[0].label == "packed"  # the plain plan packed: no recomputation
    assert "packed" in view.to_text()
    # the default point: fewest bytes with at most one extra forward
    eligible = [p for p in view.front if p.recompute_ratio <= 1]
    assert view.selected.internal_bytes == min(p.internal_bytes for p in eligible)
    text = view.to_text()
    assert "mark: MXNet mirror" in text and "segments recomputed at" in text
    svg = view.to_svg()
    assert "<svg" in svg


def test_selected_point_shows_its_segments(points):
    view = TradeoffView(points, select="mirror")
    strip = view.strip()
    recomputed = [step for step, segment in strip if segment >= 0]
    assert recomputed == list(view.selected.plan.recomputed_nodes)
    assert [s for run in view.segments() for s in run] == recomputed
    for index, run in enumerate(view.segments()):
        assert f"[{index}] {' -> '.join(run)}" in view.to_text()
    with pytest.raises(KeyError, match="the labels are"):
        TradeoffView(points, select="nonsense")


def test_plan_view_marks_recomputed_entries():
    plan = mx.executor.plan_memory(zoo.mlp(), {"data": (8, 784)}, recompute="mirror")
    view = MemoryPlanView(plan)
    text = view.to_text()
    assert "relu1_output_recompute[" in text and "(recomputed)" in text
    assert "recomputed (mirror): 2 steps" in text
    assert "<svg" in view.to_svg()


def test_exact_planner_curve_is_drawn_beside_the_greedy_one():
    sym, shapes = zoo.lenet(), {"data": (4, 1, 28, 28)}
    points = mx.executor.tradeoff_curve(sym, shapes)
    low = min(p.internal_bytes for p in points)
    exact = [
        mx.executor.plan_memory(sym, shapes, budget=budget, solver="milp")
        for budget in (low, points[0].internal_bytes)
    ]
    view = TradeoffView(points, exact=exact)
    assert [p.recompute_ratio for p in view.exact] == sorted(p.recompute_ratio for p in exact)
    text = view.to_text()
    assert text.count("  = milp") == 2 and "gap 0" in text
    assert "exact planner (MILP)" in view.to_svg()
    windowed = TradeoffView(points, exact=[dataclasses.replace(exact[0], milp_window=20)])
    assert "(window 20 steps)" in windowed.to_text()  # a gap proven within the window only


def test_an_optimal_curve_is_drawn_with_its_proven_steps():
    net = mx.sym.Variable("data")
    for i in range(4):
        net = mx.sym.Activation(mx.sym.FullyConnected(net, num_hidden=64, name=f"fc{i}"),
                                act_type="relu", name=f"relu{i}")  # fmt: skip
    sym = mx.sym.SoftmaxOutput(mx.sym.FullyConnected(net, num_hidden=10, name="out"), name="s")
    shapes = {"data": (16, 64)}
    curve = mx.executor.optimal_curve(sym, shapes, step=0.05, time_limit=20)
    proven = [step for step in curve.steps if step.proven]
    assert proven
    view = TradeoffView(mx.executor.tradeoff_curve(sym, shapes), exact=curve)
    assert view.exact == sorted(curve.front, key=lambda p: (p.recompute_ratio, p.internal_bytes))
    assert view.proven == proven
    assert view.to_text().count("proven step:") == len(proven)
    assert "proven step" in view.to_svg()
