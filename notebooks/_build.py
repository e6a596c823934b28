"""Build the notebooks from their text form: ``notebooks/src/NN_name.py`` -> ``notebooks/NN_name.ipynb``.

Idea: a notebook is reviewed as text.  Each ``src/*.py`` file is a plain
Python script in the "percent" format (the one Jupytext, VS Code and Spyder
read): ``# %%`` starts a code cell, ``# %% [markdown]`` starts a prose cell
whose lines are comments (``# `` is stripped).  The script runs top to bottom
with ``python notebooks/src/01_dependency_engine.py`` too.

Rule: the generated ``.ipynb`` files are committed with their outputs cleared
(the test suite executes them); ``--check`` fails when an ``.ipynb`` is out of
date with its source, so review the ``.py`` and trust the ``.ipynb``.

State kept: none.

Example::

    .venv/bin/python notebooks/_build.py            # rebuild every notebook
    .venv/bin/python notebooks/_build.py --check    # exit 1 if any .ipynb is stale
    .venv/bin/python notebooks/_build.py 03         # rebuild the notebooks whose name starts with 03
"""

from __future__ import annotations

import pathlib
import sys

import nbformat

HERE = pathlib.Path(__file__).resolve().parent
SOURCES = HERE / "src"

CODE_MARK = "# %%"
MARKDOWN_MARK = "# %% [markdown]"


def parse(text: str) -> list[tuple[str, str]]:
    """Split a percent-format script into ``(kind, source)`` cells, kind 'code' or 'markdown'."""
    cells: list[tuple[str, list[str]]] = []
    for line in text.splitlines():
        stripped = line.rstrip()
        if stripped == MARKDOWN_MARK:
            cells.append(("markdown", []))
        elif stripped == CODE_MARK:
            cells.append(("code", []))
        elif cells:
            kind, lines = cells[-1]
            if kind == "markdown":
                if stripped in ("", "#"):
                    line = ""
                elif line.startswith("# "):
                    line = line[2:]
                else:
                    raise ValueError(f"markdown line must start with '# ': {line!r}")
            lines.append(line)
        elif stripped and not stripped.startswith("#"):
            raise ValueError(f"text before the first cell marker: {line!r}")
    result = []
    for kind, lines in cells:
        source = "\n".join(lines).strip("\n")
        if source:
            result.append((kind, source))
    return result


def language_info() -> dict:
    """What ipykernel reports of its language, as JupyterLab writes it into a notebook it opens.

    Written in full (the venv's Python version included), so opening a
    notebook changes nothing and it does not open as modified.
    """
    try:
        from ipykernel.ipkernel import IPythonKernel
    except ImportError:  # building without Jupyter installed: the name alone
        return {"name": "python"}
    return dict(IPythonKernel.language_info)


def build(source: pathlib.Path) -> nbformat.NotebookNode:
    """Return the notebook (outputs cleared) for one percent-format script."""
    notebook = nbformat.v4.new_notebook()
    notebook.metadata["kernelspec"] = {  # ipykernel's own spec: JupyterLab rewrites no other
        "display_name": "Python 3 (ipykernel)",
        "language": "python",
        "name": "python3",
    }
    notebook.metadata["language_info"] = language_info()
    for index, (kind, text) in enumerate(parse(source.read_text())):
        if kind == "markdown":
            cell = nbformat.v4.new_markdown_cell(text)
        else:
            cell = nbformat.v4.new_code_cell(text)
        cell["id"] = f"{source.stem[:2]}-{index:03d}"  # stable ids keep diffs small
        notebook.cells.append(cell)
    nbformat.validate(notebook)
    return notebook


def main(argv: list[str]) -> int:
    """Rebuild (or with ``--check`` compare) the notebooks named by prefix, all by default."""
    check = "--check" in argv
    prefixes = [arg for arg in argv if not arg.startswith("--")]
    stale = []
    for source in sorted(SOURCES.glob("[0-9][0-9]_*.py")):
        if prefixes and not any(source.stem.startswith(prefix) for prefix in prefixes):
            continue
        target = HERE / f"{source.stem}.ipynb"
        text = nbformat.writes(build(source)) + "\n"
        if check:
            if not target.exists() or target.read_text() != text:
                stale.append(target.name)
            continue
        target.write_text(text)
        print(f"wrote {target.relative_to(HERE.parent)}")
    if stale:
        print("out of date (run notebooks/_build.py):", ", ".join(stale))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
