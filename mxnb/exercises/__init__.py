"""``mx.exercises``: exercises that grade themselves, races included.

Idea: a race cannot be graded by running the code once.  The step engine
can enumerate every legal schedule of a small program, so a grader can run
the learner's declarations in all of them, compare each result with the
sequential one, and hand back the exact interleaving that breaks it.  Above
the engine the graders use the tool that sees each mistake: the trace
(waits inside a loop), the memory plan (an in-place ReLU, a planner scored
in bytes against mxnb's and MXNet 1.9.1's plans) and the numeric gradient
check (a custom op).  :class:`RecomputeStepper` walks forward and backward
and shows what recomputation keeps alive.

Rule: ``check(name, answer)`` returns a :class:`Result` that unpacks as
``(passed, message, counterexample)``; ``solution(name)`` returns the
reference in the form ``check`` takes, and it always passes.  Chapters:

    catalogue         the exercises by name (Exercise, register)
    schedules         the schedule walk on the step engine (bounded, then sampled)
    grader            why a concurrency answer fails: declarations vs what the ops touched
    result            Result and Counterexample (replay, timeline)
    engine_exercises  the five engine exercises and the debugging one
    model_exercises   NDArray loop, in-place ReLU dependencies, custom-op gradient
    planner           the memory-planner exercise
    stepper           RecomputeStepper

State kept: the catalogue (module level, filled at import).

Example::

    >>> import mxnb as mx
    >>> len(mx.exercises.list()) >= 10
    True
    >>> passed, message, counterexample = mx.exercises.check(
    ...     'engine_parallel_readers', mx.exercises.solution('engine_parallel_readers'))
    >>> passed, counterexample is None
    (True, True)
"""

from __future__ import annotations

import builtins
from typing import Any

from . import catalogue, engine_exercises, model_exercises, planner
from .catalogue import Exercise, UnknownExerciseError
from .result import Counterexample, Result
from .stepper import PlanFrame, RecomputeStepper

engine_exercises.register_debugging()  # the debugging exercise closes the list

__all__ = [
    "Counterexample",
    "Exercise",
    "PlanFrame",
    "RecomputeStepper",
    "Result",
    "UnknownExerciseError",
    "catalogue",
    "check",
    "engine_exercises",
    "get",
    "list",
    "model_exercises",
    "planner",
    "show",
    "solution",
    "solution_source",
]


class ExerciseText(str):
    """The text :func:`show` returns: a plain string that a notebook displays as Markdown."""

    def _repr_markdown_(self) -> str:
        return str(self)


def list() -> builtins.list[str]:
    """The exercise names, in teaching order.

    Example::

        >>> import mxnb as mx
        >>> mx.exercises.list()[0]
        'engine_read_modify_write'
    """
    return catalogue.names()


def get(name: str) -> Exercise:
    """The :class:`Exercise` ``name`` (its text, starting code, solution source and grader)."""
    return catalogue.get(name)


def show(name: str) -> ExerciseText:
    """The task and the starting code of exercise ``name``, as Markdown text."""
    return ExerciseText(catalogue.get(name).show())


def check(name: str, solution: Any) -> Result:
    """Grade ``solution`` for exercise ``name``; return ``Result(passed, message, counterexample)``."""
    exercise = catalogue.get(name)
    if solution is None:
        return Result(
            False,
            f"no answer given: pass the {exercise.entry!r} your cell defines, e.g. "
            f"mx.exercises.check({name!r}, {exercise.entry})",
            None,
            "program_error",
        )
    return exercise.grade(solution)


def solution(name: str) -> Any:
    """The reference solution of exercise ``name``, in the form :func:`check` takes (for teachers)."""
    return catalogue.get(name).solution()


def solution_source(name: str) -> str:
    """The reference solution of exercise ``name`` as source code (what fills the notebook in)."""
    return catalogue.get(name).solution_code
