"""RecomputeStepper: frames through forward and backward; the bytes it shows are the plans'."""

from __future__ import annotations

import pathlib

import pytest
from PIL import Image

import mxnb as mx
from mxnb.executor import zoo


@pytest.fixture(scope="module")
def stepper():
    exe = zoo.build("lenet").simple_bind(mx.cpu(), grad_req="write", **zoo.input_shapes("lenet", 4))
    return mx.exercises.RecomputeStepper(exe)


def test_one_frame_per_step_of_the_plain_plan(stepper):
    plain = stepper.plans["plain"]
    assert len(stepper) == len(plain.steps)
    assert [frame["plain"].step for frame in stepper.frames()] == list(plain.steps)
    assert set(stepper.plans) >= {"plain", "mirror"}
    assert stepper.plans["mirror"].recompute_steps  # LeNet's tanh / pool layers are mirrored


def test_the_budget_plan_fits_its_budget_with_the_least_recomputation(stepper):
    (label,) = [label for label in stepper.plans if label.startswith("budget")]
    plan = stepper.plans[label]
    assert plan.internal_bytes <= stepper.budget
    assert plan.internal_bytes <= stepper.plans["plain"].internal_bytes


def test_live_bytes_per_frame_equal_the_plans(stepper):
    for frame in stepper.frames():
        for label, plan_frame in frame.items():
            plan = stepper.plans[label]
            assert plan.steps[plan_frame.index] == plan_frame.step
            assert plan_frame.live_bytes == plan.live_bytes()[plan_frame.index]
            assert plan_frame.live_bytes == sum(nbytes for _, nbytes, _ in plan_frame.alive)
    peaks = {label: max(f[label].live_bytes for f in stepper.frames()) for label in stepper.plans}
    assert peaks["plain"] <= stepper.plans["plain"].peak_bytes


def test_recomputed_entries_are_marked_once_as_they_come_back(stepper):
    mirror = stepper.plans["mirror"]
    recomputed = {e.name for e in mirror.internal_entries() if e.recompute_of}
    marked = [name for frame in stepper.frames() for name in frame["mirror"].recomputed]
    assert sorted(marked) == sorted(recomputed)
    forward = sum(1 for step in stepper.plans["plain"].steps if not step.endswith("_backward"))
    assert all(not frame["mirror"].recomputed for frame in stepper.frames()[:forward])
    assert not any(frame["plain"].recomputed for frame in stepper.frames())


def test_stepping_moves_inside_the_walk(stepper):
    stepper.goto(0).step(-3)
    assert stepper.position == 0
    stepper.step(10_000)
    assert stepper.position == len(stepper) - 1
    assert f"step {len(stepper)}/{len(stepper)}" in stepper.to_text()
    stepper.goto(0)


def test_frames_and_gif_export_headless(tmp_path):
    exe = zoo.mlp().simple_bind(mx.cpu(), data=(4, 784), grad_req="write")
    small = mx.exercises.RecomputeStepper(exe)
    paths = small.to_frames(tmp_path / "frames", dpi=40)
    assert len(paths) == len(small)
    assert all(pathlib.Path(p).read_bytes()[:4] == b"\x89PNG" for p in paths)
    gif = small.to_gif(tmp_path / "walk.gif", dpi=30)
    with Image.open(gif) as image:
        assert image.format == "GIF"
        assert image.n_frames == len(small)
