"""What tests in several folders share: running a node:test file and reading its TAP summary."""

from __future__ import annotations

import pathlib
import re
import subprocess

import pytest


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
