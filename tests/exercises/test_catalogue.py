"""mx.exercises: the catalogue, show, solution and the errors a learner can act on."""

from __future__ import annotations

import pytest

import mxnb as mx

ISSUE_EXERCISES = {
    "engine_read_modify_write",
    "engine_parallel_readers",
    "engine_reduction",
    "engine_async_callback",
    "engine_delete_after_readers",
    "ndarray_loop_without_wait",
    "operator_inplace_relu",
    "customop_gradient",
    "memory_planner",
    "debugging_find_the_race",
}


def test_the_list_holds_the_ten_exercises_in_teaching_order():
    names = mx.exercises.list()
    assert set(names) == ISSUE_EXERCISES
    assert names[0].startswith("engine_") and names[-1] == "debugging_find_the_race"


@pytest.mark.parametrize("name", sorted(ISSUE_EXERCISES))
def test_show_gives_the_task_and_the_starting_code(name):
    text = mx.exercises.show(name)
    exercise = mx.exercises.get(name)
    assert isinstance(text, str)
    assert exercise.title in text and exercise.starting_code in text
    assert text._repr_markdown_() == text
    assert exercise.solution_code not in text  # the learner's copy has no solution


def test_solution_source_defines_what_check_takes():
    for name in mx.exercises.list():
        exercise = mx.exercises.get(name)
        assert f"{exercise.entry}" in mx.exercises.solution_source(name)
        assert callable(mx.exercises.solution(name))


def test_an_unknown_name_lists_the_names():
    with pytest.raises(mx.MXNBError, match="engine_read_modify_write") as info:
        mx.exercises.check("no_such_exercise", None)
    assert isinstance(info.value, KeyError)


def test_no_answer_is_a_failing_result_not_an_exception():
    result = mx.exercises.check("engine_reduction", None)
    assert not result.passed and result.reason == "program_error"
    assert "mx.exercises.check('engine_reduction', program)" in result.message
