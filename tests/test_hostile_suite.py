"""The hostile-case suite of ``tools/hostile`` (issue 37): every fast case passes.

Each case runs in its own process (the bombs under a memory limit, every one
under a time limit, a hang counting as a failure); ``tools/hostile/run.py``
is the runner and ``docs/hardening.md`` lists the cases with their results
before and after issue 37.  The cases that start Ray (marked slow there) are
run by ``tests/kvstore/test_dist.py``'s own tests of the same behaviour.
"""

from __future__ import annotations

import importlib.util
import os
import sys

import pytest

RUNNER = os.path.join(os.path.dirname(os.path.dirname(__file__)), "tools", "hostile", "run.py")


def _runner():
    spec = importlib.util.spec_from_file_location("hostile_run", RUNNER)
    module = importlib.util.module_from_spec(spec)
    sys.modules["hostile_run"] = module  # its dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


@pytest.mark.timeout(300)
def test_every_fast_hostile_case_passes():
    run = _runner()
    names = [name for name, spec in run._cases.CASES.items() if not spec.slow]
    assert len(names) >= 70  # the suite is there, not an empty list
    results = run.run_all(names, workers=2)
    failed = [f"{r.name} ({r.kind}): {r.detail}" for r in results if not r.passed]
    assert not failed, "\n".join(failed)
