"""Notebook 13: the learner's copy holds the starting code; filled in with the references, all pass.

``tests/notebooks/test_notebooks.py`` runs the learner's copy top to bottom
(every check shows a failing Result, none raises).  Here the same notebook is
filled in with ``mx.exercises.solution_source(name)`` and executed: every
exercise passes.
"""

from __future__ import annotations

import pathlib

import nbformat
import pytest

import mxnb as mx

NOTEBOOK = pathlib.Path(__file__).resolve().parents[2] / "notebooks" / "13_exercises.ipynb"
MARK = "# exercise: "


def exercise_cells(notebook):
    """name -> the code cell that holds the exercise's code (first line ``# exercise: name``)."""
    cells = {}
    for cell in notebook.cells:
        if cell.cell_type == "code" and cell.source.startswith(MARK):
            cells[cell.source.splitlines()[0][len(MARK) :].strip()] = cell
    return cells


def test_the_learners_copy_holds_every_exercise_in_order_with_its_starting_code():
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    cells = exercise_cells(notebook)
    assert list(cells) == mx.exercises.list()
    for name, cell in cells.items():
        exercise = mx.exercises.get(name)
        body = cell.source.split("\n", 1)[1]
        assert body.strip() == exercise.starting_code.strip()
        assert exercise.solution_code.strip() not in NOTEBOOK.read_text()
    checks = [c.source for c in notebook.cells if "mx.exercises.check(" in c.source]
    assert len(checks) == len(cells)


@pytest.mark.slow
@pytest.mark.timeout(240)
def test_the_notebook_filled_in_with_the_references_passes_every_exercise(
    tmp_path, execute_notebook
):
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    for name, cell in exercise_cells(notebook).items():
        cell.source = f"{MARK}{name}\n{mx.exercises.solution_source(name)}"
    notebook.cells.append(
        nbformat.v4.new_code_cell(
            "failing = {n: r.message for n, r in results.items() if not r.passed}\n"
            "assert not failing, failing\n"
            "assert list(results) == mx.exercises.list()\n"
            "print('all', len(results), 'exercises pass')"
        )
    )
    execute_notebook(notebook, tmp_path)
    output = "".join(o.get("text", "") for o in notebook.cells[-1].outputs)
    assert f"all {len(mx.exercises.list())} exercises pass" in output
