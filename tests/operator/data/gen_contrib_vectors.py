"""Write contrib_vectors.npz: MXNet 1.9.1 outputs / gradients for tests/operator/test_ops_contrib_small.py.

Run with a Python that has MXNet 1.9.1 (not mxnb):
    /tmp/mxvenv/bin/python tests/operator/data/gen_contrib_vectors.py
"""

import os

import mxnet as mx
import numpy as np

rng = np.random.RandomState(7)
out = {}


def fwd_bwd(name, fn, *arrays, head=None):
    """Record fn(*arrays) and its input gradients for the head gradient."""
    nds = [mx.nd.array(a, dtype=a.dtype) for a in arrays]
    for nd in nds:
        nd.attach_grad()
    with mx.autograd.record():
        y = fn(*nds)
    g = head if head is not None else np.ones(y.shape, dtype=np.float32)
    y.backward(mx.nd.array(g))
    out[name + "_y"] = y.asnumpy()
    for i, nd in enumerate(nds):
        out[f"{name}_x{i}"] = arrays[i]
        out[f"{name}_g{i}"] = nd.grad.asnumpy()
    out[name + "_head"] = g


x = rng.randn(2, 3, 8).astype(np.float32)
fwd_bwd("div_sqrt_dim", mx.nd.contrib.div_sqrt_dim, x)
fwd_bwd("quadratic", lambda t: mx.nd.contrib.quadratic(t, a=0.5, b=-1.5, c=2.0), x)

old = rng.randn(5, 3).astype(np.float32)
new = rng.randn(3, 3).astype(np.float32)
idx = mx.nd.array([0, 4, 2], dtype="int64")
o, n = mx.nd.array(old), mx.nd.array(new)
o.attach_grad()
n.attach_grad()
with mx.autograd.record():
    y = mx.nd.contrib.index_copy(o, idx, n)
head = rng.randn(5, 3).astype(np.float32)
y.backward(mx.nd.array(head))
out.update(
    index_copy_old=old,
    index_copy_new=new,
    index_copy_head=head,
    index_copy_y=y.asnumpy(),
    index_copy_gold=o.grad.asnumpy(),
    index_copy_gnew=n.grad.asnumpy(),
)

coords = np.array([[0, 2, 1], [3, 1, 0], [4, 0, 2]], dtype=np.float32)
out["ravel_coords"] = coords
out["ravel_flat"] = mx.nd.ravel_multi_index(mx.nd.array(coords), shape=(3, 4, 5)).asnumpy()
out["unravel_coords"] = mx.nd.unravel_index(
    mx.nd.array(out["ravel_flat"]), shape=(-1, 4, 5)
).asnumpy()

a = rng.uniform(0, 1, (3, 4)).astype(np.float32)
for kind in ("int8", "uint8"):
    q, lo, hi = mx.nd.contrib.quantize(
        mx.nd.array(a), mx.nd.array([0.0]), mx.nd.array([1.0]), out_type=kind
    )
    out[f"quantize_{kind}_q"] = q.asnumpy()
    out[f"quantize_{kind}_range"] = np.array([lo.asscalar(), hi.asscalar()], np.float32)
    out[f"quantize_{kind}_deq"] = mx.nd.contrib.dequantize(q, lo, hi, out_type="float32").asnumpy()
out["quantize_a"] = a

h = rng.randn(50).astype(np.float64)
c1, e1 = mx.nd.histogram(mx.nd.array(h, dtype="float64"), bins=6, range=(-2.0, 2.0))
c2, e2 = mx.nd.histogram(
    mx.nd.array(h, dtype="float64"), bins=mx.nd.array([-1.0, 0.0, 0.5, 3.0], dtype="float64")
)
out.update(
    hist_x=h, hist_c1=c1.asnumpy(), hist_e1=e1.asnumpy(), hist_c2=c2.asnumpy(), hist_e2=e2.asnumpy()
)

img3 = rng.uniform(0, 1, (3, 4, 5)).astype(np.float32)
sym = mx.sym.image.normalize(mx.sym.var("data"), mean=(0.1, 0.2, 0.3), std=(0.5, 2.0, 4.0))
exe = sym.simple_bind(mx.cpu(), data=img3.shape)
exe.forward(is_train=True, data=img3)
exe.backward(mx.nd.ones(img3.shape))
out.update(norm3_x=img3, norm3_y=exe.outputs[0].asnumpy(), norm3_g=exe.grad_dict["data"].asnumpy())
img4 = rng.uniform(0, 1, (2, 3, 4, 5)).astype(np.float32)
out["norm4_x"] = img4
out["norm4_y"] = mx.nd.image.normalize(
    mx.nd.array(img4), mean=(0.1, 0.2, 0.3), std=(0.5, 2.0, 4.0)
).asnumpy()

pool_x = rng.randn(2, 2, 7, 5).astype(np.float32)
fwd_bwd(
    "adaptive",
    lambda t: mx.nd.contrib.AdaptiveAvgPooling2D(t, output_size=(3, 2)),
    pool_x,
    head=rng.randn(2, 2, 3, 2).astype(np.float32),
)

out["index_array_axes"] = mx.nd.contrib.index_array(mx.nd.ones((2, 3, 4)), axes=(2, 0)).asnumpy()

m = mx.nd.amp_multicast(
    mx.nd.ones((2,), dtype="float16"), mx.nd.ones((2,), dtype="float32"), num_outputs=2
)
out["multicast_dtypes"] = np.array([str(t.dtype) for t in m])

path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "contrib_vectors.npz")
np.savez(path, **out)
print("wrote", path, len(out), "arrays")
