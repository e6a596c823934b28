"""Naming and attribute scopes: how a node gets its name and its inherited attributes.

Idea (MXNet: ``mx.name.NameManager`` / ``mx.name.Prefix`` and
``mx.attribute.AttrScope``): an operator created without ``name=`` is named
from its lower-cased operator name and a counter kept per name
(``fullyconnected0``, ``fullyconnected1``, ``convolution0``).  A ``with``
block can install a fresh manager (counters restart) or a :class:`Prefix`
(every node name gets the prefix).  :class:`AttrScope` attaches attributes
(``ctx_group``, ``lr_mult``) to every symbol created inside it.

Rule: MXNet's *hidden keys* (``ctx_group``, ``lr_mult``, ``wd_mult``,
``force_mirroring``, ``mirror_stage``) are stored as ``__key__`` so that
they never clash with an operator parameter.

State kept (each per thread, like MXNet's thread-local scopes):
    NameManager._local     the active manager (a default one per thread)
    NameManager._counter   hint -> next index
    AttrScope._local       the active attribute scope

``current`` is read and assigned as MXNet 1.x does (``NameManager.current``,
``NameManager.current = NameManager()``, per thread); ``NameManager.current()``
(mxnb's older spelling) also works: a scope called with no argument is itself.

Example::

    >>> from mxnb.symbol.scope import NameManager, Prefix
    >>> with NameManager() as manager:
    ...     manager.get(None, 'convolution'), manager.get(None, 'convolution')
    ('convolution0', 'convolution1')
    >>> with Prefix('stage1_'):
    ...     NameManager.current.get(None, 'pooling')
    'stage1_pooling0'
"""

from __future__ import annotations

import threading
from typing import Any

__all__ = ["HIDDEN_KEYS", "AttrScope", "NameManager", "Prefix", "hide_key"]

#: Attribute keys MXNet stores with double underscores (``lr_mult`` -> ``__lr_mult__``).
HIDDEN_KEYS: tuple[str, ...] = (
    "ctx_group",
    "lr_mult",
    "wd_mult",
    "force_mirroring",
    "mirror_stage",
)


class _ThreadCurrent(type):
    """Metaclass of the scopes: ``Cls.current`` is this thread's scope, and assignable."""

    _local: threading.local

    def _default(cls) -> Any:
        raise NotImplementedError

    @property
    def current(cls) -> Any:
        """The scope of this thread (a default one is made on first use)."""
        value = getattr(cls._local, "value", None)
        if value is None:
            value = cls._local.value = cls._default()
        return value

    @current.setter
    def current(cls, value: Any) -> None:
        cls._local.value = value


def hide_key(key: str) -> str:
    """Return ``__key__`` for MXNet's hidden keys (``lr_mult``), ``key`` otherwise."""
    for hidden in HIDDEN_KEYS:
        if key.startswith(hidden):
            return f"__{key}__"
    return key


class NameManager(metaclass=_ThreadCurrent):
    """Gives automatic names to operator nodes: ``hint`` + a counter per hint.

    Use as a context manager to make a fresh set of counters current.
    """

    _local = threading.local()

    @classmethod
    def _default(cls) -> NameManager:
        return NameManager()

    def __call__(self) -> NameManager:
        """``NameManager.current()`` is ``NameManager.current`` (mxnb's older spelling)."""
        return self

    def __init__(self) -> None:
        self._counter: dict[str, int] = {}
        self._old: NameManager | None = None

    def get(self, name: str | None, hint: str) -> str:
        """Return ``name`` when given, else ``hint`` followed by the next index for that hint."""
        if name:
            return name
        index = self._counter.get(hint, 0)
        self._counter[hint] = index + 1
        return f"{hint}{index}"

    def __enter__(self) -> NameManager:  # noqa: PYI034
        self._old = NameManager.current
        NameManager._local.value = self
        return self

    def __exit__(self, *exc: object) -> None:
        NameManager._local.value = self._old


class Prefix(NameManager):
    """A name manager that puts ``prefix`` in front of every name, given or automatic.

    Example: ``with mx.sym.Prefix('mlp_'): fc = mx.sym.FullyConnected(data, name='fc1',
    num_hidden=8)`` names the node ``mlp_fc1``.
    """

    def __init__(self, prefix: str) -> None:
        super().__init__()
        self._prefix = prefix

    def get(self, name: str | None, hint: str) -> str:
        """Return the prefixed name (the counter is this scope's own)."""
        return self._prefix + super().get(name, hint)


class AttrScope(metaclass=_ThreadCurrent):
    """Attributes given to every symbol created inside the ``with`` block.

    ``with mx.sym.AttrScope(ctx_group='dev1'): ...`` attaches
    ``__ctx_group__='dev1'`` to each node made inside; explicit ``attr=``
    values win over the scope's.  Scopes nest (inner values win).
    """

    _local = threading.local()

    @classmethod
    def _default(cls) -> AttrScope:
        return AttrScope()

    def __call__(self) -> AttrScope:
        """``AttrScope.current()`` is ``AttrScope.current`` (mxnb's older spelling)."""
        return self

    def __init__(self, **kwargs: str) -> None:
        for key, value in kwargs.items():
            if not isinstance(value, str):
                raise TypeError(
                    f"AttrScope: attribute {key!r} must be a string, got {type(value).__name__}; "
                    f"pass {key}={str(value)!r}"
                )
        self._attr = {hide_key(key): value for key, value in kwargs.items()}
        self._old: AttrScope | None = None

    def get(self, attr: dict[str, Any] | None) -> dict[str, str]:
        """Return the scope's attributes updated with ``attr`` (hidden keys renamed)."""
        result = dict(self._attr)
        for key, value in (attr or {}).items():
            result[hide_key(key)] = str(value)
        return result

    def __enter__(self) -> AttrScope:  # noqa: PYI034
        self._old = AttrScope.current
        merged = AttrScope()
        merged._attr = {**self._old._attr, **self._attr}
        AttrScope._local.value = merged
        return self

    def __exit__(self, *exc: object) -> None:
        AttrScope._local.value = self._old
