"""The engine exercises: each reference passes; plausible wrong answers fail for the stated reason.

Every wrong answer whose result some schedule breaks carries a counterexample;
replayed on a fresh step engine it gives the same wrong result again.
"""

from __future__ import annotations

import pathlib

import pytest

import mxnb as mx

ENGINE = [
    "engine_read_modify_write",
    "engine_parallel_readers",
    "engine_reduction",
    "engine_async_callback",
    "engine_delete_after_readers",
    "debugging_find_the_race",
]


# -- wrong answers: (exercise, program, reason, has a counterexample) -------------------------
def rmw_add_one_const(eng, ctx, v, ops):
    eng.push_sync(ops.double, ctx, mutate_vars=[v.x], name="double")
    eng.push_sync(ops.add_one, ctx, const_vars=[v.x], name="add_one")
    eng.push_sync(ops.report, ctx, const_vars=[v.x], mutate_vars=[v.out], name="report")


def rmw_add_one_missing_mutate(eng, ctx, v, ops):
    eng.push_sync(ops.double, ctx, mutate_vars=[v.x], name="double")
    eng.push_sync(ops.add_one, ctx, name="add_one")
    eng.push_sync(ops.report, ctx, const_vars=[v.x], mutate_vars=[v.out], name="report")


def rmw_report_reads_undeclared(eng, ctx, v, ops):
    eng.push_sync(ops.double, ctx, mutate_vars=[v.x], name="double")
    eng.push_sync(ops.add_one, ctx, mutate_vars=[v.x], name="add_one")
    eng.push_sync(ops.report, ctx, mutate_vars=[v.out], name="report")


def rmw_forgets_report(eng, ctx, v, ops):
    eng.push_sync(ops.double, ctx, mutate_vars=[v.x], name="double")
    eng.push_sync(ops.add_one, ctx, mutate_vars=[v.x], name="add_one")


def readers_both_mutate(eng, ctx, v, ops):
    eng.push_sync(ops.fill, ctx, mutate_vars=[v.x], name="fill")
    eng.push_sync(ops.square, ctx, mutate_vars=[v.x, v.a], name="square")
    eng.push_sync(ops.negate, ctx, mutate_vars=[v.x, v.b], name="negate")
    eng.push_sync(ops.combine, ctx, const_vars=[v.a, v.b], mutate_vars=[v.out], name="combine")


def readers_square_forgets_x(eng, ctx, v, ops):
    eng.push_sync(ops.fill, ctx, mutate_vars=[v.x], name="fill")
    eng.push_sync(ops.square, ctx, mutate_vars=[v.a], name="square")
    eng.push_sync(ops.negate, ctx, const_vars=[v.x], mutate_vars=[v.b], name="negate")
    eng.push_sync(ops.combine, ctx, const_vars=[v.a, v.b], mutate_vars=[v.out], name="combine")


def readers_combine_forgets_b(eng, ctx, v, ops):
    eng.push_sync(ops.fill, ctx, mutate_vars=[v.x], name="fill")
    eng.push_sync(ops.square, ctx, const_vars=[v.x], mutate_vars=[v.a], name="square")
    eng.push_sync(ops.negate, ctx, const_vars=[v.x], mutate_vars=[v.b], name="negate")
    eng.push_sync(ops.combine, ctx, const_vars=[v.a], mutate_vars=[v.out], name="combine")


def _reduction(acc_in_add="mutate", datum=True, loads_touch_acc=False, report_reads_acc=True):
    def program(eng, ctx, v, ops):
        data = [v.d1, v.d2, v.d3]
        for k in (1, 2, 3):
            extra = [v.acc] if loads_touch_acc else []
            load = getattr(ops, f"load_{k}")
            eng.push_sync(load, ctx, mutate_vars=[data[k - 1], *extra], name=f"load_{k}")
        eng.push_sync(ops.zero, ctx, mutate_vars=[v.acc], name="zero")
        for k in (1, 2, 3):
            const = [data[k - 1]] if datum else []
            mutate = []
            if acc_in_add == "mutate":
                mutate.append(v.acc)
            else:
                const.append(v.acc)
            add = getattr(ops, f"add_{k}")
            eng.push_sync(add, ctx, const_vars=const, mutate_vars=mutate, name=f"add_{k}")
        const = [v.acc] if report_reads_acc else []
        eng.push_sync(ops.report, ctx, const_vars=const, mutate_vars=[v.out], name="report")

    return program


def _async(callback="on_complete", dst="mutate", sync=False):
    def program(eng, ctx, v, ops):
        def copy(run_ctx, on_complete=None):
            if callback == "on_complete":
                ops.device.submit(ops.copy_job, callback=on_complete)
            elif callback == "early":
                ops.device.submit(ops.copy_job)
                if on_complete is not None:
                    on_complete()
            else:  # never
                ops.device.submit(ops.copy_job)

        const, mutate = ([v.src], [v.dst]) if dst == "mutate" else ([v.src, v.dst], [])
        eng.push_sync(ops.fill, ctx, mutate_vars=[v.src], name="fill")
        push = eng.push_sync if sync else eng.push_async
        push(copy, ctx, const_vars=const, mutate_vars=mutate, name="copy")
        eng.push_sync(ops.consume, ctx, const_vars=[v.dst], mutate_vars=[v.out], name="consume")

    return program


def _delete(how):
    def program(eng, ctx, v, ops):
        eng.push_sync(ops.fill, ctx, mutate_vars=[v.x], name="fill")
        eng.push_sync(ops.reader_1, ctx, const_vars=[v.x], mutate_vars=[v.a], name="reader_1")
        eng.push_sync(ops.reader_2, ctx, const_vars=[v.x], mutate_vars=[v.b], name="reader_2")
        if how == "now":
            ops.free(None)
        elif how == "const":
            eng.push_sync(ops.free, ctx, const_vars=[v.x], name="free")
        elif how == "undeclared":
            eng.push_sync(ops.free, ctx, name="free")
        elif how == "delete_then_free":
            eng.push_delete(v.x, ctx)
            ops.free(None)

    return program


def _race(normalize="const", forward_batch="const"):
    def program(eng, ctx, v, ops):
        norm = ([v.batch], []) if normalize == "const" else ([], [])
        fwd = [v.batch] if forward_batch == "const" else []
        fwd_mutate = [v.batch] if forward_batch == "mutate" else []
        eng.push_sync(ops.load, ctx, mutate_vars=[v.batch], name="load")
        eng.push_sync(ops.normalize, ctx, const_vars=norm[0], mutate_vars=norm[1], name="normalize")
        eng.push_sync(ops.forward, ctx, fwd, [v.loss, *fwd_mutate], name="forward")
        eng.push_sync(ops.stats, ctx, const_vars=[v.batch], mutate_vars=[v.mean], name="stats")
        eng.push_sync(ops.log, ctx, const_vars=[v.loss], mutate_vars=[v.logged], name="log")

    return program


WRONG = [
    ("engine_read_modify_write", rmw_add_one_const, "const_for_write", True),
    ("engine_read_modify_write", rmw_add_one_missing_mutate, "undeclared_write", True),
    ("engine_read_modify_write", rmw_report_reads_undeclared, "undeclared_read", True),
    ("engine_read_modify_write", rmw_forgets_report, "wrong_result", True),
    ("engine_parallel_readers", readers_both_mutate, "serialized", False),
    ("engine_parallel_readers", readers_square_forgets_x, "undeclared_read", True),
    ("engine_parallel_readers", readers_combine_forgets_b, "undeclared_read", True),
    ("engine_reduction", _reduction(acc_in_add="const"), "const_for_write", True),
    ("engine_reduction", _reduction(datum=False), "undeclared_read", True),
    ("engine_reduction", _reduction(loads_touch_acc=True), "serialized", False),
    ("engine_reduction", _reduction(report_reads_acc=False), "undeclared_read", True),
    ("engine_async_callback", _async(callback="early"), "race", True),
    ("engine_async_callback", _async(callback="early", sync=True), "race", True),
    ("engine_async_callback", _async(dst="const"), "const_for_write", True),
    ("engine_async_callback", _async(callback="never"), "deadlock", True),
    ("engine_delete_after_readers", _delete("now"), "outside_engine", True),
    ("engine_delete_after_readers", _delete("const"), "const_for_write", True),
    ("engine_delete_after_readers", _delete("undeclared"), "undeclared_write", True),
    ("engine_delete_after_readers", _delete("delete_then_free"), "outside_engine", True),
    ("debugging_find_the_race", _race(), "const_for_write", True),
    ("debugging_find_the_race", _race(forward_batch="mutate"), "const_for_write", False),
    ("debugging_find_the_race", _race(normalize="none"), "undeclared_write", True),
]


@pytest.mark.parametrize("name", ENGINE)
def test_the_reference_solution_passes(name):
    passed, message, counterexample = mx.exercises.check(name, mx.exercises.solution(name))
    assert passed, message
    assert counterexample is None
    assert "legal schedule" in message


@pytest.mark.parametrize("name", ENGINE)
def test_the_starting_code_fails(name):
    result = mx.exercises.check(name, mx.exercises.get(name).starting())
    assert not result.passed and result.reason


def test_every_engine_exercise_has_three_wrong_answers():
    counts = {name: sum(1 for ex, *_ in WRONG if ex == name) for name in ENGINE}
    assert min(counts.values()) >= 3, counts


@pytest.mark.parametrize(
    ("name", "program", "reason", "has_counterexample"),
    WRONG,
    ids=[f"{name}-{index}" for index, (name, *_) in enumerate(WRONG)],
)
def test_a_wrong_answer_is_rejected_for_its_reason(name, program, reason, has_counterexample):
    result = mx.exercises.check(name, program)
    assert not result.passed
    assert result.reason == reason, result.message
    assert (result.counterexample is not None) == has_counterexample, result.message
    if has_counterexample:
        example = result.counterexample
        assert example.got != example.expected
        replayed = example.replay()  # a fresh step engine, the same order
        assert replayed == example.got
        assert replayed != example.expected


def test_the_counterexample_names_the_racing_ops_and_the_missing_var():
    result = mx.exercises.check("engine_read_modify_write", rmw_add_one_const)
    example = result.counterexample
    assert example.schedule == ("double", "report", "add_one")
    assert example.racing == ("add_one", "report")
    assert example.var == "x"
    assert "mutate var 'x' missing" in example.missing
    assert example.expected["out"] == 7.0 and example.got["out"] == 6.0
    assert "'report' ran before 'add_one'" in result.message


def test_an_early_on_complete_races_though_every_var_is_declared():
    result = mx.exercises.check("engine_async_callback", _async(callback="early"))
    example = result.counterexample
    assert example.racing == ("copy", "consume") and example.var == "dst"
    assert "completed before its work" in example.missing
    assert example.schedule.index("consume") < example.schedule.index("copy:device")


def test_the_counterexample_draws_a_timeline_with_the_racing_ops_outlined(tmp_path):
    result = mx.exercises.check("engine_read_modify_write", rmw_add_one_const)
    figure = result.counterexample.figure()
    red = [
        p
        for p in figure.axes[0].patches
        if p.get_edgecolor()[:3] == (214 / 255, 39 / 255, 40 / 255)
    ]
    assert len(red) == 2  # add_one and report
    assert "missing" in figure.axes[0].get_title(loc="left")
    path = result.counterexample.to_png(tmp_path / "race.png")
    assert pathlib.Path(path).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_a_result_renders_itself_in_a_notebook():
    bad = mx.exercises.check("engine_read_modify_write", rmw_add_one_const)
    assert bad._repr_markdown_().startswith("**✗ not yet** (const_for_write)")
    assert bad._repr_png_().startswith(b"\x89PNG")
    assert "data:image/png;base64," in bad._repr_html_()
    good = mx.exercises.check(
        "engine_read_modify_write", mx.exercises.solution("engine_read_modify_write")
    )
    assert good._repr_png_() is None
    assert "passed" in good._repr_html_() and "<img" not in good._repr_html_()
