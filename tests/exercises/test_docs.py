"""The examples in the exercises modules' docstrings run and print what they say."""

from __future__ import annotations

import doctest
import importlib
import pathlib
import re

import pytest

MODULES = [
    "mxnb.exercises",
    "mxnb.exercises.catalogue",
    "mxnb.exercises.engine_exercises",
    "mxnb.exercises.grader",
    "mxnb.exercises.model_exercises",
    "mxnb.exercises.planner",
    "mxnb.exercises.result",
    "mxnb.exercises.schedules",
    "mxnb.exercises.stepper",
    "mxnb.exercises.store",
]


@pytest.mark.timeout(60)
@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples_run(name):
    module = importlib.import_module(name)
    failures, tried = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert tried > 0 and failures == 0


def test_nothing_below_imports_the_exercises():
    """exercises sits on top of engine, executor and widgets: no module there imports it."""
    root = pathlib.Path(importlib.import_module("mxnb").__file__).parent
    importing = re.compile(
        r"from\s+(\.+|mxnb\.)exercises|mxnb\.exercises|from\s+\.+\s+import\s+exercises"
    )
    offenders = [
        str(path.relative_to(root))
        for path in root.rglob("*.py")
        if "exercises" not in path.relative_to(root).parts
        and path != root / "__init__.py"
        and importing.search(path.read_text(encoding="utf-8"))
    ]
    assert not offenders
