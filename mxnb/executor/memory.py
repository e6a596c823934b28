"""Memory planning: give every internal entry a storage block, sharing as much as is safe.

Idea (MXNet: ``PlanMemory`` and ``GraphAllocator`` in src/nnvm/plan_memory.cc;
the architecture note "Optimizing Memory Consumption in Deep Learning"):
walk the steps in execution order keeping, for every storage block, the
number of reads still pending on the values it holds.

* **in-place**: before a step's outputs get storage, an output the operator
  allows to reuse an input takes that input's block when the step is the
  block's last pending reader, the output is read by someone and the two
  have the same size;
* **co-share**: every other output asks the allocator, which hands back a
  free block of close size — the smallest free block at least as large
  within ``match_range`` (16), else the largest smaller one (grown) — or makes
  a new one; a block whose pending reads reach zero after a step is freed.

Outputs are placed largest first.  External entries (arguments, gradients
bound by the user, aux states, head gradients) are never placed.  Graph
outputs get one extra read so they stay alive.

Better than MXNet: the walk above is MXNet's online allocator, and its
result depends on the match range.  :func:`plan_memory` also tries a few
match ranges and two *offline* placements — every lifetime is known before
anything runs, so in-place chains can be placed, largest first or in order
of writing, into the best-fitting block whose other lifetimes they do not
overlap — and keeps the smallest plan.  Plans with recomputation also try an *arena*
(:mod:`.arena`): every chain at a byte offset of one block, so that values
freed early make room for the large gradients backward needs late.

State kept while planning (one ``_Planner`` per plan):
    storage_of        entry id -> block id
    pending_reads     block id -> reads still to come
    block_bytes       block id -> size (the largest entry it held)
    free              sorted (bytes, block id) of released blocks

Example::

    >>> import mxnb as mx
    >>> x = mx.sym.Variable('x')
    >>> net = mx.sym.Activation(mx.sym.FullyConnected(x, num_hidden=8, name='fc'),
    ...                         act_type='relu', name='relu')
    >>> plan = mx.executor.plan_memory(net, {'x': (4, 16)}, grad_req='null')
    >>> plan.inplace_pairs
    (('fc_output', 'relu_output'),)
"""

from __future__ import annotations

import bisect
import contextlib
import gc
import heapq
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .arena import place_at_offsets
from .flops import step_flops
from .graph import ORDERS, DataEntry, ExecGraph, StepKind, build_graph
from .plan import EXTERNAL_STORAGE_ID, MemoryPlan, PlanEntry, StorageBlock
from .recompute import check_recompute, choose

__all__ = ["DEFAULT_MATCH_RANGE", "plan_best", "plan_graph", "plan_memory", "plan_strategies"]

#: MXNet's default ``NNVM_EXEC_MATCH_RANGE``.
DEFAULT_MATCH_RANGE = 16

_TRIED_MATCH_RANGES = (16, 4, 2, 1)
#: Blocks the offline best-fit looks at in each direction before opening a new one.
SCAN_LIMIT = 1024
#: Above this many steps planning keeps to MXNet's order and drops the largest-first offline
#: placement, whose best-fit scan grows with the square of the steps in a long chain (every
#: forward activation lives until backward): a 4,000-step chain took 10 s to bind.  The
#: walks (every match range) and the in-order placement, O(n log n) each, still compete.
#: Every network of the zoo (the 35-step LSTM has 1,964 training steps) stays below it.
MID_GRAPH_STEPS = 2500
#: Above this many steps (an unrolled RNN of thousands of steps, a 5,000-layer chain)
#: planning tries MXNet's walk and the in-order offline placement only: even the walks of
#: every match range would take seconds.
LARGE_GRAPH_STEPS = 5000


def plan_memory(
    sym: Any,
    shapes: Mapping[str, tuple],
    grad_req: str | Mapping[str, str] | Sequence[str] = "write",
    inplace: bool = True,
    coshare: bool = True,
    type_dict: Mapping[str, Any] | None = None,
    recompute: str | int | None = None,
) -> MemoryPlan:
    """Plan the memory of ``sym`` bound with ``shapes``; return the :class:`MemoryPlan`.

    Parameters
    ----------
    sym : Symbol
        The network.
    shapes : mapping
        Argument shapes by name (``{'data': (32, 784)}``).
    grad_req : str, dict or list
        ``'null'`` plans inference only; ``'write'`` / ``'add'`` (for all or per
        argument) adds the backward steps.
    inplace, coshare : bool
        Switch a strategy off to compare (both off: every entry its own block).
    type_dict : mapping, optional
        Argument dtypes (default float32).
    recompute : None, 'mirror', 'sqrt' or int
        Recompute forward values in backward instead of keeping them
        (:mod:`.recompute`): MXNet's mirror rule, the paper's sqrt(n)
        segments, or a byte budget — the plan with the least recomputation
        whose planned bytes fit (:mod:`.tradeoff`; MemoryBudgetError when none does).

    Example::

        >>> import mxnb as mx
        >>> from mxnb.executor import zoo
        >>> plan = mx.executor.plan_memory(zoo.mlp(), {'data': (32, 784)}, grad_req='write')
        >>> plan.check()
        >>> plan.internal_bytes < plan.naive_internal_bytes
        True
    """
    return plan_best(
        sym, shapes, grad_req, type_dict, inplace=inplace, coshare=coshare, recompute=recompute
    )[1]


def plan_best(
    sym: Any,
    shapes: Mapping[str, tuple],
    grad_req: str | Mapping[str, str] | Sequence[str] = "write",
    type_dict: Mapping[str, Any] | None = None,
    inplace: bool = True,
    coshare: bool = True,
    recompute: str | int | None = None,
    threshold: float | None = None,
) -> tuple[ExecGraph, MemoryPlan]:
    """Build the graph in each topological order of ``ORDERS``, plan each; keep the smallest.

    Returns the graph and its plan (the executor runs the steps in that order).
    MXNet's DFS order wins ties.  ``recompute`` as :func:`plan_memory`;
    ``threshold`` sets the segment size of ``'sqrt'`` (bytes).
    """
    recompute = check_recompute(recompute)
    if isinstance(recompute, int):
        from .tradeoff import plan_within_budget

        return plan_within_budget(sym, shapes, recompute, grad_req, type_dict)
    with _without_gc_pauses():
        return _plan_best(sym, shapes, grad_req, type_dict, inplace, coshare, recompute, threshold)


@contextlib.contextmanager
def _without_gc_pauses() -> Iterator[None]:
    """Hold off Python's cyclic garbage collector while a graph is built and planned.

    Building the graph of a 20,000-op chain makes hundreds of thousands of
    small objects, and each automatic collection walks all of them: half of
    the time went there.  Nothing made here forms a cycle, so collecting
    afterwards loses nothing.

    On the way out the new objects go straight to the oldest generation
    (``gc.freeze()`` then ``gc.unfreeze()``, which moves without walking).
    Left young, the first two collections after a bind walked every one of
    them (0.15 s and 0.17 s for the 20,000-op chain) only to promote them.
    Skipped when the program froze objects of its own, which ``unfreeze``
    would release.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            if gc.get_freeze_count() == 0:
                gc.freeze()
                gc.unfreeze()
            gc.enable()


def _plan_best(
    sym: Any,
    shapes: Mapping[str, tuple],
    grad_req: str | Mapping[str, str] | Sequence[str],
    type_dict: Mapping[str, Any] | None,
    inplace: bool,
    coshare: bool,
    recompute: str | None = None,
    threshold: float | None = None,
) -> tuple[ExecGraph, MemoryPlan]:
    best: tuple[ExecGraph, MemoryPlan] | None = None
    for order in ORDERS if coshare or inplace else ORDERS[:1]:
        graph = build_graph(sym, shapes, grad_req=grad_req, type_dict=type_dict, order=order)
        plan = plan_graph(graph, inplace=inplace, coshare=coshare)
        if best is None or plan.internal_bytes < best[1].internal_bytes:
            best = (graph, plan)
        if len(graph.steps) > MID_GRAPH_STEPS:
            break  # a larger graph is planned in MXNet's order only (see MID_GRAPH_STEPS)
    assert best is not None
    chosen = choose(best[0], recompute, threshold)
    if chosen:
        # Recomputation keeps the plain plan's order: the same steps in the same order (plus
        # the recompute steps), so gradients are summed in the same order, bit for bit.
        forward = best[0].steps[: best[0].num_forward_steps]
        order = "dfs" if len(forward) < 2 else _order_of(sym, shapes, grad_req, type_dict, forward)
        graph = build_graph(
            sym, shapes, grad_req=grad_req, type_dict=type_dict, order=order, recompute=chosen
        )
        graph.recompute = recompute or "attributes"
        best = (graph, plan_graph(graph, inplace=inplace, coshare=coshare))
    return best


def _order_of(
    sym: Any,
    shapes: Mapping[str, tuple],
    grad_req: str | Mapping[str, str] | Sequence[str],
    type_dict: Mapping[str, Any] | None,
    forward: Sequence[Any],
) -> str:
    """The order of ``ORDERS`` whose forward steps are ``forward``."""
    names = [step.name for step in forward]
    dfs = build_graph(sym, shapes, grad_req="null", type_dict=type_dict, order="dfs")
    return "dfs" if [step.name for step in dfs.steps] == names else "reverse_dfs"


def plan_strategies(
    sym: Any,
    shapes: Mapping[str, tuple],
    grad_req: str | Mapping[str, str] | Sequence[str] = "write",
    type_dict: Mapping[str, Any] | None = None,
) -> dict[str, MemoryPlan]:
    """Plan ``sym`` four times: ``'naive'``, ``'inplace'`` only, ``'coshare'`` only and ``'both'``.

    Each is what :func:`plan_memory` returns with those strategies, so they can
    be drawn side by side (``mx.widgets.MemoryPlanView``).

    Example::

        >>> import mxnb as mx
        >>> from mxnb.executor import zoo
        >>> plans = mx.executor.plan_strategies(zoo.mlp(), {'data': (1, 784)}, grad_req='null')
        >>> {name: plan.internal_bytes for name, plan in plans.items()}
        {'naive': 1616, 'inplace': 808, 'coshare': 1024, 'both': 768}
    """
    return {
        name: plan_best(sym, shapes, grad_req, type_dict, inplace=inplace, coshare=coshare)[1]
        for name, inplace, coshare in (
            ("naive", False, False),
            ("inplace", True, False),
            ("coshare", False, True),
            ("both", True, True),
        )
    }


def plan_graph(
    graph: ExecGraph,
    inplace: bool = True,
    coshare: bool = True,
    match_range: int | None = None,
) -> MemoryPlan:
    """Plan an already built :class:`~mxnb.executor.graph.ExecGraph`.

    With ``match_range=None`` a few match ranges and the offline placement are
    tried and the smallest plan is kept; pass a number to get exactly MXNet's
    single walk.
    """
    if match_range is not None or not coshare:
        walk = _Planner(graph, inplace, coshare, match_range or DEFAULT_MATCH_RANGE)
        return _make_plan(graph, walk.run(), inplace, coshare)
    # In-place is an option, not an obligation: an in-place chain can outlive the
    # blocks around it and fit worse, so with both strategies on the co-share-only
    # placements compete too.
    candidates = []
    if len(graph.steps) > LARGE_GRAPH_STEPS:  # MXNet's walk and the O(n log n) placement
        candidates.append(_Planner(graph, inplace, coshare, DEFAULT_MATCH_RANGE).run())
        candidates.append(_offline_placements(graph, inplace, by_size=False)[0])
    else:
        by_size = len(graph.steps) <= MID_GRAPH_STEPS  # (see MID_GRAPH_STEPS)
        for use_inplace in (True, False) if inplace else (False,):
            candidates.extend(
                _Planner(graph, use_inplace, coshare, value).run() for value in _TRIED_MATCH_RANGES
            )
            candidates.extend(_offline_placements(graph, use_inplace, by_size=by_size))
            if graph.recomputed_nodes and len(graph.steps) <= LARGE_GRAPH_STEPS:
                # recomputation frees large values early and needs large gradients late:
                # offsets in one arena let dead small values make room for them
                candidates.append(_arena_placement(graph, use_inplace))
    best = min(candidates, key=lambda result: sum(result.block_bytes))
    return _make_plan(graph, best, inplace, coshare)


@dataclass
class _Placement:
    """Where a planning strategy put every internal entry."""

    storage_of: dict[int, int]  # entry id -> block
    block_bytes: list[int]  # block -> size
    inplace_source: dict[int, int]  # entry id -> the entry whose block it took in place
    offsets: dict[int, int] = field(default_factory=dict)  # entry id -> bytes into its block


def _last_step(entry: DataEntry, last_step: int) -> int:
    if entry.is_output:
        return last_step
    if entry.readers:
        return max(entry.readers)
    return entry.writer


def _chains(
    graph: ExecGraph, inplace: bool
) -> tuple[_Placement, list[tuple[int, int, int, list[int]]]]:
    """The walk's in-place chains as ``(size, first step, last step, entries)`` intervals."""
    walk = _Planner(graph, inplace, coshare=False, match_range=DEFAULT_MATCH_RANGE).run()
    entries = graph.entries
    last_step = len(graph.steps) - 1
    chains: dict[int, list[int]] = {}
    for entry_id, block in walk.storage_of.items():
        chains.setdefault(block, []).append(entry_id)
    items = []
    for members in chains.values():
        first = min(entries[e].writer for e in members)
        last = max(_last_step(entries[e], last_step) for e in members)
        size = max(entries[e].nbytes for e in members)
        items.append((size, first, last, members))
    return walk, items


def _arena_placement(graph: ExecGraph, inplace: bool) -> _Placement:
    """Every chain at a byte offset of one block (:mod:`.arena`); used for recomputation plans."""
    walk, items = _chains(graph, inplace)
    offsets, arena = place_at_offsets(items)
    storage_of = dict.fromkeys(walk.storage_of, 0)
    return _Placement(storage_of, [arena] if storage_of else [], walk.inplace_source, offsets)


def _offline_placements(graph: ExecGraph, inplace: bool, by_size: bool = True) -> list[_Placement]:
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
    walk, items = _chains(graph, inplace)
    by_start = sorted(items, key=lambda item: (item[1], -item[0], item[2]))
    placements = [_Placement(*_place_in_start_order(by_start), walk.inplace_source)]
    if by_size:
        largest_first = sorted(items, key=lambda item: (-item[0], item[1], item[2]))
        placements.append(_Placement(*_place_intervals(largest_first), walk.inplace_source))
    return placements


def _place_in_start_order(
    items: list[tuple[int, int, int, list[int]]],
) -> tuple[dict[int, int], list[int]]:
    """:func:`_place_intervals` for intervals sorted by start, in O(n log n).

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


def _place_intervals(
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


class _Planner:
    """One planning walk over the steps (MXNet: ``PlanMemoryRec`` with a ``GraphAllocator``)."""

    def __init__(self, graph: ExecGraph, inplace: bool, coshare: bool, match_range: int) -> None:
        self.graph = graph
        self.inplace = inplace
        self.coshare = coshare
        self.match_range = match_range
        self.storage_of: dict[int, int] = {}
        self.pending_reads: list[int] = []
        self.block_bytes: list[int] = []
        self.free: list[tuple[int, int, int]] = []  # (bytes, release order, block id)
        self.releases = 0
        self.inplace_source: dict[int, int] = {}
        self.taken: set[int] = set()  # entries already reused in place

    # -- the allocator (MXNet: GraphAllocator::Request / Release) ----------------------
    def request(self, nbytes: int) -> int:
        if self.coshare and self.free:
            free = self.free
            middle = bisect.bisect_left(free, (nbytes, -1, -1))
            if middle < len(free) and free[middle][0] <= nbytes * self.match_range:
                # the smallest free block at least as large
                return self._take(middle, nbytes)
            if middle > 0 and free[middle - 1][0] * self.match_range >= nbytes:
                # else the largest smaller one, grown
                return self._take(middle - 1, nbytes)
        self.block_bytes.append(nbytes)
        self.pending_reads.append(0)
        return len(self.block_bytes) - 1

    def _take(self, position: int, nbytes: int) -> int:
        _, _, block = self.free.pop(position)
        self.block_bytes[block] = max(self.block_bytes[block], nbytes)
        return block

    def release(self, block: int) -> None:
        if self.coshare:
            bisect.insort(self.free, (self.block_bytes[block], self.releases, block))
            self.releases += 1

    # -- the walk -----------------------------------------------------------------------
    def run(self) -> _Placement:
        entries = self.graph.entries
        reads = [len(entry.readers) + (1 if entry.is_output else 0) for entry in entries]
        storage_of = self.storage_of
        pending = self.pending_reads
        for step in self.graph.steps:
            internal_outputs = [out for out in step.outputs if not entries[out].external]
            if self.inplace:
                for source, target in step.inplace_options:
                    self.try_inplace(source, target, reads)
            if len(internal_outputs) > 1:
                internal_outputs.sort(key=lambda e: -entries[e].nbytes)
            for out in internal_outputs:
                if out in storage_of:
                    continue
                block = self.request(entries[out].nbytes)
                storage_of[out] = block
                pending[block] = reads[out]
            for entry_id in step.inputs:
                block = storage_of.get(entry_id)
                if block is None:
                    continue
                pending[block] -= 1
                if pending[block] == 0:
                    self.release(block)
            for out in internal_outputs:
                if reads[out] == 0 and pending[storage_of[out]] == 0:
                    self.release(storage_of[out])
        return _Placement(storage_of, self.block_bytes, self.inplace_source)

    def try_inplace(self, source: int, target: int, reads: list[int]) -> None:
        entries = self.graph.entries
        if target in self.storage_of or entries[target].external:
            return
        if source in self.taken:
            return  # taken already by another output of this step
        block = self.storage_of.get(source)
        if block is None:
            return  # external input: not ours to overwrite
        if self.pending_reads[block] != 1 or reads[target] == 0:
            return  # someone else still reads it, or the output is never read
        if entries[source].nbytes != entries[target].nbytes:
            return
        self.storage_of[target] = block
        self.pending_reads[block] += reads[target]
        self.inplace_source[target] = source
        self.taken.add(source)


def _make_plan(graph: ExecGraph, placement: _Placement, inplace: bool, coshare: bool) -> MemoryPlan:
    """Turn a placement into the MemoryPlan data object (blocks renumbered by first use)."""
    entries = graph.entries
    last = len(graph.steps) - 1
    storage_of = placement.storage_of
    members: dict[int, list[tuple[int, str]]] = {}
    for entry_id, block in storage_of.items():
        entry = entries[entry_id]
        members.setdefault(block, []).append((entry.writer, entry.name))
    order = sorted(members, key=lambda block: min(members[block]))
    renumber = {old: new for new, old in enumerate(order)}
    plan_entries = []
    for entry in entries:
        block = storage_of.get(entry.id)
        first = entry.writer
        final = _last_step(entry, last) if first >= 0 or entry.readers or entry.is_output else -1
        source = placement.inplace_source.get(entry.id)
        plan_entries.append(
            PlanEntry(
                name=entry.name,
                node=entry.node,
                op=entry.op,
                output_index=entry.output_index,
                kind=entry.kind,
                shape=entry.shape,
                dtype=entry.dtype_name,
                nbytes=entry.nbytes,
                storage_id=EXTERNAL_STORAGE_ID if block is None else renumber[block],
                inplace_source=entries[source].name if source is not None else None,
                first_step=first,
                last_step=final,
                offset=placement.offsets.get(entry.id, 0),
                recompute_of=(
                    entries[entry.recompute_of].name if entry.recompute_of is not None else None
                ),
            )
        )
    blocks = tuple(
        StorageBlock(
            id=renumber[old],
            nbytes=placement.block_bytes[old],
            entries=tuple(name for _, name in sorted(members[old])),
        )
        for old in order
    )
    pairs = tuple(
        (entries[source].name, entries[target].name)
        for target, source in sorted(
            placement.inplace_source.items(), key=lambda item: entries[item[0]].writer
        )
    )
    plan = MemoryPlan(
        steps=tuple(step.name for step in graph.steps),
        entries=tuple(plan_entries),
        blocks=blocks,
        inplace_pairs=pairs,
        internal_bytes=sum(block.nbytes for block in blocks),
        naive_internal_bytes=sum(entries[e].nbytes for e in storage_of),
        peak_bytes=0,
        inplace=inplace,
        coshare=coshare,
        grad_req=tuple((name, graph.grad_req[name]) for name in graph.arg_names),
        step_ops=tuple(step.op_type for step in graph.steps),
        recompute=graph.recompute,
        recomputed_nodes=tuple(graph.recomputed_nodes),
        recompute_steps=tuple(s.name for s in graph.steps if s.kind is StepKind.RECOMPUTE),
        forward_flops=sum(step_flops(s, entries) for s in graph.steps[: graph.num_forward_steps]),
        recompute_flops=sum(
            step_flops(s, entries) for s in graph.steps if s.kind is StepKind.RECOMPUTE
        ),
    )
    live = plan.live_bytes()
    object.__setattr__(plan, "peak_bytes", max(live) if live else 0)
    return plan
