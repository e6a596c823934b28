"""Issue 21, third pass: InstanceNorm, L2Normalization, SyncBatchNorm, bilinear UpSampling,
linalg.gelqf, contrib.rand_zipfian, the legacy NumpyOp, Pooling 'same' with a pad.

Numerics against Apache MXNet 1.9.1: ``data/norm_more_vectors.npz``, written by
``gen_norm_more_vectors.py`` beside it (forward outputs, input gradients for a
random head gradient, moving statistics after the call).  Gradients also against
central differences; shapes, and errors that name op, parameter and value.
"""

import json
from pathlib import Path

import numpy as np
import pytest

import mxnb as mx
from mxnb.base import NotSupportedError, ParamError, ShapeError
from mxnb.testing import check_numeric_gradient

VECTORS = np.load(Path(__file__).parent / "data" / "norm_more_vectors.npz")
INDEX = json.loads(VECTORS["__index__"].tobytes().decode())


def _function(path):
    target = mx.nd
    for part in path.split("."):
        target = getattr(target, part)
    return target


@pytest.mark.parametrize("name", sorted(INDEX))
def test_matches_mxnet(name):
    case = INDEX[name]
    dtype = case["dtype"]
    stored = {
        key.split("/", 1)[1]: VECTORS[key] for key in VECTORS.files if key.startswith(name + "/")
    }
    inputs = [mx.nd.array(stored[f"in{i}"], dtype=dtype) for i in range(case["inputs"])]
    for i in case["grads"]:
        inputs[i].attach_grad()
    with mx.autograd.record(train_mode=True):
        outputs = _function(case["function"])(*inputs, **case["kwargs"])
        outputs = outputs if isinstance(outputs, (list, tuple)) else [outputs]
        assert len(outputs) == case["outputs"]
        if case["grads"]:
            heads = [mx.nd.array(stored[f"head{i}"], dtype=dtype) for i in range(len(outputs))]
            loss = sum((out * head).sum() for out, head in zip(outputs, heads))
    if case["grads"]:
        loss.backward()
    tolerance = {"rtol": 2e-3, "atol": 2e-3} if dtype == "float16" else {"rtol": 1e-4, "atol": 1e-5}
    for i, out in enumerate(outputs):
        assert out.dtype == np.dtype(dtype)
        np.testing.assert_allclose(out.asnumpy(), stored[f"out{i}"], **tolerance)
    for i in case["grads"]:
        np.testing.assert_allclose(
            inputs[i].grad.asnumpy(), stored[f"grad{i}"], rtol=1e-4, atol=1e-5
        )
    for i in case["mutated"]:
        np.testing.assert_allclose(inputs[i].asnumpy(), stored[f"after{i}"], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize(
    "op, shapes, params",
    [
        ("InstanceNorm", [(2, 3, 4), (3,), (3,)], {"eps": 1e-3}),
        ("L2Normalization", [(2, 3, 4)], {"mode": "instance"}),
        ("L2Normalization", [(2, 3, 2, 2)], {"mode": "channel"}),
        ("L2Normalization", [(2, 3, 2, 2)], {"mode": "spatial"}),
        (
            "UpSampling",
            [(1, 2, 3, 3), (2, 1, 4, 4)],
            {"sample_type": "bilinear", "scale": 2, "num_filter": 2},
        ),
        ("_linalg_gelqf", [(2, 2, 4)], {}),
    ],
)
def test_gradients_match_central_differences(op, shapes, params):
    rng = np.random.default_rng(3)
    location = [
        rng.uniform(0.5, 1.5, size=shape) * rng.choice([-1, 1], size=shape) for shape in shapes
    ]
    check_numeric_gradient(op, location, params=params, numeric_eps=1e-4, rtol=1e-3, atol=1e-5)


def test_shapes_of_the_new_operators():
    data = mx.sym.Variable("data")
    norm = mx.sym.InstanceNorm(data, name="in")
    assert norm.list_arguments() == ["data", "in_gamma", "in_beta"]
    assert norm.infer_shape(data=(2, 3, 4, 5)) == ([(2, 3, 4, 5), (3,), (3,)], [(2, 3, 4, 5)], [])
    l2 = mx.sym.L2Normalization(data, mode="spatial")
    assert l2.infer_shape(data=(2, 3, 4))[1] == [(2, 3, 4)]
    sync = mx.sym.contrib.SyncBatchNorm(data, key="k", name="sbn")
    assert sync.list_auxiliary_states() == ["sbn_moving_mean", "sbn_moving_var"]
    assert sync.infer_shape(data=(4, 3, 2))[2] == [(3,), (3,)]
    up = mx.sym.UpSampling(data, sample_type="bilinear", scale=3, num_filter=3, name="up")
    assert up.list_arguments() == ["data", "up_weight"]
    assert up.infer_shape(data=(2, 3, 4, 5)) == ([(2, 3, 4, 5), (3, 1, 5, 5)], [(2, 3, 12, 15)], [])
    q_l = mx.sym.linalg.gelqf(mx.sym.Variable("a"))
    assert q_l.infer_shape(a=(4, 2, 3))[1] == [(4, 2, 3), (4, 2, 2)]


def test_errors_name_op_parameter_and_value():
    x = mx.nd.ones((2, 3, 4))
    with pytest.raises(ShapeError, match=r"InstanceNorm.*gamma has shape \(4,\).*3 channels"):
        mx.nd.InstanceNorm(x, mx.nd.ones(4), mx.nd.ones(3))
    with pytest.raises(ShapeError, match="InstanceNorm.*at least 3 axes"):
        mx.nd.InstanceNorm(mx.nd.ones((2, 3)), mx.nd.ones(3), mx.nd.ones(3))
    with pytest.raises(ParamError, match="L2Normalization.*mode.*'pixel'"):
        mx.nd.L2Normalization(x, mode="pixel")
    with pytest.raises(ShapeError, match="mode='channel' needs data with at least 3 axes"):
        mx.nd.L2Normalization(mx.nd.ones((2, 3)), mode="channel")
    stats = [mx.nd.ones(3) for _ in range(4)]
    with pytest.raises(NotSupportedError, match="SyncBatchNorm: ndev=2"):
        mx.nd.contrib.SyncBatchNorm(x, *stats, key="k", ndev=2)
    with pytest.raises(ParamError, match="SyncBatchNorm: unknown parameter 'axis'"):
        mx.nd.contrib.SyncBatchNorm(x, *stats, key="k", axis=2)
    with pytest.raises(ParamError, match="SyncBatchNorm: required parameter 'key'"):
        mx.nd.contrib.SyncBatchNorm(x, *stats)
    with pytest.raises(ParamError, match="bilinear' needs num_filter >= 1.*got 0"):
        mx.sym.UpSampling(mx.sym.Variable("d"), sample_type="bilinear", scale=2).infer_shape(
            d=(1, 1, 2, 2)
        )
    with pytest.raises(ShapeError, match=r"gelqf.*\(3, 2\).*no more rows than columns"):
        mx.nd.linalg.gelqf(mx.nd.ones((3, 2)))
    with pytest.raises(
        ParamError, match=r"Pooling: pooling_convention='same'.*pad must be 0, got pad=\(2,\)"
    ):
        mx.nd.Pooling(x, kernel=(2,), stride=(2,), pad=(2,), pooling_convention="same")
    assert mx.nd.Pooling(x, kernel=(2,), stride=(2,), pooling_convention="same").shape == (2, 3, 2)


def test_sync_batch_norm_is_batch_norm_on_one_device_with_variance_as_third_output():
    rng = np.random.default_rng(0)
    x = mx.nd.array(rng.uniform(size=(6, 3, 4)))
    gamma, beta = mx.nd.array([1.0, 2.0, 0.5]), mx.nd.array([0.0, 1.0, -1.0])
    common = {"fix_gamma": False, "output_mean_var": True, "eps": 1e-3}
    with mx.autograd.record():
        sync = mx.nd.contrib.SyncBatchNorm(
            x, gamma, beta, mx.nd.zeros(3), mx.nd.ones(3), key="k", **common
        )
        plain = mx.nd.BatchNorm(x, gamma, beta, mx.nd.zeros(3), mx.nd.ones(3), **common)
    variance = x.asnumpy().var(axis=(0, 2))
    np.testing.assert_allclose(sync[0].asnumpy(), plain[0].asnumpy(), rtol=1e-6)
    np.testing.assert_allclose(sync[2].asnumpy(), variance, rtol=1e-5)
    np.testing.assert_allclose(plain[2].asnumpy(), 1 / np.sqrt(variance + 1e-3), rtol=1e-5)


def test_bilinear_upsampling_of_a_constant_image_is_constant_inside():
    scale = 2
    kernel = 2 * scale - scale % 2
    center = (2 * scale - 1 - scale % 2) / (2.0 * scale)
    taps = 1 - np.abs(np.arange(kernel) / scale - center)
    weight = np.tile(np.outer(taps, taps), (2, 1, 1, 1))
    out = mx.nd.UpSampling(
        mx.nd.ones((1, 2, 4, 4)),
        mx.nd.array(weight),
        sample_type="bilinear",
        scale=scale,
        num_filter=2,
        num_args=2,
    ).asnumpy()
    assert out.shape == (1, 2, 8, 8)
    np.testing.assert_allclose(out[:, :, 1:-1, 1:-1], 1.0, rtol=1e-6)


def test_rand_zipfian_draws_the_log_uniform_law():
    mx.random.seed(4)
    range_max, num_sampled = 10, 20000
    true_classes = mx.nd.array([0, 3, 9]).astype("int32")
    sampled, expected_true, expected_sampled = mx.nd.contrib.rand_zipfian(
        true_classes, num_sampled, range_max
    )
    law = np.log((np.arange(range_max) + 2.0) / (np.arange(range_max) + 1.0)) / np.log(
        range_max + 1
    )
    classes = sampled.asnumpy()
    assert sampled.dtype == np.int64 and expected_true.dtype == np.float64
    assert classes.min() >= 0 and classes.max() < range_max
    frequencies = np.bincount(classes, minlength=range_max) / num_sampled
    np.testing.assert_allclose(frequencies, law, atol=0.01)
    np.testing.assert_allclose(expected_true.asnumpy(), law[[0, 3, 9]] * num_sampled, rtol=1e-12)
    np.testing.assert_allclose(expected_sampled.asnumpy(), law[classes] * num_sampled, rtol=1e-12)
    outputs = mx.sym.Group(mx.sym.contrib.rand_zipfian(mx.sym.var("c"), 50, range_max))
    drawn, true_counts, counts = outputs.bind(mx.cpu(), {"c": true_classes}).forward()
    assert drawn.shape == (50,) and true_counts.shape == (3,)
    np.testing.assert_allclose(counts.asnumpy(), law[drawn.asnumpy()] * 50, rtol=1e-12)


def test_numpy_op_default_is_identity_with_head_gradient():
    x = mx.sym.Variable("X")
    sym = mx.operator.NumpyOp().get_symbol(x, name="numpy_op")
    assert sym.list_arguments() == ["X"]
    grad = mx.nd.zeros(4)
    exe = sym.bind(mx.cpu(), args=[mx.nd.array([1.0, 2.0, 3.0, 4.0])], args_grad={"X": grad})
    exe.forward(is_train=True)
    assert exe.outputs[0].asnumpy().tolist() == [1.0, 2.0, 3.0, 4.0]
    exe.backward(mx.nd.array([0.5, 1.0, 1.5, 2.0]))
    assert grad.asnumpy().tolist() == [0.5, 1.0, 1.5, 2.0]


class _WeightedSum(mx.operator.NumpyOp):
    """out = a * 2 + b summed over the last axis: two inputs, a new output shape."""

    def list_arguments(self):
        return ["a", "b"]

    def infer_shape(self, in_shape):
        return in_shape, [in_shape[0][:-1]]

    def forward(self, in_data, out_data):
        out_data[0][:] = (in_data[0] * 2 + in_data[1]).sum(axis=-1)

    def backward(self, out_grad, in_data, out_data, in_grad):
        in_grad[0][:] = 2 * out_grad[0][..., None]
        in_grad[1][:] = out_grad[0][..., None]


def test_numpy_op_with_two_inputs_runs_in_a_graph_and_its_gradient_checks():
    op = _WeightedSum()
    sym = mx.sym.relu(op(mx.sym.Variable("a"), mx.sym.Variable("b"), name="ws"))
    assert sym.infer_shape(a=(2, 3), b=(2, 3))[1] == [(2,)]
    rng = np.random.default_rng(1)
    check_numeric_gradient(
        sym, [rng.uniform(0.1, 1, (2, 3)), rng.uniform(0.1, 1, (2, 3))], numeric_eps=1e-3
    )
    assert (
        op.get_symbol(mx.sym.Variable("a"), mx.sym.Variable("b"))
        .list_outputs()[0]
        .endswith("_output")
    )


def test_layer_norm_sums_long_columns_without_float32_drift():
    """The gamma gradient of a (4096, 256) float32 input adds 4096 products per element:
    summed one by one in float32 it drifted by 1e-3; MXNet 1.9.1 accumulates wider."""
    rng = np.random.default_rng(5)
    data = rng.normal(size=(4096, 256)).astype(np.float32)
    gamma = rng.normal(size=256).astype(np.float32)
    head = rng.normal(size=(4096, 256)).astype(np.float32)
    x, g = mx.nd.array(data), mx.nd.array(gamma)
    g.attach_grad()
    with mx.autograd.record():
        out = mx.nd.LayerNorm(x, g, mx.nd.zeros(256), axis=-1, eps=1e-2)
    out.backward(mx.nd.array(head))
    wide = data.astype(np.float64)
    xhat = (wide - wide.mean(axis=1, keepdims=True)) / np.sqrt(wide.var(axis=1, keepdims=True) + 1e-2)
    np.testing.assert_allclose(out.asnumpy(), xhat * gamma, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(g.grad.asnumpy(), (head * xhat).sum(axis=0), rtol=1e-5, atol=1e-5)
