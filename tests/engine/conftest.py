"""Fixtures for the engine suite: a fresh private engine per test, of every kind."""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import pytest

import mxnb as mx
from mxnb.engine import Engine

ENGINES = list(mx.engine.ENGINE_TYPES)
THREADED = ["threaded", "threaded_per_device"]


@pytest.fixture(params=ENGINES)
def engine(request: pytest.FixtureRequest) -> Iterator[Engine]:
    """A fresh engine of each kind (not the process-wide one), shut down afterwards."""
    eng = mx.engine.create(request.param)
    yield eng
    eng.shutdown(timeout=10)


@pytest.fixture(params=THREADED)
def threaded_engine(request: pytest.FixtureRequest) -> Iterator[Engine]:
    """A fresh threaded engine (shared pool and per-device)."""
    eng = mx.engine.create(request.param)
    yield eng
    eng.shutdown(timeout=10)


@pytest.fixture
def step_engine() -> Iterator[Engine]:
    """A fresh step engine."""
    eng = mx.engine.create("step")
    yield eng
    eng.shutdown(timeout=10)


@pytest.fixture(scope="session")
def completer() -> Iterator[ThreadPoolExecutor]:
    """Background threads that call async ops' on_complete from outside the engine."""
    with ThreadPoolExecutor(max_workers=2, thread_name_prefix="completer") as pool:
        yield pool


@pytest.fixture
def streamed_engine(monkeypatch):
    """``start(make_stream)``: a threaded_per_device engine on one virtual GPU whose workers get
    ``make_stream(name)`` streams (``engine.streams`` lists them); shut down after the test."""
    from mxnb.engine.threaded import ThreadedEnginePerDevice

    started = []
    before = mx.context.virtual_gpus()

    def start(make_stream):
        streams = []

        def make(device_id, count):
            made = [make_stream(f"gpu{device_id}/{i}") for i in range(count)]
            streams.extend(made)
            return made

        monkeypatch.setattr(ThreadedEnginePerDevice, "virtual_streams", staticmethod(make))
        mx.context.set_virtual_gpus(1)
        eng = mx.engine.create("threaded_per_device")
        eng.streams = streams
        started.append(eng)
        return eng

    yield start
    for eng in started:
        eng.shutdown()
    mx.context.set_virtual_gpus(before)
