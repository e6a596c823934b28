"""The Executor: forward/backward through the engine agree with mx.nd and with numeric gradients.

Every plan an executor makes is checked (``exe.memory_plan.check()``).
"""

from __future__ import annotations

import numpy as np
import pytest

import mxnb as mx
from mxnb.base import OpError, ParamError, ShapeError
from mxnb.engine.tracing import DepKind, OpPush
from mxnb.executor import EntryKind
from mxnb.executor.bulk import step_names
from mxnb.operator.base import Operator, OperatorProperty
from mxnb.testing import assert_almost_equal, check_numeric_gradient

from .toy_ops import ToySymbol, apply, var

RNG = np.random.default_rng(7)


def random_location(sym, **shapes):
    """Random float64 values for every argument (the shapes inferred from ``shapes``)."""
    arg_shapes, _, _ = sym.infer_shape(**shapes)
    return {
        name: RNG.standard_normal(shape) * 0.5
        for name, shape in zip(sym.list_arguments(), arg_shapes)
    }


def bind_with(sym, location, grad_req="write", dtype="float32"):
    """simple_bind and copy ``location`` into the argument arrays."""
    shapes = {name: value.shape for name, value in location.items()}
    types = {name: np.dtype(dtype) for name in location}
    exe = sym.simple_bind(mx.cpu(), grad_req=grad_req, type_dict=types, **shapes)
    exe.memory_plan.check()
    for name, value in location.items():
        exe.arg_dict[name][:] = value.astype(dtype)
    return exe


def mlp_symbol():
    """data -> fc1(6) -> relu -> fc2(5) -> tanh -> fc3(3)."""
    data = mx.sym.Variable("data")
    body = mx.sym.relu(mx.sym.FullyConnected(data, num_hidden=6, name="fc1"), name="relu1")
    body = mx.sym.tanh(mx.sym.FullyConnected(body, num_hidden=5, name="fc2"), name="tanh2")
    return mx.sym.FullyConnected(body, num_hidden=3, name="fc3")


def test_mlp_forward_matches_imperative_ndarray():
    """The same layers run op by op through mx.nd give the executor's output."""
    net = mlp_symbol()
    loc = random_location(net, data=(4, 7))
    exe = bind_with(net, loc, grad_req="null")
    out = exe.forward()[0].asnumpy()
    nd = {name: mx.nd.array(value.astype("float32")) for name, value in loc.items()}
    x = mx.nd.relu(mx.nd.FullyConnected(nd["data"], nd["fc1_weight"], nd["fc1_bias"], num_hidden=6))
    x = mx.nd.tanh(mx.nd.FullyConnected(x, nd["fc2_weight"], nd["fc2_bias"], num_hidden=5))
    x = mx.nd.FullyConnected(x, nd["fc3_weight"], nd["fc3_bias"], num_hidden=3)
    assert_almost_equal(out, x.asnumpy(), rtol=1e-5, atol=1e-6)
    # inference plan: relu and tanh ran in place
    assert len(exe.memory_plan.inplace_pairs) == 2


def test_mlp_gradients_match_numeric():
    net = mlp_symbol()
    check_numeric_gradient(net, random_location(net, data=(3, 4)))


def test_residual_block_gradients_match_numeric():
    r"""
    data -> conv1 -> relu -> conv2 --+--> relu -> out
      \______________________________/        (identity shortcut: data's gradient is a sum)
    """
    data = mx.sym.Variable("data")
    body = mx.sym.Convolution(data, num_filter=2, kernel=(3, 3), pad=(1, 1), name="conv1")
    body = mx.sym.relu(body, name="relu1")
    body = mx.sym.Convolution(body, num_filter=2, kernel=(3, 3), pad=(1, 1), name="conv2")
    net = mx.sym.relu(body + data, name="out")
    loc = random_location(net, data=(2, 2, 4, 4))
    check_numeric_gradient(net, loc)
    exe = bind_with(net, loc)
    plan = exe.memory_plan
    assert plan.entry("data_grad").kind is EntryKind.ARG_GRAD
    # data's two contributions (conv1's backward, the add's backward) accumulate into data_grad
    writers = [
        step.name
        for step in exe._graph.steps
        if plan.entries.index(plan.entry("data_grad")) in step.outputs
    ]
    assert len(writers) == 2


def lstm_symbol(steps=3, hidden=3):
    """An LSTM cell unrolled ``steps`` times from FullyConnected and elementwise ops.

    Weights are shared by every step, so their gradients are sums over the steps.
    """
    data = [mx.sym.Variable(f"x{t}") for t in range(steps)]
    c = mx.sym.Variable("c0")
    h = mx.sym.Variable("h0")
    gates = {}
    for gate in ("i", "f", "o", "g"):
        gates[gate] = (
            mx.sym.Variable(f"{gate}_x_weight"),
            mx.sym.Variable(f"{gate}_h_weight"),
            mx.sym.Variable(f"{gate}_bias"),
        )
    for t in range(steps):
        pre = {}
        for gate, (wx, wh, bias) in gates.items():
            pre[gate] = mx.sym.FullyConnected(
                data[t], weight=wx, bias=bias, num_hidden=hidden, name=f"t{t}_{gate}_x"
            ) + mx.sym.FullyConnected(
                h, weight=wh, no_bias=True, num_hidden=hidden, name=f"t{t}_{gate}_h"
            )
        i, f, o = (mx.sym.sigmoid(pre[g]) for g in ("i", "f", "o"))
        g = mx.sym.tanh(pre["g"])
        c = f * c + i * g
        h = o * mx.sym.tanh(c)
    return h


def test_unrolled_lstm_gradients_match_numeric():
    net = lstm_symbol()
    shapes = {f"x{t}": (2, 4) for t in range(3)}
    shapes.update(c0=(2, 3), h0=(2, 3))
    loc = random_location(net, **shapes)
    check_numeric_gradient(net, loc)
    exe = bind_with(net, loc)
    # three steps share each weight: their contributions accumulate into the bound array
    target = exe.memory_plan.entries.index(exe.memory_plan.entry("i_x_weight_grad"))
    reqs = [
        step.req[step.outputs.index(target)].name
        for step in exe._graph.steps
        if target in step.outputs
    ]
    assert reqs == ["WRITE_TO", "ADD_TO", "ADD_TO"]
    assert exe.memory_plan.internal_bytes < exe.memory_plan.naive_internal_bytes


def test_backward_matches_eager_operator_backward():
    """One FullyConnected: the executor's gradients are the eager runner's."""
    from mxnb.operator import eager

    net = mx.sym.FullyConnected(mx.sym.Variable("data"), num_hidden=4, name="fc")
    loc = random_location(net, data=(3, 5))
    exe = bind_with(net, loc, dtype="float64")
    head = RNG.standard_normal((3, 4))
    exe.forward(is_train=True)
    exe.backward(mx.nd.array(head, dtype="float64"))
    inputs = [loc["data"], loc["fc_weight"], loc["fc_bias"]]
    _, grads = eager.run("FullyConnected", inputs, {"num_hidden": 4}, head_grads=[head])
    for name, grad in zip(["data", "fc_weight", "fc_bias"], grads):
        assert_almost_equal(exe.grad_dict[name].asnumpy(), grad, rtol=1e-10, atol=1e-12)


def test_grad_req_add_accumulates_and_null_skips():
    net = mlp_symbol()
    loc = random_location(net, data=(3, 4))
    write = bind_with(net, loc, grad_req="write")
    write.forward(is_train=True)
    write.backward()
    req = {name: "add" for name in net.list_arguments()}
    req["data"] = "null"
    add = bind_with(net, loc, grad_req=req)
    assert "data" not in add.grad_dict and add.grad_arrays[0] is None
    for _ in range(2):
        add.forward(is_train=True)
        add.backward()
    for name in add.grad_dict:
        assert_almost_equal(add.grad_dict[name].asnumpy(), 2 * write.grad_dict[name].asnumpy())


def test_bind_with_given_arrays_and_missing_grads():
    net = mlp_symbol()
    loc = random_location(net, data=(2, 4))
    args = {name: mx.nd.array(value.astype("float32")) for name, value in loc.items()}
    grads = {"fc1_weight": mx.nd.zeros(loc["fc1_weight"].shape)}
    exe = net.bind(mx.cpu(), args=args, args_grad=grads)
    exe.memory_plan.check()
    assert list(exe.grad_dict) == ["fc1_weight"]
    exe.forward(is_train=True)
    exe.backward()
    assert exe.grad_dict["fc1_weight"] is grads["fc1_weight"]
    assert np.abs(grads["fc1_weight"].asnumpy()).sum() > 0
    with pytest.raises(ParamError, match="missing 'data'"):
        net.bind(mx.cpu(), args={k: v for k, v in args.items() if k != "data"})


def test_api_dicts_copy_params_monitor_and_debug_str():
    net = mlp_symbol()
    loc = random_location(net, data=(2, 4))
    exe = bind_with(net, loc)
    assert [a.shape for a in exe.arg_arrays] == [loc[n].shape for n in net.list_arguments()]
    assert list(exe.output_dict) == ["fc3_output"]
    exe.copy_params_from({"fc1_bias": np.ones(6, "float32")})
    assert exe.arg_dict["fc1_bias"].asnumpy().tolist() == [1.0] * 6
    with pytest.raises(ParamError, match="'nope'"):
        exe.copy_params_from({"nope": np.ones(1)})
    exe.copy_params_from({"nope": np.ones(1)}, allow_extra_params=True)
    seen = []
    exe.set_monitor_callback(lambda name, array: seen.append((name, array.asnumpy().shape)))
    exe.forward(is_train=True)
    exe.backward()
    names = [name for name, _ in seen]
    assert names[:2] == ["fc1_output", "relu1_output"]
    assert "fc2_backward_data" in names
    seen.clear()
    exe.set_monitor_callback(lambda name, array: seen.append(name), monitor_all=True)
    exe.forward()
    assert seen[:3] == ["fc1:data", "fc1:fc1_weight", "fc1:fc1_bias"]
    assert "fc2:relu1_output" in seen
    text = exe.debug_str()
    assert "Total 0 MB allocated" in text and "Name=fc1_backward" in text
    with pytest.raises(ShapeError, match="'data'"):
        exe.forward(data=mx.nd.zeros((5, 4)))
    with pytest.raises(ParamError, match="unknown input"):
        exe.forward(bogus=np.zeros(1))


def test_backward_without_gradients_does_nothing_as_in_mxnet():
    net = mlp_symbol()
    exe = bind_with(net, random_location(net, data=(2, 4)), grad_req="null")
    before = [a.asnumpy().copy() for a in exe.arg_arrays]
    exe.forward()
    exe.backward()  # MXNet 1.9.1: nothing to compute, no error (Module.backward relies on it)
    assert all(g is None for g in exe.grad_arrays)
    assert all((a.asnumpy() == b).all() for a, b in zip(exe.arg_arrays, before))


@pytest.mark.timeout(60)
@pytest.mark.parametrize("engine", ["naive", "threaded", "threaded_per_device"])
def test_engines_give_the_same_results(engine):
    """Storage reuse is ordered by block vars: threaded engines give the naive engine's numbers."""
    previous = mx.engine.engine_type()
    net = lstm_symbol(steps=3, hidden=4)
    shapes = {f"x{t}": (3, 5) for t in range(3)}
    shapes.update(c0=(3, 4), h0=(3, 4))
    loc = random_location(net, **shapes)
    results = {}
    try:
        for kind in ("naive", engine):
            mx.engine.set_engine(kind)
            exe = bind_with(net, loc)
            for _ in range(3):
                exe.forward(is_train=True)
                exe.backward()
            results[kind] = [exe.outputs[0].asnumpy()] + [
                exe.grad_dict[name].asnumpy() for name in sorted(exe.grad_dict)
            ]
    finally:
        mx.engine.set_engine(previous)
    for first, second in zip(results["naive"], results[engine]):
        np.testing.assert_array_equal(first, second)


def test_storage_reuse_is_a_real_engine_dependency():
    r"""
    fc1 -> relu1 -> fc2 -> relu2 -> fc3        (inference)

    fc3 writes the block fc1/relu1 used; fc2 read relu1 from it, so fc3's op
    lists that block's var as a mutate var that fc2 had as a const var, and
    on the step engine fc3 waits on fc2 through it (write-after-read).
    """
    net = mlp_symbol()
    previous = mx.engine.engine_type()
    exe = bind_with(net, random_location(net, data=(2, 4)), grad_req="null")
    plan = exe.memory_plan
    shared = plan.entry("fc3_output").storage_id
    assert shared == plan.entry("relu1_output").storage_id
    try:
        mx.engine.set_engine("step")
        exe = bind_with(net, random_location(net, data=(2, 4)), grad_req="null")
        with mx.engine.bulk(0), mx.engine.trace() as recorder:  # one engine op per step
            exe.forward()
            mx.engine.get().run()
        pushes = {event.name: event for event in recorder.events_of(OpPush)}
    finally:
        mx.engine.set_engine(previous)
    fc2, fc3 = pushes["fc2"], pushes["fc3"]
    block_var = set(fc2.const_vars) & set(fc3.mutate_vars)
    assert len(block_var) == 1
    waits = {(dep.op_id, dep.kind) for dep in fc3.waits_on}
    assert (fc2.op_id, DepKind.WAR) in waits


class _ScribbleProp(OperatorProperty):
    """A buggy op: its forward writes into its input."""

    type_string = "Scribble"

    def create_operator(self, ctx):
        class Scribble(Operator):
            def forward(self, ctx, in_data, req, out_data, aux):
                in_data[0][...] = 0
                out_data[0][...] = 1

        return Scribble()


def test_debug_mode_catches_a_kernel_writing_its_input():
    sym = ToySymbol([apply(_ScribbleProp(), "scribble", var("x"))])
    with mx.engine.debug():
        exe = mx.executor.simple_bind(sym, mx.cpu(), grad_req="null", x=(2, 2))
        exe.forward()
        with pytest.raises(OpError, match="scribble"):
            exe.outputs[0].asnumpy()


def test_reshape_shares_parameters():
    net = mlp_symbol()
    exe = bind_with(net, random_location(net, data=(2, 4)))
    bigger = exe.reshape(data=(6, 4), allow_up_sizing=True)
    bigger.memory_plan.check()
    assert bigger.arg_dict["fc1_weight"] is exe.arg_dict["fc1_weight"]
    assert bigger.outputs[0].shape == (6, 3)
    with pytest.raises(ShapeError, match="allow_up_sizing"):
        exe.reshape(data=(6, 4))


@pytest.mark.timeout(60)
def test_executor_on_a_virtual_gpu_matches_cpu():
    """Bound to gpu(0) (host-backed virtual GPU), every op runs there and the numbers match cpu."""
    previous = mx.context.virtual_gpus()
    mx.context.set_virtual_gpus(1)
    try:
        net = mlp_symbol()
        loc = random_location(net, data=(3, 4))
        results = []
        for ctx in (mx.cpu(), mx.gpu(0)):
            shapes = {name: value.shape for name, value in loc.items()}
            exe = net.simple_bind(ctx, **shapes)
            for name, value in loc.items():
                exe.arg_dict[name][:] = value.astype("float32")
            with mx.engine.trace() as recorder:
                exe.forward(is_train=True)
                exe.backward()
                mx.nd.waitall()
            contexts = {
                event.ctx
                for event in recorder.events_of(OpPush)
                if "fc1" in step_names(event.name)  # its own op, or a bulk segment's
            }
            assert contexts == {str(ctx) if ctx.device_type == "cpu" else "gpu(0) [virtual]"}
            results.append(exe.grad_dict["fc1_weight"].asnumpy())
        np.testing.assert_array_equal(results[0], results[1])
    finally:
        mx.context.set_virtual_gpus(previous)


def test_bind_refuses_arrays_on_another_context():
    previous = mx.context.virtual_gpus()
    mx.context.set_virtual_gpus(1)
    try:
        net = mlp_symbol()
        loc = random_location(net, data=(2, 4))
        args = {name: mx.nd.array(value.astype("float32")) for name, value in loc.items()}
        args["fc2_weight"] = args["fc2_weight"].as_in_context(mx.gpu(0))
        with pytest.raises(mx.base.ContextError, match="'fc2_weight'"):
            net.bind(mx.cpu(), args=args)
    finally:
        mx.context.set_virtual_gpus(previous)


@pytest.mark.timeout(60)
def test_executor_keeps_working_after_the_engine_is_switched():
    """Bound under one engine, run under another: pushes go to the engine current at push time."""
    previous = mx.engine.engine_type()
    net = mlp_symbol()
    loc = random_location(net, data=(2, 4))
    try:
        mx.engine.set_engine("naive")
        exe = bind_with(net, loc)
        exe.forward(is_train=True)
        first = exe.outputs[0].asnumpy().copy()
        mx.engine.set_engine("threaded")
        exe.forward(is_train=True)
        exe.backward()
        np.testing.assert_array_equal(exe.outputs[0].asnumpy(), first)
        assert np.abs(exe.grad_dict["fc1_weight"].asnumpy()).sum() > 0
    finally:
        mx.engine.set_engine(previous)
