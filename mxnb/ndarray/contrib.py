"""``mx.nd.contrib``: MXNet's namespace for the operators registered as ``_contrib_<name>``.

MXNet 1.x registers its contributed operators with a ``_contrib_`` prefix and
shows them without it under ``mx.nd.contrib`` (``mx.nd.contrib.isnan`` runs
``_contrib_isnan``); this module forwards each attribute the same way.

Example::

    >>> import mxnb as mx
    >>> mx.nd.contrib.isinf(mx.nd.array([1.0, float('inf')])).asnumpy().tolist()
    [0.0, 1.0]
"""

from __future__ import annotations

from typing import Any


def __getattr__(name: str) -> Any:
    """The generated function of the operator ``_contrib_<name>``."""
    if name.startswith("__"):
        raise AttributeError(name)
    from .. import ndarray
    from ..operator import registry

    if registry.find(f"_contrib_{name}") is None:
        raise AttributeError(
            f"module 'mxnb.ndarray.contrib' has no attribute {name!r} (no operator _contrib_{name})"
        )
    return getattr(ndarray, f"_contrib_{name}")
