"""The memory-planner exercise: the plan check, the score in bytes, and MXNet 1.9.1's figures."""

from __future__ import annotations

import json
import pathlib

import pytest

import mxnb as mx
from mxnb.exercises.planner import (
    MXNET_BYTES,
    NETWORKS,
    Entry,
    check_plan,
    mxnb_entries,
    plan_bytes,
)

ROOT = pathlib.Path(__file__).resolve().parents[2]


def plan_one_block(entries):
    """Everything in storage 0: the smallest number, and illegal."""
    return {entry.name: 0 for entry in entries}


def plan_frees_too_early(entries):
    """Co-share, but a block is released at its entry's last step *before* that step's outputs
    are placed: an output then shares storage with an input it is still reading."""
    storage, size, free = {}, [], []
    last = max(e.last_step for e in entries)
    for step in range(last + 1):
        for e in entries:
            if e.last_step == step and e.name in storage and e.first_step < step:
                free.append(storage[e.name])
        for e in (e for e in entries if e.first_step == step):
            if free:
                block = free.pop()
                size[block] = max(size[block], e.nbytes)
            else:
                block = len(size)
                size.append(e.nbytes)
            storage[e.name] = block
    return storage


def plan_inplace_everything(entries):
    """In place whenever a candidate exists, without asking whether the source is still read."""
    storage = {}
    for index, e in enumerate(entries):
        source = e.inplace_candidates[0] if e.inplace_candidates else None
        storage[e.name] = storage[source] if source in storage else index + 10_000
    return storage


def plan_naive(entries):
    return {entry.name: index for index, entry in enumerate(entries)}


def plan_never_reuses_after_backward(entries):
    """In-place only (no co-share): legal, too many bytes."""
    by_name = {e.name: e for e in entries}
    storage, taken = {}, set()
    for index, e in enumerate(entries):
        source = next(
            (c for c in e.inplace_candidates
             if c in storage and c not in taken and by_name[c].last_step == e.first_step
             and by_name[c].nbytes == e.nbytes),
            None,
        )  # fmt: skip
        if source is not None:
            taken.add(source)
            storage[e.name] = storage[source]
        else:
            storage[e.name] = index
    return storage


WRONG = [
    (plan_one_block, "overlap"),
    (plan_frees_too_early, "overlap"),
    (plan_inplace_everything, "overlap"),
    (plan_naive, "too_many_bytes"),
    (plan_never_reuses_after_backward, "too_many_bytes"),
]


def test_the_reference_planner_passes_within_ten_percent_on_lenet_and_resnet18():
    result = mx.exercises.check("memory_planner", mx.exercises.solution("memory_planner"))
    assert result.passed, result.message
    figures = result.details["figures"]
    assert set(figures) == {"lenet", "resnet18"}
    for mine, ours, theirs in figures.values():
        assert mine <= 1.10 * ours
        assert theirs > 0


@pytest.mark.parametrize(("planner", "reason"), WRONG, ids=[p.__name__ for p, _ in WRONG])
def test_a_wrong_planner_is_rejected_for_its_reason(planner, reason):
    result = mx.exercises.check("memory_planner", planner)
    assert not result.passed
    assert result.reason == reason, result.message


def test_mxnet_figures_are_the_measured_ones():
    """The exercise's MXNet 1.9.1 bytes are those in benchmarks/mxnet_reference.json."""
    runs = json.loads((ROOT / "benchmarks" / "mxnet_reference.json").read_text())["runs"]
    for name, batch in NETWORKS.items():
        (run,) = [
            r for r in runs if (r["network"], r["batch"], r["mode"]) == (name, batch, "training")
        ]
        assert run["bytes"] == MXNET_BYTES[name]


def test_the_plan_check_allows_an_inplace_pair_and_refuses_an_overlap():
    a = Entry("a", 64, 0, 2)
    b = Entry("b", 64, 2, 4, inplace_candidates=("a",))
    c = Entry("c", 64, 2, 3)
    assert check_plan([a, b], {"a": 0, "b": 0}) == ""
    assert "both alive at step 2" in check_plan([a, c], {"a": 0, "c": 0})
    assert check_plan([a, c], {"a": 0, "c": 1}) == ""
    assert plan_bytes([a, b, c], {"a": 0, "b": 0, "c": 1}) == 128


def test_the_entries_are_the_plans_internal_entries():
    entries = mxnb_entries("lenet")
    plan = mx.executor.plan_memory(
        mx.executor.zoo.build("lenet"), mx.executor.zoo.input_shapes("lenet", 32), grad_req="write"
    )
    assert sum(e.nbytes for e in entries) == plan.naive_internal_bytes
    assert any(e.inplace_candidates for e in entries)
