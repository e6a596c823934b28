"""The parts of a memory plan: its entries, their kinds, its storage blocks.

Idea: every data entry of the forward + backward graph gets one
:class:`PlanEntry` (what it is, how large, which block, alive from which step
to which); the planned allocations are :class:`StorageBlock` objects.  Both
are frozen data, read by the executor, the widgets and the rule checks
(:mod:`.plan_rules`); :mod:`.plan` holds them in a ``MemoryPlan``.

Rule: an entry with ``storage_id == EXTERNAL_STORAGE_ID`` is bound by the
user (arguments, their gradients, aux states, head gradients); every other
entry lives in ``MemoryPlan.blocks[storage_id]`` at ``offset``.

State kept: none (frozen dataclasses).

Example::

    >>> block = StorageBlock(0, 64, ('fc_output',))
    >>> block.nbytes, EntryKind('forward') is EntryKind.FORWARD
    (64, True)
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

__all__ = ["EXTERNAL_STORAGE_ID", "RECOMPUTE_SUFFIX", "EntryKind", "PlanEntry", "StorageBlock"]

#: A recompute step (and the entries it writes) is named after its forward node plus this.
RECOMPUTE_SUFFIX = "_recompute"

#: Storage id of entries the planner does not place (MXNet: ``kExternalStorageID``):
#: arguments, argument gradients, aux states and head gradients.
EXTERNAL_STORAGE_ID = -1


class EntryKind(enum.Enum):
    """What a data entry of the forward+backward graph is."""

    ARGUMENT = "argument"  # a bound input (data, weight, label); external
    AUX = "aux"  # an auxiliary state (BatchNorm moving stats); external
    FORWARD = "forward"  # an output of a forward node; planned
    BACKWARD = "backward"  # a gradient of an internal entry (or a partial sum); planned
    ARG_GRAD = "arg_grad"  # the gradient written into an argument's grad array; external
    HEAD_GRAD = "head_grad"  # the gradient handed in for a graph output; external
    RECOMPUTED = "recomputed"  # a forward value computed again for backward; planned


@dataclass(frozen=True)
class PlanEntry:
    """One data entry: a node output, its size and where and when it lives."""

    name: str  # unique readable name: 'fc1_output', 'fc1_backward_data', 'fc1_weight_grad'
    node: str  # name of the node that writes it (the argument's name for an argument)
    op: str  # op type of that node; 'null' for arguments and aux states
    output_index: int  # which output of the node
    kind: EntryKind
    shape: tuple[int, ...]
    dtype: str
    nbytes: int
    storage_id: int  # index into MemoryPlan.blocks, or EXTERNAL_STORAGE_ID
    inplace_source: str | None  # entry whose storage this one took in place
    first_step: int  # (first) step that writes it; -1 for entries bound before the run
    last_step: int  # last step that reads it; == first_step when never read
    offset: int = 0  # bytes into its block (non-zero only in an arena: several entries at once)
    recompute_of: str | None = None  # RECOMPUTED entries: the forward entry computed again

    @property
    def external(self) -> bool:
        """True when the planner does not place this entry (bound arrays)."""
        return self.storage_id == EXTERNAL_STORAGE_ID

    def alive_at(self, step: int) -> bool:
        """True when the entry holds a value needed at ``step``."""
        return self.first_step <= step <= self.last_step


@dataclass(frozen=True)
class StorageBlock:
    """One planned allocation; the entries listed live in it one after another."""

    id: int
    nbytes: int  # the largest entry it holds
    entries: tuple[str, ...]  # entry names, in step order
