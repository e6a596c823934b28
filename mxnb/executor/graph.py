"""The forward+backward graph the executor runs and the memory planner places.

Idea (MXNet: ``GraphExecutor::InitFullGraph``): a symbol's nodes become
forward *steps* in topological order.  For training, the gradient pass
(:mod:`.gradient`, MXNet's ``nnvm::pass::Gradient``) appends a backward step
per node one of whose inputs needs a gradient, in reverse order, plus the
gradient sums and zeros around them.

Rule: every step lists every entry it reads (``inputs``, one item per read)
and writes (``outputs``).

State kept:
    ExecGraph.entries     every DataEntry (arguments, aux, forward, backward, gradients)
    ExecGraph.steps       every Step in execution order (forward, then backward)
    ExecGraph.arg_names / aux_names / output_entries / grad_req   what binding needs

Example::

    >>> import mxnb as mx
    >>> from mxnb.executor.graph import build_graph
    >>> net = mx.sym.FullyConnected(mx.sym.Variable('x'), num_hidden=3, name='fc')
    >>> graph = build_graph(net, {'x': (2, 4)}, grad_req='write')
    >>> [step.name for step in graph.steps]
    ['fc', 'fc_backward']
"""

from __future__ import annotations

import enum
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..base import GraphError, ParamError, ShapeError
from ..operator.base import OperatorProperty, OpReqType
from ..symbol.graph import Node, NodeEntry, aux_variable_nodes, infer_shapes, infer_types, topo_sort
from .plan import EntryKind

__all__ = [
    "ORDERS",
    "DataEntry",
    "ExecGraph",
    "Step",
    "StepKind",
    "build_graph",
    "normalize_grad_req",
]

#: Topological orders :func:`build_graph` can lay the steps out in.
ORDERS = ("dfs", "reverse_dfs")


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


def normalize_grad_req(
    grad_req: str | Mapping[str, str] | Sequence[str], arg_names: Sequence[str]
) -> dict[str, str]:
    """Return ``{argument: 'null' | 'write' | 'add'}`` from a string, a dict or a list.

    ``'inplace'`` is accepted as ``'write'``.  Arguments missing from a dict get ``'null'``.
    """
    allowed = ("null", "write", "add", "inplace")

    def check(name: str, value: Any) -> str:
        if value not in allowed:
            raise ParamError(
                f"grad_req for '{name}' must be one of {', '.join(allowed)}; got {value!r}"
            )
        return "write" if value == "inplace" else value

    if isinstance(grad_req, str):
        return {name: check(name, grad_req) for name in arg_names}
    if isinstance(grad_req, Mapping):
        unknown = [name for name in grad_req if name not in arg_names]
        if unknown:
            raise ParamError(
                f"grad_req names {', '.join(map(repr, unknown))} which are not arguments; "
                f"the arguments are: {', '.join(arg_names)}"
            )
        return {name: check(name, grad_req.get(name, "null")) for name in arg_names}
    values = list(grad_req)
    if len(values) != len(arg_names):
        raise ParamError(
            f"grad_req list has {len(values)} items but the symbol has {len(arg_names)} arguments"
        )
    return {name: check(name, value) for name, value in zip(arg_names, values)}


class _Builder:
    """Builds an ExecGraph step by step (one instance per build)."""

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


def build_graph(
    sym: Any,
    shapes: Mapping[str, tuple],
    grad_req: str | Mapping[str, str] | Sequence[str] = "write",
    type_dict: Mapping[str, Any] | None = None,
    order: str = "dfs",
    recompute: Collection[str] = (),
) -> ExecGraph:
    """Infer shapes and dtypes and build the forward (+ backward) steps of ``sym``.

    Parameters
    ----------
    sym : Symbol
        The network (its ``_outputs`` are the heads).
    shapes : mapping
        Argument shapes by name (``data=(32, 784)``); the rest are inferred.
    grad_req : str, dict or list
        ``'write'``, ``'add'`` or ``'null'`` for every argument, or per argument.
        With every request ``'null'`` the graph is forward only (inference).
    type_dict : mapping, optional
        Argument dtypes by name (default float32).
    order : str
        The topological order of the forward steps (backward runs in reverse):
        ``'dfs'`` (MXNet's: inputs visited first to last) or ``'reverse_dfs'``
        (inputs visited last to first: parallel branches run in the other
        order, which changes how many of their outputs are alive at once).
    recompute : collection of str
        Names of forward steps whose outputs backward recomputes instead of
        keeping (chosen by :func:`mxnb.executor.recompute.choose`).
    """
    if order not in ORDERS:
        raise ParamError(f"order must be one of {', '.join(ORDERS)}; got {order!r}")
    heads: list[NodeEntry] = list(sym._outputs)
    nodes = topo_sort(heads)  # names and argument order always follow MXNet's DFS
    step_nodes = nodes if order == "dfs" else _reverse_dfs(heads)
    aux_ids = aux_variable_nodes(nodes)
    arg_nodes = [node for node in nodes if node.op is None and id(node) not in aux_ids]
    aux_nodes = [node for node in nodes if node.op is None and id(node) in aux_ids]
    arg_names = [node.name for node in arg_nodes]
    aux_names = [node.name for node in aux_nodes]
    for names, what in ((arg_names, "argument"), (aux_names, "auxiliary state")):
        if len(set(names)) != len(names):
            duplicated = sorted({name for name in names if names.count(name) > 1})
            raise GraphError(
                f"the symbol has two {what}s named {', '.join(map(repr, duplicated))}; "
                f"give the variables distinct names before binding"
            )
    unknown = [name for name in shapes if name not in arg_names and name not in aux_names]
    if unknown:
        raise ShapeError(
            f"shapes were given for {', '.join(map(repr, unknown))} which the symbol does not "
            f"take; its arguments are: {', '.join(arg_names)}"
        )
    req = normalize_grad_req(grad_req, arg_names)
    shape_of = infer_shapes(heads, {name: tuple(shape) for name, shape in shapes.items()})
    known_types = {name: np.dtype(dtype) for name, dtype in (type_dict or {}).items()}
    type_of = infer_types(heads, known_types)

    def dtype_of(entry: NodeEntry) -> np.dtype:
        value = type_of.get(entry)
        return np.dtype("float32") if value is None else np.dtype(value)

    builder = _Builder()
    entry_id: dict[NodeEntry, int] = {}
    arg_entries: dict[str, int] = {}
    aux_entries: dict[str, int] = {}
    # Variables first: they exist before the first step.
    for node in nodes:
        if node.op is not None:
            continue
        key = NodeEntry(node, 0)
        kind = EntryKind.AUX if id(node) in aux_ids else EntryKind.ARGUMENT
        new = builder.new_entry(
            node.name, kind, node.name, "null", 0, shape_of[key], dtype_of(key), variable=node.name
        )
        entry_id[key] = new
        (aux_entries if kind is EntryKind.AUX else arg_entries)[node.name] = new
    # Forward steps in topological order.
    for node in step_nodes:
        if node.op is None:
            continue
        prop = node.op
        num_args = node.num_arguments()
        outputs = []
        for index, out_name in enumerate(prop.list_outputs()):
            key = NodeEntry(node, index)
            outputs.append(
                builder.new_entry(
                    f"{node.name}_{out_name}",
                    EntryKind.FORWARD,
                    node.name,
                    prop.op_name,
                    index,
                    shape_of[key],
                    dtype_of(key),
                )
            )
            entry_id[key] = outputs[-1]
        in_data = [entry_id[entry] for entry in node.inputs[:num_args]]
        aux = [entry_id[entry] for entry in node.inputs[num_args:]]
        in_tokens = [("in_data", i) for i in range(len(in_data))]
        out_tokens = [("out_data", i) for i in range(len(outputs))]
        options = []
        for source, target in prop.forward_inplace_option(in_tokens, out_tokens) or []:
            options.append((in_data[source[1]], outputs[target[1]]))
        step = Step(0, builder.step_name(node.name), StepKind.FORWARD, prop.op_name, prop, node)
        step.in_data = list(in_data)
        step.out_data = list(outputs)
        step.aux = aux
        step.req = [OpReqType.WRITE_TO] * len(outputs)
        step.inputs = [*in_data, *aux]
        step.outputs = list(outputs)
        step.inplace_options = options
        builder.add_step(step)
    num_forward = len(builder.steps)
    output_entries = [entry_id[head] for head in heads]
    for output in output_entries:
        builder.entries[output].is_output = True

    grad_entries: dict[str, int] = {}
    head_grad_entries: dict[int, int] = {}
    recomputed_nodes: list[str] = []
    if any(value != "null" for value in req.values()):
        # the passes build on this module's Step and _Builder
        from .gradient import GradientPass
        from .recompute import RecomputePass

        if recompute:
            gradient_pass: GradientPass = RecomputePass(
                builder, step_nodes, heads, entry_id, arg_entries, req, frozenset(recompute)
            )
        else:
            gradient_pass = GradientPass(builder, step_nodes, heads, entry_id, arg_entries, req)
        gradient_pass.run()
        recomputed_nodes = gradient_pass.recomputed_nodes()
        grad_entries = gradient_pass.grad_entries
        head_grad_entries = gradient_pass.head_grad_entries
    return ExecGraph(
        entries=builder.entries,
        steps=builder.steps,
        arg_names=arg_names,
        aux_names=aux_names,
        output_entries=output_entries,
        grad_req=req,
        arg_entries=arg_entries,
        aux_entries=aux_entries,
        grad_entries=grad_entries,
        head_grad_entries=head_grad_entries,
        num_forward_steps=num_forward,
        recomputed_nodes=recomputed_nodes,
    )


def _reverse_dfs(heads: Sequence[NodeEntry]) -> list[Node]:
    """Post-order DFS visiting each node's inputs last to first (iterative)."""
    order: list[Node] = []
    done: set[int] = set()
    for head in reversed(heads):
        if id(head.node) in done:
            continue
        stack: list[tuple[Node, int]] = [(head.node, len(head.node.inputs))]
        while stack:
            node, position = stack[-1]
            if position > 0:
                stack[-1] = (node, position - 1)
                child = node.inputs[position - 1].node
                if id(child) not in done:
                    stack.append((child, len(child.inputs)))
                continue
            stack.pop()
            if id(node) not in done:
                done.add(id(node))
                order.append(node)
    return order
