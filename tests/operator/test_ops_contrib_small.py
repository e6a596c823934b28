"""Small contrib / index / image operators compared with MXNet 1.9.1 (issue 36).

Specification: ``div_sqrt_dim``, ``quadratic``, ``index_copy``, ``index_array``,
``ravel_multi_index`` / ``unravel_index``, ``quantize`` / ``dequantize``,
``amp_multicast``, ``histogram``, ``image.normalize`` and
``AdaptiveAvgPooling2D`` give MXNet 1.9.1's outputs and input gradients.  The
values are in ``data/contrib_vectors.npz``, written by
``data/gen_contrib_vectors.py`` beside it under MXNet 1.9.1.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import mxnb as mx

V = np.load(Path(__file__).parent / "data" / "contrib_vectors.npz")


def _fwd_bwd(fn, *arrays, head):
    nds = [mx.nd.array(a, dtype=a.dtype) for a in arrays]
    for nd in nds:
        nd.attach_grad()
    with mx.autograd.record():
        y = fn(*nds)
    y.backward(mx.nd.array(head))
    return y.asnumpy(), [nd.grad.asnumpy() for nd in nds]


@pytest.mark.parametrize(
    ("name", "fn"),
    [
        ("div_sqrt_dim", mx.nd.contrib.div_sqrt_dim),
        ("quadratic", lambda t: mx.nd.contrib.quadratic(t, a=0.5, b=-1.5, c=2.0)),
        ("adaptive", lambda t: mx.nd.contrib.AdaptiveAvgPooling2D(t, output_size=(3, 2))),
    ],
)
def test_unary_contrib_ops_forward_and_gradient(name, fn):
    y, (g,) = _fwd_bwd(fn, V[f"{name}_x0"], head=V[f"{name}_head"])
    np.testing.assert_allclose(y, V[f"{name}_y"], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(g, V[f"{name}_g0"], rtol=1e-5, atol=1e-6)


def test_index_copy_values_and_both_gradients():
    old, new = mx.nd.array(V["index_copy_old"]), mx.nd.array(V["index_copy_new"])
    old.attach_grad()
    new.attach_grad()
    with mx.autograd.record():
        y = mx.nd.contrib.index_copy(old, mx.nd.array([0, 4, 2], dtype="int64"), new)
    y.backward(mx.nd.array(V["index_copy_head"]))
    np.testing.assert_array_equal(y.asnumpy(), V["index_copy_y"])
    np.testing.assert_array_equal(old.grad.asnumpy(), V["index_copy_gold"])
    np.testing.assert_array_equal(new.grad.asnumpy(), V["index_copy_gnew"])


def test_ravel_unravel_and_index_array():
    flat = mx.nd.ravel_multi_index(mx.nd.array(V["ravel_coords"]), shape=(3, 4, 5))
    np.testing.assert_array_equal(flat.asnumpy(), V["ravel_flat"])
    back = mx.sym.unravel_index(mx.sym.var("a"), shape=(-1, 4, 5)).eval(a=flat)[0]
    np.testing.assert_array_equal(back.asnumpy(), V["unravel_coords"])
    got = mx.nd.contrib.index_array(mx.nd.ones((2, 3, 4)), axes=(2, 0))
    np.testing.assert_array_equal(got.asnumpy(), V["index_array_axes"])


@pytest.mark.parametrize("kind", ["int8", "uint8"])
def test_quantize_and_dequantize_round_as_mxnet(kind):
    q, lo, hi = mx.nd.contrib.quantize(
        mx.nd.array(V["quantize_a"]), mx.nd.array([0.0]), mx.nd.array([1.0]), out_type=kind
    )
    assert q.dtype == np.dtype(kind)
    np.testing.assert_array_equal(q.asnumpy(), V[f"quantize_{kind}_q"])
    np.testing.assert_allclose([lo.asscalar(), hi.asscalar()], V[f"quantize_{kind}_range"])
    deq = mx.nd.contrib.dequantize(q, lo, hi, out_type="float32")
    np.testing.assert_allclose(deq.asnumpy(), V[f"quantize_{kind}_deq"], rtol=1e-6)


def test_histogram_with_a_count_and_with_edges():
    x = mx.nd.array(V["hist_x"], dtype="float64")
    counts, edges = mx.nd.histogram(x, bins=6, range=(-2.0, 2.0))
    np.testing.assert_array_equal(counts.asnumpy(), V["hist_c1"])
    np.testing.assert_allclose(edges.asnumpy(), V["hist_e1"])
    bins = mx.nd.array([-1.0, 0.0, 0.5, 3.0], dtype="float64")
    counts, edges = mx.nd.histogram(x, bins=bins)
    np.testing.assert_array_equal(counts.asnumpy(), V["hist_c2"])
    with pytest.raises(ValueError, match="range"):
        mx.nd.histogram(x, bins=3)


def test_image_normalize_chw_and_nchw():
    sym = mx.sym.image.normalize(mx.sym.var("data"), mean=(0.1, 0.2, 0.3), std=(0.5, 2.0, 4.0))
    x = V["norm3_x"]
    exe = sym.simple_bind(mx.cpu(), data=x.shape)
    exe.forward(is_train=True, data=x)
    exe.backward(mx.nd.ones(x.shape))
    np.testing.assert_allclose(exe.outputs[0].asnumpy(), V["norm3_y"], rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(exe.grad_dict["data"].asnumpy(), V["norm3_g"], rtol=1e-6)
    y4 = mx.nd.image.normalize(mx.nd.array(V["norm4_x"]), mean=(0.1, 0.2, 0.3), std=(0.5, 2.0, 4.0))
    np.testing.assert_allclose(y4.asnumpy(), V["norm4_y"], rtol=1e-5, atol=1e-7)


def test_amp_multicast_widens_and_make_loss_is_makeloss():
    out = mx.nd.amp_multicast(
        mx.nd.ones((2,), dtype="float16"), mx.nd.ones((2,), dtype="float32"), num_outputs=2
    )
    # MXNet 1.9.1 writes its dtypes as numpy type objects: "<class 'numpy.float32'>"
    assert [f"<class 'numpy.{t.dtype}'>" for t in out] == [str(v) for v in V["multicast_dtypes"]]
    assert mx.sym.make_loss(mx.sym.var("x")).list_arguments() == ["x"]
