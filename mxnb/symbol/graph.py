"""The symbol graph: nodes, the entries that connect them, and topological order.

Idea (MXNet: ``nnvm::Node`` / ``nnvm::NodeEntry`` / ``nnvm::Graph`` and the
``InferShape`` / ``InferType`` passes): a network is a directed acyclic graph
of *nodes*.  A node is either a variable (no operator: an argument or an
auxiliary state the user supplies) or an operator applied to *entries*; an
entry ``(node, index)`` names one output of a node.  A :class:`Symbol` is
nothing but a list of head entries; everything reachable from them is the
graph.  The executor, the memory planner and the JSON writer all walk this
same structure.

Rule: a node's ``inputs`` are its operator's arguments in
``prop.list_arguments()`` order, *then* its auxiliary states in
``prop.list_auxiliary_states()`` order (as nnvm stores them).  A variable that
feeds an aux slot is an auxiliary state; any other variable is an argument.

Shape and dtype inference over this graph is :mod:`.inference`.

State kept:
    Node.op       the OperatorProperty (parameters parsed), None for a variable
    Node.name     unique-ish node name (``fc1``, ``data``)
    Node.inputs   argument entries then aux entries
    Node.attrs    string attributes (``__shape__``, ``__dtype__``, ``__init__``, ``__lr_mult__``...)
    Node.params   the operator parameters the user (or the JSON file) gave, as MXNet strings;
                  the parsed values live in ``op`` (JSON writes these, as nnvm's attrs.dict does)

Example::

    >>> from mxnb.symbol.graph import Node, NodeEntry, topo_sort
    >>> from mxnb.operator.base import OperatorProperty
    >>> a, b = Node(None, 'a', [], {}), Node(None, 'b', [], {})
    >>> add = Node(OperatorProperty(), 'add', [NodeEntry(a, 0)], {})
    >>> [node.name for node in topo_sort([NodeEntry(add, 0)])]
    ['a', 'add']
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np

from ..base import FLAG_TO_DTYPE, DTypeError, GraphError
from ..operator.base import OperatorProperty

__all__ = [
    "Node",
    "NodeEntry",
    "aux_variable_nodes",
    "input_names",
    "parse_dtype_attr",
    "parse_shape_attr",
    "topo_sort",
]


@dataclass(eq=False)
class Node:
    """One node of the graph: a variable (``op is None``) or an operator application.

    Equality and hashing are by identity: two nodes with the same name are
    still two nodes (MXNet allows it; ``list_arguments`` then repeats the name).
    """

    op: OperatorProperty | None  # None for a variable
    name: str
    inputs: list[NodeEntry] = field(default_factory=list)  # arguments, then aux states
    attrs: dict[str, str] = field(default_factory=dict)  # user and hidden ('__shape__') attrs
    params: dict[str, str] = field(default_factory=dict)  # op parameters as given (MXNet strings)

    @property
    def is_variable(self) -> bool:
        """True when the node is a variable (an argument or an auxiliary state)."""
        return self.op is None

    def num_outputs(self) -> int:
        """Number of outputs: 1 for a variable, ``prop.num_outputs()`` otherwise."""
        if self.op is None:
            return 1
        return self.op.num_outputs()

    def num_arguments(self) -> int:
        """Number of argument inputs (the rest of ``inputs`` are aux states)."""
        if self.op is None:
            return 0
        return len(self.op.list_arguments())

    def output_name(self, index: int) -> str:
        """The name of output ``index`` as ``get_internals`` lists it (``fc1_output``)."""
        if self.op is None:
            return self.name
        return f"{self.name}_{self.op.list_outputs()[index]}"

    def __repr__(self) -> str:
        kind = "Variable" if self.op is None else self.op.op_name
        return f"<Node {kind} {self.name!r}>"


class NodeEntry(NamedTuple):
    """Output ``index`` of ``node`` — the value flowing along one edge of the graph."""

    node: Node
    index: int


# ---------------------------------------------------------------------------
# traversal
# ---------------------------------------------------------------------------


def topo_sort(heads: Sequence[NodeEntry]) -> list[Node]:
    """Return every node reachable from ``heads`` in DFS post-order (MXNet: ``nnvm::DFSVisit``).

    Inputs are visited in order before the node, heads in order; each node
    appears once.  Iterative, so deep unrolled networks do not hit the
    recursion limit.  A cycle (only possible by editing ``inputs`` by hand)
    raises :class:`GraphError` printing the path.
    """
    order: list[Node] = []
    done: set[int] = set()
    on_stack: set[int] = set()
    for head in heads:
        if id(head.node) in done:
            continue
        stack: list[tuple[Node, int]] = [(head.node, 0)]
        on_stack.add(id(head.node))
        while stack:
            node, position = stack[-1]
            if position < len(node.inputs):
                stack[-1] = (node, position + 1)
                child = node.inputs[position].node
                if id(child) in done:
                    continue
                if id(child) in on_stack:
                    path = [entry[0].name for entry in stack] + [child.name]
                    raise GraphError("the graph has a cycle:\n  " + "\n  ".join(path))
                on_stack.add(id(child))
                stack.append((child, 0))
                continue
            stack.pop()
            on_stack.discard(id(node))
            done.add(id(node))
            order.append(node)
    return order


def aux_variable_nodes(nodes: Sequence[Node]) -> set[int]:
    """Return the ids of variable nodes that feed an operator's aux slots (auxiliary states)."""
    aux: set[int] = set()
    for node in nodes:
        if node.op is None:
            continue
        for entry in node.inputs[node.num_arguments() :]:
            if entry.node.op is None:
                aux.add(id(entry.node))
    return aux


def input_names(nodes: Sequence[Node], option: str = "all") -> list[str]:
    """Names of the variables in topological order: ``'all'``, ``'read_only'`` (arguments) or ``'aux'``.

    MXNet: ``Symbol::ListInputNames``.
    """
    aux = aux_variable_nodes(nodes)
    names: list[str] = []
    for node in nodes:
        if node.op is not None:
            continue
        is_aux = id(node) in aux
        if option == "all" or (option == "aux") == is_aux:
            names.append(node.name)
    return names


# ---------------------------------------------------------------------------
# attribute parsing
# ---------------------------------------------------------------------------


def parse_shape_attr(text: str | None, partial: bool = False) -> tuple | None:
    """Read a ``__shape__`` attribute (``'(32, 784)'``).

    Returns None when absent; when a dim is 0 or -1 (MXNet's "unknown", as Gluon
    exports write ``(64, 0, 7, 7)``) returns None, or with ``partial=True`` the
    dims with unknown ones as 0.
    """
    if text is None or text in ("", "None"):
        return None
    body = text.strip().strip("()[]")
    dims = tuple(int(part) for part in body.replace(" ", "").split(",") if part != "")
    if not dims:
        return None  # MXNet 1.x: () is an unknown shape
    if any(dim <= 0 for dim in dims):
        return tuple(max(dim, 0) for dim in dims) if partial else None
    return dims


def parse_dtype_attr(text: str | None) -> np.dtype | None:
    """Read a ``__dtype__`` attribute: MXNet's type flag (``'0'`` is float32) or a dtype name."""
    if text is None or text in ("", "None", "-1"):
        return None
    text = text.strip()
    if text.lstrip("-").isdigit():
        flag = int(text)
        if flag not in FLAG_TO_DTYPE:
            raise DTypeError(f"__dtype__ flag {flag} is not a supported MXNet type flag")
        return FLAG_TO_DTYPE[flag]
    return np.dtype(text)
