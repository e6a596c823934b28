"""MXNet's Python custom-op API: CustomOp / CustomOpProp run through ``mx.nd.Custom``.

MXNet's own example (apache/mxnet ``example/numpy-ops/custom_softmax.py``)
is kept below as text, verbatim from ``class Softmax`` to the symbol
definition, and run with ``mx`` bound to mxnb — the import is the only
change.  (Its ``np.int`` no longer exists in numpy >= 1.24, unrelated to
mxnb; the example runs with a numpy namespace that still has it.)
"""

from __future__ import annotations

import json
import types

import numpy as np
import pytest

import mxnb as mx
from mxnb import operator as op
from mxnb.base import MXNBError, OpError
from mxnb.operator import registry
from mxnb.testing import assert_almost_equal, check_numeric_gradient

CUSTOM_SOFTMAX_EXAMPLE = """
class Softmax(mx.operator.CustomOp):
    def forward(self, is_train, req, in_data, out_data, aux):
        x = in_data[0].asnumpy()
        y = np.exp(x - x.max(axis=1).reshape((x.shape[0], 1)))
        y /= y.sum(axis=1).reshape((x.shape[0], 1))
        self.assign(out_data[0], req[0], mx.nd.array(y))

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        l = in_data[1].asnumpy().ravel().astype(np.int)
        y = out_data[0].asnumpy()
        y[np.arange(l.shape[0]), l] -= 1.0
        self.assign(in_grad[0], req[0], mx.nd.array(y))

@mx.operator.register("softmax")
class SoftmaxProp(mx.operator.CustomOpProp):
    def __init__(self):
        super(SoftmaxProp, self).__init__(need_top_grad=False)

    def list_arguments(self):
        return ['data', 'label']

    def list_outputs(self):
        return ['output']

    def infer_shape(self, in_shape):
        data_shape = in_shape[0]
        label_shape = (in_shape[0][0],)
        output_shape = in_shape[0]
        return [data_shape, label_shape], [output_shape], []

    def infer_type(self, in_type):
        return in_type, [in_type[0]], []

    def create_operator(self, ctx, shapes, dtypes):
        return Softmax()
"""

CUSTOM_SOFTMAX_SYMBOL = """
data = mx.symbol.Variable('data')
fc1 = mx.symbol.FullyConnected(data = data, name='fc1', num_hidden=128)
act1 = mx.symbol.Activation(data = fc1, name='relu1', act_type="relu")
fc2 = mx.symbol.FullyConnected(data = act1, name = 'fc2', num_hidden = 64)
act2 = mx.symbol.Activation(data = fc2, name='relu2', act_type="relu")
fc3 = mx.symbol.FullyConnected(data = act2, name='fc3', num_hidden=10)
mlp = mx.symbol.Custom(data=fc3, name='softmax', op_type='softmax')
"""


def _numpy_with_int() -> types.SimpleNamespace:
    """numpy's namespace plus the ``np.int`` alias numpy 1.24 removed (the example uses it)."""
    namespace = types.SimpleNamespace(
        **{name: getattr(np, name) for name in dir(np) if not name.startswith("__")}
    )
    namespace.int = int
    return namespace


def load_example() -> dict:
    scope = {"mx": mx, "np": _numpy_with_int()}
    exec(CUSTOM_SOFTMAX_EXAMPLE, scope)  # noqa: S102 - MXNet's example, verbatim
    return scope


@pytest.fixture(params=["naive", "threaded_per_device"])
def engine(request):
    """Run the test on the synchronous engine and on the threaded one."""
    previous = mx.engine.engine_type()
    mx.engine.set_engine(request.param)
    yield request.param
    mx.engine.set_engine(previous)


def softmax_reference(x: np.ndarray) -> np.ndarray:
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


@pytest.mark.timeout(60)
def test_mxnet_custom_softmax_example_forward_and_backward(engine):
    """forward: softmax rows; backward: softmax - onehot(label), head gradient ignored."""
    load_example()
    rng = np.random.default_rng(0)
    x_np = rng.standard_normal((4, 5)).astype(np.float32)
    label_np = np.array([0, 3, 1, 4], dtype=np.float32)
    x = mx.nd.array(x_np)
    label = mx.nd.array(label_np)
    x.attach_grad()
    with mx.autograd.record():
        y = mx.nd.Custom(x, label, op_type="softmax")
    y.backward(mx.nd.full((4, 5), 7.0))  # need_top_grad=False: the 7s never reach backward
    expected = softmax_reference(x_np)
    assert_almost_equal(y, expected, rtol=1e-5, atol=1e-6)
    expected[np.arange(4), label_np.astype(int)] -= 1.0
    assert_almost_equal(x.grad, expected, rtol=1e-5, atol=1e-6)


@pytest.mark.timeout(60)
def test_custom_op_inside_a_longer_imperative_chain(engine):
    r"""
    x --FullyConnected--> h --Custom(softmax)--> p
    The custom op pushes engine ops from inside its own engine op and waits for them.
    """
    load_example()
    rng = np.random.default_rng(1)
    x = mx.nd.array(rng.standard_normal((3, 4)), dtype="float32")
    w = mx.nd.array(rng.standard_normal((5, 4)), dtype="float32")
    b = mx.nd.zeros((5,))
    label = mx.nd.array([1, 0, 4])
    w.attach_grad()
    with mx.autograd.record():
        h = mx.nd.FullyConnected(x, w, b, num_hidden=5)
        p = mx.nd.Custom(h, label, op_type="softmax")
    p.backward()
    h_np = x.asnumpy() @ w.asnumpy().T
    d_h = softmax_reference(h_np)
    d_h[np.arange(3), [1, 0, 4]] -= 1
    assert_almost_equal(w.grad, d_h.T @ x.asnumpy(), rtol=1e-4, atol=1e-5)


class _Scale(op.CustomOp):
    def __init__(self, factor: float) -> None:
        super().__init__()
        self.factor = factor

    def forward(self, is_train, req, in_data, out_data, aux):
        self.assign(out_data[0], req[0], in_data[0] * self.factor)
        self.assign(aux[0], "write", aux[0] + 1)  # counts forward calls

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        self.assign(in_grad[0], req[0], out_grad[0] * self.factor)


@op.register("t_scale")
class _ScaleProp(op.CustomOpProp):
    def __init__(self, factor: str = "1.0") -> None:
        super().__init__(need_top_grad=True)
        self.factor = float(factor)  # MXNet passes every kwarg as a string

    def list_auxiliary_states(self):
        return ["calls"]

    def infer_shape(self, in_shape):
        return in_shape, [in_shape[0]], [[1]]

    def declare_backward_dependency(self, out_grad, in_data, out_data):
        return [out_grad[0]]

    def create_operator(self, ctx, shapes, dtypes):
        assert isinstance(ctx, mx.Context)
        assert shapes == [[2, 3]] and dtypes == [np.dtype("float32")]
        return _Scale(self.factor)


def test_custom_property_semantics():
    prop = registry.get("Custom").create_property(op_type="t_scale", factor=2.5)
    assert prop.user_prop.factor == 2.5
    assert prop.get_params_str() == {"op_type": "t_scale", "factor": "2.5"}
    assert prop.list_arguments() == ["data"]
    assert prop.list_auxiliary_states() == ["calls"]
    assert prop.infer_shape([(2, 3)]) == ([(2, 3)], [(2, 3)], [(1,)])
    assert prop.infer_shape([None]) is None
    assert prop.declare_backward_dependency(["g"], ["x"], ["y"]) == ["g"]
    assert prop.infer_type([np.dtype("float32")])[1] == [np.dtype("float32")]


def test_custom_op_with_kwargs_aux_and_numeric_gradient():
    x = mx.nd.array(np.arange(6.0).reshape(2, 3), dtype="float32")
    calls = mx.nd.zeros((1,))
    x.attach_grad()
    with mx.autograd.record():
        y = mx.nd.Custom(x, calls, op_type="t_scale", factor=3)
    y.backward(mx.nd.ones((2, 3)))
    assert_almost_equal(y, 3 * np.arange(6.0).reshape(2, 3))
    assert_almost_equal(x.grad, np.full((2, 3), 3.0))
    assert calls.asnumpy()[0] == 1.0
    # The eager runner and check_numeric_gradient work on Custom like on any op.
    location = [np.random.default_rng(2).standard_normal((2, 3)).astype(np.float32)]
    check_numeric_gradient(
        "Custom",
        location,
        params={"op_type": "t_scale", "factor": "0.5"},
        aux_states=[np.zeros(1)],
        dtype=np.float32,
    )


class _Broken(op.CustomOp):
    def forward(self, is_train, req, in_data, out_data, aux):
        raise ValueError("boom from user code")


@op.register("t_broken")
class _BrokenProp(op.CustomOpProp):
    def create_operator(self, ctx, shapes, dtypes):
        return _Broken()


@pytest.mark.timeout(60)
def test_exception_in_custom_op_surfaces_at_next_wait_with_its_name(engine):
    y = mx.nd.Custom(mx.nd.ones((2,)), op_type="t_broken")  # returns at once (threaded)
    with pytest.raises(OpError, match="t_broken") as info:
        y.asnumpy()
    assert "boom from user code" in str(info.value) or "boom from user code" in repr(
        info.value.__cause__
    )
    # the engine stays usable
    assert (mx.nd.ones((2,)) + 1).asnumpy().tolist() == [2.0, 2.0]


def test_unknown_op_type_lists_the_registered_ones():
    with pytest.raises(MXNBError, match="t_scale"):
        mx.nd.Custom(mx.nd.ones((2,)), op_type="no_such_custom_op")


def test_bad_constructor_kwargs_are_reported():
    with pytest.raises(MXNBError, match="t_scale.*as strings"):
        mx.nd.Custom(mx.nd.ones((2, 3)), mx.nd.zeros((1,)), op_type="t_scale", nonsense=1)


def test_assign_follows_req_strings():
    custom = op.CustomOp()
    target = mx.nd.ones((2,))
    custom.assign(target, "null", mx.nd.full((2,), 5.0))
    assert target.asnumpy().tolist() == [1.0, 1.0]
    custom.assign(target, "add", mx.nd.full((2,), 5.0))
    assert target.asnumpy().tolist() == [6.0, 6.0]
    custom.assign(target, "write", mx.nd.full((2,), 2.0))
    assert target.asnumpy().tolist() == [2.0, 2.0]
    with pytest.raises(MXNBError, match="req"):
        custom.assign(target, "sometimes", 1)


# -- inside a symbol and an executor ------------------------------------------------------------
def bind_example_mlp(batch: int = 8, input_dim: int = 784):
    scope = load_example()
    exec(CUSTOM_SOFTMAX_SYMBOL, scope)  # noqa: S102 - MXNet's example, verbatim
    mlp = scope["mlp"]
    return mlp, mlp.simple_bind(mx.cpu(), data=(batch, input_dim))


@pytest.mark.timeout(120)
def test_mxnet_example_symbol_binds_with_an_implicit_label(engine):
    mlp, exe = bind_example_mlp()
    assert mlp.list_arguments()[-1] == "softmax_label"
    assert mlp.list_outputs() == ["softmax_output"]
    assert exe.arg_dict["softmax_label"].shape == (8,)
    assert exe.arg_dict["fc3_weight"].shape == (10, 64)


@pytest.mark.timeout(120)
def test_executor_matches_autograd_through_the_custom_softmax(engine):
    """The same weights through simple_bind and through mx.nd + autograd give the same gradients."""
    _, exe = bind_example_mlp(batch=6, input_dim=20)
    rng = np.random.default_rng(3)
    for name, array in exe.arg_dict.items():
        array[:] = rng.standard_normal(array.shape).astype(np.float32) * 0.3
    exe.arg_dict["softmax_label"][:] = np.array([0, 1, 2, 3, 4, 5], dtype=np.float32)
    exe.forward(is_train=True)
    exe.backward()

    arrays = {name: mx.nd.array(array.asnumpy()) for name, array in exe.arg_dict.items()}
    for name in ("fc1_weight", "fc2_weight", "fc3_weight", "fc3_bias"):
        arrays[name].attach_grad()
    with mx.autograd.record():
        h = mx.nd.relu(
            mx.nd.FullyConnected(
                arrays["data"], arrays["fc1_weight"], arrays["fc1_bias"], num_hidden=128
            )
        )
        h = mx.nd.relu(
            mx.nd.FullyConnected(h, arrays["fc2_weight"], arrays["fc2_bias"], num_hidden=64)
        )
        h = mx.nd.FullyConnected(h, arrays["fc3_weight"], arrays["fc3_bias"], num_hidden=10)
        p = mx.nd.Custom(h, arrays["softmax_label"], op_type="softmax")
    p.backward()
    assert_almost_equal(exe.outputs[0], p, rtol=1e-5, atol=1e-6)
    for name in ("fc1_weight", "fc2_weight", "fc3_weight", "fc3_bias"):
        assert_almost_equal(
            exe.grad_dict[name],
            arrays[name].grad,
            rtol=1e-4,
            atol=1e-5,
            names=(f"executor_{name}", "autograd"),
        )


@pytest.mark.timeout(120)
def test_mxnet_example_trains(engine):
    """The example's purpose: SGD on its MLP lowers the loss (synthetic, separable data)."""
    _, exe = bind_example_mlp(batch=32, input_dim=16)
    rng = np.random.default_rng(4)
    centers = rng.standard_normal((10, 16)) * 3
    labels = np.arange(32) % 10
    data = centers[labels] + rng.standard_normal((32, 16)) * 0.5
    for name, array in exe.arg_dict.items():
        if name.endswith("weight"):
            array[:] = rng.standard_normal(array.shape) * 0.1
        elif name.endswith("bias"):
            array[:] = 0
    exe.arg_dict["data"][:] = data
    exe.arg_dict["softmax_label"][:] = labels

    def loss() -> float:
        probabilities = exe.outputs[0].asnumpy()
        return float(-np.mean(np.log(probabilities[np.arange(32), labels] + 1e-12)))

    exe.forward(is_train=False)
    first = loss()
    for _ in range(30):
        exe.forward(is_train=True)
        exe.backward()
        for name, grad in exe.grad_dict.items():
            if name not in ("data", "softmax_label"):
                exe.arg_dict[name][:] = exe.arg_dict[name] - 0.1 / 32 * grad
    exe.forward(is_train=False)
    assert loss() < 0.5 * first


def test_redefining_a_custom_op_in_a_rerun_cell_takes_effect():
    def define(factor: float) -> None:
        class Times(op.CustomOp):
            def forward(self, is_train, req, in_data, out_data, aux):
                self.assign(out_data[0], req[0], in_data[0] * factor)

        @op.register("t_redefined")
        class TimesProp(op.CustomOpProp):
            def infer_shape(self, in_shape):
                return in_shape, [in_shape[0]], []

            def create_operator(self, ctx, shapes, dtypes):
                return Times()

    define(2.0)
    assert mx.nd.Custom(mx.nd.ones((3,)), op_type="t_redefined").asnumpy().tolist() == [2.0] * 3
    define(5.0)
    assert mx.nd.Custom(mx.nd.ones((3,)), op_type="t_redefined").asnumpy().tolist() == [5.0] * 3


def test_custom_symbol_json_round_trip_keeps_op_type_and_string_kwargs():
    load_example()
    data = mx.sym.Variable("data")
    scaled = mx.sym.Custom(
        data, mx.sym.Variable("calls"), op_type="t_scale", factor=2.5, name="scale"
    )
    net = mx.sym.Custom(data=scaled, name="softmax", op_type="softmax")
    text = net.tojson()
    nodes = {node["name"]: node for node in json.loads(text)["nodes"]}
    assert nodes["scale"]["attrs"] == {"op_type": "t_scale", "factor": "2.5"}
    assert nodes["softmax"]["attrs"] == {"op_type": "softmax"}
    loaded = mx.sym.load_json(text)
    assert loaded.list_arguments() == ["data", "softmax_label"]
    assert loaded.list_auxiliary_states() == ["calls"]
    _, out_shapes, aux_shapes = loaded.infer_shape(data=(2, 3))
    assert out_shapes == [(2, 3)] and aux_shapes == [(1,)]
