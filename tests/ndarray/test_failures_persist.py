"""A failed array raises on every read; waits can time out; failures do not pile up.

Specification:
* take ``y`` from a failing op and ``z = y + 1``: after ``y.asnumpy()`` has
  raised, ``z.asnumpy()`` and ``y.asnumpy()`` raise again (MXNet hands back
  uninitialised memory the second time); writing ``y`` again recovers it;
* ``wait_to_read(timeout=)`` / ``waitall(timeout=)`` raise ``EngineError`` on expiry;
* failures nobody waits for are kept for ``waitall`` only up to a bound, and
  ``waitall`` says how many more there were.
"""

from __future__ import annotations

import threading

import pytest

import mxnb as mx
from mxnb.base import EngineError, OpError
from mxnb.engine.base import MAX_UNRAISED_ERRORS


def _failing_array():
    x = mx.nd.ones((3,))
    y = mx.nd.empty((3,))

    def boom(rctx):
        raise ValueError("kernel exploded")

    mx.engine.get().push_sync(boom, mx.cpu(), [x._var], [y._var], name="boom")
    return y


@pytest.mark.parametrize("kind", ["naive", "threaded", "threaded_per_device"])
def test_a_failed_array_raises_on_every_read_until_written_again(kind):
    old = mx.engine.engine_type()
    mx.engine.set_engine(kind)
    try:
        y = _failing_array()
        z = y + 1
        for array in (y, z, y, z):
            with pytest.raises(OpError, match="'boom'.*kernel exploded"):
                array.asnumpy()
        y[:] = 5.0  # written again: y recovers; z, computed from the failure, does not
        assert y.asnumpy().tolist() == [5.0, 5.0, 5.0]
        with pytest.raises(OpError, match="kernel exploded"):
            z.asnumpy()
        assert (y + 1).asnumpy().tolist() == [6.0, 6.0, 6.0]
    finally:
        mx.engine.set_engine(old)


def test_waits_time_out_naming_what_is_pending():
    eng = mx.engine.create("threaded")
    release = threading.Event()
    var = eng.new_var("slow")
    eng.push_sync(lambda rctx: release.wait(10), mx.cpu(), mutate_vars=[var], name="sleeper")
    try:
        with pytest.raises(EngineError, match=r"wait_for_var\('slow'\) timed out.*'sleeper'"):
            eng.wait_for_var(var, timeout=0.05)
        with pytest.raises(EngineError, match="wait_for_all timed out.*1 op"):
            eng.wait_for_all(timeout=0.05)
    finally:
        release.set()
        eng.wait_for_all()
        eng.shutdown()


def test_ndarray_waits_take_a_timeout():
    a = mx.nd.ones((2,)) * 2
    a.wait_to_read(timeout=10)
    mx.nd.waitall(timeout=10)


def test_unwaited_failures_are_kept_up_to_a_bound():
    eng = mx.engine.create("naive")
    extra = 100
    for index in range(MAX_UNRAISED_ERRORS + extra):
        var = eng.new_var()
        eng.push_sync(lambda rctx: 1 / 0, mx.cpu(), mutate_vars=[var], name=f"div{index}")
    with pytest.raises(OpError, match=rf"'div0'.*and {MAX_UNRAISED_ERRORS + extra - 1} more"):
        eng.wait_for_all()
    eng.wait_for_all()  # forgotten once raised
    eng.shutdown()
