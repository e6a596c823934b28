"""The trace log's dedicated records build exactly the events of the general ones.

The engine writes short records for its commonest cases (``RAW_PUSH_START``:
a push the pushing thread starts at once; ``RAW_DONE`` / ``RAW_DONE_START``:
an end that succeeded, deleted nothing, and may start its successor on the
same worker; the naive engine's one-var fast path writes its ``RAW_PUSH_START``
and ``RAW_DONE`` in place).  Each short one stands for general records
(``RAW_PUSH``, ``RAW_END``, ``RAW_START``).  Here a recorded log is
rewritten into general records only — the plain reference — and both logs
are read by fresh readers: the events must be equal, field for field.
"""

from __future__ import annotations

import time

import pytest

import mxnb as mx
from mxnb.engine import records
from mxnb.engine.tracing import OpPush, OpStart

CPU = mx.cpu()


def as_general_records(items: list) -> list:
    """``items`` with every dedicated record replaced by the general record(s) it stands for."""
    out: list = []
    i = 0
    while i < len(items):
        code = items[i]
        if type(code) is not int:  # an event or a (builder, *args) record
            out.append(code)
            i += 1
            continue
        end = i + records.RECORD_SIZE[code]
        fields = items[i + 1 : end]
        i = end
        if code == records.RAW_PUSH_START:
            *push, worker = fields
            out += (records.RAW_PUSH, *push, 0)
            out += (records.RAW_START, push[0], push[1], worker, push[7])
        elif code == records.RAW_DONE:
            t, op_id, ready = fields
            out += (records.RAW_END, t, op_id, None, False, None, ready)
        elif code == records.RAW_DONE_START:
            t, op_id, successor, rctx = fields
            out += (records.RAW_END, t, op_id, None, False, None, (successor,))
            out += (records.RAW_START, t, successor, rctx.worker, rctx.thread)
        else:
            out += (code, *fields)
    return out


def record_codes(items: list) -> list:
    """The code of each record in ``items``, in order."""
    codes = []
    i = 0
    while i < len(items):
        if type(items[i]) is not int:
            i += 1
            continue
        codes.append(items[i])
        i += records.RECORD_SIZE[items[i]]
    return codes


def read(items: list) -> list:
    """The events a fresh reader builds from ``items``."""
    events: list = []
    records.RecordReader(set()).read(items, len(items), events.append)
    return events


def run_workload(engine, kind: str, n: int = 60) -> None:
    """Tiny ops: each on its own var, all on one var, or one writer, readers, one writer."""
    slow = lambda rctx: time.sleep(0.005)
    tiny = lambda rctx: None
    if kind == "independent":
        for i in range(n):
            engine.push_sync(tiny, CPU, mutate_vars=[engine.new_var()], name=f"op{i % 4}")
    elif kind == "chain":
        var = engine.new_var(name="chained")
        engine.push_sync(slow, CPU, mutate_vars=[var], name="first")
        for i in range(n):
            engine.push_sync(tiny, CPU, mutate_vars=(var,), name=f"link{i % 3}")
    else:
        var = engine.new_var(name="fanned")
        engine.push_sync(slow, CPU, mutate_vars=[var], name="writer")
        for i in range(n):
            engine.push_sync(tiny, CPU, const_vars=[var], name=f"reader{i % 2}")
        engine.push_sync(tiny, CPU, mutate_vars=[var], name="last")
    if engine.kind == "step":
        engine.run()
    engine.wait_for_all()


@pytest.mark.timeout(60)
@pytest.mark.parametrize("kind", ["chain", "fan", "independent"])
def test_dedicated_records_build_the_events_of_the_general_ones(engine, kind):
    before = engine.new_var(name="made before recording")  # named by its first push
    recorder = mx.engine.trace().attach()
    try:
        engine.push_sync(lambda rctx: None, CPU, mutate_vars=[before], name="names it")
        run_workload(engine, kind)
        logged = list(records._raw)
    finally:
        recorder.detach()
    general = as_general_records(logged)
    short = {records.RAW_PUSH_START, records.RAW_DONE, records.RAW_DONE_START}
    assert short & set(record_codes(logged))  # the workload wrote short records
    assert not short & set(record_codes(general))
    events = read(logged)
    assert events == read(general)
    assert events == recorder.events  # what the Trace built while attached
    pushes = [e for e in events if type(e) is OpPush]
    assert all(e.thread == "MainThread" and e.ctx == "cpu(0)" for e in pushes)
    assert len([e for e in events if type(e) is OpStart]) == len(pushes)


@pytest.mark.parametrize("write", [True, False])
def test_a_naive_push_written_in_place_is_the_record_record_push_writes(write):
    """The naive engine's one-var push writes its RAW_PUSH_START itself (then RAW_DONE); field
    for field, the time aside, they are what :func:`records.record_push` and
    :func:`records.record_done` write for the same op."""
    from mxnb.engine.waiting import _local

    engine = mx.engine.create("naive")
    var = engine.new_var(name="v")
    ran = []
    recorder = mx.engine.trace().attach()
    try:
        engine.push_sync(lambda rctx: None, CPU, mutate_vars=[var], name="names v")
        given = {"mutate_vars": [var]} if write else {"const_vars": (var,)}
        engine.push_sync(lambda rctx: ran.append(_local.stack[-1]), CPU, name="op", **given)
        size = records.RECORD_SIZE[records.RAW_PUSH_START]
        done = records.RECORD_SIZE[records.RAW_DONE]
        in_place = list(records._raw[-size - done :])
        records.record_push(ran[0], "main")
        records.record_done(ran[0])
        by_function = list(records._raw[-size - done :])
        del records._raw[-size - done :]  # one op, its two records
    finally:
        recorder.detach()
        engine.shutdown()
    assert in_place[0] == records.RAW_PUSH_START and in_place[size] == records.RAW_DONE
    times = (1, size + 1)
    assert [x for i, x in enumerate(in_place) if i not in times] == [
        x for i, x in enumerate(by_function) if i not in times
    ]
    assert [e.name for e in recorder.events if type(e) is OpPush] == ["names v", "op"]
