"""A virtual GPU's workers on a core of their own (mxnb.engine.affinity): the policy and the pinning."""

from __future__ import annotations

import logging
import os

import pytest

import mxnb as mx
from mxnb.engine import affinity
from mxnb.engine.affinity import AFFINITY_ENV, virtual_gpu_cores

pytestmark = pytest.mark.skipif(
    not hasattr(os, "sched_setaffinity"), reason="CPU affinity is a Linux call"
)


@pytest.fixture
def machine(monkeypatch):
    """Fake the process's allowed cores and the virtual GPU count: ``machine(cores, gpus, mode)``."""

    def configure(cores: list[int], gpus: int, mode: str | None) -> None:
        def allowed(pid: int) -> set[int]:
            assert pid == os.getpid(), "the policy reads the process's (main thread's) cores"
            return set(cores)

        monkeypatch.setattr(affinity.os, "sched_getaffinity", allowed)
        monkeypatch.setattr(affinity, "virtual_gpus", lambda: gpus)
        if mode is None:
            monkeypatch.delenv(AFFINITY_ENV, raising=False)
        else:
            monkeypatch.setenv(AFFINITY_ENV, mode)

    return configure


def test_auto_gives_each_virtual_gpu_its_own_core(machine):
    machine([2, 5], gpus=2, mode=None)
    assert [virtual_gpu_cores(device) for device in range(2)] == [{2}, {5}]


@pytest.mark.parametrize(("cores", "gpus"), [([0], 1), ([0, 1], 1), ([0], 2), ([0, 1], 3)])
def test_auto_leaves_threads_free_without_a_core_per_device(machine, cores, gpus):
    machine(cores, gpus=gpus, mode="auto")
    assert all(virtual_gpu_cores(device) is None for device in range(gpus))


def test_on_shares_cores_in_turn(machine):
    machine([0, 1], gpus=3, mode="on")
    assert [virtual_gpu_cores(device) for device in range(3)] == [{0}, {1}, {0}]


@pytest.mark.parametrize("mode", ["off", "0", " OFF "])
def test_off_never_pins(machine, mode):
    machine([0, 1, 2, 3], gpus=2, mode=mode)
    assert virtual_gpu_cores(0) is None


def test_an_unknown_mode_warns_and_means_auto(machine, caplog):
    machine([0, 1], gpus=2, mode="sometimes")
    with caplog.at_level(logging.WARNING, logger="mxnb.engine"):
        assert virtual_gpu_cores(1) == {1}
    assert AFFINITY_ENV in caplog.text and "'sometimes'" in caplog.text


def _worker_cores(engine, ctx) -> set[int]:
    """The cores of the worker thread that runs an op on ``ctx``."""
    seen: list[set[int]] = []
    var = engine.new_var()
    engine.push_sync(lambda rctx: seen.append(os.sched_getaffinity(0)), ctx, mutate_vars=[var])
    engine.wait_for_var(var)
    return seen[0]


@pytest.fixture
def two_gpus():
    """Two virtual GPUs; these tests run their own engines, never the default one."""
    before = mx.context.virtual_gpus()
    mx.context.set_virtual_gpus(2)
    yield [mx.gpu(0), mx.gpu(1)]
    mx.context.set_virtual_gpus(before)


@pytest.mark.parametrize("mode", ["on", "off"])
def test_virtual_gpu_workers_run_on_their_core(two_gpus, monkeypatch, mode):
    monkeypatch.setenv(AFFINITY_ENV, mode)
    process = os.sched_getaffinity(os.getpid())
    cores = sorted(process)
    engine = mx.engine.create("threaded_per_device")
    try:
        for device, ctx in enumerate(two_gpus):
            expected = {cores[device % len(cores)]} if mode == "on" else process
            assert _worker_cores(engine, ctx) == expected
        assert _worker_cores(engine, mx.cpu()) == process  # CPU workers stay free
        assert os.sched_getaffinity(0) == process  # the pushing thread is never pinned
    finally:
        engine.shutdown()


def test_a_pool_started_from_a_pinned_worker_gets_its_own_core(two_gpus, monkeypatch):
    monkeypatch.setenv(AFFINITY_ENV, "on")
    cores = sorted(os.sched_getaffinity(os.getpid()))
    engine = mx.engine.create("threaded_per_device")
    try:
        found: list[set[int]] = []
        var, done = engine.new_var(), engine.new_var()

        def record(rctx) -> None:
            found.append(os.sched_getaffinity(0))

        def start_gpu1_pool(rctx) -> None:  # runs on gpu(0)'s pinned worker: gpu(1)'s pool starts
            engine.push_sync(record, mx.gpu(1), mutate_vars=[done])

        engine.push_sync(start_gpu1_pool, mx.gpu(0), mutate_vars=[var])
        engine.wait_for_var(var)
        engine.wait_for_var(done)
        assert found == [{cores[1 % len(cores)]}]
    finally:
        engine.shutdown()
