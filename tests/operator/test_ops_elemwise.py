"""Elementwise operators: values, numeric gradients, declared dependencies, in-place writes."""

from __future__ import annotations

import numpy as np
import pytest

from mxnb.base import ShapeError
from mxnb.operator import OpContext, OpReqType, eager, registry
from mxnb.operator.ops.binary import BINARY
from mxnb.operator.ops.elemwise import UNARY
from mxnb.operator.ops.scalar import SCALAR

# inputs inside each function's domain, away from kinks
_DOMAIN = {
    "log": (0.5, 2.0),
    "log1p": (0.1, 1.0),
    "log2": (0.5, 2.0),
    "log10": (0.5, 2.0),
    "sqrt": (0.5, 2.0),
    "rsqrt": (0.5, 2.0),
    "cbrt": (0.5, 2.0),
    "reciprocal": (0.5, 2.0),
    "arcsin": (-0.8, 0.8),
    "arccos": (-0.8, 0.8),
    "tan": (-1.0, 1.0),
}


def _away_from_zero(x: np.ndarray) -> np.ndarray:
    return np.where(np.abs(x) < 0.1, x + np.sign(x + 1e-9) * 0.2, x)


def _input(name: str, shape=(3, 4), seed=0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    low, high = _DOMAIN.get(name, (-2.0, 2.0))
    x = rng.uniform(low, high, size=shape)
    return _away_from_zero(x) if low < 0 else x


DIFFERENTIABLE_UNARY = [name for name, rule in UNARY.items() if rule.gradient is not None]


@pytest.mark.parametrize("name", DIFFERENTIABLE_UNARY)
def test_unary_gradient_matches_central_differences(name):
    eager.numeric_gradient_check(name, [_input(name)])


@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_float32_stays_float32(name):
    outs, _, _ = eager.run_forward(name, [_input(name).astype(np.float32)])
    assert outs[0].dtype == np.float32 and outs[0].shape == (3, 4)


def test_zero_gradient_ops_declare_nothing():
    """sign / floor / BlockGrad: backward reads nothing, and writes zeros."""
    for name in ("sign", "floor", "round", "BlockGrad", "_equal_scalar", "broadcast_greater"):
        prop = registry.get(name).create_property()
        assert prop.declare_backward_dependency(["g"], ["x", "y"], ["out"]) == []
    _, grads = eager.run("BlockGrad", [np.ones(3)], head_grads=[np.ones(3)])
    assert grads[0].tolist() == [0, 0, 0]


@pytest.mark.parametrize(
    "name, expected",
    [
        ("relu", ["g", "out"]),
        ("sigmoid", ["g", "out"]),
        ("tanh", ["g", "out"]),
        ("exp", ["g", "out"]),
        ("log", ["g", "x"]),
        ("negative", ["g"]),
        ("elemwise_add", ["g"]),
        ("elemwise_mul", ["g", "x", "y"]),
        ("broadcast_add", ["g"]),
        ("_plus_scalar", ["g"]),
        ("_rdiv_scalar", ["g", "x"]),
        ("_rpower_scalar", ["g", "out"]),
    ],
)
def test_backward_dependency_is_honest(name, expected):
    prop = registry.get(name).create_property()
    inputs = ["x", "y"][: len(prop.list_arguments())]
    assert prop.declare_backward_dependency(["g"], inputs, ["out"]) == expected


@pytest.mark.parametrize("key", [k for k, rule in BINARY.items() if rule.grad_lhs is not None])
def test_binary_gradients(key):
    names = {
        "add": "elemwise_add",
        "sub": "elemwise_sub",
        "mul": "elemwise_mul",
        "div": "elemwise_div",
    }
    rng = np.random.default_rng(1)
    a = rng.uniform(0.5, 2.0, (3, 4))
    b = rng.uniform(0.5, 2.0, (3, 4)) + (key in ("maximum", "minimum")) * 0.05
    if key == "mod":
        a, b = rng.uniform(0.1, 0.9, (3, 4)) + 3, rng.uniform(1.2, 1.4, (3, 4))
    eager.numeric_gradient_check(names.get(key, f"_{key}"), [a, b])
    eager.numeric_gradient_check(f"broadcast_{key}", [a, b[:1, :]])
    eager.numeric_gradient_check(f"broadcast_{key}", [a[:, :1].reshape(3, 1), b[0].reshape(1, 4)])


def test_broadcast_aligns_on_the_right_and_sums_gradients_back():
    """(2,3,4) - (3,1): rhs is padded to (1,3,1); its gradient sums 8 head entries each."""
    lhs, rhs = np.ones((2, 3, 4)), np.arange(3.0).reshape(3, 1)
    outs, grads = eager.run("broadcast_sub", [lhs, rhs], head_grads=[np.ones((2, 3, 4))])
    assert outs[0].shape == (2, 3, 4)
    assert np.array_equal(grads[1], -8 * np.ones((3, 1)))


def test_broadcast_shape_conflict_names_both_shapes():
    prop = registry.get("broadcast_add").create_property()
    with pytest.raises(ShapeError, match=r"broadcast_add.*\(2, 3\).*\(4,\)"):
        prop.infer_shape([(2, 3), (4,)])


def test_elemwise_fills_unknown_operand_from_known():
    prop = registry.get("elemwise_mul").create_property()
    assert prop.infer_shape([None, (2, 5)]) == ([(2, 5), (2, 5)], [(2, 5)], [])
    assert prop.infer_shape([None, None]) is None


@pytest.mark.parametrize("name", [k for k, rule in SCALAR.items() if rule.gradient is not None])
def test_scalar_gradients(name):
    x = np.random.default_rng(2).uniform(0.5, 2.0, (3, 4))
    scalar = {"_rpower_scalar": 1.7, "_maximum_scalar": 1.03, "_minimum_scalar": 1.03}.get(
        name, 2.5
    )
    eager.numeric_gradient_check(name, [x], {"scalar": scalar})


def test_scalar_values():
    x = np.array([1.0, 2.0, 4.0], np.float32)
    table = {
        "_rminus_scalar": [1.0, 0.0, -2.0],
        "_rdiv_scalar": [2.0, 1.0, 0.5],
        "_power_scalar": [1.0, 4.0, 16.0],
        "_rpower_scalar": [2.0, 4.0, 16.0],
        "_greater_scalar": [0.0, 0.0, 1.0],
        "_lesser_equal_scalar": [1.0, 1.0, 0.0],
    }
    for name, expected in table.items():
        outs, _, _ = eager.run_forward(name, [x], {"scalar": "2"})
        assert outs[0].tolist() == expected, name
        assert outs[0].dtype == np.float32


def test_inplace_forward_and_backward_share_memory_safely():
    """Output aliasing the input, then input gradient aliasing the head gradient."""
    prop = registry.get("elemwise_mul").create_property()
    op = prop.create_operator(None)
    ctx = OpContext()
    a, b = np.array([1.0, 2.0]), np.array([3.0, 4.0])
    a_copy = a.copy()
    op.forward(ctx, [a, b], [OpReqType.WRITE_INPLACE], [a], [])
    assert a.tolist() == [3.0, 8.0]
    g = np.ones(2)
    grad_b = np.zeros(2)
    op.backward(
        ctx,
        [g],
        [a_copy, b],
        [None],
        [OpReqType.WRITE_INPLACE, OpReqType.WRITE_TO],
        [g, grad_b],
        [],
    )
    assert g.tolist() == [3.0, 4.0] and grad_b.tolist() == [1.0, 2.0]


def test_add_to_accumulates():
    prop = registry.get("_mul_scalar").create_property(scalar=2)
    op = prop.create_operator(None)
    grad = np.ones(2)
    op.backward(OpContext(), [np.ones(2)], [None], [None], [OpReqType.ADD_TO], [grad], [])
    assert grad.tolist() == [3.0, 3.0]


def test_cast_and_add_n():
    outs, grads = eager.run(
        "Cast", [np.array([1.5, 2.5])], {"dtype": "int32"}, head_grads=[np.ones(2, np.int32)]
    )
    assert outs[0].dtype == np.int32 and grads[0].dtype == np.float64
    arrays = [np.full(3, float(i)) for i in range(4)]
    outs, grads = eager.run("add_n", arrays, head_grads=[np.ones(3)])
    assert outs[0].tolist() == [6.0] * 3 and len(grads) == 4
    eager.numeric_gradient_check("ElementWiseSum", arrays, {"num_args": 4})


def test_aliases_resolve_to_mxnet_names():
    for alias, name in [
        ("identity", "_copy"),
        ("_plus", "elemwise_add"),
        ("broadcast_plus", "broadcast_add"),
        ("cast", "Cast"),
        ("add_n", "ElementWiseSum"),
        ("stop_gradient", "BlockGrad"),
    ]:
        assert registry.get(alias).name == name


# MXNet 1.9.1's values (mxnet-venv, by hand):
#   a = mx.nd.array([5.5, -3., 7.]); b = mx.nd.array([2., 0., -4.])
#   ai, bi = a.astype('int32'), b.astype('int32')
#   a % b, a % 0, -3 % b, a % -4, ai % bi, ai % 0, -3 % bi, ai % -4, ai[2:] % 2.5
_MOD_CASES = {
    "a % b": (lambda a, b: a % b, [1.5, 0.0, -1.0], [1, 0, -1]),
    "a % 0": (lambda a, b: a % 0, [0.0, 0.0, 0.0], [0, 0, 0]),
    "-3 % b": (lambda a, b: -3 % b, [1.0, 0.0, -3.0], [1, 0, -3]),
    "a % -4": (lambda a, b: a % -4, [-2.5, -3.0, -1.0], [-3, -3, -1]),
    # an int array's scalar is cast to int first: 7 % 2
    "a[2:] % 2.5": (lambda a, b: a[2:] % 2.5, [2.0], [1]),
}


@pytest.mark.parametrize("dtype", ["float32", "int32"])
@pytest.mark.parametrize("case", list(_MOD_CASES))
def test_mod_by_zero_gives_zero_as_mxnet(case, dtype):
    """MXNet's mod: the sign of the divisor, 0 for a zero divisor (no nan, no warning), any dtype."""
    import warnings

    import mxnb as mx

    compute, as_float, as_int = _MOD_CASES[case]
    a = mx.nd.array([5.5, -3.0, 7.0]).astype(dtype)
    b = mx.nd.array([2.0, 0.0, -4.0]).astype(dtype)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a numpy warning in the kernel fails the op
        result = compute(a, b).asnumpy()
    assert result.dtype == np.dtype(dtype)
    assert result.tolist() == (as_float if dtype == "float32" else as_int)
