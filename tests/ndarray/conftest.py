"""Fixtures for the NDArray suite: run each contract on every process-wide engine kind."""

from __future__ import annotations

import importlib.util
from collections.abc import Iterator

import pytest

import mxnb as mx

ENGINES = ["naive", "threaded", "threaded_per_device"]
if importlib.util.find_spec("mxnb.engine.stepper") is not None:
    ENGINES.append("step")
THREADED = ["threaded", "threaded_per_device"]


def _use(name: str) -> Iterator[str]:
    previous = mx.engine.engine_type()
    mx.engine.set_engine(name)
    try:
        yield name
    finally:
        mx.engine.set_engine(previous)


@pytest.fixture(params=ENGINES)
def engine(request: pytest.FixtureRequest) -> Iterator[str]:
    """The process-wide engine set to each kind in turn (restored afterwards)."""
    yield from _use(request.param)


@pytest.fixture(params=THREADED)
def threaded(request: pytest.FixtureRequest) -> Iterator[str]:
    """The process-wide engine set to each threaded kind (ops really run later)."""
    yield from _use(request.param)


@pytest.fixture
def naive() -> Iterator[str]:
    """The process-wide engine set to the synchronous naive engine."""
    yield from _use("naive")
