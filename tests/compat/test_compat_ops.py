"""The operators added for MXNet compatibility, against Apache MXNet 1.9.1's outputs.

Vectors: ``tests/compat/data/mxnet_vectors.npz``, written by
``gen_mxnet_vectors.py`` beside it under real MXNet 1.9.1 (inputs from fixed
seeds; outputs and input gradients for a random head gradient).
"""

import json
from pathlib import Path

import numpy as np
import pytest

import mxnb as mx
from mxnb.testing import check_numeric_gradient

VECTORS = np.load(Path(__file__).parent / "data" / "mxnet_vectors.npz")
INDEX = json.loads(VECTORS["__index__"].tobytes().decode())
RTOL, ATOL = 1e-5, 1e-6


def _arrays(prefix: str) -> dict:
    return {key[len(prefix) :]: VECTORS[key] for key in VECTORS.files if key.startswith(prefix)}


@pytest.mark.parametrize("name", sorted(INDEX["op"]))
def test_op_matches_mxnet(name):
    case = INDEX["op"][name]
    stored = _arrays(f"op/{name}/")
    inputs = [mx.nd.array(stored[f"in{i}"]) for i in range(case["num_inputs"])]
    function = getattr(mx.nd, case["function"])
    if "head" not in stored:  # a creation op: forward only
        out = function(**case["kwargs"])
        np.testing.assert_allclose(out.asnumpy(), stored["out"], rtol=RTOL, atol=ATOL)
        assert out.dtype == stored["out"].dtype
        return
    for x in inputs:
        x.attach_grad()
    args = list(inputs)
    for position, value in sorted((int(k), v) for k, v in case["scalars"].items()):
        args.insert(position, value)
    with mx.autograd.record():
        out = function(*args, **case["kwargs"])
    out.backward(mx.nd.array(stored["head"]))
    np.testing.assert_allclose(out.asnumpy(), stored["out"], rtol=RTOL, atol=ATOL)
    for i, x in enumerate(inputs):
        np.testing.assert_allclose(x.grad.asnumpy(), stored[f"grad{i}"], rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize(
    "name, low, high",
    [("arcsinh", -2, 2), ("arccosh", 1.2, 3), ("arctanh", -0.8, 0.8), ("rcbrt", 0.5, 3)],
)
def test_new_unary_gradients_match_central_differences(name, low, high):
    data = np.random.default_rng(7).uniform(low, high, size=(3, 4))
    check_numeric_gradient(name, [data])


def test_symbol_forms_match_ndarray_forms():
    x, y = mx.sym.Variable("x"), mx.sym.Variable("y")
    a = np.array([[0.5, -1.0, 2.0]], np.float32)
    b = np.array([[1.0], [-2.0]], np.float32)
    cases = [
        (mx.sym.maximum(x, y), mx.nd.maximum(mx.nd.array(a), mx.nd.array(b))),
        (mx.sym.power(x, 2.0), mx.nd.power(mx.nd.array(a), 2.0)),
        (mx.sym.hypot(3.0, x), mx.nd.hypot(3.0, mx.nd.array(a))),
        (mx.sym.minimum(0.0, x), mx.nd.minimum(0.0, mx.nd.array(a))),
    ]
    for sym, want in cases:
        args = {"x": mx.nd.array(a), "y": mx.nd.array(b)}
        args = {name: args[name] for name in sym.list_arguments()}
        got = sym.bind(mx.cpu(), args=args).forward()[0]
        np.testing.assert_allclose(got.asnumpy(), want.asnumpy(), rtol=1e-6)
    assert mx.nd.power(2, 3) == 8 and mx.sym.maximum(1, 4) == 4


def test_broadcast_like_refuses_incompatible_shapes():
    with pytest.raises(mx.MXNetError, match="broadcast_like"):
        mx.nd.broadcast_like(mx.nd.ones((2, 3)), mx.nd.ones((4, 3)))


def test_moveaxis_checks_axes():
    x = mx.nd.zeros((2, 3, 4))
    assert mx.nd.moveaxis(x, -1, 0).shape == (4, 2, 3)
    with pytest.raises(mx.MXNetError, match="out of range"):
        mx.nd.moveaxis(x, 3, 0)


def test_batchnorm_v1_is_batchnorm():
    data = mx.nd.array(np.random.default_rng(0).standard_normal((2, 3, 4)).astype(np.float32))
    gamma, beta = mx.nd.ones(3), mx.nd.zeros(3)
    mean, var = mx.nd.zeros(3), mx.nd.ones(3)
    v1 = mx.nd.BatchNorm_v1(data, gamma, beta, mean, var, fix_gamma=False)
    v2 = mx.nd.BatchNorm(data, gamma, beta, mean, var, fix_gamma=False)
    np.testing.assert_array_equal(v1.asnumpy(), v2.asnumpy())


def test_batch_take_picks_one_element_per_row_and_clips():
    a_np = np.arange(12, dtype=np.float32).reshape(3, 4)
    indices = np.array([1, 5, -1], dtype=np.int32)  # MXNet 1.9.1 clips: 5 -> 3, -1 -> 0
    a = mx.nd.array(a_np)
    a.attach_grad()
    with mx.autograd.record():
        out = mx.nd.batch_take(a, mx.nd.array(indices, dtype=np.int32))
    picked = np.clip(indices, 0, 3)
    np.testing.assert_array_equal(out.asnumpy(), a_np[np.arange(3), picked])
    # MXNet 1.9.1 registers no gradient for batch_take ("non-differentiable")
    with pytest.raises(mx.MXNetError, match="not differentiable"):
        out.backward(mx.nd.array([1.0, 2.0, 3.0]))
        a.grad.wait_to_read()
    sym = mx.sym.batch_take(mx.sym.Variable("a"), mx.sym.Variable("i"))
    assert sym.infer_shape(a=(3, 4))[1] == [(3,)]
    assert sym.infer_type(a=np.float32)[0] == [np.float32, np.int32]


def test_identity_with_attr_like_rhs_passes_lhs_and_takes_rhs_shape():
    lhs, rhs = mx.sym.Variable("lhs"), mx.sym.Variable("rhs")
    tied = mx.sym._internal._identity_with_attr_like_rhs(lhs, rhs)
    assert tied.infer_shape(rhs=(2, 5))[0] == [(2, 5), (2, 5)]
    x = mx.nd.array([[1.0, 2.0]])
    x.attach_grad()
    with mx.autograd.record():
        y = mx.nd._internal._identity_with_attr_like_rhs(x, mx.nd.zeros((1, 2)))
    y.backward(mx.nd.array([[3.0, 4.0]]))
    assert y.asnumpy().tolist() == [[1.0, 2.0]] and x.grad.asnumpy().tolist() == [[3.0, 4.0]]


def test_multinomial_shapes_dtype_and_frequencies():
    mx.random.seed(3)
    probs = mx.nd.array([[0.1, 0.9], [0.7, 0.3]])
    assert mx.nd.random.multinomial(probs).shape == (2,)
    assert mx.nd.random.multinomial(mx.nd.array([0.2, 0.8])).shape == (1,)  # MXNet 1.x: not 0-d
    draws = mx.nd.random.multinomial(mx.nd.array([[0.2, 0.3, 0.5]]), shape=20000)
    assert draws.shape == (1, 20000) and draws.dtype == np.int32
    frequencies = np.bincount(draws.asnumpy().ravel(), minlength=3) / 20000
    np.testing.assert_allclose(frequencies, [0.2, 0.3, 0.5], atol=0.02)
    sym = mx.sym._sample_multinomial(mx.sym.Variable("p"), shape=(4,), get_prob=True)
    assert sym.infer_shape(p=(5, 3))[1] == [(5, 4), (5, 4)]


def test_multinomial_log_prob_gradient_is_count_over_probability():
    probs_np = np.array([[0.1, 0.9], [0.7, 0.3]], np.float32)
    probs = mx.nd.array(probs_np)
    probs.attach_grad()
    with mx.autograd.record():
        draws, log_prob = mx.nd.random.multinomial(probs, shape=5, get_prob=True)
    log_prob.backward()
    picked = draws.asnumpy()
    rows = np.arange(2)[:, None]
    np.testing.assert_allclose(log_prob.asnumpy(), np.log(probs_np[rows, picked]), rtol=1e-6)
    counts = np.stack([np.bincount(row, minlength=2) for row in picked])
    np.testing.assert_allclose(probs.grad.asnumpy(), counts / probs_np, rtol=1e-6)
