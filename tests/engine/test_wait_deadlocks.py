"""A wait inside an op that can never be met raises, on every engine, instead of hanging.

Specification: an op R running on a thread that waits for a var whose
pending writes must themselves wait for R (directly, or through ops queued
in between) raises :class:`EngineError` naming the ops; R then fails like
any failing op and the engine drains.  Waits that can be met are untouched:
an independent op, or two reads of the same var.
"""

from __future__ import annotations

import pytest

import mxnb as mx
from mxnb.base import EngineError, OpError

CPU = mx.cpu()
ENGINES = ["naive", "threaded", "threaded_per_device"]


@pytest.fixture(params=ENGINES)
def eng(request):
    engine = mx.engine.create(request.param)
    yield engine
    engine.shutdown(timeout=10)


def _nothing(rctx):
    pass


def _run_outer(eng, body, const=(), mutate=()):
    """Push op 'outer' running ``body(eng)``; return the error its wait raised, or None."""
    seen: list[BaseException] = []

    def outer(rctx):
        try:
            body(eng)
        except EngineError as exc:
            seen.append(exc)
            raise

    eng.push_sync(outer, CPU, const_vars=list(const), mutate_vars=list(mutate), name="outer")
    return seen


@pytest.mark.timeout(60)
def test_waiting_for_an_op_pushed_behind_itself_raises(eng):
    x = eng.new_var("x")

    def body(engine):
        engine.push_sync(_nothing, CPU, mutate_vars=[x], name="later_write")
        engine.wait_for_var(x)

    seen = _run_outer(eng, body, mutate=[x])
    with pytest.raises(OpError, match="would wait forever"):
        eng.wait_for_all()  # 'outer' failed; 'later_write' wrote x again afterwards
    assert "'outer', which writes 'x' itself" in str(seen[0])
    eng.wait_for_var(x)
    assert eng.num_pending() == 0


@pytest.mark.timeout(60)
def test_waiting_one_step_removed_raises_naming_the_chain(eng):
    x, v = eng.new_var("x"), eng.new_var("v")

    def body(engine):
        # 'reader' reads x, which 'outer' writes: it waits for 'outer'; 'outer' waits for v
        engine.push_sync(_nothing, CPU, const_vars=[x], mutate_vars=[v], name="reader")
        engine.wait_for_var(v)

    seen = _run_outer(eng, body, mutate=[x])
    with pytest.raises(OpError, match="can never finish"):
        eng.wait_for_var(x)
    message = str(seen[0])
    assert "'reader' (on 'v')" in message and "'outer' (on 'x')" in message
    eng.wait_for_all()
    with pytest.raises(OpError):
        eng.wait_for_var(v)  # 'reader' was skipped: v inherits the failure of 'outer'
    assert eng.num_pending() == 0


@pytest.mark.timeout(60)
def test_two_steps_removed_is_found_too(eng):
    x, y, v = eng.new_var("x"), eng.new_var("y"), eng.new_var("v")

    def body(engine):
        engine.push_sync(_nothing, CPU, const_vars=[x], mutate_vars=[y], name="first")
        engine.push_sync(_nothing, CPU, const_vars=[y], mutate_vars=[v], name="second")
        engine.wait_for_var(v)

    seen = _run_outer(eng, body, mutate=[x])
    with pytest.raises(OpError):
        eng.wait_for_var(x)
    assert "'second' (on 'v') -> 'first' (on 'y') -> 'outer' (on 'x')" in str(seen[0])
    eng.wait_for_all()
    assert eng.num_pending() == 0


@pytest.mark.timeout(60)
@pytest.mark.parametrize("outer_reads", [False, True], ids=["independent", "two-reads"])
def test_waits_that_can_be_met_are_untouched(eng, outer_reads):
    x, v = eng.new_var("x"), eng.new_var("v")
    log: list[str] = []

    def body(engine):
        reads = [x] if outer_reads else []
        engine.push_sync(lambda rctx: log.append("inner"), CPU, const_vars=reads, mutate_vars=[v])
        engine.wait_for_var(v)
        log.append("after wait")

    if outer_reads:
        seen = _run_outer(eng, body, const=[x])
    else:
        seen = _run_outer(eng, body, mutate=[x])
    eng.wait_for_all()
    assert not seen
    assert log == ["inner", "after wait"]


@pytest.mark.timeout(60)
def test_wait_for_all_inside_an_op_that_blocks_a_pending_op_raises(eng):
    x = eng.new_var("x")

    def body(engine):
        engine.push_sync(
            _nothing, CPU, const_vars=[x], mutate_vars=[eng.new_var("y")], name="behind"
        )
        engine.wait_for_all()

    seen = _run_outer(eng, body, mutate=[x])
    with pytest.raises(OpError, match="can never finish"):
        eng.wait_for_all()
    assert "'behind' waits for 'outer' on var 'x'" in str(seen[0])
    assert eng.num_pending() == 0


@pytest.mark.timeout(60)
def test_wait_for_all_inside_an_op_with_independent_work_is_fine(eng):
    log: list[str] = []

    def body(engine):
        engine.push_sync(lambda rctx: log.append("inner"), CPU, mutate_vars=[eng.new_var("z")])
        engine.wait_for_all()
        log.append("after")

    seen = _run_outer(eng, body, mutate=[eng.new_var("x")])
    eng.wait_for_all()
    assert not seen and log == ["inner", "after"]
