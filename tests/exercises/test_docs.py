"""The exercises sit on top: no module below them imports them.

(Their docstring examples run with every other module's: tests/test_doctests.py.)
"""

from __future__ import annotations

import importlib
import pathlib
import re


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
