"""Namespaces of prefixed operators: ``mx.nd.contrib.isnan`` runs ``_contrib_isnan``.

Idea: MXNet 1.x registers some operators under a prefix (``_contrib_``,
``_linalg_``) and shows them without it in a sub-namespace of ``mx.nd`` and
``mx.sym`` (``mx.nd.linalg.gelqf`` runs ``_linalg_gelqf``).  Each such module
gets its module-level ``__getattr__`` from :func:`forwarder`, so an operator
registered later (even in a notebook cell) shows up at once.

State kept: none; each lookup asks the registry.

Example::

    >>> import mxnb as mx
    >>> mx.nd.contrib.isinf(mx.nd.array([1.0, float('inf')])).asnumpy().tolist()
    [0.0, 1.0]
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

from . import registry

__all__ = ["forwarder"]


def forwarder(namespace: str, prefix: str, front: str) -> Callable[[str], Any]:
    """A module ``__getattr__`` that returns ``<front>.<prefix><name>`` for a registered op.

    ``namespace`` names the module in errors (``'mxnb.ndarray.linalg'``),
    ``front`` is the module whose generated functions are returned
    (``'mxnb.ndarray'`` or ``'mxnb.symbol'``).
    """

    def __getattr__(name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        if registry.find(f"{prefix}{name}") is None:
            raise AttributeError(
                f"module {namespace!r} has no attribute {name!r} (no operator {prefix}{name})"
            )
        return getattr(importlib.import_module(front), f"{prefix}{name}")

    return __getattr__
