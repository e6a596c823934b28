"""Batched calls to a kvstore server: one Ray actor call carries many keys' pushes or pulls.

Idea (MXNet's ps-lite batches too: a push of a key list is one message per
server): a Ray actor call costs a fixed ~0.5-5 ms (scheduling, a round trip
through the raylet, the actor's event loop), far more than moving a small
key's bytes.  A worker's engine ops stay one per key (``kvstore.push:<key>``,
``kvstore.pull:<key>``: the timeline shows them, priorities order them, and a
pull waits for its own key's push only), but their requests to one server go
through a :class:`Channel`, which *group-commits* them: at most ``window``
calls are in flight per server and kind; requests that arrive meanwhile wait
and leave together in the next call.

Rules:
    * nothing waits for a batch to fill: a lone request leaves at once, so a
      gradient pushed early in backward still goes out early (it overlaps the
      rest of backward); batches form only while the server is busy;
    * a batch is ordered by priority (higher first), then by arrival;
    * pushes and pulls have separate channels: a sync pull waits on the
      server for the other workers' pushes and must never hold this worker's
      pushes back (that would deadlock two workers);
    * big values are put in the object store once, when submitted (the copy
      overlaps the call in flight); small ones travel inline in the call;
    * a failed call fails every request of its batch (the server's message names
      the key); each engine op keeps its own bound (``MXNB_DIST_TIMEOUT``):
      :func:`when_all` waits for an op's answers and turns Ray's failures into
      :class:`~.dist_server.DistError` (:func:`remote_error`).

State kept (per channel):
    _queue       requests not sent yet: (priority, arrival, item, value, future)
    _in_flight   calls sent and not answered

Example (what :class:`~mxnb.kvstore.dist.DistKVStore` does per server)::

    pushes = Channel(lambda items, values: server.push_batch.remote(rank, True, items, *values))
    done = pushes.submit(('w', 0, 1), np.ones(3))       # a concurrent.futures.Future
    done.result()                                       # None once the server applied it
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any

import numpy as np

from .dist_server import DistError

__all__ = ["INLINE_BYTES", "Channel", "remote_error", "when_all"]

#: Values of at least this many bytes go through the object store (Ray inlines less itself).
INLINE_BYTES = 100 * 1024


class Channel:
    """One server's requests of one kind, sent ``window`` calls at a time, batched meanwhile.

    ``send(items, values)`` issues the remote call for a batch and returns its
    ObjectRef; the call's result is one answer per item, in order.
    """

    def __init__(self, send: Callable[[list, list], Any], window: int = 1) -> None:
        self._send = send
        self._window = window
        self._queue: list[tuple[int, int, Any, Any, Future]] = []
        self._in_flight = 0
        self._arrivals = itertools.count()
        self._lock = threading.Lock()
        self.calls = 0  # remote calls issued (a test and the benchmark read it)

    def submit(self, item: Any, value: Any = None, priority: int = 0) -> Future:
        """Queue one request (``value`` a numpy array or None); the future gets its answer."""
        import ray

        if isinstance(value, np.ndarray) and value.nbytes >= INLINE_BYTES:
            value = ray.put(value)  # once per array; the batch carries the ref
        future: Future = Future()
        with self._lock:
            self._queue.append((-priority, next(self._arrivals), item, value, future))
            batch = self._take()
        if batch:
            self._issue(batch)
        return future

    def _take(self) -> list:
        """With the lock held: the next batch if a call may leave now, else []."""
        if not self._queue or self._in_flight >= self._window:
            return []
        batch, self._queue = sorted(self._queue, key=lambda r: r[:2]), []
        self._in_flight += 1
        self.calls += 1
        return batch

    def _issue(self, batch: list) -> None:
        try:
            ref = self._send([r[2] for r in batch], [r[3] for r in batch])
        except BaseException as exc:  # noqa: BLE001 - e.g. the actor handle is gone
            self._answered(batch, None, exc)
            return
        ref.future().add_done_callback(lambda fut: self._arrived(batch, fut))

    def _arrived(self, batch: list, fut: Any) -> None:
        try:
            answers = fut.result()
        except BaseException as exc:  # noqa: BLE001 - a remote failure, for every request
            self._answered(batch, None, exc)
        else:
            self._answered(batch, answers, None)

    def _answered(self, batch: list, answers: list | None, error: BaseException | None) -> None:
        with self._lock:
            self._in_flight -= 1
            following = self._take()
        if following:  # the next call leaves before this batch's ops complete
            self._issue(following)
        for index, request in enumerate(batch):
            if error is not None:
                request[4].set_exception(error)
            else:
                request[4].set_result(answers[index])


def remote_error(exc: BaseException, what: str) -> DistError:
    """Turn a Ray failure into a DistError that says what failed."""
    import ray.exceptions as rex

    if isinstance(exc, rex.RayTaskError) and isinstance(exc.cause, DistError):
        return DistError(f"{what}: {exc.cause}")  # the server's message, without Ray's trace
    if isinstance(exc, DistError):
        return exc
    if isinstance(exc, rex.ActorDiedError | rex.ActorUnavailableError | rex.RayActorError):
        return DistError(f"{what}: a kvstore server died ({type(exc).__name__}); the job is lost")
    return DistError(f"{what}: {type(exc).__name__}: {exc}")


def when_all(
    futures: list, what: str, limit: float, on_complete: Callable, finish: Callable
) -> None:
    """When every future (a Ray ref's or a :class:`Channel`'s) resolves call
    ``finish(values)`` then ``on_complete()``; errors and no answer within
    ``limit`` seconds go to ``on_complete(DistError)`` (exactly once): the body of
    a worker's remote engine op."""
    results: list[Any] = [None] * len(futures)
    state = {"left": len(futures), "over": False}
    lock = threading.Lock()

    def end(error: BaseException | None) -> None:
        with lock:
            if state["over"]:
                return
            state["over"] = True
        timer.cancel()
        if error is None:
            try:
                finish(results)
            except BaseException as exc:  # noqa: BLE001 - handed to the engine
                error = exc
        on_complete(error) if error is not None else on_complete()

    def arrived(index: int, future: Any) -> None:
        try:
            results[index] = future.result()
        except BaseException as exc:  # noqa: BLE001 - a remote failure
            end(remote_error(exc, what))
            return
        with lock:
            state["left"] -= 1
            last = state["left"] == 0
        if last:
            end(None)

    timer = threading.Timer(
        limit, lambda: end(DistError(f"{what}: no answer from the servers in {limit:g} s"))
    )
    timer.daemon = True
    timer.start()
    for index, future in enumerate(futures):
        future.add_done_callback(lambda fut, i=index: arrived(i, fut))
