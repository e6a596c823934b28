"""simple_bind(shared_exec=, shared_arg_names=, shared_buffer=): what MXNet's bucketing relies on."""

from __future__ import annotations

import numpy as np
import pytest

import mxnb as mx
from mxnb.base import ShapeError

HIDDEN = 8


def unrolled(steps: int, hidden: int = HIDDEN):
    """A tanh RNN over ``steps`` inputs (data: (batch, steps, hidden)), one weight for every step."""
    weight, bias = mx.sym.Variable("w"), mx.sym.Variable("b")
    slices = mx.sym.SliceChannel(
        mx.sym.Variable("data"), num_outputs=steps, axis=1, squeeze_axis=True
    )
    state = None
    for t in range(steps):
        step_in = slices[t] if state is None else slices[t] + state
        state = mx.sym.tanh(
            mx.sym.FullyConnected(step_in, weight, bias, num_hidden=hidden, name=f"fc{t}"),
            name=f"tanh{t}",
        )
    return mx.sym.MakeLoss(mx.sym.sum(state * state), name="loss")


def bind(steps, batch=3, **sharing):
    return unrolled(steps).simple_bind(mx.cpu(), data=(batch, steps, HIDDEN), **sharing)


def chunks(executor):
    return {id(block._chunk) for block in executor._blocks}


def test_parameters_are_the_owners_arrays_and_blocks_come_from_its_pool():
    big = bind(6)
    small = bind(3, shared_exec=big, shared_arg_names=["w", "b"])
    for name in ("w", "b"):
        assert small.arg_dict[name] is big.arg_dict[name]
        assert small.grad_dict[name] is big.grad_dict[name]
    # every block of the short network fits in the long one's pool: nothing new is allocated
    assert small.memory_plan.internal_bytes <= big.memory_plan.internal_bytes
    assert chunks(small) <= chunks(big)
    assert small.borrowed_bytes == small.memory_plan.internal_bytes > 0
    assert len(big._data_pool) == len(big._blocks)
    # data is not shared without a buffer
    assert small.arg_dict["data"]._chunk is not big.arg_dict["data"]._chunk


def test_a_larger_executor_adds_its_new_blocks_to_the_pool():
    small = bind(2)
    pool_before = len(small._data_pool)
    big = bind(8, shared_exec=small, shared_arg_names=["w", "b"])
    assert big.borrowed_bytes < big.memory_plan.internal_bytes
    assert len(small._data_pool) > pool_before
    assert big._data_pool is small._data_pool
    assert chunks(big) & chunks(small)  # it still borrows what fits


def test_best_fit_serves_the_largest_block_first():
    from mxnb.executor.plan import StorageBlock
    from mxnb.executor.sharing import take_blocks

    pool = [mx.nd.zeros(size, dtype="uint8") for size in (100, 40, 64)]
    blocks = [StorageBlock(0, 30, ()), StorageBlock(1, 60, ()), StorageBlock(2, 90, ())]
    taken, borrowed = take_blocks(blocks, mx.cpu(), pool)
    assert borrowed == {0, 1, 2}
    # 90 takes the 100, 60 the 64, 30 the 40 (the smallest that fits, largest block first)
    assert [taken[i]._chunk for i in range(3)] == [pool[1]._chunk, pool[2]._chunk, pool[0]._chunk]
    assert [taken[i].size for i in range(3)] == [30, 60, 90]
    more, borrowed = take_blocks([StorageBlock(0, 500, ())], mx.cpu(), pool)
    assert borrowed == set() and pool[-1] is more[0] and len(pool) == 4


def test_shared_buffer_inputs_are_views_of_the_larger_array():
    buffer: dict = {}
    big = bind(6, shared_buffer=buffer)
    assert buffer["data"] is big.arg_dict["data"]
    small = bind(3, shared_exec=big, shared_arg_names=["w", "b"], shared_buffer=buffer)
    data = small.arg_dict["data"]
    assert data.shape == (3, 3, HIDDEN)
    assert data._chunk is big.arg_dict["data"]._chunk
    assert buffer["data"] is big.arg_dict["data"]  # the larger array stays in the buffer
    grown = bind(9, shared_exec=big, shared_arg_names=["w", "b"], shared_buffer=buffer)
    assert buffer["data"] is grown.arg_dict["data"]  # too small: a new array replaces it


@pytest.mark.timeout(120)
@pytest.mark.parametrize("engine_type", ["naive", "threaded_per_device"])
def test_alternating_executors_on_shared_memory_compute_what_separate_ones_do(engine_type):
    """Forward/backward of two executors over the same blocks, pushed without waiting between them."""
    rng = np.random.RandomState(0)
    weight = rng.uniform(-0.5, 0.5, (HIDDEN, HIDDEN)).astype(np.float32)
    inputs = {steps: rng.uniform(-1, 1, (3, steps, HIDDEN)).astype(np.float32) for steps in (6, 3)}
    previous = mx.engine.engine_type()
    mx.engine.set_engine(engine_type)
    try:

        def run(executors):
            for exe in executors.values():
                exe.arg_dict["w"][:] = weight
                exe.arg_dict["b"][:] = 0.1
            results = {}
            for _ in range(3):
                for steps, exe in executors.items():
                    exe.forward(is_train=True, data=inputs[steps])
                    exe.backward()
                    results.setdefault(steps, []).append(exe.grad_dict["w"].copy())
            return {steps: [g.asnumpy() for g in grads] for steps, grads in results.items()}

        big = bind(6)
        shared = run({6: big, 3: bind(3, shared_exec=big, shared_arg_names=["w", "b"])})
        alone = run({6: bind(6), 3: bind(3)})
    finally:
        mx.engine.set_engine(previous)
    for steps in (6, 3):
        for got, want in zip(shared[steps], alone[steps]):
            np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7)


def test_a_shared_parameter_of_another_shape_is_named():
    big = bind(4)
    other = unrolled(2, hidden=4)
    with pytest.raises(ShapeError, match="parameter 'w' has shape \\(4, 4\\) here but \\(8, 8\\)"):
        other.simple_bind(mx.cpu(), data=(3, 2, 4), shared_exec=big, shared_arg_names=["w", "b"])
    plain = mx.sym.FullyConnected(mx.sym.Variable("data"), num_hidden=HIDDEN, name="fc")
    with pytest.raises(ShapeError, match="'fc_weight'.*no parameter of that name"):
        plain.simple_bind(
            mx.cpu(), data=(3, HIDDEN), shared_exec=big, shared_arg_names=["fc_weight"]
        )
    with pytest.raises(ShapeError, match="needs shared_exec"):
        bind(2, shared_arg_names=["w"])


def test_the_borrower_writes_a_borrowed_blocks_var_on_every_access():
    """The engine orders the borrower's every op on shared memory against the owner's ops on it."""
    big = bind(6)
    small = bind(3, shared_exec=big, shared_arg_names=["w", "b"])
    borrowed = {id(block._var) for block in small._blocks}
    assert borrowed == small._borrowed_vars
    touched = set()
    for prepared in small._prepared:
        assert not borrowed & {id(var) for var in prepared.const_vars}, prepared.step
        touched |= borrowed & {id(var) for var in prepared.mutate_vars}
    assert touched == borrowed
    # the owner reads or writes each of those vars (an arena's ops read the arena's var)
    owner = set()
    for prepared in big._prepared:
        owner |= {id(var) for var in (*prepared.const_vars, *prepared.mutate_vars)}
    assert borrowed <= owner
