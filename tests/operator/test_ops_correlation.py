"""Correlation, GridGenerator and ROIPooling against MXNet 1.9.1 (issue 36).

Specification: ``mx.nd.Correlation`` gives MXNet 1.9.1's outputs and both input
gradients, for the product and the absolute-difference forms with padding and
strides (values in ``data/correlation_vectors.npz``, written by
``data/gen_correlation_vectors.py``); an even kernel, or a grid that does not
fit the input, is refused when the shape is inferred.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import mxnb as mx

V = np.load(Path(__file__).parent / "data" / "correlation_vectors.npz")
CASES = {
    "mul": dict(
        kernel_size=3, max_displacement=2, stride1=1, stride2=1, pad_size=2, is_multiply=True
    ),
    "abs": dict(
        kernel_size=1, max_displacement=2, stride1=2, stride2=2, pad_size=2, is_multiply=False
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_output_and_gradients_equal_mxnet(name):
    x1, x2 = mx.nd.array(V[f"{name}_a"]), mx.nd.array(V[f"{name}_b"])
    x1.attach_grad()
    x2.attach_grad()
    with mx.autograd.record():
        y = mx.nd.Correlation(x1, x2, **CASES[name])
    y.backward(mx.nd.array(V[f"{name}_head"]))
    np.testing.assert_allclose(y.asnumpy(), V[f"{name}_y"], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(x1.grad.asnumpy(), V[f"{name}_ga"], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(x2.grad.asnumpy(), V[f"{name}_gb"], rtol=1e-5, atol=1e-6)


def test_kernel_that_does_not_fit_is_refused():
    a = mx.nd.ones((1, 1, 28, 28))
    with pytest.raises(mx.MXNetError, match="must be odd"):
        mx.nd.Correlation(a, a, kernel_size=28)
    with pytest.raises(mx.MXNetError, match="do not fit"):
        mx.nd.Correlation(a, a, kernel_size=29)
    assert mx.nd.Correlation(a, a, kernel_size=9).shape == (1, 9, 18, 18)


@pytest.mark.parametrize(("kind", "params"), [("affine", {"target_shape": (4, 5)}), ("warp", {})])
def test_grid_generator_equals_mxnet(kind, params):
    x = mx.nd.array(V[f"grid_{kind}_x"])
    x.attach_grad()
    with mx.autograd.record():
        y = mx.nd.GridGenerator(x, transform_type=kind, **params)
    y.backward(mx.nd.array(V[f"grid_{kind}_head"]))
    np.testing.assert_allclose(y.asnumpy(), V[f"grid_{kind}_y"], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(x.grad.asnumpy(), V[f"grid_{kind}_g"], rtol=1e-5, atol=1e-5)


def test_roi_pooling_equals_mxnet():
    x = mx.nd.array(V["roi_x"])
    x.attach_grad()
    with mx.autograd.record():
        y = mx.nd.ROIPooling(x, mx.nd.array(V["roi_rois"]), pooled_size=(2, 3), spatial_scale=0.9)
    y.backward(mx.nd.array(V["roi_head"]))
    np.testing.assert_allclose(y.asnumpy(), V["roi_y"], rtol=1e-6)
    np.testing.assert_allclose(x.grad.asnumpy(), V["roi_g"], rtol=1e-5, atol=1e-6)


def test_numeric_gradient_skips_null_nodes_as_mxnet():
    data, rois = mx.sym.var("data"), mx.sym.var("rois")
    sym = mx.sym.ROIPooling(data=data, rois=rois, pooled_size=(2, 2), spatial_scale=1.0)
    location = [np.random.rand(1, 1, 5, 5), np.array([[0, 0.0, 0.0, 3.2, 3.2]])]
    # the corners move the bins: central differences in 'rois' are huge, MXNet does not take them
    mx.test_utils.check_numeric_gradient(
        sym, location, grad_nodes={"data": "write", "rois": "null"}
    )
