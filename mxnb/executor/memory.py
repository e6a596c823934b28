"""Memory planning's walk: give every internal entry a storage block, sharing as much as is safe.

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

Beside this chapter: :mod:`.placement` places the same in-place chains
offline (every lifetime is known before anything runs), and
:mod:`.tournament` tries the walk with a few match ranges against those
placements and keeps the smallest plan.  :func:`make_plan` turns any
placement into the :class:`~.plan.MemoryPlan` data object.

State kept while planning (one ``Planner`` per walk):
    storage_of        entry id -> block id
    pending_reads     block id -> reads still to come
    block_bytes       block id -> size (the largest entry it held)
    free              sorted (bytes, release order, block id) of released blocks

Example::

    >>> import mxnb as mx
    >>> from mxnb.executor.graph import build_graph
    >>> x = mx.sym.Variable('x')
    >>> net = mx.sym.Activation(mx.sym.FullyConnected(x, num_hidden=8, name='fc'),
    ...                         act_type='relu', name='relu')
    >>> graph = build_graph(net, {'x': (4, 16)}, grad_req='null')
    >>> plan = make_plan(graph, Planner(graph).run(), inplace=True, coshare=True)
    >>> plan.inplace_pairs
    (('fc_output', 'relu_output'),)
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field

from .flops import step_flops
from .plan import EXTERNAL_STORAGE_ID, MemoryPlan, PlanEntry, StorageBlock
from .steps import DataEntry, ExecGraph, StepKind

__all__ = [
    "DEFAULT_MATCH_RANGE",
    "Placement",
    "Planner",
    "lifetime_end",
    "make_plan",
    "workspace_bytes",
]

#: MXNet's default ``NNVM_EXEC_MATCH_RANGE``.
DEFAULT_MATCH_RANGE = 16


@dataclass
class Placement:
    """Where a planning strategy put every internal entry."""

    storage_of: dict[int, int]  # entry id -> block
    block_bytes: list[int]  # block -> size
    inplace_source: dict[int, int]  # entry id -> the entry whose block it took in place
    offsets: dict[int, int] = field(default_factory=dict)  # entry id -> bytes into its block


def lifetime_end(entry: DataEntry, last_step: int) -> int:
    """The last step ``entry`` must stay alive for (graph outputs: the very last)."""
    if entry.is_output:
        return last_step
    if entry.readers:
        return max(entry.readers)
    return entry.writer


class Planner:
    """One planning walk over the steps (MXNet: ``PlanMemoryRec`` with a ``GraphAllocator``)."""

    def __init__(
        self,
        graph: ExecGraph,
        inplace: bool = True,
        coshare: bool = True,
        match_range: int = DEFAULT_MATCH_RANGE,
    ) -> None:
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
        """A block for ``nbytes``: a free one of close size, or a new one."""
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
        """Return ``block`` to the free list (its last pending read is done)."""
        if self.coshare:
            bisect.insort(self.free, (self.block_bytes[block], self.releases, block))
            self.releases += 1

    # -- the walk -----------------------------------------------------------------------
    def run(self) -> Placement:
        """Walk the steps once; return where every internal entry went."""
        entries = self.graph.entries
        reads = [len(entry.readers) + (1 if entry.is_output else 0) for entry in entries]
        storage_of = self.storage_of
        pending = self.pending_reads
        for step in self.graph.steps:
            internal_outputs = [out for out in step.outputs if not entries[out].external]
            if self.inplace:
                for source, target in self.graph.sized_inplace_options(step):
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
                read_block = storage_of.get(entry_id)
                if read_block is None:
                    continue
                pending[read_block] -= 1
                if pending[read_block] == 0:
                    self.release(read_block)
            for out in internal_outputs:
                if reads[out] == 0 and pending[storage_of[out]] == 0:
                    self.release(storage_of[out])
        return Placement(storage_of, self.block_bytes, self.inplace_source)

    def try_inplace(self, source: int, target: int, reads: list[int]) -> None:
        """Give ``target`` the block of ``source`` when the in-place rule allows it."""
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
        self.storage_of[target] = block
        self.pending_reads[block] += reads[target]
        self.inplace_source[target] = source
        self.taken.add(source)


def make_plan(graph: ExecGraph, placement: Placement, inplace: bool, coshare: bool) -> MemoryPlan:
    """Turn a placement into the MemoryPlan data object (blocks renumbered by first use)."""
    entries = graph.entries
    storage_of = placement.storage_of
    members: dict[int, list[tuple[int, str]]] = {}
    for entry_id, block in storage_of.items():
        entry = entries[entry_id]
        members.setdefault(block, []).append((entry.writer, entry.name))
    order = sorted(members, key=lambda block: min(members[block]))
    renumber = {old: new for new, old in enumerate(order)}
    plan_entries = _plan_entries(graph, placement, renumber)
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
        workspace_bytes=workspace_bytes(graph),
    )
    live = plan.live_bytes()
    object.__setattr__(plan, "peak_bytes", max(live) if live else 0)
    return plan


def workspace_bytes(graph: ExecGraph) -> int:
    """The largest TEMP_SPACE request of the graph's ops (``temp_space_bytes``), in bytes.

    The context's temp space grows to it.  Each op is asked at its forward's
    input shapes, for the forward (which a recompute repeats) and for its
    backward step's requests (a gradient not wanted needs no scratch).
    """
    entries = graph.entries
    backward_req = {
        id(step.node): step.req for step in graph.steps if step.kind is StepKind.BACKWARD
    }
    most = 0
    for step in graph.steps[: graph.num_forward_steps]:
        if step.prop is None:
            continue
        inputs = [entries[e] for e in step.in_data if e is not None]
        shapes, types = [e.shape for e in inputs], [e.dtype for e in inputs]
        most = max(most, step.prop.temp_space_bytes(shapes, types))
        req = backward_req.get(id(step.node))
        if req is not None:
            most = max(most, step.prop.temp_space_bytes(shapes, types, req))
    return most


def _plan_entries(
    graph: ExecGraph, placement: Placement, renumber: dict[int, int]
) -> list[PlanEntry]:
    """One PlanEntry per entry of the graph: where it lives, for how long, what it reuses."""
    entries = graph.entries
    last = len(graph.steps) - 1
    plan_entries = []
    for entry in entries:
        placed = placement.storage_of.get(entry.id)
        first = entry.writer
        final = lifetime_end(entry, last) if first >= 0 or entry.readers or entry.is_output else -1
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
                storage_id=EXTERNAL_STORAGE_ID if placed is None else renumber[placed],
                inplace_source=entries[source].name if source is not None else None,
                first_step=first,
                last_step=final,
                offset=placement.offsets.get(entry.id, 0),
                recompute_of=(
                    entries[entry.recompute_of].name if entry.recompute_of is not None else None
                ),
            )
        )
    return plan_entries
