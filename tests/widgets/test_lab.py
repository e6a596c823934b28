"""The lab panels' kernel side: a comm channel that records only while a view is open."""

from __future__ import annotations

import pytest

import mxnb as mx
from mxnb.widgets.lab import TARGET, EngineChannel, register_comm_target
from mxnb.widgets.timeline_feed import TimelineReplica


class FakeComm:
    """What ipykernel's Comm offers the channel: send, on_msg, on_close."""

    def __init__(self):
        self.sent: list[dict] = []
        self.handlers: dict = {}

    def send(self, data):
        self.sent.append(data)

    def on_msg(self, callback):
        self.handlers["msg"] = callback

    def on_close(self, callback):
        self.handlers["close"] = callback

    def message(self, data):
        self.handlers["msg"]({"content": {"data": data}})


def noop(rctx):
    return None


def push_chain(n):
    eng = mx.engine.get()
    a = eng.new_var(name="a")
    ids = [eng.push_sync(noop, mx.cpu(), mutate_vars=[a], name=f"w{i}") for i in range(n)]
    eng.wait_for_all()
    return ids


def test_outside_a_kernel_nothing_is_registered():
    assert TARGET == "mxnb.engine"
    assert register_comm_target() is False


@pytest.mark.timeout(60)
def test_records_only_while_a_view_is_open_and_sends_the_open_views():
    comm = FakeComm()
    channel = EngineChannel(comm, {}, background=False)
    try:
        assert not channel.trace.attached  # no view open: nothing recorded
        push_chain(2)
        assert channel.update() is False and comm.sent == []
        comm.message({"views": ["dag", "timeline"]})
        assert channel.trace.attached
        ids = push_chain(3)
        assert channel.update() is True
        message = comm.sent[-1]
        assert set(message) == {"status", "pushed", "dag", "timeline"}
        for op_id in ids:
            assert f'id="op{op_id}"' in message["dag"]["svg"]
        lanes = message["timeline"]["data"]["lanes"]
        bars = [bar[0] for lane in lanes if lane["kind"] == "worker" for bar in lane["bars"]]
        assert sorted(bars) == ids
        assert message["status"] == "3 ops pushed, 3 finished, 0 pending"
        assert channel.update() is False  # nothing new: nothing sent

        comm.message({"views": ["dag", "inspect", "memory", "stats"], "inspect": ids[1]})
        assert channel.update() is True
        message = comm.sent[-1]
        assert message["dag"]["selected"] == f"op{ids[1]}"
        assert message["inspect"]["text"].startswith(f"#{ids[1]} w1")
        assert "<svg" in message["memory"]["svg"] and "<table" in message["stats"]["html"]

        comm.message({"views": []})
        assert not channel.trace.attached
    finally:
        channel.close()
    assert not channel.trace.attached


@pytest.mark.timeout(60)
def test_background_thread_sends_updates_and_stops_on_close():
    import time

    comm = FakeComm()
    channel = EngineChannel(comm, {"views": ["dag"]})
    try:
        ids = push_chain(4)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            if comm.sent and f'id="op{ids[-1]}"' in comm.sent[-1].get("dag", {}).get("svg", ""):
                break
            time.sleep(0.05)
        assert f'id="op{ids[-1]}"' in comm.sent[-1]["dag"]["svg"]
    finally:
        comm.handlers["close"]({})
    channel._thread.join(timeout=5)
    assert not channel._thread.is_alive() and not channel.trace.attached


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_timeline_panel_shows_every_op_of_thousands_soon_after_the_run(
    stream_tiny_ops, finished_bars
):
    """The Timeline panel catches up with a few thousand ops (issue 22; lag in benchmarks/extension.py)."""
    import time

    count = 4000
    comm = FakeComm()
    channel = EngineChannel(comm, {"views": ["timeline"]})
    try:
        stream_tiny_ops(mx.engine.get(), count)
        deadline = time.monotonic() + 15
        shown = 0
        while time.monotonic() < deadline and shown < count:
            time.sleep(0.05)
            replica = TimelineReplica()  # what the panel holds: the full send, then deltas
            for part in (m["timeline"] for m in list(comm.sent) if "timeline" in m):
                replica.receive(part)
            shown = finished_bars(replica.data)
        assert shown >= count
    finally:
        channel.close()


def test_a_clicked_op_sends_its_lineage_to_the_dag_and_timeline_panels():
    comm = FakeComm()
    channel = EngineChannel(comm, {"views": ["dag", "timeline"]}, background=False)
    first, middle, last = push_chain(3)
    comm.message({"inspect": middle})
    channel.update()
    assert comm.sent[-1]["lineage"] == {
        "op": f"op{middle}",
        "ancestors": [f"op{first}"],
        "descendants": [f"op{last}"],
    }
    push_chain(1)
    channel.update()
    assert "lineage" not in comm.sent[-1]  # once per click: the panels keep it
    comm.message({"inspect": first})
    channel.update()
    assert comm.sent[-1]["lineage"]["op"] == f"op{first}"
    channel.close()


def test_the_timeline_panel_gets_the_idle_spans_of_a_quiet_run():
    comm = FakeComm()
    channel = EngineChannel(comm, {"views": ["timeline"]}, background=False)
    push_chain(3)
    channel.update()
    idle = comm.sent[-1]["timeline"]["idle"]
    assert idle["seq"] == comm.sent[-1]["timeline"]["data"]["seq"]
    assert {span[3] for span in idle["spans"]} <= {
        "nothing_pushed",
        "waiting_on_var",
        "ready_not_started",
    }
    channel.close()


class FakeEvents:
    """IPython's event manager, as far as the channel uses it."""

    def __init__(self):
        self.callbacks: dict[str, list] = {}

    def register(self, name, callback):
        self.callbacks.setdefault(name, []).append(callback)

    def unregister(self, name, callback):
        self.callbacks[name].remove(callback)

    def trigger(self, name):
        for callback in list(self.callbacks.get(name, [])):
            callback(None)


def timeline_ops(comm):
    """The op ids the Timeline panel shows after what ``comm`` sent (full sends and deltas)."""
    replica = TimelineReplica()
    for message in comm.sent:
        if "timeline" in message:
            replica.receive(message["timeline"])
    lanes = replica.data["lanes"]
    return sorted(bar[0] for lane in lanes if lane["kind"] == "worker" for bar in lane["bars"])


@pytest.mark.timeout(60)
def test_clear_and_since_last_cell_start_the_panels_range_again(monkeypatch):
    import mxnb.widgets.lab as lab

    events = FakeEvents()
    monkeypatch.setattr(lab, "_ipython_events", lambda: events)
    comm = FakeComm()
    channel = EngineChannel(comm, {"views": ["timeline", "stats"]}, background=False)
    try:
        before = push_chain(3)
        assert channel.update() and timeline_ops(comm) == before
        comm.message({"clear": True})
        assert channel.update() is True  # an empty recording is sent at once
        assert timeline_ops(comm) == [] and comm.sent[-1]["pushed"] == 0
        after = push_chain(2)
        assert channel.update() and timeline_ops(comm) == after
        assert comm.sent[-1]["status"].startswith("2 ops pushed")

        comm.message({"since_cell": True})
        assert events.callbacks["pre_run_cell"] == [channel.clear]
        push_chain(2)
        events.trigger("pre_run_cell")  # a cell starts: the range is that cell's
        cell = push_chain(4)
        assert channel.update() and timeline_ops(comm) == cell
        comm.message({"since_cell": False})
        assert events.callbacks["pre_run_cell"] == []
    finally:
        channel.close()


@pytest.mark.timeout(60)
def test_a_channel_opened_with_resume_shows_what_the_closed_one_recorded():
    comm = FakeComm()
    channel = EngineChannel(comm, {"views": ["timeline"]}, background=False)
    ids = push_chain(3)
    channel.update()
    channel.close()  # the panels followed another notebook
    again = FakeComm()
    resumed = EngineChannel(again, {"views": ["timeline"], "resume": True}, background=False)
    try:
        more = push_chain(1)
        assert resumed.update() is True
        assert timeline_ops(again) == ids + more
    finally:
        resumed.close()
    fresh = EngineChannel(FakeComm(), {"views": ["timeline"]}, background=False)
    try:
        assert len(fresh.model.ops) == 0  # no resume asked: a new recording
    finally:
        fresh.close()
