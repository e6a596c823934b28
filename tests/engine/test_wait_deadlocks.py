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
ENGINES = ["naive", "threaded", "threaded_per_device", "step"]


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


@pytest.mark.timeout(60)
@pytest.mark.parametrize("kind", ["threaded", "threaded_per_device"])
def test_two_ops_on_two_threads_waiting_for_each_other_raise(kind):
    """Op A (writes a) waits for b while op B (writes b) waits for a: the later wait raises."""
    import threading

    eng = mx.engine.create(kind)
    try:
        a, b = eng.new_var("a"), eng.new_var("b")
        both_running = threading.Barrier(2, timeout=2)
        seen: list[BaseException] = []

        def waiter(other):
            def body(rctx):
                try:
                    both_running.wait()  # (with one worker the second runs inside the first's wait)
                except threading.BrokenBarrierError:
                    pass
                try:
                    eng.wait_for_var(other)
                except (EngineError, OpError) as exc:
                    seen.append(exc)
                    raise

            return body

        eng.push_sync(waiter(b), CPU, mutate_vars=[a], name="A")
        eng.push_sync(waiter(a), CPU, mutate_vars=[b], name="B")
        with pytest.raises(OpError):
            eng.wait_for_all(timeout=30)  # never the timeout: the cycle is found
        cycle = [exc for exc in seen if isinstance(exc, EngineError)]
        assert len(cycle) == 1 and "can never finish" in str(cycle[0])
        assert "'A' (on 'a')" in str(cycle[0]) and "'B' (on 'b')" in str(cycle[0])
        assert eng.num_pending() == 0
        eng.push_sync(_nothing, CPU, mutate_vars=[a], name="after")
        eng.wait_for_var(a)  # written again: usable
    finally:
        eng.shutdown(timeout=10)


@pytest.mark.timeout(60)
def test_a_wait_on_another_threads_op_that_will_finish_is_untouched(eng):
    """Waiting inside an op for an op that waits for something else (not us) is fine."""
    x, y, z = eng.new_var("x"), eng.new_var("y"), eng.new_var("z")
    log: list[str] = []
    eng.push_sync(lambda rctx: log.append("z"), CPU, mutate_vars=[z], name="zw")

    def middle(rctx):
        eng.wait_for_var(z)
        log.append("y")

    eng.push_sync(middle, CPU, mutate_vars=[y], name="middle")
    seen = _run_outer(eng, lambda engine: (engine.wait_for_var(y), log.append("x")), mutate=[x])
    eng.wait_for_all()
    assert not seen and log == ["z", "y", "x"]


@pytest.mark.parametrize("timeout", ["1", -1, float("nan"), True])
def test_a_wait_refuses_a_timeout_that_is_not_seconds(eng, timeout):
    v = eng.new_var("v")
    with pytest.raises(EngineError, match="timeout must be None or seconds"):
        eng.wait_for_var(v, timeout=timeout)
    with pytest.raises(EngineError, match="timeout must be None or seconds"):
        eng.wait_for_all(timeout=timeout)
