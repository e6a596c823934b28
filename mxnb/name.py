"""``mx.name``: MXNet's module name for automatic symbol naming.

The classes live in :mod:`mxnb.symbol.scope` (one chapter for naming and
attribute scopes); this module gives them MXNet 1.x's import path
(``from mxnet.name import NameManager, Prefix``).

Example::

    >>> import mxnb as mx
    >>> with mx.name.Prefix('net_'):
    ...     mx.sym.Variable('x').name, mx.sym.FullyConnected(num_hidden=2).name
    ('x', 'net_fullyconnected0')
"""

from .symbol.scope import NameManager, Prefix

__all__ = ["NameManager", "Prefix"]
