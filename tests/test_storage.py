"""Storage managers: size classes, pooled reuse, counters, trace events, per-context managers."""

from __future__ import annotations

import threading

import pytest

import mxnb as mx
from mxnb import storage
from mxnb.base import MXNBError, acquire_lock
from mxnb.engine.tracing import StorageAlloc, StorageFree, Trace


@pytest.fixture
def fresh() -> None:
    """Forget every manager so counters start at zero (handles in use still free to their lender)."""
    storage.reset()
    yield
    storage.set_manager_type("pooled")


def test_size_classes_are_powers_of_two_then_multiples_of_16_mib():
    assert storage.size_class(0) == 64
    assert storage.size_class(64) == 64
    assert storage.size_class(65) == 128
    assert storage.size_class(4_000_000) == 4 * 1024 * 1024
    assert storage.size_class(16 << 20) == 16 << 20
    assert storage.size_class((16 << 20) + 1) == 32 << 20
    assert storage.size_class(40 << 20) == 48 << 20


def test_pooled_manager_reuses_a_freed_block_of_the_same_class(fresh):
    ctx = mx.cpu(7)
    first = storage.alloc(1000, ctx)
    buffer_id = id(first.buffer)
    assert (first.capacity, first.pool_hit) == (1024, False)
    storage.free(first)
    second = storage.alloc(900, ctx)  # same size class (1024): a pool hit, the same buffer
    assert second.pool_hit and id(second.buffer) == buffer_id
    third = storage.alloc(2000, ctx)  # another class: a miss
    assert not third.pool_hit
    stats = storage.stats(ctx)
    assert stats.kind == "pooled"
    assert (stats.allocs, stats.frees, stats.pool_hits, stats.pool_misses) == (3, 1, 1, 2)
    assert stats.bytes_in_use == 1024 + 2048
    assert stats.peak_bytes == 1024 + 2048
    assert stats.pooled_bytes == 0
    storage.free(second)
    storage.free(third)
    stats = storage.stats(ctx)
    assert (stats.bytes_in_use, stats.pooled_bytes, stats.peak_bytes) == (0, 3072, 3072)


def test_release_all_returns_pooled_blocks(fresh):
    ctx = mx.cpu(7)
    handles = [storage.alloc(100, ctx) for _ in range(3)]
    for handle in handles:
        storage.free(handle)
    assert storage.stats(ctx).pooled_bytes == 3 * 128
    assert storage.release_all(ctx) == 3 * 128
    assert storage.stats(ctx).pooled_bytes == 0
    assert not storage.alloc(100, ctx).pool_hit


def test_naive_manager_never_pools(fresh):
    storage.set_manager_type("naive")
    ctx = mx.cpu(7)
    handle = storage.alloc(1000, ctx)
    assert handle.capacity == 1000
    storage.free(handle)
    again = storage.alloc(1000, ctx)
    stats = storage.stats(ctx)
    assert not again.pool_hit
    assert (stats.kind, stats.pool_hits, stats.pooled_bytes, stats.bytes_in_use) == (
        "naive",
        0,
        0,
        1000,
    )


def test_double_free_is_an_error(fresh):
    handle = storage.alloc(10, mx.cpu(7))
    storage.free(handle)
    with pytest.raises(MXNBError, match="already freed"):
        storage.free(handle)


def test_unknown_manager_kind_is_an_error():
    with pytest.raises(MXNBError, match="pooled"):
        storage.set_manager_type("buddy")


def test_alloc_and_free_emit_trace_events_with_hit_or_miss(fresh):
    ctx = mx.cpu(7)
    with Trace() as tr:
        first = storage.alloc(100, ctx)
        storage.free(first)
        second = storage.alloc(100, ctx)
    allocs = tr.events_of(StorageAlloc)
    frees = tr.events_of(StorageFree)
    assert [(e.handle_id, e.nbytes, e.pool_hit) for e in allocs] == [
        (first.handle_id, 128, False),
        (second.handle_id, 128, True),
    ]
    assert [(e.handle_id, e.to_pool, e.ctx) for e in frees] == [(first.handle_id, True, "cpu(7)")]


def test_each_context_has_its_own_manager_virtual_gpus_too(fresh):
    mx.context.set_virtual_gpus(2)
    try:
        assert storage.get_manager(mx.gpu(1)) is not storage.get_manager(mx.gpu(0))
        assert storage.get_manager(mx.gpu(1)) is not storage.get_manager(mx.cpu(1))
        handle = storage.alloc(100, mx.gpu(1))
        assert storage.stats(mx.gpu(1)).bytes_in_use == 128
        assert storage.stats(mx.gpu(1)).ctx == "gpu(1) [virtual]"
        assert storage.stats(mx.gpu(0)).bytes_in_use == 0
        storage.free(handle)
    finally:
        mx.context.set_virtual_gpus(0)


def test_negative_size_is_an_error():
    with pytest.raises(MXNBError, match="nbytes"):
        storage.alloc(-1, mx.cpu(7))


def test_out_of_memory_releases_the_pool_and_retries_then_fails_clearly(fresh, monkeypatch):
    ctx = mx.cpu(7)
    manager = storage.get_manager(ctx)
    storage.free(storage.alloc(100, ctx))  # something in the pool
    real = manager._new_buffer
    failures = iter([True, False])  # the first try fails, the retry after release_all works

    def flaky(capacity):
        if next(failures):
            raise MemoryError
        return real(capacity)

    monkeypatch.setattr(manager, "_new_buffer", flaky)
    handle = storage.alloc(5000, ctx)
    assert handle.capacity == 8192 and storage.stats(ctx).pooled_bytes == 0

    def never(capacity):
        raise MemoryError

    monkeypatch.setattr(manager, "_new_buffer", never)
    before = storage.stats(ctx)
    with pytest.raises(storage.StorageOutOfMemoryError, match=r"cpu\(7\).*70000 bytes"):
        storage.alloc(70000, ctx)
    after = storage.stats(ctx)
    assert (after.bytes_in_use, after.allocs) == (before.bytes_in_use, before.allocs)


def test_equal_contexts_share_one_manager_until_the_kind_changes(fresh):
    """Managers are found by the context's identity first; equal contexts still share one."""
    ctx, equal = mx.cpu(7), mx.Context("cpu", 7)
    manager = storage.get_manager(ctx)
    assert storage.get_manager(equal) is manager
    assert storage.get_manager(ctx) is manager  # the identity entry
    assert storage.get_manager(None) is storage.get_manager(mx.cpu(0))
    storage.set_manager_type("naive", ctx)
    replaced = storage.get_manager(ctx)
    assert replaced is not manager and replaced.kind == "naive"
    assert storage.get_manager(equal) is replaced
    storage.reset()
    assert storage.get_manager(ctx) is not replaced


def test_stats_count_allocations_as_hits_plus_misses(fresh):
    ctx = mx.cpu(7)
    handles = [storage.alloc(100, ctx) for _ in range(3)]
    storage.free(handles.pop())
    handles.append(storage.alloc(90, ctx))  # a hit
    stats = storage.stats(ctx)
    assert (stats.allocs, stats.pool_hits, stats.pool_misses, stats.frees) == (4, 1, 3, 1)
    for handle in handles:
        storage.free(handle)


@pytest.mark.timeout(60)
def test_threads_allocating_and_freeing_at_once_keep_exact_counters(fresh):
    """The pushing thread allocates while workers free (contended acquires nap, see acquire_lock)."""
    ctx = mx.cpu(7)
    manager = storage.get_manager(ctx)

    def churn():
        for _ in range(3000):
            storage.free(storage.alloc(100, ctx))

    threads = [threading.Thread(target=churn) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    stats = manager.stats()
    assert (stats.allocs, stats.frees, stats.bytes_in_use) == (9000, 9000, 0)
    assert stats.pool_hits + stats.pool_misses == 9000
    assert stats.pooled_bytes == 128 * stats.pool_misses
    assert not manager._lock.locked()


def test_acquire_lock_waits_for_the_owner_without_queueing():
    lock = threading.Lock()
    lock.acquire()
    taken = threading.Event()

    def take():
        acquire_lock(lock)
        taken.set()
        lock.release()

    thread = threading.Thread(target=take)
    thread.start()
    assert not taken.wait(0.05)  # held: the other thread naps and retries
    lock.release()
    assert taken.wait(10)
    thread.join()
    assert not lock.locked()


def test_reissue_hands_a_block_to_a_new_handle_as_a_free_and_a_hit(fresh):
    ctx = mx.cpu(7)
    old = storage.alloc(1000, ctx)
    buffer = old.buffer
    with Trace() as tr:
        new = storage.get_manager(ctx).reissue(old)
    assert new.buffer is buffer and new.pool_hit and new.handle_id != old.handle_id
    assert old.freed and old.buffer is None
    stats = storage.stats(ctx)
    assert (stats.allocs, stats.frees, stats.pool_hits, stats.bytes_in_use) == (2, 1, 1, 1024)
    assert [e.handle_id for e in tr.events_of(StorageFree)] == [old.handle_id]
    assert [(e.handle_id, e.pool_hit) for e in tr.events_of(StorageAlloc)] == [
        (new.handle_id, True)
    ]
    with pytest.raises(MXNBError, match="already freed"):
        storage.get_manager(ctx).reissue(old)
    storage.free(new)


def test_a_real_gpu_defaults_to_the_naive_manager_over_cupys_pool(monkeypatch):
    """cupy's memory pool is a real GPU's pool; CPU and virtual GPU contexts pool themselves."""
    import mxnb.context as context

    monkeypatch.setattr(storage, "_default_kind", None)
    assert storage.default_kind(mx.cpu()) == "pooled"
    monkeypatch.setattr(context, "_virtual_gpus", 1)
    assert mx.gpu(0).is_virtual and storage.default_kind(mx.gpu(0)) == "pooled"
    monkeypatch.setattr(context, "_real_gpu_count", lambda: 1)  # as if cupy saw one device
    assert not mx.gpu(0).is_virtual and storage.default_kind(mx.gpu(0)) == "naive"
    monkeypatch.setattr(storage, "_default_kind", "pooled")  # MXNB_STORAGE_MANAGER / set_manager_type
    assert storage.default_kind(mx.gpu(0)) == "pooled"
