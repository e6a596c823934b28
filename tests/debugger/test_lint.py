"""mx.engine.lint: each rule fires on its planted bug, names the fix, and stays quiet on correct programs."""

from __future__ import annotations

import json
import pathlib
import subprocess
import sys
import time

import numpy as np
import pytest

import mxnb as mx
from mxnb import operator as op
from mxnb.ndarray.debug import write_error

ROOT = pathlib.Path(__file__).resolve().parents[2]
CPU = mx.cpu()


def sleeper(seconds):
    return lambda rctx: time.sleep(seconds)


def rules(trace):
    return [finding.rule for finding in mx.engine.lint(trace)]


@pytest.mark.timeout(30)
def test_notebook_06_race_an_op_with_no_vars(threaded):
    buffer = np.zeros(10)
    for declared in (False, True):
        with mx.engine.trace() as tr:
            var = threaded.new_var(name="buffer")
            threaded.push_sync(sleeper(0.01), CPU, mutate_vars=[var], name="produce")
            consume = threaded.push_sync(
                lambda rctx: buffer.sum(), CPU, const_vars=[var] if declared else [], name="consume"
            )
            threaded.wait_for_all()
        findings = mx.engine.lint(tr)
        if declared:
            assert findings == []
        else:
            (finding,) = findings
            assert finding.rule == "no_declared_vars" and finding.ops == (consume,)
            assert "const_vars" in finding.message


def test_notebook_06_debug_mode_write_into_a_const_input():
    def scale_in_place(src, env, ret, req, run_ctx):
        src *= 2.0
        op.assign(ret, req, src)

    op.simple_op("scale_buggy_lint").set_function(scale_in_place)
    x = mx.nd.ones((4,))
    with mx.engine.trace() as tr, mx.engine.debug(), pytest.raises(mx.MXNBError):
        mx.nd.scale_buggy_lint(x).asnumpy()
    (finding,) = mx.engine.lint(tr)
    assert finding.rule == "undeclared_write" and "declare" in finding.message
    assert tr.ops()[finding.ops[0]].name == "scale_buggy_lint"
    assert "wrote into its const input" in str(write_error("op", "x"))  # the text the rule reads


def run_pipelines(engine, shared_stats, seconds=0.02):
    """Notebook 06's bug 2, shorter: two pipelines, optionally both writing one 'stats' var."""
    with mx.engine.trace() as tr:
        left, right, stats = (engine.new_var(name=n) for n in ("left", "right", "stats"))
        extra = [stats] if shared_stats else []
        for i in range(4):
            engine.push_sync(sleeper(seconds), CPU, mutate_vars=[left, *extra], name=f"left_{i}")
            engine.push_sync(sleeper(seconds), CPU, mutate_vars=[right, *extra], name=f"right_{i}")
        engine.wait_for_all()
    return tr


@pytest.mark.timeout(30)
def test_notebook_06_pipelines_serialised_through_a_shared_var(threaded):
    (finding,) = mx.engine.lint(run_pipelines(threaded, shared_stats=True))
    assert finding.rule == "shared_var_serialises" and "'stats'" in finding.message
    assert len(finding.ops) == 8
    assert rules(run_pipelines(threaded, shared_stats=False)) == []


@pytest.mark.timeout(30)
def test_one_producer_cycling_through_two_buffers_is_not_two_pipelines(threaded):
    """Notebook 08's record reader: loads into slot 0 and 1 in turn, ordered by the file cursor."""
    with mx.engine.trace() as tr:
        cursor = threaded.new_var(name="cursor")
        slots = [threaded.new_var(name=f"slot{i}") for i in range(2)]
        for i in range(6):
            threaded.push_sync(
                sleeper(0.01), CPU, mutate_vars=[slots[i % 2], cursor], name=f"load batch {i}"
            )
        threaded.wait_for_all()
    assert rules(tr) == []


@pytest.mark.timeout(30)
def test_notebook_06_a_failing_op_and_the_ops_it_skipped(threaded):
    def fail(rctx):
        raise ValueError("log of a non-positive value; clip the input first")

    with mx.engine.trace() as tr:
        x, y = threaded.new_var(name="x"), threaded.new_var(name="y")
        bad = threaded.push_sync(fail, CPU, mutate_vars=[x], name="checked_log")
        skipped = threaded.push_sync(sleeper(0), CPU, [x], [y], name="plus_one")
        with pytest.raises(mx.MXNBError):
            threaded.wait_for_var(y)
        threaded.wait_for_all()
    (finding,) = mx.engine.lint(tr)
    assert finding.rule == "op_failed" and finding.ops == (bad, skipped)
    assert "clip the input" in finding.message


@pytest.mark.timeout(30)
def test_a_wait_inside_a_loop_of_independent_rounds(threaded):
    for inside in (True, False):
        with mx.engine.trace() as tr:
            for i in range(4):
                var = threaded.new_var(name=f"out{i}")
                threaded.push_sync(sleeper(0.01), CPU, mutate_vars=[var], name="product")
                if inside:
                    threaded.wait_for_var(var)
            threaded.wait_for_all()
        assert rules(tr) == (["wait_in_loop"] if inside else [])


@pytest.mark.timeout(30)
def test_a_wait_per_round_of_a_dependent_loop_is_fine(threaded):
    """Each round reads the last one's result (a training loop): nothing could overlap."""
    with mx.engine.trace() as tr:
        weight = threaded.new_var(name="weight")
        for _ in range(4):
            threaded.push_sync(sleeper(0.01), CPU, mutate_vars=[weight], name="update")
            threaded.wait_for_var(weight)
    assert rules(tr) == []


@pytest.mark.timeout(60)
def test_ops_too_small_to_pay_for_their_push(threaded):
    with mx.engine.trace() as tr:
        vs = [threaded.new_var(name=f"v{i}") for i in range(8)]
        for i in range(1500):
            threaded.push_sync(lambda rctx: None, CPU, mutate_vars=[vs[i % 8]], name="tiny")
        threaded.wait_for_all()
    assert "tiny_ops" in rules(tr)
    with mx.engine.trace() as tr:  # the same work as 8 ops
        for var in vs:
            threaded.push_sync(lambda rctx: [None] * 200, CPU, mutate_vars=[var], name="batched")
        threaded.wait_for_all()
    assert rules(tr) == []


@pytest.mark.timeout(60)
def test_the_pusher_far_ahead_of_the_workers(threaded):
    with mx.engine.trace() as tr:
        var = threaded.new_var(name="state")
        for _ in range(1200):  # one chain: the pusher cannot help, every op stays pending
            threaded.push_sync(sleeper(0.0002), CPU, mutate_vars=[var], name="step")
        threaded.wait_for_all()
    found = [f for f in mx.engine.lint(tr) if f.rule == "pusher_ahead"]
    assert found and len(found[0].ops) >= 512 and "wait" in found[0].message


# -- the notebooks' own traces -------------------------------------------------------------

#: Traces the notebooks record on purpose to show a mistake: (notebook, trace index) -> rules.
PLANTED = {
    ("06", 0): ["no_declared_vars"],  # bug 1: consume declares no var
    ("06", 2): ["shared_var_serialises"],  # bug 2: the shared 'stats' var
    ("06", 4): ["op_failed"],  # bug 3: checked_log fails
    ("02", 1): ["wait_in_loop"],  # "waiting inside the loop", shown against waiting once
    ("12", 0): ["wait_in_loop"],  # the slow program the debugger chapter fixes
}
TRACED = ["01", "02", "03", "04", "05", "06", "07", "08", "09", "12"]


@pytest.mark.slow
@pytest.mark.timeout(180)
@pytest.mark.parametrize("number", TRACED)
def test_every_notebook_trace_lints_as_planted(number):
    """Run the notebook's source, lint each trace it records: findings only where a bug is planted."""
    (source,) = (ROOT / "notebooks" / "src").glob(f"{number}_*.py")
    result = subprocess.run(
        [sys.executable, str(ROOT / "tests" / "debugger" / "notebook_traces.py"), str(source)],
        check=False,
        capture_output=True,
        text=True,
        timeout=170,
        cwd=ROOT,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    report = json.loads(result.stdout.strip().splitlines()[-1])
    assert report, f"notebook {number} recorded no trace"
    expected = [PLANTED.get((number, index), []) for index in range(len(report))]
    assert report == expected
