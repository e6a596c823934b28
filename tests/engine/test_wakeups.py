"""Who gets woken, and how the bookkeeping lock is taken under contention.

A thread blocked in ``wait_for_var`` / ``wait_for_all`` must be woken only by
a completion that may satisfy it: waking it on every completion makes it and
the workers pass the GIL back and forth once per op.  And a thread that finds
the bookkeeping lock taken must not queue on it (see
``Engine._acquire_contended``): these tests check the behaviour, not timings.
"""

from __future__ import annotations

import threading

import pytest

import mxnb as mx


class CountingCondition:
    """Wraps the engine's condition and counts ``notify_all`` calls."""

    def __init__(self, cond: threading.Condition) -> None:
        self._cond = cond
        self.notified = 0

    def notify_all(self) -> None:
        self.notified += 1
        self._cond.notify_all()

    def __getattr__(self, name: str):
        return getattr(self._cond, name)

    def __enter__(self):
        return self._cond.__enter__()

    def __exit__(self, *exc):
        return self._cond.__exit__(*exc)


def blocked_var(engine, ctx):
    """A var whose write waits on an event; returns (var, release)."""
    var = engine.new_var(name="blocked")
    gate = threading.Event()
    engine.push_sync(lambda rctx: gate.wait(10), ctx, mutate_vars=[var], name="gate")
    return var, gate.set


def wait_in_thread(fn):
    done = threading.Event()
    errors = []

    def target():
        try:
            fn()
        except BaseException as exc:  # noqa: BLE001 - reported by the test
            errors.append(exc)
        done.set()

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    return thread, done, errors


def wait_until_waiting(engine, count=1):
    for _ in range(1000):
        with engine._lock:
            if engine._num_waiters >= count:
                return
        threading.Event().wait(0.005)
    raise AssertionError("the waiting thread never blocked")


@pytest.mark.timeout(30)
@pytest.mark.parametrize("kind", ["threaded", "threaded_per_device"])
def test_var_waiter_is_not_woken_by_unrelated_completions(kind):
    engine = mx.engine.create(kind)
    ctx = mx.cpu()
    try:
        var, release = blocked_var(engine, ctx)
        counting = engine._cond = CountingCondition(engine._cond)
        thread, done, errors = wait_in_thread(lambda: engine.wait_for_var(var))
        wait_until_waiting(engine)
        other = engine.new_var(name="other")
        for _ in range(300):
            engine.push_sync(lambda rctx: None, ctx, mutate_vars=[other])
        engine.wait_for_var(other)  # a second waiter, on another var
        assert not done.is_set()
        assert counting.notified <= 2  # the other var's waiter, not 300 wake-ups
        release()
        thread.join(10)
        assert done.is_set() and not errors
        with engine._lock:
            assert engine._num_waiters == 0
            assert engine._waiters_var == {}
            assert engine._waiters_all == engine._waiters_any == 0
    finally:
        engine.shutdown()


@pytest.mark.timeout(30)
@pytest.mark.parametrize("kind", ["threaded", "threaded_per_device"])
def test_wait_for_all_is_woken_once_when_nothing_is_left(kind):
    engine = mx.engine.create(kind)
    ctx = mx.cpu()
    try:
        var, release = blocked_var(engine, ctx)
        for _ in range(300):
            engine.push_sync(lambda rctx: None, ctx, (var,), ())
        counting = engine._cond = CountingCondition(engine._cond)
        thread, done, errors = wait_in_thread(engine.wait_for_all)
        wait_until_waiting(engine)
        release()
        thread.join(10)
        assert done.is_set() and not errors
        assert counting.notified <= 2  # the last completion, not one per reader
        assert engine.num_pending() == 0
    finally:
        engine.shutdown()


@pytest.mark.timeout(60)
@pytest.mark.parametrize("kind", ["threaded", "threaded_per_device"])
def test_contended_lock_is_taken_without_queueing(kind, monkeypatch):
    """Pushes racing with completions go through the non-queueing path and lose nothing."""
    engine = mx.engine.create(kind)
    ctx = mx.cpu()
    contended = []
    original = type(engine)._acquire_contended

    def counting(self):
        contended.append(1)
        original(self)

    monkeypatch.setattr(type(engine), "_acquire_contended", counting)
    try:
        var = engine.new_var(name="chain")
        seen = []
        pushers = []
        for index in range(3):

            def push_many(index=index):
                for step in range(3000):
                    engine.push_sync(lambda rctx, s=(index, step): seen.append(s), ctx, (), (var,))

            pushers.append(threading.Thread(target=push_many))
        for thread in pushers:
            thread.start()
        for thread in pushers:
            thread.join()
        engine.wait_for_var(var)
        assert len(seen) == 9000
        for index in range(3):  # each pusher's ops ran in its push order
            mine = [step for who, step in seen if who == index]
            assert mine == list(range(3000))
        assert not engine._lock.locked()
    finally:
        engine.shutdown()
