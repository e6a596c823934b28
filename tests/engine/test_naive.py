"""The naive engine: the rule with no threads, an op run in the thread that made it ready.

Whatever arrives while an op runs and needs its vars — a push from inside it
or from another thread, ``wait_for_var``, ``try_delete_idle`` — sees it
booked on its vars like on any engine; these tests check the dependency rule
holds in each case and that nothing is left booked afterwards.
"""

from __future__ import annotations

import threading

import pytest

import mxnb as mx
from mxnb.base import EngineError, OpError


@pytest.fixture
def naive():
    eng = mx.engine.create("naive")
    yield eng
    eng.shutdown(timeout=10)


def idle(var) -> bool:
    return var.pending_write is None and var.pending_reads == 0 and not var.queue


def test_ops_leave_no_booking_and_count_their_writes(naive):
    a, b = naive.new_var(name="a"), naive.new_var(name="b")
    seen = []
    for index in range(5):
        naive.push_sync(lambda rctx, i=index: seen.append(i), mx.cpu(), [a], [b])
    assert seen == list(range(5))
    assert naive.num_pending() == 0
    assert idle(a) and idle(b)
    assert b.writes_pushed == b.writes_done == 5
    naive.wait_for_var(b)  # returns at once: every write is done


def test_nested_push_on_the_running_ops_var_runs_after_it(naive):
    var = naive.new_var(name="v")
    order = []

    def outer(rctx):
        order.append("outer start")
        naive.push_sync(lambda rctx: order.append("inner"), mx.cpu(), mutate_vars=[var])
        order.append("outer end")  # the inner write waits for this op

    naive.push_sync(outer, mx.cpu(), mutate_vars=[var])
    assert order == ["outer start", "outer end", "inner"]
    assert naive.num_pending() == 0 and idle(var)
    assert var.writes_pushed == var.writes_done == 2


def test_nested_push_on_other_vars_runs_at_once(naive):
    var, other = naive.new_var(name="v"), naive.new_var(name="other")
    order = []

    def outer(rctx):
        naive.push_sync(lambda rctx: order.append("inner"), mx.cpu(), [var], [other])
        order.append("outer")

    naive.push_sync(outer, mx.cpu(), const_vars=[var])  # readers do not conflict
    assert order == ["inner", "outer"]
    assert naive.num_pending() == 0 and idle(var) and idle(other)


def test_waiting_inside_an_op_for_its_own_var_is_an_error(naive):
    var = naive.new_var(name="mine")
    caught = []

    def fn(rctx):
        try:
            naive.wait_for_var(var)
        except EngineError as exc:
            caught.append(str(exc))

    naive.push_sync(fn, mx.cpu(), mutate_vars=[var], name="writer")
    assert caught and "writes 'mine' itself" in caught[0]
    assert naive.num_pending() == 0 and idle(var)


def test_try_delete_idle_refuses_the_running_ops_var(naive):
    var = naive.new_var(name="busy")
    answers = []
    naive.push_sync(lambda rctx: answers.append(naive.try_delete_idle(var)), mx.cpu(), [var])
    assert answers == [False] and not var.deleted
    assert naive.try_delete_idle(var)  # idle now


@pytest.mark.timeout(30)
def test_another_threads_push_waits_for_the_running_op(naive):
    var = naive.new_var(name="shared")
    started, release = threading.Event(), threading.Event()
    order = []

    def slow(rctx):
        started.set()
        release.wait(10)
        order.append("slow")

    runner = threading.Thread(
        target=lambda: naive.push_sync(slow, mx.cpu(), mutate_vars=[var], name="slow")
    )
    runner.start()
    assert started.wait(10)
    # pushed from this thread while 'slow' runs in the other one
    naive.push_sync(lambda rctx: order.append("after"), mx.cpu(), [var], name="after")
    waiter_done = threading.Event()
    waiter = threading.Thread(target=lambda: (naive.wait_for_all(), waiter_done.set()))
    waiter.start()
    assert order == [] and not waiter_done.wait(0.2)
    release.set()
    runner.join(10)
    waiter.join(10)
    assert order == ["slow", "after"]  # the reader ran in the thread that freed it
    assert waiter_done.is_set()
    assert naive.num_pending() == 0 and idle(var)


def test_a_failing_op_stores_its_error_and_skips_dependents(naive):
    var, out = naive.new_var(name="v"), naive.new_var(name="out")
    ran = []

    def boom(rctx):
        raise ValueError("bad kernel")

    naive.push_sync(boom, mx.cpu(), mutate_vars=[var], name="boom")
    naive.push_sync(lambda rctx: ran.append(1), mx.cpu(), [var], [out], name="reader")
    assert ran == []  # skipped: its input failed
    with pytest.raises(OpError, match="bad kernel"):
        naive.wait_for_var(out)
    naive.push_sync(lambda rctx: ran.append(2), mx.cpu(), mutate_vars=[var])
    naive.wait_for_all()
    # a write that does not read var runs, and clears its failure: var was written again
    assert ran == [2] and naive.num_pending() == 0 and idle(var)
    naive.wait_for_var(var)


def test_keyboard_interrupt_in_an_op_is_booked_then_raised(naive):
    var = naive.new_var(name="v")

    def interrupted(rctx):
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        naive.push_sync(interrupted, mx.cpu(), mutate_vars=[var])
    assert naive.num_pending() == 0 and idle(var)
    with pytest.raises(OpError):
        naive.wait_for_var(var)


def test_an_op_ready_at_push_is_traced_like_one_a_completion_released(naive):
    from mxnb.engine.tracing import OpEnd, OpPush, OpReady, OpStart

    var = naive.new_var(name="v")
    with mx.engine.trace() as tr:
        first = naive.push_sync(lambda rctx: None, mx.cpu(), mutate_vars=[var], name="first")

        def outer(rctx):  # pushes while running: itself booked, the inner op waits for it
            naive.push_sync(lambda rctx: None, mx.cpu(), [var], name="inner")

        booked = naive.push_sync(outer, mx.cpu(), mutate_vars=[var], name="outer")
        naive.wait_for_all()
    kinds = {
        op_id: [type(e) for e in tr.events if getattr(e, "op_id", None) == op_id]
        for op_id in (first, booked)
    }
    assert kinds[first] == kinds[booked] == [OpPush, OpReady, OpStart, OpEnd]
    inner = next(e for e in tr.events if type(e) is OpPush and e.name == "inner")
    assert [(d.op_id, d.kind.value) for d in inner.waits_on] == [(booked, "read-after-write")]
    assert tr.ops()[first].name == "first"
