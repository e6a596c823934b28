"""Fixtures for the debugger suite: fresh private engines, shut down afterwards."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

import mxnb as mx
from mxnb.engine import Engine


@pytest.fixture
def threaded() -> Iterator[Engine]:
    """A fresh threaded_per_device engine (two CPU workers on these machines, or more)."""
    eng = mx.engine.create("threaded_per_device")
    yield eng
    eng.shutdown(timeout=10)


@pytest.fixture
def naive() -> Iterator[Engine]:
    """A fresh naive engine."""
    eng = mx.engine.create("naive")
    yield eng
    eng.shutdown(timeout=10)


@pytest.fixture
def step() -> Iterator[Engine]:
    """A fresh step engine."""
    eng = mx.engine.create("step")
    yield eng
    eng.shutdown(timeout=10)
