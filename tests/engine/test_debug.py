"""Debug mode (slow-wait reports) and interrupting waits."""

from __future__ import annotations

import _thread
import logging
import threading
import time

import pytest

import mxnb as mx

CPU = mx.cpu()


def test_set_debug_and_the_debug_block_restore_the_flag():
    assert mx.engine.is_debug() is False
    with mx.engine.debug(slow_wait=0.25):
        assert mx.engine.is_debug() is True
    assert mx.engine.is_debug() is False
    mx.engine.set_debug(True)
    try:
        assert mx.engine.is_debug()
    finally:
        mx.engine.set_debug(False)
    with pytest.raises(mx.base.EngineError, match="slow_wait"):
        mx.engine.set_debug(True, slow_wait=-1)
    assert mx.engine.is_debug() is False  # a refused call changes nothing


@pytest.mark.timeout(30)
@pytest.mark.parametrize("name", ["naive", "threaded_per_device"])
def test_slow_waits_are_recorded_with_the_chain_of_ops(name, caplog):
    r"""
    slow (writes a, 50 ms) -> late (reads a): late waited > 10 ms, because of 'slow'
    """
    with mx.engine.debug(slow_wait=0.01):
        eng = mx.engine.create(name)
        try:
            a = eng.new_var(name="a")
            with caplog.at_level(logging.WARNING, logger="mxnb.engine"):
                eng.push_sync(lambda rctx: time.sleep(0.05), CPU, mutate_vars=[a], name="slow")
                eng.push_sync(lambda rctx: None, CPU, const_vars=[a], name="late")
                eng.wait_for_all()
        finally:
            eng.shutdown()
    if name == "naive":  # ran at push: nothing ever waited
        assert eng.slow_waits == []
        return
    (record,) = eng.slow_waits
    assert record.name == "late" and record.waited > 0.01
    assert "'slow'" in record.chain[0] and "'a'" in record.chain[0]
    assert any("op 'late'" in message for message in caplog.messages)


@pytest.mark.timeout(30)
@pytest.mark.parametrize("name", ["threaded", "threaded_per_device", "step"])
def test_ctrl_c_in_a_wait_leaves_the_engine_consistent(name, ctrl_c_raises):
    """A KeyboardInterrupt while waiting for an unfinished async op; then everything still works."""
    eng = mx.engine.create(name)
    try:
        a = eng.new_var(name="a")
        callbacks = []
        eng.push_async(lambda rctx, done: callbacks.append(done), CPU, mutate_vars=[a], name="slow")
        log: list[str] = []
        eng.push_sync(lambda rctx: log.append("after"), CPU, const_vars=[a], name="after")
        if name == "step":
            eng.step()
        timer = threading.Timer(0.2, _thread.interrupt_main)
        timer.start()
        with pytest.raises(KeyboardInterrupt):
            eng.wait_for_var(a)
        timer.join()
        assert len(callbacks) == 1 and log == []
        callbacks[0]()
        eng.wait_for_all()
        assert log == ["after"]
        eng.push_sync(lambda rctx: log.append("more"), CPU, mutate_vars=[a])
        eng.wait_for_var(a)
        assert log == ["after", "more"]
    finally:
        eng.shutdown(timeout=5)


@pytest.mark.timeout(30)
def test_ctrl_c_while_the_naive_engine_awaits_a_callback(ctrl_c_raises):
    """The naive push of an async op waits for its callback; interrupting it loses nothing."""
    eng = mx.engine.create("naive")
    a = eng.new_var(name="a")
    callbacks = []
    timer = threading.Timer(0.2, _thread.interrupt_main)
    timer.start()
    with pytest.raises(KeyboardInterrupt):
        eng.push_async(lambda rctx, done: callbacks.append(done), CPU, mutate_vars=[a])
    timer.join()
    log: list[str] = []
    eng.push_sync(lambda rctx: log.append("after"), CPU, const_vars=[a])
    assert log == []  # still waiting for the async op
    callbacks[0]()  # completes it here, and runs 'after' in this thread
    eng.wait_for_all()
    assert log == ["after"]
