"""Shared helpers for the benchmark scripts: timing, ratios, plain-text tables.

Idea: every benchmark prints figures as ratios against a peer measured in the
same run on the same machine, so numbers from different machines compare.

Example::

    >>> from _util import best_of, table   # scripts in benchmarks/ import it by this name
    >>> seconds = best_of(lambda: sum(range(1000)), repeat=3)
    >>> print(table(["what", "us"], [["sum", f"{seconds * 1e6:.1f}"]]))  # doctest: +SKIP
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor, wait

__all__ = ["ExecutorPeer", "best_of", "ratio", "table"]


def _task() -> None:
    """The peer's no-op task."""


class ExecutorPeer:
    """The peer engine and NDArray figures are compared with: ``ThreadPoolExecutor(2)``.

    Kept open across rounds (its threads are started and warm); one round
    submits ``n`` no-op tasks and waits for all of them, the same shape as a
    benchmark pushing ``n`` ops and waiting for all.
    """

    def __init__(self, workers: int = 2) -> None:
        self.pool = ThreadPoolExecutor(workers)
        self.pool.submit(_task).result()

    def run(self, n: int) -> None:
        """Submit ``n`` no-op tasks, then wait for all of them."""
        wait([self.pool.submit(_task) for _ in range(n)])

    def seconds(self, n: int) -> float:
        """Seconds for one :meth:`run` of ``n`` tasks."""
        start = time.perf_counter()
        self.run(n)
        return time.perf_counter() - start

    def close(self) -> None:
        """Shut the pool down."""
        self.pool.shutdown()


def best_of(fn: Callable[[], object], repeat: int = 3) -> float:
    """Return the fastest of ``repeat`` wall-clock timings of ``fn()`` in seconds."""
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def ratio(value: float, peer: float) -> str:
    """Format ``value / peer`` as ``'0.25x'`` (``'-'`` when the peer is zero)."""
    return f"{value / peer:.2f}x" if peer else "-"


def table(header: Sequence[str], rows: Sequence[Sequence[str]], title: str = "") -> str:
    """Return rows as an aligned text table (first column left, the rest right-aligned)."""
    cells = [list(map(str, header)), *[list(map(str, row)) for row in rows]]
    widths = [max(len(row[i]) for row in cells) for i in range(len(header))]

    def line(row: list[str]) -> str:
        return "  ".join(
            c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(row, widths))
        )

    out = [title] if title else []
    out += [line(cells[0]), "  ".join("-" * w for w in widths), *[line(row) for row in cells[1:]]]
    return "\n".join(out)
