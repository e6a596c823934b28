"""Long graphs take the large-graph planning path and still plan and run correctly.

Specification: above ``MID_GRAPH_STEPS`` steps the planner keeps to MXNet's
order and drops the largest-first offline placement (quadratic in a long
chain); above ``LARGE_GRAPH_STEPS`` it tries MXNet's walk and the in-order
offline placement only (both O(n log n)); the plan is still valid (no two live entries share a block)
and the executor computes the same values and gradients as numpy.  The
offline best-fit looks at no more than ``SCAN_LIMIT`` blocks per interval.
"""

from __future__ import annotations

import numpy as np
import pytest

import mxnb as mx
from mxnb.executor import placement, tournament


def _chain(length: int):
    x = mx.sym.Variable("x")
    for index in range(length):
        x = mx.sym.Activation(x, act_type="relu", name=f"r{index}") if index % 2 else x * 1.001
    return x


@pytest.mark.parametrize("bound", ["MID_GRAPH_STEPS", "LARGE_GRAPH_STEPS"])
def test_a_chain_above_a_graph_size_bound_plans_validly_and_runs(bound):
    length = getattr(tournament, bound) // 2 + 200  # forward + backward steps exceed the bound
    net = _chain(length)
    plan = mx.executor.plan_memory(net, {"x": (2, 3)}, grad_req="write")
    assert len(plan.steps) > getattr(tournament, bound)
    plan.check()
    assert plan.internal_bytes < plan.naive_internal_bytes
    exe = net.simple_bind(mx.cpu(), x=(2, 3))
    values = np.array([[0.5, -1.0, 2.0], [1.0, 0.0, -3.0]], dtype=np.float32)
    exe.arg_dict["x"][:] = values
    out = exe.forward(is_train=True)[0].asnumpy()
    exe.backward(mx.nd.ones((2, 3)))
    factor = np.float32(1.001) ** ((length + 1) // 2)
    expected = np.maximum(values, 0) * factor
    np.testing.assert_allclose(out, expected, rtol=1e-3)
    np.testing.assert_allclose(exe.grad_dict["x"].asnumpy(), (values > 0) * factor, rtol=1e-3)


def test_offline_best_fit_with_a_scan_limit_never_shares_overlapping_blocks(monkeypatch):
    """Many long-lived same-sized intervals and a small scan limit: still a valid placement."""
    monkeypatch.setattr(placement, "SCAN_LIMIT", 8)
    count = 300
    # interval i lives over [i, count + i]: all overlap, so each needs a new block
    items = [(64, i, count + i, [i]) for i in range(count)]
    storage_of, block_bytes = placement.place_intervals(items)
    assert len(block_bytes) == count  # still correct: nothing overlapping shares a block
    assert len(set(storage_of.values())) == count


def test_every_zoo_network_is_planned_with_every_candidate():
    """The size bounds must not cost the zoo anything: its largest training graph is below them."""
    from mxnb.executor import zoo
    from mxnb.executor.graph import build_graph

    graph = build_graph(zoo.build("lstm"), zoo.input_shapes("lstm", 1), grad_req="write")
    assert len(graph.steps) <= tournament.MID_GRAPH_STEPS < tournament.LARGE_GRAPH_STEPS


def test_binding_moves_its_objects_to_the_oldest_generation_and_leaves_nothing_frozen():
    import gc

    net = _chain(300)
    gc.collect()
    exe = net.simple_bind(mx.cpu(), x=(2, 3))
    assert gc.isenabled()
    assert gc.get_freeze_count() == 0  # freeze() was undone by unfreeze()
    young = len(gc.get_objects(generation=0)) + len(gc.get_objects(generation=1))
    assert young < 5_000  # the bind's own objects (tens of thousands) skipped the young walks
    exe.forward(is_train=True)
    exe.backward(mx.nd.ones((2, 3)))
    mx.nd.waitall()


def test_binding_does_not_release_objects_the_program_froze():
    import gc

    keep = [object() for _ in range(10)], {"frozen": True}
    gc.collect()
    gc.freeze()
    try:
        frozen = gc.get_freeze_count()
        _chain(50).simple_bind(mx.cpu(), x=(2, 3))
        # still frozen (a few frozen objects may die meanwhile; unfreeze() would make it 0)
        assert gc.get_freeze_count() > frozen - 100
    finally:
        gc.unfreeze()
    del keep


def test_a_pass_makes_all_its_engine_functions_at_once_into_the_oldest_generation():
    """The first forward makes its steps' functions before pushing, as bind makes its objects.

    Made one per push, a long graph's functions went through the young
    generations and made the collector walk the whole graph again mid-pass.
    """
    import gc

    net = _chain(200)
    exe = net.simple_bind(mx.cpu(), x=(2, 3))
    gc.collect()
    forward_steps = exe._graph.num_forward_steps
    exe.forward(is_train=True)
    made = [prepared.runners for prepared in exe._prepared[:forward_steps]]
    assert all(set(runners) == {(True, False)} for runners in made)
    assert not any(prepared.runners for prepared in exe._prepared[forward_steps:])  # not yet
    oldest = {id(obj) for obj in gc.get_objects(generation=2)}
    assert all(id(runners[(True, False)]) in oldest for runners in made)
    assert gc.isenabled() and gc.get_freeze_count() == 0
    exe.backward(mx.nd.ones((2, 3)))
    assert all((True, False) in prepared.runners for prepared in exe._prepared[forward_steps:])
    first = exe.outputs[0].asnumpy().copy()
    exe.forward(is_train=False)  # another mode: its own functions, the same values
    assert all(len(runners) == 2 for runners in made)
    np.testing.assert_array_equal(exe.outputs[0].asnumpy(), first)
