"""The KVStore interface: keys, checks, the updater, and the engine ops every store pushes.

Idea (MXNet: include/mxnet/kvstore.h, python/mxnet/kvstore.py): a key-value
store holds one array per key.  Workers ``push`` values (one per device; they
are summed) and ``pull`` the stored value back into their arrays.  With an
updater (``set_optimizer``), a push UPDATES the stored value with the summed
gradient; without, it REPLACES it.  Subclasses decide where the sum happens
(:mod:`.local`: on the CPU or on the devices; a distributed store: on servers)
through three hooks, ``_reduce``, ``_update`` and ``_broadcast``.

Rules (MXNet's semantics; mxnb is stricter on bad use):
    * keys are ints or strs, one or a list, of one type per store (:func:`normalize`,
      as MXNet: ``3`` and ``'3'`` are never two keys); values one NDArray, a list (one per
      device) or, for a list of keys, a list of those;
    * every push, reduce, update and pull is an asynchronous engine op on the
      arrays' vars, named ``kvstore.<what>:<key>`` and pushed with the caller's
      ``priority``; so a pull after a push on the same key sees that push, and
      nothing waits in the calling thread;
    * pushing or pulling an uninitialised key, initialising a key twice, and a
      value whose shape or dtype differs from the key's raise
      :class:`KVStoreError` (or ShapeError / DTypeError) naming the key.
      MXNet 1.9.1 silently accepts a wrong-shaped push; we do not.

State kept:
    _store     key -> the stored NDArray
    _updater   the function applied on push, ``updater(key, merged, stored)``, or None

:func:`apply_update` is that one step on its own, so a parameter server runs
exactly what a local store runs.

Example::

    >>> import mxnb as mx
    >>> kv = mx.kv.create('local')
    >>> kv.init(3, mx.nd.ones(2))
    >>> kv.push(3, [mx.nd.ones(2), mx.nd.ones(2)])
    >>> out = mx.nd.zeros(2); kv.pull(3, out=out); out.asnumpy().tolist()
    [2.0, 2.0]
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .. import engine as _engine
from ..atomic_file import write_atomically
from ..base import DTypeError, MXNBError, NotSupportedError, ShapeError
from ..ndarray import NDArray

__all__ = ["KVStore", "KVStoreError", "apply_update", "engine_op", "normalize", "normalize_key"]

Key = int | str


class KVStoreError(MXNBError, ValueError):
    """Bad use of a KVStore: an unknown key, a second init, a value that does not fit."""


def engine_op(
    fn: Callable[[], None],
    ctx: Any,
    reads: Sequence[NDArray],
    writes: Sequence[NDArray],
    name: str,
    priority: int = 0,
    copy: bool = False,
) -> None:
    """Push ``fn()`` as one engine op reading ``reads`` and writing ``writes`` (the public engine API)."""
    _engine.get().push_sync(
        lambda run_ctx: fn(),
        ctx,
        [array._var for array in reads],
        [array._var for array in writes],
        priority,
        name,
        copy=copy,
    )


def copy_op(source: NDArray, target: NDArray, name: str, priority: int = 0) -> None:
    """Copy ``source`` into ``target`` as one engine op (a copy op when the devices differ)."""
    src, dst = source._array, target._array

    def run() -> None:
        dst[...] = src  # host memory on cpu and virtual GPUs

    cross = source.context != target.context
    engine_op(run, target.context, [source], [target], name, priority, copy=cross)


def apply_update(
    key: Key, merged: NDArray, stored: NDArray, updater: Callable | None, priority: int = 0
) -> None:
    """Apply one summed push to a stored value: ``updater(key, merged, stored)``, else replace it.

    This is the one step a local store and a parameter server share.  The
    updater pushes its own ops (the fused update operators, named
    ``<op>:<key>`` such as ``sgd_mom_update:fc1_weight``); the replacement is
    one engine op named ``kvstore.assign:<key>``.
    """
    if updater is not None:
        updater(key, merged, stored)
    elif merged is not stored:
        copy_op(merged, stored, f"kvstore.assign:{key}", priority)


def normalize_key(key: Any, what: str) -> Key:
    """One key as an ``int`` or a ``str``: numpy ints become ints; bools and others are refused."""
    if isinstance(key, (bool, np.bool_)):
        raise KVStoreError(f"kvstore.{what}: keys are ints or strs, got the bool {key!r}")
    if isinstance(key, np.integer):
        return int(key)
    if not isinstance(key, (int, str)):
        raise KVStoreError(f"kvstore.{what}: keys are ints or strs, got {key!r}")
    return key


def normalize(key: Any, value: Any, what: str, allow_none: bool = False) -> list[tuple[Key, list]]:
    """Return ``[(key, [arrays...]), ...]`` for the forms MXNet accepts (see the module docstring)."""
    if isinstance(key, (int, np.integer, str)):
        keys, values = [key], [value]
    elif isinstance(key, (list, tuple)):
        keys = list(key)
        if value is None and allow_none:
            values = [None] * len(keys)
        elif not isinstance(value, (list, tuple)) or len(value) != len(keys):
            raise KVStoreError(
                f"kvstore.{what}: {len(keys)} keys need a list of {len(keys)} values "
                f"(one NDArray or one list of NDArrays per key), got {type(value).__name__}"
            )
        else:
            values = list(value)
    else:
        raise KVStoreError(f"kvstore.{what}: keys are ints or strs (or a list), got {key!r}")
    pairs = []
    keys = [normalize_key(one_key, what) for one_key in keys]
    if len({type(one_key) for one_key in keys}) > 1:
        raise KVStoreError(
            f"kvstore.{what}: keys {keys!r} mix ints and strs; use one key type (MXNet: mixed "
            "key types are not allowed)"
        )
    for one_key, one_value in zip(keys, values):
        if one_value is None and allow_none:
            pairs.append((one_key, []))
            continue
        arrays = [one_value] if isinstance(one_value, NDArray) else list(one_value)
        if not arrays or not all(isinstance(item, NDArray) for item in arrays):
            raise KVStoreError(
                f"kvstore.{what}: key {one_key!r} needs an NDArray or a list of NDArrays, "
                f"got {one_value!r}"
            )
        pairs.append((one_key, arrays))
    return pairs


class KVStore:
    """A single-process key-value store; subclasses place the reduction (see :mod:`.local`)."""

    def __init__(self, kvtype: str) -> None:
        self._type = kvtype
        self._key_type: type | None = None  # int or str, fixed by the first init
        self._store: dict[Key, NDArray] = {}
        self._updater: Callable | None = None
        self._optimizer: Any = None

    # -- identity ------------------------------------------------------------------
    @property
    def type(self) -> str:
        """The type given to ``create`` (``'local'``, ``'device'``, ...)."""
        return self._type

    @property
    def rank(self) -> int:
        """This worker's rank (always 0 in a single process)."""
        return 0

    @property
    def num_workers(self) -> int:
        """How many workers push to this store (1 in a single process)."""
        return 1

    def barrier(self) -> None:
        """Wait for every worker (nothing to wait for in a single process)."""

    # -- the API ---------------------------------------------------------------------
    def init(self, key: Any, value: Any) -> None:
        """Give each key its first value (copied: later changes of ``value`` do not leak in)."""
        for one_key, arrays in self._normalize(key, value, "init"):
            if one_key in self._store:
                raise KVStoreError(f"kvstore.init: key {one_key!r} is already initialised")
            if len(arrays) != 1:
                raise KVStoreError(
                    f"kvstore.init: key {one_key!r} takes one initial value, got {len(arrays)}"
                )
            self._store[one_key] = self._init_value(one_key, arrays[0])

    def push(self, key: Any, value: Any, priority: int = 0) -> None:
        """Sum each key's values and update (or replace) the stored value; asynchronous."""
        for one_key, arrays in self._normalize(key, value, "push"):
            self._check(one_key, arrays, "push")
            merged = self._reduce(one_key, arrays, priority)
            self._update(one_key, merged, priority)

    def pull(
        self, key: Any, out: Any = None, priority: int = 0, ignore_sparse: bool = True
    ) -> None:
        """Write each key's stored value into every given output array; asynchronous."""
        if out is None:
            raise KVStoreError("kvstore.pull: give out= (the arrays to write)")
        for one_key, arrays in self._normalize(key, out, "pull"):
            self._check(one_key, arrays, "pull")
            self._broadcast(one_key, arrays, priority)

    def pushpull(self, key: Any, value: Any, out: Any = None, priority: int = 0) -> None:
        """``push(key, value)`` then ``pull(key, out)`` (``out`` defaults to ``value``)."""
        self.push(key, value, priority)
        self.pull(key, value if out is None else out, priority)

    def broadcast(self, key: Any, value: Any, out: Any, priority: int = 0) -> None:
        """``init(key, value)`` then ``pull(key, out)``."""
        self.init(key, value)
        self.pull(key, out, priority)

    def row_sparse_pull(self, *args: Any, **kwargs: Any) -> None:
        """Sparse pulls are not supported (mxnb has dense arrays only)."""
        raise NotSupportedError("kvstore.row_sparse_pull: mxnb stores dense arrays only")

    def set_gradient_compression(self, compression_params: dict) -> None:
        """Gradient compression is not supported."""
        raise NotSupportedError("kvstore.set_gradient_compression is not supported in mxnb")

    # -- updater and optimizer ----------------------------------------------------------
    def set_optimizer(self, optimizer: Any) -> None:
        """Run ``optimizer`` on every push (through an :class:`~mxnb.optimizer.Updater`)."""
        from ..optimizer import get_updater

        self._optimizer = optimizer
        self._set_updater(get_updater(optimizer))

    def _set_updater(self, updater: Callable | None) -> None:
        """Run ``updater(key, merged, stored)`` on every push (None: pushes replace)."""
        self._updater = updater

    def save_optimizer_states(self, fname: str, dump_optimizer: bool = False) -> None:
        """Write the updater's states to ``fname`` (pickle-free; atomically)."""
        updater = self._require_updater("save_optimizer_states")
        write_atomically(fname, updater.get_states(dump_optimizer))

    def load_optimizer_states(self, fname: str) -> None:
        """Read states written by :meth:`save_optimizer_states` (FormatError naming the file)."""
        updater = self._require_updater("load_optimizer_states")
        with open(fname, "rb") as stream:
            updater.set_states(stream.read(), source=fname)

    def _require_updater(self, what: str) -> Any:
        if self._updater is None or not hasattr(self._updater, "get_states"):
            raise KVStoreError(f"kvstore.{what}: call set_optimizer first (there are no states)")
        return self._updater

    # -- checks --------------------------------------------------------------------------
    def _normalize(self, key: Any, value: Any, what: str) -> list[tuple[Key, list]]:
        """:func:`normalize`, and one key type per store: ``3`` and ``'3'`` are never two keys."""
        pairs = normalize(key, value, what)
        key_type = type(pairs[0][0]) if pairs else None
        if self._key_type is None and what == "init":
            self._key_type = key_type
        elif key_type is not None and self._key_type not in (None, key_type):
            raise KVStoreError(
                f"kvstore.{what}: key {pairs[0][0]!r} is of type {key_type.__name__} but this store's "
                f"keys are of type {self._key_type.__name__}; use one key type (MXNet: mixed key types "
                "are not allowed)"
            )
        return pairs

    def _check(self, key: Key, arrays: list[NDArray], what: str) -> None:
        stored = self._store.get(key)
        if stored is None:
            raise KVStoreError(
                f"kvstore.{what}: key {key!r} is not initialised; call kv.init({key!r}, value) first"
            )
        for array in arrays:
            if array.shape != stored.shape:
                raise ShapeError(
                    f"kvstore.{what}: key {key!r} holds shape {stored.shape} but got an array of "
                    f"shape {array.shape}"
                )
            if array.dtype != stored.dtype:
                raise DTypeError(
                    f"kvstore.{what}: key {key!r} holds dtype {stored.dtype} but got an array of "
                    f"dtype {array.dtype}"
                )

    # -- the hooks a store defines ----------------------------------------------------------
    def _init_value(self, key: Key, value: NDArray) -> NDArray:
        """Return the array that stores ``key``, holding a copy of ``value``."""
        raise NotImplementedError

    def _reduce(self, key: Key, arrays: list[NDArray], priority: int) -> NDArray:
        """Return the sum of ``arrays`` (pushed as engine ops)."""
        raise NotImplementedError

    def _update(self, key: Key, merged: NDArray, priority: int) -> None:
        """Apply the summed value to the stored one (:func:`apply_update`)."""
        apply_update(key, merged, self._store[key], self._updater, priority)

    def _broadcast(self, key: Key, outs: list[NDArray], priority: int) -> None:
        """Copy the stored value into every array of ``outs``."""
        stored = self._store[key]
        for out in outs:
            if out is not stored:
                copy_op(stored, out, f"kvstore.pull:{key}", priority)

    def __repr__(self) -> str:
        return f"<KVStore {self._type!r}: {len(self._store)} keys>"
