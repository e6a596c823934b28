"""Vars the views can name: ``Engine.name_var``, executors naming their arrays, labels by writer.

Issue 39 item 9: the DAG, Inspect and traces said ``nd28874`` / ``storage7``.
A name given while recording reaches the trace as a ``VarName`` event (the
latest names the var); one given before reaches it at the var's first push;
a var with only a generated name is called after the op that wrote it.
"""

from __future__ import annotations

import re

import pytest

import mxnb as mx
from mxnb.base import ParamError
from mxnb.engine.trace_model import TraceModel
from mxnb.engine.tracing import OpPush, Trace, VarName, VarNew

CPU = mx.cpu()


@pytest.mark.timeout(30)
def test_a_name_given_while_recording_is_a_var_name_event_and_the_latest_wins(engine):
    with mx.engine.trace() as tr:
        var = engine.new_var()
        engine.push_sync(lambda rctx: None, CPU, mutate_vars=[var], name="fill")
        engine.name_var(var, "fc1_weight")
        engine.push_sync(lambda rctx: None, CPU, const_vars=[var], name="use")
        engine.wait_for_all()
    assert [(e.var_id, e.name) for e in tr.events_of(VarNew)] == [(var.id, f"var{var.id}")]
    assert [(e.var_id, e.name) for e in tr.events_of(VarName)] == [(var.id, "fc1_weight")]
    assert tr.var_names() == {var.id: "fc1_weight"}
    assert TraceModel(tr.events).var_name(var.id) == "fc1_weight"
    # the chrome file keeps the name, and names the reads by it
    document = tr.to_chrome_trace()
    use = next(e for e in document["traceEvents"] if e.get("name") == "use" and e["ph"] == "X")
    assert use["args"]["reads"] == ["fc1_weight"]
    assert Trace.from_chrome_trace(document).var_names() == {var.id: "fc1_weight"}


@pytest.mark.timeout(30)
def test_a_name_given_before_recording_reaches_the_trace_at_the_first_push(engine):
    var = engine.new_var()
    engine.name_var(var, "data")  # nobody traces: only the attribute changes
    assert var.name == "data"
    with mx.engine.trace() as tr:
        engine.push_sync(lambda rctx: None, CPU, mutate_vars=[var], name="load")
        engine.wait_for_all()
    assert [(e.var_id, e.name) for e in tr.events_of(VarName)] == [(var.id, "data")]


def test_name_var_refuses_an_empty_or_non_string_name():
    var = mx.engine.get().new_var()
    with pytest.raises(ParamError, match=r"name_var: name must be a non-empty str, got ''"):
        mx.engine.get().name_var(var, "")
    with pytest.raises(ValueError, match="got 3"):
        mx.engine.get().name_var(var, 3)  # type: ignore[arg-type]


def test_unnamed_vars_are_called_after_the_op_that_wrote_them():
    with mx.engine.trace() as tr:
        a = mx.nd.ones((2, 2))
        b = mx.nd.dot(a, a)
        parts = mx.nd.split(b, num_outputs=2, axis=0)
        mx.nd.waitall()
    model = TraceModel(tr.events)
    pushes = {e.name: e for e in tr.events_of(OpPush)}
    ones, dot, split = pushes["_ones"], pushes["dot"], pushes["SliceChannel"]
    assert model.vars[a._var.id].name == f"nd{a._chunk.handle.handle_id}"  # the raw name stays
    assert model.var_name(a._var.id) == f"_ones#{ones.op_id} out"
    assert model.var_name(b._var.id) == f"dot#{dot.op_id} out"
    assert [model.var_name(p._var.id) for p in parts] == [
        f"SliceChannel#{split.op_id} out0",
        f"SliceChannel#{split.op_id} out1",
    ]
    # a filter by the raw name still finds the ops on that var
    assert [op.name for op in model.select(var=model.vars[b._var.id].name)] == [
        "dot",
        "SliceChannel",
    ]
    assert model.var_name(10**9) == f"v{10**9}"  # never seen


def test_an_executor_names_its_arguments_gradients_outputs_and_blocks():
    data = mx.sym.Variable("data")
    fc1 = mx.sym.FullyConnected(data, num_hidden=8, name="fc1")
    act = mx.sym.Activation(fc1, act_type="relu", name="relu1")
    net = mx.sym.SoftmaxOutput(mx.sym.FullyConnected(act, num_hidden=3, name="fc2"), name="sm")
    with mx.engine.trace() as tr:
        ex = net.simple_bind(CPU, data=(4, 5))
        ex.forward(is_train=True)
        ex.backward()
        mx.nd.waitall()
    model = TraceModel(tr.events)
    used = {model.var_name(v) for op in model.ops.values() for v in op.const_vars + op.mutate_vars}
    assert {"data", "fc1_weight", "fc1_bias", "fc2_weight", "sm_label"} <= used
    assert {"fc1_weight.grad", "fc2_bias.grad"} <= used
    assert ex.arg_dict["fc1_weight"]._var.name == "fc1_weight"
    # planned blocks keep their block name and add the entries placed in them; no nd<N> left
    assert "storage0 (fc1_output +1)" in used, used
    assert all(re.fullmatch(r"storage\d+(@\d+)? \(\w+( \+\d+)?\)", name) for name in used if name.startswith("storage")), used
    assert not [name for name in used if re.fullmatch(r"nd\d+", name)], used


def test_gluon_parameters_name_their_arrays_and_gradients():
    net = mx.gluon.nn.Dense(3, in_units=4, prefix="dense0_")
    net.initialize()
    weight = net.weight
    assert weight.data()._var.name == weight.name == "dense0_weight"
    assert weight.grad()._var.name == "dense0_weight.grad"
