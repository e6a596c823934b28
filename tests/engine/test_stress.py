"""Stress: long chains, wide fans, many pushing threads, and no leaks.

The leak tests push many tiny ops (fresh vars that are deleted, a shared var
read over and over, a chain, async ops, failures) and check that the objects
the engine holds — ops, completions, queued entries, reader lists, stored
errors — do not grow with the number of ops.
"""

from __future__ import annotations

import gc
import threading
import tracemalloc

import pytest

import mxnb as mx
from mxnb.base import OpError
from mxnb.engine.running import _Completion
from mxnb.engine.var import Opr

CPU = mx.cpu()


@pytest.mark.timeout(60)
def test_long_chain_runs_in_order(engine):
    """op0 -> op1 -> ... -> op4999 on one var: every op sees its predecessor's value."""
    a = engine.new_var(name="a")
    state = {"last": -1}
    broken = []

    def step(i):
        def fn(rctx):
            if state["last"] != i - 1:
                broken.append(i)
            state["last"] = i

        return fn

    for i in range(5000):
        engine.push_sync(step(i), CPU, mutate_vars=[a])
    engine.wait_for_var(a)
    assert broken == [] and state["last"] == 4999


@pytest.mark.timeout(60)
def test_wide_fan_then_writer(engine):
    r"""
    w0 -> r0 r1 ... r1999 (all read a, all see w0's value) -> w1 (after every reader)
    """
    a = engine.new_var(name="a")
    state = {"a": 0}
    seen = []
    engine.push_sync(lambda rctx: state.update(a=1), CPU, mutate_vars=[a])
    for _ in range(2000):
        engine.push_sync(lambda rctx: seen.append(state["a"]), CPU, const_vars=[a])
    engine.push_sync(lambda rctx: state.update(a=2, readers=len(seen)), CPU, mutate_vars=[a])
    engine.wait_for_all()
    assert seen == [1] * 2000
    assert state["readers"] == 2000 and state["a"] == 2


@pytest.mark.timeout(120)
def test_threads_pushing_chains_and_fans_at_once(engine):
    """4 threads each push their own chain plus reads of one shared var; all values correct."""
    shared = engine.new_var(name="shared")
    engine.push_sync(lambda rctx: None, CPU, mutate_vars=[shared])
    results: dict[int, list[int]] = {}

    def worker(t):
        own = engine.new_var(name=f"own{t}")
        results[t] = []
        for i in range(500):
            engine.push_sync(
                lambda rctx, i=i: results[t].append(i), CPU, const_vars=[shared], mutate_vars=[own]
            )
        engine.wait_for_var(own)

    threads = [threading.Thread(target=worker, args=(t,)) for t in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    engine.wait_for_all()
    assert all(results[t] == list(range(500)) for t in range(4))


def _engine_objects() -> int:
    gc.collect()
    return sum(1 for obj in gc.get_objects() if isinstance(obj, (Opr, _Completion)))


def _mixed_workload(engine, rounds: int, completer) -> None:
    shared = engine.new_var(name="shared")
    chain = engine.new_var(name="chain")
    for i in range(rounds):
        fresh = engine.new_var()
        engine.push_sync(lambda rctx: None, CPU, const_vars=[shared], mutate_vars=[fresh])
        engine.push_sync(lambda rctx: None, CPU, mutate_vars=[chain])
        engine.push_delete(fresh, CPU, fn=lambda rctx: None)
        if i % 100 == 0:
            engine.push_async(lambda rctx, done: completer.submit(done), CPU, mutate_vars=[chain])
            engine.push_sync(lambda rctx: 1 / 0, CPU, const_vars=[shared], name="fails")
            try:
                engine.wait_for_all()
            except OpError:
                pass
    engine.wait_for_all()
    assert len(shared.readers) < 2000  # pruned: bounded by the ops in flight, not by rounds
    assert not shared.queue and not chain.queue


@pytest.mark.timeout(120)
def test_no_growth_of_engine_objects(engine, completer):
    """5,000 rounds (15,000+ ops): engine-held objects and traced memory stay flat."""
    _mixed_workload(engine, 500, completer)  # warm up caches and pools
    before = _engine_objects()
    tracemalloc.start()
    try:
        start, _ = tracemalloc.get_traced_memory()
        _mixed_workload(engine, 5_000, completer)
        gc.collect()
        end, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    after = _engine_objects()
    assert after - before <= 8, f"{after - before} ops/completions still alive"
    assert end - start < 256 * 1024, f"traced memory grew by {end - start} bytes"
    assert engine.num_pending() == 0 and engine._errors == []


@pytest.mark.slow
@pytest.mark.timeout(900)
@pytest.mark.parametrize("name", ["naive", "threaded_per_device"])
def test_a_million_tiny_ops_leave_no_growth(name):
    """1,000,000 tiny ops (independent and chained): object counts identical before and after."""
    engine = mx.engine.create(name)
    try:
        chain = engine.new_var(name="chain")
        noop = lambda rctx: None
        for _ in range(1000):
            engine.push_sync(noop, CPU, mutate_vars=[chain])
        engine.wait_for_all()
        gc.collect()
        before = len(gc.get_objects())
        before_ops = _engine_objects()
        for i in range(500_000):
            engine.push_sync(noop, CPU)
            engine.push_sync(noop, CPU, mutate_vars=[chain])
            if i % 50_000 == 0:
                engine.wait_for_all()
        engine.wait_for_all()
        gc.collect()
        assert _engine_objects() - before_ops <= 4
        assert len(gc.get_objects()) - before < 500
    finally:
        engine.shutdown(timeout=10)
