"""Fixtures shared by the whole suite: virtual GPUs, traced memory peaks, node:test runs."""

from __future__ import annotations

import os
import pathlib
import pickle
import re
import signal
import subprocess
import tracemalloc
from collections.abc import Callable
from typing import Any

import pytest

import mxnb as mx

if os.environ.get("MXNB_TEST_STRICT_CUPY") == "1":
    # every context's kernels through cupy's names and signatures (numpy underneath):
    # tests/gpu/test_cupy_strict.py runs the operator suite so, to catch numpy-only calls
    from mxnb.testing.cupy_strict import CupyStrict

    _STRICT = CupyStrict()
    mx.context.array_module = lambda device_type: _STRICT  # type: ignore[assignment]


@pytest.fixture
def ctrl_c_raises():
    """Ctrl-C (SIGINT, ``_thread.interrupt_main``) raises KeyboardInterrupt during the test.

    A shell starts a background job with SIGINT ignored, and Python then keeps
    it ignored: the tests that press Ctrl-C would wait for an interrupt that
    never comes.  So they install the handler they rely on (Python's default,
    with mxnb's postponing handler over it, as ``import mxnb`` does in a
    foreground run) and restore the old one after.
    """
    previous = signal.getsignal(signal.SIGINT)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    mx.engine.interrupts.install()
    yield
    signal.signal(signal.SIGINT, previous)


@pytest.fixture
def two_virtual_gpus():
    """Two virtual GPUs (``[gpu(0), gpu(1)]``) for the test; the previous count is restored after it."""
    before = mx.context.virtual_gpus()
    mx.context.set_virtual_gpus(2)
    yield [mx.gpu(0), mx.gpu(1)]
    mx.nd.waitall()
    mx.context.set_virtual_gpus(before)


def _traced_peak(call: Callable[[], Any]) -> tuple[Any, int]:
    """Run ``call()``; return its result and the peak of traced memory (bytes) while it ran.

    The peak counts what the result still holds (it is measured before the
    result is handed back); exceptions propagate.
    """
    was_tracing = tracemalloc.is_tracing()
    if not was_tracing:
        tracemalloc.start()
    tracemalloc.reset_peak()
    base, _ = tracemalloc.get_traced_memory()
    try:
        result = call()
        _, peak = tracemalloc.get_traced_memory()
        return result, peak - base
    finally:
        if not was_tracing:
            tracemalloc.stop()


class _PickleBomb:
    """Unpickling this runs ``touch <marker>``: a file appearing means a reader unpickled."""

    def __init__(self, marker: str) -> None:
        self.marker = marker

    def __reduce__(self):
        return (os.system, ("touch " + self.marker,))


@pytest.fixture
def pickle_bomb(tmp_path) -> tuple[bytes, Any]:
    """``(payload, marker path)``: a pickle that creates ``marker`` if anything ever loads it."""
    marker = tmp_path / "unpickled"
    return pickle.dumps(_PickleBomb(str(marker))), marker


@pytest.fixture
def traced_peak() -> Callable[[Callable[[], Any]], tuple[Any, int]]:
    """``traced_peak(call) -> (result, peak bytes)``: memory bounds without timing anything."""
    return _traced_peak


def _run_node_tests(script: pathlib.Path, argument: pathlib.Path, timeout: float) -> dict:
    """Run ``node --test-reporter=tap SCRIPT ARGUMENT`` in the script's folder.

    Fails the calling test unless node exits 0 with every test passed and none
    failed, skipped or left to do; returns the summary counts (``{"tests": "12", ...}``).
    """
    command = ["node", "--test-reporter=tap", script.name, str(argument)]
    try:
        result = subprocess.run(
            command, cwd=script.parent, capture_output=True, text=True, timeout=timeout, check=False
        )
    except subprocess.TimeoutExpired as exc:
        pytest.fail(f"node did not finish in {exc.timeout} s\n{exc.stdout}\n{exc.stderr}")
    output = f"node exited with {result.returncode}\n{result.stdout}\n{result.stderr}"
    assert result.returncode == 0, output
    summary = r"^# (tests|pass|fail|skipped|todo|cancelled) (\d+)$"
    counts = dict(re.findall(summary, result.stdout, re.MULTILINE))
    assert int(counts.get("tests", 0)) > 0, output
    assert counts["pass"] == counts["tests"], output
    assert (counts["fail"], counts["skipped"], counts["todo"]) == ("0", "0", "0"), output
    counts["output"] = output
    return counts


@pytest.fixture(name="node_tests")
def node_tests_fixture():
    """``node_tests(script, argument, timeout)``: run a node:test file; all must pass."""
    return _run_node_tests


def _execute_notebook(notebook: Any, folder: pathlib.Path) -> Any:
    """Run ``notebook`` (an nbformat node) top to bottom in a fresh kernel, in ``folder``.

    Pictures go through matplotlib's Agg backend; the environment is restored
    after.  Returns the executed notebook; a failing cell raises.
    """
    from nbclient import NotebookClient

    env_backup = dict(os.environ)
    os.environ["MPLBACKEND"] = "Agg"
    try:
        client = NotebookClient(
            notebook,
            timeout=180,
            kernel_name="python3",
            resources={"metadata": {"path": str(folder)}},
        )
        client.execute()
    finally:
        os.environ.clear()
        os.environ.update(env_backup)
    return notebook


@pytest.fixture
def execute_notebook() -> Callable[[Any, pathlib.Path], Any]:
    """``execute_notebook(notebook, folder)``: run a notebook as the notebook tests do."""
    return _execute_notebook
