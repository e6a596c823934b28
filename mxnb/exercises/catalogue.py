"""The catalogue: every exercise by name, with its task, starting code, reference and grader.

Idea: an exercise is data — a title, the task in a paragraph, the code a
learner starts from, the reference solution as *source text*, and a grader.
Keeping the solution as text lets the notebook be filled in with it for the
test suite (``tests/exercises/test_notebook.py``) while the learner's copy
ships with the starting code only; :func:`solution` runs the text and hands
back the object :func:`check` takes.

Rule: names are unique and listed in teaching order (engine, NDArray,
operators, custom ops, memory planning, debugging); starting code and
solution define the same top-level name (``entry``).

State kept:
    _EXERCISES   name -> Exercise, in registration order

Example::

    >>> from mxnb.exercises.catalogue import Exercise, register
    >>> ex = Exercise('demo_noop', 'Nothing', 'Return 1.', 'def f():\\n    return 0\\n',
    ...               'def f():\\n    return 1\\n', 'f', lambda f: None)
    >>> ex.solution()()
    1
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..base import MXNBError

__all__ = ["Exercise", "UnknownExerciseError", "get", "names", "register"]


class UnknownExerciseError(MXNBError, KeyError):
    """No exercise has the name asked for."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


@dataclass(frozen=True)
class Exercise:
    """One exercise: its text, starting code, reference solution (source) and grader."""

    name: str
    title: str
    text: str  # the task, a paragraph or two of Markdown
    starting_code: str  # what the learner's cell holds
    solution_code: str  # the reference solution (same top-level name as the starting code)
    entry: str  # the name both define: what check() takes
    grade: Callable[[Any], Any]  # answer -> Result
    chapter: str = ""

    def _run(self, source: str) -> Any:
        import mxnb

        namespace: dict[str, Any] = {"mx": mxnb, "np": np, "__name__": f"exercise_{self.name}"}
        exec(compile(source, f"<exercise {self.name}>", "exec"), namespace)  # noqa: S102 - our own text
        return namespace[self.entry]

    def solution(self) -> Any:
        """The reference solution, in the form :func:`mxnb.exercises.check` takes."""
        return self._run(self.solution_code)

    def starting(self) -> Any:
        """The starting code's object (unsolved: check rejects it)."""
        return self._run(self.starting_code)

    def show(self) -> str:
        """The task and the starting code as one Markdown text."""
        return f"### {self.title}\n\n{self.text}\n\n```python\n{self.starting_code}```\n"


_EXERCISES: dict[str, Exercise] = {}


def register(exercise: Exercise) -> Exercise:
    """Add ``exercise`` to the catalogue (a name given twice is an error)."""
    if exercise.name in _EXERCISES:
        raise MXNBError(f"exercise {exercise.name!r} is registered twice; choose another name")
    _EXERCISES[exercise.name] = exercise
    return exercise


def names() -> list[str]:
    """The exercise names in teaching order."""
    return list(_EXERCISES)


def get(name: str) -> Exercise:
    """The exercise ``name``; an error listing the names when there is none."""
    try:
        return _EXERCISES[name]
    except (KeyError, TypeError):
        raise UnknownExerciseError(
            f"no exercise is named {name!r}; mx.exercises.list() gives the names: "
            + ", ".join(_EXERCISES)
        ) from None
