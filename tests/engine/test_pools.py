"""Where ops run: worker pools of the threaded engines, virtual GPUs, copy workers."""

from __future__ import annotations

import threading

import pytest

import mxnb as mx
from mxnb.engine.threaded import ThreadedEnginePerDevice, default_cpu_workers


@pytest.fixture
def two_virtual_gpus():
    before = mx.context.virtual_gpus()
    mx.context.set_virtual_gpus(2)
    yield
    mx.context.set_virtual_gpus(before)


def workers_of(engine, ctx, copy=False, n=6):
    seen = []
    lock = threading.Lock()

    def fn(rctx):
        with lock:
            seen.append((rctx.worker, rctx.ctx, rctx.stream))

    for _ in range(n):
        engine.push_sync(fn, ctx, copy=copy)
    engine.wait_for_all()
    return seen


@pytest.mark.timeout(30)
def test_per_device_engine_has_a_pool_per_context_and_copy_workers(two_virtual_gpus):
    engine = ThreadedEnginePerDevice()
    try:
        cpu = workers_of(engine, mx.cpu())
        gpu0 = workers_of(engine, mx.gpu(0))
        gpu1 = workers_of(engine, mx.gpu(1))
        copies = workers_of(engine, mx.gpu(1), copy=True)
        assert all(w.startswith("cpu(0)/") and stream is None for w, _, stream in cpu)
        assert all(w.startswith("gpu(0)/") and ctx == mx.gpu(0) for w, ctx, _ in gpu0)
        assert all(w.startswith("gpu(1)/") for w, _, _ in gpu1)
        assert all(w == "copy/0" and ctx == mx.gpu(1) for w, ctx, _ in copies)
        assert all(stream is None for _, _, stream in gpu0)  # virtual GPUs have no stream
        assert sorted(engine.workers())[:2] == ["copy/0", "cpu(0)/0"]
    finally:
        engine.shutdown()


@pytest.mark.timeout(30)
def test_shared_pool_engine_runs_every_context_on_one_pool(two_virtual_gpus):
    engine = mx.engine.create("threaded")
    try:
        seen = workers_of(engine, mx.gpu(0)) + workers_of(engine, mx.cpu(), copy=True)
        assert all(w.startswith("cpu/") for w, _, _ in seen)
    finally:
        engine.shutdown()


@pytest.mark.timeout(30)
def test_dependencies_cross_pools(two_virtual_gpus):
    r"""
    produce on gpu(0) -> copy to cpu (copy worker) -> consume on cpu(0)
    """
    engine = ThreadedEnginePerDevice()
    try:
        src, dst = engine.new_var(name="src"), engine.new_var(name="dst")
        log = []
        engine.push_sync(lambda r: log.append(("produce", r.worker)), mx.gpu(0), [], [src])
        engine.push_sync(
            lambda r: log.append(("copy", r.worker)), mx.cpu(), [src], [dst], copy=True
        )
        engine.push_sync(lambda r: log.append(("consume", r.worker)), mx.cpu(), [dst], [])
        engine.wait_for_all()
        assert [step for step, _ in log] == ["produce", "copy", "consume"]
        assert log[0][1].startswith("gpu(0)/") and log[1][1] == "copy/0"
        assert log[2][1].startswith("cpu(0)/")
    finally:
        engine.shutdown()


def test_worker_count_comes_from_the_environment(monkeypatch):
    monkeypatch.setenv("MXNB_CPU_WORKER_NTHREADS", "3")
    assert default_cpu_workers() == 3
    engine = ThreadedEnginePerDevice()
    try:
        assert [w for w in engine.workers() if w.startswith("cpu")] == [
            "cpu(0)/0",
            "cpu(0)/1",
            "cpu(0)/2",
        ]
    finally:
        engine.shutdown()
    monkeypatch.setenv("MXNB_CPU_WORKER_NTHREADS", "")
    assert default_cpu_workers() >= 2


def test_engine_type_from_the_environment(monkeypatch):
    monkeypatch.setenv("MXNB_ENGINE_TYPE", "naive")
    engine = mx.engine.create()
    assert engine.kind == "naive"
    monkeypatch.setenv("MXNB_ENGINE_TYPE", "nonsense")
    with pytest.raises(mx.base.EngineError, match="unknown engine type 'nonsense'.*NaiveEngine"):
        mx.engine.create()


def test_mxnets_engine_names_and_variable_are_understood(monkeypatch):
    """``MXNET_ENGINE_TYPE=NaiveEngine``, as a user of MXNet sets it, when MXNB_ENGINE_TYPE is unset."""
    monkeypatch.delenv("MXNB_ENGINE_TYPE", raising=False)
    for mxnet_name, kind in mx.engine.MXNET_ENGINE_NAMES.items():
        monkeypatch.setenv("MXNET_ENGINE_TYPE", mxnet_name)
        engine = mx.engine.create()
        try:
            assert engine.kind == kind
        finally:
            engine.shutdown()
    monkeypatch.setenv("MXNB_ENGINE_TYPE", "naive")  # mxnb's own variable wins
    engine = mx.engine.create()
    assert engine.kind == "naive"
    engine.shutdown()
    engine = mx.engine.create("ThreadedEngine")
    assert engine.kind == "threaded"
    engine.shutdown()


@pytest.mark.timeout(30)
def test_shutdown_stops_the_workers_and_refuses_pushes():
    engine = ThreadedEnginePerDevice()
    threads = [t for pool in engine._pools.values() for t in pool.threads]
    engine.push_sync(lambda r: None, mx.cpu())
    engine.shutdown()
    assert not any(t.is_alive() for t in threads)
    with pytest.raises(mx.base.EngineError, match="shut down"):
        engine.push_sync(lambda r: None, mx.cpu())
    engine.shutdown()  # idempotent


@pytest.mark.timeout(30)
@pytest.mark.parametrize("kind", ["threaded", "threaded_per_device"])
def test_a_push_beyond_run_ahead_hands_the_gil_over_and_never_blocks(kind, monkeypatch):
    """With more than ``run_ahead`` ops pending a push releases the GIL once; it never waits."""
    from mxnb.engine import base

    yields = []
    monkeypatch.setattr(base, "_sleep", lambda seconds: yields.append(seconds))
    engine = mx.engine.create(kind)
    engine.run_ahead = 4
    gate = threading.Event()
    try:
        v = engine.new_var(name="v")
        engine.push_sync(lambda rctx: gate.wait(10), mx.cpu(), mutate_vars=[v], name="gate")
        for _ in range(9):  # all queued behind the gate: pushing must not wait for it
            engine.push_sync(lambda rctx: None, mx.cpu(), mutate_vars=[v])
        assert engine.num_pending() == 10 and not gate.is_set()
        assert yields == [0] * 6  # the pushes that left 5..10 ops pending
        gate.set()
        engine.wait_for_all()
    finally:
        gate.set()
        engine.shutdown()


@pytest.mark.parametrize("kind", ["threaded", "threaded_per_device"])
def test_run_ahead_comes_from_the_environment_when_the_engine_is_made(kind, monkeypatch):
    """``MXNB_ENGINE_RUN_AHEAD`` is read by each new threaded engine; naive never yields."""
    import math

    monkeypatch.setenv("MXNB_ENGINE_RUN_AHEAD", "7")
    engine, naive = mx.engine.create(kind), mx.engine.create("naive")
    monkeypatch.setenv("MXNB_ENGINE_RUN_AHEAD", "not a number")
    fallback = mx.engine.create(kind)
    try:
        assert engine.run_ahead == 7 and naive.run_ahead == math.inf
        assert fallback.run_ahead == 128  # a bad value is logged, the default kept
    finally:
        for eng in (engine, naive, fallback):
            eng.shutdown()
