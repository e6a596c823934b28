"""Recomputation: the same gradients with fewer kept values, plans that check, budgets that hold.

Every zoo network is trained one step with and without recomputation, from
the same parameters and the same random seed: gradients, outputs and aux
states must be bit-identical (Dropout's mask is replayed, never redrawn;
BatchNorm's moving statistics update once).
"""

from __future__ import annotations

import numpy as np
import pytest

import mxnb as mx
from mxnb.base import ParamError
from mxnb.engine.tracing import OpPush
from mxnb.executor import EntryKind, plan_memory, zoo
from mxnb.executor.bulk import step_names
from mxnb.executor.graph import build_graph
from mxnb.executor.recompute import choose
from mxnb.executor.tradeoff import MemoryBudgetError, pareto, tradeoff_curve

LSTM_KWARGS = {"num_layers": 2, "seq_len": 3, "num_hidden": 8, "num_embed": 8, "num_classes": 10}
LSTM_SHAPES = {
    "data": (2, 3, 8),
    **{f"l{i}_init_{s}": (2, 8) for i in (0, 1) for s in "ch"},
    "softmax_label": (6,),
}

#: builder -> (symbol factory, small input shapes)
NETWORKS = {
    "mlp": (lambda: zoo.mlp(), {"data": (4, 784)}),
    "deep_mlp": (lambda: zoo.deep_mlp(layers=4, hidden=32), {"data": (4, 16)}),
    "lenet": (lambda: zoo.lenet(), {"data": (2, 1, 28, 28)}),
    "lenet5_digits": (lambda: zoo.lenet5_digits(), {"data": (2, 1, 16, 16)}),
    "alexnet": (lambda: zoo.alexnet(num_classes=10), {"data": (1, 3, 67, 67)}),
    "resnet18": (lambda: zoo.resnet(18, num_classes=10), {"data": (2, 3, 32, 32)}),
    "lstm": (lambda: zoo.lstm_unrolled(**LSTM_KWARGS), LSTM_SHAPES),
}
SLOW_NETWORKS = {
    "vgg16": (lambda: zoo.vgg16(num_classes=10), {"data": (1, 3, 32, 32)}),
    "resnet50": (lambda: zoo.resnet(50, num_classes=10), {"data": (1, 3, 32, 32)}),
    "inception_bn": (lambda: zoo.inception_bn(num_classes=10), {"data": (1, 3, 64, 64)}),
    "inception_v3": (
        lambda: zoo.inception_v3(num_classes=10, global_pool=True),
        {"data": (1, 3, 75, 75)},
    ),
}


def train_step(sym, shapes, recompute):
    """Bind, fill every argument from a fixed seed, run forward+backward; return the results."""
    exe = sym.simple_bind(mx.cpu(), recompute=recompute, **shapes)
    rng = np.random.default_rng(0)
    for name, array in exe.arg_dict.items():
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
    return exe, {
        "grad": {k: g.asnumpy() for k, g in exe.grad_dict.items()},
        "aux": {k: a.asnumpy() for k, a in exe.aux_dict.items()},
        "out": [o.asnumpy() for o in exe.outputs],
    }


def assert_same_training_step(sym, shapes, modes):
    _, reference = train_step(sym, shapes, None)
    for mode in modes:
        exe, got = train_step(sym, shapes, mode)
        plan = exe.memory_plan
        plan.check()
        assert plan.recompute_steps, f"{mode}: nothing was recomputed"
        for kind in ("grad", "aux"):
            for name, value in reference[kind].items():
                np.testing.assert_array_equal(got[kind][name], value, err_msg=f"{mode} {name}")
        for ours, theirs in zip(got["out"], reference["out"]):
            np.testing.assert_array_equal(ours, theirs)


def test_every_zoo_builder_is_checked_with_recomputation():
    builders = set(zoo.__all__) - {"NETWORKS", "build", "input_shapes", "lstm_shapes"}
    aliases = {"resnet18": "resnet", "resnet50": "resnet", "lstm": "lstm_unrolled"}
    checked = {aliases.get(name, name) for name in (*NETWORKS, *SLOW_NETWORKS)}
    assert builders <= checked, f"not checked with recomputation: {sorted(builders - checked)}"


@pytest.mark.parametrize("name", sorted(NETWORKS))
def test_gradients_identical_with_recomputation(name):
    factory, shapes = NETWORKS[name]
    assert_same_training_step(factory(), shapes, ("mirror", "sqrt"))


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(SLOW_NETWORKS))
def test_gradients_identical_with_recomputation_large(name):
    factory, shapes = SLOW_NETWORKS[name]
    assert_same_training_step(factory(), shapes, ("mirror", "sqrt"))


def test_dropout_is_replayed_and_batchnorm_recomputed():
    """AlexNet's drop6/drop7 and ResNet's BatchNorms are recomputed (MXNet's mirror never does)."""
    plan = plan_memory(zoo.alexnet(num_classes=10), {"data": (1, 3, 67, 67)}, recompute="mirror")
    assert {"drop6", "drop7"} <= set(plan.recomputed_nodes)
    # the mask is kept: no recomputed copy of it, the original is read by the replay
    assert "drop6_mask" not in plan.recomputed_entries()
    assert "drop6_output" in plan.recomputed_entries()
    plan = plan_memory(zoo.resnet(18, num_classes=10), {"data": (2, 3, 32, 32)}, recompute="mirror")
    assert "stage1_unit1_bn2" in plan.recomputed_nodes
    # expensive ops stay, as MXNet's rule says
    assert not any("conv" in name for name in plan.recomputed_nodes)


def test_recomputed_entries_are_planned_and_checked():
    plan = plan_memory(zoo.resnet(18, num_classes=10), {"data": (2, 3, 32, 32)}, recompute="sqrt")
    plan.check()
    recomputed = [e for e in plan.entries if e.kind is EntryKind.RECOMPUTED]
    assert recomputed and all(not e.external for e in recomputed)
    for entry in recomputed:
        original = plan.entry(entry.recompute_of)
        # the original was freed after its forward readers: it is dead before the copy lives
        assert plan.steps[original.last_step] in plan.steps[: plan.steps.index("softmax") + 1]
        assert entry.first_step > original.last_step
    assert len(plan.recompute_steps) == len(plan.recomputed_nodes)
    assert plan.segments() and sum(map(len, plan.segments())) == len(plan.recomputed_nodes)
    assert 0 < plan.recompute_ratio < 1
    text = plan.summary()
    assert "recompute (sqrt)" in text


def test_recomputation_plans_pack_an_arena_near_the_peak():
    """Offsets in one block let freed small values make room for large late gradients."""
    plan = plan_memory(zoo.resnet(18, num_classes=10), {"data": (4, 3, 32, 32)}, recompute="mirror")
    plan.check()
    assert any(entry.offset for entry in plan.entries)
    assert all(entry.offset % 64 == 0 for entry in plan.entries)
    assert plan.internal_bytes <= 1.05 * plan.peak_bytes
    plain = plan_memory(zoo.resnet(18, num_classes=10), {"data": (4, 3, 32, 32)})
    assert not any(entry.offset for entry in plain.entries)  # plans without recompute: blocks


def test_plan_check_catches_a_recomputed_copy_sharing_live_storage():
    """check() applies the no-overlap rule to recomputed entries too."""
    import dataclasses

    plan = plan_memory(zoo.resnet(18, num_classes=10), {"data": (2, 3, 32, 32)}, recompute="sqrt")
    paired = {name for pair in plan.inplace_pairs for name in pair}
    copy = next(e for e in plan.entries if e.recompute_of is not None and e.name not in paired)
    victim = next(
        e
        for e in plan.internal_entries()
        if e is not copy
        and e.name not in paired
        and e.alive_at(copy.first_step)
        and e.nbytes >= copy.nbytes
    )
    moved = dataclasses.replace(copy, storage_id=victim.storage_id, offset=victim.offset)
    entries = tuple(moved if e is copy else e for e in plan.entries)
    blocks = tuple(
        dataclasses.replace(
            b,
            entries=tuple(n for n in b.entries if n != copy.name)
            + ((copy.name,) if b.id == victim.storage_id else ()),
        )
        for b in plan.blocks
    )
    broken = dataclasses.replace(plan, entries=entries, blocks=blocks)
    with pytest.raises(AssertionError, match="share storage"):
        broken.check()


def test_no_recompute_keeps_the_plan():
    sym, shapes = zoo.lenet(), {"data": (2, 1, 28, 28)}
    plain = plan_memory(sym, shapes)
    assert plain.recompute == "none" and plain.recompute_steps == () and plain.recompute_ratio == 0
    assert plain.forward_flops > 0
    # inference has nothing to recompute
    assert plan_memory(sym, shapes, grad_req="null", recompute="sqrt").recompute_steps == ()


def test_budget_search_fits_or_says_so():
    sym, shapes = zoo.resnet(18, num_classes=10), {"data": (2, 3, 32, 32)}
    points = tradeoff_curve(sym, shapes)
    smallest = min(p.internal_bytes for p in points)
    sizes = sorted({p.internal_bytes for p in points})
    for budget in [smallest, sizes[len(sizes) // 2] + 1, 10**12]:
        plan = plan_memory(sym, shapes, recompute=budget)
        plan.check()
        assert plan.internal_bytes <= budget
        fitting = [p.plan.recompute_flops for p in points if p.internal_bytes <= budget]
        assert plan.recompute_flops == min(fitting)
        assert plan.recompute.startswith(f"budget {budget} B")
    with pytest.raises(MemoryBudgetError, match="smallest reachable plan needs"):
        plan_memory(sym, shapes, recompute=smallest - 1)
    with pytest.raises(ParamError):
        plan_memory(sym, shapes, recompute=0)


def test_pareto_front_trades_bytes_for_compute():
    points = tradeoff_curve(zoo.resnet(18, num_classes=10), {"data": (4, 3, 32, 32)})
    front = pareto(points)
    plain = next(p for p in points if p.label == "none")
    # the plain plan packed into one arena: no recomputation, fewer bytes than MXNet's blocks
    assert (front[0].label, front[0].recompute_ratio) == ("packed", 0.0)
    assert front[0].internal_bytes < plain.internal_bytes
    assert front[0].plan.recompute_steps == () and len(front[0].plan.blocks) == 1
    ratios = [p.recompute_ratio for p in front]
    sizes = [p.internal_bytes for p in front]
    assert ratios == sorted(ratios) and sizes == sorted(sizes, reverse=True)
    assert len(front) >= 2


def test_force_mirroring_and_mirror_stage_attributes():
    """MXNet's node attributes: force_mirroring recomputes even without recompute=...;
    with mirror_stage marks, only marked nodes can be checkpoints."""
    x = mx.sym.Variable("data")
    fc1 = mx.sym.FullyConnected(x, num_hidden=8, name="fc1")
    act = mx.sym.Activation(fc1, act_type="tanh", name="act")
    act._set_attr(force_mirroring="True")
    fc2 = mx.sym.FullyConnected(act, num_hidden=8, name="fc2")
    relu = mx.sym.Activation(fc2, act_type="relu", name="relu")
    relu._set_attr(force_mirroring="False")
    net = mx.sym.SoftmaxOutput(mx.sym.FullyConnected(relu, num_hidden=3, name="fc3"), name="sm")
    shapes = {"data": (2, 5)}
    assert plan_memory(net, shapes).recomputed_nodes == ("act",)
    assert "relu" not in plan_memory(net, shapes, recompute="mirror").recomputed_nodes
    fc2._set_attr(mirror_stage="True")
    graph = build_graph(net, shapes)
    chosen = choose(graph, "sqrt")
    assert "fc1" in chosen  # not a stage: recomputed
    assert "relu" not in chosen  # forced off


def test_environment_variable_turns_mirror_on(monkeypatch):
    monkeypatch.setenv("MXNB_BACKWARD_DO_MIRROR", "1")
    plan = plan_memory(zoo.mlp(), {"data": (4, 784)})
    assert plan.recomputed_nodes == ("relu1", "relu2")


def test_bad_recompute_value_names_the_choices():
    with pytest.raises(ParamError, match="'mirror', 'sqrt' or a byte budget"):
        plan_memory(zoo.mlp(), {"data": (4, 784)}, recompute="everything")


def test_recompute_steps_run_through_the_engine():
    """Recompute steps are engine ops: they appear in the trace (and so on the timeline).

    With bulk execution they run inside segments, named after their steps.
    """
    exe = zoo.mlp().simple_bind(mx.cpu(), recompute="mirror", data=(4, 784))
    for size in (0, 15):
        with mx.engine.bulk(size), mx.engine.trace() as trace:
            exe.forward(is_train=True)
            exe.backward()
            mx.nd.waitall()
        names = [name for event in trace.events_of(OpPush) for name in step_names(event.name)]
        assert "relu2_recompute" in names and "relu1_recompute" in names
        assert names.index("relu2_recompute") < names.index("relu2_backward")
        assert names.index("relu1_recompute") < names.index("fc2_backward")
    assert len(trace.events_of(OpPush)) < len(names)  # bulked: fewer ops than steps


def test_flops_per_operator():
    from mxnb.executor.flops import step_flops

    x = mx.sym.Variable("x")
    conv = mx.sym.Convolution(x, kernel=(3, 3), num_filter=4, no_bias=True, name="conv")
    graph = build_graph(conv, {"x": (2, 3, 8, 8)}, grad_req="null")
    # 2 FLOPs per multiply-add, 2*4*6*6 outputs, 3*3*3 taps each
    assert step_flops(graph.steps[0], graph.entries) == 2 * (2 * 4 * 6 * 6) * 3 * 9
