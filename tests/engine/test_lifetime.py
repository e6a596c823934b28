"""Interpreter exit: pending ops are drained, worker threads never hang the process."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest


@pytest.mark.timeout(120)
def test_pending_ops_run_before_the_interpreter_exits(tmp_path):
    out = tmp_path / "done.txt"
    script = textwrap.dedent(
        f"""
        import time
        import mxnb as mx
        eng = mx.engine.get()
        v = eng.new_var(name="v")
        for i in range(50):
            eng.push_sync(lambda rctx: time.sleep(0.002), mx.cpu(), mutate_vars=[v])
        eng.push_sync(lambda rctx: open({str(out)!r}, "w").write("drained"), mx.cpu(), [v], [])
        # no wait: the atexit hook drains the engine
        """
    )
    result = subprocess.run(
        [sys.executable, "-c", script], check=False, capture_output=True, text=True, timeout=100
    )
    assert result.returncode == 0, result.stderr
    assert out.read_text() == "drained"


@pytest.mark.timeout(120)
def test_an_async_op_that_never_completes_does_not_hang_exit():
    script = textwrap.dedent(
        """
        import mxnb as mx
        from mxnb import engine
        engine.get().push_async(lambda rctx, done: None, mx.cpu(), name="forgotten")
        engine._SHUTDOWN_TIMEOUT = 0.5
        """
    )
    result = subprocess.run(
        [sys.executable, "-c", script], check=False, capture_output=True, text=True, timeout=100
    )
    assert result.returncode == 0, result.stderr
