"""Autograd: recording ``mx.nd`` ops and pushing their backward through the engine.

Specification:
* the flags are thread-local and restored by the context managers;
* gradients match MXNet 1.9.1's (the conformance vectors) for every differentiable case;
* gradients of composed functions (an MLP, conv + BatchNorm + relu, a 3-step
  LSTM cell of FullyConnected + elementwise ops) match central differences;
* an entry used twice accumulates; ``grad_req`` 'write' / 'add' / 'null' is honoured;
* ONE engine op is pushed per recorded node; the tape is freed unless retain_graph.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path

import numpy as np
import pytest

import mxnb as mx
from mxnb import autograd
from mxnb.base import MXNBError, NotSupportedError
from mxnb.engine.tracing import OpPush
from mxnb.operator import registry
from mxnb.testing import assert_almost_equal, numeric_grad

CONFORMANCE = Path("/work/shared/conformance")
if not (CONFORMANCE / "cases.json").exists():
    CONFORMANCE = Path(__file__).resolve().parents[1] / "shared" / "conformance"
CASES = json.loads((CONFORMANCE / "cases.json").read_text())["cases"]
GRAD_CASES = [case for case in CASES if case["gradients"]]


def nd64(values) -> mx.nd.NDArray:
    return mx.nd.array(np.asarray(values, dtype=np.float64), dtype="float64")


def needs_ops(*names: str) -> None:
    missing = [name for name in names if registry.find(name) is None]
    if missing:
        pytest.skip(f"operators {missing} are not registered yet (operator library)")


# -- flags -------------------------------------------------------------------------------------
def test_record_pause_and_modes_nest_and_restore():
    assert not autograd.is_recording() and not autograd.is_training()
    with autograd.record():
        assert autograd.is_recording() and autograd.is_training()
        with autograd.pause():
            assert not autograd.is_recording() and not autograd.is_training()
            with autograd.train_mode():
                assert autograd.is_training() and not autograd.is_recording()
        with autograd.predict_mode():
            assert autograd.is_recording() and not autograd.is_training()
        assert autograd.is_recording() and autograd.is_training()
    with autograd.record(train_mode=False):
        assert autograd.is_recording() and not autograd.is_training()
    assert not autograd.is_recording() and not autograd.is_training()
    assert autograd.set_recording(True) is False
    assert autograd.set_training(True) is False
    assert autograd.set_recording(False) is True
    assert autograd.set_training(False) is True


@pytest.mark.timeout(30)
def test_flags_are_thread_local():
    seen = []
    with autograd.record():
        thread = threading.Thread(target=lambda: seen.append(autograd.is_recording()))
        thread.start()
        thread.join()
    assert seen == [False]


# -- basic gradients -----------------------------------------------------------------------------
def test_entry_used_twice_accumulates():
    r"""
    x ----+---> mul ---> add ---> y      y = x*x + x   dy/dx = 2x + 1
          \______/______/
    """
    x = nd64([1.0, -2.0, 3.0])
    x.attach_grad()
    with autograd.record():
        y = x * x + x
    y.backward()
    assert_almost_equal(x.grad, np.array([3.0, -3.0, 7.0]))


def test_diamond_graph():
    r"""
        x
       / \
     exp  sin
       \ /
       mul          y = exp(x) * sin(x)
    """
    values = np.array([0.3, -1.2, 2.0])
    x = nd64(values)
    x.attach_grad()
    with autograd.record():
        y = mx.nd.exp(x) * mx.nd.sin(x)
    y.backward(nd64([1.0, 2.0, 3.0]))
    expected = np.exp(values) * (np.sin(values) + np.cos(values)) * np.array([1.0, 2.0, 3.0])
    assert_almost_equal(x.grad, expected)


def test_grad_req_add_accumulates_and_write_overwrites():
    x = nd64([1.0, 2.0])
    w = nd64([3.0, 4.0])
    x.attach_grad(grad_req="add")
    w.attach_grad(grad_req="write")
    for _ in range(2):
        with autograd.record():
            y = x * w
        y.backward()
    assert_almost_equal(x.grad, 2 * np.array([3.0, 4.0]))  # added twice
    assert_almost_equal(w.grad, np.array([1.0, 2.0]))  # written twice


def test_grad_req_null_leaves_the_buffer_alone():
    x = nd64([1.0, 2.0])
    z = nd64([5.0, 6.0])
    x.attach_grad()
    z.attach_grad(grad_req="null")
    with autograd.record():
        y = x * z
    y.backward()
    assert_almost_equal(x.grad, np.array([5.0, 6.0]))
    assert_almost_equal(z.grad, np.zeros(2))


def test_mark_variables_with_own_buffers():
    x = nd64([1.0, 2.0])
    gradient = nd64([10.0, 10.0])
    autograd.mark_variables([x], [gradient], grad_reqs="add")
    with autograd.record():
        y = x * x
    autograd.backward([y])
    assert_almost_equal(gradient, np.array([12.0, 14.0]))
    assert x.grad is gradient


def test_multiple_heads_with_head_grads():
    x = nd64([1.0, 2.0])
    x.attach_grad()
    with autograd.record():
        a = x * 2
        b = x * x
    autograd.backward([a, b], [nd64([1.0, 1.0]), nd64([0.5, 0.5])])
    assert_almost_equal(x.grad, np.array([2.0 + 1.0, 2.0 + 2.0]))


def test_autograd_grad_returns_new_arrays_and_keeps_dot_grad():
    x = nd64([1.0, 2.0, 3.0])
    x.attach_grad()
    with autograd.record():
        y = x * x * x
    (dx,) = autograd.grad(y, [x], retain_graph=True)
    assert_almost_equal(dx, 3 * np.array([1.0, 4.0, 9.0]))
    assert_almost_equal(x.grad, np.zeros(3))
    (dx_graph,) = autograd.grad(y, [x], create_graph=True)  # higher order: tests/compat
    assert_almost_equal(dx_graph, 3 * np.array([1.0, 4.0, 9.0]))


def test_pause_stops_recording():
    x = nd64([1.0, 2.0])
    x.attach_grad()
    with autograd.record():
        y = x * 3
        with autograd.pause():
            z = y * 100  # not recorded: z is a constant to autograd
        w = y + z
    w.backward()
    assert_almost_equal(x.grad, np.array([3.0, 3.0]))


# -- the tape --------------------------------------------------------------------------------------
def test_backward_twice_needs_retain_graph():
    x = nd64([1.0, 2.0])
    x.attach_grad(grad_req="add")
    with autograd.record():
        y = mx.nd.exp(x)
    y.backward(retain_graph=True)
    y.backward()
    assert_almost_equal(x.grad, 2 * np.exp([1.0, 2.0]))
    with pytest.raises(MXNBError, match="retain_graph=True"):
        y.backward()


def test_unrecorded_head_is_a_clear_error():
    x = nd64([1.0])
    with pytest.raises(MXNBError, match="record"):
        x.backward()


def test_inplace_write_into_recorded_array_is_refused():
    x = nd64([1.0, 2.0])
    x.attach_grad()
    with autograd.record():
        y = x * 2
        with pytest.raises(MXNBError, match="in-place"):
            y += 1


@pytest.mark.timeout(60)
def test_one_engine_op_per_recorded_node():
    r"""
    x -> mul(x, x) -> exp -> sum      three nodes: three backward ops, each named after its op
    """
    x = nd64(np.arange(4.0))
    x.attach_grad()
    with autograd.record():
        y = mx.nd.sum(mx.nd.exp(x * x))
    with mx.engine.trace() as trace:
        y.backward()
        mx.nd.waitall()
    names = [event.name for event in trace.events_of(OpPush)]
    backward_ops = [name for name in names if name.endswith("_backward")]
    assert len(backward_ops) == 3, names
    assert (
        backward_ops[0].startswith("sum")
        and backward_ops[-1].startswith("elemwise_mul")
        or (backward_ops[-1].startswith("_mul"))
    ), backward_ops
    assert_almost_equal(x.grad, 2 * np.arange(4.0) * np.exp(np.arange(4.0) ** 2))


# -- conformance vectors -------------------------------------------------------------------------------
@pytest.mark.parametrize("case", GRAD_CASES, ids=[case["name"] for case in GRAD_CASES])
def test_conformance_gradients_through_autograd(case):
    """Run the case exactly as its generator ran MXNet: mx.nd + autograd.record + backward."""
    needs_ops(case["op"])
    with np.load(CONFORMANCE / "cases" / f"{case['name']}.npz") as archive:
        arrays = {key: archive[key] for key in archive.files}
    inputs, aux = [], []
    for spec in case["inputs"]:
        if spec["is_aux"]:
            aux.append(mx.nd.array(arrays[f"aux_in_{spec['name']}"]))
            continue
        array = mx.nd.array(arrays[f"input_{spec['name']}"])
        if spec["requires_grad"]:
            array.attach_grad()
        inputs.append((spec["name"], array))
    with autograd.record(train_mode=case["train_mode"]):
        outputs = mx.nd.invoke(case["op"], [a for _, a in inputs], dict(case["kwargs"]), aux=aux)
    visible = outputs[: len(case["outputs"])]
    heads = [mx.nd.array(arrays[f"head_grad_{i}"]) for i in range(len(visible))]
    autograd.backward(visible, heads)
    loose = 1e-4 if case["op"] in ("Convolution", "Deconvolution") else 1e-5
    for index, output in enumerate(visible):
        assert_almost_equal(
            output, arrays[f"output_{index}"], 1e-4, 1e-5, names=(f"output_{index}", "mxnet")
        )
    for name, array in inputs:
        if f"grad_{name}" in arrays:
            assert array.grad is not None, name
            assert_almost_equal(
                array.grad, arrays[f"grad_{name}"], 1e-4, loose, names=(f"grad_{name}", "mxnet")
            )
    for spec, array in zip([s for s in case["inputs"] if s["is_aux"]], aux):
        key = f"aux_out_{spec['name']}"
        if key in arrays:
            assert_almost_equal(array, arrays[key], 1e-4, 1e-5, names=(key, "mxnet"))


# -- composed functions against central differences ---------------------------------------------------
def check_against_numeric(
    function,
    values: dict,
    eps: float = 1e-5,
    rtol: float = 1e-4,
    atol: float = 1e-6,
    train: bool = True,
    seed: int = 0,
) -> dict:
    """Compare autograd's gradient of sum(function(**x) * proj) with central differences (float64)."""
    values = {key: np.ascontiguousarray(value, dtype=np.float64) for key, value in values.items()}
    arrays = {key: nd64(value) for key, value in values.items()}
    for array in arrays.values():
        array.attach_grad()
    with autograd.record(train_mode=train):
        out = function(**arrays)
    proj = np.random.default_rng(seed).standard_normal(out.shape)
    out.backward(nd64(proj))
    analytic = {key: array.grad.asnumpy() for key, array in arrays.items()}

    def objective() -> float:
        with autograd.train_mode() if train else autograd.predict_mode():
            result = function(**{key: nd64(value) for key, value in values.items()})
        return float(np.sum(result.asnumpy() * proj))

    for key, value in values.items():
        numeric = numeric_grad(objective, value, eps)
        assert_almost_equal(
            numeric,
            analytic[key],
            rtol=rtol,
            atol=atol,
            names=(f"numeric_{key}", f"autograd_{key}"),
        )
    return analytic


@pytest.mark.timeout(120)
def test_mlp_matches_numeric_gradient():
    r"""
    data -> FC(8) -> relu -> FC(3) -> tanh -> out
    """
    rng = np.random.default_rng(3)

    def mlp(data, w1, b1, w2, b2):
        hidden = mx.nd.relu(mx.nd.FullyConnected(data, w1, b1, num_hidden=8))
        return mx.nd.tanh(mx.nd.FullyConnected(hidden, w2, b2, num_hidden=3))

    check_against_numeric(
        mlp,
        {
            "data": rng.standard_normal((4, 5)),
            "w1": rng.standard_normal((8, 5)) * 0.5,
            "b1": rng.standard_normal(8) * 0.1,
            "w2": rng.standard_normal((3, 8)) * 0.5,
            "b2": rng.standard_normal(3) * 0.1,
        },
    )


@pytest.mark.timeout(120)
def test_conv_batchnorm_relu_chain_matches_numeric_gradient():
    r"""
    data -> Convolution(3x3, pad 1) -> BatchNorm(train, fix_gamma=False) -> relu -> out
    """
    needs_ops("Convolution", "BatchNorm", "relu")
    rng = np.random.default_rng(4)
    moving_mean = nd64(np.zeros(3))
    moving_var = nd64(np.ones(3))

    def chain(data, weight, bias, gamma, beta):
        conv = mx.nd.Convolution(data, weight, bias, kernel=(3, 3), pad=(1, 1), num_filter=3)
        bn = mx.nd.BatchNorm(conv, gamma, beta, moving_mean, moving_var, fix_gamma=False)
        return mx.nd.relu(bn)

    check_against_numeric(
        chain,
        {
            "data": rng.standard_normal((2, 2, 4, 4)),
            "weight": rng.standard_normal((3, 2, 3, 3)) * 0.5,
            "bias": rng.standard_normal(3) * 0.1,
            "gamma": 1 + rng.standard_normal(3) * 0.1,
            "beta": rng.standard_normal(3) * 0.1,
        },
        rtol=1e-3,
        atol=1e-5,
    )


def lstm_unrolled(x0, x1, x2, h0, c0, wi, wf, wo, wg, ui, uf, uo, ug, bi, bf, bo, bg):
    """3 steps of an LSTM cell: every gate is FC(x) + FC(h); weights are shared by the steps."""
    h, c = h0, c0
    zero = mx.nd.zeros(bi.shape, ctx=bi.context, dtype=bi.dtype)

    def gate(x, h, w, u, b):
        return mx.nd.FullyConnected(x, w, b, num_hidden=4) + mx.nd.FullyConnected(
            h, u, zero, num_hidden=4
        )

    for x in (x0, x1, x2):
        i = mx.nd.sigmoid(gate(x, h, wi, ui, bi))
        f = mx.nd.sigmoid(gate(x, h, wf, uf, bf))
        o = mx.nd.sigmoid(gate(x, h, wo, uo, bo))
        g = mx.nd.tanh(gate(x, h, wg, ug, bg))
        c = f * c + i * g
        h = o * mx.nd.tanh(c)
    return h


@pytest.mark.timeout(120)
def test_three_step_lstm_cell_matches_numeric_gradient():
    r"""
    x0 -> cell -> x1 -> cell -> x2 -> cell -> h3     (weights shared: gradients accumulate)
    """
    rng = np.random.default_rng(5)
    values = {f"x{t}": rng.standard_normal((2, 3)) for t in range(3)}
    values["h0"] = rng.standard_normal((2, 4)) * 0.5
    values["c0"] = rng.standard_normal((2, 4)) * 0.5
    for gate in "ifog":
        values[f"w{gate}"] = rng.standard_normal((4, 3)) * 0.5
        values[f"u{gate}"] = rng.standard_normal((4, 4)) * 0.5
        values[f"b{gate}"] = rng.standard_normal(4) * 0.1
    check_against_numeric(lstm_unrolled, values)


@pytest.mark.timeout(120)
def test_threaded_engine_gives_the_naive_engines_gradients():
    rng = np.random.default_rng(6)
    values = {
        "data": rng.standard_normal((4, 5)),
        "w1": rng.standard_normal((8, 5)),
        "b1": rng.standard_normal(8),
    }

    def run() -> dict:
        arrays = {key: nd64(value) for key, value in values.items()}
        for array in arrays.values():
            array.attach_grad()
        with autograd.record():
            h = mx.nd.FullyConnected(arrays["data"], arrays["w1"], arrays["b1"], num_hidden=8)
            y = mx.nd.sigmoid(h) * h + h
        y.backward()
        return {key: array.grad.asnumpy() for key, array in arrays.items()}

    previous = mx.engine.engine_type()
    try:
        mx.engine.set_engine("naive")
        naive = run()
        mx.engine.set_engine("threaded_per_device")
        threaded = run()
    finally:
        mx.engine.set_engine(previous)
    for key in values:
        np.testing.assert_array_equal(naive[key], threaded[key])


def test_failure_in_backward_surfaces_at_the_gradient_with_the_op_name():
    from mxnb import operator as op

    def fwd(src, env, ret, req, run_ctx):
        op.assign(ret, req, src)

    def bad_grad(out_grad, env, in_grad, req, run_ctx):
        raise RuntimeError("gradient kernel failed")

    op.simple_op("t_bad_grad_ag").set_function(fwd).set_gradient(bad_grad)
    x = nd64([1.0])
    x.attach_grad()
    with autograd.record():
        y = mx.nd.t_bad_grad_ag(x)
    y.backward()
    with pytest.raises(MXNBError, match="t_bad_grad_ag_backward"):
        x.grad.asnumpy()


# -- executor vs autograd on the same nets ------------------------------------------------------------
def mlp_net(F, data, w1, b1, w2, b2):
    hidden = F.relu(F.FullyConnected(data, w1, b1, num_hidden=8))
    return F.tanh(F.FullyConnected(hidden, w2, b2, num_hidden=3))


def conv_bn_net(F, data, weight, bias, gamma, beta, aux=()):
    conv = F.Convolution(data, weight, bias, kernel=(3, 3), pad=(1, 1), num_filter=3)
    return F.relu(F.BatchNorm(conv, gamma, beta, *aux, fix_gamma=False))


def lstm_net(F, x0, x1, x2, h0, c0, wi, wf, wo, wg, ui, uf, uo, ug, bi, bf, bo, bg):
    h, c = h0, c0
    weights = {"i": (wi, ui, bi), "f": (wf, uf, bf), "o": (wo, uo, bo), "g": (wg, ug, bg)}

    def gate(x, h, name):
        w, u, b = weights[name]
        return F.FullyConnected(x, w, b, num_hidden=4) + F.FullyConnected(
            h, u, num_hidden=4, no_bias=True
        )

    for x in (x0, x1, x2):
        i, f, o = (F.sigmoid(gate(x, h, name)) for name in "ifo")
        g = F.tanh(gate(x, h, "g"))
        c = f * c + i * g
        h = o * F.tanh(c)
    return h


def lstm_values(rng) -> dict:
    values = {f"x{t}": rng.standard_normal((2, 3)) for t in range(3)}
    values["h0"] = rng.standard_normal((2, 4)) * 0.5
    values["c0"] = rng.standard_normal((2, 4)) * 0.5
    for gate in "ifog":
        values[f"w{gate}"] = rng.standard_normal((4, 3)) * 0.5
        values[f"u{gate}"] = rng.standard_normal((4, 4)) * 0.5
        values[f"b{gate}"] = rng.standard_normal(4) * 0.1
    return values


def compare_executor_with_autograd(net, values: dict, nd_extra: dict | None = None) -> None:
    """Bind the symbolic net and run it; record the same net through mx.nd; compare everything."""
    variables = {name: mx.sym.Variable(name) for name in values}
    sym = net(mx.sym, **variables)
    shapes = {name: value.shape for name, value in values.items()}
    exe = sym.simple_bind(mx.cpu(), type_dict={name: np.float64 for name in values}, **shapes)
    for name, value in values.items():
        exe.arg_dict[name][:] = value
    for name, array in exe.aux_dict.items():  # BatchNorm moving stats: mean 0, var 1
        array[:] = 1.0 if name.endswith("var") else 0.0
    exe.forward(is_train=True)
    proj = np.random.default_rng(9).standard_normal(exe.outputs[0].shape)
    exe.backward([nd64(proj)])

    arrays = {name: nd64(value) for name, value in values.items()}
    for array in arrays.values():
        array.attach_grad()
    with autograd.record():
        out = net(mx.nd, **arrays, **(nd_extra or {}))
    out.backward(nd64(proj))
    assert_almost_equal(exe.outputs[0], out, rtol=1e-10, atol=1e-12, names=("executor", "autograd"))
    for name, array in arrays.items():
        assert_almost_equal(
            exe.grad_dict[name],
            array.grad,
            rtol=1e-9,
            atol=1e-12,
            names=(f"executor_{name}", f"autograd_{name}"),
        )


@pytest.mark.timeout(120)
def test_executor_and_autograd_agree_on_mlp():
    rng = np.random.default_rng(11)
    values = {
        "data": rng.standard_normal((4, 5)),
        "w1": rng.standard_normal((8, 5)),
        "b1": rng.standard_normal(8),
        "w2": rng.standard_normal((3, 8)),
        "b2": rng.standard_normal(3),
    }
    compare_executor_with_autograd(mlp_net, values)


@pytest.mark.timeout(120)
def test_executor_and_autograd_agree_on_conv_batchnorm_relu():
    needs_ops("Convolution", "BatchNorm")
    rng = np.random.default_rng(12)
    values = {
        "data": rng.standard_normal((2, 2, 5, 5)),
        "weight": rng.standard_normal((3, 2, 3, 3)),
        "bias": rng.standard_normal(3),
        "gamma": 1 + rng.standard_normal(3) * 0.1,
        "beta": rng.standard_normal(3) * 0.1,
    }
    compare_executor_with_autograd(
        conv_bn_net, values, {"aux": [nd64(np.zeros(3)), nd64(np.ones(3))]}
    )


@pytest.mark.timeout(120)
def test_executor_and_autograd_agree_on_three_step_lstm():
    compare_executor_with_autograd(lstm_net, lstm_values(np.random.default_rng(13)))


# -- autograd.Function ------------------------------------------------------------------------------
class ScaledProduct(autograd.Function):
    """(a, b) -> (a * b, 2 * a): two inputs, two outputs, NDArray code in both directions."""

    def forward(self, a, b):
        self.save_for_backward(a, b)
        return a * b, a * 2

    def backward(self, d_product, d_double):
        a, b = self.saved_tensors
        return d_product * b + d_double * 2, d_product * a


@pytest.mark.timeout(60)
def test_function_gradients_flow_through_python_backward():
    a_np, b_np = np.array([1.0, -2.0, 0.5]), np.array([3.0, 0.25, -1.0])
    a, b = nd64(a_np), nd64(b_np)
    a.attach_grad()
    b.attach_grad(grad_req="add")
    with autograd.record():
        product, double = ScaledProduct()(a, b)
        total = mx.nd.sum(mx.nd.exp(product) + double * double)
    total.backward()
    exp_ab = np.exp(a_np * b_np)
    assert_almost_equal(a.grad, exp_ab * b_np + 2 * (2 * a_np) * 2)
    assert_almost_equal(b.grad, exp_ab * a_np)


def test_function_instance_is_single_use_and_unrecorded_calls_are_plain():
    function = ScaledProduct()
    product, _ = function(nd64([2.0]), nd64([3.0]))  # not recording: just runs forward
    assert product.asnumpy().tolist() == [6.0]
    with pytest.raises(MXNBError, match="called once"):
        function(nd64([2.0]), nd64([3.0]))


@pytest.mark.timeout(60)
def test_debug_mode_catches_a_backward_kernel_writing_its_inputs():
    """In debug mode what backward only reads (saved inputs, out_grad) is handed over read-only."""
    from mxnb import operator as op

    def fwd(src, env, ret, req, run_ctx):
        op.assign(ret, req, src * 2)

    def sloppy_grad(out_grad, x, env, in_grad, req, run_ctx):
        x *= 0  # scribbles on the saved input
        op.assign(in_grad, req, out_grad * 2)

    op.simple_op("t_sloppy_grad").set_function(fwd).set_gradient(
        sloppy_grad, uses=op.GradUses.INPUT
    )
    with mx.engine.debug():
        x = nd64([1.0, 2.0])
        x.attach_grad()
        with autograd.record():
            y = mx.nd.t_sloppy_grad(x)
        y.backward()
        with pytest.raises(MXNBError, match=r"t_sloppy_grad_backward.*in_data\[0\]"):
            x.grad.asnumpy()
        # a well-behaved backward still works in debug mode
        z = nd64([1.0, 2.0])
        z.attach_grad()
        with autograd.record():
            w = mx.nd.tanh(z) * z
        w.backward()
        assert_almost_equal(
            z.grad, np.tanh([1.0, 2.0]) + [1.0, 2.0] * (1 - np.tanh([1.0, 2.0]) ** 2)
        )


# -- the recorded history as a symbol ----------------------------------------------------------------
def test_get_symbol_rebuilds_the_recorded_computation():
    r"""
    x (var0), w (var1), b (const0: not marked)
        \      |      /
        FullyConnected --> h --> *2 --> relu --+--> + --> y
                            \__________________/
    """
    rng = np.random.default_rng(20)
    x, w, b = (nd64(rng.standard_normal(shape)) for shape in ((2, 3), (4, 3), (4,)))
    x.attach_grad()
    w.attach_grad()
    with autograd.record():
        h = mx.nd.FullyConnected(x, w, b, num_hidden=4)
        y = mx.nd.relu(h * 2) + h
    sym = autograd.get_symbol(y)
    assert sym.list_arguments() == ["var0", "var1", "const0"]
    assert '"num_hidden": "4"' in sym.tojson()
    exe = sym.bind(mx.cpu(), {"var0": x, "var1": w, "const0": b})
    assert_almost_equal(exe.forward()[0], y, rtol=1e-12, atol=0)


def test_get_symbol_errors():
    with pytest.raises(MXNBError, match="not recorded"):
        autograd.get_symbol(nd64([1.0]))
    a, b = nd64([1.0]), nd64([2.0])
    a.attach_grad()
    with autograd.record():
        product, _ = ScaledProduct()(a, b)
    with pytest.raises(NotSupportedError, match="ScaledProduct"):
        autograd.get_symbol(product)


@pytest.mark.timeout(60)
def test_threads_record_and_differentiate_their_own_graphs():
    """Recording is per thread: four threads build and differentiate graphs at the same time."""
    results: dict[int, np.ndarray] = {}
    errors: list[BaseException] = []

    def work(seed: int) -> None:
        try:
            x = nd64(np.arange(5.0) + seed)
            x.attach_grad()
            for _ in range(10):
                with autograd.record():
                    y = mx.nd.sum(mx.nd.sin(x) * x)
                y.backward()
            results[seed] = x.grad.asnumpy()
        except BaseException as exc:  # noqa: BLE001 - reported by the main thread
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(seed,)) for seed in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors, errors
    for seed, grad in results.items():
        values = np.arange(5.0) + seed
        assert_almost_equal(grad, np.cos(values) * values + np.sin(values))
