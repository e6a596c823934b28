"""TimelineFeed: a full send, then deltas that rebuild exactly Timeline.to_data()."""

from __future__ import annotations

import json

import pytest

import mxnb as mx
from mxnb.engine.tracing import Trace
from mxnb.widgets import Timeline
from mxnb.widgets.model import EngineModel
from mxnb.widgets.timeline_feed import TimelineFeed, apply_delta, bar_key


def normalised(data: dict) -> dict:
    """Timeline data with each lane's bars in key order (the browser sorts them anyway)."""
    lanes = [
        {**lane, "bars": sorted(lane["bars"], key=lambda b: (str(bar_key(b)), b[1]))}
        for lane in data["lanes"]
    ]
    return {
        "title": data["title"],
        "span": data["span"],
        "lanes": lanes,
        "critical": data["critical"],
    }


def follow(events: list, chunk: int) -> tuple[dict, list[dict], EngineModel]:
    """Fold ``events`` ``chunk`` at a time, feeding each step; the data a browser ends with."""
    model = EngineModel()
    feed = TimelineFeed()
    kind, data = feed.next(model)
    assert kind == "full"
    data = json.loads(json.dumps(data))
    deltas = []
    for start in range(0, len(events), chunk):
        model.update(events[start : start + chunk])
        kind, delta = feed.next(model)
        assert kind == "delta"
        delta = json.loads(json.dumps(delta))  # what crosses the comm
        deltas.append(delta)
        apply_delta(data, delta)
        expected = Timeline(model).to_data()
        assert normalised(data) == normalised(expected)
    return data, deltas, model


def test_deltas_rebuild_the_hand_built_diamond_with_waits_and_failures(diamond):
    data, _, model = follow(diamond, 1)
    assert data["critical"] == model.critical_path() and data["critical"]
    assert any(lane["kind"] == "wait" for lane in data["lanes"])
    states = {bar[4] for lane in data["lanes"] for bar in lane["bars"]}
    assert {"done", "failed", "wait"} <= states


@pytest.mark.timeout(60)
def test_deltas_rebuild_a_real_run_and_carry_only_what_changed():
    trace = Trace().attach()
    try:
        x = mx.nd.ones((8, 8))
        for step in range(150):
            x = x * 0.5 + 1
            if step % 50 == 0:
                x.wait_to_read()  # wait bars too
        mx.engine.get().wait_for_all()
    finally:
        trace.detach()
    events = list(trace.events)
    data, deltas, model = follow(events, 40)
    assert len(model.ops) >= 450
    assert data["critical"] == model.critical_path()
    sent = [sum(len(bars) for bars in d["bars"].values()) for d in deltas]
    assert max(sent) < 0.5 * len(model.ops), "a delta holds the ops that changed, not the run"
    # once the lanes exist, a delta does not repeat them
    assert "lanes" in deltas[0] or "lanes" in deltas[1]
    assert sum("lanes" in d for d in deltas) <= len(data["lanes"])


def test_a_delta_out_of_order_is_refused_and_a_new_model_gets_a_full_send(diamond):
    model = EngineModel(diamond[:6])
    feed = TimelineFeed()
    _, data = feed.next(model)
    model.update(diamond[6:])
    _, first = feed.next(model)
    _, second = feed.next(model)
    with pytest.raises(ValueError, match="follows"):
        apply_delta(json.loads(json.dumps(data)), second)
    assert apply_delta(data, first)["seq"] == first["seq"]
    kind, again = feed.next(EngineModel(diamond))  # a cleared monitor folds a new model
    assert kind == "full" and again["seq"] == second["seq"] + 1
    feed.reset()  # a view asked to resync
    assert feed.next(model)[0] == "full"


def test_deltas_carry_gpu_device_lanes(monkeypatch):
    """On a GPU each op has a device run (OpDevice): the live feed draws its lane as to_data does."""
    from mxnb.engine.device_timing import host_streams
    from mxnb.engine.events import OpDevice
    from mxnb.engine.threaded import ThreadedEnginePerDevice

    monkeypatch.setattr(ThreadedEnginePerDevice, "virtual_streams", staticmethod(host_streams))
    before = mx.context.virtual_gpus()
    mx.context.set_virtual_gpus(1)
    eng = mx.engine.create("threaded_per_device")
    try:
        a = eng.new_var(name="a")
        with mx.engine.trace() as trace:
            for i in range(12):
                eng.push_sync(lambda rctx: None, mx.gpu(0), mutate_vars=[a], name=f"k{i}")
            eng.wait_for_all()
    finally:
        eng.shutdown()
        mx.context.set_virtual_gpus(before)
    events = list(trace.events)
    assert sum(isinstance(e, OpDevice) for e in events) == 12
    for chunk in (1, 5):  # a device run and its op's end in one delta, or apart
        data, _, _ = follow(events, chunk)
        device = [lane for lane in data["lanes"] if lane["name"].endswith(" device")]
        assert device and sum(len(lane["bars"]) for lane in device) == 12
