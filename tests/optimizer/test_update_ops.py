"""The fused update operators equal MXNet 1.9.1's on the same inputs (vectors from real MXNet)."""

import json
import os

import numpy as np
import pytest

import mxnb as mx

DATA = os.path.join(os.path.dirname(__file__), "data", "optimizer_vectors.json")
with open(DATA) as handle:
    VECTORS = json.load(handle)


@pytest.mark.parametrize("case", VECTORS["ops"], ids=lambda case: case["op"])
def test_update_op_matches_mxnet(case):
    """Three calls with ``out=weight`` rewrite weight and states as MXNet's kernel does."""
    weight = mx.nd.array(np.array(case["weight"], dtype="float32"))
    states = [mx.nd.array(np.array(value, dtype="float32")) for value in case["states"].values()]
    op = getattr(mx.nd, case["op"])
    for grad in case["grads"]:
        result = op(
            weight,
            mx.nd.array(np.array(grad, dtype="float32")),
            *states,
            out=weight,
            **case["params"],
        )
        assert result is weight
    np.testing.assert_allclose(weight.asnumpy(), case["out_weight"], rtol=1e-5, atol=1e-6)
    for state, expected in zip(states, case["out_states"].values()):
        np.testing.assert_allclose(state.asnumpy(), expected, rtol=1e-5, atol=1e-6)


def test_update_op_is_one_engine_op_ordered_after_readers():
    """An update is pushed as one op that writes the weight and its state."""
    weight = mx.nd.ones((2, 2))
    mom = mx.nd.zeros((2, 2))
    reader = weight * 2
    mx.nd.sgd_mom_update(weight, mx.nd.ones((2, 2)), mom, lr=0.5, momentum=0.9, out=weight)
    assert reader.asnumpy().tolist() == [[2.0, 2.0], [2.0, 2.0]]
    assert weight.asnumpy().tolist() == [[0.5, 0.5], [0.5, 0.5]]
    assert mom.asnumpy().tolist() == [[-0.5, -0.5], [-0.5, -0.5]]


def test_update_op_state_shape_mismatch_raises():
    """A state whose shape differs from the weight's is refused naming the op."""
    with pytest.raises(mx.MXNBError, match="sgd_mom_update"):
        mx.nd.sgd_mom_update(mx.nd.ones(3), mx.nd.ones(3), mx.nd.zeros(4), lr=0.1)


@pytest.mark.parametrize("clip", [-1.0, 0.05])
@pytest.mark.parametrize("into", ["weight", "other"])
def test_sgd_mom_update_is_the_formula_bit_for_bit(clip, into):
    """The in-place kernel computes MXNet's formula in float32, the same operations in order.

    ``mom = momentum * mom - lr * wd * weight - lr * clip(rescale_grad * grad);
    out = weight + mom``, every scalar rounded to float32 first.
    """
    rng = np.random.default_rng(7)
    w, g, m = (rng.standard_normal((37, 29)).astype(np.float32) for _ in range(3))
    f32 = np.float32
    lr, momentum, wd, rescale = f32(0.05), f32(0.9), f32(1e-4), f32(1 / 256)
    scaled = rescale * g
    if clip >= 0:
        scaled = np.clip(scaled, -f32(clip), f32(clip))
    mom_expected = momentum * m - lr * wd * w - lr * scaled
    out_expected = w + mom_expected
    weight, mom = mx.nd.array(w), mx.nd.array(m)
    out = weight if into == "weight" else mx.nd.zeros(w.shape)
    mx.nd.sgd_mom_update(
        weight,
        mx.nd.array(g),
        mom,
        lr=0.05,
        momentum=0.9,
        wd=1e-4,
        rescale_grad=1 / 256,
        clip_gradient=clip,
        out=out,
    )
    np.testing.assert_array_equal(mom.asnumpy(), mom_expected)
    np.testing.assert_array_equal(out.asnumpy(), out_expected)
    if into == "other":
        np.testing.assert_array_equal(weight.asnumpy(), w)  # the input weight is untouched
