"""The parameter server of ``dist_sync`` / ``dist_async``: a Ray actor holding a shard of the keys.

Idea (MXNet: src/kvstore/kvstore_dist_server.h, on ps-lite): every key (or,
for a big array, every part of it) lives on one server.  Workers push summed
gradients and pull weights; the server runs the optimizer, with the very
:func:`~mxnb.kvstore.base.apply_update` and :class:`~mxnb.optimizer.Updater`
a local store runs, on its own mxnb engine.

Rules:
    * sync mode: the pushes of a key are numbered per worker (``seq`` 1, 2, ...);
      the server sums step ``s`` until every worker has pushed it, then applies
      it once (so 2 workers x half a batch == 1 worker x the batch);
    * async mode: each push is applied when it arrives;
    * a pull by worker ``r`` after its push ``s`` waits until that push is
      applied, and returns the value with its version (updates applied so far);
    * calls carry batches (:mod:`.dist_batch`): ``push_batch`` applies a
      worker's pushes of many keys, running their updates on the engine
      together; ``pull_batch`` answers once every key in it is ready;
    * every wait is bounded by ``timeout`` seconds: a worker that died or stalls
      makes the others fail with a :class:`DistError` naming the key, the step
      and the missing ranks, instead of hanging (ps-lite hangs here).

State kept (per server):
    _values    (key, part) -> the stored NDArray
    _pending   (key, part) -> {seq: [sum, ranks]}  (sync pushes not yet complete)
    _version   (key, part) -> updates applied;  _done  (key, part, rank) -> pushes applied
    _updater   the Updater made from the optimizer ``set_optimizer`` shipped
    _log       with tracing on: the push / update records the cluster timeline links

Example (in a Ray driver; see :mod:`mxnb.kvstore.dist` for the worker side)::

    servers = start_servers('job1', num_servers=2, num_workers=2, timeout=60.0)
"""

from __future__ import annotations

import asyncio
import io
import os
import socket
import time
import zlib
from typing import Any

import numpy as np

from .base import KVStoreError, apply_update

__all__ = ["NAMESPACE", "DistError", "KVServer", "server_name", "shard_of", "start_servers"]

#: The Ray namespace of every mxnb job's named actors.
NAMESPACE = "mxnb"


class DistError(KVStoreError):
    """A distributed kvstore failed: a peer died, a wait timed out, or a server refused a call."""


def server_name(job: str, index: int) -> str:
    """The Ray actor name of server ``index`` of job ``job``."""
    return f"mxnb:{job}:server:{index}"


def shard_of(key: Any, num_servers: int) -> int:
    """The server of a small key: a stable hash (crc32; Python's ``hash`` is salted per process)."""
    return zlib.crc32(repr(key).encode()) % num_servers


class KVServer:
    """One server's keys, pending sync pushes, updater and trace log (run as a Ray actor)."""

    def __init__(self, index: int, num_workers: int, timeout: float) -> None:
        self.index = index
        self.num_workers = num_workers
        self.timeout = timeout
        self._values: dict[tuple, Any] = {}
        self._pending: dict[tuple, dict[int, list]] = {}
        self._version: dict[tuple, int] = {}
        self._done: dict[tuple, int] = {}
        self._updater: Any = None
        self._cond: asyncio.Condition | None = None
        self._barrier_count = 0
        self._barrier_generation = 0
        self._log: list[dict] | None = None
        self._trace: Any = None
        self._deposits: dict[int, Any] = {}
        self._declared: dict[Any, tuple] = {}  # key -> (shape, dtype, rank) of its first init
        self._conflicts: dict[Any, str] = {}  # key -> why its workers disagree

    # -- waiting ------------------------------------------------------------------------
    def _condition(self) -> asyncio.Condition:
        if self._cond is None:
            self._cond = asyncio.Condition()
        return self._cond

    async def _wait(self, predicate: Any, what: Any, keys: Any = ()) -> None:
        """Wait until ``predicate()``; after ``timeout`` s raise DistError with ``what()``.

        A conflict declared on one of ``keys`` meanwhile ends the wait with its DistError.
        """
        cond = self._condition()
        async with cond:
            try:
                await asyncio.wait_for(
                    cond.wait_for(lambda: predicate() or self._conflict_of(keys) is not None),
                    self.timeout,
                )
            except asyncio.TimeoutError:
                raise DistError(
                    f"kvstore server {self.index}: {what()} after {self.timeout:g} s; a worker "
                    f"died or stalls (set MXNB_DIST_TIMEOUT to wait longer)"
                ) from None
        self._raise_conflict(keys)

    def _conflict_of(self, keys: Any) -> str | None:
        for key in keys:
            if key in self._conflicts:
                return self._conflicts[key]
        return None

    def _raise_conflict(self, keys: Any) -> None:
        message = self._conflict_of(keys)
        if message is not None:
            raise DistError(message)

    async def _notify(self) -> None:
        cond = self._condition()
        async with cond:
            cond.notify_all()

    # -- keys ---------------------------------------------------------------------------------
    async def declare(self, key: Any, rank: int, shape: tuple, dtype: str) -> None:
        """Worker ``rank`` initialises ``key`` as ``shape`` / ``dtype`` (every rank declares).

        All must agree: the first declaration is the key's; a different one is
        a conflict, raised to its sender now and to every later push or pull of
        the key (by any worker), so no one computes with a mismatched sum.
        """
        shape = tuple(int(dim) for dim in shape)
        first = self._declared.setdefault(key, (shape, dtype, rank))
        if (shape, dtype) != first[:2] and key not in self._conflicts:
            self._conflicts[key] = (
                f"kvstore.init of key {key!r}: worker {rank} gives shape {shape} {dtype} but "
                f"worker {first[2]} gave {first[0]} {first[1]}; every worker must init a key with "
                "the same shape and dtype"
            )
            await self._notify()
        self._raise_conflict([key])

    async def init(self, key: Any, part: int, value: np.ndarray) -> None:
        """Store the first value of ``(key, part)`` (rank 0 sends it)."""
        from .. import ndarray as nd

        slot = (key, part)
        if slot in self._values:
            raise DistError(f"kvstore.init: key {key!r} is already initialised on the servers")
        self._values[slot] = nd.array(value, dtype=value.dtype)
        self._version[slot] = 0
        await self._notify()

    async def push_batch(self, rank: int, sync: bool, items: list[tuple], *values: Any) -> list:
        """Worker ``rank``'s pushes ``items = [(key, part, seq), ...]`` with their ``values``
        (one call per server and batch: :mod:`.dist_batch`); each is applied at once
        (async) or once its step is complete (sync).  Answers None per item."""
        keys = [key for key, _, _ in items]
        self._raise_conflict(keys)
        for key, part, _ in items:
            slot = (key, part)
            if slot not in self._values:
                await self._wait(
                    lambda slot=slot: slot in self._values,
                    lambda key=key: f"push of key {key!r}: it was never initialised",
                    keys,
                )
        for (key, part, _), value in zip(items, values):
            held = self._values[(key, part)].shape
            if tuple(np.shape(value)) != tuple(held):  # never summed by broadcasting
                raise DistError(
                    f"kvstore.push of key {key!r} by worker {rank}: {np.shape(value)} values for "
                    f"a part of {held}; every worker must init and push the key with one shape"
                )
        t0 = time.perf_counter()
        applied: list = []
        for (key, part, seq), value in zip(items, values):
            if sync:
                self._accept(key, part, rank, seq, value, t0, applied)
            else:
                applied.append(self._apply(key, part, self._own(value), [(rank, seq)], t0))
                self._done[(key, part, rank)] = seq
        # The updates of the whole batch run on this server's engine together; pulls (on
        # this loop) see the new versions only after every one of them has run.
        for stored, entry in applied:
            stored.wait_to_read()
            if entry is not None:
                entry["t1"] = time.perf_counter()
        await self._notify()
        return [None] * len(items)

    def _own(self, value: np.ndarray) -> np.ndarray:
        """``value`` (read-only, in the object store) as the merged gradient: the updater may
        write its input, so it gets a copy; a plain assignment only reads it."""
        return value if self._updater is None else np.array(value)

    def _accept(
        self, key: Any, part: int, rank: int, seq: int, value: np.ndarray, t0: float, applied: list
    ) -> None:
        """Add a sync push to its step's sum; apply every step that is now complete."""
        slot = (key, part)
        pending = self._pending.setdefault(slot, {})
        entry = pending.get(seq)
        if entry is None:
            pending[seq] = [value, [(rank, seq)]]  # summed into a new array by the next push
        else:
            if entry[0].flags.writeable:
                np.add(entry[0], value, out=entry[0])
            else:
                entry[0] = np.add(entry[0], value)
            entry[1].append((rank, seq))
        while True:
            step = self._version[slot] + 1
            entry = pending.get(step)
            if entry is None or len(entry[1]) < self.num_workers:
                break
            del pending[step]
            total = entry[0] if entry[0].flags.writeable else self._own(entry[0])
            applied.append(self._apply(key, part, total, entry[1], t0))
            for done_rank, _ in entry[1]:
                self._done[(key, part, done_rank)] = step

    def _apply(
        self, key: Any, part: int, total: np.ndarray, pushes: list, t0: float
    ) -> tuple[Any, dict | None]:
        """Push the update of ``(key, part)`` on the engine (not waited); bump its version."""
        from ..ndarray import NDArray

        slot = (key, part)
        stored = self._values[slot]
        apply_update(key, NDArray._wrap_raw(total), stored, self._updater)
        self._version[slot] += 1
        entry = None
        if self._log is not None:
            entry = {
                "kind": "update",
                "key": str(key),
                "part": part,
                "version": self._version[slot],
                "pushes": sorted(pushes),
                "t0": t0,
                "t1": t0,
            }
            self._log.append(entry)
        return stored, entry

    async def pull_batch(self, rank: int, sync: bool, items: list[tuple]) -> list[tuple]:
        """``[(value, version), ...]`` of ``items = [(key, part, seq), ...]`` once worker
        ``rank``'s push ``seq`` of each is applied.  In sync mode the value is the stored
        array itself: no update can run before every worker has pulled this step (a
        worker's next push of a key waits for its pull), so Ray serializes it unchanged."""

        def ready() -> bool:
            return all(
                (key, part) in self._values and self._done.get((key, part, rank), 0) >= seq
                for key, part, seq in items
            )

        def what() -> str:
            for key, part, seq in items:
                slot = (key, part)
                if slot not in self._values:
                    return f"pull of key {key!r}: it was never initialised"
                if self._done.get((key, part, rank), 0) < seq:
                    waiting = self._pending.get(slot, {}).get(seq)
                    pushed = sorted(r for r, _ in waiting[1]) if waiting else []
                    missing = [r for r in range(self.num_workers) if r not in pushed]
                    return (
                        f"key {key!r} step {seq}: still waiting for the pushes of workers {missing}"
                    )
            return "pull: ready"

        keys = [key for key, _, _ in items]
        self._raise_conflict(keys)
        if not ready():
            await self._wait(ready, what, keys)
        answers = []
        for key, part, _ in items:
            raw = self._values[(key, part)]._array
            answers.append((raw if sync else np.array(raw), self._version[(key, part)]))
        return answers

    # -- optimizer -----------------------------------------------------------------------------
    def set_optimizer(self, optimizer: Any) -> None:
        """Run ``optimizer`` (through an Updater) on every applied push from now on."""
        from ..optimizer import get_updater

        self._updater = get_updater(optimizer)

    def get_states(self, dump_optimizer: bool) -> bytes:
        """This server's optimizer states (the Updater's pickle-free bytes)."""
        if self._updater is None:
            raise DistError("kvstore.save_optimizer_states: call set_optimizer first")
        return self._updater.get_states(dump_optimizer)

    def set_states(self, states: bytes) -> None:
        """Restore states written by :meth:`get_states`."""
        if self._updater is None:
            raise DistError("kvstore.load_optimizer_states: call set_optimizer first")
        self._updater.set_states(states, source=f"kvstore server {self.index}'s states")

    # -- barrier -----------------------------------------------------------------------------------
    async def barrier(self, rank: int) -> None:
        """Return when every worker has called barrier (server 0 hosts it)."""
        generation = self._barrier_generation
        self._barrier_count += 1
        if self._barrier_count == self.num_workers:
            self._barrier_count = 0
            self._barrier_generation += 1
            await self._notify()
            return
        await self._wait(
            lambda: self._barrier_generation > generation,
            lambda: f"barrier: {self.num_workers - self._barrier_count} workers never arrived",
        )

    # -- tracing ------------------------------------------------------------------------------------
    def start_trace(self) -> None:
        """Record this server's engine ops and its update log (idempotent)."""
        from .. import engine

        if self._trace is None:
            self._trace = engine.trace()
            self._trace.attach()
            self._log = []

    def collect_trace(self) -> dict:
        """Stop recording; return this server's part of the cluster trace."""
        if self._trace is None:
            raise DistError("kvstore.gather_trace: the servers were not tracing (use kv.trace())")
        self._trace.detach()
        part = participant("server", self.index, self._trace, self._log or [])
        self._trace, self._log = None, None
        return part

    def deposit(self, rank: int, part: dict) -> None:
        """Keep worker ``rank``'s trace part until rank 0 collects them (server 0)."""
        self._deposits[rank] = part

    def take_deposits(self) -> dict[int, dict]:
        """Hand over and forget the deposited worker parts."""
        deposits, self._deposits = self._deposits, {}
        return deposits

    def held(self) -> dict[tuple, int]:
        """``{(key, part): elements}`` of what this server holds."""
        return {slot: value.size for slot, value in self._values.items()}

    def ping(self) -> int:
        """Liveness probe: returns the server's index."""
        return self.index


def participant(role: str, index: int, trace: Any, log: list[dict]) -> dict:
    """One process's part of a cluster trace: its chrome JSON, comm log and clock offset."""
    return {
        "role": role,
        "index": index,
        "host": socket.gethostname(),
        "pid": os.getpid(),
        # perf_counter + offset = wall-clock seconds: aligns processes and machines.
        "clock_offset": time.time() - time.perf_counter(),
        "chrome": trace.to_chrome_trace(),
        "log": log,
    }


def start_servers(job: str, num_servers: int, num_workers: int, timeout: float) -> list:
    """Start the job's servers as named, detached-from-nothing Ray actors (in the caller's job)."""
    import ray

    actor = ray.remote(num_cpus=0, max_restarts=0)(KVServer)
    servers = [
        actor.options(name=server_name(job, index), namespace=NAMESPACE).remote(
            index, num_workers, timeout
        )
        for index in range(num_servers)
    ]
    ray.get([server.ping.remote() for server in servers], timeout=max(timeout, 60.0))
    return servers


def states_to_bytes(blobs: list[bytes]) -> bytes:
    """One file of every server's states (an ``.npz``, no pickle)."""
    buffer = io.BytesIO()
    np.savez(
        buffer, **{f"server{i}": np.frombuffer(b, dtype=np.uint8) for i, b in enumerate(blobs)}
    )
    return buffer.getvalue()


def states_from_bytes(payload: bytes, num_servers: int, fname: str) -> list[bytes]:
    """Split a file of :func:`states_to_bytes` back into per-server states."""
    try:
        archive = np.load(io.BytesIO(payload), allow_pickle=False)
        blobs = [archive[f"server{i}"].tobytes() for i in range(len(archive.files))]
    except Exception as exc:
        raise DistError(
            f"kvstore.load_optimizer_states: {fname} is not a dist states file ({exc})"
        ) from exc
    if len(blobs) != num_servers:
        raise DistError(
            f"kvstore.load_optimizer_states: {fname} holds the states of {len(blobs)} servers, "
            f"this job has {num_servers}; restart with -s {len(blobs)}"
        )
    return blobs
