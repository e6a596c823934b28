"""mxnb's model zoo loaded by path, without mxnb: for the scripts that run under real MXNet.

``mxnb/executor/zoo/`` is a package whose builders take the symbol module to
write with (``sym=mx.sym``), so MXNet 1.9.1 builds the very graphs mxnb
plans.  :func:`load_zoo` imports the package from its folder under another
name (``mxnb_zoo``), so nothing of mxnb itself is imported.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

ZOO = Path(__file__).resolve().parent.parent / "mxnb" / "executor" / "zoo"


def load_zoo() -> ModuleType:
    """The zoo package, imported from its folder as ``mxnb_zoo``."""
    spec = importlib.util.spec_from_file_location(
        "mxnb_zoo", ZOO / "__init__.py", submodule_search_locations=[str(ZOO)]
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["mxnb_zoo"] = module  # its chapters import each other relatively
    spec.loader.exec_module(module)
    return module
