"""Every notebook in ``notebooks/`` runs top to bottom in a fresh kernel.

A failing cell fails the suite.  Notebooks are committed with their outputs
cleared (the suite executes them), which is checked here too.
"""

from __future__ import annotations

import pathlib
import subprocess
import sys

import nbformat
import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))


def test_there_are_notebooks():
    assert NOTEBOOKS, "notebooks/ holds no .ipynb files"


def test_notebooks_match_their_text_sources():
    """Each ``.ipynb`` is generated from ``notebooks/src/*.py``; review the text, trust the notebook."""
    result = subprocess.run(
        [sys.executable, str(ROOT / "notebooks" / "_build.py"), "--check"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[path.name for path in NOTEBOOKS])
def test_notebook_is_committed_without_outputs(path):
    notebook = nbformat.read(path, as_version=4)
    with_outputs = [
        index
        for index, cell in enumerate(notebook.cells)
        if cell.cell_type == "code" and (cell.get("outputs") or cell.get("execution_count"))
    ]
    assert not with_outputs, f"{path.name}: cells {with_outputs} have outputs; clear them"


@pytest.mark.slow
@pytest.mark.timeout(240)
@pytest.mark.parametrize("path", NOTEBOOKS, ids=[path.name for path in NOTEBOOKS])
def test_notebook_runs_top_to_bottom(path, tmp_path, execute_notebook):
    execute_notebook(nbformat.read(path, as_version=4), tmp_path)
