"""Trace.idle(): every idle stretch of every lane gets exactly one reason, with the exact var and op."""

from __future__ import annotations

import itertools
import time

import pytest

import mxnb as mx
from mxnb.engine.idle_time import REASONS, IdleSpan

CPU = mx.cpu()


def sleeper(seconds):
    return lambda rctx: time.sleep(seconds)


def span_at(spans, lane, t):
    """The one idle span of ``lane`` that covers time ``t``."""
    (found,) = [s for s in spans if s.lane == lane and s.start <= t < s.end]
    return found


def assert_tiles_idle_time(trace):
    """Per lane: spans lie in the traced span, never overlap an op, and add up to its idle time."""
    events = trace.events
    first = min(e.time for e in events)
    last = max(e.time for e in events)
    spans = trace.idle()
    ops = trace.ops().values()
    lanes = {op.worker for op in ops if op.worker is not None}
    assert {s.lane for s in spans} <= lanes
    for lane in lanes:
        busy = [(op.start, op.end) for op in ops if op.worker == lane]
        mine = sorted((s for s in spans if s.lane == lane), key=lambda s: s.start)
        for s in mine:
            assert first <= s.start < s.end <= last and s.reason in REASONS
            assert not any(a < s.end and s.start < b for a, b in busy)
        for one, two in itertools.pairwise(mine):
            assert one.end <= two.start
        idle = (last - first) - sum(b - a for a, b in busy)
        assert abs(sum(s.end - s.start for s in mine) - idle) < 1e-6
        summary = trace.idle_summary()[lane] if mine else dict.fromkeys(REASONS, 0.0)
        assert abs(sum(summary.values()) - idle) < 1e-6


@pytest.mark.timeout(30)
def test_a_planted_dependency_names_the_var_and_the_op_holding_it(threaded):
    """D's lane idles while B waits for var x, which the slow A holds."""
    with mx.engine.trace() as tr:
        x, y = threaded.new_var(name="x"), threaded.new_var(name="y")
        a = threaded.push_sync(sleeper(0.04), CPU, mutate_vars=[x], name="A")
        d = threaded.push_sync(sleeper(0.01), CPU, mutate_vars=[y], name="D")
        threaded.push_sync(sleeper(0.005), CPU, const_vars=[x], name="B")
        threaded.wait_for_all()
    ops = tr.ops()
    lane = ops[d].worker
    assert ops[a].worker != lane  # A and D ran at once on the two workers
    spans = tr.idle()
    found = span_at(spans, lane, (ops[d].end + ops[a].end) / 2)
    assert found == IdleSpan(lane, ops[d].end, ops[a].end, "waiting_on_var", a, x.id)
    assert_tiles_idle_time(tr)


@pytest.mark.timeout(30)
def test_a_slow_front_end_is_nothing_pushed_naming_the_next_op(naive):
    with mx.engine.trace() as tr:
        v = naive.new_var(name="v")
        first = naive.push_sync(sleeper(0.005), CPU, mutate_vars=[v], name="first")
        time.sleep(0.03)  # the front end's own work
        second = naive.push_sync(sleeper(0.005), CPU, mutate_vars=[v], name="second")
    ops = tr.ops()
    found = span_at(tr.idle(), "main", (ops[first].end + ops[second].push) / 2)
    assert found == IdleSpan(
        "main", ops[first].end, ops[second].push, "nothing_pushed", second, None
    )
    assert_tiles_idle_time(tr)


@pytest.mark.timeout(30)
def test_a_pool_that_does_not_take_ready_work_is_ready_not_started(step):
    """The step engine's lane holds ready ops until told: the extreme of an oversubscribed pool."""
    with mx.engine.trace() as tr:
        a, b = step.new_var(name="a"), step.new_var(name="b")
        first = step.push_sync(sleeper(0.002), CPU, mutate_vars=[a], name="first")
        second = step.push_sync(sleeper(0.002), CPU, mutate_vars=[b], name="second")
        time.sleep(0.02)
        step.step()
        time.sleep(0.02)
        step.step()
    ops = tr.ops()
    spans = tr.idle()
    before = span_at(spans, "step", (ops[second].push + ops[first].start) / 2)
    assert before == IdleSpan(
        "step", ops[first].push, ops[first].start, "ready_not_started", first, None
    )
    between = span_at(spans, "step", (ops[first].end + ops[second].start) / 2)
    assert between == IdleSpan(
        "step", ops[first].end, ops[second].start, "ready_not_started", second, None
    )
    assert_tiles_idle_time(tr)


@pytest.mark.timeout(30)
def test_spans_add_up_per_lane_on_a_mixed_threaded_run(threaded):
    with mx.engine.trace() as tr:
        vs = [threaded.new_var(name=f"v{i}") for i in range(3)]
        for i in range(12):
            reads = [vs[(i + 1) % 3]] if i % 2 else []
            threaded.push_sync(sleeper(0.001 * (i % 3)), CPU, reads, [vs[i % 3]], name=f"op{i % 4}")
            if i % 5 == 4:
                time.sleep(0.004)
        threaded.wait_for_all()
    assert_tiles_idle_time(tr)
    assert set(tr.idle_summary()) == {op.worker for op in tr.ops().values()}


def test_an_empty_trace_has_no_idle_spans():
    assert mx.engine.Trace().idle() == [] and mx.engine.Trace().idle_summary() == {}
