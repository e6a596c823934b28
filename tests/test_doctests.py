"""Every module of mxnb whose docstrings hold an example runs it, and it prints what it says.

The modules are discovered, not listed: a new module with a ``>>>`` example is
doctested the moment it lands, and an example that stops matching its output
fails the suite.  (Earlier, five hand-kept lists covered 70 of 171 such modules.)
"""

from __future__ import annotations

import doctest
import importlib
import pathlib
import pkgutil

import pytest

import mxnb

PACKAGE = pathlib.Path(mxnb.__file__).resolve().parent


def _modules_with_examples() -> list[str]:
    names = ["mxnb"]
    for info in pkgutil.walk_packages(mxnb.__path__, prefix="mxnb."):
        names.append(info.name)
    found = []
    for name in sorted(names):
        relative = name.split(".")[1:]
        path = PACKAGE.joinpath(*relative)
        source = path / "__init__.py" if path.is_dir() else path.with_suffix(".py")
        if source.is_file() and ">>>" in source.read_text(encoding="utf-8"):
            found.append(name)
    return found


MODULES = _modules_with_examples()


def test_the_discovery_finds_the_modules_with_examples():
    """A floor, so that a broken walk cannot pass by finding nothing."""
    assert len(MODULES) >= 150
    assert "mxnb.engine.var" in MODULES and "mxnb.executor.planning" in MODULES


@pytest.mark.timeout(120)
@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples_run(name):
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.attempted > 0, f"{name} holds '>>>' but doctest found no example in it"
    assert result.failed == 0
