"""The gradient pass: backward, sum and zeros steps appended to the forward steps.

Idea (MXNet: ``nnvm::pass::Gradient``; the same walk as ``autograd``'s
``_Backward``): visit the forward nodes in reverse topological order.  Each
node one of whose arguments needs a gradient gets one backward step.  The step
reads what its property's ``declare_backward_dependency`` names and writes one
gradient per argument, into a *sink*:

* an argument read once per node: the bound gradient array itself (the first
  contribution writes, or adds for ``grad_req='add'``; later ones add, MXNet's
  ``kAddTo``), so weights shared across time steps need no buffer and no sum;
* anything else: a fresh gradient entry, a *contribution*.  An internal
  entry's contributions are summed (``ElementWiseSum``) when its own
  producer's backward needs the gradient; a variable read twice by one node
  (``x * x``) has its contributions summed into its gradient array.

An output gradient nobody produces is zeros (a ``zeros`` step); a graph output
gets a head gradient entry (loss operators do not declare ``out_grad`` and
need none).

Rule: the forward values a backward step reads come from
:meth:`GradientPass.forward_value` — the one place where recomputation
(:mod:`.recompute`) swaps a dropped value for its recomputed copy.

State kept (one ``GradientPass`` per graph):
    needs_grad     entry ids whose gradient someone wants
    consumers      variable entry -> how many argument slots read it
    repeated       variables read twice by one node (summed, not accumulated)
    accumulated    variables whose gradient array was written already
    contributions  entry id -> its gradient contributions so far
    grad_entries / head_grad_entries   what binding needs (filled by run)

Example::

    >>> import mxnb as mx
    >>> from mxnb.executor.graph import build_graph
    >>> x = mx.sym.Variable('x')
    >>> square = mx.sym.elemwise_mul(x, x, name='square')
    >>> graph = build_graph(mx.sym.FullyConnected(square, num_hidden=2, name='fc'), {'x': (1, 3)})
    >>> [step.name for step in graph.steps[graph.num_forward_steps:]]
    ['fc_backward', 'square_backward', 'x_grad_sum']
"""

from __future__ import annotations

from typing import Any

from ..base import GraphError
from ..operator.base import OpReqType
from ..symbol.graph import Node, NodeEntry
from .plan import EntryKind
from .steps import GraphBuilder, Step, StepKind

__all__ = ["ZERO_GRADIENT_OPS", "GradientPass"]

#: Operators whose input gradients are zero by definition (MXNet: ``MakeZeroGradNodes``).
ZERO_GRADIENT_OPS = frozenset({"BlockGrad", "zeros_like", "ones_like"})


class GradientPass:
    """One gradient pass over the forward nodes of a graph being built.

    Parameters
    ----------
    builder : the graph builder holding the forward entries and steps
    nodes : the forward nodes in the order their steps run
    heads : the symbol's outputs
    entry_id : forward value -> entry id
    arg_entries : argument name -> entry id
    req : argument name -> ``'null' | 'write' | 'add'``
    """

    def __init__(
        self,
        builder: GraphBuilder,
        nodes: list[Node],
        heads: list[NodeEntry],
        entry_id: dict[NodeEntry, int],
        arg_entries: dict[str, int],
        req: dict[str, str],
    ) -> None:
        self.builder = builder
        self.nodes = nodes
        self.entry_id = entry_id
        self.req = req
        self.head_set = {entry_id[head] for head in heads}
        self.grad_entries: dict[str, int] = {}
        self.head_grad_entries: dict[int, int] = {}
        self.contributions: dict[int, list[int]] = {}
        self.accumulated: set[int] = set()
        self.arg_entries = arg_entries
        self.needs_grad = self._needs_grad(arg_entries)
        self.consumers: dict[int, int] = {}
        self.repeated: set[int] = set()
        for node in self._op_nodes():
            arguments = self._arguments(node)
            for entry in arguments:
                self.consumers[entry] = self.consumers.get(entry, 0) + 1
            self.repeated.update(entry for entry in arguments if arguments.count(entry) > 1)

    # -- planning ------------------------------------------------------------------
    def _op_nodes(self) -> list[Node]:
        return [node for node in self.nodes if node.op is not None]

    def _arguments(self, node: Node) -> list[int]:
        """Entry ids of a node's argument slots (aux states excluded)."""
        return [self.entry_id[entry] for entry in node.inputs[: node.num_arguments()]]

    def _needs_grad(self, arg_entries: dict[str, int]) -> set[int]:
        """Arguments with ``req != 'null'`` and every output of a node reading one of them."""
        needs = {entry for name, entry in arg_entries.items() if self.req[name] != "null"}
        for node in self._op_nodes():
            if any(entry in needs for entry in self._arguments(node)):
                needs.update(
                    self.entry_id[NodeEntry(node, index)] for index in range(node.num_outputs())
                )
        return needs

    def forward_value(self, entry: int) -> int:
        """The entry a backward step reads for the forward value ``entry``."""
        return entry

    def recomputed_nodes(self) -> list[str]:
        """Names of the forward steps this pass recomputes, in forward order (none here)."""
        return []

    # -- the walk ------------------------------------------------------------------
    def run(self) -> None:
        """Append a backward step per node that needs one, in reverse order, then variable sums.

        Zero gradients are pruned as MXNet's gradient pass does: a node whose outputs get no
        gradient at all (every consumer sits behind ``BlockGrad`` / ``stop_gradient``) runs
        no backward step and contributes nothing; an argument left without any contribution
        gets a ``zeros`` step into its gradient array ('write') or keeps it ('add').
        """
        for node in reversed(self._op_nodes()):
            if not any(entry in self.needs_grad for entry in self._arguments(node)):
                continue
            if self._gives_zero_gradient(node):
                self._skip_backward(node)
            else:
                self._add_backward(node)
        for name, req in self.req.items():
            entry = self.arg_entries.get(name)
            if req != "null" and entry is not None and entry in self.head_set:
                self._head_into_argument(entry)
        for name, req in self.req.items():
            entry = self.arg_entries.get(name)
            if req == "write" and entry is not None and self._never_written(entry):
                self._zero_argument(entry)

    def _gives_zero_gradient(self, node: Node) -> bool:
        """Whether every input gradient of ``node`` is zero: it blocks gradients, or no
        gradient reaches any of its outputs (MXNet's zero-gradient propagation)."""
        prop = node.op
        assert prop is not None
        if prop.op_name in ZERO_GRADIENT_OPS:
            return True
        outputs = [self.entry_id[NodeEntry(node, index)] for index in range(node.num_outputs())]
        return not any(out in self.head_set or self.contributions.get(out) for out in outputs)

    def _skip_backward(self, node: Node) -> None:
        """A pruned node: its argument slots are read by one consumer fewer."""
        for entry in self._arguments(node):
            self.consumers[entry] -= 1
            if (
                entry in self.repeated
                and self.builder.entries[entry].kind is EntryKind.ARGUMENT
                and self.contributions.get(entry)
                and len(self.contributions[entry]) == self.consumers[entry]
            ):
                self._sum_variable(entry)

    def _never_written(self, variable_entry: int) -> bool:
        return variable_entry not in self.accumulated and not self.contributions.get(variable_entry)

    def _zero_argument(self, variable_entry: int) -> None:
        """A ``zeros`` step writing an argument's gradient array (its gradient is zero)."""
        output = self._argument_grad(variable_entry)
        name = self.builder.entries[variable_entry].variable
        step = Step(0, self.builder.step_name(f"{name}_zeros"), StepKind.ZEROS, "zeros", None, None)
        step.outputs = [output]
        step.out_data = [output]
        step.req = [OpReqType.WRITE_TO]
        self.builder.add_step(step)

    def _add_backward(self, node: Node) -> None:
        """One node's backward step (and the sums / zeros / variable sums around it)."""
        builder = self.builder
        prop = node.op
        assert prop is not None
        if not getattr(prop, "differentiable", True):
            raise GraphError(
                f"{prop.op_name} '{node.name}' has no gradient (MXNet registers none for it), but "
                f"an input of it needs one; bind with grad_req='null' for those inputs or put "
                f"stop_gradient after it"
            )
        arg_inputs = self._arguments(node)
        num_visible = prop.num_visible_outputs()
        outputs = [self.entry_id[NodeEntry(node, index)] for index in range(node.num_outputs())]
        grad_tokens = [("out_grad", i) for i in range(num_visible)]
        in_tokens = [("in_data", i) for i in range(len(arg_inputs))]
        out_tokens = [("out_data", i) for i in range(len(outputs))]
        declared = set(prop.declare_backward_dependency(grad_tokens, in_tokens, out_tokens))
        step_name = builder.step_name(f"{node.name}_backward")
        out_grad: list[int | None] = [
            self.gradient_of(outputs[index]) if ("out_grad", index) in declared else None
            for index in range(num_visible)
        ]
        in_data = [
            self.forward_value(entry) if ("in_data", i) in declared else None
            for i, entry in enumerate(arg_inputs)
        ]
        out_data = [
            self.forward_value(entry) if ("out_data", i) in declared else None
            for i, entry in enumerate(outputs)
        ]
        aux = [self.entry_id[entry] for entry in node.inputs[node.num_arguments() :]]
        in_grad, step_req, finished_variables = self._sinks(node, step_name, arg_inputs)
        slots = {"out_grad": out_grad, "in_data": in_data, "out_data": out_data}
        tokens = (grad_tokens, in_tokens, out_tokens)
        options = _backward_inplace(prop, tokens, slots, in_grad, step_req)
        step = Step(0, step_name, StepKind.BACKWARD, f"_backward_{prop.op_name}", prop, node)
        step.out_grad = out_grad
        step.in_data = in_data
        step.out_data = out_data
        step.aux = aux
        step.in_grad = in_grad
        step.req = step_req
        step.inputs = [
            entry for entry in [*out_grad, *in_data, *out_data] if entry is not None
        ] + aux
        step.outputs = list(in_grad)
        step.inplace_options = options
        builder.add_step(step)
        for variable_entry in finished_variables:
            self._sum_variable(variable_entry)

    def _sinks(
        self, node: Node, step_name: str, arg_inputs: list[int]
    ) -> tuple[list[int], list[OpReqType], list[int]]:
        """Each argument's gradient sink and request, and the variables whose last one this is."""
        in_grad: list[int] = []
        step_req: list[OpReqType] = []
        finished_variables: list[int] = []
        for position, entry in enumerate(arg_inputs):
            sink, sink_req = self._sink(node, step_name, position, entry)
            in_grad.append(sink)
            step_req.append(sink_req)
            if (
                self.builder.entries[entry].kind is EntryKind.ARGUMENT
                and entry in self.contributions
                and len(self.contributions[entry]) == self.consumers[entry]
                and sink in self.contributions[entry]
            ):
                finished_variables.append(entry)
        return in_grad, step_req, finished_variables

    def _sink(self, node: Node, step_name: str, position: int, entry: int) -> tuple[int, OpReqType]:
        """Where the gradient of one argument slot goes, and how it is written."""
        builder = self.builder
        source = builder.entries[entry]
        prop = node.op
        assert prop is not None

        def new_part() -> int:
            return builder.new_entry(
                f"{step_name}_{prop.list_arguments()[position]}",
                EntryKind.BACKWARD,
                step_name,
                f"_backward_{prop.op_name}",
                position,
                source.shape,
                source.dtype,
            )

        if entry not in self.needs_grad:
            # Not wanted: a scratch output written with req NULL (MXNet allocates it too).
            return new_part(), OpReqType.NULL
        if source.kind is EntryKind.ARGUMENT and entry not in self.repeated:
            # Straight into the bound gradient: the first contribution writes (or adds, for
            # grad_req 'add'), later ones add (MXNet's kAddTo).
            first = entry not in self.accumulated
            self.accumulated.add(entry)
            assert source.variable is not None
            write = first and self.req[source.variable] != "add"
            return self._argument_grad(entry), OpReqType.WRITE_TO if write else OpReqType.ADD_TO
        part = new_part()
        self.contributions.setdefault(entry, []).append(part)
        return part, OpReqType.WRITE_TO

    def _argument_grad(self, variable_entry: int) -> int:
        """The ARG_GRAD entry of an argument (made on first use)."""
        builder = self.builder
        source = builder.entries[variable_entry]
        name = source.variable
        assert name is not None
        if name not in self.grad_entries:
            self.grad_entries[name] = builder.new_entry(
                f"{name}_grad",
                EntryKind.ARG_GRAD,
                name,
                "null",
                0,
                source.shape,
                source.dtype,
                variable=name,
            )
        return self.grad_entries[name]

    def _head_grad(self, forward_entry: int) -> int:
        """The HEAD_GRAD entry of a graph output: the gradient the caller of backward gives."""
        source = self.builder.entries[forward_entry]
        head_grad = self.builder.new_entry(
            f"{source.name}_head_grad",
            EntryKind.HEAD_GRAD,
            source.node,
            "null",
            source.output_index,
            source.shape,
            source.dtype,
            variable=source.name,
        )
        self.head_grad_entries[forward_entry] = head_grad
        return head_grad

    def _head_into_argument(self, variable_entry: int) -> None:
        """An argument that is itself a graph output: its head gradient is added to its
        gradient array, after every other contribution (MXNet passes it straight through)."""
        name = self.builder.entries[variable_entry].variable
        assert name is not None
        first = self._never_written(variable_entry) and self.req[name] != "add"
        add_sum(
            self.builder,
            self.builder.step_name(f"{name}_head_grad_sum"),
            [self._head_grad(variable_entry)],
            self._argument_grad(variable_entry),
            OpReqType.WRITE_TO if first else OpReqType.ADD_TO,
        )
        self.accumulated.add(variable_entry)

    def gradient_of(self, forward_entry: int) -> int:
        """The summed gradient of ``forward_entry``, adding sum / zeros steps as needed."""
        builder = self.builder
        parts = self.contributions.get(forward_entry, [])
        source = builder.entries[forward_entry]
        if forward_entry in self.head_set:
            parts = [self._head_grad(forward_entry), *parts]
        if len(parts) == 1:
            return parts[0]
        if not parts:
            output = builder.new_entry(
                f"{source.name}_zero_grad",
                EntryKind.BACKWARD,
                f"{source.name}_zeros",
                "zeros",
                0,
                source.shape,
                source.dtype,
            )
            step = Step(
                0, builder.step_name(f"{source.name}_zeros"), StepKind.ZEROS, "zeros", None, None
            )
            step.outputs = [output]
            step.out_data = [output]
            step.req = [OpReqType.WRITE_TO]
            builder.add_step(step)
            return output
        node_name = builder.step_name(f"{source.name}_grad_sum")
        output = builder.new_entry(
            f"{source.name}_grad",
            EntryKind.BACKWARD,
            node_name,
            "ElementWiseSum",
            0,
            source.shape,
            source.dtype,
        )
        add_sum(builder, node_name, parts, output, OpReqType.WRITE_TO)
        return output

    def _sum_variable(self, variable_entry: int) -> None:
        """Sum the contributions of a variable read twice by one node into its gradient array."""
        name = self.builder.entries[variable_entry].variable
        assert name is not None
        add_sum(
            self.builder,
            self.builder.step_name(f"{name}_grad_sum"),
            self.contributions[variable_entry],
            self._argument_grad(variable_entry),
            OpReqType.ADD_TO if self.req[name] == "add" else OpReqType.WRITE_TO,
        )


def _backward_inplace(
    prop: Any,
    tokens: tuple[list, list, list],
    slots: dict[str, list[int | None]],
    in_grad: list[int],
    step_req: list[OpReqType],
) -> list[tuple[int, int]]:
    """The (input, input gradient) pairs the property lets share memory, among declared values."""
    grad_tokens, in_tokens, out_tokens = tokens
    grad_out_tokens = [("in_grad", i) for i in range(len(in_grad))]
    options = []
    for source_token, target_token in (
        prop.backward_inplace_option(grad_tokens, in_tokens, out_tokens, grad_out_tokens) or []
    ):
        source_entry = slots[source_token[0]][source_token[1]]
        target_index = target_token[1]
        if source_entry is None or step_req[target_index] == OpReqType.NULL:
            continue
        options.append((source_entry, in_grad[target_index]))
    return options


def add_sum(
    builder: GraphBuilder, name: str, parts: list[int], output: int, req: OpReqType
) -> None:
    """Append an ElementWiseSum step writing ``output`` (in place over the first part when allowed)."""
    step = Step(0, name, StepKind.SUM, "ElementWiseSum", None, None)
    step.in_data = list(parts)
    step.out_data = [output]
    step.req = [req]
    step.inputs = list(parts)
    step.outputs = [output]
    if req == OpReqType.WRITE_TO:
        step.inplace_options = [(parts[0], output)]
    builder.add_step(step)
