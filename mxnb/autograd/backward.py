"""The backward pass: order the recorded nodes, plan the gradient buffers, push one op per node.

Idea (MXNet: ``Imperative::Backward``): ``backward(heads)`` walks the nodes
reachable from the heads in reverse topological order and pushes **one engine
op per node** that calls ``operator.backward`` on the raw arrays, the same
operator definitions the forward used; :func:`get_symbol` turns the same walk
into a Symbol.

Rules: see :mod:`mxnb.autograd` (buffers per use, ``grad_req`` of the
leaves, loss ops without head gradients, freeing without ``retain_graph``,
read-only inputs in debug mode).

State kept: none beyond one :class:`_Backward` while it runs.

Example::

    >>> import mxnb as mx
    >>> x = mx.nd.array([1.0, 2.0]); x.attach_grad()
    >>> with mx.autograd.record():
    ...     y = x * x
    >>> mx.autograd.grad(y, x)[0].asnumpy().tolist()
    [2.0, 4.0]
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import engine as _engine_module
from .. import resource as _resource
from ..base import NotSupportedError, ParamError
from ..operator.base import OpContext, OpReqType
from .recording import AutogradError, set_training
from .tape import _GRAD_REQS, _as_list, _Entry, _Leaf, _Node

# ---------------------------------------------------------------------------
# backward
# ---------------------------------------------------------------------------


def backward(
    heads: Any,
    head_grads: Any = None,
    retain_graph: bool = False,
    train_mode: bool = True,
) -> None:
    """Compute the gradients of ``heads`` into the marked variables' ``.grad`` buffers.

    Parameters
    ----------
    heads : NDArray or list of NDArray
        Recorded outputs (or marked variables) to differentiate.
    head_grads : NDArray or list (entries may be None), optional
        The gradient flowing into each head; ones when None.
    retain_graph : bool
        Keep the recorded graph for another backward.
    train_mode : bool
        Run the backward ops in training mode.
    """
    _Backward(heads, head_grads, None, retain_graph, train_mode).run()


def grad(
    heads: Any,
    variables: Any,
    head_grads: Any = None,
    retain_graph: bool | None = None,
    create_graph: bool = False,
    train_mode: bool = True,
) -> list[Any]:
    """Return the gradients of ``heads`` with respect to ``variables`` as new arrays.

    ``.grad`` buffers are left untouched.  With ``create_graph=True`` the
    gradients are computed with recorded ops (:mod:`mxnb.grad_graph`), so they
    can be differentiated again (higher-order gradients); ``retain_graph``
    then defaults to True.
    """
    variables = _as_list(variables)
    retain = bool(create_graph) if retain_graph is None else bool(retain_graph)
    if create_graph:
        from ..grad_graph import grad_with_graph

        return grad_with_graph(heads, variables, head_grads, retain, train_mode)
    return _Backward(heads, head_grads, variables, retain, train_mode).run()


class _Backward:
    """One backward pass: order the nodes, plan the gradient buffers, push one op per node."""

    def __init__(
        self, heads: Any, head_grads: Any, variables: list[Any] | None, retain: bool, train: bool
    ) -> None:
        self.heads = _as_list(heads)
        if not self.heads:
            raise ParamError("autograd.backward: no heads given")
        grads = _as_list(head_grads)
        if not grads:
            grads = [None] * len(self.heads)
        if len(grads) != len(self.heads):
            raise ParamError(
                f"autograd.backward: {len(grads)} head gradients for {len(self.heads)} heads"
            )
        self.head_grads = grads
        self.variables = variables
        self.retain = retain
        self.train = train
        self.head_entries = [self._head_entry(head) for head in self.heads]
        self.targets: dict[_Leaf, int] = {}  # leaf -> position in the result of grad()
        if variables is not None:
            for position, variable in enumerate(variables):
                entry = variable.__dict__.get("_ag")
                if entry is None or entry.leaf is None:
                    raise AutogradError(
                        f"autograd.grad: variable {position} (shape {tuple(variable.shape)}) is not "
                        f"marked; call attach_grad() on it before recording"
                    )
                self.targets[entry.leaf] = position

    def _head_entry(self, head: Any) -> _Entry:
        entry = head.__dict__.get("_ag")
        if entry is None:
            raise AutogradError(
                f"cannot differentiate an array of shape {tuple(head.shape)} that is not in a "
                f"recorded graph: compute it inside `with autograd.record():` from arrays you "
                f"called attach_grad() on"
            )
        if entry.node is not None and entry.node.freed:
            raise AutogradError(
                f"the graph of {entry.node.prop.op_name} was freed by an earlier backward; pass "
                f"retain_graph=True to the first backward to differentiate the same graph twice"
            )
        return entry

    # -- planning ------------------------------------------------------------------
    def _needs(self, entry: _Entry | None, node_needs: dict[_Node, bool]) -> bool:
        if entry is None:
            return False
        if entry.leaf is not None:
            if self.variables is not None:
                return entry.leaf in self.targets
            return entry.leaf.grad_req != "null" and entry.leaf.grad is not None
        return node_needs.get(entry.node, False)  # type: ignore[arg-type]

    def _topological(self) -> list[_Node]:
        """Nodes reachable from the heads, producers before consumers."""
        order: list[_Node] = []
        seen: set[int] = set()
        for head in self.head_entries:
            if head.node is None or id(head.node) in seen:
                continue
            stack: list[tuple[_Node, int]] = [(head.node, 0)]
            seen.add(id(head.node))
            while stack:
                node, position = stack[-1]
                if position < len(node.inputs):
                    stack[-1] = (node, position + 1)
                    entry = node.inputs[position]
                    child = entry.node if entry is not None else None
                    if child is not None and id(child) not in seen:
                        if child.freed:
                            raise AutogradError(
                                f"the graph through {child.prop.op_name} was freed by an earlier "
                                f"backward; pass retain_graph=True to the first backward"
                            )
                        seen.add(id(child))
                        stack.append((child, 0))
                else:
                    stack.pop()
                    order.append(node)
        return order

    def _node_needs(self, order: list[_Node]) -> dict[_Node, bool]:
        """Whether each node (in topological order) leads to a gradient that is asked for."""
        node_needs: dict[_Node, bool] = {}
        for node in order:
            node_needs[node] = any(self._needs(entry, node_needs) for entry in node.inputs)
        return node_needs

    def _head_contributions(self, nd: Any, node_needs: dict[_Node, bool]) -> dict[Any, list[Any]]:
        """The gradient flowing into each head (ones when none was given), by entry key."""
        contributions: dict[Any, list[Any]] = {}
        for head, entry, head_grad in zip(self.heads, self.head_entries, self.head_grads):
            if not self._needs(entry, node_needs):
                continue
            if head_grad is None:
                head_grad = nd.ones_like(head)
            elif not isinstance(head_grad, nd.NDArray):
                head_grad = nd.array(head_grad, ctx=head.context, dtype=head.dtype)
            elif tuple(head_grad.shape) != tuple(head.shape):
                raise ParamError(
                    f"autograd.backward: head gradient of shape {tuple(head_grad.shape)} for a "
                    f"head of shape {tuple(head.shape)}"
                )
            contributions.setdefault(entry.key, []).append(head_grad)
        return contributions

    def run(self) -> list[Any]:
        from .. import ndarray as nd

        order = self._topological()
        node_needs = self._node_needs(order)
        # How many gradient contributions each entry receives: one per use.
        uses: dict[Any, int] = {}
        for node in order:
            if not node_needs[node]:
                continue
            for entry in node.inputs:
                if self._needs(entry, node_needs):
                    uses[entry.key] = uses.get(entry.key, 0) + 1  # type: ignore[union-attr]
        contributions = self._head_contributions(nd, node_needs)
        results: list[Any] = [None] * len(self.variables or [])
        eng = _engine_module.get()
        previous_training = set_training(self.train)
        try:
            for node in reversed(order):
                if node_needs[node]:
                    self._push_node(eng, nd, node, node_needs, uses, contributions)
            self._push_leaves(eng, nd, contributions, results)
        finally:
            set_training(previous_training)
        if not self.retain:
            for node in order:
                _free(node)
        return results

    def _sink(
        self,
        nd: Any,
        entry: _Entry,
        shape: tuple,
        dtype: np.dtype,
        ctx: Any,
        uses: dict,
        contributions: dict,
    ) -> tuple[Any, OpReqType]:
        """Where the gradient of one input slot goes, and how it is written."""
        leaf = entry.leaf
        if (
            leaf is not None
            and self.variables is None
            and uses[leaf] == 1
            and leaf not in contributions
        ):
            # A leaf used once: write its .grad directly with its grad_req.
            return leaf.grad, _GRAD_REQS[leaf.grad_req]
        buffer = nd.empty(shape, ctx=ctx, dtype=dtype)
        contributions.setdefault(entry.key, []).append(buffer)
        return buffer, OpReqType.WRITE_TO

    def _push_node(
        self, eng: Any, nd: Any, node: _Node, node_needs: dict, uses: dict, contributions: dict
    ) -> None:
        ctx = node.ctx
        xp = ctx.array_module
        out_grads: list[list[Any] | None] = []
        for index, needed in enumerate(node.needs_out_grad):
            out_grads.append(contributions.pop((node, index), []) if needed else None)
        sinks, reqs = self._sinks(nd, node, node_needs, uses, contributions)
        requested = _resource.manager.request_all(
            ctx, node.prop.backward_resource([shape for shape, _ in node.in_meta])
        )
        const_vars, mutate_vars = _vars_of(node, out_grads, sinks, requested)
        operator = node.operator
        is_train = self.train
        in_meta, out_meta = node.in_meta, node.out_meta
        saved_in, saved_out, aux = node.saved_inputs, node.saved_outputs, node.aux
        label = f"{node.prop.op_name}_backward"
        guard = _read_only_guard(label) if _engine_module.is_debug() else None

        def run(run_ctx: Any) -> None:
            out_grad = [
                _summed(grads, shape, dtype, xp)
                for grads, (shape, dtype) in zip(out_grads, out_meta)
            ]
            in_data = [None if x is None else x._raw() for x in saved_in]
            out_data = [None if y is None else y._raw() for y in saved_out]
            aux_data = [a._raw() for a in aux]
            if guard is not None:  # debug mode: what backward only reads is read-only
                out_grad = guard(out_grad, "out_grad")
                in_data = guard(in_data, "in_data")
                out_data = guard(out_data, "out_data")
                aux_data = guard(aux_data, "aux")
            in_grad = [
                xp.empty(shape, dtype=dtype) if s is None else s._raw()
                for s, (shape, dtype) in zip(sinks, in_meta)
            ]
            op_ctx = OpContext(is_train=is_train, run_ctx=run_ctx, requested=requested, xp=xp)
            try:
                operator.backward(op_ctx, out_grad, in_data, out_data, reqs, in_grad, aux_data)
            except ValueError as exc:
                if guard is not None:  # debug mode: the inputs were read-only views
                    from ..ndarray.debug import raise_read_only_write

                    raise_read_only_write(
                        exc,
                        label,
                        "the backward kernel wrote into an array it only reads (out_grad, "
                        "in_data, out_data or aux); write gradients into in_grad only",
                    )
                raise

        eng.push_sync(run, ctx, const_vars, mutate_vars, 0, label)

    def _sinks(
        self, nd: Any, node: _Node, node_needs: dict, uses: dict, contributions: dict
    ) -> tuple[list[Any], list[OpReqType]]:
        """Where each input's gradient goes (None: not needed) and how it is written."""
        sinks: list[Any] = []
        reqs: list[OpReqType] = []
        for entry, (shape, dtype) in zip(node.inputs, node.in_meta):
            if self._needs(entry, node_needs):
                sink, req = self._sink(nd, entry, shape, dtype, node.ctx, uses, contributions)  # type: ignore[arg-type]
            else:
                sink, req = None, OpReqType.NULL
            sinks.append(sink)
            reqs.append(req)
        return sinks, reqs

    def _push_leaves(self, eng: Any, nd: Any, contributions: dict, results: list[Any]) -> None:
        """Sum the gradients of leaves used more than once (or the results of grad())."""
        for key, grads in contributions.items():
            if not isinstance(key, _Leaf) or not grads:
                continue
            if self.variables is not None:
                first = grads[0]
                target = nd.empty(first.shape, ctx=first.context, dtype=first.dtype)
                results[self.targets[key]] = target
                req = OpReqType.WRITE_TO
            else:
                target = key.grad
                req = _GRAD_REQS[key.grad_req]
            _push_sum(eng, grads, target, req)
        for position, result in enumerate(results):
            if result is None and self.variables is not None:
                variable = self.variables[position]
                results[position] = nd.zeros_like(variable)


def _read_only_guard(label: str) -> Any:
    """Return ``guard(arrays, kind)`` making read-only views (debug mode, see mxnb.ndarray.debug)."""
    from ..ndarray.debug import readonly_view

    def guard(arrays: list[Any], kind: str) -> list[Any]:
        return [
            None if array is None else readonly_view(array, label, f"{kind}[{index}]")
            for index, array in enumerate(arrays)
        ]

    return guard


def _push_sum(eng: Any, grads: list[Any], target: Any, req: OpReqType) -> None:
    """Push ``target (req)= sum(grads)`` as one engine op."""
    from ..operator.base import assign

    def run(run_ctx: Any) -> None:
        total = grads[0]._raw()
        if len(grads) > 1:
            total = total.copy()
            for more in grads[1:]:
                total += more._raw()
        assign(target._raw(), req, total)

    const_vars = [g._var for g in grads if g._var is not target._var]
    eng.push_sync(run, target.context, const_vars, [target._var], 0, "_grad_accumulate")


def _free(node: _Node) -> None:
    """Drop what a node kept for backward (MXNet frees the graph unless retain_graph)."""
    node.freed = True
    node.operator = None
    node.saved_inputs = [None] * len(node.saved_inputs)
    node.saved_outputs = [None] * len(node.saved_outputs)
    node.aux = []
    node.inputs = [None] * len(node.inputs)


class _SymbolNaming:
    """The variables :func:`get_symbol` makes: ``var0``, ``var1`` ... (one per marked array), ``const0`` ..."""

    def __init__(self, sym_module: Any) -> None:
        self.sym_module = sym_module
        self.counters = {"var": 0, "const": 0}
        self.leaves: dict[Any, Any] = {}  # marked array's leaf -> its variable

    def variable(self, kind: str) -> Any:
        """A new variable named ``<kind><n>``."""
        name = f"{kind}{self.counters[kind]}"
        self.counters[kind] += 1
        return self.sym_module.Variable(name)

    def leaf(self, leaf: Any) -> Any:
        """The variable of a marked array (made at its first use)."""
        if leaf not in self.leaves:
            self.leaves[leaf] = self.variable("var")
        return self.leaves[leaf]


def get_symbol(x: Any) -> Any:
    """Return the recorded history of ``x`` as a Symbol (MXNet: ``autograd.get_symbol``).

    Marked variables become ``var0``, ``var1`` … and arrays autograd treats as
    constants ``const0`` …; every recorded op becomes a node with its
    parameters, so the imperative computation can be drawn
    (``mx.widgets.plot_network``), inspected or bound like any symbol.

    Example::

        >>> import mxnb as mx
        >>> x = mx.nd.ones((2, 3)); x.attach_grad()
        >>> with mx.autograd.record():
        ...     y = mx.nd.relu(x * 2)
        >>> mx.autograd.get_symbol(y).list_arguments()
        ['var0']
    """
    from .. import symbol as sym_module

    entry = x.__dict__.get("_ag")
    if entry is None:
        raise AutogradError(
            f"get_symbol: the array of shape {tuple(x.shape)} was not recorded; compute it inside "
            f"`with autograd.record():` from arrays you called attach_grad() on"
        )
    if entry.leaf is not None:
        return sym_module.Variable("var0")
    order = _Backward([x], None, None, True, True)._topological()
    naming = _SymbolNaming(sym_module)
    outputs: dict[tuple[_Node, int], Any] = {}
    for number, node in enumerate(order):
        op_name = node.prop.type_string
        if not op_name:
            raise NotSupportedError(
                f"get_symbol: {node.prop.op_name} (an autograd.Function) has no symbolic form"
            )
        inputs = []
        for input_entry in node.inputs:
            if input_entry is None:
                inputs.append(naming.variable("const"))
            elif input_entry.leaf is not None:
                inputs.append(naming.leaf(input_entry.leaf))
            else:
                inputs.append(outputs[(input_entry.node, input_entry.index)])
        inputs += [naming.variable("const") for _ in node.aux]
        result = sym_module.create(
            op_name, *inputs, name=f"{op_name.lower()}{number}", **node.prop.get_params_str()
        )
        count = len(node.out_meta)
        for index in range(count):
            outputs[(node, index)] = result if count == 1 else result[index]
    return outputs[(entry.node, entry.index)]


def _summed(grads: list[Any] | None, shape: tuple, dtype: Any, xp: Any) -> Any:
    """The head gradient of one output: None (not needed), zeros (none came), or their sum."""
    if grads is None:
        return None
    if not grads:
        return xp.zeros(shape, dtype=dtype)
    if len(grads) == 1:
        return grads[0]._raw()
    total = grads[0]._raw().copy()
    for more in grads[1:]:
        total += more._raw()
    return total


def _vars_of(node: Any, out_grads: list, sinks: list, requested: list) -> tuple[list, list]:
    """A backward op's vars: it reads what it saved and the head gradients, writes the sinks."""
    const_vars = [x._var for x in node.saved_inputs if x is not None]
    const_vars += [y._var for y in node.saved_outputs if y is not None]
    const_vars += [a._var for a in node.aux]
    for grads in out_grads:
        const_vars += [g._var for g in grads or []]
    mutate_vars = [s._var for s in sinks if s is not None]
    mutate_vars += [r.var for r in requested]
    const_vars = [v for v in const_vars if all(v is not m for m in mutate_vars)]
    return const_vars, mutate_vars
