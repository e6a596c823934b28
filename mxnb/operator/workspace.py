"""An op's scratch arrays, carved from one TEMP_SPACE block: sized in the plan, one block reused.

Idea (MXNet: an operator asks for ``kTempSpace`` once and carves its
workspace by hand, as the convolution lays its ``col_buffer`` beside the
other buffers it needs): the scratch a kernel computes in, besides its
inputs and outputs, is a list of arrays, a *layout*.  Laid end to end, each
at an offset rounded up to :data:`ALIGN` bytes, they fill one block.  The
same layouts give the op's ``temp_space_bytes`` (the memory plan counts it:
``MemoryPlan.workspace_bytes``) and the views the kernel computes in
(:func:`carve`), so the plan and the run cannot disagree.  What a kernel
allocates outside its layouts is a *temporary*: not planned, and on a GPU a
block of its own size that the device pool keeps after the op.

Rule: a pass of an op is one or more *phases*, each a layout
``[(shape, dtype), ...]`` whose arrays never overlap.  Every phase is laid
from the block's start, so a later phase overlaps the earlier ones: what it
shares with them is a common first part (the same shapes give the same
views, contents kept), and the rest of it reuses memory that an earlier phase
no longer needs, so phases are for steps that run one after another: work
split over threads at once (``parallel_chunks``) keeps its arrays in one
phase.  The block holds the largest phase.  Views are valid until
the op returns (the next op that holds the temp space's engine var
overwrites them), and their contents are garbage, so a kernel fills what must
start at zero.  Without a TEMP_SPACE resource in ``ctx.requested`` (an op
called by hand with no resources) the block is a fresh ``xp.empty``.

State kept: none.

Example::

    >>> import numpy as np
    >>> from mxnb.operator.eager import EagerTempSpace
    >>> from mxnb.operator.base import OpContext
    >>> first = [((3, 5), np.float32), ((7,), np.float64)]      # 60 bytes, then 256 + 56
    >>> later = [((3, 5), np.float32), ((100,), np.float32)]    # the same first array, then 400
    >>> layout_bytes(first), layout_bytes(first, later)
    (312, 656)
    >>> (a, b), (a2, c) = carve(OpContext(requested=[EagerTempSpace()]), first, later)
    >>> np.shares_memory(a, b), np.shares_memory(a, a2), np.shares_memory(b, c)
    (False, True, True)
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

__all__ = ["ALIGN", "Layout", "carve", "layout_bytes"]

#: Every array of a layout starts at a multiple of this many bytes (cupy's allocation unit).
ALIGN = 256

#: ``((shape, dtype), ...)``: the scratch arrays of one pass of an op, in order (tuples, so
#: that where each array lies is worked out once per layout: :func:`_placed`).
Layout = Sequence[tuple[tuple[int, ...], Any]]


@functools.lru_cache(maxsize=1024)
def _placed(layout: tuple) -> tuple[tuple[tuple[int, int, np.dtype, tuple[int, ...]], ...], int]:
    """Each array of ``layout`` as (start, stop, dtype, shape) in bytes, and where the last ends.

    Cached: an op asks for the same layouts call after call, and working them
    out was a third of a small pooling's time.
    """
    placed = []
    end = 0
    for shape, dtype in layout:
        dtype = np.dtype(dtype)
        start = -(-end // ALIGN) * ALIGN
        end = start + math.prod(shape) * dtype.itemsize
        placed.append((start, end, dtype, tuple(shape)))
    return tuple(placed), end


def layout_bytes(*phases: Layout) -> int:
    """The bytes of TEMP_SPACE the phases take: the largest one (an op's ``temp_space_bytes``)."""
    return max((_placed(tuple(layout))[1] for layout in phases), default=0)


def carve(ctx: Any, *phases: Layout) -> list[list[Any]]:
    """The arrays of each phase, as views of the op's TEMP_SPACE block (fresh arrays without one).

    ``ctx``: the op's ``OpContext``; its ``requested`` resources are searched
    for the temp space (a resource with ``get_space``; without one, the block
    is a fresh array).  One list of arrays per phase, in order.  The block is
    asked for once, at the largest phase's size (asking again could move it,
    and lose what an earlier phase wrote).
    """
    placed = [_placed(tuple(layout)) for layout in phases]
    total = max((end for _, end in placed), default=0)
    space = next((r for r in ctx.requested or () if hasattr(r, "get_space")), None)
    if space is None:
        block = ctx.xp.empty((total,), dtype=np.uint8)
    else:
        block = space.get_space((total,), np.uint8)
    return [
        [block[start:stop].view(dtype).reshape(shape) for start, stop, dtype, shape in arrays]
        for arrays, _ in placed
    ]
