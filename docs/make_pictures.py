"""Render the main view of every notebook to a PNG for the README: ``docs/img/NN_name.png``.

Idea: the README shows what each notebook shows.  Each notebook's text form
(``notebooks/src/NN_name.py``, see ``notebooks/_build.py``) runs top to bottom
as a plain script in a fresh interpreter; the view named in :data:`PICTURES` is
then rebuilt from the script's variables and written with the library's
headless ``to_png`` — the same object the notebook displays.

Rule: one picture per notebook, made by the notebook's own code, so a picture
cannot drift from what the notebook does.  Look at every PNG after making it.

State kept: none.

Example::

    .venv/bin/python docs/make_pictures.py          # every notebook (about a minute)
    .venv/bin/python docs/make_pictures.py 01 06    # only those whose name starts so
"""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parents[1]
SOURCES = ROOT / "notebooks" / "src"
IMAGES = ROOT / "docs" / "img"

#: notebook -> the expression (over the notebook's variables) that builds its main view
PICTURES = {
    "01_dependency_engine": "widgets.DependencyGraph(rule_trace)",
    "02_async_ndarray": "widgets.Timeline(traces[True])",
    "03_operators_and_simpleop": "widgets.DependencyGraph(pool_trace, last=5, show_vars=True)",
    "04_custom_op_prototyping": "widgets.Timeline(custom_trace)",
    "05_memory_planning": "widgets.MemoryPlanView(mlp_strategies)",
    "06_debugging_dependencies": "widgets.DependencyGraph(serialized)",
    "07_training_end_to_end": "widgets.Timeline(focused, width=12)",
}

_RUNNER = """
import contextlib, io, runpy, sys
with contextlib.redirect_stdout(io.StringIO()):
    namespace = runpy.run_path(sys.argv[1], run_name="__main__")
view = eval(sys.argv[2], namespace)
print(view.to_png(sys.argv[3]))
"""


def render(name: str, expression: str) -> pathlib.Path:
    """Run notebook ``name``'s source in a fresh interpreter and write its main view."""
    target = IMAGES / f"{name}.png"
    environment = dict(os.environ, MPLBACKEND="Agg")
    with tempfile.TemporaryDirectory() as workdir:  # notebooks may write files: not here
        subprocess.run(
            [sys.executable, "-c", _RUNNER, str(SOURCES / f"{name}.py"), expression, str(target)],
            check=True,
            cwd=workdir,
            env=environment,
        )
    return target


def main(argv: list[str]) -> int:
    """Render the pictures of the notebooks named by prefix (all by default)."""
    IMAGES.mkdir(parents=True, exist_ok=True)
    for name, expression in PICTURES.items():
        if argv and not any(name.startswith(prefix) for prefix in argv):
            continue
        print(f"{name}: {expression}")
        render(name, expression)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
