"""``set_engine`` while other threads push: nothing lost, no hang, order kept.

Specification: threads that never stop pushing do not keep ``set_engine``
from returning; every op they push runs exactly once, in push order per
var, whichever engine it ends up on; a thread that kept a reference to a
replaced engine pushes through it to the current one.
"""

from __future__ import annotations

import os
import select
import signal
import subprocess
import sys
import threading
import time
from types import SimpleNamespace

import pytest

import mxnb
import mxnb as mx
from mxnb.engine import interrupts

CPU = mx.cpu()
KINDS = ["naive", "threaded", "threaded_per_device", "threaded", "naive"]


@pytest.mark.timeout(120)
@pytest.mark.parametrize("cached", [False, True], ids=["get-each-push", "cached-engine"])
def test_switching_engines_while_threads_push(cached):
    old_type = mx.engine.engine_type()
    stop = threading.Event()
    logs: list[list[int]] = [[] for _ in range(3)]
    failures: list[BaseException] = []

    def pusher(index: int) -> None:
        engine = mx.engine.get()
        var = engine.new_var(f"pusher{index}")
        log = logs[index]
        count = 0
        try:
            while not stop.is_set() or count < 200:
                target = engine if cached else mx.engine.get()
                target.push_sync(lambda rctx, n=count: log.append(n), CPU, mutate_vars=[var])
                count += 1
            mx.engine.get().wait_for_var(var)
        except BaseException as exc:  # noqa: BLE001 - reported by the test
            failures.append(exc)

    threads = [threading.Thread(target=pusher, args=(i,)) for i in range(3)]
    try:
        for thread in threads:
            thread.start()
        for kind in KINDS * 4:
            mx.engine.set_engine(kind)  # returns although the pushers never pause
        stop.set()
        for thread in threads:
            thread.join(60)
        assert not any(thread.is_alive() for thread in threads), "a pusher hangs"
        assert not failures, failures
        mx.engine.get().wait_for_all()
        for log in logs:
            assert log == list(range(len(log))), "ops lost, repeated or reordered"
            assert len(log) >= 200
    finally:
        stop.set()
        mx.engine.set_engine(old_type)


@pytest.mark.timeout(120)
def test_ndarray_work_survives_engine_switches():
    old_type = mx.engine.engine_type()
    results: list[float] = []

    def worker() -> None:
        a = mx.nd.zeros((4,))
        for _ in range(500):
            a = a + 1
        results.append(float(a.asnumpy()[0]))

    threads = [threading.Thread(target=worker) for _ in range(3)]
    try:
        for thread in threads:
            thread.start()
        for kind in KINDS * 4:
            mx.engine.set_engine(kind)
        for thread in threads:
            thread.join(60)
        assert results == [500.0, 500.0, 500.0]
    finally:
        mx.engine.set_engine(old_type)


def test_sigint_inside_engine_bookkeeping_is_postponed_not_lost():
    """The handler's rule: postponed inside the engine or a finalizer, raised elsewhere."""
    chunk_file = os.path.abspath(mxnb.ndarray.chunk.__file__)
    in_finalizer = SimpleNamespace(
        f_code=SimpleNamespace(co_filename=chunk_file, co_name="__del__")
    )
    in_user_code = SimpleNamespace(f_code=SimpleNamespace(co_filename=__file__, co_name="loop"))
    interrupts.on_sigint(signal.SIGINT, in_finalizer)  # returns: postponed
    with pytest.raises(KeyboardInterrupt):
        mx.nd.zeros((2,))  # the next allocation is a safe point: it raises the interrupt
    assert not interrupts.take_pending()  # raised once, not twice
    with pytest.raises(KeyboardInterrupt):
        interrupts.on_sigint(signal.SIGINT, in_user_code)


@pytest.mark.timeout(120)
def test_ctrl_c_always_stops_a_busy_ndarray_loop():
    """Real SIGINTs into a loop of temporaries: every one is seen by the loop."""
    # The child installs the handler it relies on: SIGINT raises there even when this run
    # (a shell's background job) has it ignored, which the child would inherit.
    script = (
        "import signal; signal.signal(signal.SIGINT, signal.default_int_handler)\n"
        "import sys, mxnb as mx\n"
        "a = mx.nd.ones((8,))\n"
        "print('ready', flush=True)\n"
        "for round in range(ROUNDS):\n"
        "    try:\n"
        "        while True:\n"
        "            a = (a * 0.5 + 1) * 1.0\n"
        "    except KeyboardInterrupt:\n"
        "        print('caught', flush=True)\n"
    ).replace("ROUNDS", "30")
    child = subprocess.Popen(
        [sys.executable, "-c", script],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stdout.readline().strip() == "ready"
        for _ in range(30):
            time.sleep(0.02)
            child.send_signal(signal.SIGINT)
            ready, _, _ = select.select([child.stdout], [], [], 20)
            assert ready, "a Ctrl-C was lost: the loop kept running"
            assert child.stdout.readline().strip() == "caught"
        assert child.wait(30) == 0
        # a KeyboardInterrupt swallowed in a finalizer prints "Exception ignored in ..."
        assert "Exception ignored" not in child.stderr.read()
    finally:
        child.kill()
        child.stdout.close()
        child.stderr.close()
        child.wait()
