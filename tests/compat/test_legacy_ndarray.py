"""MXNet 1.x NDArray behaviour that MXNet's own test_ndarray.py relies on.

Specification (issue 21, "what MXNet's own unit tests need"): pickling,
reshape's special codes on the NDArray method, ``bool`` of an empty array,
``x[key]`` recorded for autograd for every numpy key, ``x[key] = y`` refused
while recording when ``y`` is in the graph, ``ones`` / ``zeros`` with ``out=``,
``eye(N, M, k)``, ``onehot_encode``, the ``_crop_assign`` / ``fill_element_0index``
/ ``choose_element_0index`` operators, ``mx.nd.contrib.isinf / isfinite / isnan``
and ``mx.test_utils.random_sample``.
"""

from __future__ import annotations

import pickle

import numpy as np
import pytest

import mxnb as mx


def test_pickle_keeps_values_dtype_and_context():
    a = mx.nd.array([[1, 2], [3, 4]], dtype="int32")
    b = pickle.loads(pickle.dumps(a))
    assert b.dtype == np.int32 and b.context == a.context
    assert (b.asnumpy() == a.asnumpy()).all()


@pytest.mark.parametrize(
    ("codes", "reverse", "expected"),
    [
        ((-2,), False, (2, 3, 5)),
        ((-3, -1), False, (6, 5)),
        ((-1, 0), True, (6, 5)),
        ((0, -1), False, (2, 15)),
    ],
)
def test_reshape_method_takes_mxnet_codes(codes, reverse, expected):
    t = mx.nd.arange(30).reshape(2, 3, 5)
    out = t.reshape(*codes, reverse=reverse) if reverse else t.reshape(codes)
    assert out.shape == expected
    assert (out.asnumpy().ravel() == np.arange(30)).all()
    assert t.reshape(-1, 15).reshape(0, -4, 3, -1).shape == (2, 3, 5)


def test_bool_of_an_empty_array_is_false_and_of_many_is_an_error():
    assert not bool(mx.nd.array([]))
    assert bool(mx.nd.ones((1,))) and not bool(mx.nd.zeros((1,)))
    with pytest.raises(ValueError):
        bool(mx.nd.ones((2, 3)))


@pytest.mark.parametrize(
    "key",
    [slice(1, 5, 2), slice(None), (slice(None), 1, 2), (1, 2, 2), [1, 1, 2], (1, [0, 2])],
    ids=str,
)
def test_getitem_is_recorded_for_any_key_and_repeats_add_up(key):
    x = mx.nd.array(np.arange(60, dtype=np.float32).reshape(5, 4, 3))
    x.attach_grad()
    with mx.autograd.record():
        y = x[key]
    y.backward()
    expected = np.zeros((5, 4, 3), np.float32)
    np.add.at(expected, key, 1)
    assert (x.grad.asnumpy() == expected).all()


def test_setitem_of_a_recorded_value_while_recording_is_refused():
    x = mx.nd.zeros((3,))
    y = mx.nd.ones((2,))
    y.attach_grad()
    refused = pytest.raises(mx.MXNetError, match=r"Inplace operations \(\+=, -=, x\[:\]=, etc\)")
    with refused, mx.autograd.record():
        x[0:2] = y
    x[0:2] = y  # outside recording it is a plain assignment
    assert x.asnumpy().tolist() == [1.0, 1.0, 0.0]


def test_one_value_goes_into_one_element():
    b = mx.nd.zeros(1)
    b[0] = np.array([47.844944], dtype=np.float32)
    assert b.asnumpy()[0] == np.float32(47.844944)


def test_creation_with_out_and_eye_with_positional_arguments():
    out = mx.nd.zeros((2, 2))
    assert mx.nd.ones((2, 2), out=out) is out and out.asnumpy().sum() == 4
    mx.nd.zeros((2, 2), out=out)
    assert out.asnumpy().sum() == 0
    for n, m, k in [(3, 4, 1), (4, 0, -2), (2, 5, 7)]:
        assert (mx.nd.eye(n, m, k).asnumpy() == np.eye(n, m or n, k)).all()


def test_onehot_encode_writes_rows_into_out():
    out = mx.nd.zeros((3, 4))
    mx.nd.onehot_encode(mx.nd.array([1, 0, 3]), out=out)
    assert (out.asnumpy() == np.eye(4)[[1, 0, 3]]).all()


def test_crop_assign_and_its_gradient():
    x = mx.nd.ones((2, 3, 4))
    z = mx.nd.full((2, 1, 3), 7)
    x.attach_grad()
    z.attach_grad()
    with mx.autograd.record():
        y = mx.nd._internal._crop_assign(x, z, begin=(0, 0, 0), end=(2, 1, 3))
    y.backward(mx.nd.full((2, 3, 4), 2))
    expected = np.ones((2, 3, 4))
    expected[:, 0:1, 0:3] = 7
    assert (y.asnumpy() == expected).all()
    assert x.grad.asnumpy()[:, 0, :3].sum() == 0 and x.grad.asnumpy().sum() == 2 * (24 - 6)
    assert (z.grad.asnumpy() == 2).all()
    s = mx.nd._internal._crop_assign_scalar(mx.nd.ones((2, 3)), scalar=5, begin=(0, 1), end=(1, 3))
    assert s.asnumpy().tolist() == [[1, 5, 5], [1, 1, 1]]


def test_element_0index_ops():
    lhs = mx.nd.array([[1, 2], [3, 4]])
    assert mx.nd.choose_element_0index(lhs, mx.nd.array([1, 0])).asnumpy().tolist() == [2, 3]
    filled = mx.nd.fill_element_0index(lhs, mx.nd.array([7, 8]), mx.nd.array([1, 0]))
    assert filled.asnumpy().tolist() == [[1, 7], [8, 4]]


@pytest.mark.parametrize("name", ["isinf", "isfinite", "isnan"])
def test_contrib_element_tests(name):
    data = np.array([1.0, np.inf, -np.inf, np.nan], dtype=np.float32)
    out = getattr(mx.nd.contrib, name)(mx.nd.array(data))
    assert out.dtype == np.float32
    assert (out.asnumpy() == getattr(np, name)(data)).all()
    with pytest.raises(AttributeError, match="_contrib_nothing"):
        mx.nd.contrib.nothing  # noqa: B018


def test_broadcast_like_refuses_empty_axes():
    lhs, rhs = mx.nd.ones((1, 2)), mx.nd.ones((3, 2))
    assert mx.nd.broadcast_like(lhs, rhs, lhs_axes=(0,), rhs_axes=(0,)).shape == (3, 2)
    with pytest.raises(mx.MXNetError, match="non-empty"):
        mx.nd.broadcast_like(lhs, rhs, lhs_axes=(), rhs_axes=())


def test_random_sample_is_seeded_by_numpy_and_distinct():
    np.random.seed(3)
    first = mx.test_utils.random_sample(list("abcdef"), 4)
    np.random.seed(3)
    assert mx.test_utils.random_sample(list("abcdef"), 4) == first
    assert len(set(first)) == 4 and set(first) <= set("abcdef")
    with pytest.raises(ValueError, match="population size"):
        mx.test_utils.random_sample([1, 2], 3)


def test_cached_op_runs_the_symbol_and_records_gradients():
    x, w = mx.sym.Variable("x"), mx.sym.Variable("w")
    op = mx.nd.CachedOp(mx.sym.FullyConnected(x, w, num_hidden=2, no_bias=True) * 3)
    data = mx.nd.array([[1.0, 2.0, 3.0]])
    weight = mx.nd.array([[1.0, 0.0, 1.0], [0.0, 1.0, 0.0]])
    weight.attach_grad()
    with mx.autograd.record():
        y = op(data, weight)
    y.backward()
    assert y.asnumpy().tolist() == [[12.0, 6.0]]
    assert (weight.grad.asnumpy() == 3 * np.array([[1, 2, 3], [1, 2, 3]])).all()
    out = mx.nd.zeros((1, 2))
    assert op(data, weight, out=out) is out and out.asnumpy().tolist() == [[12.0, 6.0]]
    with pytest.raises(mx.MXNetError, match="2 inputs"):
        op(data)


def test_imresize_refuses_an_unknown_interpolation():
    img = mx.nd.ones((12, 16, 3))
    assert mx.image.imresize(img, 8, 6, interp=9).shape == (6, 8, 3)
    with pytest.raises(mx.MXNetError, match="interp=-1"):
        mx.image.imresize(img, 8, 6, interp=-1)
