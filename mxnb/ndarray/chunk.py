"""The chunk under every NDArray, and how its memory goes back when the last array dies.

Idea (MXNet: ``NDArray::Chunk`` in include/mxnet/ndarray.h and its deleter,
``Engine::DeleteVariable`` with the storage free): an NDArray and all its
views share one :class:`_Chunk`, a storage handle plus the engine var that
orders every op on it.  When the chunk is garbage-collected its memory must
go back to the pool, but only after the ops still using it have run: the
general way is ``push_delete(var, ctx, fn=free)``, an engine op that writes
the var, frees the block and marks the var deleted.

Rule: memory is reused only after every op pushed on it has run.  Lighter
paths keep the rule, because a delete op costs about as much as the small op
that made the temporary:

1. idle: no op is pending on the var (most temporaries on the naive engine):
   :meth:`Engine.try_delete_idle` deletes the var now and the block is freed
   here, with no engine op;
2. busy, on a threaded engine: the block is *parked* with its var for the
   next op output of its size, which adopts both (:func:`_park`): its op
   writes the var, so it runs after every op on the block; no delete op, no
   free, no new var, and chains of large ops reuse two or three blocks;
3. busy and not parked: small blocks are deleted in batches, one engine op
   per :data:`BATCH_SIZE` (:func:`_batch_delete`); large ones by ``push_delete``.

``mx.nd.waitall()`` pushes the partial batches and deletes parked blocks
first (:func:`flush_delete_batches`), so storage counters are exact after it.
A trace shows every delete as an op (paths 2 and 3 are off while recording).
A chunk never blocks in ``__del__``: inside an engine switch or the cycle
collector the delete is deferred to the next allocation or ``waitall``.

State kept:
    _delete_batches    id(ctx) -> (ctx, [(var, handle)]) of small chunks awaiting a batch
    _parked            (id(ctx), nbytes) -> [(ctx, var, handle)] of parked blocks
    _deferred_deletes  (var, ctx, free fn) of deletes that could not be pushed yet

Example::

    >>> import mxnb as mx
    >>> before = mx.storage.stats(mx.cpu(5)).bytes_in_use
    >>> c = mx.nd.ones((4,), ctx=mx.cpu(5)) + 1
    >>> del c; mx.nd.waitall()
    >>> mx.storage.stats(mx.cpu(5)).bytes_in_use == before
    True
"""

from __future__ import annotations

import contextlib
import gc
from typing import Any

from .. import engine as _engine_mod
from .. import storage
from ..context import Context

from ..engine import tracing as _trace  # noqa: E402 -- the module: ``enabled`` is read live

__all__ = ["flush_delete_batches"]


class _Chunk:
    """A storage handle and its engine var (MXNet: ``NDArray::Chunk``).

    ``handle`` is None for a chunk over memory someone else owns
    (``NDArray._wrap_raw``); then deleting the chunk frees only the var.
    """

    __slots__ = ("__weakref__", "ctx", "handle", "var")

    def __init__(self, handle: storage.Handle | None, var: Any, ctx: Context) -> None:
        self.handle = handle
        self.var = var
        self.ctx = ctx

    def __del__(self) -> None:
        """Give the memory back once the ops still using it have run (three paths).

        1. Idle: no op is pending on the var (most temporaries on the naive
           engine, many on threaded ones).  :meth:`Engine.try_delete_idle`
           deletes the var at once, exactly as ``push_delete`` would leave it,
           and the block goes back to the pool here: no engine op, which
           would cost about as much as the op that made the temporary.
           Never on the step engine, never while a trace records.
        2. Busy, on a threaded engine: the block and its var are parked for
           the next op output of its size (:func:`_park`); when enough of its
           size are parked, a small block is deleted in a batch
           (:func:`_batch_delete`).
        3. Otherwise ``push_delete(var, ctx, fn=free)``.

        ``__del__`` runs wherever the last reference dies: on a worker thread,
        or inside set_engine while it holds the engine lock.  So it never
        blocks on a lock: it reads the current engine without one, and when
        there is none (an engine switch) or the engine refuses (shut down),
        the delete is deferred to the next allocation.  A cyclic-garbage
        collection may run inside any allocation, even under an engine lock,
        so chunks collected by the cycle collector are deferred too.
        """
        try:
            handle = self.handle
            engine = _engine_mod._engine
            if engine is not None and not _deferred_deletes and not _collecting:
                var = self.var
                try:
                    idle = engine.try_delete_idle(var)
                except AttributeError:  # an engine without it: the general delete below
                    idle = False
                if idle:
                    if handle is not None:  # handle.release(), without a call
                        (handle.manager or storage.get_manager(handle.ctx)).free(handle)
                    return
                if handle is not None and (
                    _park(engine, var, self.ctx, handle)
                    or _batch_delete(engine, var, self.ctx, handle)
                ):
                    return
                fn = None if handle is None else handle.release
                try:
                    engine.push_delete(var, self.ctx, fn=fn)
                    return
                except Exception:  # noqa: BLE001, S110 - a shut-down engine: defer
                    pass
            _deferred_deletes.append(
                (self.var, self.ctx, None if handle is None else handle.release)
            )
        except Exception:  # noqa: BLE001, S110 - interpreter teardown: module globals are gone
            pass


#: Engines on which busy dead chunks are parked or deleted in batches (see _park).
_BATCH_KINDS = frozenset({"threaded", "threaded_per_device"})
#: A busy chunk up to this many bytes joins a batch; a larger one is deleted on its own,
#: so big blocks go back to the pool as soon as their last op has run.
BATCH_MAX_BYTES = 64 * 1024
#: Deletes gathered before one engine op frees them all (so at most this many small
#: chunks, BATCH_SIZE * BATCH_MAX_BYTES bytes, wait for memory back between flushes).
BATCH_SIZE = 16
#: id(ctx) -> (ctx, [(var, handle)]) of dead small chunks whose var still had ops pending
#: (keyed by identity: hashing a Context costs more than the rest of the bookkeeping).
_delete_batches: dict[int, tuple[Context, list[tuple[Any, Any]]]] = {}


def _batch_delete(engine: Any, var: Any, ctx: Context, handle: Any) -> bool:
    """Queue a dead small chunk for a batched delete; True if it was queued.

    On the threaded engines a temporary usually dies while the op that wrote
    it is still queued, so the idle path of ``_Chunk.__del__`` cannot take it and a
    ``push_delete`` would cost one more engine op per temporary.  Most are
    parked (:func:`_park`); the small ones beyond that (<= :data:`BATCH_MAX_BYTES`)
    are gathered per context; every :data:`BATCH_SIZE` of them ONE engine op is
    pushed that writes all their vars (so it runs after every op pushed on
    them) and frees their blocks, marking each var deleted.  ``mx.nd.waitall()``
    pushes the partial batches first (:func:`flush_delete_batches`), so storage
    counters are exact after it.  Not used while tracing (a trace shows every
    delete) or on the naive and step engines.

    Thread safety without a lock (``__del__`` may run anywhere): items are
    appended and popped with single list operations, so each is taken by
    exactly one flush.
    """
    if _trace.enabled or engine.kind not in _BATCH_KINDS or handle.capacity > BATCH_MAX_BYTES:
        return False
    entry = _delete_batches.get(id(ctx))
    if entry is None:
        entry = _delete_batches.setdefault(id(ctx), (ctx, []))
    if entry[0] is not ctx:  # an id reused by a new Context (the old one's batch is empty)
        entry = _delete_batches[id(ctx)] = (ctx, [])
    batch = entry[1]
    batch.append((var, handle))
    if len(batch) >= BATCH_SIZE:
        _push_batch(engine, ctx, batch)
    return True


def _push_batch(engine: Any, ctx: Context, batch: list[tuple[Any, Any]]) -> None:
    """Take every item of ``batch`` and push one op that frees them (deferred on failure)."""
    items = []
    while True:
        try:
            items.append(batch.pop())
        except IndexError:
            break
    if not items:
        return

    def free_batch(run_ctx: Any) -> None:
        for var, handle in items:
            var.deleted = True  # as push_delete: no push on it may follow (none can)
            handle.release(run_ctx)

    try:
        engine.push_sync(free_batch, ctx, (), [var for var, _ in items], 0, "delete:batch")
    except Exception:  # noqa: BLE001 - a shut-down engine: delete one by one later
        _deferred_deletes.extend((var, ctx, handle.release) for var, handle in items)


def flush_delete_batches() -> None:
    """Push the partial delete batches and delete parked blocks (``mx.nd.waitall()`` does).

    After the wait that follows, every dead chunk's memory is back in its pool.
    """
    if not _delete_batches and not _parked:
        return
    engine = _engine_mod.get()
    for ctx, batch in list(_delete_batches.values()):
        if batch:
            _push_batch(engine, ctx, batch)
    for parked in list(_parked.values()):
        while True:
            try:
                ctx, var, handle = parked.pop()
            except IndexError:
                break
            try:
                engine.push_delete(var, ctx, fn=handle.release)
            except Exception:  # noqa: BLE001 - a shut-down engine: delete later
                _deferred_deletes.append((var, ctx, handle.release))


#: A busy dead block waits here, at most this many per (context, size), for the next
#: op output of its size (see _park); beyond that it is batched or deleted on its own.
PARK_MAX = 2
#: Blocks above this many bytes are never parked: what waits for a taker is bounded
#: (a pool's free blocks can be released under memory pressure, parked ones cannot).
PARK_MAX_BYTES = 64 << 20
#: (id(ctx), nbytes) -> [(ctx, var, handle)] of dead chunks whose var had ops pending.
_parked: dict[tuple[int, int], list[tuple[Context, Any, Any]]] = {}


def _park(engine: Any, var: Any, ctx: Context, handle: Any) -> bool:
    """Keep a dead busy block for the next op output of its size; True if it was kept.

    On the threaded engines the pushing thread runs ahead of the workers: a
    temporary (``c`` of ``c = a + b`` in a loop, ``x`` of ``x = x * c - a``
    ...) dies while the ops using it are still queued.  Deleting it costs an
    engine op (or a share of a batched one) that frees the block on a worker,
    and the block returns to the pool only after the pushing thread has
    allocated the next outputs from other blocks: a chain of ten 4 MB ops
    writes ten blocks where the naive engine reuses two, on memory no op
    touched recently.  A parked block is instead handed, with its var, to
    the next output of its size by :func:`_take_parked`: the new array
    adopts the var that orders every op on the block, so the op that writes
    it runs after every op still using the block (the var guards the
    memory, whichever array owns it).  No delete op, no free, no allocation
    and no new var: the block changes owner in the pool's counters
    (:meth:`~mxnb.storage.StorageManager.reissue`).  That is MXNet's co-share
    of the executor's memory plan, made as ops are pushed; with two parked
    per size an op waits at most for the op two temporaries back, so two
    workers still overlap.  A var holding an unraised error is not parked
    (the next owner's ops would be skipped for it).

    Not used while tracing (a trace shows every delete) or on the naive and
    step engines; ``mx.nd.waitall()`` deletes what is still parked
    (:func:`flush_delete_batches`).  No lock: items are appended and popped
    with single list operations.
    """
    if (
        _trace.enabled
        or engine.kind not in _BATCH_KINDS
        or handle.capacity > PARK_MAX_BYTES
        or var.error is not None
    ):
        return False
    key = (id(ctx), handle.nbytes)
    parked = _parked.get(key)
    if parked is None:
        parked = _parked.setdefault(key, [])
    if len(parked) >= PARK_MAX:
        return False
    parked.append((ctx, var, handle))
    return True


#: True on a thread that is running an engine op (an op invoked inside a custom op).
#: Such an invoke never takes a parked block: the block's var may have the running
#: op itself pending on it, and the running op may then wait for the new one (a deadlock).
_inside_an_op = _engine_mod.inside_op


def _take_parked(ctx: Context, nbytes: int) -> tuple[Any, Any] | None:
    """A parked block of ``nbytes`` on ``ctx`` as (new handle, its var), or None.

    The caller makes an array on both and pushes an op that writes it
    before anyone else sees the array (so the write waits for the old ops).
    If that push never happens (Ctrl-C, a shut-down engine), nothing is lost:
    the array dies with the var, and its chunk's delete is ordered by the var
    like any other.  None while a trace records (what was parked before is
    deleted by ``waitall``, so the trace shows it) and inside a running op
    (:func:`_inside_an_op`).
    """
    parked = _parked.get((id(ctx), nbytes))
    if not parked or _trace.enabled or _inside_an_op():
        return None
    try:
        owner, var, handle = parked.pop()
    except IndexError:  # another thread took the last one
        return None
    if owner is not ctx:  # an id reused by a new Context: delete the old block normally
        _deferred_deletes.append((var, owner, handle.release))
        return None
    manager = handle.manager or storage.get_manager(ctx)
    return manager.reissue(handle), var


#: Chunk deletes that could not be pushed when their chunk died: (var, ctx, free fn).
_deferred_deletes: list[tuple[Any, Context, Any]] = []
_collecting = False  # True while the cycle collector runs (see _note_gc)


def _note_gc(phase: str, info: dict) -> None:
    global _collecting
    _collecting = phase == "start"


gc.callbacks.append(_note_gc)


#: Put among the deferred deletes when Ctrl-C is postponed (mxnb.engine.interrupts): every
#: allocation checks that list, so the next one raises the interrupt, at a safe point.
_INTERRUPTED: tuple[Any, Any, Any] = (None, None, None)
_engine_mod.interrupts.postpone_hooks.append(lambda: _deferred_deletes.append(_INTERRUPTED))


def _flush_deferred_deletes() -> None:
    """Push the deletes deferred by :meth:`_Chunk.__del__` (called from normal code paths).

    Raises a postponed KeyboardInterrupt (in the main thread) when it finds one.
    """
    engine = _engine_mod.get()
    while _deferred_deletes:
        try:
            var, ctx, fn = _deferred_deletes.pop(0)
        except IndexError:  # another thread flushed the last one
            break
        if var is None:  # _INTERRUPTED
            if _engine_mod.interrupts.take_pending():
                raise KeyboardInterrupt
            continue
        with contextlib.suppress(Exception):  # a var already deleted: nothing left to do
            engine.push_delete(var, ctx, fn=fn)
