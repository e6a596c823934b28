"""Offset placement: entries of many sizes packed into one block (an arena) at byte offsets.

Idea (TFLite's "greedy by size" offset calculation; Pisarchyk and Lee 2020):
MXNet's allocator hands out whole blocks, one entry at a time per block, so a
large block freed early can later hold only one small entry, and small free
blocks never add up to a large one.  Recomputation makes this worse: it frees
large forward values early and needs large gradients late.  Placing every
lifetime interval at a byte *offset* inside one arena instead — largest
first, each into the lowest gap among the intervals it overlaps in time that
is large enough (the smallest such gap) — lets four dead 25 MiB values make
room for one 100 MiB gradient, and brings the planned bytes close to the peak
of live bytes.

Rule: two entries of the arena whose lifetimes overlap occupy disjoint byte
ranges, except an in-place pair, which shares one range (the walk's in-place
chains are placed as one interval).  Offsets are multiples of
:data:`ALIGNMENT`.

State kept while placing: the intervals placed so far as parallel numpy
arrays (first step, last step, offset, end).

Example::

    >>> place_at_offsets([(100, 0, 3, [0]), (60, 1, 2, [1]), (60, 4, 5, [2])])
    ({0: 0, 1: 128, 2: 0}, 192)
"""

from __future__ import annotations

import numpy as np

__all__ = ["ALIGNMENT", "place_at_offsets"]

#: Byte alignment of every offset (a cache line; any dtype's itemsize divides it).
ALIGNMENT = 64


def _aligned(nbytes: int) -> int:
    return -(-nbytes // ALIGNMENT) * ALIGNMENT


def place_at_offsets(
    items: list[tuple[int, int, int, list[int]]],
) -> tuple[dict[int, int], int]:
    """Place ``(size, first step, last step, entries)`` intervals in one arena, largest first.

    Returns ``({entry id: offset}, arena bytes)``.
    """
    order = sorted(items, key=lambda item: (-item[0], item[1], item[2]))
    count = len(order)
    firsts = np.empty(count, dtype=np.int64)
    lasts = np.empty(count, dtype=np.int64)
    offsets = np.empty(count, dtype=np.int64)
    ends = np.empty(count, dtype=np.int64)
    offset_of: dict[int, int] = {}
    arena = 0
    for placed, (size, first, last, members) in enumerate(order):
        size = _aligned(size)
        overlapping = np.nonzero((firsts[:placed] <= last) & (lasts[:placed] >= first))[0]
        chosen = 0
        if overlapping.size:
            by_offset = np.argsort(offsets[overlapping], kind="stable")
            starts = offsets[overlapping][by_offset]
            reach = np.maximum.accumulate(ends[overlapping][by_offset])
            cursors = np.concatenate(([0], reach[:-1]))  # the lowest free byte before each start
            gaps = starts - cursors
            fits = np.nonzero(gaps >= size)[0]
            # the smallest gap that fits, else above everything this interval overlaps
            chosen = int(cursors[fits[np.argmin(gaps[fits])]]) if fits.size else int(reach[-1])
        firsts[placed], lasts[placed] = first, last
        offsets[placed], ends[placed] = chosen, chosen + size
        arena = max(arena, chosen + size)
        for entry in members:
            offset_of[entry] = chosen
    return offset_of, arena
