"""``dist_sync`` / ``dist_async``: the worker side of the distributed KVStore, on Ray.

Idea (MXNet: src/kvstore/kvstore_dist.h): a worker is a process started by
:mod:`mxnb.launch` (or any process that sets the job's environment).  Its
store sums its own devices' gradients like ``local`` does, then pushes the sum
to the servers (:mod:`.dist_server`, Ray actors) and pulls the weights back.
The optimizer runs on the servers.

Rules:
    * a small key lives on one server (:func:`~.dist_server.shard_of`); a key
      of more than ``MXNET_KVSTORE_BIGARRAY_BOUND`` elements (1,000,000) is cut
      into one contiguous part per server;
    * arrays travel through Ray's object store (``ray.put``; numpy zero-copy);
    * a push and a pull are asynchronous engine ops on the copy lane
      (``kvstore.push:<key>`` / ``kvstore.pull:<key>``), each writing the key's
      local mirror, so they overlap backward exactly as in the local store and
      a pull after a push sees it;
    * the ops' requests to one server share calls (:mod:`.dist_batch`): one
      call per server is in flight for pushes and one for pulls, and what the
      ops ask meanwhile leaves together in the next call (ps-lite batches a key
      list the same way), so a step costs a few calls per server, not two per key;
    * ``init`` is sent by rank 0; the others' first pull waits for it;
    * every remote wait is bounded (``MXNB_DIST_TIMEOUT``, 60 s): a dead peer
      raises :class:`~.dist_server.DistError` in the engine op, so the next read
      of the array raises it.

The job's environment (set by ``python -m mxnb.launch``):
    MXNB_DIST_ADDRESS      the Ray cluster to join (GCS address)
    MXNB_DIST_JOB          the job's name (servers are actors ``mxnb:<job>:server:<i>``)
    MXNB_DIST_RANK         this worker's rank, 0 .. N-1
    MXNB_DIST_NUM_WORKERS  N;  MXNB_DIST_NUM_SERVERS: the servers
    MXNB_DIST_TIMEOUT      seconds a participant waits for a peer (60)

State kept:
    _seq        key -> pushes sent so far (the step of the next pull)
    _servers    the servers' actor handles
    _pushes, _pulls   per server, the Channel that batches its push / pull requests
    _log        with kv.trace(): the push / pull records of the cluster timeline

Data sharding (each worker reads its own share; docs/scaling.md)::

    it = mx.io.ImageRecordIter(path_imgrec='train.rec', data_shape=(3, 224, 224),
                               batch_size=64, num_parts=kv.num_workers, part_index=kv.rank)
    # NDArrayIter: rows rank::num_workers and the global batch split between the
    # workers; in dist_sync the workers' batch i together is the 1-process batch i,
    # and Module scales rescale_grad by num_workers, so the steps are the same.
    it = mx.io.NDArrayIter(x[kv.rank::kv.num_workers], y[kv.rank::kv.num_workers],
                           batch_size=global_batch // kv.num_workers)

Example (inside ``python -m mxnb.launch -n 2 -s 1 python train.py``)::

    kv = mx.kv.create('dist_sync')
    kv.init('w', mx.nd.zeros(3))
    kv.push('w', mx.nd.ones(3)); out = mx.nd.zeros(3); kv.pull('w', out=out)
    # out == 2 everywhere: both workers' pushes were summed
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from .. import engine as _engine
from ..atomic_file import write_atomically
from ..base import NotSupportedError
from ..context import cpu
from ..ndarray import NDArray
from ..validate import check_count, check_number
from .base import Key, KVStoreError
from .dist_batch import Channel, remote_error, when_all
from .dist_server import (
    NAMESPACE,
    DistError,
    participant,
    server_name,
    shard_of,
    states_from_bytes,
    states_to_bytes,
)
from .local import LocalKVStore

__all__ = ["DistError", "DistKVStore", "JobConfig", "big_array_bound"]


def big_array_bound() -> int:
    """Elements above which a key is split across all servers (``MXNET_KVSTORE_BIGARRAY_BOUND``)."""
    return int(os.environ.get("MXNET_KVSTORE_BIGARRAY_BOUND", "1000000"))


@dataclass(frozen=True)
class JobConfig:
    """Where a worker is: the Ray address, the job, its rank and the job's size."""

    address: str | None
    job: str
    rank: int
    num_workers: int
    num_servers: int
    timeout: float = 60.0

    def __post_init__(self) -> None:
        """The job's numbers, checked once (a NaN timeout would never expire)."""
        owner = "dist job"
        check_count(self.num_workers, "num_workers", owner, low=1)
        check_count(self.num_servers, "num_servers", owner, low=1)
        check_count(self.rank, "rank", owner, low=0, high=self.num_workers - 1)
        check_number(self.timeout, "timeout (MXNB_DIST_TIMEOUT)", owner, low=0, low_open=True)

    @classmethod
    def from_env(cls) -> JobConfig:
        """Read the ``MXNB_DIST_*`` variables (see the module docstring)."""
        env = os.environ
        missing = [
            name
            for name in ("MXNB_DIST_JOB", "MXNB_DIST_RANK", "MXNB_DIST_NUM_WORKERS")
            if name not in env
        ]
        if missing:
            raise DistError(
                f"mx.kv.create('dist_*'): this process is not a worker of a job ({', '.join(missing)} "
                f"unset); start it with python -m mxnb.launch -n WORKERS -s SERVERS <command>"
            )
        try:
            numbers = (
                int(env["MXNB_DIST_RANK"]),
                int(env["MXNB_DIST_NUM_WORKERS"]),
                int(env.get("MXNB_DIST_NUM_SERVERS", "1")),
                float(env.get("MXNB_DIST_TIMEOUT", "60")),
            )
        except ValueError as exc:
            raise DistError(
                f"mx.kv.create('dist_*'): a MXNB_DIST_* variable is not a number: {exc}"
            ) from None
        rank, num_workers, num_servers, timeout = numbers
        return cls(
            address=env.get("MXNB_DIST_ADDRESS") or None,
            job=env["MXNB_DIST_JOB"],
            rank=rank,
            num_workers=num_workers,
            num_servers=num_servers,
            timeout=timeout,
        )

    def environ(self) -> dict[str, str]:
        """The variables that make a process this worker."""
        return {
            "MXNB_DIST_ADDRESS": self.address or "",
            "MXNB_DIST_JOB": self.job,
            "MXNB_DIST_RANK": str(self.rank),
            "MXNB_DIST_NUM_WORKERS": str(self.num_workers),
            "MXNB_DIST_NUM_SERVERS": str(self.num_servers),
            "MXNB_DIST_TIMEOUT": str(self.timeout),
        }


class DistKVStore(LocalKVStore):
    """A worker's handle on the job's servers (``dist_sync``, ``dist_async``, ``dist_device_sync``)."""

    def __init__(self, kvtype: str, config: JobConfig | None = None) -> None:
        import ray

        super().__init__(kvtype)
        self.config = config or JobConfig.from_env()
        self._sync = "async" not in kvtype
        if not ray.is_initialized():
            ray.init(
                address=self.config.address or "auto",
                namespace=NAMESPACE,
                log_to_driver=False,
                configure_logging=False,
            )
        try:
            self._servers = [
                ray.get_actor(server_name(self.config.job, i), namespace=NAMESPACE)
                for i in range(self.config.num_servers)
            ]
        except ValueError as exc:
            raise DistError(
                f"mx.kv.create({kvtype!r}): job {self.config.job!r} has no servers running ({exc})"
            ) from exc
        self._pushes, self._pulls = self._channels()
        self._seq: dict[Key, int] = {}
        self._log: list[dict] | None = None
        self._trace: Any = None

    @property
    def rank(self) -> int:
        """This worker's rank, 0 .. num_workers - 1."""
        return self.config.rank

    @property
    def num_workers(self) -> int:
        """How many workers the job has."""
        return self.config.num_workers

    @property
    def num_servers(self) -> int:
        """How many servers hold the keys."""
        return self.config.num_servers

    @property
    def servers(self) -> list:
        """The job's server actor handles (server ``i`` is ``servers[i]``)."""
        return list(self._servers)

    def _channels(self) -> tuple[list[Channel], list[Channel]]:
        """Per server, the :class:`~.dist_batch.Channel` of pushes and that of pulls."""
        rank, sync = self.rank, self._sync
        pushes = [
            Channel(lambda items, values, s=s: s.push_batch.remote(rank, sync, items, *values))
            for s in self._servers
        ]
        pulls = [
            Channel(lambda items, _, s=s: s.pull_batch.remote(rank, sync, items))
            for s in self._servers
        ]
        return pushes, pulls

    @property
    def calls(self) -> int:
        """Push and pull calls sent to the servers so far (each carries a batch of keys)."""
        return sum(channel.calls for channel in self._pushes + self._pulls)

    # -- where a key lives -----------------------------------------------------------------------
    def placement(self, key: Key, size: int) -> list[tuple[int, int, slice]]:
        """``[(server, part, flat slice), ...]``: one server for a small key, all for a big one."""
        servers = len(self._servers)
        if size <= big_array_bound() or servers == 1:
            return [(shard_of(key, servers), 0, slice(0, size))]
        bounds = np.linspace(0, size, servers + 1).astype(int)
        return [(i, i, slice(bounds[i], bounds[i + 1])) for i in range(servers)]

    # -- remote calls as engine ops ----------------------------------------------------------------
    def _call(self, futures: list, what: str, on_complete: Callable, finish: Callable) -> None:
        """:func:`~.dist_batch.when_all` with this job's bound (the servers' own waits end first)."""
        when_all(futures, what, self.config.timeout + 30.0, on_complete, finish)

    def _remote_op(
        self, name: str, reads: list[NDArray], writes: list[NDArray], start: Callable, priority: int
    ) -> None:
        """Push an async copy-lane op whose body ``start(on_complete)`` issues remote calls."""
        _engine.get().push_async(
            lambda run_ctx, on_complete: start(on_complete),
            cpu(),
            [a._var for a in reads],
            [a._var for a in writes],
            priority,
            name,
            copy=True,
        )

    # -- the hooks of KVStore ------------------------------------------------------------------------
    def _init_value(self, key: Key, value: NDArray) -> NDArray:
        """The local mirror; rank 0 also sends the value to the key's servers.

        Every rank declares the key's shape and dtype to the key's home server
        (:meth:`~.dist_server.KVServer.declare`): workers that disagree get a
        DistError naming both shapes, instead of a server summing their pushes
        by broadcasting.
        """
        mirror = super()._init_value(key, value)
        self._seq[key] = 0
        home = shard_of(key, len(self._servers))
        shape, dtype = tuple(mirror.shape), str(mirror.dtype)

        def start(on_complete: Callable) -> None:
            import ray

            refs = [self._servers[home].declare.remote(key, self.rank, shape, dtype).future()]
            if self.rank == 0:
                flat = mirror._array.reshape(-1)
                refs += [
                    self._servers[s].init.remote(key, part, ray.put(flat[where])).future()
                    for s, part, where in self.placement(key, flat.size)
                ]
            self._call(refs, f"kvstore.init of key {key!r}", on_complete, lambda _: None)

        self._remote_op(f"kvstore.init:{key}", [], [mirror], start, 0)
        return mirror

    def _update(self, key: Key, merged: NDArray, priority: int) -> None:
        """Push the summed value to the servers: ``kvstore.push:<key>`` (async, copy lane)."""
        mirror = self._store[key]
        seq = self._seq[key] = self._seq[key] + 1

        def start(on_complete: Callable) -> None:
            t0 = time.perf_counter()
            flat = merged._array.reshape(-1)  # read until the op completes: no copy needed
            places = self.placement(key, flat.size)
            futures = [
                self._pushes[s].submit((key, part, seq), flat[where], priority)
                for s, part, where in places
            ]

            def finish(_: list) -> None:
                self._record("push", key, places, seq, t0)

            self._call(futures, f"kvstore.push of key {key!r}", on_complete, finish)

        self._remote_op(f"kvstore.push:{key}", [merged], [mirror], start, priority)

    def _broadcast(self, key: Key, outs: list[NDArray], priority: int) -> None:
        """Pull the servers' value into the mirror (``kvstore.pull:<key>``), then copy it out."""
        mirror = self._store[key]
        seq = self._seq[key]

        def start(on_complete: Callable) -> None:
            t0 = time.perf_counter()
            flat = mirror._array.reshape(-1)
            places = self.placement(key, flat.size)
            futures = [
                self._pulls[s].submit((key, part, seq), None, priority) for s, part, _ in places
            ]

            def finish(results: list) -> None:
                for (_, _, where), (value, _) in zip(places, results):
                    flat[where] = value
                self._record("pull", key, places, seq, t0, [v for _, v in results])

            self._call(futures, f"kvstore.pull of key {key!r}", on_complete, finish)

        self._remote_op(f"kvstore.pull:{key}", [], [mirror], start, priority)
        super()._broadcast(key, outs, priority)

    def _record(
        self, kind: str, key: Key, places: list, seq: int, t0: float, versions: list | None = None
    ) -> None:
        log = self._log
        if log is None:
            return
        t1 = time.perf_counter()
        for index, (server, part, _) in enumerate(places):
            entry = {"kind": kind, "key": str(key), "part": part, "server": server}
            entry.update(rank=self.rank, seq=seq, t0=t0, t1=t1)
            if versions is not None:
                entry["version"] = versions[index]
            log.append(entry)

    # -- job-wide calls ---------------------------------------------------------------------------------
    def _get(self, refs: list, what: str) -> list:
        import ray

        try:
            return ray.get(refs, timeout=self.config.timeout + 30.0)
        except Exception as exc:
            raise remote_error(exc, what) from exc

    def barrier(self) -> None:
        """Wait until every pending op here has run and every worker has reached the barrier."""
        _engine.get().wait_for_all()
        self._get([self._servers[0].barrier.remote(self.rank)], "kvstore.barrier")

    def set_optimizer(self, optimizer: Any) -> None:
        """Ship ``optimizer`` to the servers (rank 0 sends; everyone meets at a barrier)."""
        self._optimizer = optimizer
        if self.rank == 0:
            refs = [server.set_optimizer.remote(optimizer) for server in self._servers]
            self._get(refs, "kvstore.set_optimizer")
        self.barrier()

    def _require_optimizer(self, what: str) -> None:
        if self._optimizer is None:
            raise KVStoreError(f"kvstore.{what}: call set_optimizer first (there are no states)")

    def save_optimizer_states(self, fname: str, dump_optimizer: bool = False) -> None:
        """Write every server's optimizer states into one file (call it on one worker)."""
        self._require_optimizer("save_optimizer_states")
        _engine.get().wait_for_all()
        blobs = self._get(
            [server.get_states.remote(dump_optimizer) for server in self._servers],
            "kvstore.save_optimizer_states",
        )
        write_atomically(fname, states_to_bytes(blobs))

    def load_optimizer_states(self, fname: str) -> None:
        """Send the states of a file of :meth:`save_optimizer_states` back to the servers."""
        self._require_optimizer("load_optimizer_states")
        with open(fname, "rb") as stream:
            blobs = states_from_bytes(stream.read(), len(self._servers), fname)
        _engine.get().wait_for_all()
        refs = [server.set_states.remote(b) for server, b in zip(self._servers, blobs)]
        self._get(refs, "kvstore.load_optimizer_states")

    def set_gradient_compression(self, compression_params: dict) -> None:
        """Gradient compression is not supported."""
        raise NotSupportedError("kvstore.set_gradient_compression is not supported in mxnb")

    # -- the cluster timeline ------------------------------------------------------------------------------
    @contextlib.contextmanager
    def trace(self) -> Iterator[Any]:
        """Record this worker's engine ops, its pushes / pulls and the servers' updates."""
        from .. import engine

        self._get([s.start_trace.remote() for s in self._servers], "kvstore.trace")
        self._log = []
        self._trace = engine.trace()
        with self._trace:
            yield self._trace

    def gather_trace(self, path: str | None = None) -> Any:
        """Collect every worker's and server's trace; on rank 0 return the merged
        :class:`~mxnb.kvstore.dist_trace.ClusterTrace` (written to ``path`` as
        Chrome / Perfetto JSON when given), elsewhere None.  Every worker calls it."""
        from .dist_trace import ClusterTrace

        if self._trace is None:
            raise DistError("kvstore.gather_trace: record first, inside `with kv.trace():`")
        _engine.get().wait_for_all()
        mine = participant("worker", self.rank, self._trace, self._log or [])
        self._trace, self._log = None, None
        self._get([self._servers[0].deposit.remote(self.rank, mine)], "kvstore.gather_trace")
        self.barrier()
        if self.rank != 0:
            return None
        deposits = self._get([self._servers[0].take_deposits.remote()], "kvstore.gather_trace")[0]
        servers = self._get([s.collect_trace.remote() for s in self._servers], "gather_trace")
        cluster = ClusterTrace([deposits[r] for r in sorted(deposits)] + list(servers))
        if path is not None:
            cluster.to_chrome_trace(path)
        return cluster

    def __repr__(self) -> str:
        return (
            f"<DistKVStore {self._type!r} rank {self.rank}/{self.num_workers}, "
            f"{len(self._servers)} servers, {len(self._store)} keys>"
        )

