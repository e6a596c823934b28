"""Random NDArray programs give numpy's values on every engine, however memory is reused.

A program works on a few slots of equally sized arrays, so the blocks of
dead temporaries are handed on at once: on the threaded engines a dead array
whose ops are still queued is parked and its block and var are adopted by
the next output of its size; elsewhere it is freed to the pool and reused.
Steps replace slots with new results (the old array dies), update them in
place, write through views, and push slow engine reads of a slot's raw
memory that outlive the slot's array.  The same steps run in numpy, one by
one.  Every slot's final value and every value a slow read saw must match:
a block reused before the ops still using it ran would show up as a wrong
value in one or the other.
"""

from __future__ import annotations

import time

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import mxnb as mx

SLOTS = 4
SIZE = 8
CPU = mx.cpu()

_slot = st.integers(0, SLOTS - 1)
_value = st.integers(-4, 4).map(float)
_span = st.tuples(st.integers(0, SIZE - 1), st.integers(1, SIZE)).map(
    lambda pair: (min(pair), max(pair[0] + 1, pair[1]))
)
_step = st.one_of(
    st.tuples(st.just("add"), _slot, _slot, _slot),
    st.tuples(st.just("scale"), _slot, _value, _slot),
    st.tuples(st.just("iadd"), _slot, _slot),
    st.tuples(st.just("fill"), _slot, _span, _value),
    st.tuples(st.just("copy_span"), _slot, _span, _slot),
    st.tuples(st.just("fresh"), _slot, _value),
    st.tuples(st.just("slow_read"), _slot, st.booleans()),
)


def _play(steps: list[tuple], full, read) -> list:
    """Play ``steps`` on slots made by ``full(value)``; ``read(index, slot)`` takes a slow read.

    mxnb arrays and numpy arrays take the same steps, written once.
    """
    slots = [full(float(i)) for i in range(SLOTS)]
    for index, step in enumerate(steps):
        kind = step[0]
        if kind == "add":
            _, i, j, k = step
            slots[k] = slots[i] + slots[j]
        elif kind == "scale":
            _, i, value, k = step
            slots[k] = slots[i] * value
        elif kind == "iadd":
            _, i, j = step
            slots[i] += slots[j]
        elif kind == "fill":
            _, i, (lo, hi), value = step
            slots[i][lo:hi] = value
        elif kind == "copy_span":
            _, i, (lo, hi), j = step
            slots[i][lo:hi] = slots[j][lo:hi]
        elif kind == "fresh":
            _, i, value = step
            slots[i] = full(value)
        else:
            _, i, slow = step
            read(index, slots[i], slow)
    return slots


def _run(steps: list[tuple]) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """Run ``steps`` on mxnb (current engine); return the final slots and what slow reads saw."""
    seen: dict[int, np.ndarray] = {}
    engine = mx.engine.get()

    def read(index: int, slot: mx.nd.NDArray, slow: bool) -> None:
        """An engine op reading the slot's memory; it holds the memory, not the array."""

        def run(rctx, raw=slot._array):
            if slow:
                time.sleep(0.002)
            seen[index] = raw.copy()

        engine.push_sync(run, CPU, [slot._var], [], 0, "slow_read")

    slots = _play(steps, lambda value: mx.nd.full((SIZE,), value, ctx=CPU), read)
    mx.nd.waitall()
    return [slot.asnumpy() for slot in slots], [seen[i] for i in sorted(seen)]


def _reference(steps: list[tuple]) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """The same steps in numpy, one by one (a slot never shares memory with another)."""
    seen: list[np.ndarray] = []
    slots = _play(
        steps,
        lambda value: np.full((SIZE,), value, np.float32),
        lambda index, slot, slow: seen.append(slot.copy()),
    )
    return slots, seen


@pytest.mark.timeout(300)
@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(steps=st.lists(_step, min_size=1, max_size=30))
def test_random_programs_match_numpy_whatever_memory_is_reused(engine, steps):
    slots, seen = _run(steps)
    want_slots, want_seen = _reference(steps)
    for got, want in zip(slots, want_slots):
        np.testing.assert_array_equal(got, want)
    assert len(seen) == len(want_seen)
    for got, want in zip(seen, want_seen):
        np.testing.assert_array_equal(got, want)
