"""Activations, BatchNorm, Dropout, softmax and the loss layers."""

from __future__ import annotations

import numpy as np
import pytest

from mxnb.base import ShapeError
from mxnb.operator import ResourceRequest, eager, registry


def _rand(*shape, seed=0):
    x = np.random.default_rng(seed).standard_normal(shape)
    return np.where(np.abs(x) < 0.05, 0.1, x)  # keep away from kinks at 0


@pytest.mark.parametrize("act_type", ["relu", "sigmoid", "tanh", "softrelu", "softsign"])
def test_activation_gradient_and_dependency(act_type):
    eager.numeric_gradient_check("Activation", [_rand(3, 4)], {"act_type": act_type})
    prop = registry.get("Activation").create_property(act_type=act_type)
    uses = ["dy", "x"] if act_type == "softsign" else ["dy", "y"]
    assert prop.declare_backward_dependency(["dy"], ["x"], ["y"]) == uses
    assert prop.forward_inplace_option(["x"], ["y"]) == [("x", "y")]


@pytest.mark.parametrize("act_type", ["leaky", "elu", "selu", "gelu", "prelu", "rrelu"])
def test_leaky_relu_family_gradients(act_type):
    inputs = [_rand(2, 3, 4)]
    if act_type == "prelu":
        inputs.append(np.array([0.1, 0.2, 0.3]))
    eager.numeric_gradient_check(
        "LeakyReLU", inputs, {"act_type": act_type, "slope": 0.2}, is_train=act_type == "rrelu"
    )


def test_gelu_matches_the_erf_definition():
    import math

    x = np.linspace(-3, 3, 13)
    out = eager.run_forward("LeakyReLU", [x], {"act_type": "gelu"})[0][0]
    expected = [0.5 * v * (1 + math.erf(v / math.sqrt(2))) for v in x]
    np.testing.assert_allclose(out, expected, atol=1e-6)


@pytest.mark.parametrize("fix_gamma", [False, True])
@pytest.mark.parametrize("shape", [(4, 3, 2, 2), (5, 3)])
def test_batchnorm_training_gradient_and_moving_stats(fix_gamma, shape):
    x = _rand(*shape)
    gamma, beta = np.array([0.5, 1.5, -1.0]), np.array([0.1, 0.2, 0.3])
    aux = [np.zeros(3), np.ones(3)]
    params = {"fix_gamma": fix_gamma}
    _, aux_out, _ = eager.run_forward("BatchNorm", [x, gamma, beta], params, aux=aux, is_train=True)
    axes = tuple(i for i in range(x.ndim) if i != 1)
    np.testing.assert_allclose(aux_out[0], 0.1 * x.mean(axis=axes))
    np.testing.assert_allclose(aux_out[1], 0.9 + 0.1 * x.var(axis=axes))
    assert aux[0].tolist() == [0, 0, 0], "the caller's aux arrays are not modified by eager"
    eager.numeric_gradient_check("BatchNorm", [x, gamma, beta], params, aux=aux, is_train=True)


def test_batchnorm_global_stats_and_axis():
    x = _rand(2, 3, 4)
    aux = [np.array([0.1, 0.2, 0.3, 0.4]), np.array([1.0, 2.0, 0.5, 1.5])]
    params = {"axis": -1, "use_global_stats": True, "fix_gamma": False}
    gamma, beta = np.ones(4) * 2, np.zeros(4)
    out, aux_out, _ = eager.run_forward(
        "BatchNorm", [x, gamma, beta], params, aux=aux, is_train=True
    )
    np.testing.assert_allclose(out[0], 2 * (x - aux[0]) / np.sqrt(aux[1] + 1e-3))
    np.testing.assert_allclose(aux_out[0], aux[0])
    eager.numeric_gradient_check("BatchNorm", [x, gamma, beta], params, aux=aux, is_train=True)


def test_batchnorm_declares_mean_var_not_output_and_fills_shapes():
    prop = registry.get("BatchNorm").create_property()
    assert prop.list_outputs() == ["output", "mean", "var"] and prop.num_visible_outputs() == 1
    assert prop.declare_backward_dependency(
        ["dy", "dm", "dv"], ["x", "g", "b"], ["y", "m", "v"]
    ) == ["dy", "x", "g", "m", "v"]
    assert prop.infer_shape([(8, 5, 3, 3), None, None]) == (
        [(8, 5, 3, 3), (5,), (5,)],
        [(8, 5, 3, 3), (5,), (5,)],
        [(5,), (5,)],
    )
    with pytest.raises(ShapeError, match="gamma has shape"):
        prop.infer_shape([(8, 5, 3, 3), (4,), None])


def test_dropout_training_mask_and_inference_identity():
    prop = registry.get("Dropout").create_property(p=0.25)
    assert prop.forward_resource([(10,)]) == [ResourceRequest.RANDOM]
    assert prop.declare_backward_dependency(["dy", "dm"], ["x"], ["y", "mask"]) == ["dy", "mask"]
    x = np.ones((200, 50))
    (out, mask), _, state = eager.run_forward("Dropout", [x], {"p": 0.25}, is_train=True)
    kept = out != 0
    assert abs(kept.mean() - 0.75) < 0.02
    np.testing.assert_allclose(out[kept], 1 / 0.75)
    grads = eager.run_backward(state, [np.ones_like(x)])
    np.testing.assert_array_equal(grads[0], mask)
    (out, _), _, _ = eager.run_forward("Dropout", [x], {"p": 0.25}, is_train=False)
    np.testing.assert_array_equal(out, x)
    (shared, _), _, _ = eager.run_forward(
        "Dropout", [np.ones((4, 30))], {"p": 0.5, "axes": (0,)}, is_train=True
    )
    assert (shared == shared[:1]).all(), "axes=(0,) shares one mask value down axis 0"
    eager.numeric_gradient_check("Dropout", [_rand(3, 4)], {"p": 0.5}, is_train=True)


@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
@pytest.mark.parametrize("params", [{}, {"axis": 0}, {"axis": 1, "temperature": 2.0}])
def test_softmax_family_gradient(name, params):
    eager.numeric_gradient_check(name, [_rand(3, 4, 2)], params)


def _softmax(x):
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def test_softmax_output_gradient_ignores_head_and_normalizes():
    x = _rand(4, 3)
    label = np.array([0.0, 2.0, 1.0, 2.0])
    onehot = np.eye(3)[label.astype(int)]
    for params, scale, rows in [
        ({}, 1.0, [1, 1, 1, 1]),
        ({"normalization": "batch", "grad_scale": 2.0}, 2.0 / 4, [1, 1, 1, 1]),
        ({"normalization": "valid", "use_ignore": True, "ignore_label": 2}, 1.0 / 2, [1, 0, 1, 0]),
    ]:
        _outs, _, state = eager.run_forward("SoftmaxOutput", [x, label], params)
        grads = eager.run_backward(state, [np.full((4, 3), 123.0)])
        expected = (_softmax(x) - onehot) * scale * np.array(rows)[:, None]
        np.testing.assert_allclose(grads[0], expected)
    prop = registry.get("SoftmaxOutput").create_property()
    assert prop.declare_backward_dependency(["dy"], ["x", "label"], ["y"]) == ["label", "y"]
    assert prop.infer_shape([(4, 3), None]) == ([(4, 3), (4,)], [(4, 3)], [])


def test_softmax_output_multi_output_and_preserve_shape():
    x = _rand(2, 3, 4)
    label = np.array([[0, 1, 2, 0], [2, 2, 1, 0]], dtype=float)
    outs, _, state = eager.run_forward("SoftmaxOutput", [x, label], {"multi_output": True})
    np.testing.assert_allclose(outs[0].sum(axis=1), 1.0)
    grads = eager.run_backward(state, [None])
    np.testing.assert_allclose(grads[0].sum(axis=1), 0.0, atol=1e-12)
    outs, _, _ = eager.run_forward("SoftmaxOutput", [x, np.zeros((2, 3))], {"preserve_shape": True})
    np.testing.assert_allclose(outs[0].sum(axis=-1), 1.0)


def test_regression_outputs_and_make_loss():
    x, label = _rand(4, 2), _rand(4, 2, seed=1)
    for name, forward, grad in [
        ("LinearRegressionOutput", x, (x - label) / 2),
        ("MAERegressionOutput", x, np.sign(x - label) / 2),
        ("LogisticRegressionOutput", 1 / (1 + np.exp(-x)), (1 / (1 + np.exp(-x)) - label) / 2),
    ]:
        outs, grads = eager.run(name, [x, label], head_grads=[np.full((4, 2), 7.0)])
        np.testing.assert_allclose(outs[0], forward)
        np.testing.assert_allclose(grads[0], grad)
    _, grads = eager.run(
        "MakeLoss", [x], {"grad_scale": 3, "normalization": "batch"}, head_grads=[x]
    )
    np.testing.assert_allclose(grads[0], 0.75)
