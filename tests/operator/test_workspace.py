"""Scratch carved from TEMP_SPACE: phases laid from one block, and ops that compute in it.

A convolution or a max pooling asks TEMP_SPACE for exactly what its
``temp_space_bytes`` says for that pass (the plan counts it), and allocates
next to nothing besides: their scratch used to be temporaries of up to
several times the input, unplanned, and on a GPU blocks the device pool kept.
"""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest

from mxnb.operator import eager
from mxnb.operator.base import OpContext, OpReqType
from mxnb.operator.eager import EagerTempSpace
from mxnb.operator.workspace import ALIGN, carve, layout_bytes


def test_phases_share_their_first_part_and_overlap_the_rest():
    first = [((10, 3), np.float32), ((5,), np.float64)]
    later = [((10, 3), np.float32), ((40,), np.int8), ((4,), np.float32)]
    assert layout_bytes(first) == ALIGN + 5 * 8
    assert layout_bytes(later) == 2 * ALIGN + 16
    assert layout_bytes(first, later) == layout_bytes(later)
    space = EagerTempSpace()
    (a, b), (a2, c, d) = carve(OpContext(requested=[space]), first, later)
    a[...] = 7
    assert np.array_equal(a2, a) and a2.shape == (10, 3)  # the shared first part: kept
    assert not np.shares_memory(a, b) and not np.shares_memory(c, d)
    assert np.shares_memory(b, c)  # the rest reuses the earlier phase's memory
    assert space._block.size == layout_bytes(first, later)
    for view in (a, b, c, d):
        assert view.ctypes.data % ALIGN == space._block.ctypes.data % ALIGN


def test_without_a_temp_space_the_block_is_fresh():
    ((x,), (y,)) = carve(OpContext(requested=[]), [((3,), np.float32)], [((3,), np.float32)])
    assert np.shares_memory(x, y) and x.dtype == np.float32


def _run(op, inputs, params, req):
    """Forward then backward with one temp space; the block size and allocation peak of each."""
    rng = np.random.default_rng(0)
    outputs, _, state = eager.run_forward(op, inputs, params, is_train=True)
    heads = [rng.standard_normal(out.shape).astype(np.float32) for out in outputs]
    found = []
    for backward in (False, True):
        space = EagerTempSpace()
        ctx = OpContext(is_train=True, requested=[space])
        outs = [np.zeros_like(out) for out in outputs]
        grads = [np.zeros_like(x) for x in inputs]
        args = (ctx, inputs, [OpReqType.WRITE_TO] * len(outs), outs, [])
        state.operator.forward(*args)  # grows the block to the forward's size, untraced
        size_before = space._block.size if space._block is not None else 0
        tracemalloc.start()
        try:
            if backward:
                state.operator.backward(ctx, heads, inputs, outs, req, grads, [])
            else:
                state.operator.forward(*args)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        size = space._block.size if space._block is not None else 0
        found.append((size, peak - (size if size > size_before else 0)))  # a grown block is new
    return state.prop, found, [tuple(x.shape) for x in inputs]


CASES = {  # data of 2-4 MiB: a temporary the size of the data, or a tenth of it, shows
    "conv 3x3 pad": ("Convolution", (8, 16, 64, 64), (16, 16, 3, 3),
                     {"kernel": (3, 3), "pad": (1, 1), "num_filter": 16, "no_bias": True}),
    "conv 5x5 stride dilate groups bias": ("Convolution", (4, 8, 130, 128), (8, 4, 5, 5),
                     {"kernel": (5, 5), "stride": (2, 3), "dilate": (2, 1), "pad": (2, 1),
                      "num_filter": 8, "num_group": 2}),
    "conv 1d": ("Convolution", (8, 32, 2100), (5, 32, 4),
                {"kernel": (4,), "stride": (2,), "pad": (1,), "num_filter": 5}),
    "conv 3d": ("Convolution", (2, 4, 41, 41, 41), (4, 4, 3, 3, 3),
                {"kernel": (3, 3, 3), "pad": (1, 0, 1), "num_filter": 4, "no_bias": True}),
    "max pool 3x3 s2 p1": ("Pooling", (8, 16, 65, 64), None,
                           {"kernel": (3, 3), "stride": (2, 2), "pad": (1, 1)}),
    "max pool 2x2 tiled": ("Pooling", (8, 16, 64, 64), None, {"kernel": (2, 2), "stride": (2, 2)}),
    "max pool 3d": ("Pooling", (2, 8, 40, 41, 39), None,
                    {"kernel": (2, 3, 2), "stride": (2, 1, 2), "pad": (1, 1, 0)}),
}  # fmt: skip


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("data_grad", [True, False], ids=["data-grad", "no-data-grad"])
def test_scratch_is_what_the_plan_counts_and_nothing_else_is_allocated(case, data_grad):
    op, data_shape, weight_shape, params = CASES[case]
    rng = np.random.default_rng(1)
    inputs = [rng.standard_normal(data_shape).astype(np.float32)]
    if weight_shape is not None:
        inputs.append(rng.standard_normal(weight_shape).astype(np.float32))
        if not params.get("no_bias"):
            inputs.append(rng.standard_normal(weight_shape[0]).astype(np.float32))
    req = [OpReqType.WRITE_TO if data_grad else OpReqType.NULL]
    req += [OpReqType.WRITE_TO] * (len(inputs) - 1)
    prop, ((forward_block, forward_extra), (backward_block, backward_extra)), shapes = _run(
        op, inputs, params, req
    )
    types = [np.dtype(np.float32)] * len(shapes)
    assert forward_block == prop.temp_space_bytes(shapes, types) > 0
    assert backward_block == max(forward_block, prop.temp_space_bytes(shapes, types, req))
    data_bytes = inputs[0].nbytes
    assert data_bytes >= 2 * 2**20
    for extra in (forward_extra, backward_extra):  # views, and numpy's own ufunc buffers
        assert extra < 0.1 * data_bytes, (case, forward_extra, backward_extra, data_bytes)


@pytest.mark.parametrize("params", [
    {"kernel": (3, 3), "stride": (2, 2), "pad": (1, 1)},
    {"kernel": (2, 3, 2), "stride": (2, 1, 2), "pad": (1, 1, 0)},
], ids=["2d", "3d"])  # fmt: skip
def test_max_pooling_chunks_running_at_once_share_no_scratch(monkeypatch, params):
    """Batch chunks of one backward run on several threads, each at its own axis: the
    gradient is the same with four threads as with one (the axes' masks never overlap)."""
    shape = (8, 16, 130, 128) if len(params["kernel"]) == 2 else (8, 8, 34, 33, 40)
    rng = np.random.default_rng(2)
    x = np.round(rng.standard_normal(shape) * 2).astype(np.float32)  # ties: the first max wins
    outputs, _, state = eager.run_forward("Pooling", [x], params, is_train=True)
    head = rng.standard_normal(outputs[0].shape).astype(np.float32)
    grads = {}
    for threads in ("1", "4"):
        monkeypatch.setenv("MXNB_OP_THREADS", threads)
        grads[threads] = eager.run_backward(state, [head])[0]
    assert x.size >= 1 << 20  # large enough to be split into chunks
    np.testing.assert_array_equal(grads["4"], grads["1"])
