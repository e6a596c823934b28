"""``local`` and ``device`` stores: where a multi-device push is summed.

Idea (MXNet: src/kvstore/kvstore_local.h with CommCPU / CommDevice in comm.h):
a push of one value per device is reduced to one array, then applied to the
stored value.  ``local`` sums on the CPU: every device's value is first copied
to a CPU buffer (copy ops), then one sum op runs on the CPU.  ``device`` sums on
a device: each key gets a merge device (the least loaded by bytes, as
CommDevice balances its merge buffers); the other devices' values are copied to
it and the sum runs in that device's lanes, and with an updater the stored
value moves there too, so the update runs on the device.

Rule: a single value already on the reduce device is used as it is (no copy);
buffers are kept per (key, device) and reused, so the engine orders a push's
writes after the previous push's reads.

Adopted values (mxnb, for the Module): :meth:`LocalKVStore.adopt` makes the
caller's array on a key's reduce device the stored value itself.  Pushes
then update that array in place and pulls skip it, one copy op per key and
step fewer than MXNet's separate stored copy; the caller promises that the
array holds the value (it was just pulled) and that what writes it later is
meant to write the store too.

State kept:
    _buffers       (key, context) -> merge buffer
    _merge_ctx     key -> the device that sums it (``device`` only)
    _load          context -> bytes of the keys it sums (``device`` only)

Example::

    >>> import mxnb as mx
    >>> kv = mx.kv.create('device')
    >>> kv.init('w', mx.nd.zeros(2))
    >>> kv.push('w', [mx.nd.ones(2), mx.nd.ones(2)])
    >>> out = mx.nd.zeros(2); kv.pull('w', out=out); out.asnumpy().tolist()
    [2.0, 2.0]
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..context import Context, cpu
from ..ndarray import NDArray, zeros
from .base import Key, KVStore, copy_op, engine_op

__all__ = ["DeviceKVStore", "LocalKVStore"]


class LocalKVStore(KVStore):
    """Sum on the CPU (MXNet's ``local``: CommCPU)."""

    def __init__(self, kvtype: str = "local") -> None:
        super().__init__(kvtype)
        self._buffers: dict[tuple[Key, Context], NDArray] = {}

    def _init_value(self, key: Key, value: NDArray) -> NDArray:
        """A copy of ``value`` on the CPU."""
        stored = zeros(value.shape, ctx=cpu(), dtype=value.dtype)
        copy_op(value, stored, f"kvstore.init:{key}")
        return stored

    def _reduce_context(self, key: Key, arrays: list[NDArray]) -> Context:
        """Where the sum of ``key`` runs."""
        return cpu()

    def adopt(self, key: Key, arrays: list[NDArray]) -> NDArray | None:
        """Make the one of ``arrays`` on ``key``'s reduce device the stored value; return it.

        ``arrays`` are the pull targets of ``key``, one per device, already
        holding the stored value (pull first).  Nothing changes (and None is
        returned) when none of them lies on the reduce device, e.g. a
        ``local`` store summing on the CPU for GPUs.
        """
        self._check(key, arrays, "adopt")
        ctx = self._reduce_context(key, arrays)
        for array in arrays:
            if array.context == ctx:
                self._store[key] = array
                return array
        return None

    def _buffer(self, key: Key, ctx: Context, like: NDArray, slot: int) -> NDArray:
        buffer = self._buffers.get((key, ctx, slot))
        if buffer is None:
            buffer = zeros(like.shape, ctx=ctx, dtype=like.dtype)
            self._buffers[(key, ctx, slot)] = buffer
        return buffer

    def _reduce(self, key: Key, arrays: list[NDArray], priority: int) -> NDArray:
        """Copy values to the reduce device, then sum them in one op ``kvstore.reduce:<key>``."""
        ctx = self._reduce_context(key, arrays)
        if len(arrays) == 1 and arrays[0].context == ctx:
            return arrays[0]
        local = []
        for slot, array in enumerate(arrays):
            if array.context == ctx:
                local.append(array)
            else:
                buffer = self._buffer(key, ctx, array, slot + 1)
                copy_op(array, buffer, f"kvstore.copy:{key}", priority)
                local.append(buffer)
        if len(local) == 1:
            return local[0]
        merged = self._buffer(key, ctx, arrays[0], 0)
        raws = [array._array for array in local]
        out = merged._array

        def run() -> None:
            np.add(raws[0], raws[1], out=out)
            for raw in raws[2:]:
                np.add(out, raw, out=out)

        engine_op(run, ctx, local, [merged], f"kvstore.reduce:{key}", priority)
        return merged


class DeviceKVStore(LocalKVStore):
    """Sum on a device (MXNet's ``device``: CommDevice), one merge device per key."""

    def __init__(self, kvtype: str = "device") -> None:
        super().__init__(kvtype)
        self._merge_ctx: dict[Key, Context] = {}
        self._load: dict[Context, int] = {}

    def _reduce_context(self, key: Key, arrays: list[NDArray]) -> Context:
        """The key's merge device: chosen at its first push, the least loaded of the pushers."""
        ctx = self._merge_ctx.get(key)
        if ctx is None:
            candidates = sorted({array.context for array in arrays}, key=str)
            ctx = min(candidates, key=lambda c: self._load.get(c, 0))
            self._load[ctx] = self._load.get(ctx, 0) + arrays[0].nbytes
            self._merge_ctx[key] = ctx
        return ctx

    def _update(self, key: Key, merged: NDArray, priority: int) -> None:
        """With an updater, move the stored value to the merge device first (as MXNet)."""
        stored = self._store[key]
        if self._updater is not None and stored.context != merged.context:
            moved = zeros(stored.shape, ctx=merged.context, dtype=stored.dtype)
            copy_op(stored, moved, f"kvstore.copy:{key}", priority)
            self._store[key] = moved
        super()._update(key, merged, priority)


def create_local(name: str) -> Any:
    """The store for ``'local'`` or ``'device'`` (and MXNet's aliases of them)."""
    if name in ("device", "local_allreduce_device"):
        return DeviceKVStore(name)
    return LocalKVStore(name)
