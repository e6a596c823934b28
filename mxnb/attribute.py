"""``mx.attribute``: MXNet's module name for attribute scopes.

:class:`AttrScope` lives in :mod:`mxnb.symbol.scope`; this module gives it
MXNet 1.x's import path (``from mxnet.attribute import AttrScope``, also
``mx.AttrScope``).

Example::

    >>> import mxnb as mx
    >>> with mx.attribute.AttrScope(group='4'):
    ...     mx.sym.Variable('x').attr('group')
    '4'
"""

from .symbol.scope import AttrScope

__all__ = ["AttrScope"]
