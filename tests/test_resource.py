"""Resources: one random generator and one temp space per context, each guarded by a var."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest

import mxnb as mx
from mxnb import resource, storage
from mxnb.engine.tracing import OpPush, Trace
from mxnb.operator import ResourceRequest


@pytest.fixture(params=["naive", "threaded", "threaded_per_device"])
def engine(request: pytest.FixtureRequest) -> Iterator[str]:
    previous = mx.engine.engine_type()
    mx.engine.set_engine(request.param)
    yield request.param
    mx.engine.set_engine(previous)


def test_one_resource_of_each_kind_per_context():
    rnd = resource.request(mx.cpu(), ResourceRequest.RANDOM)
    assert rnd is resource.request(mx.cpu(0), ResourceRequest.RANDOM)
    assert rnd is not resource.request(mx.cpu(1), ResourceRequest.RANDOM)
    temp = resource.request(mx.cpu(), ResourceRequest.TEMP_SPACE)
    assert temp.var is not rnd.var
    assert isinstance(rnd.generator, np.random.Generator)
    assert resource.manager.request_all(
        mx.cpu(), [ResourceRequest.TEMP_SPACE, ResourceRequest.RANDOM]
    ) == [
        temp,
        rnd,
    ]


def test_temp_space_grows_to_the_largest_request_and_is_reused():
    ctx = mx.cpu(9)
    temp = resource.TempSpaceResource(ctx)
    small = temp.get_space((4,), "float32")
    assert small.shape == (4,) and small.dtype == np.float32
    first_capacity = temp.capacity
    big = temp.get_space((10, 100), "float64")
    assert big.shape == (10, 100) and temp.capacity >= 8000 > first_capacity
    grown = temp.capacity
    handle = temp.handle
    again = temp.get_space((3, 3), "int32")  # smaller: same block
    assert temp.capacity == grown and temp.handle is handle
    assert again.shape == (3, 3)
    in_use = storage.stats(ctx).bytes_in_use
    temp.release()
    assert storage.stats(ctx).bytes_in_use == in_use - grown


def _draw(n: int = 5) -> list[float]:
    return mx.nd.random.uniform(shape=(n,)).asnumpy().tolist()


def test_same_seed_gives_the_same_numbers_whatever_the_engine(engine):
    mx.random.seed(123)
    first = _draw() + _draw()
    mx.random.seed(123)
    second = _draw() + _draw()
    assert first == second
    mx.random.seed(124)
    assert _draw() != first[:5]


def test_numbers_do_not_depend_on_the_engine():
    results = []
    for name in ("naive", "threaded_per_device"):
        previous = mx.engine.engine_type()
        mx.engine.set_engine(name)
        try:
            mx.random.seed(7)
            results.append(_draw(8) + mx.nd.random.normal(shape=(3,)).asnumpy().tolist())
        finally:
            mx.engine.set_engine(previous)
    assert results[0] == results[1]


@pytest.mark.timeout(60)
def test_reseed_is_ordered_between_random_ops(engine):
    r"""
    draw A   seed(5)   draw B   seed(5)   draw C      all write the generator's var,
      \_________|_________|________|_________/        so they run in push order: B == C
    """
    mx.random.seed(1)
    mx.nd.random.uniform(shape=(4,))
    mx.random.seed(5)
    b = mx.nd.random.uniform(shape=(4,))
    mx.random.seed(5)
    c = mx.nd.random.uniform(shape=(4,))
    assert b.asnumpy().tolist() == c.asnumpy().tolist()


def test_random_ops_mutate_the_generator_var():
    rnd = resource.request(mx.cpu(), ResourceRequest.RANDOM)
    with Trace() as tr:
        out = mx.nd.random.normal(shape=(2,))
        mx.random.seed(3)
        mx.nd.waitall()
    pushes = {event.name: event for event in tr.events_of(OpPush)}
    assert rnd.var.id in pushes["_random_normal"].mutate_vars
    assert out._var.id in pushes["_random_normal"].mutate_vars
    reseeded = {
        var
        for event in tr.events_of(OpPush)
        if event.name == "random_seed"
        for var in event.mutate_vars
    }
    assert rnd.var.id in reseeded


def test_contexts_draw_different_streams_from_one_seed():
    mx.random.seed(11)
    a = mx.nd.random.uniform(shape=(4,), ctx=mx.cpu(0)).asnumpy()
    b = mx.nd.random.uniform(shape=(4,), ctx=mx.cpu(1)).asnumpy()
    assert a.tolist() != b.tolist()
