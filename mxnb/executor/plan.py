"""The memory plan: which entry of a graph lives in which storage block, and when.

Idea: memory planning (MXNet: ``PlanMemory`` in src/nnvm/plan_memory.cc and
``GraphExecutor::InitDataEntryMemory``) is a pass that produces plain data.
The executor allocates one array per storage block and views every entry
into its block; the memory widget draws the same objects; tests check them.
Nothing here runs anything.

Rule the plan must obey (:meth:`MemoryPlan.check`):
    * two entries share a block only if their lifetimes do not overlap, or the
      later one took the earlier one's storage *in place* at the earlier one's
      last reading step;
    * a block is at least as large as every entry it holds;
    * in an *arena* block (entries at non-zero ``offset``), entries alive at
      the same step occupy disjoint byte ranges;
    * the planned internal bytes never exceed the naive total.

Lifetimes are step indices into :attr:`MemoryPlan.steps` (the op nodes in
execution order: forward nodes, then backward nodes).  An entry is written
at ``first_step`` and read for the last time at ``last_step``.  External
entries bound before the run (arguments, aux states, head gradients) have
``first_step == -1``.  An argument's gradient written by several steps (a
weight shared across time steps accumulates with ``ADD_TO``) has its first
writer as ``first_step``.  Graph outputs stay alive to the end:
``last_step == len(steps) - 1``.  Entries of the plan appear in the order the
graph made them (variables first, then the steps' outputs); ``entries[i]``
is the executor's entry ``i``.

State kept (all frozen):
    MemoryPlan.steps        node names in execution order
    MemoryPlan.entries      one PlanEntry per data entry (external ones included)
    MemoryPlan.blocks       one StorageBlock per planned storage id
    MemoryPlan.inplace_pairs   (source entry, entry that reused its storage)
    MemoryPlan.internal_bytes / naive_internal_bytes / peak_bytes   the figures
    MemoryPlan.workspace_bytes   the steps' largest temp-space request (not in a block)

Example::

    >>> import mxnb as mx
    >>> data = mx.sym.Variable('data')
    >>> net = mx.sym.Activation(mx.sym.FullyConnected(data, num_hidden=4, name='fc'),
    ...                         act_type='relu', name='relu')
    >>> plan = mx.executor.plan_memory(net, {'data': (2, 3)}, grad_req='null')
    >>> plan.check()
    >>> plan.entry('relu_output').inplace_source
    'fc_output'
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field

from .plan_entries import (
    EXTERNAL_STORAGE_ID,
    RECOMPUTE_SUFFIX,
    EntryKind,
    PlanEntry,
    StorageBlock,
)
from .plan_rules import check_plan

__all__ = [
    "EXTERNAL_STORAGE_ID",
    "EntryKind",
    "MemoryPlan",
    "PlanEntry",
    "StorageBlock",
]


@dataclass(frozen=True, repr=False)
class MemoryPlan:
    """The result of memory planning: entries, storage blocks and the figures.

    Build one with :func:`mxnb.executor.plan_memory`; ``exe.memory_plan`` is the
    plan an executor uses.
    """

    steps: tuple[str, ...]
    entries: tuple[PlanEntry, ...]
    blocks: tuple[StorageBlock, ...]
    inplace_pairs: tuple[tuple[str, str], ...]
    internal_bytes: int  # sum of block sizes (MXNet's "Total N MB allocated")
    naive_internal_bytes: int  # every internal entry in its own storage
    peak_bytes: int  # most internal entry bytes alive at one step
    inplace: bool  # in-place strategy was on
    coshare: bool  # co-share strategy was on
    grad_req: tuple[tuple[str, str], ...]  # (argument, 'null' | 'write' | 'add'), in argument order
    step_ops: tuple[str, ...] = ()  # op type of each step, same order as ``steps``
    recompute: str = "none"  # how recomputed nodes were chosen: 'none', 'mirror', 'sqrt', a budget
    recomputed_nodes: tuple[str, ...] = ()  # forward steps whose outputs backward recomputes
    recompute_steps: tuple[str, ...] = ()  # the extra steps that recompute them
    forward_flops: int = 0  # FLOPs of the forward steps (mxnb.executor.flops)
    recompute_flops: int = 0  # FLOPs of the recompute steps
    workspace_bytes: int = 0  # the largest TEMP_SPACE request of a step (the context's scratch)
    solver: str | None = None  # a budget solved exactly: 'milp' (mxnb.executor.milp), else None
    mip_gap: float | None = None  # the exact planner's proven relative optimality gap
    # the exact planner's window (mxnb.executor.milp): a recompute ran at most this many steps
    # ahead of need; the gap is then the windowed program's.  None: no window
    milp_window: int | None = None
    # the recompute steps' predicted seconds, when planned with measured op times
    recompute_seconds: float | None = None
    _index: dict[str, PlanEntry] = field(default_factory=dict, compare=False, repr=False)

    def __post_init__(self) -> None:
        index = {entry.name: entry for entry in self.entries}
        assert len(index) == len(self.entries), "entry names must be unique"
        object.__setattr__(self, "_index", index)

    # -- lookup -------------------------------------------------------------------
    def entry(self, name: str) -> PlanEntry:
        """Return the entry called ``name`` (KeyError listing close names if absent)."""
        try:
            return self._index[name]
        except KeyError:
            close = [other for other in self._index if name.split("_")[0] in other][:8]
            hint = f"; similar: {', '.join(close)}" if close else ""
            raise KeyError(f"no plan entry {name!r}{hint}") from None

    def block(self, storage_id: int) -> StorageBlock:
        """Return the storage block with id ``storage_id``."""
        return self.blocks[storage_id]

    def internal_entries(self) -> Iterator[PlanEntry]:
        """Yield the planned entries (forward and backward intermediates)."""
        return (entry for entry in self.entries if not entry.external)

    @property
    def grad_req_dict(self) -> dict[str, str]:
        """The per-argument gradient request as a dict."""
        return dict(self.grad_req)

    @property
    def recompute_ratio(self) -> float:
        """``recompute_flops / forward_flops``: the extra compute, in forward passes."""
        return self.recompute_flops / self.forward_flops if self.forward_flops else 0.0

    def recompute_cost(self, op_times: Mapping[str, float] | None = None) -> float:
        """What the recompute steps cost: their FLOPs, or their nodes' seconds in ``op_times``.

        ``op_times`` is a per-op timing table (node name -> seconds, as
        :func:`mxnb.executor.measure.op_times` measures one); a node missing
        from it costs nothing.
        """
        if op_times is None:
            return float(self.recompute_flops)
        suffix = len(RECOMPUTE_SUFFIX)
        return sum(float(op_times.get(step[:-suffix], 0.0)) for step in self.recompute_steps)

    def recomputed_entries(self) -> tuple[str, ...]:
        """Names of the forward entries that backward reads as recomputed copies."""
        return tuple(e.recompute_of for e in self.entries if e.recompute_of is not None)

    def segments(self) -> tuple[tuple[str, ...], ...]:
        """Runs of recomputed forward steps, consecutive in forward order (between checkpoints)."""
        chosen = set(self.recomputed_nodes)
        runs: list[list[str]] = []
        previous = False
        for step in self.steps:
            if step in chosen:
                if not previous:
                    runs.append([])
                runs[-1].append(step)
            previous = step in chosen
        return tuple(tuple(run) for run in runs)

    @property
    def total_bytes(self) -> int:
        """``internal_bytes + workspace_bytes``: what a bound executor holds beyond its bound arrays.

        The storage pool's high-water mark over a forward and backward pass,
        less the arguments, gradients, aux states and head gradients, is this
        figure (``tests/executor/test_honest_peak.py``).  Budgets and MXNet's
        "Total N MB allocated" count ``internal_bytes`` alone: the scratch is
        the context's, the same for every recomputation plan.
        """
        return self.internal_bytes + self.workspace_bytes

    @property
    def ratio(self) -> float:
        """``naive_internal_bytes / internal_bytes`` (how much planning saved)."""
        return self.naive_internal_bytes / self.internal_bytes if self.internal_bytes else 1.0

    def live_bytes(self) -> tuple[int, ...]:
        """Internal entry bytes alive at each step (the curve whose max is ``peak_bytes``)."""
        change = [0] * (len(self.steps) + 1)  # bytes coming alive minus bytes dying, per step
        handed_over = {source for source, _ in self.inplace_pairs}
        for entry in self.internal_entries():
            # An in-place source and its reuser meet at one step in one block: count it once.
            last = entry.last_step - 1 if entry.name in handed_over else entry.last_step
            first = max(entry.first_step, 0)
            if last >= first:
                change[first] += entry.nbytes
                change[last + 1] -= entry.nbytes
        live = []
        total = 0
        for delta in change[:-1]:
            total += delta
            live.append(total)
        return tuple(live)

    def as_dict(self) -> dict:
        """The plan as plain JSON-ready data (enums as their values), for front ends and files."""
        return {
            "steps": list(self.steps),
            "step_ops": list(self.step_ops),
            "entries": [
                {
                    "name": e.name,
                    "node": e.node,
                    "op": e.op,
                    "output_index": e.output_index,
                    "kind": e.kind.value,
                    "shape": list(e.shape),
                    "dtype": e.dtype,
                    "nbytes": e.nbytes,
                    "storage_id": e.storage_id,
                    "inplace_source": e.inplace_source,
                    "first_step": e.first_step,
                    "last_step": e.last_step,
                    "offset": e.offset,
                    "recompute_of": e.recompute_of,
                }
                for e in self.entries
            ],
            "blocks": [
                {"id": b.id, "nbytes": b.nbytes, "entries": list(b.entries)} for b in self.blocks
            ],
            "inplace_pairs": [list(pair) for pair in self.inplace_pairs],
            "internal_bytes": self.internal_bytes,
            "naive_internal_bytes": self.naive_internal_bytes,
            "peak_bytes": self.peak_bytes,
            "workspace_bytes": self.workspace_bytes,
            "inplace": self.inplace,
            "coshare": self.coshare,
            "grad_req": dict(self.grad_req),
            "recompute": self.recompute,
            "recomputed_nodes": list(self.recomputed_nodes),
            "recompute_steps": list(self.recompute_steps),
            "forward_flops": self.forward_flops,
            "recompute_flops": self.recompute_flops,
        }

    # -- invariants ------------------------------------------------------------------
    def check(self) -> None:
        """Raise AssertionError when the plan breaks a rule of memory planning (:mod:`.plan_rules`)."""
        check_plan(self)

    # -- text -------------------------------------------------------------------------
    def summary(self) -> str:
        """Return a text table: one row per entry, then the storage blocks and the totals."""
        header = (
            f"{'step':>4}  {'entry':<32} {'kind':<9} {'shape':<20} {'bytes':>11}  "
            f"{'sid':>4}  {'alive':<9} in-place from"
        )
        lines = [header]
        for entry in sorted(self.entries, key=lambda e: (e.first_step, e.name)):
            sid = "ext" if entry.external else str(entry.storage_id)
            step = "-" if entry.first_step < 0 else str(entry.first_step)
            alive = f"{entry.first_step}..{entry.last_step}"
            lines.append(
                f"{step:>4}  {entry.name:<32} {entry.kind.value:<9} {entry.shape!s:<20} "
                f"{entry.nbytes:>11,}  {sid:>4}  {alive:<9} {entry.inplace_source or ''}"
            )
        lines.append("")
        lines.append(f"{len(self.blocks)} storage blocks:")
        for block in self.blocks:
            lines.append(f"  [{block.id}] {block.nbytes:>11,} B  {', '.join(block.entries)}")
        lines.append("")
        strategies = [
            name for name, on in (("inplace", self.inplace), ("coshare", self.coshare)) if on
        ]
        lines.append(f"strategies: {' + '.join(strategies) or 'none'}")
        lines.append(f"in-place pairs: {len(self.inplace_pairs)}")
        lines.append(f"naive internal: {_mb(self.naive_internal_bytes)}")
        lines.append(f"planned:        {_mb(self.internal_bytes)}  ({self.ratio:.2f}x less)")
        lines.append(f"peak live:      {_mb(self.peak_bytes)}")
        if self.workspace_bytes:
            lines.append(f"workspace:      {_mb(self.workspace_bytes)}")
        if self.recompute_steps:
            lines.append(
                f"recompute ({self.recompute}): {len(self.recomputed_nodes)} nodes in "
                f"{len(self.segments())} segments, {len(self.recompute_steps)} extra steps, "
                f"recompute/forward FLOPs {self.recompute_ratio:.3f}"
            )
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.summary()

    def __repr__(self) -> str:
        return (
            f"<MemoryPlan {len(self.steps)} steps, {len(self.entries)} entries, "
            f"{len(self.blocks)} blocks, {self.internal_bytes:,} B planned of "
            f"{self.naive_internal_bytes:,} B naive, {len(self.inplace_pairs)} in-place>"
        )


def _mb(nbytes: int) -> str:
    return f"{nbytes / (1 << 20):10.3f} MB ({nbytes:,} B)"
