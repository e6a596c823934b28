"""gemm / gemm2 / inverse / syrk / syevd / trmm / the diagonal and triangle packers vs MXNet 1.9.1.

Specification: ``mx.nd.linalg.gemm``, ``gemm2`` (transposes, ``axis`` of the
rows), ``inverse``, ``extractdiag`` / ``makediag`` and ``extracttrian`` /
``maketrian`` give MXNet 1.9.1's outputs and input gradients (float64), from
``data/linalg_more_vectors.npz`` written by ``data/gen_linalg_more_vectors.py``;
``check_numeric_gradient`` leaves the caller's arrays alone, even one array
given for two inputs or a read-only view.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import mxnb as mx
from mxnb.test_utils import check_numeric_gradient

V = np.load(Path(__file__).parent / "data" / "linalg_more_vectors.npz")

CASES = {
    "gemm": lambda x, y, z: mx.nd.linalg.gemm(x, y, z, alpha=1.5, beta=-0.5),
    "gemm2_t": lambda x, y: mx.nd.linalg.gemm2(x, y, alpha=2.0, transpose_a=True, transpose_b=True),
    "gemm2_axis0": lambda x, y: mx.nd.linalg.gemm2(x, y, axis=0),
    "inverse": mx.nd.linalg.inverse,
    "extractdiag": lambda x: mx.nd.linalg.extractdiag(x, offset=-1),
    "makediag": lambda x: mx.nd.linalg.makediag(x, offset=2),
    "syrk": lambda x: mx.nd.linalg.syrk(x, transpose=True, alpha=0.5),
    "trmm": lambda x, y: mx.nd.linalg.trmm(
        x, y, transpose=True, rightside=True, lower=False, alpha=1.5
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_output_and_gradients_equal_mxnet(name):
    count = sum(1 for key in V.files if key.startswith(f"{name}_x"))
    nds = [mx.nd.array(V[f"{name}_x{i}"], dtype="float64") for i in range(count)]
    for nd in nds:
        nd.attach_grad()
    with mx.autograd.record():
        y = CASES[name](*nds)
    y.backward(mx.nd.array(V[f"{name}_head"], dtype="float64"))
    np.testing.assert_allclose(y.asnumpy(), V[f"{name}_y"], rtol=1e-10, atol=1e-12)
    for i, nd in enumerate(nds):
        np.testing.assert_allclose(nd.grad.asnumpy(), V[f"{name}_g{i}"], rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize(("offset", "lower"), [(0, True), (0, False), (-1, True), (2, True)])
def test_triangle_pack_order_and_round_trip(offset, lower):
    tag = f"trian_{offset}_{int(lower)}"
    packed = mx.nd.linalg.extracttrian(mx.nd.array(V["trian_x"], dtype="float64"), offset=offset,
                                       lower=lower)  # fmt: skip
    np.testing.assert_array_equal(packed.asnumpy(), V[tag + "_packed"])
    made = mx.nd.linalg.maketrian(packed, offset=offset, lower=lower)
    np.testing.assert_array_equal(made.asnumpy(), V[tag + "_made"])


def test_numeric_gradient_copies_its_inputs():
    d1, d2 = mx.sym.var("data1"), mx.sym.var("data2")
    a = np.random.uniform(1, 2, (2, 3))
    before = a.copy()
    # the same array for both inputs: each input must move alone
    check_numeric_gradient(mx.sym.linalg.gemm2(d1, d2, transpose_b=True), [a, a],
                           numeric_eps=1e-6, rtol=1e-5, atol=1e-6, dtype=np.float64)  # fmt: skip
    np.testing.assert_array_equal(a, before)
    diag = np.diagonal(np.random.uniform(1, 2, (3, 3)))  # a read-only view
    check_numeric_gradient(mx.sym.linalg.makediag(d1), [diag], dtype=np.float64)


def test_syevd_signs_values_and_gradient_equal_mxnet():
    x = mx.nd.array(V["syevd_x"], dtype="float64")
    x.attach_grad()
    with mx.autograd.record():
        u, lam = mx.nd.linalg.syevd(x)
    np.testing.assert_allclose(u.asnumpy(), V["syevd_u"], rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(lam.asnumpy(), V["syevd_l"], rtol=1e-8, atol=1e-10)
    heads = [
        mx.nd.array(V["syevd_gu"], dtype="float64"),
        mx.nd.array(V["syevd_gl"], dtype="float64"),
    ]
    mx.autograd.backward([u, lam], heads)
    np.testing.assert_allclose(x.grad.asnumpy(), V["syevd_ga"], rtol=1e-7, atol=1e-9)
