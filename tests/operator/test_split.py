"""Blocks and chunks (mxnb/operator/split.py), and the kernels that no longer allocate arrays
the size of their data: what a training step holds is the memory plan, not the plan plus
kernel temporaries (issue 32, item 4)."""

from __future__ import annotations

import numpy as np
import pytest

from mxnb.executor import allocation_peak
from mxnb.operator import eager, split
from mxnb.operator.base import OpReqType
from mxnb.operator.ops import norm
from mxnb.operator.ops.elemwise import SIGMOID, SIGMOID_GRAD, TANH_GRAD

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
    [(TANH_GRAD, 2), (SIGMOID_GRAD, 2), (SIGMOID, 1), (norm._NORMALIZE, 3), (norm._GRAD_DATA, 5)],
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


# -- kernel temporaries: an op holds what the plan gave it, and a block or two besides --------


def _activation(act_type):
    def case(n):
        x = RNG.standard_normal((8, n)).astype(np.float32)
        return "Activation", [x], {"act_type": act_type}, True

    return case


def _softmax(name):
    def case(n):
        x = RNG.standard_normal((n // 100, 800)).astype(np.float32)
        inputs = (
            [x] if name == "softmax" else [x, RNG.integers(0, 800, x.shape[0]).astype(np.float32)]
        )
        return name, inputs, {}, False

    return case


CASES = {
    "relu": _activation("relu"),
    "tanh": _activation("tanh"),
    "sigmoid": _activation("sigmoid"),
    "softmax": _softmax("softmax"),
    "SoftmaxOutput": _softmax("SoftmaxOutput"),
    "Concat": lambda n: ("Concat", [RNG.standard_normal((n // 64, 64)).astype(np.float32)] * 3,
                         {"num_args": 3, "dim": 1}, False),
    "SliceChannel": lambda n: ("SliceChannel", [RNG.standard_normal((n // 64, 256)).astype(np.float32)],
                               {"num_outputs": 4}, False),
    "Embedding": lambda n: ("Embedding", [RNG.integers(0, n // 32, (64, 35)).astype(np.float32),
                                          RNG.standard_normal((n // 32, 256)).astype(np.float32)],
                            {"input_dim": n // 32, "output_dim": 256}, False),
    "ElementWiseSum": lambda n: ("ElementWiseSum", [RNG.standard_normal((8, n)).astype(np.float32)] * 3,
                                 {"num_args": 3}, False),
    "_copy": lambda n: ("_copy", [RNG.standard_normal((8, n)).astype(np.float32)], {}, False),
    "Dropout": lambda n: ("Dropout", [RNG.standard_normal((8, n)).astype(np.float32)], {"p": 0.3}, False),
    "avg Pooling": lambda n: ("Pooling", [RNG.standard_normal((n // 1024, 16, 32, 32)).astype(np.float32)],
                              {"kernel": (3, 3), "pad": (1, 1), "pool_type": "avg"}, False),
}  # fmt: skip


def _temporaries(case: str, n: int) -> tuple[int, int, int]:
    """Forward's and backward's allocation peaks (all outputs given), and the largest array."""
    op, inputs, params, backward_in_place = CASES[case](n)
    outputs, _, state = eager.run_forward(op, inputs, params, is_train=True)
    heads = [RNG.standard_normal(out.shape).astype(np.float32) for out in outputs]
    outs = [np.empty_like(out) for out in outputs]
    grads = [np.empty_like(x) for x in inputs]
    if backward_in_place:  # the planner's choice for Activation: the gradient over the head's
        grads[0] = heads[0]
    ctx = state.ctx  # the forward's resources: a temp space is grown already
    write = [OpReqType.WRITE_TO] * len(outs)
    forward = allocation_peak(lambda: state.operator.forward(ctx, inputs, write, outs, []))
    req = [OpReqType.WRITE_TO] * len(grads)
    backward = allocation_peak(
        lambda: state.operator.backward(ctx, heads, inputs, outs, req, grads, [])
    )
    largest = max(a.nbytes for a in [*inputs, *outs, *grads])
    return forward, backward, largest


@pytest.mark.parametrize("case", sorted(CASES))
def test_kernel_temporaries_are_a_block_or_two_per_thread(monkeypatch, case):
    """With 2 op threads, an op allocates at most two blocks of floats a thread (a few rows, a
    label's worth of indices) beside the arrays it is given, at 1 and at 4 times the data:
    nothing the plan did not count grows with the batch.  Each case allocated a temporary of
    its data's size, or several, before (8-100 MiB at 4x)."""
    monkeypatch.setenv("MXNB_OP_THREADS", "2")
    bound = 2 * 2 * split.BLOCK_ELEMENTS * 4 + (64 << 10)
    for n in (1 << 18, 1 << 20):
        forward, backward, largest = _temporaries(case, n)
        assert forward <= bound and backward <= bound, (case, n, forward, backward, largest)
    assert largest >= 2 * bound  # at 4x the data, a temporary of its size would show
