"""The step engine: ready ops wait to be chosen; the choices show which schedules are legal."""

from __future__ import annotations

import pytest

import mxnb as mx
from mxnb.base import EngineError

CPU = mx.cpu()


def names(infos):
    return [info.name for info in infos]


@pytest.mark.timeout(30)
def test_readers_may_be_reordered(step_engine):
    r"""
       w          writes a
      / \
    r1   r2       read a: both ready after w; run r2 first, then r1
      \ /
       w2         writes a: ready only after both readers
    """
    eng = step_engine
    log: list[str] = []
    a = eng.new_var(name="a")
    for name, const, mutate in (("w", [], [a]), ("r1", [a], []), ("r2", [a], []), ("w2", [], [a])):
        eng.push_sync(lambda rctx, n=name: log.append(n), CPU, const, mutate, name=name)
    assert names(eng.ready_ops()) == ["w"] and log == []
    assert eng.step().name == "w"
    assert names(eng.ready_ops()) == ["r1", "r2"]
    r2 = eng.ready_ops()[1].op_id
    eng.run_op(r2)
    assert names(eng.ready_ops()) == ["r1"]
    eng.step()
    assert names(eng.ready_ops()) == ["w2"]
    assert eng.run() == 1 and eng.step() is None
    assert log == ["w", "r2", "r1", "w2"]


@pytest.mark.timeout(30)
def test_writers_keep_push_order_and_run_op_says_why(step_engine):
    r"""
    w1 -> w2     both write a: w2 cannot run before w1
    """
    eng = step_engine
    a = eng.new_var(name="a")
    w1 = eng.push_sync(lambda rctx: None, CPU, mutate_vars=[a], name="w1")
    w2 = eng.push_sync(lambda rctx: None, CPU, mutate_vars=[a], name="w2")
    assert [p.name for p in eng.pending_ops()] == ["w1", "w2"]
    assert [p.state for p in eng.pending_ops()] == ["ready", "pending"]
    with pytest.raises(EngineError, match=r"op 'w2' is not ready: it writes var 'a' after op 'w1'"):
        eng.run_op(w2)
    with pytest.raises(EngineError, match="no pending op has id"):
        eng.run_op(10**9)
    eng.run_op(w1)
    with pytest.raises(EngineError, match="no pending op"):
        eng.run_op(w1)
    eng.run_op(w2)
    assert eng.pending_ops() == []


@pytest.mark.timeout(30)
def test_write_waiting_for_readers_is_explained(step_engine):
    eng = step_engine
    a = eng.new_var(name="a")
    eng.push_sync(lambda rctx: None, CPU, const_vars=[a], name="r")
    w = eng.push_sync(lambda rctx: None, CPU, mutate_vars=[a], name="w")
    with pytest.raises(EngineError, match="1 earlier reader"):
        eng.run_op(w)


@pytest.mark.timeout(30)
def test_run_until_and_waits_drive_the_schedule(step_engine):
    eng = step_engine
    a, b = eng.new_var(name="a"), eng.new_var(name="b")
    log: list[str] = []
    eng.push_sync(lambda rctx: log.append("a1"), CPU, mutate_vars=[a])
    target = eng.push_sync(lambda rctx: log.append("a2"), CPU, mutate_vars=[a])
    eng.push_sync(lambda rctx: log.append("b1"), CPU, mutate_vars=[b])
    assert eng.run_until(target) == 2  # a1 then a2 (b1 is later in step order)
    assert log == ["a1", "a2"]
    eng.wait_for_var(b)
    assert log == ["a1", "a2", "b1"]
    eng.push_sync(lambda rctx: log.append("b2"), CPU, mutate_vars=[b])
    eng.wait_for_all()
    assert log[-1] == "b2"


@pytest.mark.timeout(30)
def test_a_wait_that_can_never_finish_is_an_error(step_engine):
    r"""
    outer (writes a) pushes inner (reads a) and waits for inner's output:
    inner can only run after outer ends, so the wait can never finish.
    """
    eng = step_engine
    a, b = eng.new_var(name="a"), eng.new_var(name="b")
    errors = []

    def outer(rctx):
        eng.push_sync(lambda r: None, CPU, const_vars=[a], mutate_vars=[b], name="inner")
        try:
            eng.wait_for_var(b)
        except EngineError as exc:
            errors.append(str(exc))

    eng.push_sync(outer, CPU, mutate_vars=[a], name="outer")
    eng.wait_for_all()
    assert errors and "can never finish" in errors[0] and "'inner'" in errors[0]
