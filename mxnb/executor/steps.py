"""The objects a forward+backward graph is made of: entries, steps, and the graph.

Idea (MXNet: the ``IndexedGraph`` of nnvm with its node entries): every value
the executor computes or binds is a :class:`DataEntry`; every engine op it
pushes is a :class:`Step` naming the entries it reads and writes.  The graph
passes build on these types and sit above this module: :mod:`.graph` (the
forward steps), :mod:`.gradient` (backward), :mod:`.recompute` (recomputed
forward values); nothing here imports them.

Rule: a step, once added by :meth:`GraphBuilder.add_step`, is final (its id
lists become tuples), and is the reader of each entry it reads (one item per
read, repeats kept) and the writer of each entry it writes first.

State kept (one :class:`GraphBuilder` per graph build):
    entries / steps       what has been added so far, in order
    names / step_names    names taken (entries and steps get unique names)

Example::

    >>> import numpy as np
    >>> from mxnb.executor.plan import EntryKind
    >>> builder = GraphBuilder()
    >>> x = builder.new_entry('x', EntryKind.ARGUMENT, 'x', 'null', 0, (2, 3), np.float32)
    >>> y = builder.new_entry('y', EntryKind.FORWARD, 'double', 'double', 0, (2, 3), np.float32)
    >>> step = Step(0, builder.step_name('double'), StepKind.FORWARD, 'double', None, None)
    >>> step.inputs, step.outputs = [x], [y]
    >>> builder.add_step(step).inputs, builder.entries[x].readers, builder.entries[y].nbytes
    ((0,), [0], 24)
"""

from __future__ import annotations

import contextlib
import enum
import gc
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..operator.base import OperatorProperty, OpReqType
from ..symbol.graph import Node
from .plan_entries import EntryKind

__all__ = ["DataEntry", "ExecGraph", "GraphBuilder", "Step", "StepKind", "without_gc_pauses"]


class StepKind(enum.Enum):
    """What a step computes."""

    FORWARD = "forward"  # an operator's forward
    BACKWARD = "backward"  # an operator's backward
    SUM = "sum"  # ElementWiseSum of gradient contributions
    ZEROS = "zeros"  # an output gradient nobody produced
    RECOMPUTE = "recompute"  # a forward op run again in backward (see .recompute)


_DTYPE_NAMES: dict[np.dtype, str] = {}  # dtype -> 'float32', filled as graphs are built


@dataclass(eq=False)
class DataEntry:
    """One value of the forward+backward graph."""

    id: int  # index into ExecGraph.entries
    name: str  # unique readable name ('fc1_output', 'fc1_backward_weight', 'fc1_weight_grad')
    kind: EntryKind
    node: str  # name of the writing node (the variable's name for arguments)
    op: str  # op type of the writer, 'null' for variables
    output_index: int
    shape: tuple[int, ...]
    dtype: np.dtype
    writer: int = -1  # step index that writes it; -1: bound before the first step
    readers: list[int] = field(default_factory=list)  # step index per read (repeats allowed)
    is_output: bool = False  # a graph output: kept alive to the end
    variable: str | None = None  # the argument / aux / head this entry is bound to
    recompute_of: int | None = None  # RECOMPUTED entries: the forward entry computed again

    nbytes: int = 0  # bytes of the value (set from shape and dtype)
    dtype_name: str = ""  # 'float32'

    def __post_init__(self) -> None:
        size = 1
        for dim in self.shape:
            size *= int(dim)
        self.nbytes = size * self.dtype.itemsize
        name = _DTYPE_NAMES.get(self.dtype)
        if name is None:  # numpy computes dtype.name anew on every call (slow in long graphs)
            name = _DTYPE_NAMES.setdefault(self.dtype, self.dtype.name)
        self.dtype_name = name

    @property
    def external(self) -> bool:
        """True for entries bound by the user (not planned)."""
        return self.kind not in (EntryKind.FORWARD, EntryKind.BACKWARD, EntryKind.RECOMPUTED)


@dataclass(eq=False)
class Step:
    """One engine op: a node's forward or backward, a gradient sum, or zeros.

    ``in_data`` / ``out_data`` / ``out_grad`` / ``in_grad`` / ``aux`` hold entry
    ids in the operator interface's slots (None where backward did not declare
    the value); ``inputs`` / ``outputs`` flatten them for planning.  A step is
    built with lists; once added to a graph its id lists are tuples (final).
    """

    index: int
    name: str  # node name, 'fc1_backward', 'fc1_output_grad_sum'
    kind: StepKind
    op_type: str
    prop: OperatorProperty | None
    node: Node | None
    in_data: Sequence[int | None] = field(default_factory=list)
    out_data: Sequence[int | None] = field(default_factory=list)
    aux: Sequence[int] = field(default_factory=list)
    out_grad: Sequence[int | None] = field(default_factory=list)
    in_grad: Sequence[int] = field(default_factory=list)
    req: list[OpReqType] = field(default_factory=list)  # per written output
    inputs: Sequence[int] = field(default_factory=list)  # every read, repeats kept
    outputs: Sequence[int] = field(default_factory=list)  # every write
    inplace_options: Sequence[tuple[int, int]] = field(
        default_factory=list
    )  # (input id, output id)


# the lists of entry ids (and id pairs) a step is built with; ``add_step`` makes them tuples
_STEP_ID_LISTS = (
    "in_data",
    "out_data",
    "aux",
    "out_grad",
    "in_grad",
    "inputs",
    "outputs",
    "inplace_options",
)


@dataclass
class ExecGraph:
    """The forward+backward graph of one symbol, shapes and dtypes known."""

    entries: list[DataEntry]
    steps: list[Step]
    arg_names: list[str]
    aux_names: list[str]
    output_entries: list[int]  # the symbol's outputs, in order
    grad_req: dict[str, str]  # per argument
    arg_entries: dict[str, int]  # argument name -> its entry
    aux_entries: dict[str, int]
    grad_entries: dict[str, int]  # argument name -> ARG_GRAD entry (req != 'null')
    head_grad_entries: dict[int, int]  # output entry -> HEAD_GRAD entry (when backward needs it)
    num_forward_steps: int
    recomputed_nodes: list[str] = field(default_factory=list)  # forward steps run again
    recompute: str = "none"  # how they were chosen ('none', 'mirror', 'sqrt', a budget)

    def sized_inplace_options(self, step: Step) -> list[tuple[int, int]]:
        """``step``'s in-place options whose two entries have one size: the only ones the
        planner pairs (``memory.Planner.run``), so the only ones a model or a floor counts."""
        entries = self.entries
        return [
            (source, target)
            for source, target in step.inplace_options
            if entries[source].nbytes == entries[target].nbytes
        ]


class GraphBuilder:
    """Builds an ExecGraph's entries and steps one at a time (one instance per build)."""

    def __init__(self) -> None:
        self.entries: list[DataEntry] = []
        self.steps: list[Step] = []
        self.names: set[str] = set()  # entry names taken
        self.step_names: set[str] = set()  # step names taken

    def unique(self, name: str, taken: set[str] | None = None) -> str:
        """Return ``name``, or ``name#1``, ``name#2``... when taken (nodes may share names)."""
        taken = self.names if taken is None else taken
        candidate = name
        suffix = 0
        while candidate in taken:
            suffix += 1
            candidate = f"{name}#{suffix}"
        taken.add(candidate)
        return candidate

    def step_name(self, name: str) -> str:
        """A unique step name."""
        return self.unique(name, self.step_names)

    def new_entry(
        self,
        name: str,
        kind: EntryKind,
        node: str,
        op: str,
        index: int,
        shape: tuple,
        dtype: np.dtype,
        **extra: Any,
    ) -> int:
        """Add a :class:`DataEntry` (its name made unique); return its id."""
        entry = DataEntry(
            len(self.entries),
            self.unique(name),
            kind,
            node,
            op,
            index,
            tuple(shape),
            np.dtype(dtype),
            **extra,
        )
        self.entries.append(entry)
        return entry.id

    def add_step(self, step: Step) -> Step:
        """Append ``step``: number it, record it as its inputs' reader and outputs' writer."""
        step.index = len(self.steps)
        for entry_id in step.inputs:
            self.entries[entry_id].readers.append(step.index)
        for entry_id in step.outputs:
            if self.entries[entry_id].writer < 0:  # an accumulated gradient keeps its first writer
                self.entries[entry_id].writer = step.index
        # A step is final once added.  Tuples of ints are dropped from the garbage
        # collector's lists, lists never are: a 20,000-op graph kept 280,000 lists the
        # collector walked on every full pass, a third of its first run's time.
        for slot in _STEP_ID_LISTS:
            setattr(step, slot, tuple(getattr(step, slot)))
        self.steps.append(step)
        return step


@contextlib.contextmanager
def without_gc_pauses() -> Iterator[None]:
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
