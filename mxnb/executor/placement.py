"""Offline placement: put the walk's in-place chains into blocks knowing every lifetime.

Idea (TFLite's shared-object strategies; "Efficient Memory Management for
Deep Neural Net Inference", Pisarchyk and Lee 2020): before anything runs, the
executor knows when every value is written and last read.  So the chains the
walk (:mod:`.memory`) makes in place — they depend only on pending reads,
not on co-sharing — can be placed as intervals ``[first write, last read]``:

* into the existing block whose other intervals they do not overlap, needing
  the least growth, then wasting the least; else a new block
  (:func:`offline_placements`, largest first or in order of first write);
* or all at byte offsets of one *arena* (:func:`arena_placement`, through
  :mod:`.arena`), so values freed early make room for the large gradients a
  recomputing backward needs late.

Rule: two intervals that overlap never share a block (or overlapping bytes
of the arena).

State kept: none between calls; each placement returns a
:class:`~.memory.Placement`.

Example::

    >>> from mxnb.executor.placement import place_intervals
    >>> storage_of, block_bytes = place_intervals([(64, 0, 2, [0]), (64, 3, 5, [1])])
    >>> storage_of, block_bytes
    ({0: 0, 1: 0}, [64])
"""

from __future__ import annotations

import bisect
import heapq

from .arena import place_at_offsets
from .memory import DEFAULT_MATCH_RANGE, Placement, Planner, lifetime_end
from .steps import ExecGraph

__all__ = ["SCAN_LIMIT", "arena_placement", "chains", "offline_placements", "place_intervals"]

#: Blocks the offline best-fit looks at in each direction before opening a new one.
SCAN_LIMIT = 1024


def chains(
    graph: ExecGraph, inplace: bool
) -> tuple[Placement, list[tuple[int, int, int, list[int]]]]:
    """The walk's in-place chains as ``(size, first step, last step, entries)`` intervals."""
    walk = Planner(graph, inplace, coshare=False, match_range=DEFAULT_MATCH_RANGE).run()
    entries = graph.entries
    last_step = len(graph.steps) - 1
    chains: dict[int, list[int]] = {}
    for entry_id, block in walk.storage_of.items():
        chains.setdefault(block, []).append(entry_id)
    items = []
    for members in chains.values():
        first = min(entries[e].writer for e in members)
        last = max(lifetime_end(entries[e], last_step) for e in members)
        size = max(entries[e].nbytes for e in members)
        items.append((size, first, last, members))
    return walk, items


def arena_placement(graph: ExecGraph, inplace: bool) -> Placement:
    """Every chain at a byte offset of one block (:mod:`.arena`); used for recomputation plans."""
    walk, items = chains(graph, inplace)
    offsets, arena = place_at_offsets(items)
    storage_of = dict.fromkeys(walk.storage_of, 0)
    return Placement(storage_of, [arena] if storage_of else [], walk.inplace_source, offsets)


def offline_placements(graph: ExecGraph, inplace: bool, by_size: bool = True) -> list[Placement]:
    """Co-share with every lifetime known in advance (TFLite's shared-object strategies).

    The in-place chains are those of the walk (they depend only on pending
    reads, not on co-sharing).  Each chain is one interval ``[first write,
    last read]`` and is placed into the existing block whose other intervals
    it does not overlap that needs the least growth, then wastes the least;
    else into a new block.  Two orders are tried:

    * largest first ("greedy by size"): blocks never grow;
    * in order of first write: the same as a linear scan, good for chains of
      layers (VGG, AlexNet inference reach their peak live bytes this way).

    ``by_size=False`` skips the first (the in-order one is O(n log n)).
    """
    walk, items = chains(graph, inplace)
    by_start = sorted(items, key=lambda item: (item[1], -item[0], item[2]))
    placements = [Placement(*_place_in_start_order(by_start), walk.inplace_source)]
    if by_size:
        largest_first = sorted(items, key=lambda item: (-item[0], item[1], item[2]))
        placements.append(Placement(*place_intervals(largest_first), walk.inplace_source))
    return placements


def _place_in_start_order(
    items: list[tuple[int, int, int, list[int]]],
) -> tuple[dict[int, int], list[int]]:
    """:func:`place_intervals` for intervals sorted by start, in O(n log n).

    Taken in order of start, a block is free exactly when its last interval
    ended before the current one starts, so a heap of busy blocks by end and a
    size-sorted list of free blocks replace the scan (same choices).
    """
    block_bytes: list[int] = []
    busy: list[tuple[int, int]] = []  # heap of (last step, block)
    free: list[tuple[int, int]] = []  # sorted (size, block)
    storage_of: dict[int, int] = {}
    for size, first, last, members in items:
        while busy and busy[0][0] < first:
            _, block = heapq.heappop(busy)
            bisect.insort(free, (block_bytes[block], block))
        position = bisect.bisect_left(free, (size, -1))
        if position < len(free):
            _, chosen = free.pop(position)  # the smallest free block at least as large
        elif free:
            _, chosen = free.pop()  # else the largest smaller one, grown
            block_bytes[chosen] = size
        else:
            block_bytes.append(size)
            chosen = len(block_bytes) - 1
        heapq.heappush(busy, (last, chosen))
        for e in members:
            storage_of[e] = chosen
    return storage_of, block_bytes


def place_intervals(
    items: list[tuple[int, int, int, list[int]]],
) -> tuple[dict[int, int], list[int]]:
    """Best-fit placement of ``(size, first, last, entries)`` intervals into blocks, in order.

    Best fit: the smallest free block at least as large (no growth, least
    waste), else the largest free smaller one (least growth), else a new block.
    Blocks are kept sorted by size, so the search starts at the right place
    and stops at the first free block in each direction, or after
    :data:`SCAN_LIMIT` blocks: a long chain keeps thousands of same-sized
    activations alive for backward, and looking at all of them for every
    interval made planning quadratic.
    """
    block_bytes: list[int] = []
    starts: list[list[int]] = []  # per block: sorted interval starts
    ends: list[list[int]] = []  # per block: the matching ends (intervals are disjoint)
    by_size: list[tuple[int, int]] = []  # (size, block), sorted
    storage_of: dict[int, int] = {}

    def free(block: int, first: int, last: int) -> bool:
        position = bisect.bisect_left(starts[block], first)
        # free when the interval starting before ends before us, and the next starts after us
        if position > 0 and ends[block][position - 1] >= first:
            return False
        return position == len(starts[block]) or starts[block][position] > last

    for size, first, last, members in items:
        chosen = -1
        middle = bisect.bisect_left(by_size, (size, -1))
        for position in range(middle, min(len(by_size), middle + SCAN_LIMIT)):
            if free(by_size[position][1], first, last):
                chosen = by_size[position][1]
                break
        else:
            for position in range(middle - 1, max(-1, middle - 1 - SCAN_LIMIT), -1):
                if free(by_size[position][1], first, last):
                    chosen = by_size[position][1]
                    break
        if chosen < 0:
            block_bytes.append(size)
            starts.append([])
            ends.append([])
            chosen = len(block_bytes) - 1
            bisect.insort(by_size, (size, chosen))
        elif block_bytes[chosen] < size:
            by_size.remove((block_bytes[chosen], chosen))
            block_bytes[chosen] = size
            bisect.insort(by_size, (size, chosen))
        position = bisect.bisect_left(starts[chosen], first)
        starts[chosen].insert(position, first)
        ends[chosen].insert(position, last)
        for e in members:
            storage_of[e] = chosen
    return storage_of, block_bytes
