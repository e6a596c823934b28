"""The forward+backward graph the executor runs and the memory planner places.

Idea (MXNet: ``GraphExecutor::InitFullGraph``): a symbol's nodes become
forward *steps* in topological order.  For training, the gradient pass
(:mod:`.gradient`, MXNet's ``nnvm::pass::Gradient``) appends a backward step
per node one of whose inputs needs a gradient, in reverse order, plus the
gradient sums and zeros around them.

Rule: every step lists every entry it reads (``inputs``, one item per read)
and writes (``outputs``).  :func:`build_graph` runs in named phases: check the
variables, bind them as entries, add the forward steps in the chosen order,
then the gradient pass (with recomputation when asked).  The types live in
:mod:`.steps`, below the passes; this module is above them.

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

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..base import GraphError, ParamError, ShapeError
from ..operator.base import OpReqType
from ..symbol.graph import Node, NodeEntry, aux_variable_nodes, topo_sort
from ..symbol.inference import infer_shapes, infer_types
from .gradient import GradientPass
from .plan import EntryKind
from .recompute import RecomputePass
from .steps import DataEntry, ExecGraph, GraphBuilder, Step, StepKind

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


@dataclass
class _Variables:
    """The symbol's variables, split into arguments and auxiliary states (phase 1)."""

    nodes: list[Node]  # every node, in MXNet's DFS order
    aux_ids: set[int]  # id() of the auxiliary-state variable nodes
    arg_names: list[str]
    aux_names: list[str]


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
    variables = _check_variables(heads, shapes)
    step_nodes = variables.nodes if order == "dfs" else _reverse_dfs(heads)
    req = normalize_grad_req(grad_req, variables.arg_names)
    shape_of, dtype_of = _infer(heads, shapes, type_dict)
    builder = GraphBuilder()
    entry_id: dict[NodeEntry, int] = {}
    arg_entries, aux_entries = _add_variables(builder, variables, entry_id, shape_of, dtype_of)
    _add_forward_steps(builder, step_nodes, entry_id, shape_of, dtype_of)
    num_forward = len(builder.steps)
    output_entries = [entry_id[head] for head in heads]
    for output in output_entries:
        builder.entries[output].is_output = True
    graph = ExecGraph(
        builder.entries, builder.steps, variables.arg_names, variables.aux_names,
        output_entries, req, arg_entries, aux_entries, grad_entries={}, head_grad_entries={},
        num_forward_steps=num_forward,
    )  # fmt: skip
    if any(value != "null" for value in req.values()):
        _add_backward(graph, builder, step_nodes, heads, entry_id, frozenset(recompute))
    return graph


def _infer(
    heads: list[NodeEntry], shapes: Mapping[str, tuple], type_dict: Mapping[str, Any] | None
) -> tuple[dict[NodeEntry, Any], Any]:
    """The shape of every entry, and a function giving its dtype (float32 where unknown)."""
    shape_of = infer_shapes(heads, {name: tuple(shape) for name, shape in shapes.items()})
    known_types = {name: np.dtype(dtype) for name, dtype in (type_dict or {}).items()}
    type_of = infer_types(heads, known_types)

    def dtype_of(entry: NodeEntry) -> np.dtype:
        value = type_of.get(entry)
        return np.dtype("float32") if value is None else np.dtype(value)

    return shape_of, dtype_of


def _check_variables(heads: list[NodeEntry], shapes: Mapping[str, tuple]) -> _Variables:
    """Phase 1: the variables, with distinct names, and every given shape naming one."""
    nodes = topo_sort(heads)  # names and argument order always follow MXNet's DFS
    aux_ids = aux_variable_nodes(nodes)
    arg_names = [node.name for node in nodes if node.op is None and id(node) not in aux_ids]
    aux_names = [node.name for node in nodes if node.op is None and id(node) in aux_ids]
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
    return _Variables(nodes, aux_ids, arg_names, aux_names)


def _add_variables(
    builder: GraphBuilder,
    variables: _Variables,
    entry_id: dict[NodeEntry, int],
    shape_of: Mapping[NodeEntry, Any],  # complete: inference left no shape unknown
    dtype_of: Any,
) -> tuple[dict[str, int], dict[str, int]]:
    """Phase 2: an entry per variable; they exist before the first step."""
    arg_entries: dict[str, int] = {}
    aux_entries: dict[str, int] = {}
    for node in variables.nodes:
        if node.op is not None:
            continue
        key = NodeEntry(node, 0)
        kind = EntryKind.AUX if id(node) in variables.aux_ids else EntryKind.ARGUMENT
        new = builder.new_entry(
            node.name, kind, node.name, "null", 0, shape_of[key], dtype_of(key), variable=node.name
        )
        entry_id[key] = new
        (aux_entries if kind is EntryKind.AUX else arg_entries)[node.name] = new
    return arg_entries, aux_entries


def _add_forward_steps(
    builder: GraphBuilder,
    step_nodes: list[Node],
    entry_id: dict[NodeEntry, int],
    shape_of: Mapping[NodeEntry, Any],  # complete: inference left no shape unknown
    dtype_of: Any,
) -> None:
    """Phase 3: a forward step per operator node, in ``step_nodes``' order."""
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


def _add_backward(
    graph: ExecGraph,
    builder: GraphBuilder,
    step_nodes: list[Node],
    heads: list[NodeEntry],
    entry_id: dict[NodeEntry, int],
    recompute: frozenset[str],
) -> None:
    """Phase 4: the gradient pass (:mod:`.gradient`), recomputing ``recompute``'s nodes."""
    arguments = (builder, step_nodes, heads, entry_id, graph.arg_entries, graph.grad_req)
    if recompute:
        gradient_pass: GradientPass = RecomputePass(*arguments, recompute)
    else:
        gradient_pass = GradientPass(*arguments)
    gradient_pass.run()
    graph.recomputed_nodes = gradient_pass.recomputed_nodes()
    graph.grad_entries = gradient_pass.grad_entries
    graph.head_grad_entries = gradient_pass.head_grad_entries


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
