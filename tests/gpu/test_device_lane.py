"""The trace's device lane on a real GPU: each op's kernels, read from CUDA events.

On a virtual GPU the device lane is checked with stand-in streams
(``tests/engine/test_device_timing.py``); only a real device has CUDA events
and a clock of its own, so this runs only there (skipped, saying why, elsewhere).
"""

from __future__ import annotations

import pytest

import mxnb as mx
from mxnb.engine.events import OpDevice, OpEnd, OpStart

from .conftest import _why_no_real_gpu


@pytest.mark.gpu
def test_device_runs_are_ordered_on_each_stream_and_follow_their_launch():
    why = _why_no_real_gpu()
    if why:
        pytest.skip(why)
    x = mx.nd.ones((2048, 2048), ctx=mx.gpu(0))
    x.wait_to_read()
    with mx.engine.trace() as trace:
        for _ in range(6):
            x = mx.nd.dot(x, x) * 1e-3
        x.wait_to_read()
    events = trace.events
    runs = [e for e in events if isinstance(e, OpDevice)]
    starts = {e.op_id: e for e in events if isinstance(e, OpStart)}
    ends = {e.op_id: e for e in events if isinstance(e, OpEnd)}
    assert len(runs) >= 12  # six dots, six scalings
    last = max(e.time for e in events if not isinstance(e, OpDevice))
    by_stream: dict[str, list[OpDevice]] = {}
    for run in runs:
        assert run.stream == f"{starts[run.op_id].worker} device"
        # kernels start after their launch began (a few microseconds of clock slack)
        assert run.time >= starts[run.op_id].time - 50e-6 and run.end >= run.time
        assert run.end <= last + 50e-6  # the host's wait ended after the device finished
        by_stream.setdefault(run.stream, []).append(run)
    for stream_runs in by_stream.values():  # a stream runs its kernels one after another
        stream_runs.sort(key=lambda r: r.time)
        for before, after in zip(stream_runs, stream_runs[1:]):
            assert after.time >= before.end - 50e-6
    assert any(ends[r.op_id].time < r.end for r in runs), "no launch returned before its kernels ended"
