"""Fixtures shared by the whole suite."""

from __future__ import annotations

import os
import pickle
import tracemalloc
from collections.abc import Callable
from typing import Any

import pytest

import mxnb as mx


@pytest.fixture
def two_virtual_gpus():
    """Two virtual GPUs (``[gpu(0), gpu(1)]``) for the test; the previous count is restored after it."""
    before = mx.context.virtual_gpus()
    mx.context.set_virtual_gpus(2)
    yield [mx.gpu(0), mx.gpu(1)]
    mx.nd.waitall()
    mx.context.set_virtual_gpus(before)


def _traced_peak(call: Callable[[], Any]) -> tuple[Any, int]:
    """Run ``call()``; return its result and the peak of traced memory (bytes) while it ran.

    The peak counts what the result still holds (it is measured before the
    result is handed back); exceptions propagate.
    """
    was_tracing = tracemalloc.is_tracing()
    if not was_tracing:
        tracemalloc.start()
    tracemalloc.reset_peak()
    base, _ = tracemalloc.get_traced_memory()
    try:
        result = call()
        _, peak = tracemalloc.get_traced_memory()
        return result, peak - base
    finally:
        if not was_tracing:
            tracemalloc.stop()


class _PickleBomb:
    """Unpickling this runs ``touch <marker>``: a file appearing means a reader unpickled."""

    def __init__(self, marker: str) -> None:
        self.marker = marker

    def __reduce__(self):
        return (os.system, ("touch " + self.marker,))


@pytest.fixture
def pickle_bomb(tmp_path) -> tuple[bytes, Any]:
    """``(payload, marker path)``: a pickle that creates ``marker`` if anything ever loads it."""
    marker = tmp_path / "unpickled"
    return pickle.dumps(_PickleBomb(str(marker))), marker


@pytest.fixture
def traced_peak() -> Callable[[Callable[[], Any]], tuple[Any, int]]:
    """``traced_peak(call) -> (result, peak bytes)``: memory bounds without timing anything."""
    return _traced_peak
