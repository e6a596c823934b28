"""Storage managers: where the bytes of every NDArray come from and go back to.

Idea (MXNet: ``StorageManager`` in include/mxnet/storage.h,
``NaiveStorageManager`` and ``GPUPooledRoundedStorageManager`` in
src/storage/): an NDArray does not own memory, it borrows a *handle* from
its context's storage manager and gives it back when the last array on it is
garbage-collected.  Allocating is the slow part of a small op, so the default
manager keeps freed blocks and hands them out again.

Rule: sizes are rounded up to a *size class* (the next power of two, at
least 64 bytes, and multiples of 16 MiB above 16 MiB); a freed block goes to
the free list of its class; an allocation first takes a block from its class
(a pool *hit*), else asks the array module for a fresh buffer (a *miss*).
``release_all()`` returns the pooled blocks to the system.  A block that
lives as long as its owner (an executor's planned storage, the temp space)
is taken with ``alloc_exact``: exactly the bytes asked, no size class, so
the bytes a pool holds are the bytes a plan promised.  A block is freed
through the engine (``push_delete(var, ctx, fn=free)`` in
:mod:`mxnb.ndarray`), so ops still reading or writing it finish first.

Each context has its own manager (virtual GPUs too); the raw buffers come
from the context's array module (numpy, or cupy on a real GPU — that path
has not run on real hardware; there cupy's pool is the pool: :func:`default_kind`).

State kept (per manager):
    ctx          the context the memory belongs to
    free_lists   size class -> list of pooled buffers (empty for the naive manager)
    counters     bytes in use, peak (the high-water mark; ``reset_peak`` starts a
                 new one), pooled bytes, frees, pool hits and misses, updated
                 under ``_lock`` (:meth:`~StorageManager.stats` snapshots them)

Every allocation and free emits :class:`~mxnb.engine.tracing.StorageAlloc` /
:class:`~mxnb.engine.tracing.StorageFree` when a trace is recording (one flag
check otherwise), so the memory view can draw bytes in use over time: coded
records in the trace's log, like the engine's, built into events when the
trace is read.

Example::

    >>> import mxnb as mx
    >>> ctx = mx.cpu(97)                      # a context no other code uses
    >>> h = mx.storage.alloc(1000, ctx)
    >>> h.capacity, mx.storage.stats(ctx).bytes_in_use
    (1024, 1024)
    >>> mx.storage.free(h); mx.storage.stats(ctx).pooled_bytes
    1024
    >>> mx.storage.alloc(900, ctx).pool_hit
    True
"""

from __future__ import annotations

import itertools
import os
import threading
from dataclasses import dataclass, field, replace
from typing import Any

from .base import MXNBError, acquire_lock
from .context import Context
from .engine import tracing

# Storage events are coded records in the trace's log, like the engine's (built lazily).
RAW_ALLOC, RAW_FREE, _extend, _now = (
    tracing.RAW_ALLOC,
    tracing.RAW_FREE,
    tracing.extend_raw,
    tracing.now,
)

__all__ = [
    "Handle",
    "NaiveStorageManager",
    "PooledStorageManager",
    "StorageManager",
    "StorageOutOfMemoryError",
    "StorageStats",
    "alloc",
    "alloc_exact",
    "default_kind",
    "free",
    "get_manager",
    "release_all",
    "reset",
    "set_manager_type",
    "size_class",
    "stats",
]

#: Smallest block handed out (bytes); also the alignment of every block.
MIN_BLOCK = 64
#: Above this size, classes are multiples of it instead of powers of two.
LINEAR_CUTOFF = 1 << 24

_handle_ids = itertools.count(1)
_MAX_BLOCK_BYTES = 2**63 - 1  # numpy's largest buffer (its sizes are int64)


class StorageOutOfMemoryError(MXNBError, MemoryError):
    """A context ran out of memory even after its pool was released."""


def size_class(nbytes: int) -> int:
    """Return the size class of a request: the bytes a pooled block of it holds.

    Powers of two from 64 bytes up to 16 MiB, then multiples of 16 MiB
    (MXNet's rounded pool, ``MXNET_GPU_MEM_POOL_ROUND_LINEAR_CUTOFF=24``).

    >>> size_class(1), size_class(1000), size_class(5 << 20), size_class((16 << 20) + 1)
    (64, 1024, 8388608, 33554432)
    """
    if nbytes <= MIN_BLOCK:
        return MIN_BLOCK
    if nbytes <= LINEAR_CUTOFF:
        return 1 << (nbytes - 1).bit_length()
    return -(-nbytes // LINEAR_CUTOFF) * LINEAR_CUTOFF


@dataclass(eq=False, slots=True)
class Handle:
    """A block of memory lent to an NDArray (MXNet: ``Storage::Handle``).

    Attributes
    ----------
    handle_id : int
        Unique id, as trace events name it.
    ctx : Context
        Where the memory lives.
    nbytes : int
        Bytes asked for.
    capacity : int
        Bytes the block holds (the size class for the pooled manager).
    buffer : array
        A 1-D ``uint8`` array of the context's array module, ``capacity`` long.
    pool_hit : bool
        True when the block was reused from the pool.
    """

    handle_id: int
    ctx: Context
    nbytes: int
    capacity: int
    buffer: Any
    pool_hit: bool = False
    freed: bool = False
    manager: StorageManager | None = field(default=None, repr=False)  # the lender

    def release(self, run_ctx: Any = None) -> None:
        """Give the block back to its lender; the engine calls it as ``fn(run_ctx)``."""
        (self.manager or get_manager(self.ctx)).free(self)


_new_object = object.__new__
_next_handle_id = _handle_ids.__next__


def _new_handle(
    ctx: Context, nbytes: int, capacity: int, buffer: Any, hit: bool, manager: StorageManager
) -> Handle:
    """A new :class:`Handle` with the next id, its slots filled here (every op output makes one:
    on CPython 3.11 calling a class takes the slow generic call path)."""
    handle = _new_object(Handle)
    handle.handle_id = _next_handle_id()
    handle.ctx = ctx
    handle.nbytes = nbytes
    handle.capacity = capacity
    handle.buffer = buffer
    handle.pool_hit = hit
    handle.freed = False
    handle.manager = manager
    return handle


@dataclass(frozen=True)
class StorageStats:
    """Counters of one context's storage manager (``mx.storage.stats(ctx)``).

    ``bytes_in_use`` and ``peak_bytes`` count block capacities handed out;
    ``pooled_bytes`` counts freed blocks kept for reuse.
    """

    ctx: str
    kind: str  # 'naive' or 'pooled'
    bytes_in_use: int = 0
    peak_bytes: int = 0
    pooled_bytes: int = 0
    allocs: int = 0
    frees: int = 0
    pool_hits: int = 0
    pool_misses: int = 0


class StorageManager:
    """Interface of a per-context storage manager (MXNet: ``StorageManager``).

    Subclasses choose two policies: the capacity a request is rounded up to
    (:meth:`_capacity`) and whether a freed block is kept for reuse
    (:attr:`pools`).  Taking and keeping blocks, the counting and the trace
    events live here, once: an allocation is on the path of every op.
    """

    kind = "abstract"
    #: Keep freed blocks in ``free_lists`` for reuse (False: drop them).
    pools = False

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx
        self._ctx_label = repr(ctx)
        self._xp = ctx.array_module
        self._lock = threading.Lock()
        self._capacities: dict[int, int] = {}  # nbytes -> size class, memoised
        self._stats = StorageStats(ctx=self._ctx_label, kind=self.kind)
        self.free_lists: dict[int, list[Any]] = {}  # capacity -> pooled buffers (when pools)
        self._in_use = 0
        self._peak = 0
        self._pooled = 0
        self._frees = 0
        self._hits = 0  # allocations are hits + misses
        self._misses = 0

    def _capacity(self, nbytes: int) -> int:
        """The bytes a block for a request of ``nbytes`` holds (the policy of subclasses)."""
        return nbytes

    # -- public ------------------------------------------------------------------
    def alloc(self, nbytes: int, exact: bool = False) -> Handle:
        """Return a :class:`Handle` of at least ``nbytes`` bytes (``exact``: exactly, no size class)."""
        capacity = nbytes if exact else self._capacities.get(nbytes)
        if capacity is None or exact:
            if nbytes < 0:
                raise MXNBError(f"storage.alloc: nbytes must be >= 0, got {nbytes}")
            capacity = nbytes if exact else self._capacity(nbytes)
            if capacity > _MAX_BLOCK_BYTES:  # numpy cannot even describe it: refuse before counting
                raise StorageOutOfMemoryError(
                    f"{self.ctx!r}: cannot allocate {nbytes} bytes, more than any buffer can "
                    f"hold ({_MAX_BLOCK_BYTES}); check the shape that asked for it"
                )
            if len(self._capacities) < 4096 and not exact:
                self._capacities[nbytes] = capacity
        # The pushing thread allocates and the workers free: no convoy (see acquire_lock).
        lock = self._lock
        if not lock.acquire(False):
            acquire_lock(lock)
        try:
            blocks = self.free_lists.get(capacity)
            if blocks:
                buffer = blocks.pop()
                self._hits += 1
                self._pooled -= capacity
            else:
                buffer = None
                self._misses += 1
            in_use = self._in_use + capacity
            self._in_use = in_use
            if in_use > self._peak:  # noqa: PLR1730 - no call on the path of every op
                self._peak = in_use
        finally:
            lock.release()
        hit = buffer is not None
        if not hit:
            buffer = self._fresh_buffer(nbytes, capacity)  # outside the lock: it may be slow
        handle = _new_handle(self.ctx, nbytes, capacity, buffer, hit, self)
        if tracing.enabled:
            _extend((RAW_ALLOC, _now(), self._ctx_label, handle.handle_id, capacity, hit))
        return handle

    def free(self, handle: Handle) -> None:
        """Return ``handle``'s block; using its buffer afterwards is a bug."""
        if handle.freed:
            raise MXNBError(
                f"storage.free: handle {handle.handle_id} on {self.ctx} was already freed"
            )
        handle.freed = True
        capacity = handle.capacity
        pooled = self.pools
        lock = self._lock
        if not lock.acquire(False):
            acquire_lock(lock)
        try:
            if pooled:
                blocks = self.free_lists.get(capacity)
                if blocks is None:
                    blocks = self.free_lists[capacity] = []
                blocks.append(handle.buffer)
                self._pooled += capacity
            self._frees += 1
            self._in_use -= capacity
        finally:
            lock.release()
        handle.buffer = None
        if tracing.enabled:
            _extend((RAW_FREE, _now(), self._ctx_label, handle.handle_id, capacity, pooled))

    def reissue(self, handle: Handle) -> Handle:
        """Lend ``handle``'s block again at once: its free and a pool hit, in one step.

        For a block handed from a dead array straight to a new one (see
        :mod:`mxnb.ndarray`, where the new array's first write is ordered
        after every op on the old one).  Counted and traced as a free to the
        pool followed by an allocation that hits it; returns the new handle.
        """
        if handle.freed:
            raise MXNBError(
                f"storage.free: handle {handle.handle_id} on {self.ctx} was already freed"
            )
        handle.freed = True
        capacity = handle.capacity
        lock = self._lock
        if not lock.acquire(False):
            acquire_lock(lock)
        try:
            self._frees += 1
            self._hits += 1  # bytes in use and the peak are unchanged: one block, two owners
        finally:
            lock.release()
        buffer = handle.buffer
        handle.buffer = None
        new = _new_handle(self.ctx, handle.nbytes, capacity, buffer, True, self)
        if tracing.enabled:
            t = _now()
            _extend((RAW_FREE, t, self._ctx_label, handle.handle_id, capacity, True))
            _extend((RAW_ALLOC, t, self._ctx_label, new.handle_id, capacity, True))
        return new

    def release_all(self) -> int:
        """Drop every pooled block; return the bytes released (0 when nothing is pooled)."""
        with self._lock:
            released = self._pooled
            self.free_lists.clear()
            self._pooled = 0
        return released

    def stats(self) -> StorageStats:
        """Return a snapshot of the counters."""
        with self._lock:
            return replace(
                self._stats,
                bytes_in_use=self._in_use,
                peak_bytes=self._peak,
                pooled_bytes=self._pooled,
                allocs=self._hits + self._misses,
                frees=self._frees,
                pool_hits=self._hits,
                pool_misses=self._misses,
            )

    def reset_peak(self) -> None:
        """Set the peak to the bytes in use now (to measure one phase)."""
        with self._lock:
            self._peak = self._in_use

    def _fresh_buffer(self, nbytes: int, capacity: int) -> Any:
        """A new buffer; on MemoryError give the pool back and try once more (as MXNet does)."""
        try:
            return self._new_buffer(capacity)
        except MemoryError:
            released = self.release_all()
            try:
                return self._new_buffer(capacity)
            except MemoryError:
                with self._lock:  # the allocation did not happen: undo its counting
                    self._misses -= 1
                    self._in_use -= capacity
                raise StorageOutOfMemoryError(
                    f"{self.ctx!r}: out of memory allocating {nbytes} bytes (block of "
                    f"{capacity}) with {self._in_use} bytes in use, after releasing "
                    f"{released} pooled bytes; free arrays you no longer need, or use "
                    "smaller batches"
                ) from None

    def _new_buffer(self, capacity: int) -> Any:
        if self.ctx.device_type == "gpu" and not self.ctx.is_virtual:  # not run on real hardware
            with self._xp.cuda.Device(self.ctx.device_id):
                return self._xp.empty(capacity, dtype="uint8")
        return self._xp.empty(capacity, dtype="uint8")


class NaiveStorageManager(StorageManager):
    """Allocate on every request, drop on every free (MXNet: ``NaiveStorageManager``)."""

    kind = "naive"
    pools = False


class PooledStorageManager(StorageManager):
    """Size classes with per-class free lists (MXNet: ``GPUPooledRoundedStorageManager``)."""

    kind = "pooled"
    pools = True

    def _capacity(self, nbytes: int) -> int:
        return size_class(nbytes)


# ---------------------------------------------------------------------------
# one manager per context
# ---------------------------------------------------------------------------

_KINDS: dict[str, type[StorageManager]] = {
    "naive": NaiveStorageManager,
    "pooled": PooledStorageManager,
}
_managers: dict[Context, StorageManager] = {}
#: id(ctx) -> (ctx, manager): the lookup of every allocation, by identity (hashing a
#: Context costs more than the rest of an allocation); the entry keeps ctx alive.
_managers_by_id: dict[int, tuple[Context, StorageManager]] = {}
_managers_lock = threading.Lock()
_default_kind: str | None = os.environ.get("MXNB_STORAGE_MANAGER", "").strip() or None  # chosen


def default_kind(ctx: Context) -> str:
    """The manager ``ctx`` gets unless one was chosen: ``'pooled'``, or ``'naive'`` on a real GPU.

    cupy's memory pool already keeps every freed block (split, merged, 512-byte
    rounded) and serves the kernels' temporaries from them; a second pool on
    top would hold size-class blocks out of its reach, each up to twice its size.
    """
    if _default_kind is not None:
        return _default_kind
    if ctx.device_type == "gpu" and not ctx.is_virtual:  # not run on real hardware
        return "naive"
    return "pooled"


def _check_kind(kind: str) -> str:
    if kind not in _KINDS:
        raise MXNBError(f"unknown storage manager {kind!r}; use one of {', '.join(_KINDS)}")
    return kind


def set_manager_type(kind: str, ctx: Context | None = None) -> None:
    """Choose ``'pooled'`` or ``'naive'`` for ``ctx``, or for every context (default: :func:`default_kind`).

    Replacing a manager forgets its pool; blocks in use are still freed to the
    manager that lent them.  Env: ``MXNB_STORAGE_MANAGER``.
    """
    global _default_kind
    _check_kind(kind)
    with _managers_lock:
        _managers_by_id.clear()
        if ctx is None:
            _default_kind = kind
            _managers.clear()
        else:
            _managers[Context(ctx)] = _KINDS[kind](Context(ctx))


def get_manager(ctx: Context | None = None) -> StorageManager:
    """Return the storage manager of ``ctx`` (created on first use)."""
    entry = _managers_by_id.get(id(ctx))
    if entry is not None and entry[0] is ctx:
        return entry[1]
    given = ctx
    if ctx is None:
        ctx = Context("cpu", 0)
    with _managers_lock:
        manager = _managers.get(ctx)
        if manager is None:
            manager = _KINDS[_check_kind(default_kind(ctx))](ctx)
            _managers[ctx] = manager
        if len(_managers_by_id) > 256:
            _managers_by_id.clear()
        _managers_by_id[id(given)] = (given, manager)
    return manager


def alloc(nbytes: int, ctx: Context | None = None, exact: bool = False) -> Handle:
    """Return a :class:`Handle` of at least (``exact``: exactly) ``nbytes`` bytes on ``ctx``."""
    return get_manager(ctx).alloc(nbytes, exact)


def alloc_exact(nbytes: int, ctx: Context | None = None) -> Handle:
    """Return a :class:`Handle` of exactly ``nbytes`` bytes on ``ctx`` (no size class)."""
    return get_manager(ctx).alloc(nbytes, exact=True)


def free(handle: Handle) -> None:
    """Give ``handle`` back to the manager of its context."""
    (handle.manager or get_manager(handle.ctx)).free(handle)


def stats(ctx: Context | None = None) -> StorageStats:
    """Return the :class:`StorageStats` of ``ctx`` (default ``cpu(0)``)."""
    return get_manager(ctx).stats()


def release_all(ctx: Context | None = None) -> int:
    """Release pooled blocks of ``ctx`` (or of every context); return the bytes released."""
    if ctx is not None:
        return get_manager(ctx).release_all()
    with _managers_lock:
        managers = list(_managers.values())
    return sum(manager.release_all() for manager in managers)


def reset() -> None:
    """Forget every manager and its counters (tests use this for a clean slate)."""
    with _managers_lock:
        _managers_by_id.clear()
        _managers.clear()
