"""Write linalg_more_vectors.npz: MXNet 1.9.1 values for tests/operator/test_ops_linalg_more.py.

Run with a Python that has MXNet 1.9.1 (not mxnb):
    /tmp/mxvenv/bin/python tests/operator/data/gen_linalg_more_vectors.py
"""

import os

import mxnet as mx
import numpy as np

rng = np.random.RandomState(3)
out = {}


def record(name, fn, arrays, head):
    nds = [mx.nd.array(a, dtype="float64") for a in arrays]
    for nd in nds:
        nd.attach_grad()
    with mx.autograd.record():
        y = fn(*nds)
    y.backward(mx.nd.array(head, dtype="float64"))
    out[name + "_y"] = y.asnumpy()
    out[name + "_head"] = head
    for i, (a, nd) in enumerate(zip(arrays, nds)):
        out[f"{name}_x{i}"] = a
        out[f"{name}_g{i}"] = nd.grad.asnumpy()


a, b = rng.randn(3, 2, 4), rng.randn(3, 4, 5)
c = rng.randn(3, 2, 5)
record(
    "gemm",
    lambda x, y, z: mx.nd.linalg.gemm(x, y, z, alpha=1.5, beta=-0.5),
    [a, b, c],
    rng.randn(3, 2, 5),
)
at, bt = np.swapaxes(a, 1, 2).copy(), np.swapaxes(b, 1, 2).copy()
record(
    "gemm2_t",
    lambda x, y: mx.nd.linalg.gemm2(x, y, alpha=2.0, transpose_a=True, transpose_b=True),
    [at, bt],
    rng.randn(3, 2, 5),
)
a0, b0 = np.swapaxes(a, 0, 1).copy(), np.swapaxes(b, 0, 1).copy()  # rows on axis 0
record("gemm2_axis0", lambda x, y: mx.nd.linalg.gemm2(x, y, axis=0), [a0, b0], rng.randn(2, 3, 5))
m = rng.randn(2, 3, 3) + 3 * np.eye(3)
record("inverse", mx.nd.linalg.inverse, [m], rng.randn(2, 3, 3))
sq = rng.randn(2, 4, 4)
record("extractdiag", lambda x: mx.nd.linalg.extractdiag(x, offset=-1), [sq], rng.randn(2, 3))
record(
    "makediag", lambda x: mx.nd.linalg.makediag(x, offset=2), [rng.randn(2, 3)], rng.randn(2, 5, 5)
)
for k, low in [(0, True), (0, False), (-1, True), (2, True)]:
    tag = f"trian_{k}_{int(low)}"
    ext = mx.nd.linalg.extracttrian(mx.nd.array(sq, dtype="float64"), offset=k, lower=low)
    out[tag + "_packed"] = ext.asnumpy()
    out[tag + "_made"] = mx.nd.linalg.maketrian(ext, offset=k, lower=low).asnumpy()
out["trian_x"] = sq
record(
    "trmm",
    lambda x, y: mx.nd.linalg.trmm(x, y, transpose=True, rightside=True, lower=False, alpha=1.5),
    [rng.randn(2, 3, 3), rng.randn(2, 4, 3)],
    rng.randn(2, 4, 3),
)
record(
    "syrk",
    lambda x: mx.nd.linalg.syrk(x, transpose=True, alpha=0.5),
    [rng.randn(2, 3, 4)],
    rng.randn(2, 4, 4),
)
sym_in = rng.randn(2, 4, 4)
sym_in = sym_in + np.swapaxes(sym_in, 1, 2)
u, lam = mx.nd.linalg.syevd(mx.nd.array(sym_in, dtype="float64"))
out.update(syevd_x=sym_in, syevd_u=u.asnumpy(), syevd_l=lam.asnumpy())
x = mx.nd.array(sym_in, dtype="float64")
x.attach_grad()
gu, gl = rng.randn(2, 4, 4), rng.randn(2, 4)
with mx.autograd.record():
    u, lam = mx.nd.linalg.syevd(x)
mx.autograd.backward([u, lam], [mx.nd.array(gu, dtype="float64"), mx.nd.array(gl, dtype="float64")])
out.update(syevd_gu=gu, syevd_gl=gl, syevd_ga=x.grad.asnumpy())

path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "linalg_more_vectors.npz")
np.savez(path, **out)
print("wrote", path, len(out), "arrays")
