"""The group commit of dist_batch.Channel, without Ray: a fake server call whose answer the test
gives by hand."""

from __future__ import annotations

from concurrent.futures import Future

import numpy as np
import pytest

from mxnb.kvstore.dist_batch import Channel


class FakeCall:
    """What ``actor.method.remote(...)`` returns: something with ``.future()``."""

    def __init__(self, items: list, values: list) -> None:
        self.items, self.values = items, values
        self._future: Future = Future()

    def future(self) -> Future:
        return self._future

    def answer(self) -> None:
        self._future.set_result([f"done {item}" for item in self.items])


def channel(window: int = 1) -> tuple[Channel, list[FakeCall]]:
    calls: list[FakeCall] = []

    def send(items: list, values: list) -> FakeCall:
        calls.append(FakeCall(items, values))
        return calls[-1]

    return Channel(send, window), calls


def test_a_lone_request_leaves_at_once_the_rest_wait_and_go_together():
    chan, calls = channel()
    first = chan.submit("a", np.ones(2))
    assert [c.items for c in calls] == [["a"]]  # nothing waits for a batch to fill
    later = [chan.submit(k, None, priority) for k, priority in (("b", 0), ("c", 5), ("d", 0))]
    assert len(calls) == 1  # one call in flight: b, c, d wait
    calls[0].answer()
    assert first.result(timeout=1) == "done a"
    assert [c.items for c in calls] == [["a"], ["c", "b", "d"]]  # priority first, then arrival
    assert not any(f.done() for f in later)
    calls[1].answer()
    assert [f.result(timeout=1) for f in later] == ["done b", "done c", "done d"]
    assert chan.calls == 2


def test_a_window_of_two_lets_two_calls_fly():
    chan, calls = channel(window=2)
    for key in "abc":
        chan.submit(key)
    assert [c.items for c in calls] == [["a"], ["b"]]
    calls[1].answer()
    assert [c.items for c in calls][2:] == [["c"]]


def test_a_failed_call_fails_every_request_of_its_batch_and_the_next_batch_still_leaves():
    chan, calls = channel()
    chan.submit("a")
    batch = [chan.submit("b"), chan.submit("c")]
    calls[0].answer()
    after = chan.submit("d")  # arrives while b + c are in flight
    calls[1].future().set_exception(RuntimeError("server 0 died"))
    for future in batch:
        with pytest.raises(RuntimeError, match="server 0 died"):
            future.result(timeout=1)
    assert calls[2].items == ["d"]
    calls[2].answer()
    assert after.result(timeout=1) == "done d"


def test_a_send_that_raises_fails_its_requests():
    def send(items: list, values: list) -> FakeCall:
        raise ValueError("actor handle is gone")

    chan = Channel(send)
    with pytest.raises(ValueError, match="handle is gone"):
        chan.submit("a").result(timeout=1)
    with pytest.raises(ValueError, match="handle is gone"):
        chan.submit("b").result(timeout=1)  # the channel is free again
