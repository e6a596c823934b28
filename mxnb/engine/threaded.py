"""Threaded engines: ready ops go to worker pools.

Idea (MXNet: ``ThreadedEngine`` / ``ThreadedEnginePooled`` /
``ThreadedEnginePerDevice`` in src/engine/): the var/op bookkeeping of
:mod:`mxnb.engine.base` decides *when* an op may run; these engines decide
*where*.  A ready op is put on the queue of a worker pool; a worker takes
it, runs it, and books its completion, which may make successors ready.  The
first successor that belongs to the same pool runs next on the same worker
(no queue round trip: a chain stays on one thread, warm in cache).

Rule: within a pool, a ready op with a larger ``priority`` is taken first;
equal priorities go in the order they became ready.

Pools:
    threaded              one shared pool (``cpu/0`` …) for every context
    threaded_per_device   ``cpu(0)/i`` for CPU contexts (``MXNB_CPU_WORKER_NTHREADS``,
                          default max(2, cores)); ``gpu(N)/i`` per GPU context
                          (``MXNB_GPU_WORKER_NTHREADS``, default 2; virtual GPUs get
                          their own pool too, its workers on a core of their own when
                          there are cores enough, see :mod:`.affinity`; a real GPU
                          worker launches on its own cupy stream and records an event,
                          :mod:`.device_events` — written for cupy, not yet run on a
                          GPU); ``copy/i``
                          for ops pushed with ``copy=True``
                          (``MXNB_COPY_WORKER_NTHREADS``, default 1)

Run-ahead bound: a pushing thread keeps the GIL for a whole switch interval
and may run hundreds of ops ahead of the workers.  A push that leaves more
than ``run_ahead`` ops pending (``MXNB_ENGINE_RUN_AHEAD``, read when the
engine is created, like the worker counts; default 128) releases the GIL
once so the workers catch up; it never waits for them.  Ops that die young
stay out of the cycle collector's older generations, which was a quarter of
the cost of a small NDArray op.

The pusher helps (the idle fast path of :mod:`mxnb.engine.idle`, as the
reference engine of ``benchmarks/`` runs ops in the pushing thread): while the
CPU pool has more than ``behind`` ready ops queued (default 64), its workers
are behind, and a push from outside any op, on a CPU context, with priority 0
and not a copy, whose vars are all idle runs at once in the pushing thread
(worker name ``<pool>/push``), as on the naive engine, instead of joining the
queue.  Tiny ops then cost what they cost on the naive engine, not a queue
round trip each; a large op pushed then holds the pusher for its run (the
workers had 64 ops to do anyway).  Any other push takes the rule.
``tests/engine/test_pusher_helps.py`` runs random workloads with the pusher
always helping and compares them with the naive engine's runs.

Waiting inside an op: a worker that calls ``wait_for_var`` / ``wait_for_all``
keeps taking ready ops (from its own pool first, then any) and runs them
inline until its wait is met, so nested waits never starve the pool.

State kept:
    _pools     label -> _WorkerPool (queue of ready ops, a heap for prioritised ones, threads)
    _helped    the CPU pool, whose workers a pushing thread helps when they are behind
    _run_contexts  the pushing thread's RunContexts (worker ``<pool>/push``)

Example::

    >>> import mxnb as mx
    >>> eng = mx.engine.create('threaded_per_device')
    >>> v = eng.new_var(name='v')
    >>> out = []
    >>> _ = eng.push_sync(lambda rctx: out.append(rctx.worker), mx.cpu(), mutate_vars=[v])
    >>> eng.wait_for_var(v); out[0].startswith('cpu(0)/')
    True
    >>> eng.shutdown()
"""

from __future__ import annotations

import heapq
import logging
import os
import queue
import threading
from collections.abc import Callable
from functools import partial
from typing import Any

from ..context import Context
from .affinity import pin_current_thread, virtual_gpu_cores
from .base import Engine, Opr, RunContextCache, Var
from .device_events import DeviceEvents
from .idle import IdleFastPath
from .waiting import _local

__all__ = ["ThreadedEngine", "ThreadedEnginePerDevice", "default_cpu_workers"]

logger = logging.getLogger("mxnb.engine")

_PRIORITY_TOKEN = object()  # queue item: take the best op from the pool's heap
_STOP = None  # queue item: the worker that takes it exits


def _env_int(name: str, default: int) -> int:
    text = os.environ.get(name, "").strip()
    if not text:
        return default
    try:
        value = int(text)
    except ValueError:
        logger.warning("%s=%r is not a whole number; using %d", name, text, default)
        return default
    return max(1, value)


def default_cpu_workers() -> int:
    """CPU worker threads: ``MXNB_CPU_WORKER_NTHREADS`` or max(2, cores)."""
    return _env_int("MXNB_CPU_WORKER_NTHREADS", max(2, os.cpu_count() or 2))


class _WorkerPool:
    """Ready ops for one device and the threads that run them.

    Ops with priority 0 go straight on a ``SimpleQueue``; others go on a heap
    and a token goes on the queue.  A worker that takes anything while the
    heap is non-empty swaps it for the heap's best, so the heap size always
    equals the tokens outstanding and priorities are honoured.
    """

    def __init__(
        self,
        engine: ThreadedEngine,
        label: str,
        nthreads: int,
        streams: Any = None,
        cores: set[int] | None = None,
    ):
        self.label = label
        self.cores = cores  # the cores its workers run on (a virtual GPU's; None: free)
        self.queue: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self.heap: list[tuple[int, int, Opr]] = []
        self.heap_lock = threading.Lock()
        self.threads: list[threading.Thread] = []
        for index in range(nthreads):
            stream = streams[index] if streams else None
            thread = threading.Thread(
                target=engine._worker_main,
                args=(self, index, stream),
                name=f"mxnb-engine {label}/{index}",
                daemon=True,
            )
            self.threads.append(thread)
        for thread in self.threads:
            thread.start()

    def submit(self, opr: Opr) -> None:
        if opr.priority:
            with self.heap_lock:
                heapq.heappush(self.heap, (-opr.priority, opr.id, opr))
            self.queue.put(_PRIORITY_TOKEN)
        else:
            self.queue.put(opr)

    def take(self, block: bool = True) -> Opr | None:
        """Return the next op (None: stop); raises ``queue.Empty`` when not blocking."""
        item: Any = self.queue.get(block)
        if item is _PRIORITY_TOKEN or (self.heap and item is not _STOP):
            with self.heap_lock:
                if item is not _PRIORITY_TOKEN:
                    heapq.heappush(self.heap, (-item.priority, item.id, item))  # type: ignore[misc, union-attr]  # an Opr here
                item = heapq.heappop(self.heap)[2]
        return item

    def stop(self, timeout: float) -> None:
        for _ in self.threads:
            self.queue.put(_STOP)
        current = threading.current_thread()
        for thread in self.threads:
            if thread is not current:
                thread.join(timeout)


class ThreadedEngine(IdleFastPath):
    """One shared pool of worker threads for every context (MXNet: ``ThreadedEnginePooled``)."""

    kind = "threaded"
    _helper_poll = 0.002  # a waiting worker re-checks its queue this often
    run_ahead = 128  # the default; each engine reads MXNB_ENGINE_RUN_AHEAD when created
    #: Ready ops queued on the CPU pool beyond which a push of an idle op runs it at once.
    behind: int | float = 64

    def __init__(self, nthreads: int | None = None) -> None:
        super().__init__()
        self.run_ahead = _env_int("MXNB_ENGINE_RUN_AHEAD", type(self).run_ahead)
        self._pools_lock = threading.Lock()
        self._pools: dict[str, _WorkerPool] = {}
        self._nthreads = nthreads or default_cpu_workers()
        self._device_events = DeviceEvents()  # GPU workers' completions (.device_events)
        self._streams: list[Any] = []  # every GPU worker's stream
        self._make_pools()
        self._run_contexts = RunContextCache(None, f"{self._helped.label}/push")  # the pusher's

    def _make_pools(self) -> None:
        """Start the pools that exist from the beginning: here, the one shared pool."""
        self._shared = self._helped = self._make_pool("cpu", self._nthreads)

    def _make_pool(
        self, label: str, nthreads: int, streams: Any = None, cores: set[int] | None = None
    ) -> _WorkerPool:
        pool = _WorkerPool(self, label, nthreads, streams, cores)
        self._pools[label] = pool
        return pool

    def _pool_for(self, opr: Opr) -> _WorkerPool:
        return self._shared

    def _dispatch(self, opr: Opr) -> None:
        self._pool_for(opr).submit(opr)

    def workers(self) -> list[str]:
        """Return the worker names (as traces show them), pool by pool."""
        return [
            f"{label}/{index}"
            for label, pool in self._pools.items()
            for index in range(len(pool.threads))
        ]

    # -- the worker loop -----------------------------------------------------
    def _worker_main(self, pool: _WorkerPool, index: int, stream: Any) -> None:
        _local.stack = []
        _local.pool = pool
        _local.engine = self
        if pool.cores is not None:
            pin_current_thread(pool.cores)
        contexts = RunContextCache(stream, f"{pool.label}/{index}", threading.get_ident())
        take = pool.take
        while True:
            try:
                opr = take()
            except BaseException:  # noqa: BLE001 - a worker never dies of a signal
                logger.debug("worker %s/%d: interrupted while idle", pool.label, index)
                continue
            if opr is None:
                return
            self._run_chain(opr, pool, contexts)

    def _run_chain(self, opr: Opr | None, pool: _WorkerPool, contexts: RunContextCache) -> None:
        """Run ``opr``, then the first successor for this pool, and so on."""
        while opr is not None:
            rctx = contexts.last  # a chain mostly stays in one context
            if rctx is None or rctx.ctx is not opr.ctx:
                rctx = contexts.get(opr.ctx)
            try:
                stream = contexts.stream
                if stream is not None and opr.fn is not None and not opr.is_async:
                    # a GPU worker: launch on its stream and record an event (.device_events)
                    opr.fn = partial(self._device_events.run, opr, opr.fn, stream)
                ready = self._run(opr, rctx, rctx)
                if stream is not None and opr.is_async:
                    stream.synchronize()  # an async op completes itself: its kernels must be done
            except BaseException:
                logger.exception("op '%s' raised through the worker", opr.name)
                ready = None
            done, opr = opr, None
            if ready:
                for successor in ready:
                    if opr is None and (
                        (successor.ctx is done.ctx and successor.copy is done.copy)  # same pool
                        or self._pool_for(successor) is pool
                    ):
                        opr = successor
                    else:
                        self._dispatch(successor)

    # -- the pusher helps (see the module docstring) ----------------------------
    def _push_opr(
        self,
        fn: Callable[..., Any] | None,
        is_async: bool,
        ctx: Context,
        const: tuple[Var, ...],
        mutate: tuple[Var, ...],
        priority: int,
        name: str,
        copy: bool,
        delete: tuple[Var, ...] | None = None,
    ) -> int:
        """Push by the rule; while the CPU workers are behind, try the idle fast path first."""
        if (
            self._helped.queue.qsize() > self.behind
            and not priority
            and not copy
            and ctx.device_type == "cpu"
            and not _local.__dict__.get("stack")
        ):
            return self._push_idle(fn, is_async, ctx, const, mutate, priority, name, copy, delete)
        return Engine._push_opr(
            self, fn, is_async, ctx, const, mutate, priority, name, copy, delete
        )

    def _run_successors(self, ready: list[Opr]) -> None:
        for opr in ready:
            self._dispatch(opr)

    # -- waiting inside an op --------------------------------------------------
    def _help_once(self) -> bool:
        if getattr(_local, "engine", None) is not self:
            return False  # not one of our workers: just wait
        own: _WorkerPool = _local.pool
        for pool in (own, *[p for p in list(self._pools.values()) if p is not own]):
            try:
                opr = pool.take(block=False)
            except queue.Empty:
                continue
            if opr is None:  # a stop request: put it back for the worker loop
                pool.queue.put(_STOP)
                return False
            contexts = RunContextCache(None, f"{own.label}/help", threading.get_ident())
            self._run_chain(opr, pool, contexts)
            return True
        return False

    def _poll_interval(self) -> float:
        if getattr(_local, "engine", None) is self:
            return self._helper_poll
        return self._wait_poll

    def _stop_workers(self) -> None:
        for pool in list(self._pools.values()):
            pool.stop(timeout=5.0)


class ThreadedEnginePerDevice(ThreadedEngine):
    """A CPU pool, a pool per GPU context and copy workers (MXNet: ``ThreadedEnginePerDevice``)."""

    kind = "threaded_per_device"
    #: Makes the streams of a *virtual* GPU's workers, ``(device_id, count) -> streams``
    #: (None: none, the host runs its kernels); tests give stand-in streams to check the
    #: device-event protocol, and ``staticmethod(device_timing.host_streams)`` shows the
    #: device lane of a trace without a GPU (notebook 02).  A real GPU's workers always get
    #: cupy streams.
    virtual_streams: Callable[[int, int], list[Any]] | None = None

    def _make_pools(self) -> None:
        """Start the CPU pool; the copy pool and GPU pools start when first used."""
        self._copy: _WorkerPool | None = None
        self._gpus: dict[int, _WorkerPool] = {}
        self._cpu = self._helped = self._make_pool("cpu(0)", self._nthreads)

    def wait_for_var(self, var: Var, timeout: float | None = None) -> None:
        """:meth:`Engine.wait_for_var`, then, on a GPU, the var's last write on the device."""
        super().wait_for_var(var, timeout)
        if self._streams:
            self._device_events.host_wait(var)

    def wait_for_all(self, timeout: float | None = None) -> None:
        """:meth:`Engine.wait_for_all`, then, on a GPU, everything launched on its streams."""
        super().wait_for_all(timeout)
        if self._streams:
            self._device_events.host_wait_all(self._streams)

    def _pool_for(self, opr: Opr) -> _WorkerPool:
        if opr.copy:
            return self._copy or self._copy_pool()
        ctx = opr.ctx
        if ctx.device_type == "gpu":
            pool = self._gpus.get(ctx.device_id)
            return pool or self._gpu_pool(ctx)
        return self._cpu

    def _copy_pool(self) -> _WorkerPool:
        with self._pools_lock:
            if self._copy is None:
                self._copy = self._make_pool("copy", _env_int("MXNB_COPY_WORKER_NTHREADS", 1))
            return self._copy

    def _gpu_pool(self, ctx: Context) -> _WorkerPool:
        with self._pools_lock:
            pool = self._gpus.get(ctx.device_id)
            if pool is None:
                nthreads = _env_int("MXNB_GPU_WORKER_NTHREADS", 2)
                streams = cores = None
                if ctx.is_virtual:
                    cores = virtual_gpu_cores(ctx.device_id)
                    if self.virtual_streams is not None:
                        streams = self.virtual_streams(ctx.device_id, nthreads)
                else:
                    streams = _cupy_streams(ctx.device_id, nthreads)
                self._streams.extend(streams or ())
                pool = self._make_pool(str(ctx), nthreads, streams, cores)
                self._gpus[ctx.device_id] = pool
            return pool


def _cupy_streams(device_id: int, count: int) -> list[Any] | None:
    """One cupy stream per worker of a real GPU (None without cupy).

    Blocking streams: an op a host thread runs on the legacy default stream is
    ordered against them by the device (see :mod:`.device_events`).
    """
    try:
        import cupy  # type: ignore[import-not-found]
    except ImportError:
        return None
    with cupy.cuda.Device(device_id):
        return [cupy.cuda.Stream(non_blocking=False) for _ in range(count)]
