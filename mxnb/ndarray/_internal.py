"""``mx.nd._internal``: MXNet's namespace for the operators whose names start with ``_``.

MXNet puts ``_plus_scalar``, ``_copyto``, ``_identity_with_attr_like_rhs`` ...
in ``mx.nd._internal``; in mxnb every registered op is already reachable as
``mx.nd.<name>``, so this module forwards each attribute to it.

Example::

    >>> import mxnb as mx
    >>> mx.nd._internal._plus_scalar(mx.nd.ones(2), scalar=1.0).asnumpy().tolist()
    [2.0, 2.0]
"""

from __future__ import annotations

from typing import Any


def __getattr__(name: str) -> Any:
    """The generated ``mx.nd.<name>`` function of a registered operator."""
    if name.startswith("__"):
        raise AttributeError(name)
    from .. import ndarray

    return getattr(ndarray, name)
