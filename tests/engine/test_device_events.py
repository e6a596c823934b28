"""GPU workers complete ops by events (engine/device_events.py), checked with stand-in streams.

A virtual GPU's workers get :class:`FakeStream` objects.  Each kernel launch
notes its stream and, for every other stream, the last launch on it that this
stream has waited for (through events).  Random programs over shared vars,
on two GPU workers (two streams) and the host, must then obey the rule: an op
that conflicts with an earlier op on another stream (read after write, write
after read, write after write) launches only after its stream waited for an
event recorded after that op; host reads synchronise the last write's event.
"""

from __future__ import annotations

import random
import threading
import time

import pytest

import mxnb as mx

_current = threading.local()


class FakeEvent:
    """What a stream had launched when the event was recorded."""

    def __init__(self, stream: FakeStream, launches: int) -> None:
        self.stream, self.launches, self.synchronized = stream, launches, False

    def synchronize(self) -> None:
        self.synchronized = True


class FakeStream:
    """Records launches in order and the events it was told to wait for."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.launches = 0
        self.covered: dict[str, int] = {}  # other stream -> its launches this stream waited for
        self.synchronized = 0

    def __enter__(self) -> FakeStream:
        _current.stream = self
        return self

    def __exit__(self, *exc: object) -> bool:
        _current.stream = None
        return False

    def record(self) -> FakeEvent:
        return FakeEvent(self, self.launches)

    def wait_event(self, event: FakeEvent) -> None:
        name = event.stream.name
        self.covered[name] = max(self.covered.get(name, 0), event.launches)

    def synchronize(self) -> None:
        self.synchronized += 1


@pytest.fixture
def engine(streamed_engine):
    return streamed_engine(FakeStream)


def _launch(log: list, name: str, reads: tuple[int, ...], writes: tuple[int, ...]):
    def fn(rctx) -> None:
        stream = getattr(_current, "stream", None)
        if stream is None:  # a host thread ran it (a helping worker): not on a stream
            log.append((name, None, 0, {}, reads, writes))
            return
        stream.launches += 1
        log.append((name, stream.name, stream.launches, dict(stream.covered), reads, writes))
        time.sleep(0.0005)  # long enough that the other worker takes the next ready op

    return fn


@pytest.mark.parametrize("seed", range(6))
def test_every_cross_stream_conflict_is_covered_by_an_event(engine, seed):
    rng = random.Random(seed)
    gpu = mx.gpu(0)
    vars_ = [engine.new_var(name=f"v{i}") for i in range(8)]
    log: list = []
    for i in range(120):
        chosen = rng.sample(range(8), rng.randint(1, 3))
        split = rng.randint(0, len(chosen) - 1)
        reads, writes = tuple(chosen[:split]), tuple(chosen[split:])
        engine.push_sync(
            _launch(log, f"op{i}", reads, writes),
            gpu,
            const_vars=[vars_[k] for k in reads],
            mutate_vars=[vars_[k] for k in writes],
            name=f"op{i}",
        )
    engine.wait_for_all()
    assert len(log) == 120
    assert {entry[1] for entry in log} >= {"gpu0/0", "gpu0/1"}  # both streams ran ops
    order = {entry[0]: n for n, entry in enumerate(log)}  # launch order = execution order here
    pushed = sorted(log, key=lambda entry: int(entry[0][2:]))
    for b, (name_b, stream_b, _, covered_b, reads_b, writes_b) in enumerate(pushed):
        for name_a, stream_a, launch_a, _, reads_a, writes_a in pushed[:b]:
            conflict = (set(writes_a) & (set(reads_b) | set(writes_b))) or (
                set(reads_a) & set(writes_b)
            )
            if not conflict:
                continue
            assert order[name_a] < order[name_b], f"{name_b} ran before {name_a}"
            if stream_a is None or stream_b is None or stream_a == stream_b:
                continue  # in order on one stream, or the host's default stream orders it
            assert covered_b.get(stream_a, 0) >= launch_a, (
                f"{name_b} on {stream_b} conflicts with {name_a} (launch {launch_a} on "
                f"{stream_a}) but its stream waited only for {covered_b.get(stream_a, 0)}"
            )


def test_host_reads_synchronise_the_last_writes_event_and_no_op_synchronises_its_stream(engine):
    gpu = mx.gpu(0)
    var = engine.new_var(name="x")
    log: list = []
    for i in range(10):
        engine.push_sync(_launch(log, f"op{i}", (), (0,)), gpu, mutate_vars=[var], name=f"w{i}")
    engine.wait_for_var(var)
    events = engine._device_events._by_var[var]
    assert events.write is not None and events.write[1].synchronized
    assert all(stream.synchronized == 0 for stream in engine.streams)  # no per-op sync
    engine.wait_for_all()
    assert all(stream.synchronized == 1 for stream in engine.streams)
