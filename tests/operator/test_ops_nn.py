"""Spatial operators: Convolution, Deconvolution, Pooling, UpSampling, LRN.

Numeric gradients at float64 (central differences through the eager runner)
cover every code path: groups, stride, padding, dilation, 1-D and 3-D,
the stride-1 'full convolution' data gradient and the col2im one, every
pooling type and size convention.
"""

from __future__ import annotations

import numpy as np
import pytest

from mxnb.base import ShapeError
from mxnb.operator import OpContext, OpReqType, eager, registry


def _rand(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape)


def _conv_reference(x, w, b, stride, pad, dilate, groups):
    """Direct definition of MXNet's convolution, one output pixel at a time (small shapes only)."""
    n, _c, h, wd = x.shape
    f, cg, kh, kw = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (pad[0], pad[0]), (pad[1], pad[1])))
    oh = (h + 2 * pad[0] - dilate[0] * (kh - 1) - 1) // stride[0] + 1
    ow = (wd + 2 * pad[1] - dilate[1] * (kw - 1) - 1) // stride[1] + 1
    out = np.zeros((n, f, oh, ow))
    fg = f // groups
    for o in range(f):
        g = o // fg
        for i in range(oh):
            for j in range(ow):
                patch = xp[
                    :,
                    g * cg : (g + 1) * cg,
                    i * stride[0] : i * stride[0] + dilate[0] * (kh - 1) + 1 : dilate[0],
                    j * stride[1] : j * stride[1] + dilate[1] * (kw - 1) + 1 : dilate[1],
                ]
                out[:, o, i, j] = (patch * w[o]).sum(axis=(1, 2, 3)) + (
                    b[o] if b is not None else 0
                )
    return out


CONV_CASES = [
    {"kernel": (3, 3), "num_filter": 4},
    {"kernel": (3, 3), "num_filter": 4, "pad": (1, 1)},
    {"kernel": (3, 3), "num_filter": 4, "stride": (2, 2), "pad": (1, 1)},
    {"kernel": (3, 2), "num_filter": 4, "dilate": (2, 1), "pad": (2, 0)},
    {"kernel": (3, 3), "num_filter": 6, "num_group": 2, "pad": (1, 1), "no_bias": True},
    {"kernel": (2, 2), "num_filter": 2, "stride": (2, 1), "num_group": 2},
    {
        "kernel": (1, 1),
        "num_filter": 3,
        "pad": (1, 1),
    },  # padding beyond the kernel: col2im data gradient
]


@pytest.mark.parametrize(
    "params", CONV_CASES, ids=lambda p: ",".join(f"{k}={v}" for k, v in p.items())
)
def test_convolution_matches_definition_and_numeric_gradient(params):
    x = _rand(2, 4, 6, 5)
    prop = registry.get("Convolution").create_property(**params)
    weight_shape = prop.infer_shape([x.shape, None, None][: len(prop.list_arguments())])[0][1]
    w = _rand(*weight_shape, seed=1)
    inputs = [x, w] if params.get("no_bias") else [x, w, _rand(params["num_filter"], seed=2)]
    out = eager.run_forward("Convolution", inputs, params)[0][0]
    expected = _conv_reference(
        x,
        w,
        None if params.get("no_bias") else inputs[2],
        params.get("stride", (1, 1)),
        params.get("pad", (0, 0)),
        params.get("dilate", (1, 1)),
        params.get("num_group", 1),
    )
    np.testing.assert_allclose(out, expected, rtol=1e-10, atol=1e-10)
    eager.numeric_gradient_check("Convolution", inputs, params, rtol=1e-5, atol=1e-6)


def test_convolution_1d_and_3d_gradients():
    eager.numeric_gradient_check(
        "Convolution",
        [_rand(2, 3, 7), _rand(4, 3, 3, seed=1), _rand(4, seed=2)],
        {"kernel": (3,), "num_filter": 4, "stride": (2,), "pad": (1,)},
    )
    eager.numeric_gradient_check(
        "Convolution",
        [_rand(1, 2, 4, 4, 3), _rand(2, 2, 2, 2, 2, seed=1)],
        {"kernel": (2, 2, 2), "num_filter": 2, "no_bias": True, "pad": (1, 0, 1)},
    )


def test_convolution_infers_weight_and_names_shape_conflicts():
    prop = registry.get("Convolution").create_property(kernel=(3, 3), num_filter=8, num_group=2)
    assert prop.infer_shape([(4, 6, 10, 10), None, None]) == (
        [(4, 6, 10, 10), (8, 3, 3, 3), (8,)],
        [(4, 8, 8, 8)],
        [],
    )
    assert prop.infer_shape([None, None, None]) is None
    with pytest.raises(
        ShapeError, match=r"Convolution: weight has shape \(8, 6, 3, 3\).*needs \(8, 3, 3, 3\)"
    ):
        prop.infer_shape([(4, 6, 10, 10), (8, 6, 3, 3), None])


def test_convolution_backward_reads_data_and_weight_not_output():
    prop = registry.get("Convolution").create_property(kernel=(3, 3), num_filter=2)
    assert prop.declare_backward_dependency(["dy"], ["x", "w", "b"], ["y"]) == ["dy", "x", "w"]


@pytest.mark.parametrize(
    "params",
    [
        {
            "kernel": (3, 3),
            "stride": (2, 2),
            "pad": (1, 1),
            "adj": (1, 1),
            "num_filter": 3,
            "no_bias": False,
        },
        {"kernel": (2, 2), "stride": (1, 1), "num_filter": 4, "num_group": 2},
        {"kernel": (3, 3), "stride": (2, 2), "num_filter": 2, "target_shape": (8, 8)},
    ],
)
def test_deconvolution_is_the_transpose_of_convolution(params):
    """<deconv(x), y> == <x, conv(y)> for the same weight: the defining identity, plus numeric gradients."""
    x = _rand(2, 4, 4, 4)
    prop = registry.get("Deconvolution").create_property(**params)
    args = prop.list_arguments()
    shapes = prop.infer_shape([x.shape] + [None] * (len(args) - 1))
    w = _rand(*shapes[0][1], seed=1)
    out_shape = shapes[1][0]
    y = _rand(*out_shape, seed=3)
    deconv = eager.run_forward(prop, [x, w] + ([np.zeros(shapes[0][2])] if len(args) == 3 else []))[
        0
    ][0]
    # conv with the same weight read as (num_filter... ) -> (C, F/g, k, k) is conv's (F', C'/g, k, k)
    kernel = tuple(params["kernel"])
    conv_params = {
        "kernel": kernel,
        "num_filter": x.shape[1],
        "num_group": params.get("num_group", 1),
        "stride": params.get("stride", (1, 1)),
        "no_bias": True,
    }
    total = 2 * np.array(kernel) * 0
    pad = params.get("pad", (0, 0))
    if "target_shape" in params:
        total = [
            params["stride"][i] * (x.shape[2 + i] - 1) + kernel[i] - params["target_shape"][i]
            for i in range(2)
        ]
        pad = tuple((t + 1) // 2 for t in total)
    conv_params["pad"] = pad
    conv = eager.run_forward("Convolution", [y, w], conv_params)[0][0]
    assert conv.shape == x.shape
    np.testing.assert_allclose((deconv * y).sum(), (x * conv).sum(), rtol=1e-10)
    inputs = [x, w] + ([_rand(params["num_filter"], seed=2)] if len(args) == 3 else [])
    eager.numeric_gradient_check("Deconvolution", inputs, params)


POOL_CASES = [
    {"kernel": (2, 2), "stride": (2, 2), "pool_type": "max"},
    {"kernel": (3, 3), "stride": (2, 2), "pad": (1, 1), "pool_type": "max"},
    {"kernel": (3, 3), "stride": (2, 2), "pad": (1, 1), "pool_type": "avg"},
    {
        "kernel": (3, 3),
        "stride": (2, 2),
        "pad": (1, 1),
        "pool_type": "avg",
        "count_include_pad": False,
    },
    {"kernel": (3, 3), "stride": (2, 2), "pool_type": "max", "pooling_convention": "full"},
    {"kernel": (2, 2), "stride": (2, 2), "pool_type": "avg", "pooling_convention": "full"},
    {"kernel": (3, 3), "stride": (2, 2), "pool_type": "sum", "pooling_convention": "same"},
    {"kernel": (1, 1), "global_pool": True, "pool_type": "max"},
    {"kernel": (1, 1), "global_pool": True, "pool_type": "avg"},
]


@pytest.mark.parametrize(
    "params", POOL_CASES, ids=lambda p: ",".join(f"{k}={v}" for k, v in p.items())
)
def test_pooling_numeric_gradient(params):
    eager.numeric_gradient_check("Pooling", [_rand(2, 2, 7, 6)], params)


def test_pooling_output_sizes_follow_the_conventions():
    prop = registry.get("Pooling")
    assert prop.create_property(kernel=(3, 3), stride=(2, 2)).infer_shape([(1, 1, 6, 6)])[1] == [
        (1, 1, 2, 2)
    ]
    full = prop.create_property(kernel=(3, 3), stride=(2, 2), pooling_convention="full")
    assert full.infer_shape([(1, 1, 6, 6)])[1] == [(1, 1, 3, 3)]
    same = prop.create_property(kernel=(3, 3), stride=(2, 2), pooling_convention="same")
    assert same.infer_shape([(1, 1, 7, 7)])[1] == [(1, 1, 4, 4)]


def test_max_pooling_gives_a_tied_window_one_gradient_and_declares_input_and_output():
    """All-equal window: MXNet routes the gradient to the first maximum only."""
    x = np.ones((1, 1, 2, 2))
    _, grads = eager.run(
        "Pooling", [x], {"kernel": (2, 2), "pool_type": "max"}, head_grads=[np.ones((1, 1, 1, 1))]
    )
    assert grads[0].ravel().tolist() == [1.0, 0.0, 0.0, 0.0]
    prop = registry.get("Pooling").create_property(kernel=(2, 2), pool_type="max")
    assert prop.declare_backward_dependency(["dy"], ["x"], ["y"]) == ["dy", "x", "y"]
    avg = registry.get("Pooling").create_property(kernel=(2, 2), pool_type="avg")
    assert avg.declare_backward_dependency(["dy"], ["x"], ["y"]) == ["dy"]


def test_pooling_add_to_accumulates():
    prop = registry.get("Pooling").create_property(kernel=(2, 2), stride=(2, 2), pool_type="avg")
    op = prop.create_operator(None)
    x = np.arange(16.0).reshape(1, 1, 4, 4)
    out = np.ones((1, 1, 2, 2))
    op.forward(OpContext(), [x], [OpReqType.ADD_TO], [out], [])
    assert out.ravel().tolist() == [3.5, 5.5, 11.5, 13.5]


def test_upsampling_nearest_and_gradient():
    x = np.arange(4.0).reshape(1, 1, 2, 2)
    out = eager.run_forward("UpSampling", [x], {"scale": 2, "sample_type": "nearest"})[0][0]
    assert out[0, 0].tolist() == [[0, 0, 1, 1], [0, 0, 1, 1], [2, 2, 3, 3], [2, 2, 3, 3]]
    eager.numeric_gradient_check(
        "UpSampling", [_rand(1, 2, 2, 3)], {"scale": 3, "sample_type": "nearest"}
    )
    eager.numeric_gradient_check(
        "UpSampling",
        [_rand(1, 2, 4, 4), _rand(1, 1, 2, 2, seed=1)],
        {"scale": 1, "sample_type": "nearest", "num_args": 2},
    )


def test_lrn_value_and_gradient():
    x = _rand(2, 5, 3, 3)
    out = eager.run_forward("LRN", [x], {"nsize": 3, "alpha": 0.1, "beta": 0.75, "knorm": 2})[0][0]
    c = 2
    norm = 2 + 0.1 / 3 * (x[:, 1:4] ** 2).sum(axis=1)
    np.testing.assert_allclose(out[:, c], x[:, c] * norm**-0.75)
    eager.numeric_gradient_check("LRN", [x], {"nsize": 3, "alpha": 0.1, "beta": 0.75})


@pytest.mark.timeout(60)
@pytest.mark.parametrize(
    "name, params, shapes",
    [
        (
            "Pooling",
            {"kernel": (3, 3), "stride": (2, 2), "pad": (1, 1), "pool_type": "max"},
            [(5, 2, 7, 7)],
        ),
        ("Pooling", {"kernel": (2, 2), "pool_type": "avg"}, [(5, 2, 6, 6)]),
        ("BatchNorm", {"fix_gamma": False}, [(4, 5, 3, 3), (5,), (5,)]),
        (
            "Convolution",
            {"kernel": (3, 3), "pad": (1, 1), "num_filter": 4},
            [(5, 3, 6, 6), (4, 3, 3, 3), (4,)],
        ),
        (
            "Convolution",
            {"kernel": (3, 3), "stride": (2, 2), "num_filter": 4, "num_group": 2},
            [(5, 2, 7, 7), (4, 1, 3, 3), (4,)],
        ),
        (
            "Deconvolution",
            {"kernel": (3, 3), "stride": (2, 2), "num_filter": 2},
            [(3, 4, 3, 3), (4, 2, 3, 3)],
        ),
    ],
)
def test_chunked_parallel_kernels_equal_the_single_thread_result(monkeypatch, name, params, shapes):
    """Large inputs are split into chunks on the op thread pool; the result must not change."""
    from mxnb.operator import split

    inputs = [_rand(*shape, seed=i) for i, shape in enumerate(shapes)]
    aux = [np.zeros(5), np.ones(5)] if name == "BatchNorm" else None
    heads = None
    results = []
    for minimum, threads in [(1 << 40, "1"), (1, "3")]:
        monkeypatch.setattr(split, "PARALLEL_MIN_ELEMENTS", minimum)
        monkeypatch.setenv("MXNB_OP_THREADS", threads)
        outs, aux_out, state = eager.run_forward(name, inputs, params, aux=aux, is_train=True)
        heads = heads or [_rand(*o.shape, seed=9) for o in outs[:1]]
        results.append((outs[0], aux_out, eager.run_backward(state, heads)))
    (out_a, aux_a, grads_a), (out_b, aux_b, grads_b) = results
    np.testing.assert_allclose(out_a, out_b, rtol=1e-12)
    for a, b in zip(aux_a + grads_a, aux_b + grads_b):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14)


def _max_pool_reference(x, kernel, stride, pad, out):
    """Per-window loops: the max, and its head gradient at the first maximum (row-major)."""
    y = np.full(x.shape[:2] + out, -np.inf)
    grad_of = {}  # output index -> input index of its first maximum
    for index in np.ndindex(*x.shape[:2], *out):
        n, c, o = index[0], index[1], index[2:]
        best, where = -np.inf, None
        for k in np.ndindex(*kernel):
            cell = tuple(oi * s + ki - p for oi, s, ki, p in zip(o, stride, k, pad))
            if all(0 <= ci < size for ci, size in zip(cell, x.shape[2:])):
                value = x[(n, c) + cell]
                if value > best:
                    best, where = value, cell
        y[index] = best
        grad_of[index] = (n, c) + where
    return y, grad_of


@pytest.mark.parametrize(
    "shape, params",
    [
        ((2, 3, 8, 8), {"kernel": (2, 2), "stride": (2, 2)}),
        ((2, 2, 7, 6), {"kernel": (3, 3), "stride": (2, 2), "pad": (1, 1)}),
        ((2, 2, 7, 7), {"kernel": (3, 2), "stride": (1, 2)}),
        ((2, 2, 9), {"kernel": (3,), "stride": (2,)}),
        ((1, 2, 4, 5, 4), {"kernel": (2, 2, 2), "stride": (2, 1, 2), "pad": (0, 1, 0)}),
        # windows that tile the input (stride == kernel, no padding)
        ((2, 2, 6, 9), {"kernel": (2, 3), "stride": (2, 3)}),
        ((2, 2, 8), {"kernel": (4,), "stride": (4,)}),
        ((1, 2, 4, 4, 6), {"kernel": (2, 2, 3), "stride": (2, 2, 3)}),
        ((2, 2, 4, 4), {"kernel": (1, 2), "stride": (1, 2)}),
    ],
)
def test_max_pooling_ties_go_to_the_first_maximum_in_row_major_order(shape, params):
    """Few distinct values (ReLU outputs are often all zero): every tie is broken as MXNet does."""
    rng = np.random.default_rng(7)
    x = rng.integers(0, 3, size=shape).astype(np.float32)
    outs, _, state = eager.run_forward("Pooling", [x], dict(params, pool_type="max"))
    out = outs[0].shape[2:]
    nd = len(shape) - 2
    pad = params.get("pad", (0,) * nd)
    expected, grad_of = _max_pool_reference(x, params["kernel"], params["stride"], pad, out)
    np.testing.assert_array_equal(outs[0], expected)
    head = rng.normal(size=outs[0].shape).astype(np.float32)
    grad = eager.run_backward(state, [head])[0]
    want = np.zeros(x.shape, np.float32)
    for index, cell in grad_of.items():
        want[cell] += head[index]
    np.testing.assert_allclose(grad, want, rtol=1e-6, atol=1e-6)
