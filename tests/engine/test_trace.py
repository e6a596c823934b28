"""What the engine records: event order, dependency edges, chrome export, stats, explain."""

from __future__ import annotations

import json
import time

import pytest

import mxnb as mx
from mxnb.base import OpError
from mxnb.engine import tracing as trace_module
from mxnb.engine.tracing import (
    DepKind,
    OpEnd,
    OpPush,
    OpReady,
    OpStart,
    Trace,
    VarDelete,
    VarNew,
    WaitBegin,
    WaitEnd,
)

CPU = mx.cpu()


def index_of(events, kind, op_id):
    return next(i for i, e in enumerate(events) if type(e) is kind and e.op_id == op_id)


@pytest.mark.timeout(30)
def test_every_op_goes_push_ready_start_end_with_its_dependencies(engine):
    r"""
    w (writes a)
    | \
    r  c (reads a, writes b)     both RAW on w
    | /
    w2 (writes a)                WAW on w, WAR on r and c
    """
    with mx.engine.trace() as tr:
        a, b = engine.new_var(name="a"), engine.new_var(name="b")
        w = engine.push_sync(lambda rctx: time.sleep(0.002), CPU, mutate_vars=[a], name="w")
        r = engine.push_sync(lambda rctx: None, CPU, const_vars=[a], name="r")
        c = engine.push_sync(lambda rctx: None, CPU, const_vars=[a], mutate_vars=[b], name="c")
        w2 = engine.push_sync(lambda rctx: None, CPU, mutate_vars=[a], name="w2")
        engine.wait_for_all()
    events = tr.events
    assert [e.name for e in tr.events_of(VarNew)] == ["a", "b"]
    for op in (w, r, c, w2):
        push, ready, start, end = (
            index_of(events, k, op) for k in (OpPush, OpReady, OpStart, OpEnd)
        )
        assert push < start < end and ready < start
    pushes = {e.name: e for e in tr.events_of(OpPush)}
    if engine.kind != "naive":  # the naive engine ran w before r was even pushed
        assert {(d.op_id, d.var_id, d.kind) for d in pushes["r"].waits_on} == {
            (w, a.id, DepKind.RAW)
        }
        assert {(d.op_id, d.kind) for d in pushes["w2"].waits_on} == {
            (w, DepKind.WAW),
            (r, DepKind.WAR),
            (c, DepKind.WAR),
        }
        assert index_of(events, OpEnd, w) < index_of(events, OpStart, r)
    assert index_of(events, OpEnd, r) < index_of(events, OpStart, w2)
    assert index_of(events, OpEnd, c) < index_of(events, OpStart, w2)
    assert pushes["c"].const_vars == (a.id,) and pushes["c"].mutate_vars == (b.id,)
    assert pushes["w"].ctx == "cpu(0)" and pushes["w"].thread == "MainThread"
    starts = tr.events_of(OpStart)
    expected_worker = {"naive": "main", "step": "step"}.get(engine.kind)
    if expected_worker:
        assert all(s.worker == expected_worker for s in starts)
    else:
        assert all(s.worker.startswith(("cpu/", "cpu(0)/")) for s in starts)
    begin, end = tr.events_of(WaitBegin)[-1], tr.events_of(WaitEnd)[-1]
    assert begin.var_id is None and begin.wait_id == end.wait_id


@pytest.mark.timeout(30)
def test_failures_and_skips_and_deletes_are_recorded(engine):
    with mx.engine.trace() as tr:
        a, b = engine.new_var(name="a"), engine.new_var(name="b")
        bad = engine.push_sync(lambda rctx: 1 / 0, CPU, mutate_vars=[a], name="bad")
        skipped = engine.push_sync(lambda rctx: None, CPU, [a], [b], name="dependent")
        engine.push_delete(b)
        with pytest.raises(OpError):
            engine.wait_for_all()
    ends = {e.op_id: e for e in tr.events_of(OpEnd)}
    assert "ZeroDivisionError" in ends[bad].error and not ends[bad].skipped
    assert ends[skipped].skipped and "bad" in ends[skipped].error
    assert [e.var_id for e in tr.events_of(VarDelete)] == [b.id]
    assert tr.stats()["bad"].failed == 1
    assert skipped not in {e.op_id for e in tr.events_of(OpStart)}


@pytest.mark.timeout(30)
def test_no_recorder_means_no_events_and_one_flag():
    tr = Trace()
    eng = mx.engine.create("naive")
    assert trace_module.enabled is False
    eng.push_sync(lambda rctx: None, CPU)
    assert len(tr) == 0
    with tr:
        assert trace_module.enabled is True
        eng.push_sync(lambda rctx: None, CPU, name="seen")
    assert trace_module.enabled is False
    eng.push_sync(lambda rctx: None, CPU, name="unseen")
    assert [e.name for e in tr.events_of(OpPush)] == ["seen"]
    tr.clear()
    assert len(tr) == 0 and tr.events == []


@pytest.mark.timeout(30)
def test_a_chain_records_each_start_on_the_worker_that_ran_it(threaded_engine):
    """A worker that runs a successor itself records its start with the predecessor's end.

    The chain switches between the CPU pool and (on the per-device engine)
    the copy pool, whose ops a CPU worker must not claim to have started.
    """
    import threading

    ran = {}

    def op(i):
        def fn(rctx):
            if i == 0:
                time.sleep(0.02)  # the rest of the chain is pushed meanwhile
            ran[i] = (rctx.worker, threading.current_thread().name)

        return fn

    a = threaded_engine.new_var(name="a")
    with mx.engine.trace() as tr:
        ids = [
            threaded_engine.push_sync(op(i), CPU, mutate_vars=[a], name=f"op{i}", copy=i % 7 == 6)
            for i in range(40)
        ]
        threaded_engine.wait_for_all()
    events = tr.events
    starts = {e.op_id: e for e in tr.events_of(OpStart)}
    ends = {e.op_id: e for e in tr.events_of(OpEnd)}
    assert len(tr.events_of(OpStart)) == len(ids)  # one start each
    for i, op_id in enumerate(ids):
        assert (starts[op_id].worker, starts[op_id].thread) == ran[i]
        assert index_of(events, OpPush, op_id) < index_of(events, OpStart, op_id)
        assert index_of(events, OpReady, op_id) <= index_of(events, OpStart, op_id)
        assert starts[op_id].time <= ends[op_id].time
        if i:
            assert ends[ids[i - 1]].time <= starts[op_id].time
            assert index_of(events, OpEnd, ids[i - 1]) < index_of(events, OpStart, op_id)
    merged = [
        op_id for i, op_id in enumerate(ids[1:], 1) if starts[op_id].time == ends[ids[i - 1]].time
    ]
    assert merged  # the links one worker ran back to back share one record and clock read
    assert all(starts[op_id].worker.startswith(("cpu/", "cpu(0)/")) for op_id in merged)


@pytest.mark.timeout(30)
def test_chrome_trace_is_valid_and_loads_back(threaded_engine, tmp_path):
    eng = threaded_engine
    with mx.engine.trace() as tr:
        a = eng.new_var(name="a")
        eng.push_sync(lambda rctx: time.sleep(0.001), CPU, mutate_vars=[a], name="produce")
        for i in range(3):
            eng.push_sync(lambda rctx: None, CPU, const_vars=[a], name=f"consume{i}")
        eng.wait_for_all()
    path = tmp_path / "run.json"
    tr.to_chrome_trace(path)
    document = json.loads(path.read_text())
    events = document["traceEvents"]
    complete = [e for e in events if e["ph"] == "X" and e["cat"] == "op"]
    assert sorted(e["name"] for e in complete) == ["consume0", "consume1", "consume2", "produce"]
    assert all(e["dur"] > 0 and isinstance(e["tid"], int) for e in complete)
    starts = {e["id"]: e for e in events if e["ph"] == "s"}
    finishes = {e["id"]: e for e in events if e["ph"] == "f"}
    assert len(starts) == 3 and starts.keys() == finishes.keys()
    assert all(starts[i]["ts"] <= finishes[i]["ts"] for i in starts)
    assert all(e["name"] == "RAW a" for e in starts.values())
    lanes = {e["tid"]: e["args"]["name"] for e in events if e["name"] == "thread_name"}
    assert {e["tid"] for e in complete} <= lanes.keys()
    assert any(name.startswith("wait: ") for name in lanes.values())
    loaded = Trace.from_chrome_trace(path)
    assert loaded.events == tr.events
    stripped = {"traceEvents": events}  # a trace without our embedded events
    assert len(Trace.from_chrome_trace(stripped).events_of(OpStart)) == 4
    with pytest.raises(mx.base.FormatError):
        Trace.from_chrome_trace({"nothing": []})


@pytest.mark.timeout(30)
def test_stats_aggregate_by_op_name(engine):
    with mx.engine.trace() as tr:
        v = engine.new_var(name="v")
        for _ in range(5):
            engine.push_sync(lambda rctx: time.sleep(0.001), CPU, mutate_vars=[v], name="sleepy")
        engine.push_sync(lambda rctx: None, CPU, mutate_vars=[v], name="quick")
        engine.wait_for_all()
    stats = tr.stats()
    assert stats["sleepy"].count == 5 and stats["quick"].count == 1
    row = stats["sleepy"]
    assert row.min <= row.mean <= row.max and row.total == pytest.approx(row.mean * 5)
    assert stats.rows[0].name == "sleepy"  # largest total first
    text = str(stats)
    assert text.splitlines()[0].split()[:2] == ["Name", "Count"] and "sleepy" in text
    with pytest.raises(KeyError, match="no op named 'nope'"):
        stats["nope"]


@pytest.mark.timeout(30)
def test_explain_names_the_op_that_held_the_var(threaded_engine):
    eng = threaded_engine
    with mx.engine.trace() as tr:
        weight = eng.new_var(name="weight")
        eng.push_sync(lambda rctx: time.sleep(0.01), CPU, mutate_vars=[weight], name="update")
        eng.push_sync(lambda rctx: None, CPU, const_vars=[weight], name="forward")
        eng.wait_for_all()
    text = tr.explain("forward")
    assert "op 'forward'" in text
    assert "reads 'weight', which op 'update'" in text
    assert "worker 'cpu" in text and "ran for" in text
    assert "ready at push" in tr.explain("update")
    with pytest.raises(KeyError):
        tr.explain("missing")
    with pytest.raises(KeyError):
        tr.explain(10**9)


@pytest.mark.timeout(30)
def test_vars_made_before_recording_are_named_by_their_first_push(engine):
    """A var created before ``trace()`` gets one ``VarName`` event, at its first recorded push.

    Views then show ``'weights'`` rather than ``v12``; a recorder attached later names it again.
    """
    weights = engine.new_var(name="weights")
    out = engine.new_var(name="out")
    with mx.engine.trace() as tr:
        engine.push_sync(lambda rctx: None, CPU, const_vars=[weights], mutate_vars=[out], name="f")
        engine.push_sync(lambda rctx: None, CPU, mutate_vars=[weights], name="g")
        fresh = engine.new_var(name="fresh")
        engine.push_sync(lambda rctx: None, CPU, mutate_vars=[fresh], name="h")
        engine.wait_for_all()
    named = tr.events_of(trace_module.VarName)
    assert sorted((e.var_id, e.name) for e in named) == sorted(
        [(weights.id, "weights"), (out.id, "out")]
    )
    first_push = index_of(tr.events, OpPush, tr.events_of(OpPush)[0].op_id)
    assert all(tr.events.index(e) < first_push for e in named)
    assert tr.var_names() == {weights.id: "weights", out.id: "out", fresh.id: "fresh"}
    document = tr.to_chrome_trace()
    f = next(e for e in document["traceEvents"] if e.get("name") == "f" and e["ph"] == "X")
    assert f["args"]["reads"] == ["weights"] and f["args"]["writes"] == ["out"]
    assert Trace.from_chrome_trace(document).var_names() == tr.var_names()
    with mx.engine.trace() as again:
        engine.push_sync(lambda rctx: None, CPU, const_vars=[weights], name="f2")
        engine.wait_for_all()
    assert again.var_names() == {weights.id: "weights"}


@pytest.mark.timeout(30)
def test_raw_records_hold_only_numbers_and_strings(engine):
    """The engine's records keep no engine objects alive, nothing the garbage collector walks."""
    import gc

    a = engine.new_var(name="a")
    recorder = mx.engine.trace().attach()
    try:
        for _ in range(10):
            engine.push_sync(lambda rctx: None, CPU, mutate_vars=[a], name="w")
        engine.push_sync(lambda rctx: 1 / 0, CPU, mutate_vars=[a], name="fails")
        engine.push_delete(a)
        try:
            engine.wait_for_all()
        except OpError:
            pass
        gc.collect()  # untracks the tuples of var ids
        items = list(trace_module._raw)
        assert len(items) >= 12 * (10 + 4)  # a push (with start on the naive quiet path), an end
        plain = (int, float, str, bool, type(None), tuple, mx.Context, mx.RunContext)
        others = [item for item in items if not isinstance(item, plain)]
        assert all(isinstance(item, trace_module.Event) for item in others)  # waits emit events
        assert not any(gc.is_tracked(item) for item in items if type(item) is tuple)
    finally:
        recorder.detach()
    assert len(recorder.events_of(OpEnd)) == 12


@pytest.mark.timeout(30)
def test_a_writer_after_many_pending_readers_waits_on_each(step_engine):
    r"""
    w0 -> r1 .. r200 (all pending on the step engine) -> w1

    w1 has a write-after-read edge to every reader still unfinished, and one
    write-after-write edge to w0; once some readers ran, a later writer does
    not wait on those.
    """
    eng = step_engine
    a = eng.new_var(name="a")
    with mx.engine.trace() as tr:
        w0 = eng.push_sync(lambda rctx: None, CPU, mutate_vars=[a], name="w0")
        readers = [
            eng.push_sync(lambda rctx: None, CPU, const_vars=[a], name="r") for _ in range(200)
        ]
        w1 = eng.push_sync(lambda rctx: None, CPU, mutate_vars=[a], name="w1")
        eng.run()
    push = {e.op_id: e for e in tr.events_of(OpPush)}
    assert {(d.op_id, d.kind) for d in push[w1].waits_on} == {(w0, DepKind.WAW)} | {
        (r, DepKind.WAR) for r in readers
    }
    assert {(d.op_id, d.kind) for d in push[readers[-1]].waits_on} == {(w0, DepKind.RAW)}


@pytest.mark.timeout(30)
def test_build_in_bounded_chunks_gives_the_same_events(engine):
    """``tr.build(limit)`` builds at most ``limit`` records and says how many wait; the
    result equals building all at once (a live view builds in chunks and yields between)."""
    a = engine.new_var(name="a")
    with mx.engine.trace() as chunked, mx.engine.trace() as whole:
        for i in range(50):
            engine.push_sync(lambda rctx: None, CPU, mutate_vars=[a], name=f"w{i % 3}")
        engine.wait_for_all()
        assert chunked.pending > 0 and chunked.built_events == []
        waiting = [chunked.build(7)]
        while waiting[-1]:
            waiting.append(chunked.build(7))
            assert len(waiting) < 100
        assert waiting == sorted(waiting, reverse=True)
        assert chunked.pending == 0
        assert chunked.built_events == whole.events
    assert chunked.events == whole.events


def test_stats_leave_out_ops_pushed_before_recording():
    """An op pushed before ``trace()`` began may run inside it; its name is unknown there."""
    import threading

    import mxnb as mx

    eng = mx.engine.create("threaded")
    try:
        gate = threading.Event()
        early = eng.new_var(name="early")
        eng.push_sync(lambda rctx: gate.wait(10), mx.cpu(), mutate_vars=[early], name="before")
        with mx.engine.trace() as tr:
            gate.set()
            eng.push_sync(lambda rctx: None, mx.cpu(), const_vars=[early], name="after")
            eng.wait_for_all()
        names = [row.name for row in tr.stats().rows]
        assert names == ["after"]
    finally:
        eng.shutdown()
