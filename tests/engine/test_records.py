"""The trace log: one layout per kind of record, and starts folded into pushes and ends.

Every record of a kind has the fields :data:`records.LAYOUTS` names, with the
same types each time.  A push the pushing thread starts at once (``starter``)
and an end whose worker starts its lone successor (``chain``) each stand for
a RAW_START at the same time, and each short form (RAW_DONE, RAW_LINK,
RAW_PUSH_ONE) for its general record: here a recorded log is rewritten with
those starts split out as RAW_START records and each short form as its
general record (the plain reference), and both logs are read by fresh
readers: the events must be equal, field for field.
"""

from __future__ import annotations

import time

import pytest

import mxnb as mx
from mxnb.engine import records
from mxnb.engine.tracing import OpPush, OpStart

CPU = mx.cpu()


def records_of(items: list) -> list[tuple]:
    """The coded records of ``items`` as (code, *fields) tuples; events and builder records left out."""
    out = []
    i = 0
    while i < len(items):
        code = items[i]
        if type(code) is not int:
            i += 1
            continue
        end = i + records.RECORD_SIZE[code]
        out.append(tuple(items[i:end]))
        i = end
    return out


def general(code: int, fields: dict) -> tuple[int, dict]:
    """A short form's general record (code and fields); any other record as it is."""
    if code == records.RAW_DONE:
        fields = dict(fields, error=None, skipped=False, deleted=(), ready=(), chain=None)
        return records.RAW_END, fields
    if code == records.RAW_LINK:
        successor = fields.pop("successor")
        chain = fields.pop("chain")
        fields.update(error=None, skipped=False, deleted=(), ready=(successor,), chain=chain)
        return records.RAW_END, fields
    if code == records.RAW_PUSH_ONE:
        values = [(value,) if name == "var_id" else value for name, value in fields.items()]
        return records.RAW_PUSH, dict(zip(records.LAYOUTS[records.RAW_PUSH], values))
    return code, fields


def with_starts_split_out(items: list) -> list:
    """``items`` with each push's ``starter`` and each end's ``chain`` written as a RAW_START,
    and each short form as the general record it stands for."""
    out: list = []
    i = 0
    while i < len(items):
        code = items[i]
        if type(code) is not int:  # an event or a (builder, *args) record
            out.append(code)
            i += 1
            continue
        end = i + records.RECORD_SIZE[code]
        code, fields = general(code, dict(zip(records.LAYOUTS[code], items[i + 1 : end])))
        assert tuple(fields) == records.LAYOUTS[code]  # the general record's fields, in order
        i = end
        if code == records.RAW_PUSH and fields["starter"] is not None:
            out += (code, *fields.values())[:-1] + (None,)
            out += (
                records.RAW_START,
                fields["t"],
                fields["op_id"],
                fields["starter"],
                fields["ident"],
            )
        elif code == records.RAW_END and fields["chain"] is not None:
            chain = fields["chain"]
            out += (code, *fields.values())[:-1] + (None,)
            out += (records.RAW_START, fields["t"], fields["ready"][0], chain.worker, chain.thread)
        else:
            out += (code, *fields.values())
    return out


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
def test_starts_folded_into_pushes_and_ends_build_the_events_of_start_records(engine, kind):
    before = engine.new_var(name="made before recording")  # named by its first push
    recorder = mx.engine.trace().attach()
    try:
        engine.push_sync(lambda rctx: None, CPU, mutate_vars=[before], name="names it")
        run_workload(engine, kind)
        logged = list(records._raw)
    finally:
        recorder.detach()
    plain = with_starts_split_out(logged)
    folded = [r for r in records_of(logged) if r[-1] is not None and r[0] in FOLDING]
    if engine.kind == "naive":
        assert folded  # its pushes start at once
    assert not [r for r in records_of(plain) if r[-1] is not None and r[0] in FOLDING]
    short = {records.RAW_DONE, records.RAW_PUSH_ONE}
    if engine.kind.startswith("threaded") and kind == "chain":
        short.add(records.RAW_LINK)  # a worker ran the chain's links
    assert short <= {r[0] for r in records_of(logged)}
    assert not {r[0] for r in records_of(plain)} & SHORT_FORMS
    events = read(logged)
    assert events == read(plain)
    assert events == recorder.events  # what the Trace built while attached
    pushes = [e for e in events if type(e) is OpPush]
    assert all(e.thread == "MainThread" and e.ctx == "cpu(0)" for e in pushes)
    assert len([e for e in events if type(e) is OpStart]) == len(pushes)


FOLDING = (records.RAW_PUSH, records.RAW_PUSH_ONE, records.RAW_END, records.RAW_LINK)
SHORT_FORMS = {records.RAW_DONE, records.RAW_LINK, records.RAW_PUSH_ONE}

#: The type of each field of each kind (a field's type never depends on the case).
FIELD_TYPES = {
    "t": float,
    "var_id": int,
    "op_id": int,
    "name": str,
    "n_const": int,
    "var_ids": tuple,
    "successor": int,
    "priority": int,
    "ident": int,
    "waits": int,
    "worker": str,
    "skipped": bool,
    "deleted": tuple,
    "ready": tuple,
    "handle_id": int,
    "nbytes": int,
    "pool_hit": bool,
    "to_pool": bool,
}


@pytest.mark.timeout(60)
def test_every_record_of_a_kind_has_its_one_layout(engine):
    import mxnb.ndarray as nd

    recorder = mx.engine.trace().attach()
    try:
        for kind in ("chain", "fan", "independent"):
            run_workload(engine, kind, n=12)
        doomed = engine.new_var(name="doomed")
        engine.push_delete(doomed, CPU)
        engine.push_sync(lambda rctx: 1 / 0, CPU, mutate_vars=[engine.new_var()], name="fails")
        (nd.ones((4, 4)) + 1).wait_to_read()  # storage records too
        with pytest.raises(mx.base.OpError, match="fails"):
            if engine.kind == "step":
                engine.run()
            engine.wait_for_all()
        logged = list(records._raw)
    finally:
        recorder.detach()
    seen = set()
    for code, *values in records_of(logged):
        seen.add(code)
        for field, value in zip(records.LAYOUTS[code], values, strict=True):
            if field in FIELD_TYPES:
                assert type(value) is FIELD_TYPES[field], (code, field, value)
            if field in ("var_ids", "ready", "deleted"):
                assert all(type(x) is int for x in value), (code, field, value)
    assert {records.RAW_VAR_NEW, records.RAW_PUSH_ONE, records.RAW_END, records.RAW_ALLOC} <= seen
    ends = [dict(zip(records.LAYOUTS[r[0]], r[1:])) for r in records_of(logged)]
    ends = [f for f, r in zip(ends, records_of(logged)) if r[0] == records.RAW_END]
    assert {type(f["error"]) for f in ends} == {str, type(None)}
    assert any(f["deleted"] for f in ends)


def test_ops_in_flight_at_attach_leave_no_event_without_its_push():
    """An op pushed before the recorder attached, that starts, ends or is made ready after it,
    gives no event: every op event follows its push, and the trace survives Chrome's reader."""
    import threading

    engine = mx.engine.create("threaded_per_device")
    var = engine.new_var(name="v")
    gate = threading.Event()
    try:
        engine.push_sync(lambda rctx: gate.wait(5), CPU, mutate_vars=[var], name="before")
        engine.push_sync(lambda rctx: None, CPU, mutate_vars=[var], name="queued before")
        with mx.engine.trace() as trace:
            gate.set()
            engine.push_sync(lambda rctx: None, CPU, const_vars=[var], name="after")
            engine.wait_for_all()
    finally:
        gate.set()
        engine.shutdown()
    pushed = {e.op_id for e in trace.events if type(e) is OpPush}
    about_ops = [e for e in trace.events if hasattr(e, "op_id") and type(e) is not OpPush]
    assert about_ops and all(e.op_id in pushed for e in about_ops)
    again = mx.engine.Trace.from_chrome_trace(trace.to_chrome_trace())
    assert [e.name for e in again.events if type(e) is OpPush] == ["after"]
