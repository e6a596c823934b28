"""Memory planning: in-place, co-share, and the plan's invariants (MemoryPlan.check on every plan).

Graphs here use the toy properties of ``toy_ops`` (semantics of MXNet's
FullyConnected / Activation / add / SoftmaxOutput), so every expectation can
be derived by hand from the backward dependencies.
"""

from __future__ import annotations

import itertools

import pytest

from mxnb.base import ParamError
from mxnb.executor import (
    EXTERNAL_STORAGE_ID,
    EntryKind,
    MemoryPlan,
    PlanEntry,
    StorageBlock,
    plan_memory,
)
from mxnb.executor.graph import build_graph
from mxnb.executor.tournament import plan_graph

from .toy_ops import ToyAdd, ToyFC, ToyRelu, ToySoftmaxOutput, ToySymbol, apply, mlp, var


def plans(sym, shapes, grad_req):
    """Every strategy combination for one graph, each checked."""
    result = {}
    for inplace, coshare in itertools.product((False, True), repeat=2):
        plan = plan_memory(sym, shapes, grad_req=grad_req, inplace=inplace, coshare=coshare)
        plan.check()
        result[inplace, coshare] = plan
    return result


def test_mlp_inference_shares_two_blocks():
    r"""
    fc1 -> relu1 -> fc2 -> relu2 -> fc_out -> softmax      (inference, all 2x8 or 2x4)

    relu runs in place of its fc; fc2 cannot reuse relu1's block while
    reading it, so two blocks alternate.
    """
    plan = plan_memory(mlp(), {"data": (2, 5)}, grad_req="null")
    plan.check()
    assert plan.inplace_pairs == (("fc1_output", "relu1_output"), ("fc2_output", "relu2_output"))
    assert len(plan.blocks) == 2
    assert plan.entry("relu1_output").storage_id == plan.entry("fc1_output").storage_id
    assert plan.entry("fc_out_output").storage_id == plan.entry("fc1_output").storage_id
    assert plan.entry("softmax_output").storage_id == plan.entry("fc2_output").storage_id
    assert plan.internal_bytes == 2 * 64
    assert plan.naive_internal_bytes == 4 * 64 + 2 * 32
    assert plan.steps == ("fc1", "relu1", "fc2", "relu2", "fc_out", "softmax")


def test_mlp_training_keeps_what_backward_declared():
    """fc2's backward reads relu1_output: it lives until fc2_backward, in its own block."""
    plan = plan_memory(mlp(), {"data": (2, 5)}, grad_req="write")
    plan.check()
    relu1 = plan.entry("relu1_output")
    assert relu1.last_step == plan.steps.index("relu1_backward")
    # fc outputs are not needed by backward (relu backward reads its output), so relu is in place
    assert ("fc1_output", "relu1_output") in plan.inplace_pairs
    # relu backward runs in place over the gradient it receives
    assert ("fc_out_backward_data", "relu2_backward_data") in plan.inplace_pairs
    # argument gradients are the bound arrays: external, not planned
    grad = plan.entry("fc1_weight_grad")
    assert grad.kind is EntryKind.ARG_GRAD and grad.storage_id == EXTERNAL_STORAGE_ID
    # the loss needs no head gradient
    assert not any(entry.kind is EntryKind.HEAD_GRAD for entry in plan.entries)
    assert plan.internal_bytes < plan.naive_internal_bytes
    assert plan.grad_req_dict["data"] == "write"


def test_strategies_switch_off_one_by_one():
    """Both off is the naive plan; each strategy alone saves; both together save most."""
    for grad_req in ("null", "write"):
        by = plans(mlp(num_layers=4), {"data": (4, 6)}, grad_req)
        naive = by[False, False]
        assert naive.internal_bytes == naive.naive_internal_bytes
        assert naive.inplace_pairs == ()
        assert len(naive.blocks) == sum(1 for _ in naive.internal_entries())
        assert by[True, False].internal_bytes < naive.internal_bytes
        assert by[False, True].internal_bytes < naive.internal_bytes
        assert by[True, True].internal_bytes <= min(
            by[True, False].internal_bytes, by[False, True].internal_bytes
        )
        assert by[False, True].inplace_pairs == ()


def test_inplace_refused_while_another_reader_is_pending():
    r"""
        fc
       /  \
    relu   |      relu may not overwrite fc_output: add still reads it
       \  /
       add
    """
    x = apply(ToyFC(num_hidden=4), "fc", var("data"))
    y = apply(ToyAdd(), "add", apply(ToyRelu(), "relu", x), x)
    plan = plan_memory(ToySymbol([y]), {"data": (3, 2)}, grad_req="null")
    plan.check()
    assert plan.entry("relu_output").inplace_source is None
    assert plan.entry("relu_output").storage_id != plan.entry("fc_output").storage_id
    # add is the last reader of relu_output: it may take it in place
    assert plan.entry("add_output").inplace_source == "relu_output"


def test_inplace_refused_on_size_mismatch_and_on_arguments():
    """An argument (external) is never overwritten in place, even when the op allows it."""
    y = apply(ToyRelu(), "relu", var("data"))
    plan = plan_memory(ToySymbol([y]), {"data": (3, 2)}, grad_req="null")
    plan.check()
    assert plan.inplace_pairs == ()


def gradient_writes(graph, name):
    """(step name, req name) of every step writing the entry called ``name``, in order."""
    target = next(entry.id for entry in graph.entries if entry.name == name)
    return [
        (step.name, step.req[step.outputs.index(target)].name)
        for step in graph.steps
        if target in step.outputs
    ]


def test_shared_argument_gradient_is_accumulated_in_place():
    r"""
    data -> fc_a --\
        \-> fc_b --- add -> softmax

    data's gradient has two contributions: fc_b_backward writes the bound
    array, fc_a_backward adds to it (ADD_TO) -- no buffer, no sum step.
    """
    data = var("data")
    a = apply(ToyFC(num_hidden=3), "fc_a", data)
    b = apply(ToyFC(num_hidden=3), "fc_b", data)
    out = apply(ToySoftmaxOutput(), "softmax", apply(ToyAdd(), "add", a, b))
    graph = build_graph(ToySymbol([out]), {"data": (2, 4)}, grad_req="write")
    assert not [step for step in graph.steps if step.op_type == "ElementWiseSum"]
    assert gradient_writes(graph, "data_grad") == [
        ("fc_b_backward", "WRITE_TO"),
        ("fc_a_backward", "ADD_TO"),
    ]
    plan = plan_graph(graph)
    plan.check()
    assert plan.entry("data_grad").kind is EntryKind.ARG_GRAD
    assert plan.entry("data_grad").first_step == plan.steps.index("fc_b_backward")
    # with grad_req 'add' every contribution adds
    graph = build_graph(ToySymbol([out]), {"data": (2, 4)}, grad_req="add")
    assert {req for _, req in gradient_writes(graph, "data_grad")} == {"ADD_TO"}


def test_internal_entry_and_repeated_argument_gradients_are_summed():
    r"""
    data -> fc --+--> add(fc, fc) -> softmax      fc_output read twice by one node:
                                                  its gradient is an ElementWiseSum
    """
    fc = apply(ToyFC(num_hidden=3), "fc", var("data"))
    out = apply(ToySoftmaxOutput(), "softmax", apply(ToyAdd(), "add", fc, fc))
    graph = build_graph(ToySymbol([out]), {"data": (2, 4)}, grad_req="write")
    sums = [step for step in graph.steps if step.op_type == "ElementWiseSum"]
    assert [step.name for step in sums] == ["fc_output_grad_sum"]
    assert (
        sums[0].index
        == graph.steps.index(next(step for step in graph.steps if step.name == "fc_backward")) - 1
    )
    plan = plan_graph(graph)
    plan.check()
    # the sum may run in place over its first part
    assert plan.entry("fc_output_grad").inplace_source == "add_backward_lhs"


def test_non_loss_head_gets_a_head_gradient_and_null_req_gets_scratch():
    """A head that is not a loss reads a head gradient; grad_req 'null' for data writes nothing."""
    out = apply(ToyRelu(), "relu", apply(ToyFC(num_hidden=3), "fc", var("data")))
    plan = plan_memory(ToySymbol([out]), {"data": (2, 4)}, grad_req={"fc_weight": "write"})
    plan.check()
    head = plan.entry("relu_output_head_grad")
    assert head.kind is EntryKind.HEAD_GRAD and head.external
    assert "data_grad" not in {entry.name for entry in plan.entries}
    assert plan.grad_req_dict == {"data": "null", "fc_weight": "write"}


def test_bad_grad_req_names_the_argument():
    with pytest.raises(ParamError, match="'fc_weight'"):
        plan_memory(
            ToySymbol([apply(ToyFC(num_hidden=3), "fc", var("data"))]),
            {"data": (2, 4)},
            grad_req={"fc_weight": "sometimes"},
        )


def test_deep_chain_plans_constant_memory_for_inference():
    """Inference memory of a 40-layer MLP does not grow with depth (co-share + in-place)."""
    shallow = plan_memory(mlp(num_layers=4), {"data": (8, 8)}, grad_req="null")
    deep = plan_memory(mlp(num_layers=40), {"data": (8, 8)}, grad_req="null")
    deep.check()
    assert deep.internal_bytes == shallow.internal_bytes
    assert deep.naive_internal_bytes > 8 * shallow.naive_internal_bytes


def _entry(name, sid, first, last, nbytes=8, source=None):
    return PlanEntry(
        name, name, "op", 0, EntryKind.FORWARD, (2,), "float32", nbytes, sid, source, first, last
    )


def test_check_rejects_overlapping_lifetimes_in_one_block():
    """Two entries alive at step 1 in block 0: check() must fail, naming both."""
    entries = (_entry("a", 0, 0, 1), _entry("b", 0, 1, 2))
    bad = MemoryPlan(
        ("s0", "s1", "s2"),
        entries,
        (StorageBlock(0, 8, ("a", "b")),),
        (),
        8,
        16,
        16,
        True,
        True,
        (),
    )
    with pytest.raises(AssertionError, match="a .* and b"):
        bad.check()


def test_check_rejects_inplace_while_source_still_read():
    entries = (_entry("a", 0, 0, 2), _entry("b", 0, 1, 2, source="a"))
    bad = MemoryPlan(
        ("s0", "s1", "s2"),
        entries,
        (StorageBlock(0, 8, ("a", "b")),),
        (("a", "b"),),
        8,
        16,
        16,
        True,
        True,
        (),
    )
    with pytest.raises(AssertionError, match="still read"):
        bad.check()


def test_summary_lists_entries_blocks_and_totals():
    plan = plan_memory(mlp(), {"data": (2, 5)}, grad_req="write")
    text = plan.summary()
    assert "fc1_output" in text and "storage blocks" in text and "planned:" in text
    assert max(plan.live_bytes()) == plan.peak_bytes


def test_reverse_dfs_order_runs_branches_the_other_way_round():
    r"""
        data
        /  \
      fc_a  fc_b          dfs: fc_a before fc_b; reverse_dfs: fc_b before fc_a
        \  /
         add -> softmax

    The argument order (list_arguments) does not depend on the step order.
    """
    data = var("data")
    a = apply(ToyFC(num_hidden=3), "fc_a", data)
    b = apply(ToyFC(num_hidden=3), "fc_b", data)
    sym = ToySymbol([apply(ToySoftmaxOutput(), "softmax", apply(ToyAdd(), "add", a, b))])
    dfs = build_graph(sym, {"data": (2, 4)}, grad_req="write")
    reverse = build_graph(sym, {"data": (2, 4)}, grad_req="write", order="reverse_dfs")
    assert [s.name for s in dfs.steps][:4] == ["fc_a", "fc_b", "add", "softmax"]
    assert [s.name for s in reverse.steps][:4] == ["fc_b", "fc_a", "add", "softmax"]
    assert dfs.arg_names == reverse.arg_names
    plan_graph(reverse).check()
    with pytest.raises(ParamError, match="order"):
        build_graph(sym, {"data": (2, 4)}, order="bfs")


def test_plan_as_dict_is_json_ready():
    import json

    plan = plan_memory(mlp(), {"data": (2, 5)}, grad_req="write")
    data = json.loads(json.dumps(plan.as_dict()))
    assert data["internal_bytes"] == plan.internal_bytes
    assert [e["name"] for e in data["entries"]] == [e.name for e in plan.entries]
    assert data["entries"][0]["kind"] == plan.entries[0].kind.value
    assert data["blocks"][0]["entries"] == list(plan.blocks[0].entries)
