"""SimpleOp: one registered function gives a full OperatorProperty (and mx.nd / mx.sym ops).

The smooth-L1 example of issue 4 is registered exactly as written there and
checked against its closed form, through the property interface, through
``mx.nd`` and numerically.
"""

from __future__ import annotations

import numpy as np
import pytest

from mxnb import operator as op
from mxnb.base import MXNBError, NotSupportedError, ParamError, ShapeError
from mxnb.operator import registry
from mxnb.operator.base import OpContext, OpReqType, ResourceRequest
from mxnb.operator.simple_op import EnvArguments


# -- the example of issue 4, exactly as written ------------------------------------------------
def smooth_l1(src, env, ret, req, run_ctx):
    s2 = env.scalar**2
    x = src
    op.assign(
        ret,
        req,
        np.where(x > 1 / s2, x - 0.5 / s2, np.where(x < -1 / s2, -x - 0.5 / s2, 0.5 * x * x * s2)),
    )


def smooth_l1_grad(out_grad, in_data0, env, in_grad, req, run_ctx):
    s2 = env.scalar**2
    x = in_data0
    op.assign(
        in_grad, req, out_grad * np.where(x > 1 / s2, 1.0, np.where(x < -1 / s2, -1.0, x * s2))
    )


def register_smooth_l1():
    return (
        op.simple_op("my_smooth_l1")
        .set_function(smooth_l1, op.SimpleOpInplace.NONE)
        .set_gradient(smooth_l1_grad, op.SimpleOpInplace.OUT_IN, uses=op.GradUses.INPUT)
        .set_enable_scalar(True)
        .describe("Smooth L1 loss, the SimpleOp example of the architecture notes")
    )


def smooth_l1_reference(x, sigma):
    s2 = sigma**2
    return np.where(np.abs(x) < 1 / s2, 0.5 * (sigma * x) ** 2, np.abs(x) - 0.5 / s2)


def run_property(prop, inputs, req=OpReqType.WRITE_TO, is_train=False):
    """Run a property's forward on numpy arrays the way the framework does."""
    _, out_shapes, _ = prop.infer_shape([x.shape for x in inputs])
    outputs = [np.zeros(shape, dtype=inputs[0].dtype) for shape in out_shapes]
    operator = prop.create_operator(None)
    operator.forward(OpContext(is_train=is_train), inputs, [req] * len(outputs), outputs, [])
    return operator, outputs


def test_smooth_l1_example_registers_an_operator():
    register_smooth_l1()
    info = registry.get("my_smooth_l1")
    prop = info.create_property(scalar="2.0")
    assert prop.list_arguments() == ["data"]
    assert prop.list_outputs() == ["output"]
    assert prop.get_params() == {"scalar": 2.0}
    assert "Smooth L1 loss" in registry.make_docstring("my_smooth_l1")
    assert "scalar" in registry.make_docstring("my_smooth_l1")


def test_smooth_l1_forward_and_backward_match_closed_form():
    register_smooth_l1()
    prop = registry.get("my_smooth_l1").create_property(scalar=2.0)
    x = np.linspace(-1.0, 1.0, 21)
    operator, (out,) = run_property(prop, [x])
    np.testing.assert_allclose(out, smooth_l1_reference(x, 2.0))
    head = np.full_like(x, 3.0)
    in_grad = np.zeros_like(x)
    operator.backward(OpContext(), [head], [x], [None], [OpReqType.WRITE_TO], [in_grad], [])
    expected = 3.0 * np.where(np.abs(x) < 0.25, 4.0 * x, np.sign(x))
    np.testing.assert_allclose(in_grad, expected)


def test_uses_becomes_the_backward_dependency():
    """What the gradient declares is all backward may read: the planner frees the rest."""

    def fwd(src, env, ret, req, run_ctx):
        op.assign(ret, req, src)

    def grad0(out_grad, env, in_grad, req, run_ctx):
        op.assign(in_grad, req, out_grad)

    def grad1(out_grad, out_value, env, in_grad, req, run_ctx):
        op.assign(in_grad, req, out_grad * out_value)

    builder = op.simple_op("t_uses").set_function(fwd)
    prop = registry.get("t_uses").create_property()
    assert prop.declare_backward_dependency(["g"], ["x"], ["y"]) == []  # no gradient yet
    builder.set_gradient(grad0, uses=op.GradUses.NONE)
    prop = registry.get("t_uses").create_property()
    assert prop.declare_backward_dependency(["g"], ["x"], ["y"]) == ["g"]
    builder.set_gradient(grad1, uses=op.GradUses.OUTPUT)
    prop = registry.get("t_uses").create_property()
    assert prop.declare_backward_dependency(["g"], ["x"], ["y"]) == ["g", "y"]
    register_smooth_l1()
    prop = registry.get("my_smooth_l1").create_property(scalar=1.0)
    assert prop.declare_backward_dependency(["g"], ["x"], ["y"]) == ["g", "x"]


def test_gradient_kernels_get_what_they_declared():
    """OUTPUT gradients receive the forward output; binary INPUT gradients both operands."""

    def exp_fwd(src, env, ret, req, run_ctx):
        op.assign(ret, req, np.exp(src))

    def exp_grad(out_grad, out_value, env, in_grad, req, run_ctx):
        op.assign(in_grad, req, out_grad * out_value)

    op.simple_op("t_exp").set_function(exp_fwd, op.SimpleOpInplace.IN_OUT).set_gradient(
        exp_grad, op.SimpleOpInplace.OUT_IN, uses=op.GradUses.OUTPUT
    )
    prop = registry.get("t_exp").create_property()
    x = np.array([0.0, 1.0, 2.0])
    operator, (y,) = run_property(prop, [x])
    grad = np.zeros(3)
    operator.backward(OpContext(), [np.ones(3)], [None], [y], [OpReqType.WRITE_TO], [grad], [])
    np.testing.assert_allclose(grad, np.exp(x))

    def mul_fwd(lhs, rhs, env, ret, req, run_ctx):
        op.assign(ret, req, lhs * rhs)

    def mul_grad(out_grad, lhs, rhs, env, lhs_grad, rhs_grad, req_lhs, req_rhs, run_ctx):
        op.assign(lhs_grad, req_lhs, out_grad * rhs)
        op.assign(rhs_grad, req_rhs, out_grad * lhs)

    op.simple_op("t_mul").set_function(mul_fwd, op.SimpleOpInplace.LHS_OUT).set_gradient(
        mul_grad, op.SimpleOpInplace.OUT_LHS, uses=op.GradUses.INPUT
    )
    prop = registry.get("t_mul").create_property()
    assert prop.list_arguments() == ["lhs", "rhs"]
    a, b = np.array([1.0, 2.0]), np.array([3.0, 5.0])
    operator, (out,) = run_property(prop, [a, b])
    np.testing.assert_allclose(out, a * b)
    ga, gb = np.ones(2), np.zeros(2)
    reqs = [OpReqType.ADD_TO, OpReqType.WRITE_TO]
    operator.backward(OpContext(), [np.ones(2)], [a, b], [None], reqs, [ga, gb], [])
    np.testing.assert_allclose(ga, 1 + b)  # ADD_TO accumulates
    np.testing.assert_allclose(gb, a)


def test_binary_gradient_with_out_grad_only():
    def add_fwd(lhs, rhs, env, ret, req, run_ctx):
        op.assign(ret, req, lhs + rhs)

    def add_grad(out_grad, env, lhs_grad, rhs_grad, req_lhs, req_rhs, run_ctx):
        op.assign(lhs_grad, req_lhs, out_grad)
        op.assign(rhs_grad, req_rhs, out_grad)

    op.simple_op("t_add").set_function(add_fwd).set_gradient(add_grad)
    prop = registry.get("t_add").create_property()
    assert prop.declare_backward_dependency(["g"], ["a", "b"], ["y"]) == ["g"]
    operator = prop.create_operator(None)
    ga, gb = np.zeros(2), np.full(2, 7.0)
    reqs = [OpReqType.WRITE_TO, OpReqType.NULL]
    operator.backward(OpContext(), [np.ones(2)], [None, None], [None], reqs, [ga, gb], [])
    np.testing.assert_allclose(ga, 1.0)
    np.testing.assert_allclose(gb, 7.0)  # NULL leaves the buffer alone


def test_inplace_options_become_property_options():
    register_smooth_l1()
    prop = registry.get("my_smooth_l1").create_property(scalar=1.0)
    assert prop.forward_inplace_option(["x"], ["y"]) == []
    assert prop.backward_inplace_option(["g"], ["x"], ["y"], ["dx"]) == [("g", "dx")]

    def copy(src, env, ret, req, run_ctx):
        op.assign(ret, req, src)

    op.simple_op("t_inplace_in_out").set_function(copy, op.SimpleOpInplace.IN_OUT)
    prop = registry.get("t_inplace_in_out").create_property()
    assert prop.forward_inplace_option(["x"], ["y"]) == [("x", "y")]
    assert prop.backward_inplace_option(["g"], ["x"], ["y"], ["dx"]) == []


def test_inplace_option_must_fit_the_arity():
    def unary(src, env, ret, req, run_ctx):
        op.assign(ret, req, src)

    with pytest.raises(ParamError, match="LHS_OUT"):
        op.simple_op("t_bad_inplace").set_function(unary, op.SimpleOpInplace.LHS_OUT)
    with pytest.raises(ParamError, match="OUT_IN"):
        op.simple_op("t_bad_inplace2").set_function(unary).set_gradient(
            unary, op.SimpleOpInplace.OUT_LHS
        )


def test_arity_comes_from_the_signature_or_num_inputs():
    def ambiguous(*args):
        pass

    with pytest.raises(ParamError, match="num_inputs"):
        op.simple_op("t_ambiguous").set_function(ambiguous)
    builder = op.simple_op("t_ambiguous").set_function(ambiguous, num_inputs=2)
    assert builder.num_inputs == 2
    assert registry.get("t_ambiguous").create_property().list_arguments() == ["lhs", "rhs"]


def test_default_shape_function_and_binary_mismatch():
    def add_fwd(lhs, rhs, env, ret, req, run_ctx):
        op.assign(ret, req, lhs + rhs)

    op.simple_op("t_add2").set_function(add_fwd)
    prop = registry.get("t_add2").create_property()
    assert prop.infer_shape([(2, 3), None]) == ([(2, 3), (2, 3)], [(2, 3)], [])
    assert prop.infer_shape([None, None]) is None
    with pytest.raises(ShapeError, match=r"t_add2.*\(2, 3\).*\(3, 2\)|t_add2.*\(3, 2\).*\(2, 3\)"):
        prop.infer_shape([(2, 3), (3, 2)])


def test_shape_function_and_kwargs():
    """A kwargs-enabled op with its own shape function: repeat rows ``times`` times."""

    def repeat_rows(src, env, ret, req, run_ctx):
        op.assign(ret, req, env.xp.repeat(src, int(env.kwargs["times"]), axis=0))

    def repeat_shape(shape, env):
        return (shape[0] * int(env.kwargs["times"]),) + tuple(shape[1:])

    (
        op.simple_op("t_repeat_rows")
        .set_function(repeat_rows)
        .set_shape_function(repeat_shape)
        .set_enable_kwargs(True)
    )
    prop = registry.get("t_repeat_rows").create_property(times=3)
    assert prop.get_params_str() == {"times": "3"}
    assert prop.infer_shape([(2, 4)]) == ([(2, 4)], [(6, 4)], [])
    assert prop.infer_shape([None]) is None
    _, (out,) = run_property(prop, [np.arange(8.0).reshape(2, 4)])
    np.testing.assert_array_equal(out, np.repeat(np.arange(8.0).reshape(2, 4), 3, axis=0))


def test_shape_function_failure_names_the_op():
    def fwd(src, env, ret, req, run_ctx):
        pass

    def bad_shape(shape, env):
        return (shape[5],)

    op.simple_op("t_bad_shape").set_function(fwd).set_shape_function(bad_shape)
    with pytest.raises(ShapeError, match="t_bad_shape.*IndexError.*\\(2, 3\\)"):
        registry.get("t_bad_shape").create_property().infer_shape([(2, 3)])


def test_scalar_and_kwargs_are_exclusive():
    def fwd(src, env, ret, req, run_ctx):
        pass

    builder = op.simple_op("t_exclusive").set_function(fwd).set_enable_scalar(True)
    with pytest.raises(ParamError, match="exclusive"):
        builder.set_enable_kwargs(True)
    builder = op.simple_op("t_exclusive2").set_function(fwd).set_enable_kwargs(True)
    with pytest.raises(ParamError, match="exclusive"):
        builder.set_enable_scalar(True)
    with pytest.raises(ParamError, match="scalar"):
        registry.get("t_exclusive").create_property()  # the scalar is required


def test_resource_request_reaches_the_property_and_env():
    seen: list[EnvArguments] = []

    def fwd(src, env, ret, req, run_ctx):
        seen.append(env)
        op.assign(ret, req, src)

    op.simple_op("t_resource").set_function(fwd).set_resource_request(ResourceRequest.TEMP_SPACE)
    prop = registry.get("t_resource").create_property()
    assert prop.forward_resource([(2,)]) == [ResourceRequest.TEMP_SPACE]
    assert prop.backward_resource([(2,)]) == []  # no gradient, so backward needs nothing
    operator = prop.create_operator(None)
    operator.forward(OpContext(requested=["temp"]), [np.ones(2)], [1], [np.zeros(2)], [])
    assert seen[0].resource == ["temp"]
    with pytest.raises(ParamError, match="ResourceRequest"):
        op.simple_op("t_resource").set_resource_request("random")


def test_missing_gradient_is_a_clear_error():
    def fwd(src, env, ret, req, run_ctx):
        op.assign(ret, req, src)

    op.simple_op("t_no_grad").set_function(fwd)
    operator = registry.get("t_no_grad").create_property().create_operator(None)
    with pytest.raises(NotSupportedError, match="set_gradient") as info:
        operator.backward(OpContext(), [np.ones(1)], [None], [None], [1], [np.zeros(1)], [])
    assert isinstance(info.value, MXNBError)


def test_reregistering_replaces_the_definition():
    """Re-running a notebook cell redefines the op under the same name."""

    def one(src, env, ret, req, run_ctx):
        op.assign(ret, req, src + 1)

    def two(src, env, ret, req, run_ctx):
        op.assign(ret, req, src + 2)

    op.simple_op("t_redefine").set_function(one)
    _, (out,) = run_property(registry.get("t_redefine").create_property(), [np.zeros(1)])
    assert out[0] == 1
    op.simple_op("t_redefine").set_function(two)
    _, (out,) = run_property(registry.get("t_redefine").create_property(), [np.zeros(1)])
    assert out[0] == 2


# -- through mx.nd, autograd and the numeric gradient check ------------------------------------
def test_smooth_l1_example_through_mx_nd_and_autograd():
    import mxnb as mx
    from mxnb.testing import assert_almost_equal, check_numeric_gradient

    register_smooth_l1()
    values = np.array([-1.5, -0.3, -0.1, 0.05, 0.2, 0.6, 2.0], dtype=np.float32)
    x = mx.nd.array(values)
    x.attach_grad()
    with mx.autograd.record():
        y = mx.nd.my_smooth_l1(x, scalar=2.0)
    y.backward(mx.nd.full(values.shape, 2.0))
    assert_almost_equal(
        y, smooth_l1_reference(values.astype(np.float64), 2.0), rtol=1e-6, atol=1e-7
    )
    expected = 2.0 * np.where(np.abs(values) < 0.25, 4.0 * values, np.sign(values))
    assert_almost_equal(x.grad, expected, rtol=1e-6, atol=1e-7)
    check_numeric_gradient("my_smooth_l1", [values], params={"scalar": 2.0})
    assert "Smooth L1 loss" in mx.nd.my_smooth_l1.__doc__


def test_rerunning_the_cell_changes_mx_nd():
    import mxnb as mx

    def plus_one(src, env, ret, req, run_ctx):
        op.assign(ret, req, src + 1)

    def plus_two(src, env, ret, req, run_ctx):
        op.assign(ret, req, src + 2)

    op.simple_op("t_rerun_nd").set_function(plus_one)
    assert mx.nd.t_rerun_nd(mx.nd.zeros((1,))).asnumpy()[0] == 1
    op.simple_op("t_rerun_nd").set_function(plus_two)
    assert mx.nd.t_rerun_nd(mx.nd.zeros((1,))).asnumpy()[0] == 2


def test_binary_simple_op_through_mx_nd_with_shared_input():
    r"""
    x ---+--> t_mul2 --> y      y = x * x: both operands are x, so x's gradient
         \____/                  is the sum of the lhs and rhs gradients (2x)
    """
    import mxnb as mx
    from mxnb.testing import assert_almost_equal, check_numeric_gradient

    def mul_fwd(lhs, rhs, env, ret, req, run_ctx):
        op.assign(ret, req, lhs * rhs)

    def mul_grad(out_grad, lhs, rhs, env, lhs_grad, rhs_grad, req_lhs, req_rhs, run_ctx):
        op.assign(lhs_grad, req_lhs, out_grad * rhs)
        op.assign(rhs_grad, req_rhs, out_grad * lhs)

    op.simple_op("t_mul2").set_function(mul_fwd).set_gradient(mul_grad, uses=op.GradUses.INPUT)
    x = mx.nd.array([1.0, -2.0, 3.0])
    x.attach_grad()
    with mx.autograd.record():
        y = mx.nd.t_mul2(x, x)
    y.backward()
    assert_almost_equal(x.grad, np.array([2.0, -4.0, 6.0]))
    rng = np.random.default_rng(0)
    check_numeric_gradient("t_mul2", [rng.standard_normal((2, 3)), rng.standard_normal((2, 3))])


def test_what_the_gradient_uses_decides_what_the_planner_may_share():
    r"""
    data -> fc1 -> t_plan_tanh (IN_OUT) -> fc2

    Inference: the activation always takes fc1's output in place.  Training:
    a gradient that reads the *input* keeps fc1_output alive for backward, so
    the in-place pair disappears and the plan grows; reading only out_grad or
    the output keeps it.
    """
    import mxnb as mx

    def fwd(src, env, ret, req, run_ctx):
        op.assign(ret, req, env.xp.tanh(src))

    def grad_none(out_grad, env, in_grad, req, run_ctx):
        op.assign(in_grad, req, out_grad)

    def grad_input(out_grad, x, env, in_grad, req, run_ctx):
        op.assign(in_grad, req, out_grad * (1 - env.xp.tanh(x) ** 2))

    def grad_output(out_grad, y, env, in_grad, req, run_ctx):
        op.assign(in_grad, req, out_grad * (1 - y**2))

    plans = {}
    for uses, gradient in (
        (op.GradUses.NONE, grad_none),
        (op.GradUses.INPUT, grad_input),
        (op.GradUses.OUTPUT, grad_output),
    ):
        (
            op.simple_op("t_plan_tanh")
            .set_function(fwd, op.SimpleOpInplace.IN_OUT)
            .set_gradient(gradient, op.SimpleOpInplace.OUT_IN, uses=uses)
        )
        data = mx.sym.Variable("data")
        hidden = mx.sym.FullyConnected(data, num_hidden=64, name="fc1")
        net = mx.sym.FullyConnected(
            mx.sym.t_plan_tanh(hidden, name="act"), num_hidden=64, name="fc2"
        )
        for grad_req in ("null", "write"):
            plan = mx.executor.plan_memory(net, {"data": (32, 64)}, grad_req=grad_req)
            plan.check()
            plans[uses, grad_req] = plan
    forward_pair = ("fc1_output", "act_output")
    for uses in op.GradUses:
        assert forward_pair in plans[uses, "null"].inplace_pairs
    assert forward_pair in plans[op.GradUses.NONE, "write"].inplace_pairs
    assert forward_pair in plans[op.GradUses.OUTPUT, "write"].inplace_pairs
    assert forward_pair not in plans[op.GradUses.INPUT, "write"].inplace_pairs
    assert (
        plans[op.GradUses.INPUT, "write"].internal_bytes
        > plans[op.GradUses.NONE, "write"].internal_bytes
    )


def test_smooth_l1_example_in_a_symbol_and_executor():
    import mxnb as mx
    from mxnb.testing import assert_almost_equal, check_numeric_gradient

    register_smooth_l1()
    data = mx.sym.Variable("data")
    net = mx.sym.my_smooth_l1(
        mx.sym.FullyConnected(data, num_hidden=4, name="fc"), scalar=2.0, name="loss"
    )
    assert net.list_arguments() == ["data", "fc_weight", "fc_bias"]
    assert '"scalar": "2.0"' in net.tojson()
    rng = np.random.default_rng(5)
    location = {
        "data": rng.standard_normal((3, 5)),
        "fc_weight": rng.standard_normal((4, 5)),
        "fc_bias": rng.standard_normal(4),
    }
    check_numeric_gradient(net, location, numeric_eps=1e-5, rtol=1e-4)
    exe = net.simple_bind(mx.cpu(), data=(3, 5))
    for name, value in location.items():
        exe.arg_dict[name][:] = value
    exe.forward()
    pre = location["data"] @ location["fc_weight"].T + location["fc_bias"]
    assert_almost_equal(exe.outputs[0], smooth_l1_reference(pre, 2.0), rtol=1e-5, atol=1e-5)


def test_resources_and_kwargs_through_mx_nd_and_mx_sym():
    """A kwargs op asking for the random resource: env.resource holds the context's generator."""
    import mxnb as mx

    def add_noise(src, env, ret, req, run_ctx):
        generator = env.resource[0].generator
        scale = float(env.kwargs["scale"])
        op.assign(ret, req, src + scale * generator.standard_normal(src.shape))

    (
        op.simple_op("t_add_noise")
        .set_function(add_noise)
        .set_enable_kwargs(True)
        .set_resource_request(ResourceRequest.RANDOM)
    )
    mx.random.seed(7)
    first = mx.nd.t_add_noise(mx.nd.zeros((1000,)), scale=2).asnumpy()
    mx.random.seed(7)
    again = mx.nd.t_add_noise(mx.nd.zeros((1000,)), scale="2").asnumpy()
    np.testing.assert_array_equal(first, again)  # the seeded generator, serialized by its var
    assert 1.8 < first.std() < 2.2
    net = mx.sym.t_add_noise(mx.sym.Variable("data"), scale=0.5, name="noise")
    loaded = mx.sym.load_json(net.tojson())
    assert loaded.infer_shape(data=(3, 2))[1] == [(3, 2)]
    assert '"scale": "0.5"' in net.tojson()
