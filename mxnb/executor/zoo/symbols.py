"""Which symbol module a zoo builder writes with: the one given, else ``mxnb.sym``.

Every builder takes ``sym=``: MXNet's own ``mx.sym`` works as well, which is
how ``benchmarks/mxnet_reference.py`` builds the same graphs under MXNet 1.9.1
(it loads this package by path, without mxnb).

Example::

    >>> import mxnb as mx
    >>> default_symbol(None) is mx.sym
    True
"""

from __future__ import annotations

from typing import Any

__all__ = ["default_symbol"]


def default_symbol(sym: Any) -> Any:
    """``sym`` if given, else ``mxnb.symbol`` (imported only then)."""
    if sym is not None:
        return sym
    from ... import symbol

    return symbol
