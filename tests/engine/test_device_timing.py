"""The device lane: a GPU op's launch on its worker's lane, its kernels' run on the stream's.

Virtual GPU workers get :class:`~mxnb.engine.device_timing.HostStream` objects (through
``ThreadedEnginePerDevice.virtual_streams``) whose events carry the host time they were
recorded at: the kernels run at the launch, so
each op's device run must lie inside its launch, on a lane named after the
worker, and the Chrome document must draw it with a 'launch' flow.  The clock
arithmetic itself (anchor + elapsed) is checked with events whose device time
is not the host's.
"""

from __future__ import annotations

import time

import pytest

import mxnb as mx
from mxnb.engine.chrome import chrome_document, events_from_document
from mxnb.engine.device_timing import DeviceClock, HostEvent, HostStream, elapsed_ms
from mxnb.engine.events import OpDevice, OpEnd, OpStart
from mxnb.engine.trace_model import TraceModel


class CountingStream(HostStream):
    """A virtual GPU's stream that counts the events recorded on it."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.recorded: list[HostEvent] = []

    def record(self) -> HostEvent:
        event = super().record()
        self.recorded.append(event)
        return event


@pytest.fixture
def engine(streamed_engine):
    return streamed_engine(CountingStream)


def _busy(seconds: float):
    def kernel(rctx: object) -> None:
        end = time.perf_counter() + seconds
        while time.perf_counter() < end:
            pass

    return kernel


def test_each_gpu_op_has_its_device_run_inside_its_launch(engine):
    gpu, cpu = mx.gpu(0), mx.cpu()
    a, b = engine.new_var(name="a"), engine.new_var(name="b")
    with mx.engine.trace() as trace:
        for i in range(4):
            engine.push_sync(_busy(0.002), gpu, mutate_vars=[a], name=f"kernel{i}")
        engine.push_sync(_busy(0.001), cpu, const_vars=[a], mutate_vars=[b], name="host")
        engine.wait_for_all()
    events = trace.events
    device = {e.op_id: e for e in events if isinstance(e, OpDevice)}
    starts = {e.op_id: e for e in events if isinstance(e, OpStart)}
    ends = {e.op_id: e for e in events if isinstance(e, OpEnd)}
    model = TraceModel(events)
    names = {op.op_id: op.name for op in model.ops.values()}
    assert sorted(names[i] for i in device) == [f"kernel{i}" for i in range(4)]  # not the CPU op
    for op_id, run in device.items():
        assert run.stream == f"{starts[op_id].worker} device"
        # the stand-in runs kernels at launch: the device run lies inside the launch
        assert starts[op_id].time <= run.time < run.end <= ends[op_id].time
        assert run.end - run.time >= 0.002
    lanes = {lane.worker: lane for lane in model.lanes()}
    for run in device.values():
        assert run.stream in lanes and lanes[run.stream].device == "gpu(0)"
        assert [i.op_id for i in lanes[run.stream].intervals].count(run.op_id) == 1
    assert max(run.end for run in device.values()) - model.t0 <= model.span()[1]


def test_the_chrome_document_draws_device_runs_with_launch_flows(engine):
    a = engine.new_var(name="a")
    with mx.engine.trace() as trace:
        for i in range(3):
            engine.push_sync(_busy(0.001), mx.gpu(0), mutate_vars=[a], name=f"k{i}")
        engine.wait_for_all()
    document = chrome_document(trace.events)
    records = document["traceEvents"]
    lanes = {r["tid"]: r["args"]["name"] for r in records if r.get("name") == "thread_name"}
    device = [r for r in records if r.get("cat") == "device"]
    assert [r["name"] for r in device] == ["k0", "k1", "k2"]
    assert all(lanes[r["tid"]].endswith(" device") for r in device)
    flows = [r for r in records if r.get("cat") == "launch"]
    assert sorted(r["ph"] for r in flows) == ["f", "f", "f", "s", "s", "s"]
    by_id = {}
    for flow in flows:
        by_id.setdefault(flow["id"], {})[flow["ph"]] = flow
    for pair, run in zip(by_id.values(), device):
        assert pair["f"]["ts"] == run["ts"] and pair["s"]["ts"] <= run["ts"]
    assert events_from_document(document) == trace.events  # OpDevice rides along, losslessly


def test_no_device_events_without_tracing(engine):
    a = engine.new_var(name="a")
    engine.push_sync(lambda rctx: None, mx.gpu(0), mutate_vars=[a], name="quiet")
    engine.wait_for_all()
    # untraced: one completion event per op, no start event, no clock anchor
    assert sum(len(s.recorded) for s in engine.streams) == 1


class DeviceEvent:
    """An event of a device whose clock runs apart from the host's (ms since it booted)."""

    def __init__(self, device_ms: float) -> None:
        self.host_time = device_ms / 1e3  # elapsed_ms reads differences only
        self.synchronized = False

    def synchronize(self) -> None:
        self.synchronized = True


def test_clock_puts_device_events_on_the_trace_clock():
    class Stream:
        def record(self) -> DeviceEvent:
            return DeviceEvent(5_000.0)  # the anchor: 5 s into the device's life

    clock = DeviceClock(Stream(), now=lambda: 100.0)  # ...which the host saw done at t=100 s
    assert clock.anchor.synchronized
    later = DeviceEvent(5_012.5)
    assert elapsed_ms(clock.anchor, later) == pytest.approx(12.5)
    assert clock.seconds(later) == pytest.approx(100.0125) and later.synchronized
