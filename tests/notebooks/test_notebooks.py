"""Every notebook in ``notebooks/`` runs top to bottom in a fresh kernel.

A failing cell fails the suite.  Notebooks are committed with their outputs
cleared (the suite executes them), which is checked here too.
"""

from __future__ import annotations

import pathlib
import re
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
    """It runs, and every matplotlib figure it shows is an image (``<Figure size ...>`` text
    is what a bare ``Figure`` displays as when pyplot's inline backend is not active)."""
    notebook = execute_notebook(nbformat.read(path, as_version=4), tmp_path)
    as_text = figure_texts(notebook)
    assert not as_text, f"{path.name}: figures shown as text, not images: {as_text}"
    images = sum(image_outputs(cell) for cell in notebook.cells if cell.cell_type == "code")
    assert images >= LEAST_IMAGES.get(path.name, 0), f"{path.name}: {images} images"


# the pictures a notebook must show (at least), besides its widgets
LEAST_IMAGES = {"10_distributed_kvstore.ipynb": 3, "11_partial_shapes_and_rnn.ipynb": 1}
FIGURE_TEXT = re.compile(r"<(matplotlib\.figure\.)?Figure( size \d+x\d+ with \d+ Axes)?")


def image_outputs(cell) -> int:
    """How many of ``cell``'s outputs carry an image (PNG or SVG)."""
    kinds = ("image/png", "image/svg+xml")
    return sum(
        1 for output in cell.get("outputs", []) if any(k in output.get("data", {}) for k in kinds)
    )


def figure_texts(notebook) -> list[str]:
    """The outputs that show a matplotlib figure as text, with no image beside it."""
    found = []
    for index, cell in enumerate(notebook.cells):
        for output in cell.get("outputs", []) if cell.cell_type == "code" else []:
            data = output.get("data", {})
            text = data.get("text/plain", "") if data else output.get("text", "")
            if FIGURE_TEXT.search(text) and "image/png" not in data and "image/svg+xml" not in data:
                found.append(f"cell {index}: {text[:80]}")
    return found


def test_a_bare_figure_is_found_and_a_figure_image_is_not():
    """The check above sees a bare Figure's text, and FigureImage's PNG passes it."""
    from matplotlib.figure import Figure

    from mxnb.widgets import FigureImage

    bare = nbformat.v4.new_output(
        "display_data", {"text/plain": "<Figure size 1000x280 with 1 Axes>"}
    )
    shown = nbformat.v4.new_output(
        "display_data", FigureImage(Figure(figsize=(2, 1)))._repr_mimebundle_()
    )
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(outputs=[bare, shown])])
    assert figure_texts(notebook) == ["cell 0: <Figure size 1000x280 with 1 Axes>"]
    assert image_outputs(notebook.cells[0]) == 1
