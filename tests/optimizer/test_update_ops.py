"""The fused update operators equal MXNet 1.9.1's on the same inputs (vectors from real MXNet)."""

import json
import os

import numpy as np
import pytest

import mxnb as mx
from mxnb.executor import allocation_peak
from mxnb.operator import eager, split
from mxnb.operator.base import OpReqType
from mxnb.testing.fake_cupy import fake_virtual_gpus

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


@pytest.mark.parametrize("clip", [-1.0, 0.05])
@pytest.mark.parametrize("into", ["weight", "other"])
def test_ftrl_update_is_mxnets_formula_bit_for_bit(clip, into):
    """FTRL's fused statements compute MXNet's kernel in float32, the same operations in order:
    ``z += g - (sqrt(n + g * g) - sqrt(n)) * w / lr; n += g * g;
    w = (sign(z) * lamda1 - z) / ((beta + sqrt(n)) / lr + wd) * (|z| > lamda1)``, with ``|z|``
    below, at and above ``lamda1``, and ``z`` of -0.0."""
    rng = np.random.default_rng(11)
    shape = (41, 23)
    w, g = (rng.standard_normal(shape).astype(np.float32) for _ in range(2))
    z = (0.1 * rng.standard_normal(shape)).astype(np.float32)
    n = np.abs(rng.standard_normal(shape)).astype(np.float32)
    f32 = np.float32
    lr, lamda1, beta, wd, rescale = f32(0.1), f32(0.05), f32(1.0), f32(0.01), f32(0.5)
    scaled = rescale * g
    if clip >= 0:
        scaled = np.clip(scaled, -f32(clip), f32(clip))
    # entries whose new z is exactly +-lamda1 or -0.0: the comparison's edge and the sign's
    w[0, :3], scaled[0, :3], n[0, :3] = 0, 0, 0
    z[0, :3] = (lamda1, -lamda1, f32(-0.0))
    g[0, :3] = 0
    z_expected = z + scaled - (np.sqrt(n + scaled * scaled) - np.sqrt(n)) * w / lr
    n_expected = n + scaled * scaled
    w_expected = (
        (np.sign(z_expected) * lamda1 - z_expected)
        / ((beta + np.sqrt(n_expected)) / lr + wd)
        * (np.abs(z_expected) > lamda1).astype(np.float32)
    )
    assert list(z_expected[0, :3]) == [lamda1, -lamda1, 0] and not w_expected[0, :3].any()
    weight, z_nd, n_nd = mx.nd.array(w), mx.nd.array(z), mx.nd.array(n)
    out = weight if into == "weight" else mx.nd.zeros(shape)
    mx.nd.ftrl_update(weight, mx.nd.array(g), z_nd, n_nd, lr=0.1, lamda1=0.05, beta=1.0,
                      wd=0.01, rescale_grad=0.5, clip_gradient=clip, out=out)  # fmt: skip
    np.testing.assert_array_equal(z_nd.asnumpy(), z_expected)
    np.testing.assert_array_equal(n_nd.asnumpy(), n_expected)
    np.testing.assert_array_equal(out.asnumpy(), w_expected)
    assert (np.signbit(out.asnumpy()) == np.signbit(w_expected)).all()  # zeros signed alike


# The updates written as one fused map, with their states and the options that change the map.
FUSED = {
    "sgd_update": ([], {}),
    "sgd_mom_update": (["mom"], {"momentum": 0.9}),
    "adam_update": (["mean", "var"], {"beta1": 0.9, "beta2": 0.99, "epsilon": 1e-6}),
    "rmsprop_update": (["n"], {"gamma1": 0.9, "epsilon": 1e-6, "clip_weights": 0.5}),
    "rmspropalex_update": (["n", "g", "delta"], {"gamma1": 0.9, "gamma2": 0.8, "epsilon": 1.0}),
    "nag_mom_update": (["mom"], {"momentum": 0.9}),
    "signsgd_update": ([], {}),
    "signum_update": (["mom"], {"momentum": 0.9, "wd_lh": 1e-3}),
    "ftrl_update": (["z", "n"], {"lamda1": 0.05, "beta": 1.0}),
}


def _states(rng, op, shape):
    """Starting states: positive ones, and centred RMSProp's mean gradient ``g`` and FTRL's
    ``z`` small (``n - g * g`` stays positive; ``|z|`` falls on both sides of ``lamda1``)."""
    return [
        (
            0.1 * rng.standard_normal(shape)
            if name in ("g", "z")
            else 1 + np.abs(rng.standard_normal(shape))
        ).astype("float32")
        for name in FUSED[op][0]
    ]


def _update(ctx, op, shape, clip, steps=1, seed=3):
    """``steps`` calls of ``op`` with ``out=weight`` on ``ctx``: the weight and states after."""
    states, params = FUSED[op]
    rng = np.random.default_rng(seed)
    weight = mx.nd.array(rng.standard_normal(shape).astype("float32"), ctx=ctx)
    grad = mx.nd.array(rng.standard_normal(shape).astype("float32"), ctx=ctx)
    arrays = [mx.nd.array(value, ctx=ctx) for value in _states(rng, op, shape)]
    for _ in range(steps):
        getattr(mx.nd, op)(weight, grad, *arrays, out=weight, lr=0.05, wd=1e-3,
                           rescale_grad=0.5, clip_gradient=clip, **params)  # fmt: skip
    return [weight.asnumpy(), *(array.asnumpy() for array in arrays)]


@pytest.mark.parametrize("clip", [-1.0, 0.1])
@pytest.mark.parametrize("op", sorted(FUSED))
def test_a_fused_update_is_one_kernel_on_a_gpu_and_agrees_with_the_cpu(op, clip):
    """On a GPU (FakeCupy behind a virtual GPU: the CUDA C text read back and run) an update is
    ONE kernel launch once its first call has checked the kernel, with the clipping options'
    ``clip`` from the preamble; the weight and states equal the CPU's bit for bit."""
    expected = _update(mx.cpu(0), op, (6, 7), clip, steps=2)
    with fake_virtual_gpus() as xp:
        _update(mx.gpu(0), op, (6, 7), clip)  # the first call for float32 verifies the kernel
        launches = xp.launches
        got = _update(mx.gpu(0), op, (6, 7), clip, steps=2)
        launches = xp.launches - launches
    for mine, theirs in zip(got, expected):
        np.testing.assert_array_equal(mine, theirs)
    assert launches == 2


@pytest.mark.parametrize("op", sorted(FUSED))
def test_a_fused_update_allocates_blocks_not_weights(monkeypatch, op):
    """With 2 op threads, a large update allocates at most four blocks of floats a thread
    beside its arrays, at 1 and at 4 times the weight: the array expressions made 2-4
    temporaries of the weight's size (16-32 MiB at 1x)."""
    monkeypatch.setenv("MXNB_OP_THREADS", "2")
    bound = 2 * 4 * split.BLOCK_ELEMENTS * 4 + (64 << 10)
    params = dict(FUSED[op][1], lr=0.05, wd=1e-3, clip_gradient=0.1)
    rng = np.random.default_rng(5)
    for rows in (2048, 8192):
        weight, grad = (rng.standard_normal((rows, 1024)).astype("float32") for _ in range(2))
        arrays = _states(rng, op, weight.shape)
        _, _, state = eager.run_forward(op, [weight, grad], params, aux=arrays)
        write = [OpReqType.WRITE_INPLACE]
        peak = allocation_peak(
            lambda: state.operator.forward(state.ctx, [weight, grad], write, [weight], arrays)
        )
        assert peak <= bound, (rows, peak)
    assert weight.nbytes >= 2 * bound  # at 4x, one temporary of the weight's size would show


@pytest.mark.parametrize("into", ["weight", "other"])
def test_nag_reads_the_new_weight_only_when_the_output_is_the_weight(into):
    """MXNet's NAG kernel reads the weight after writing it: with ``out=weight`` the momentum
    decays with the NEW weight, into another output with the old one.  Each case is its own
    fused map, and the GPU's kernel (FakeCupy) gives the CPU's bits in both."""
    rng = np.random.default_rng(2)
    w, g, m = (rng.standard_normal((4, 6)).astype("float32") for _ in range(3))
    results = []
    with fake_virtual_gpus():
        for ctx in (mx.cpu(0), mx.gpu(0), mx.gpu(0)):  # the GPU's first call checks the kernel
            weight, grad, mom = (mx.nd.array(a, ctx=ctx) for a in (w, g, m))
            out = weight if into == "weight" else mx.nd.zeros(w.shape, ctx=ctx)
            mx.nd.nag_mom_update(weight, grad, mom, lr=0.1, wd=0.01, momentum=0.9, out=out)
            results.append((out.asnumpy(), mom.asnumpy()))
    f32 = np.float32
    lr, wd, momentum = f32(0.1), f32(0.01), f32(0.9)
    scaled = momentum * m
    new_weight = w - scaled + (momentum + 1) * (scaled - lr * (g + wd * w))
    decayed = new_weight if into == "weight" else w
    expected = (new_weight, scaled - lr * (g + wd * decayed))
    for got in results:
        for mine, theirs in zip(got, expected):
            np.testing.assert_array_equal(mine, theirs)


def test_an_update_with_a_new_learning_rate_launches_one_kernel_and_copies_nothing():
    """Adam's learning rate, and so its property, changes every step: the scalars are numpy
    scalars a kernel takes by value, so each step is one launch and no call of the array module
    (made with it on a GPU, each scalar was a copy to the device: 7 a step)."""
    with fake_virtual_gpus() as xp:
        ctx = mx.gpu(0)
        weight, grad, mean, var = (mx.nd.ones((4, 5), ctx=ctx) for _ in range(4))
        for step in range(1, 5):
            launches, calls = xp.launches, xp.calls
            mx.nd.adam_update(weight, grad, mean, var, lr=0.01 / step, wd=1e-4, out=weight)
            weight.wait_to_read()
            if step > 1:  # the first call compiles and checks the kernel
                assert (xp.launches - launches, xp.calls - calls) == (1, 0)
