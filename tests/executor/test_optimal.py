"""The optimal curve: exact plans at many budgets, and every wide step proven or left open.

The proof is checked against brute force: on a 4-layer MLP every subset of
the recomputable steps is planned for real (512 plans), and the curve's front
must be the brute-force front.
"""

from __future__ import annotations

import itertools

import pytest

import mxnb as mx
from mxnb.base import ParamError
from mxnb.executor import optimal_curve, plan_memory
from mxnb.executor.tradeoff import pareto
from mxnb.executor.recompute import candidates
from mxnb.executor.tournament import plan_best

from .test_honest_peak import small_resnet
from .test_milp import deep_mlp

MLP_SHAPES = {"data": (16, 64)}


@pytest.fixture(scope="module")
def mlp_curve():
    return optimal_curve(deep_mlp(4), MLP_SHAPES, step=0.05, time_limit=30)


def test_the_curve_is_the_brute_force_front(mlp_curve):
    sym = deep_mlp(4)
    graph, _ = plan_best(sym, MLP_SHAPES, "write", None)
    names = [step.name for step in candidates(graph)]
    assert len(names) == 9
    every = [
        plan_best(sym, MLP_SHAPES, "write", None, nodes=frozenset(subset))[1]
        for size in range(len(names) + 1)
        for subset in itertools.combinations(names, size)
    ]
    truth = [(p.internal_bytes, p.recompute_flops) for p in pareto(every)]
    assert [(p.internal_bytes, p.recompute_flops) for p in mlp_curve.front] == truth


def test_a_proven_step_has_nothing_cheaper_under_its_higher_point(mlp_curve):
    proven = [step for step in mlp_curve.steps if step.proven]
    assert proven, "the MLP's first step (no recomputation -> some) is proven"
    for step in proven:
        between = (step.high.internal_bytes + step.low.internal_bytes) // 2
        plan = plan_memory(deep_mlp(4), MLP_SHAPES, budget=between, solver="milp", time_limit=30)
        assert plan.recompute_flops >= step.low.recompute_flops
        assert step.rise == pytest.approx(step.low.recompute_ratio - step.high.recompute_ratio)


def test_the_front_trades_bytes_for_recomputation_and_every_plan_fits(mlp_curve):
    front = mlp_curve.front
    assert front[0].recompute_flops == 0
    for higher, lower in zip(front, front[1:]):
        assert lower.internal_bytes < higher.internal_bytes
        assert lower.recompute_flops > higher.recompute_flops
    for plan in mlp_curve.plans:
        plan.check()
    assert mlp_curve.failed < front[-1].internal_bytes
    with pytest.raises(mx.executor.MemoryBudgetError):
        plan_memory(deep_mlp(4), MLP_SHAPES, budget=mlp_curve.failed, solver="milp")


def test_wide_steps_are_asked_about_and_narrow_ones_are_not():
    lines: list[str] = []
    curve = optimal_curve(small_resnet(), {"data": (4, 3, 16, 16)}, step=0.1, time_limit=20,
                          max_step=0.05, refine=40, progress=lines.append)  # fmt: skip
    answered = [line for line in lines if "no plan fits" not in line]  # one line per solve
    assert len(answered) == len(curve.plans) - 1  # the plain plan is not solved
    assert len(lines) > len(answered)  # the sweep ends where no plan fits
    for step in curve.steps:
        if step.share <= 0.05:
            assert not step.asked
        assert not step.proven or step.asked
    widest_open = curve.widest(proven=False)  # refine=40 is enough: every wide step is asked
    assert widest_open is None or widest_open.share <= 0.05 or widest_open.asked
    assert "of plain" in curve.widest().describe()


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"step": 0}, "step"),
        ({"max_step": 1.5}, "max_step"),
        ({"refine": -1}, "refine"),
        ({"time_limit": 0}, "time_limit"),
    ],
)
def test_bad_arguments_name_the_argument(kwargs, match):
    with pytest.raises(ParamError, match=match):
        optimal_curve(deep_mlp(2), MLP_SHAPES, **kwargs)
