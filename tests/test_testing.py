"""mxnb.testing: tolerant comparisons that name the worst element, and numeric gradient checks.

The checks must *fail* on a wrong gradient, not only pass on right ones: a
SimpleOp with a deliberately wrong gradient is the control.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import mxnb as mx
from mxnb import operator as op
from mxnb.base import MXNBError, NotSupportedError, ParamError
from mxnb.testing import (
    ToleranceError,
    assert_almost_equal,
    check_consistency,
    check_numeric_gradient,
    check_symbolic_backward,
    check_symbolic_forward,
    default_atol,
    default_context,
    default_rtol,
    numeric_grad,
    rand_ndarray,
    rand_shape_nd,
    same,
)


# -- assert_almost_equal -----------------------------------------------------------------------
def test_assert_almost_equal_reports_the_worst_element():
    a = np.zeros((3, 4))
    b = np.zeros((3, 4))
    a[1, 2] = 1e-3  # out of tolerance too (float64 atol is 1e-20), but not the worst
    a[2, 3] = 0.5  # the worst
    with pytest.raises(ToleranceError) as info:
        assert_almost_equal(a, b, names=("mine", "ref"))
    message = str(info.value)
    assert "index (2, 3)" in message
    assert "mine=0.5" in message and "ref=0.0" in message
    assert "2 of 12 elements" in message
    assert isinstance(info.value, AssertionError) and isinstance(info.value, MXNBError)


def test_assert_almost_equal_accepts_ndarrays_and_uses_dtype_tolerances():
    assert_almost_equal(mx.nd.array([1.0, 2.0]), np.array([1.0, 2.0 + 1e-5], dtype=np.float32))
    with pytest.raises(ToleranceError):
        assert_almost_equal(np.array([1.0]), np.array([1.0 + 1e-4]))  # float64: rtol 1e-5
    assert default_rtol(np.float32) == 1e-4 and default_atol(np.float32) == 1e-3
    assert default_rtol(np.float16, np.float64) == 1e-2  # the less precise dtype decides
    assert default_atol() == 1e-20


def test_assert_almost_equal_shapes_and_nans():
    with pytest.raises(ToleranceError, match=r"shape \(2,\).*shape \(3,\)"):
        assert_almost_equal(np.zeros(2), np.zeros(3))
    nan = np.array([np.nan, 1.0])
    with pytest.raises(ToleranceError, match="index \\(0,\\)"):
        assert_almost_equal(nan, nan)
    assert_almost_equal(nan, nan, equal_nan=True)


def test_same_and_random_helpers():
    a = mx.nd.array([1.0, 2.0])
    assert same(a, np.array([1.0, 2.0]))
    assert not same(a, np.array([1.0, 2.5]))
    assert default_context() == mx.cpu()
    x = rand_ndarray((2, 3))
    assert x.shape == (2, 3) and x.dtype == np.float32
    assert len(rand_shape_nd(3, dim=4)) == 3
    with pytest.raises(NotSupportedError):
        rand_ndarray((2,), stype="csr")


def test_numeric_grad_of_a_quadratic():
    x = np.array([1.0, -2.0, 0.5])
    grad = numeric_grad(lambda: float(np.sum(x**2)), x, eps=1e-4)
    np.testing.assert_allclose(grad, 2 * np.array([1.0, -2.0, 0.5]), rtol=1e-8)
    np.testing.assert_array_equal(x, [1.0, -2.0, 0.5])  # restored


# -- check_numeric_gradient on registered ops ---------------------------------------------------
def test_numeric_gradient_passes_for_library_ops():
    rng = np.random.default_rng(0)
    check_numeric_gradient("tanh", [rng.standard_normal((3, 4))])
    grads = check_numeric_gradient(
        "FullyConnected",
        {
            "data": rng.standard_normal((2, 3)),
            "weight": rng.standard_normal((4, 3)),
            "bias": rng.standard_normal(4),
        },
        params={"num_hidden": 4},
    )
    assert set(grads) == {"data", "weight", "bias"}
    grads = check_numeric_gradient(
        "elemwise_mul", [rng.standard_normal(5), rng.standard_normal(5)], grad_nodes=["lhs"]
    )
    assert set(grads) == {"lhs"}


def _wrong_gradient_op() -> None:
    def square(src, env, ret, req, run_ctx):
        op.assign(ret, req, src * src)

    def wrong(out_grad, x, env, in_grad, req, run_ctx):
        op.assign(in_grad, req, 3 * x * out_grad)  # should be 2x

    op.simple_op("t_wrong_square").set_function(square).set_gradient(wrong, uses=op.GradUses.INPUT)


def test_numeric_gradient_catches_a_wrong_gradient():
    _wrong_gradient_op()
    with pytest.raises(ToleranceError, match="NUMERICAL_data.*BACKWARD_data"):
        check_numeric_gradient("t_wrong_square", [np.array([1.0, 2.0, -1.5])])


def test_numeric_gradient_refuses_loss_layers():
    """An op that ignores its head gradient has no derivative to compare with."""

    class LossOp(op.CustomOp):
        def forward(self, is_train, req, in_data, out_data, aux):
            self.assign(out_data[0], req[0], in_data[0])

        def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
            self.assign(in_grad[0], req[0], out_data[0])

    @op.register("t_loss_like")
    class LossProp(op.CustomOpProp):
        def __init__(self):
            super().__init__(need_top_grad=False)

        def create_operator(self, ctx, shapes, dtypes):
            return LossOp()

    with pytest.raises(NotSupportedError, match="head gradient"):
        check_numeric_gradient("Custom", [np.ones(3)], params={"op_type": "t_loss_like"})


def test_numeric_gradient_argument_errors():
    with pytest.raises(ParamError, match="not arguments"):
        check_numeric_gradient("tanh", [np.ones(2)], grad_nodes=["nope"])
    with pytest.raises(ParamError, match="1 inputs given"):
        check_numeric_gradient("elemwise_add", [np.ones(2)])


# -- symbols ---------------------------------------------------------------------------------------
def _mlp_symbol():
    data = mx.sym.Variable("data")
    fc = mx.sym.FullyConnected(data, num_hidden=3, name="fc")
    return mx.sym.tanh(fc, name="act")


@pytest.mark.timeout(120)
def test_numeric_gradient_of_a_symbol():
    rng = np.random.default_rng(1)
    sym = _mlp_symbol()
    location = {
        "data": rng.standard_normal((2, 4)),
        "fc_weight": rng.standard_normal((3, 4)),
        "fc_bias": rng.standard_normal(3),
    }
    grads = check_numeric_gradient(sym, location)
    assert set(grads) == {"data", "fc_weight", "fc_bias"}


@pytest.mark.timeout(120)
def test_check_symbolic_forward_and_backward():
    rng = np.random.default_rng(2)
    sym = _mlp_symbol()
    x, w, b = rng.standard_normal((2, 4)), rng.standard_normal((3, 4)), rng.standard_normal(3)
    out = np.tanh(x @ w.T + b)
    location = {"data": x, "fc_weight": w, "fc_bias": b}
    check_symbolic_forward(sym, location, [out], rtol=1e-4, atol=1e-5)
    head = np.ones_like(out)
    d_pre = head * (1 - out**2)
    expected = {"data": d_pre @ w, "fc_weight": d_pre.T @ x, "fc_bias": d_pre.sum(0)}
    check_symbolic_backward(sym, location, [head], expected, rtol=1e-4, atol=1e-5)
    with pytest.raises(ToleranceError, match="BACKWARD_fc_bias"):
        check_symbolic_backward(
            sym, location, [head], {"fc_bias": d_pre.sum(0) + 1}, rtol=1e-4, atol=1e-5
        )


# -- every differentiable conformance case -------------------------------------------------------
CONFORMANCE = Path("/work/shared/conformance")
if not (CONFORMANCE / "cases.json").exists():
    CONFORMANCE = Path(__file__).resolve().parents[1] / "shared" / "conformance"
NUMERIC_CASES = [
    case
    for case in json.loads((CONFORMANCE / "cases.json").read_text())["cases"]
    if case["gradients"]
    and not case["head_grad_ignored"]  # loss layers have no derivative to check
]
# Embedding computes in its own ``dtype`` parameter (float32 by default): check it in float64.
PARAM_OVERRIDES = {"Embedding": {"dtype": "float64"}}


@pytest.mark.parametrize("case", NUMERIC_CASES, ids=[case["name"] for case in NUMERIC_CASES])
def test_numeric_gradient_of_every_differentiable_conformance_case(case):
    """The op's backward equals central differences of its forward, at MXNet's inputs, in float64."""
    with np.load(CONFORMANCE / "cases" / f"{case['name']}.npz") as archive:
        arrays = {key: archive[key] for key in archive.files}
    inputs = {
        spec["name"]: arrays[f"input_{spec['name']}"]
        for spec in case["inputs"]
        if not spec["is_aux"]
    }
    aux = [arrays[f"aux_in_{spec['name']}"] for spec in case["inputs"] if spec["is_aux"]]
    nodes = [
        spec["name"] for spec in case["inputs"] if spec["requires_grad"] and not spec["is_aux"]
    ]
    params = {**case["kwargs"], **PARAM_OVERRIDES.get(case["op"], {})}
    check_numeric_gradient(
        case["op"],
        inputs,
        params=params,
        aux_states=aux or None,
        grad_nodes=nodes,
        is_train=case["train_mode"],
        numeric_eps=1e-4,
        rtol=1e-3,
        atol=1e-5,
    )


# -- check_consistency ---------------------------------------------------------------------------
@pytest.fixture
def one_virtual_gpu():
    previous = mx.context.virtual_gpus()
    mx.context.set_virtual_gpus(max(1, previous))
    yield mx.gpu(0)
    mx.context.set_virtual_gpus(previous)


def _conv_net(final):
    data = mx.sym.Variable("data")
    net = mx.sym.Convolution(data, kernel=(3, 3), num_filter=4, pad=(1, 1), name="conv")
    net = mx.sym.Activation(mx.sym.BatchNorm(net, fix_gamma=False, name="bn"), act_type="tanh")
    return final(mx.sym.FullyConnected(net, num_hidden=3, name="fc"))


@pytest.mark.timeout(120)
def test_check_consistency_across_dtypes_and_devices(one_virtual_gpu):
    net = _conv_net(lambda sym: sym)
    shape = (2, 2, 5, 5)
    runs = check_consistency(
        net,
        [
            {"ctx": mx.cpu(0), "data": shape, "type_dict": {"data": np.float64}},
            {"ctx": mx.cpu(0), "data": shape, "type_dict": {"data": np.float32}},
            {"ctx": one_virtual_gpu, "data": shape, "type_dict": {"data": np.float32}},
        ],
    )
    assert [run["output_0"].dtype for run in runs] == [np.float64, np.float32, np.float32]
    assert {"grad_data", "grad_conv_weight", "grad_bn_gamma", "grad_fc_bias"} <= set(runs[0])


class _DeviceBiased(op.CustomOp):
    """Identity on the CPU, off by 0.01 elsewhere: the control for check_consistency."""

    def __init__(self, bias: float) -> None:
        super().__init__()
        self.bias = bias

    def forward(self, is_train, req, in_data, out_data, aux):
        self.assign(out_data[0], req[0], in_data[0] + self.bias)

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        self.assign(in_grad[0], req[0], out_grad[0])


@op.register("t_device_biased")
class _DeviceBiasedProp(op.CustomOpProp):
    def create_operator(self, ctx, shapes, dtypes):
        return _DeviceBiased(0.0 if ctx.device_type == "cpu" else 0.01)


@pytest.mark.timeout(120)
def test_check_consistency_catches_a_device_that_differs(one_virtual_gpu):
    net = _conv_net(lambda sym: mx.sym.Custom(sym, op_type="t_device_biased"))
    shape = (2, 2, 5, 5)
    with pytest.raises(ToleranceError, match="output_0"):
        check_consistency(
            net,
            [{"ctx": mx.cpu(0), "data": shape}, {"ctx": one_virtual_gpu, "data": shape}],
        )


def test_mxnet_test_utils_helpers():
    from mxnb.testing import (
        almost_equal,
        assert_exception,
        rand_shape_2d,
        rand_shape_3d,
        random_arrays,
    )

    assert almost_equal(np.ones(2), np.ones(2) + 1e-9)
    assert not almost_equal(np.ones(2), np.ones(2) + 1)
    assert_exception(mx.nd.array, MXNBError, "not a number")
    with pytest.raises(ToleranceError, match="did not raise"):
        assert_exception(lambda: None, ValueError)
    assert len(rand_shape_2d()) == 2 and len(rand_shape_3d(2, 3, 4)) == 3
    a, b = random_arrays((2, 3), (4,))
    assert a.shape == (2, 3) and b.shape == (4,) and a.dtype == np.float32
