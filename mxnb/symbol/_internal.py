"""``mx.sym._internal`` (also ``mx.symbol._internal``): MXNet's namespace for the operators whose names start with ``_``.

MXNet puts ``_plus_scalar``, ``_copyto``, ``_identity_with_attr_like_rhs`` ...
in ``mx.sym._internal``; in mxnb every registered op is already reachable as
``mx.sym.<name>``, so this module forwards each attribute to it.

Example::

    >>> import mxnb as mx
    >>> mx.sym._internal._plus_scalar(mx.sym.Variable('x'), scalar=1.0).list_arguments()
    ['x']
"""

from __future__ import annotations

from typing import Any


def __getattr__(name: str) -> Any:
    """The generated ``mx.sym.<name>`` function of a registered operator."""
    if name.startswith("__"):
        raise AttributeError(name)
    from .. import symbol

    return getattr(symbol, name)
