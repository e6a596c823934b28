"""The engine contract, checked on every engine (naive, threaded, threaded_per_device, step).

Each test pushes a small program and checks what the dependency rule
promises: conflicting ops run in push order, errors surface at waits, the
engine stays usable afterwards.
"""

from __future__ import annotations

import threading
import time

import pytest

import mxnb as mx
from mxnb.base import EngineError, MXNBError, OpError, VarDeletedError

CPU = mx.cpu()


def record(log: list, label: str):
    """An op function that appends ``label`` to ``log``."""

    def fn(rctx):
        log.append(label)

    fn.__name__ = label
    return fn


@pytest.mark.timeout(30)
def test_writes_run_in_push_order(engine):
    r"""
    w0 -> w1 -> ... -> w49      all write a: a chain
    """
    a = engine.new_var(name="a")
    log: list[str] = []
    for i in range(50):
        engine.push_sync(record(log, f"w{i}"), CPU, mutate_vars=[a])
    engine.wait_for_var(a)
    assert log == [f"w{i}" for i in range(50)]


@pytest.mark.timeout(30)
def test_reader_sees_the_write_before_it_and_not_after(engine):
    r"""
    w1 (a=1)
      |
      r  reads a: must see 1
      |
    w2 (a=2)     must wait for r (write after read)
    """
    state = {"a": 0}
    seen = []
    a = engine.new_var(name="a")

    def write(value):
        def fn(rctx):
            time.sleep(0.001)
            state["a"] = value

        return fn

    engine.push_sync(write(1), CPU, mutate_vars=[a], name="w1")
    engine.push_sync(lambda rctx: seen.append(state["a"]), CPU, const_vars=[a], name="r")
    engine.push_sync(write(2), CPU, mutate_vars=[a], name="w2")
    engine.wait_for_all()
    assert seen == [1]
    assert state["a"] == 2


@pytest.mark.timeout(30)
def test_readers_between_writes_may_run_together(threaded_engine):
    r"""
      w
     / \
    r1  r2     both read a: they run at the same time (a barrier of 2 passes)
    """
    a = threaded_engine.new_var(name="a")
    barrier = threading.Barrier(2, timeout=10)
    threaded_engine.push_sync(lambda rctx: None, CPU, mutate_vars=[a], name="w")
    for name in ("r1", "r2"):
        threaded_engine.push_sync(lambda rctx: barrier.wait(), CPU, const_vars=[a], name=name)
    threaded_engine.wait_for_all()


@pytest.mark.timeout(30)
def test_write_waits_for_earlier_reads(engine):
    r"""
    r1   r2      both read a (slowly)
      \  /
       w         writes a: must start after r1 and r2 finish
    """
    a = engine.new_var(name="a")
    log: list[str] = []

    def slow_read(label):
        def fn(rctx):
            time.sleep(0.01)
            log.append(label)

        return fn

    engine.push_sync(slow_read("r1"), CPU, const_vars=[a])
    engine.push_sync(slow_read("r2"), CPU, const_vars=[a])
    engine.push_sync(record(log, "w"), CPU, mutate_vars=[a])
    engine.wait_for_var(a)
    assert sorted(log[:2]) == ["r1", "r2"]
    assert log[2] == "w"


@pytest.mark.timeout(30)
def test_duplicates_are_normalised_and_read_write_counts_as_write(engine):
    """A var listed twice, or both read and written, is one write."""
    a, b = engine.new_var(name="a"), engine.new_var(name="b")
    log: list[str] = []
    engine.push_sync(record(log, "x"), CPU, const_vars=[a, a, b], mutate_vars=[b, b])
    engine.push_sync(record(log, "y"), CPU, const_vars=[b])
    engine.wait_for_all()
    assert log == ["x", "y"]


@pytest.mark.timeout(30)
def test_push_returns_increasing_op_ids_and_hands_a_run_context(engine):
    ids = []
    contexts = []
    v = engine.new_var(name="v")
    for _ in range(3):
        ids.append(engine.push_sync(lambda rctx: contexts.append(rctx), mx.cpu(1), mutate_vars=[v]))
    engine.wait_for_all()
    assert ids == sorted(ids) and len(set(ids)) == 3
    assert all(isinstance(r, mx.RunContext) and r.ctx == mx.cpu(1) for r in contexts)
    assert all(r.worker for r in contexts)


@pytest.mark.timeout(30)
def test_async_op_completes_from_another_thread(engine, completer):
    r"""
    async_w (done later, from a completer thread)
       |
       r     reads a: runs only after on_complete()
    """
    a = engine.new_var(name="a")
    log: list[str] = []

    def async_write(rctx, on_complete):
        def later():
            time.sleep(0.01)
            log.append("async_w")
            on_complete()

        completer.submit(later)

    engine.push_async(async_write, CPU, mutate_vars=[a], name="async_w")
    engine.push_sync(record(log, "r"), CPU, const_vars=[a])
    engine.wait_for_all()
    assert log == ["async_w", "r"]


@pytest.mark.timeout(30)
def test_async_op_reports_an_error_through_its_callback(engine, completer):
    a = engine.new_var(name="a")

    def async_fail(rctx, on_complete):
        completer.submit(lambda: on_complete(ValueError("disk on fire")))

    engine.push_async(async_fail, CPU, mutate_vars=[a], name="load")
    with pytest.raises(OpError, match="op 'load'.*ValueError: disk on fire") as info:
        engine.wait_for_var(a)
    assert isinstance(info.value.__cause__, ValueError)


@pytest.mark.timeout(30)
def test_on_complete_twice_is_an_error(engine):
    errors = []

    def twice(rctx, on_complete):
        on_complete()
        try:
            on_complete()
        except EngineError as exc:
            errors.append(exc)

    engine.push_async(twice, CPU, name="twice")
    engine.wait_for_all()
    assert errors and "called twice" in str(errors[0])


@pytest.mark.timeout(30)
def test_new_operator_is_reusable_and_delete_forbids_more_pushes(engine):
    a = engine.new_var(name="a")
    count = []

    def bump(rctx, on_complete):
        count.append(len(count))
        on_complete()

    handle = engine.new_operator(bump, const_vars=[], mutate_vars=[a], name="bump")
    for _ in range(5):
        engine.push(handle, CPU)
    engine.delete_operator(handle)
    engine.wait_for_var(a)
    assert count == [0, 1, 2, 3, 4]
    with pytest.raises(EngineError, match="deleted"):
        engine.push(handle, CPU)
    with pytest.raises(EngineError, match="already deleted"):
        engine.delete_operator(handle)


@pytest.mark.timeout(30)
def test_push_prepared_follows_the_dependency_rule_and_refuses_deleted_vars(engine):
    r"""
    w1 (slow, writes a) -> r (reads a, writes b) -> w2 (writes a)   pushed with push_prepared
    """
    a, b = engine.new_var(name="a"), engine.new_var(name="b")
    log: list[str] = []

    def slow_write(rctx):
        time.sleep(0.01)
        log.append("w1")

    first = engine.push_prepared(slow_write, CPU, (), (a,), "w1")
    second = engine.push_prepared(record(log, "r"), CPU, (a,), (b,), "r")
    engine.push_prepared(record(log, "w2"), CPU, (), (a,), "w2")
    assert second > first
    engine.wait_for_all()
    assert log == ["w1", "r", "w2"]
    engine.push_delete(b)
    with pytest.raises(VarDeletedError, match="'b'"):
        engine.push_prepared(lambda rctx: None, CPU, (a,), (b,), "late")
    engine.wait_for_all()
    assert engine.num_pending() == 0


@pytest.mark.timeout(30)
def test_push_delete_runs_after_pending_ops_then_forbids_the_var(engine):
    r"""
    w (slow) -> delete(fn frees)     the free runs after w; then the var is gone
    """
    a = engine.new_var(name="a")
    log: list[str] = []

    def slow_write(rctx):
        time.sleep(0.01)
        log.append("w")

    engine.push_sync(slow_write, CPU, mutate_vars=[a])
    engine.push_delete(a, CPU, fn=record(log, "free"))
    engine.wait_for_all()
    assert log == ["w", "free"]
    with pytest.raises(VarDeletedError, match="'a'.*deleted"):
        engine.push_sync(lambda rctx: None, CPU, const_vars=[a], name="late_read")
    with pytest.raises(VarDeletedError):
        engine.push_delete(a)
    assert engine.num_pending() == 0  # nothing was enqueued by the refused pushes


@pytest.mark.timeout(30)
def test_push_delete_of_several_vars_is_one_op_after_each_vars_pending_ops(engine):
    r"""
    w_a (slow) --\
                  delete([a, b]) (fn frees)     one op, after both writes; both vars gone
    w_b ---------/
    """
    a, b = engine.new_var(name="a"), engine.new_var(name="b")
    log: list[str] = []

    def slow_write(rctx):
        time.sleep(0.01)
        log.append("w_a")

    with mx.engine.trace() as tr:
        engine.push_sync(slow_write, CPU, mutate_vars=[a])
        engine.push_sync(record(log, "w_b"), CPU, mutate_vars=[b])
        engine.push_delete([a, b, a], CPU, fn=record(log, "free"))  # duplicates dropped
        engine.wait_for_all()
    assert sorted(log[:2]) == ["w_a", "w_b"] and log[2:] == ["free"]
    deleted = [e.var_id for e in tr.events if type(e).__name__ == "VarDelete"]
    assert sorted(deleted) == sorted([a.id, b.id])
    assert [e.name for e in tr.events if type(e).__name__ == "OpPush"][-1] == "delete:2 vars"
    for var in (a, b):
        with pytest.raises(VarDeletedError):
            engine.push_sync(lambda rctx: None, CPU, const_vars=[var])
    for bad in ([], [a, "not a var"], "a"):
        with pytest.raises(EngineError, match="push_delete: expected an engine var"):
            engine.push_delete(bad)
    assert engine.num_pending() == 0


@pytest.mark.timeout(30)
def test_bad_pushes_fail_at_push_time_and_enqueue_nothing(engine):
    a = engine.new_var(name="a")
    with pytest.raises(EngineError, match="callable"):
        engine.push_sync(42, CPU, mutate_vars=[a], name="bad")
    with pytest.raises(EngineError, match="ctx must be a mxnb.Context"):
        engine.push_sync(lambda rctx: None, "cpu", mutate_vars=[a], name="bad_ctx")
    with pytest.raises(EngineError, match="engine vars"):
        engine.push_sync(lambda rctx: None, CPU, mutate_vars=["a"], name="bad_var")
    with pytest.raises(EngineError, match="list of vars"):
        engine.push_sync(lambda rctx: None, CPU, mutate_vars=a, name="single")
    with pytest.raises(EngineError, match="callable"):
        engine.new_operator(None, [], [a])
    with pytest.raises(EngineError):
        engine.wait_for_var("a")
    assert engine.num_pending() == 0
    assert issubclass(EngineError, MXNBError) and issubclass(EngineError, RuntimeError)
    engine.push_sync(lambda rctx: None, CPU, mutate_vars=[a])  # still usable
    engine.wait_for_all()


@pytest.mark.timeout(30)
@pytest.mark.parametrize(
    ("option", "value", "message"),
    [
        ("priority", "high", "priority must be an int"),
        ("priority", 1.5, "priority must be an int"),
        ("priority", None, "priority must be an int"),
        ("name", 5, "name must be a str"),
    ],
)
def test_wrongly_typed_push_options_are_refused_before_anything_is_booked(
    engine, option, value, message
):
    """Validate before booking: a refused push leaves no trace, so every wait still returns."""
    a = engine.new_var(name="a")
    ran: list[str] = []
    with pytest.raises(EngineError, match=message):
        engine.push_sync(lambda rctx: ran.append("sync"), CPU, mutate_vars=[a], **{option: value})
    with pytest.raises(EngineError, match=message):
        engine.push_async(lambda rctx, done: done(), CPU, mutate_vars=[a], **{option: value})
    if option == "priority":
        handle = engine.new_operator(lambda rctx, done: done(), [], [a], name="h")
        with pytest.raises(EngineError, match=message):
            engine.push(handle, CPU, priority=value)
    assert engine.num_pending() == 0 and not ran
    engine.push_sync(lambda rctx: ran.append("after"), CPU, mutate_vars=[a])
    engine.wait_for_var(a, timeout=10)
    engine.wait_for_all(timeout=10)
    assert ran == ["after"]


@pytest.mark.timeout(30)
def test_failure_is_stored_skips_dependents_and_is_raised_on_every_read(engine):
    r"""
    boom (writes a) -- raises ValueError
      |
    copy (reads a, writes b)    skipped; b inherits boom's error
      |
    wait_for_var(b)  -> OpError naming 'boom', ValueError chained; again on every wait
    other (writes c)  unaffected

    MXNet 1.6+ raises a failure once and then clears it, so a second read of
    b returns stale memory; mxnb raises it as long as the var carries it.
    """
    a, b, c = (engine.new_var(name=n) for n in "abc")
    ran: list[str] = []

    def boom(rctx):
        raise ValueError("bad value")

    engine.push_sync(boom, CPU, mutate_vars=[a], name="boom")
    engine.push_sync(record(ran, "copy"), CPU, const_vars=[a], mutate_vars=[b], name="copy")
    engine.push_sync(record(ran, "other"), CPU, mutate_vars=[c], name="other")
    for _ in range(2):
        with pytest.raises(
            OpError, match=r"op 'boom' \(id \d+\) failed: ValueError: bad value"
        ) as info:
            engine.wait_for_var(b)
        assert info.value.op_name == "boom"
        assert isinstance(info.value.__cause__, ValueError)
    with pytest.raises(OpError, match="boom"):
        engine.wait_for_var(a)  # the same failure, on every var it reached
    engine.wait_for_all()  # already raised by a wait: not raised again
    assert ran == ["other"]
    engine.push_sync(record(ran, "after"), CPU, const_vars=[a], mutate_vars=[b])
    engine.wait_for_all()
    assert ran == ["other"]  # a still carries the failure: ops reading it are skipped
    engine.push_sync(record(ran, "fresh"), CPU, mutate_vars=[engine.new_var("d")])
    engine.wait_for_all()
    assert ran == ["other", "fresh"]  # the engine stays usable


@pytest.mark.timeout(30)
def test_the_failure_count_follows_the_vars_that_carry_one(engine):
    """``_failures`` counts vars failed now: rewriting or deleting them brings it back to 0.

    At 0 no op can be skipped, and the engine's checks for skipping are off: one
    failure once left them on for the engine's whole life.
    """
    a, b, c = (engine.new_var(name=n) for n in "abc")
    engine.push_sync(lambda rctx: 1 / 0, CPU, mutate_vars=[a], name="boom")
    engine.push_sync(lambda rctx: None, CPU, const_vars=[a], mutate_vars=[b, c], name="skipped")
    with pytest.raises(OpError, match="boom"):
        engine.wait_for_all()
    assert engine._failures == 3  # a, and the two vars the skipped op wrote
    engine.push_sync(lambda rctx: None, CPU, mutate_vars=[a], name="rewrite")
    engine.push_delete(b)
    engine.wait_for_all()
    assert engine._failures == 1 and c.error is not None
    ran: list[str] = []
    engine.push_sync(record(ran, "reads a"), CPU, const_vars=[a], mutate_vars=[c])
    engine.wait_for_all()
    assert engine._failures == 0 and ran == ["reads a"]  # a recovered, c written again


@pytest.mark.timeout(30)
def test_wait_for_all_raises_the_failure_then_forgets_it(engine):
    a = engine.new_var(name="a")
    engine.push_sync(lambda rctx: {}["missing"], CPU, mutate_vars=[a], name="lookup")
    with pytest.raises(OpError, match="op 'lookup'.*KeyError") as info:
        engine.wait_for_all()
    assert isinstance(info.value.__cause__, KeyError)
    engine.wait_for_all()  # forgotten by wait_for_all ...
    with pytest.raises(OpError, match="lookup"):
        engine.wait_for_var(a)  # ... but a read of the var still raises it


@pytest.mark.timeout(30)
def test_priority_orders_ready_ops_within_a_pool(engine):
    r"""
    gate (holds the only worker busy)   then three ops, all ready, pushed low..high:
    the high-priority one runs first, the low one last (naive: push order).
    """
    log: list[str] = []
    started = threading.Event()
    release = threading.Event()
    single = engine
    if engine.kind in ("threaded", "threaded_per_device"):
        single = mx.engine.create(engine.kind)
        single.shutdown(timeout=5)
        from mxnb.engine.threaded import ThreadedEngine, ThreadedEnginePerDevice

        cls = ThreadedEngine if engine.kind == "threaded" else ThreadedEnginePerDevice
        single = cls(nthreads=1)
    try:
        if single.kind not in ("naive", "step"):  # the step engine runs nothing unasked

            def gate(rctx):
                started.set()
                release.wait(10)

            single.push_sync(gate, CPU, name="gate")
            started.wait(10)
        for prio, label in ((0, "low"), (5, "mid"), (9, "high")):
            single.push_sync(record(log, label), CPU, priority=prio)
        release.set()
        single.wait_for_all()
        if single.kind == "naive":
            assert log == ["low", "mid", "high"]
        else:
            assert log == ["high", "mid", "low"]
    finally:
        release.set()
        if single is not engine:
            single.shutdown(timeout=5)


@pytest.mark.timeout(60)
def test_waiting_inside_an_op_does_not_deadlock_even_with_all_workers_waiting(engine):
    r"""
    outer_i (one per worker and more, all at once)
       |  pushes child_i, then wait_for_var(child's var)   (like asnumpy() in a custom op)
    child_i
    The waiting workers run the children themselves.
    """
    n_outer = 8
    done = []

    def outer(i):
        def fn(rctx):
            v = engine.new_var(name=f"c{i}")
            engine.push_sync(lambda r: done.append(i), CPU, mutate_vars=[v], name=f"child{i}")
            engine.wait_for_var(v)
            engine.wait_for_all()  # everything except the ops on this stack

        return fn

    outs = [engine.new_var(name=f"o{i}") for i in range(n_outer)]
    for i in range(n_outer):
        engine.push_sync(outer(i), CPU, mutate_vars=[outs[i]], name=f"outer{i}")
    engine.wait_for_all()
    assert sorted(done) == list(range(n_outer))


@pytest.mark.timeout(30)
def test_waiting_inside_an_op_for_its_own_output_is_an_error(engine):
    a = engine.new_var(name="a")
    errors = []

    def selfish(rctx):
        try:
            engine.wait_for_var(a)
        except EngineError as exc:
            errors.append(str(exc))

    engine.push_sync(selfish, CPU, mutate_vars=[a], name="selfish")
    engine.wait_for_all()
    assert errors and "writes 'a' itself" in errors[0]


@pytest.mark.timeout(60)
def test_many_threads_push_at_once(engine):
    """8 threads push 200 increments each on one shared var: none lost, per-thread order kept."""
    shared = engine.new_var(name="shared")
    counter = {"n": 0}
    per_thread: dict[int, list[int]] = {t: [] for t in range(8)}

    def pusher(t):
        for i in range(200):

            def fn(rctx, t=t, i=i):
                counter["n"] += 1
                per_thread[t].append(i)

            engine.push_sync(fn, CPU, mutate_vars=[shared])

    threads = [threading.Thread(target=pusher, args=(t,)) for t in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    engine.wait_for_all()
    assert counter["n"] == 1600
    assert all(seq == list(range(200)) for seq in per_thread.values())


@pytest.mark.timeout(30)
def test_set_engine_keeps_vars_usable():
    """Vars from the old process-wide engine work with the new one (it drained first)."""
    old_type = mx.engine.engine_type()
    try:
        eng = mx.engine.set_engine("threaded")
        a = eng.new_var(name="a")
        log: list[str] = []
        eng.push_sync(record(log, "old"), CPU, mutate_vars=[a])
        new = mx.engine.set_engine("naive")
        assert mx.engine.engine_type() == "naive" and mx.engine.get() is new
        new.push_sync(record(log, "new"), CPU, mutate_vars=[a])
        new.wait_for_var(a)
        assert log == ["old", "new"]
        # a thread that kept the old engine pushes through it to the new one: nothing is lost
        eng.push_sync(record(log, "via old"), CPU, mutate_vars=[a])
        new.wait_for_var(a)
        assert log == ["old", "new", "via old"]
        with pytest.raises(EngineError, match="unknown engine type"):
            mx.engine.set_engine("turbo")
    finally:
        mx.engine.set_engine(old_type)


@pytest.mark.timeout(30)
def test_get_during_set_engine_does_not_deadlock(monkeypatch):
    """A finalizer (NDArray.__del__) may call get() while set_engine builds the new engine."""
    import mxnb.engine as engine_module

    old_type = mx.engine.engine_type()
    real_create = engine_module.create
    seen = []

    def create_with_finalizer(name=None):
        seen.append(mx.engine.get().kind)  # what a finalizer run by the GC here would see
        mx.engine.get().push_sync(lambda rctx: None, CPU, name="finalizer_push")
        return real_create(name)

    monkeypatch.setattr(engine_module, "create", create_with_finalizer)
    try:
        mx.engine.set_engine("naive")
        assert seen == [old_type]
    finally:
        monkeypatch.setattr(engine_module, "create", real_create)
        mx.engine.set_engine(old_type)


class _PushesOnDelete:
    """Like an NDArray chunk: its finalizer pushes a delete of its var to the engine."""

    def __init__(self, engine, log):
        self.engine, self.log = engine, log
        self.var = engine.new_var(name="chunk")

    def __del__(self):
        self.engine.push_delete(self.var, CPU, fn=lambda rctx: self.log.append("freed"))


@pytest.mark.timeout(30)
def test_finalizers_of_objects_released_by_the_engine_may_push(engine, completer):
    """The engine drops user objects (closures, exceptions) outside its lock.

    An async op completed later from another thread holds the last reference
    to its closure; a second failure holds the last reference to its frame.
    Their finalizers push deletes, which must not deadlock on the engine lock.
    """
    log: list[str] = []
    out, other = engine.new_var(name="out"), engine.new_var(name="other")

    def make_async():
        holder = _PushesOnDelete(engine, log)

        def start(rctx, on_complete, h=holder):
            completer.submit(lambda: (time.sleep(0.01), on_complete()))

        return start

    engine.push_async(make_async(), CPU, mutate_vars=[out], name="async_holder")
    engine.wait_for_all()

    def fails_first(rctx):
        raise ValueError("first")

    def fails_second(rctx, h=_PushesOnDelete(engine, log)):  # noqa: B008 - bound on purpose
        raise ValueError("second, keeps h alive in its traceback")

    engine.push_sync(fails_first, CPU, mutate_vars=[out], name="first")
    engine.push_sync(fails_second, CPU, mutate_vars=[other], name="second")
    del fails_second
    with pytest.raises(OpError):
        engine.wait_for_all()
    engine.wait_for_all()
    # a failure stays on its var (every read raises it) until the var is deleted
    engine.push_delete([out, other], CPU)
    engine.wait_for_all()
    assert log.count("freed") == 2


@pytest.mark.timeout(30)
def test_inside_op_is_true_only_on_a_thread_running_an_op(engine):
    seen = []
    engine.push_sync(lambda rctx: seen.append(mx.engine.inside_op()), CPU, name="asks")
    engine.wait_for_all()
    assert seen == [True]
    assert mx.engine.inside_op() is False
