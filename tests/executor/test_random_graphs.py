"""Random graphs: a shared-memory plan computes exactly what the plan without sharing computes.

Hypothesis draws DAGs of elementwise ops (each node reads one or two earlier
entries, so values fan out and join), binds them twice — once with the
planner's plan, once with every entry in its own block — and runs forward and
backward on the threaded engine.  If the planner ever let a write land on
storage someone still had to read, or the engine failed to order a reuse,
the numbers would differ.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import mxnb as mx
from mxnb.executor.executor import Executor
from mxnb.executor.graph import ORDERS, build_graph
from mxnb.executor.tournament import plan_graph

UNARY = ("relu", "tanh", "sigmoid", "negative")
BINARY = ("_Plus", "_Mul", "_Minus")


@st.composite
def graphs(draw):
    """A list of ops: ('unary', name, i) or ('binary', name, i, j) over earlier values."""
    count = draw(st.integers(min_value=2, max_value=12))
    ops = []
    for index in range(count):
        available = index + 2  # two inputs x, y come first
        if draw(st.booleans()):
            ops.append(("unary", draw(st.sampled_from(UNARY)), draw(st.integers(0, available - 1))))
        else:
            ops.append(
                (
                    "binary",
                    draw(st.sampled_from(BINARY)),
                    draw(st.integers(0, available - 1)),
                    draw(st.integers(0, available - 1)),
                )
            )
    heads = draw(st.lists(st.integers(0, count - 1), min_size=1, max_size=3, unique=True))
    return ops, heads


def build(ops, heads):
    values = [mx.sym.Variable("x"), mx.sym.Variable("y")]
    for position, op in enumerate(ops):
        if op[0] == "unary":
            values.append(getattr(mx.sym, op[1])(values[op[2]], name=f"n{position}"))
        else:
            function = getattr(mx.sym, op[1])
            values.append(function(values[op[2]], values[op[3]], name=f"n{position}"))
    outputs = [values[2 + head] for head in heads]
    return outputs[0] if len(outputs) == 1 else mx.sym.Group(outputs)


def run(sym, inputs, head_grads, shared: bool, order: str = "dfs"):
    shapes = {name: value.shape for name, value in inputs.items()}
    graph = build_graph(sym, shapes, grad_req="write", order=order)
    plan = plan_graph(graph) if shared else plan_graph(graph, inplace=False, coshare=False)
    plan.check()
    ctx = mx.cpu()
    args = {name: mx.nd.array(value) for name, value in inputs.items()}
    grads = {name: mx.nd.zeros(value.shape) for name, value in inputs.items()}
    exe = Executor(sym, ctx, graph, plan, args, grads, {})
    exe.forward(is_train=True)
    needed = [entry for entry in graph.output_entries if entry in exe._head_grads]
    exe.backward([mx.nd.array(head_grads[graph.output_entries.index(e)]) for e in needed])
    outputs = [out.asnumpy() for out in exe.outputs]
    return outputs, {name: grad.asnumpy() for name, grad in grads.items()}, plan


@pytest.fixture(scope="module")
def threaded_engine():
    previous = mx.engine.engine_type()
    mx.engine.set_engine("threaded")
    yield
    mx.engine.set_engine(previous)


@pytest.mark.timeout(120)
@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(graph=graphs(), seed=st.integers(0, 2**16), order=st.sampled_from(ORDERS))
def test_shared_plan_computes_what_the_unshared_plan_computes(threaded_engine, graph, seed, order):
    """Either topological order, with sharing, equals the DFS order without sharing."""
    ops, heads = graph
    sym = build(ops, heads)
    rng = np.random.default_rng(seed)
    inputs = {name: rng.standard_normal((3, 4)).astype("float32") for name in sym.list_arguments()}
    head_grads = [rng.standard_normal((3, 4)).astype("float32") for _ in heads]
    shared_out, shared_grads, plan = run(sym, inputs, head_grads, shared=True, order=order)
    alone_out, alone_grads, naive = run(sym, inputs, head_grads, shared=False)
    assert plan.internal_bytes <= naive.internal_bytes
    # the same order adds the same numbers in the same order: bit-identical; the other order
    # sums gradient contributions in another order: equal up to rounding
    tolerance = 0 if order == "dfs" else 1e-5
    for first, second in zip(shared_out, alone_out):
        np.testing.assert_allclose(first, second, rtol=tolerance, atol=tolerance)
    for name in inputs:
        np.testing.assert_allclose(
            shared_grads[name], alone_grads[name], rtol=tolerance, atol=tolerance
        )
