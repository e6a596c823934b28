"""Blocks and chunks (mxnb/operator/split.py), and the kernels that no longer allocate arrays
the size of their data: what a training step holds is the memory plan, not the plan plus
kernel temporaries (issue 32, item 4)."""

from __future__ import annotations

import numpy as np
import pytest

from mxnb.operator import split
from mxnb.operator.ops import norm
from mxnb.operator.ops.elemwise import SIGMOID_GRAD, TANH_GRAD

RNG = np.random.default_rng(7)


@pytest.mark.parametrize(
    ("shape", "limit"),
    [
        ((2, 3, 4), 8),
        ((5, 7, 11, 13), 100),
        ((3, 1000), 64),
        ((17,), 4),
        ((4, 6), 1000),
        ((2, 9), 1),
    ],
)
def test_blocks_cover_every_element_once(shape, limit):
    seen = np.zeros(shape, dtype=int)
    for index in split.block_index(shape, limit):
        assert len(index) >= 1 and seen[index].size <= max(limit, shape[-1])
        seen[index] += 1
    assert (seen == 1).all()


@pytest.mark.parametrize("threads", ["1", "2"])
def test_a_formula_in_blocks_equals_it_on_the_whole_array_bit_for_bit(monkeypatch, threads):
    """Operands of the output's shape, broadcast along leading, middle and missing axes, a number,
    and an output that is an input's memory."""
    monkeypatch.setenv("MXNB_OP_THREADS", threads)
    x = RNG.standard_normal((6, 40, 33, 35)).astype(np.float32)
    column = RNG.standard_normal((1, 40, 1, 1)).astype(np.float32)
    row = RNG.standard_normal((35,)).astype(np.float32)
    first = RNG.standard_normal((6, 1, 1, 1)).astype(np.float32)

    def formula(x, column, row, first, scale, out):
        np.multiply(np.exp(x * column) - row, first * scale, out=out)

    whole = np.empty_like(x)
    formula(x, column, row, first, 0.5, whole)
    blocks = np.empty_like(x)
    split.in_blocks(np, formula, (x, column, row, first, 0.5), (blocks,), limit=1000)
    np.testing.assert_array_equal(blocks, whole)
    aliased = x.copy()
    split.in_blocks(np, formula, (aliased, column, row, first, 0.5), (aliased,), limit=1000)
    np.testing.assert_array_equal(aliased, whole)


@pytest.mark.parametrize(
    ("fused", "arity"),
    [(TANH_GRAD, 2), (SIGMOID_GRAD, 2), (norm._NORMALIZE, 3), (norm._GRAD_DATA, 5)],
    ids=lambda v: getattr(v, "name", str(v)),
)
def test_fused_maps_in_blocks_equal_the_plain_path_bit_for_bit(fused, arity):
    """A call given its outputs runs in blocks on numpy; ``evaluate`` is the plain path."""
    shape = (4, 24, 96, 101)  # over a block, under a chunk per thread
    big = [RNG.standard_normal(shape).astype(np.float32) for _ in range(2)]
    column = [RNG.standard_normal((1, 24, 1, 1)).astype(np.float32) for _ in range(3)]
    args = (big + column)[:arity] if arity <= 2 else [big[0], big[1], *column][:arity]
    if fused is norm._NORMALIZE:
        args = [big[0], column[0], column[1]]
    (plain,) = fused.evaluate(np, *args)
    out = np.empty(shape, dtype=np.float32)
    fused(np, *args, out=(out,))
    np.testing.assert_array_equal(out, plain)
    in_place = args[0].copy()
    fused(np, in_place, *args[1:], out=(in_place,))
    np.testing.assert_array_equal(in_place, plain)
