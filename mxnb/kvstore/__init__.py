"""``mx.kv`` / ``mx.kvstore``: key-value stores for parameter synchronisation.

Idea (MXNet: python/mxnet/kvstore.py, src/kvstore/): ``create(name)``
returns a store by type.  :mod:`.base` holds the API, the checks and the
engine ops every store pushes (and :func:`~.base.apply_update`, the step a
server runs too); :mod:`.local` the single-process stores, ``local`` (sum on
the CPU) and ``device`` (sum on the devices).  Distributed types register a
factory with :func:`register_type` (``dist_sync``, ``dist_async``: on Ray).

Example::

    >>> import mxnb as mx
    >>> kv = mx.kv.create('local')
    >>> kv.type, kv.rank, kv.num_workers
    ('local', 0, 1)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..base import NotSupportedError
from .base import KVStore, KVStoreError, apply_update
from .local import DeviceKVStore, LocalKVStore, create_local

__all__ = [
    "DeviceKVStore",
    "KVStore",
    "KVStoreError",
    "LocalKVStore",
    "apply_update",
    "create",
    "register_type",
]

_LOCAL_TYPES = (
    "local",
    "local_update_cpu",
    "local_allreduce_cpu",
    "device",
    "local_allreduce_device",
)
_FACTORIES: dict[str, Callable[[str], KVStore]] = {}


def register_type(name: str, factory: Callable[[str], KVStore]) -> None:
    """Make ``create(name)`` return ``factory(name)`` (for distributed stores)."""
    _FACTORIES[name] = factory


def create(name: Any = "local") -> KVStore:
    """Return a new store of type ``name``: ``'local'`` or ``'device'`` (and registered types)."""
    if isinstance(name, KVStore):
        return name
    if not isinstance(name, str):
        raise KVStoreError(f"mx.kv.create: the type is a string such as 'local', got {name!r}")
    if name in _LOCAL_TYPES:
        return create_local(name)
    factory = _FACTORIES.get(name)
    if factory is None and name.startswith("dist"):
        factory = _load_dist(name)
    if factory is not None:
        return factory(name)
    known = ", ".join([*_LOCAL_TYPES, *sorted(_FACTORIES)])
    raise KVStoreError(f"mx.kv.create: unknown kvstore type {name!r}; available: {known}")


#: The distributed store's type names (MXNet's), registered when one is first asked for.
DIST_TYPES = ("dist_sync", "dist_async", "dist_device_sync", "dist_sync_device", "dist")


def _load_dist(name: str) -> Callable[[str], KVStore] | None:
    """Import the Ray stores and register their types; say how to get Ray when it is missing."""
    try:
        from .dist import DistKVStore
    except ImportError as exc:
        raise NotSupportedError(
            f"mx.kv.create: kvstore type {name!r} runs on Ray, which is not installed "
            f"({exc}); pip install 'mxnb[dist]'"
        ) from exc
    for type_name in DIST_TYPES:
        register_type(type_name, DistKVStore)
    return _FACTORIES.get(name)
