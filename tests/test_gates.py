"""The gates that keep mxnb a textbook: lint, complexity, module size, types.

Each gate says what it found and what to do.  They run in ``make test``, so a
change that breaks one does not land:

* ``ruff check`` (pyflakes, the error rules, complexity at most 15) over the
  package, tests, benchmarks, tools and notebooks;
* at most six functions over the complexity limit, each marked
  ``# noqa: C901 -- why`` on its ``def`` line;
* no module over 600 lines, except those listed below, which may not grow;
* at most twelve functions over 60 lines (a long function is a chapter's
  worth of steps: name them);
* ``mypy`` on ``engine/`` and ``executor/``, with no error;
* no import circle inside ``engine/`` or ``executor/`` (module-level imports;
  those under ``TYPE_CHECKING`` and inside functions are not followed).
"""

from __future__ import annotations

import ast
import pathlib
import re
import shutil
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "mxnb"
BIN = pathlib.Path(sys.executable).parent

#: The limit a new module must stay under.
MODULE_LINES = 600
#: Modules over the limit when the gate came in, with their size then: they may shrink, never
#: grow, and leave this list once under the limit.
LARGE_MODULES = {
    "ndarray/ndarray.py": 946,
    "symbol/symbol.py": 687,
}
#: Functions allowed over ruff's complexity limit (each says why on its def line).
MAX_COMPLEXITY_EXCEPTIONS = 6
#: A function longer than this many lines (decorators and docstring included) is long ...
FUNCTION_LINES = 60
#: ... and at most this many may be (issue 38's target; there were 34).
MAX_LONG_FUNCTIONS = 12


def _tool(name: str) -> str:
    path = BIN / name
    found = str(path) if path.exists() else shutil.which(name)
    assert found, f"{name} is not installed: run `make test-setup` (it is in the dev extra)"
    return found


def test_ruff_finds_nothing():
    targets = ["mxnb", "tests", "benchmarks", "tools", "notebooks"]
    result = subprocess.run(
        [_tool("ruff"), "check", "--no-cache", *targets],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, (
        "ruff found problems; fix them (or run `ruff check --fix`):\n" + result.stdout
    )


def test_complexity_exceptions_are_few_and_each_says_why():
    marked = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if "noqa: C901" in line:
                where = f"{path.relative_to(ROOT)}:{number}"
                assert re.search(r"noqa: C901 -- \S", line), (
                    f"{where}: say why after the code: `# noqa: C901 -- <why it stays one function>`"
                )
                marked.append(where)
    assert len(marked) <= MAX_COMPLEXITY_EXCEPTIONS, (
        f"{len(marked)} functions are over the complexity limit (at most "
        f"{MAX_COMPLEXITY_EXCEPTIONS}): {marked}; split the new one into named steps"
    )


def _module_sizes() -> dict[str, int]:
    return {
        str(path.relative_to(PACKAGE)): len(path.read_text(encoding="utf-8").splitlines())
        for path in PACKAGE.rglob("*.py")
    }


def test_no_new_module_is_over_the_size_limit():
    over = {
        name: lines
        for name, lines in _module_sizes().items()
        if lines > MODULE_LINES and name not in LARGE_MODULES
    }
    assert not over, (
        f"modules over {MODULE_LINES} lines: {over}; a module is a chapter: split it by idea"
    )


@pytest.mark.parametrize("name", sorted(LARGE_MODULES))
def test_a_listed_large_module_does_not_grow(name):
    lines = _module_sizes().get(name)
    assert lines is not None, f"{name} is gone: remove it from LARGE_MODULES"
    assert lines > MODULE_LINES, (
        f"{name} has {lines} lines, under the limit now: remove it from LARGE_MODULES"
    )
    assert lines <= LARGE_MODULES[name], (
        f"{name} grew from {LARGE_MODULES[name]} to {lines} lines; move the new code to a "
        f"module of its own"
    )


def test_long_functions_are_few():
    long = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
                lines = node.end_lineno - first + 1
                if lines > FUNCTION_LINES:
                    long.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.name} ({lines})")
    assert len(long) <= MAX_LONG_FUNCTIONS, (
        f"{len(long)} functions are over {FUNCTION_LINES} lines (at most {MAX_LONG_FUNCTIONS}): "
        f"{long}; split the new one into named steps"
    )


@pytest.mark.timeout(300)
def test_mypy_finds_no_error_in_the_engine_and_the_executor():
    result = subprocess.run(
        [_tool("mypy"), "mxnb/engine", "mxnb/executor"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=280,
        check=False,
    )
    assert result.returncode == 0, "mypy:\n" + result.stdout + result.stderr


#: Packages whose modules must import one another without a circle (issue 38's target).
ACYCLIC_PACKAGES = ("engine", "executor")


def _module_imports(path: pathlib.Path, name: str, modules: set[str]) -> set[str]:
    """The ``modules`` that ``path`` (module ``name``) imports when it is imported.

    ``from . import x`` imports the module ``x`` (its package is already imported).
    """
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()

    def visit(body: list[ast.stmt]) -> None:
        for node in body:
            if isinstance(node, ast.If):
                if "TYPE_CHECKING" not in ast.unparse(node.test):
                    visit(node.body)
                    visit(node.orelse)
            elif isinstance(node, ast.Try):
                visit(node.body)
                for handler in node.handlers:
                    visit(handler.body)
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:  # from . / from .. : the package, or one above it per extra dot
                    above = package.rsplit(".", node.level - 1)[0]
                    base = f"{above}.{node.module}" if node.module else above
                for alias in node.names:
                    found.add(f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base)
            elif isinstance(node, ast.Import):
                found.update(alias.name for alias in node.names)

    visit(ast.parse(path.read_text(encoding="utf-8")).body)
    return found


def _import_circle(package: str) -> list[str]:
    """One circle of imports among ``mxnb.<package>``'s modules, or [] when there is none."""
    modules = {}
    for path in sorted((PACKAGE / package).rglob("*.py")):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        modules[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    graph = {
        name: sorted(modules.keys() & _module_imports(path, name, set(modules)) - {name})
        for name, path in modules.items()
    }
    done: set[str] = set()

    def walk(name: str, trail: list[str]) -> list[str]:
        if name in trail:
            return trail[trail.index(name) :] + [name]
        if name in done:
            return []
        for target in graph[name]:
            circle = walk(target, trail + [name])
            if circle:
                return circle
        done.add(name)
        return []

    for name in graph:
        circle = walk(name, [])
        if circle:
            return circle
    return []


@pytest.mark.parametrize("package", ACYCLIC_PACKAGES)
def test_no_import_circle_inside_the_package(package):
    circle = _import_circle(package)
    assert not circle, (
        f"mxnb/{package}/ imports in a circle: {' -> '.join(circle)}; move what both sides "
        "need into a module below them (as executor/steps.py holds the step types)"
    )


def test_the_circle_check_finds_a_circle(tmp_path, monkeypatch):
    package = tmp_path / "mxnb" / "ring"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text("from .b import f\n")
    (package / "b.py").write_text("from . import c\n")
    (package / "c.py").write_text("from .a import g\nif TYPE_CHECKING:\n    from .b import h\n")
    monkeypatch.setattr(sys.modules[__name__], "PACKAGE", tmp_path / "mxnb")
    assert _import_circle("ring") == ["mxnb.ring.a", "mxnb.ring.b", "mxnb.ring.c", "mxnb.ring.a"]
    (package / "c.py").write_text("def g():\n    from .a import f\n")  # inside a function
    assert _import_circle("ring") == []
