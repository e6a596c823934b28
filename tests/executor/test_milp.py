"""The exact recomputation planner: proven optimal, never worse than greedy, within budget.

Each budget is solved for real (:func:`mxnb.executor.exact.plan_milp`) and its
plan checked; the small networks solve in about a second each.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np
import pytest

import mxnb as mx
from mxnb.base import ParamError
from mxnb.executor import exact, plan_memory, zoo
from mxnb.executor.executor import Executor
from mxnb.executor.sharing import bound_arrays
from mxnb.executor.milp import Model, Solution
from mxnb.executor.planning import plan_graph_and_memory
from mxnb.executor.tournament import plan_best
from mxnb.executor.tradeoff import MemoryBudgetError, floor_bytes, tradeoff_curve

from .test_honest_peak import small_resnet
from .test_recompute import train_step


deep_mlp = zoo.deep_mlp  # every activation is held for backward: recomputation trades


#: name -> (symbol factory, input shapes): small enough for a solve of about a second, and
#: graphs where recomputation goes under the packed plan (the zoo's MLP and LeNet have none:
#: test_the_packed_plan_is_optimal_where_recomputation_cannot_help)
NETWORKS = {
    "deep_mlp": (deep_mlp, {"data": (16, 64)}),
    "small_resnet": (small_resnet, {"data": (4, 3, 16, 16)}),
}


def budgets(sym, shapes, count=8):
    """``count`` budgets from the smallest plan the greedy family reaches to just under the
    smallest plan with no recomputation (the packed one): every one needs recomputation."""
    points = tradeoff_curve(sym, shapes)
    low = min(point.internal_bytes for point in points)
    high = min(point.internal_bytes for point in points if point.recompute_ratio == 0)
    assert low < high, "recomputation must leave room to trade"
    return [low + (high - 1 - low) * i // (count - 1) for i in range(count)]


@pytest.mark.parametrize("name", sorted(NETWORKS))
def test_milp_proves_optimality_within_budget_and_never_loses_to_greedy(name):
    factory, shapes = NETWORKS[name]
    sym = factory()
    proven = 0
    for budget in budgets(sym, shapes):
        greedy = plan_memory(sym, shapes, budget=budget)
        plan = plan_memory(sym, shapes, budget=budget, solver="milp", time_limit=60)
        plan.check()
        assert plan.internal_bytes <= budget
        assert plan.recompute_flops <= greedy.recompute_flops, (budget, plan.solver)
        assert plan.solver in ("milp", "greedy incumbent")
        if plan.solver == "milp" and plan.mip_gap is not None and plan.mip_gap <= 1e-6:
            proven += 1
    assert proven >= 8


@pytest.mark.parametrize(
    ("factory", "shapes"),
    [(zoo.mlp, {"data": (64, 784)}), (zoo.lenet, {"data": (4, 1, 28, 28)})],
    ids=["mlp", "lenet"],
)
def test_the_packed_plan_is_optimal_where_recomputation_cannot_help(factory, shapes):
    """The zoo's MLP and LeNet: the plain plan packed is within 4 % of the floor no plan goes
    under, and no recomputation plan goes under it; so at 8 budgets from it to the plain plan
    the exact planner answers it, recomputing nothing (optimal: no cost is lower), gap 0."""
    sym = factory()
    points = tradeoff_curve(sym, shapes)
    plain = next(p for p in points if p.label == "none")
    packed = next(p for p in points if p.label == "packed")
    floor, _ = floor_bytes(plain.graph)
    assert floor <= packed.internal_bytes <= 1.04 * floor < plain.internal_bytes
    assert min(p.internal_bytes for p in points) == packed.internal_bytes
    high, low = plain.internal_bytes - 1, packed.internal_bytes
    for budget in [low + (high - low) * i // 7 for i in range(8)]:
        plan = plan_memory(sym, shapes, budget=budget, solver="milp")
        plan.check()
        assert (plan.solver, plan.mip_gap, plan.recompute_flops) == ("milp", 0.0, 0)
        assert plan.internal_bytes == packed.internal_bytes <= budget


def test_milp_finds_cheaper_plans_than_the_greedy_family():
    sym, shapes = deep_mlp(), NETWORKS["deep_mlp"][1]
    budget = budgets(sym, shapes)[4]
    greedy = plan_memory(sym, shapes, budget=budget)
    plan = plan_memory(sym, shapes, budget=budget, solver="milp")
    assert plan.solver == "milp"
    assert plan.recompute_flops < greedy.recompute_flops
    assert plan.recomputed_nodes and plan.recompute_steps


def test_budget_below_every_plan_raises():
    sym, shapes = zoo.mlp(), {"data": (64, 784)}
    low = min(point.internal_bytes for point in tradeoff_curve(sym, shapes))
    with pytest.raises(MemoryBudgetError, match="smallest reachable.*no plan goes under"):
        plan_memory(sym, shapes, budget=low // 2, solver="milp")


@pytest.mark.parametrize("name", sorted(NETWORKS))
def test_no_plan_goes_under_the_floor(name):
    """The largest step's working set bounds every plan, greedy and exact, from below."""
    factory, shapes = NETWORKS[name]
    sym = factory()
    points = tradeoff_curve(sym, shapes)
    floor, step = floor_bytes(points[0].graph)
    assert step and floor > 0
    for point in points:
        assert point.plan.peak_bytes >= floor, point.label
    lowest = plan_memory(sym, shapes, budget=budgets(sym, shapes)[0], solver="milp")
    assert lowest.peak_bytes >= floor


def test_a_budget_the_plain_plan_meets_recomputes_nothing():
    sym, shapes = zoo.mlp(), {"data": (64, 784)}
    plain = plan_memory(sym, shapes)
    plan = plan_memory(sym, shapes, budget=plain.internal_bytes, solver="milp")
    assert plan.internal_bytes == plain.internal_bytes
    assert (plan.solver, plan.mip_gap, plan.recompute_flops) == ("milp", 0.0, 0)


@pytest.mark.parametrize("name", sorted(NETWORKS))
def test_model_never_promises_less_than_the_real_schedule_keeps_alive(name):
    factory, shapes = NETWORKS[name]
    sym = factory()
    graph, plain = plan_best(sym, shapes)
    model = Model(graph)
    assert model.peak_of(frozenset()) == plain.peak_bytes
    for rule in ("mirror", "sqrt"):
        recomputed = plan_best(sym, shapes, recompute=rule)[1]
        assert model.peak_of(frozenset(recomputed.recomputed_nodes)) >= recomputed.peak_bytes


@pytest.mark.parametrize("which", ["milp", "packed"])
def test_gradients_identical_with_the_milp_and_the_packed_plan(which):
    """The exact planner's recomputation, and the plain plan packed into one arena (LeNet: a
    budget just under the plain plan), train bit for bit as the plain plan does."""
    if which == "milp":
        sym, shapes = deep_mlp(), NETWORKS["deep_mlp"][1]
        budget = budgets(sym, shapes)[4]
    else:
        sym, shapes = zoo.lenet(), {"data": (4, 1, 28, 28)}
        budget = plan_memory(sym, shapes).internal_bytes - 1
    graph, plan = plan_graph_and_memory(sym, shapes, budget=budget, solver="milp")
    assert plan.solver == "milp" and bool(plan.recompute_steps) == (which == "milp")
    assert plan.internal_bytes <= budget
    _, reference = train_step(sym, shapes, None)
    ctx = mx.cpu()
    args, grads, aux = bound_arrays(graph, ctx, None, None, None)
    exe = Executor(sym, ctx, graph, plan, args, grads, aux)
    rng = np.random.default_rng(0)
    for name, array in exe.arg_dict.items():  # filled as train_step fills them
        if name == "softmax_label":
            array[:] = rng.integers(0, 10, array.shape)
        else:
            array[:] = (rng.standard_normal(array.shape) * 0.1).astype("float32")
    for name, array in exe.aux_dict.items():
        array[:] = 1.0 if name.endswith("var") else 0.0
    mx.random.seed(7)
    exe.forward(is_train=True)
    exe.backward()
    mx.nd.waitall()
    exe.memory_plan.check()
    for name, value in reference["grad"].items():
        np.testing.assert_array_equal(exe.grad_dict[name].asnumpy(), value, err_msg=name)
    for ours, theirs in zip(exe.outputs, reference["out"]):
        np.testing.assert_array_equal(ours.asnumpy(), theirs)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"budget": 10**6, "solver": "exact"}, "solver must be one of 'greedy', 'milp'"),
        ({"solver": "milp"}, "pass budget=<bytes>"),
        (
            {"budget": 10**6, "solver": "milp", "time_limit": 0},
            r"time_limit \(seconds\) must be in",
        ),
    ],
)
def test_bad_solver_arguments_name_the_fix(kwargs, match):
    with pytest.raises(ParamError, match=match):
        plan_memory(zoo.mlp(), {"data": (4, 784)}, **kwargs)


def test_mxnet_export_of_resnet18_v1_fits_half_of_mxnet_within_a_third_of_a_forward():
    """Held-out: Gluon's resnet18_v1 as MXNet 1.9.1 exported it (tests/executor/data/)."""
    data = Path(__file__).parent / "data"
    sym = mx.sym.load(str(data / "resnet18_v1_train-symbol.json"))
    theirs = json.loads((data / "resnet18_v1_train-mxnet.json").read_text())
    req = {arg: "write" for arg in sym.list_arguments()}
    req["data"] = req["softmax_label"] = "null"
    shapes = {"data": (32, 3, 224, 224)}
    budget = theirs["mirror_0_mb"] * 2**20 // 2
    greedy = plan_memory(sym, shapes, grad_req=req, budget=budget)
    plan = plan_memory(sym, shapes, grad_req=req, budget=budget, solver="milp")
    plan.check()
    assert plan.internal_bytes <= budget
    assert plan.recompute_flops <= greedy.recompute_flops
    assert plan.solver == "milp" and plan.recompute_ratio <= 0.35 < greedy.recompute_ratio


def test_out_of_time_the_greedy_incumbent_is_returned_and_said_so():
    sym, shapes = deep_mlp(), NETWORKS["deep_mlp"][1]
    budget = budgets(sym, shapes)[4]
    greedy = plan_memory(sym, shapes, budget=budget)
    plan = plan_memory(sym, shapes, recompute=budget, solver="milp", time_limit=1e-3)
    assert (plan.solver, plan.mip_gap) == ("greedy incumbent", None)
    assert plan.internal_bytes == greedy.internal_bytes <= budget
    assert plan.recomputed_nodes == greedy.recomputed_nodes


def test_bind_and_simple_bind_take_a_budget_and_a_solver():
    sym, shapes = deep_mlp(), NETWORKS["deep_mlp"][1]
    budget = budgets(sym, shapes)[4]
    wanted = plan_memory(sym, shapes, budget=budget, solver="milp", time_limit=30)
    exe = sym.simple_bind(mx.cpu(), budget=budget, solver="milp", time_limit=30, **shapes)
    assert exe.memory_plan.solver == "milp"
    assert exe.memory_plan.internal_bytes == wanted.internal_bytes <= budget
    assert exe.memory_plan.recompute_flops == wanted.recompute_flops
    args = {name: mx.nd.zeros(array.shape) for name, array in exe.arg_dict.items()}
    grads = {name: mx.nd.zeros(array.shape) for name, array in exe.arg_dict.items()}
    greedy = sym.bind(mx.cpu(), args, args_grad=grads, budget=budget)
    assert greedy.memory_plan.solver is None
    assert (
        greedy.memory_plan.internal_bytes == plan_memory(sym, shapes, budget=budget).internal_bytes
    )
    with pytest.raises(ParamError, match="pass budget=<bytes>"):
        sym.simple_bind(mx.cpu(), solver="milp", **shapes)


@pytest.mark.parametrize("solver", ["greedy", "milp"])
def test_a_measured_op_time_table_replaces_flops_as_the_cost(solver):
    """With every op timed alike, the plan recomputes the fewest steps; its predicted seconds are kept."""
    sym, shapes = deep_mlp(), NETWORKS["deep_mlp"][1]
    budget = budgets(sym, shapes)[4]
    graph, plain = plan_best(sym, shapes)
    table = {step.name: 1e-3 for step in graph.steps}
    by_flops = plan_memory(sym, shapes, budget=budget, solver=solver, time_limit=30)
    by_time = plan_memory(sym, shapes, budget=budget, solver=solver, time_limit=30, op_times=table)
    by_time.check()
    assert by_time.internal_bytes <= budget
    assert by_time.recompute_seconds == pytest.approx(1e-3 * len(by_time.recompute_steps))
    assert by_time.recompute_seconds == by_time.recompute_cost(table)
    assert len(by_time.recompute_steps) <= len(by_flops.recompute_steps)
    assert by_flops.recompute_seconds is None
    assert by_flops.recompute_cost() == by_flops.recompute_flops


def test_op_times_measures_every_step_of_a_training_step():
    from mxnb.executor.measure import op_times, predicted_overhead

    sym, shapes = zoo.lenet(), {"data": (4, 1, 28, 28)}
    exe = sym.simple_bind(mx.cpu(), **shapes)
    table = op_times(exe, repeats=1)
    steps = exe.memory_plan.steps
    assert set(steps) <= set(table) and all(table[name] > 0 for name in steps)
    mirror = plan_memory(sym, shapes, recompute="mirror")
    share = predicted_overhead(mirror, table)
    assert 0 < share < 1
    assert share == pytest.approx(mirror.recompute_cost(table) / sum(table.values()))


def test_a_convolutions_data_gradient_may_take_its_output_gradients_memory():
    """Convolution's backward copies dy before it writes dx, so the two may share memory
    (``backward_inplace_option``) where their sizes agree; the gradients stay those of mx.nd."""
    import numpy as np

    import mxnb as mx

    def net(x, ops, conv):
        for i in range(3):
            x = conv(x, kernel=(3, 3), pad=(1, 1), num_filter=4, name=f"c{i}")
            x = ops.Activation(x, act_type="tanh") if i < 2 else x
        return x

    sym = net(mx.sym.Variable("data"), mx.sym, mx.sym.Convolution)
    shapes = {"data": (2, 4, 6, 6)}
    req = {name: "null" if name == "data" else "write" for name in sym.list_arguments()}
    plan = plan_memory(sym, shapes, grad_req=req)
    pairs = plan.inplace_pairs  # the conv's dx over its dy, between two internal gradients
    assert any(src.endswith("_backward_data") and dst.startswith("c1_") for src, dst in pairs)
    exe = sym.simple_bind(mx.cpu(), grad_req=req, **shapes)
    rng = np.random.default_rng(5)
    for array in exe.arg_dict.values():
        array[:] = rng.standard_normal(array.shape).astype("float32")
    head = rng.standard_normal((2, 4, 6, 6)).astype("float32")
    exe.forward(is_train=True)
    exe.backward(out_grads=[mx.nd.array(head)])
    args = {name: mx.nd.array(value.asnumpy()) for name, value in exe.arg_dict.items()}
    for name, array in args.items():
        if name != "data":
            array.attach_grad()
    with mx.autograd.record():
        out = net(args["data"], mx.nd, lambda x, name, **kw: mx.nd.Convolution(
            x, args[f"{name}_weight"], args[f"{name}_bias"], **kw))  # fmt: skip
    out.backward(mx.nd.array(head))
    for name, array in args.items():
        if name != "data":
            np.testing.assert_allclose(exe.grad_dict[name].asnumpy(), array.grad.asnumpy(),
                                       rtol=1e-5, atol=1e-5, err_msg=name)  # fmt: skip


class _OneColumnPerStep(Model):
    merge_runs = False


@pytest.mark.parametrize("name", sorted(NETWORKS))
def test_one_column_per_run_of_equal_bounds_is_exact(name):
    """Merging a held value's steps with equal bounds changes no modelled peak and no optimum,
    and the program is smaller."""
    factory, shapes = NETWORKS[name]
    sym = factory()
    graph, plain = plan_best(sym, shapes)
    merged, plain_form = Model(graph), _OneColumnPerStep(graph)
    assert len(merged.cols) < len(plain_form.cols)
    names = [step.name for step in merged.steps]
    rng = np.random.default_rng(0)
    sets = [frozenset(), frozenset(names)]
    sets += [frozenset(n for n in names if rng.random() < 0.5) for _ in range(12)]
    for nodes in sets:
        assert merged.peak_of(nodes) == plain_form.peak_of(nodes), sorted(nodes)
    budget = budgets(sym, shapes, count=3)[1]
    ours, theirs = merged.solve(budget, 60), plain_form.solve(budget, 60)
    assert ours.optimal and theirs.optimal
    assert ours.cost == pytest.approx(theirs.cost, rel=1e-9)


def _runs_ahead(model: Model, nodes: frozenset[str]) -> int:
    """How many steps before its latest moment a recompute runs, at most over ``nodes``, as
    the program schedules it: at its latest moment (backward's first read of its outputs, or
    else its consumers' latest), or before a recomputed consumer, whichever is sooner."""
    runs: dict[int, int] = {}
    for step in reversed(model.steps):
        j = step.index
        if step.name in nodes and model.latest[j] is not None:
            runs[j] = min([model.latest[j], *(runs[c] for c in model.consumers[j] if c in runs)])
    return max((model.latest[j] - runs[j] for j in runs), default=0)


@pytest.mark.parametrize("name", sorted(NETWORKS))
def test_a_window_admits_exactly_the_plans_that_recompute_at_most_that_far_ahead(name):
    """Within its window the program is the full one; outside it, it has no answer."""
    factory, shapes = NETWORKS[name]
    graph, _ = plan_best(factory(), shapes)
    full = Model(graph, window=None)
    names = [step.name for step in full.steps]
    rng = np.random.default_rng(1)
    admitted = refused = 0
    for window in (1, 2, 4):
        windowed = Model(graph, window=window)
        assert windowed.window == window
        assert windowed.triggers(window) == full.triggers(window) < full.triggers(None)
        for _ in range(30):
            nodes = frozenset(n for n in names if rng.random() < 0.4)
            peak = windowed.peak_of(nodes)
            if _runs_ahead(full, nodes) <= window:
                assert peak == full.peak_of(nodes), (window, sorted(nodes))
                admitted += 1
            else:
                assert peak == float("inf"), (window, sorted(nodes))
                refused += 1
    assert admitted > 10 and refused > 10


def test_auto_takes_the_widest_window_under_the_cap(monkeypatch):
    factory, shapes = NETWORKS["small_resnet"]
    graph, _ = plan_best(factory(), shapes)
    assert Model(graph).window is None  # within the cap: the full program
    monkeypatch.setattr("mxnb.executor.milp.MAX_TRIGGERS", 100)
    model = Model(graph)
    assert model.triggers(model.window) <= 100 < model.triggers(model.window + 1)
    assert model.triggers(None) == Model(graph, window=None).triggers(None) > 100


def test_a_windowed_answer_is_a_real_plan_never_cheaper_than_the_full_programs(monkeypatch):
    """A window restricts the plans, so its optimum costs at least the full one's; the plan
    says which window it was chosen in, and is within budget for real."""
    factory, shapes = NETWORKS["deep_mlp"]
    sym = factory()
    budget = budgets(sym, shapes, count=3)[1]
    full = plan_memory(sym, shapes, budget=budget, solver="milp")
    monkeypatch.setattr("mxnb.executor.milp.MAX_TRIGGERS", 20)
    windowed = plan_memory(sym, shapes, budget=budget, solver="milp")
    assert (full.milp_window, windowed.milp_window) == (None, 2)
    assert "window 2 steps" in windowed.recompute
    assert windowed.internal_bytes <= budget
    assert windowed.recompute_flops >= full.recompute_flops


@pytest.mark.parametrize("window", [0, -3, 2.5, True, "wide"])
def test_a_bad_window_names_the_choices(window):
    graph, _ = plan_best(zoo.mlp(), {"data": (4, 784)})
    with pytest.raises(ParamError, match=r"window must be 'auto', None or a number of steps"):
        Model(graph, window=window)


class _ScriptedModel:
    """A stand-in :class:`Model` for :func:`exact._search`: answers from a script, and the
    time limit of each solve noted."""

    op_times = None

    def __init__(self, answers):
        self.answers, self.limits = list(answers), []

    def solve(self, budget, time_limit, cuts=(), below=None):
        self.limits.append(time_limit)
        if not self.answers:  # the script is done: no answer
            return None
        nodes = self.answers.pop(0)
        return Solution(frozenset(nodes), float(len(nodes)), 0.0, True, 0.0)

    def peak_of(self, nodes, time_limit):
        return 100.0


def test_until_a_plan_fits_each_solve_leaves_half_the_time():
    """A solve whose answer may miss for real gets half the time left, so the cut it then needs
    has time for a solve of its own; once a plan fits, a solve gets all that is left."""

    class Real:  # the real planner's bytes of a set: {a} misses, {a, b} fits
        def __init__(self, nodes):
            self.internal_bytes = 90 if len(nodes) > 1 else 120

        def recompute_cost(self, op_times):
            return float(self.internal_bytes)

    model = _ScriptedModel([{"a"}, {"a", "b"}, {"a", "b"}])
    deadline = time.perf_counter() + 100.0
    graph, plan, solution = exact._search(model, 100, deadline, lambda nodes: (None, Real(nodes)))
    assert solution.nodes == {"a", "b"} and plan.internal_bytes == 90
    first, second, *later = model.limits  # the third finds the same set: then cheaper ones
    assert 49.0 < first <= 50.0 and 49.0 < second <= 50.0  # no plan fits yet: half of what is left
    assert later and all(limit > 99.0 for limit in later)  # a plan fits: all that is left
