"""Imperative autograd: record ``mx.nd`` ops, then push their backward through the engine.

Idea (MXNet: ``Imperative::RecordOp`` / ``Imperative::Backward`` in
src/imperative/imperative.cc): inside ``with autograd.record():`` every
operator the imperative invoke pushes is also *recorded*: each output NDArray
gets an entry pointing at a node holding the operator, its property and the
arrays its backward declared it needs (``declare_backward_dependency``; the
rest is not kept, exactly as the executor's planner frees it).  Arrays marked
with ``attach_grad`` are the leaves.  ``backward(heads)`` walks the nodes
reachable from the heads in reverse topological order and pushes **one engine
op per node** that calls ``operator.backward`` on the raw arrays — the same
operator definitions (library ops, SimpleOps, Custom ops) the forward used.

Rules:
    * a backward op reads (const vars) the saved inputs / outputs / aux
      states and the gradient buffers flowing into it, and writes (mutate
      vars) the input-gradient buffers and its resources' vars; the engine
      orders everything else;
    * an entry used more than once gets one buffer per use; the consumer sums
      them inside its own backward op (a leaf: one final accumulate op);
    * a leaf used once is written directly with its ``grad_req``:
      ``'write'`` → WRITE_TO, ``'add'`` → ADD_TO; ``'null'`` leaves are skipped;
    * loss ops (``SoftmaxOutput``, ``MakeLoss`` …) do not declare out_grad, so
      the head gradient is never handed to them;
    * without ``retain_graph`` the nodes are freed after backward is pushed:
      a second backward through them raises, naming the op;
    * in engine debug mode the arrays a backward kernel only reads are handed
      over read-only, so a kernel scribbling on its inputs fails by name.

:class:`Function` records NDArray-coded functions (Python forward / backward)
as one node, like MXNet's ``autograd.Function``; :func:`get_symbol` turns a
recorded history into a Symbol (to draw, inspect or bind it).

State kept:
    _state.recording / _state.training   thread-local flags (MXNet: thread-local too)
    NDArray._ag                          the array's entry: a leaf (_Leaf) or (node, index)
    _Node                                prop, operator, inputs' entries, saved arrays, metadata

Example::

    >>> import mxnb as mx
    >>> x = mx.nd.array([1.0, 2.0, 3.0]); x.attach_grad()
    >>> with mx.autograd.record():
    ...     y = x * x + x
    >>> y.backward()
    >>> x.grad.asnumpy()
    array([3., 5., 7.], dtype=float32)
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from . import engine as _engine_module
from . import resource as _resource
from .base import MXNBError, NotSupportedError, ParamError
from .operator.base import OpContext, OperatorProperty, OpReqType

__all__ = [
    "AutogradError",
    "Function",
    "backward",
    "detach",
    "get_grad",
    "get_symbol",
    "grad",
    "is_recording",
    "is_training",
    "mark_variables",
    "pause",
    "predict_mode",
    "record",
    "set_recording",
    "set_training",
    "train_mode",
]


class AutogradError(MXNBError, RuntimeError):
    """Autograd misuse: a head not recorded, a graph already freed, in-place writes while recording."""


# ---------------------------------------------------------------------------
# thread-local recording / training flags
# ---------------------------------------------------------------------------


class _State(threading.local):
    recording = False  # ops pushed by this thread are recorded
    training = False  # ops run in training mode (Dropout drops, BatchNorm uses batch stats)


_state = _State()


def is_recording() -> bool:
    """True inside ``record()`` (on this thread)."""
    return _state.recording


def is_training() -> bool:
    """True in training mode (``record()`` default, ``train_mode()``) on this thread."""
    return _state.training


def set_recording(is_recording: bool) -> bool:
    """Turn recording on or off for this thread; return the previous value."""
    previous = _state.recording
    _state.recording = bool(is_recording)
    return previous


def set_training(train_mode: bool) -> bool:
    """Turn training mode on or off for this thread; return the previous value."""
    previous = _state.training
    _state.training = bool(train_mode)
    return previous


@contextlib.contextmanager
def _scope(recording: bool | None, training: bool | None) -> Iterator[None]:
    previous = (_state.recording, _state.training)
    if recording is not None:
        _state.recording = recording
    if training is not None:
        _state.training = training
    try:
        yield
    finally:
        _state.recording, _state.training = previous


def record(train_mode: bool = True) -> contextlib.AbstractContextManager[None]:
    """Record the ops run in the block for a later ``backward`` (training mode by default).

    Example::

        >>> import mxnb as mx
        >>> with mx.autograd.record():
        ...     mx.autograd.is_recording(), mx.autograd.is_training()
        (True, True)
    """
    return _scope(True, train_mode)


def pause(train_mode: bool = False) -> contextlib.AbstractContextManager[None]:
    """Stop recording inside a ``record()`` block (prediction mode by default)."""
    return _scope(False, train_mode)


def train_mode() -> contextlib.AbstractContextManager[None]:
    """Run the block in training mode, leaving recording as it is."""
    return _scope(None, True)


def predict_mode() -> contextlib.AbstractContextManager[None]:
    """Run the block in prediction mode, leaving recording as it is."""
    return _scope(None, False)


# ---------------------------------------------------------------------------
# the recorded graph
# ---------------------------------------------------------------------------

_GRAD_REQS = {"write": OpReqType.WRITE_TO, "add": OpReqType.ADD_TO, "null": OpReqType.NULL}


@dataclass(eq=False)
class _Leaf:
    """A marked variable: where its gradient goes and how it is written."""

    grad: Any  # NDArray, or None for a 'null' variable
    grad_req: str  # 'write' | 'add' | 'null'


@dataclass(eq=False)
class _Node:
    """One recorded operator call (MXNet: an nnvm node with its AGInfo)."""

    prop: OperatorProperty
    operator: Any  # the Operator the forward ran; None once freed
    is_train: bool
    ctx: Any
    inputs: list[_Entry | None]  # entry of each input at record time; None: a constant
    saved_inputs: list[Any]  # NDArray when backward declared it, else None
    saved_outputs: list[Any]  # NDArray when backward declared it, else None
    aux: list[Any]  # aux-state NDArrays (BatchNorm moving stats)
    in_meta: list[tuple[tuple, np.dtype]]  # (shape, dtype) of each input
    out_meta: list[tuple[tuple, np.dtype]]  # (shape, dtype) of each output
    needs_out_grad: list[bool]  # out_grad[i] declared by backward
    freed: bool = False


@dataclass(eq=False)
class _Entry:
    """What an NDArray is to autograd: a leaf, or output ``index`` of ``node``."""

    node: _Node | None = None
    index: int = 0
    leaf: _Leaf | None = None

    @property
    def key(self) -> Any:
        """A hashable identity: the leaf, or (node, index)."""
        return self.leaf if self.leaf is not None else (self.node, self.index)


class _Token:
    """Stands for one data entry when asking ``declare_backward_dependency``."""

    __slots__ = ("index", "kind")

    def __init__(self, kind: str, index: int) -> None:
        self.kind = kind
        self.index = index


def _entry_of(array: Any) -> _Entry | None:
    entry = array.__dict__.get("_ag")
    if entry is None:
        return None
    if entry.node is not None and entry.node.freed:
        return None  # a freed graph: the array is a constant from now on
    if entry.leaf is not None and entry.leaf.grad_req == "null" and entry.leaf.grad is None:
        return None
    return entry


def _record_op(
    prop: OperatorProperty,
    operator: Any,
    inputs: Sequence[Any],
    outputs: Sequence[Any],
    aux: Sequence[Any],
    is_train: bool,
) -> None:
    """Record one pushed op (called by the imperative invoke while recording).

    Nothing is recorded when no input is a leaf or a recorded output
    (MXNet: the op does not need a gradient).
    """
    entries = [_entry_of(array) for array in inputs]
    if all(entry is None for entry in entries):
        return
    for output in outputs:
        existing = output.__dict__.get("_ag")
        if existing is not None and not (existing.node is not None and existing.node.freed):
            raise AutogradError(
                f"{prop.op_name}: writing into an array that is already part of the recorded "
                f"graph (an attached variable or a recorded output) would make its gradients "
                f"wrong; do not use in-place operations (+=, x[:] = ..., out=x) inside "
                f"autograd.record(), or call backward first / write outside the record block"
            )
    num_outputs = len(outputs)
    save_in, save_out, needs_out_grad = _dependencies(prop, len(inputs), num_outputs)
    node = _Node(
        prop=prop,
        operator=operator,
        is_train=is_train,
        ctx=outputs[0].context if outputs else inputs[0].context,
        inputs=entries,
        saved_inputs=[x if keep else None for x, keep in zip(inputs, save_in)],
        saved_outputs=[y if keep else None for y, keep in zip(outputs, save_out)],
        aux=list(aux),
        in_meta=[(x.shape, x.dtype) for x in inputs],
        out_meta=[(y.shape, y.dtype) for y in outputs],
        needs_out_grad=needs_out_grad,
    )
    for index, output in enumerate(outputs):
        output.__dict__["_ag"] = _Entry(node=node, index=index)


def _dependencies(
    prop: OperatorProperty, num_inputs: int, num_outputs: int
) -> tuple[list[bool], list[bool], list[bool]]:
    """Which inputs / outputs / out_grads backward reads, asked once per property and arity.

    The imperative invoke caches properties, so the answer is cached on the
    property (``declare_backward_dependency`` depends only on the parameters).
    """
    cache = prop.__dict__.get("_autograd_dependencies")
    if cache is None:
        cache = prop.__dict__["_autograd_dependencies"] = {}
    key = (num_inputs, num_outputs)
    found = cache.get(key)
    if found is None:
        grad_tokens = [_Token("out_grad", i) for i in range(num_outputs)]
        in_tokens = [_Token("in_data", i) for i in range(num_inputs)]
        out_tokens = [_Token("out_data", i) for i in range(num_outputs)]
        declared = prop.declare_backward_dependency(grad_tokens, in_tokens, out_tokens)
        wanted = {(token.kind, token.index) for token in declared}
        found = (
            [("in_data", i) in wanted for i in range(num_inputs)],
            [("out_data", i) in wanted for i in range(num_outputs)],
            [("out_grad", i) in wanted for i in range(num_outputs)],
        )
        cache[key] = found
    return found


# ---------------------------------------------------------------------------
# variables
# ---------------------------------------------------------------------------


def mark_variables(variables: Any, gradients: Any, grad_reqs: Any = "write") -> None:
    """Mark arrays as leaves whose gradients go into ``gradients`` (MXNet: ``mark_variables``).

    ``grad_reqs`` is one of ``'write' | 'add' | 'null'`` or a list of them.
    """
    variables = _as_list(variables)
    gradients = _as_list(gradients)
    if len(variables) != len(gradients):
        raise ParamError(
            f"mark_variables: {len(variables)} variables but {len(gradients)} gradient arrays"
        )
    reqs = [grad_reqs] * len(variables) if isinstance(grad_reqs, str) else list(grad_reqs)
    if len(reqs) != len(variables):
        raise ParamError(f"mark_variables: {len(reqs)} grad_reqs for {len(variables)} variables")
    for variable, gradient, req in zip(variables, gradients, reqs):
        if req not in _GRAD_REQS:
            raise ParamError(f"grad_req must be 'write', 'add' or 'null'; got {req!r}")
        if gradient is not None and tuple(gradient.shape) != tuple(variable.shape):
            raise ParamError(
                f"mark_variables: gradient of shape {tuple(gradient.shape)} for a variable of "
                f"shape {tuple(variable.shape)}; they must match"
            )
        variable.__dict__["_ag"] = _Entry(leaf=_Leaf(grad=gradient, grad_req=req))


def attach_grad(array: Any, grad_req: str = "write") -> None:
    """Give ``array`` a zero gradient buffer and mark it as a leaf (``x.attach_grad()``)."""
    from . import ndarray as nd

    if grad_req not in _GRAD_REQS:
        raise ParamError(
            f"attach_grad: grad_req must be 'write', 'add' or 'null'; got {grad_req!r}"
        )
    gradient = nd.zeros_like(array)
    mark_variables([array], [gradient], grad_req)


def get_grad(array: Any) -> Any:
    """Return the gradient buffer of a marked array (``x.grad``), None otherwise."""
    entry = array.__dict__.get("_ag")
    if entry is None or entry.leaf is None:
        return None
    return entry.leaf.grad


def detach(array: Any) -> Any:
    """Return a view of ``array`` sharing its memory that autograd treats as a constant."""
    return array._view(array._raw())


def _as_list(value: Any) -> list[Any]:
    if value is None:
        return []
    if isinstance(value, (list, tuple)):
        return list(value)
    return [value]


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
        from .grad_graph import grad_with_graph

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
        from . import ndarray as nd

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
        sinks: list[Any] = []
        reqs: list[OpReqType] = []
        for entry, (shape, dtype) in zip(node.inputs, node.in_meta):
            if self._needs(entry, node_needs):
                sink, req = self._sink(nd, entry, shape, dtype, ctx, uses, contributions)  # type: ignore[arg-type]
            else:
                sink, req = None, OpReqType.NULL
            sinks.append(sink)
            reqs.append(req)
        requested = _resource.manager.request_all(
            ctx, node.prop.backward_resource([shape for shape, _ in node.in_meta])
        )
        const_vars = [x._var for x in node.saved_inputs if x is not None]
        const_vars += [y._var for y in node.saved_outputs if y is not None]
        const_vars += [a._var for a in node.aux]
        for grads in out_grads:
            const_vars += [g._var for g in grads or []]
        mutate_vars = [s._var for s in sinks if s is not None]
        mutate_vars += [r.var for r in requested]
        const_vars = [v for v in const_vars if all(v is not m for m in mutate_vars)]

        operator = node.operator
        is_train = self.train
        in_meta, out_meta = node.in_meta, node.out_meta
        saved_in, saved_out, aux = node.saved_inputs, node.saved_outputs, node.aux
        label = f"{node.prop.op_name}_backward"
        guard = _read_only_guard(label) if _engine_module.is_debug() else None

        def run(run_ctx: Any) -> None:
            out_grad = []
            for grads, (shape, dtype) in zip(out_grads, out_meta):
                if grads is None:
                    out_grad.append(None)
                elif not grads:
                    out_grad.append(xp.zeros(shape, dtype=dtype))
                elif len(grads) == 1:
                    out_grad.append(grads[0]._raw())
                else:
                    total = grads[0]._raw().copy()
                    for more in grads[1:]:
                        total += more._raw()
                    out_grad.append(total)
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
                    from .ndarray.debug import raise_read_only_write

                    raise_read_only_write(
                        exc,
                        label,
                        "the backward kernel wrote into an array it only reads (out_grad, "
                        "in_data, out_data or aux); write gradients into in_grad only",
                    )
                raise

        eng.push_sync(run, ctx, const_vars, mutate_vars, 0, label)

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
    from .ndarray.debug import readonly_view

    def guard(arrays: list[Any], kind: str) -> list[Any]:
        return [
            None if array is None else readonly_view(array, label, f"{kind}[{index}]")
            for index, array in enumerate(arrays)
        ]

    return guard


def _push_sum(eng: Any, grads: list[Any], target: Any, req: OpReqType) -> None:
    """Push ``target (req)= sum(grads)`` as one engine op."""
    from .operator.base import assign

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
    from . import symbol as sym_module

    entry = x.__dict__.get("_ag")
    if entry is None:
        raise AutogradError(
            f"get_symbol: the array of shape {tuple(x.shape)} was not recorded; compute it inside "
            f"`with autograd.record():` from arrays you called attach_grad() on"
        )
    if entry.leaf is not None:
        return sym_module.Variable("var0")
    order = _Backward([x], None, None, True, True)._topological()
    names: dict[Any, Any] = {}
    counters = {"var": 0, "const": 0}

    def variable(kind: str) -> Any:
        name = f"{kind}{counters[kind]}"
        counters[kind] += 1
        return sym_module.Variable(name)

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
                inputs.append(variable("const"))
            elif input_entry.leaf is not None:
                if input_entry.leaf not in names:
                    names[input_entry.leaf] = variable("var")
                inputs.append(names[input_entry.leaf])
            else:
                inputs.append(outputs[(input_entry.node, input_entry.index)])
        inputs += [variable("const") for _ in node.aux]
        result = sym_module.create(
            op_name, *inputs, name=f"{op_name.lower()}{number}", **node.prop.get_params_str()
        )
        count = len(node.out_meta)
        for index in range(count):
            outputs[(node, index)] = result if count == 1 else result[index]
    return outputs[(entry.node, entry.index)]


# ---------------------------------------------------------------------------
# user-defined differentiable functions
# ---------------------------------------------------------------------------


class Function:
    """A differentiable function written with NDArray code (MXNet: ``autograd.Function``).

    Subclass it, define ``forward(*inputs)`` and ``backward(*output_grads)``
    (returning one gradient per input), keep what backward needs with
    ``save_for_backward``; call an *instance* once.  Forward runs unrecorded;
    when recording, the call becomes one node whose backward is one engine op
    running your ``backward`` (which may push more ops and wait on them).

    Example::

        >>> import mxnb as mx
        >>> class Sigmoid(mx.autograd.Function):
        ...     def forward(self, x):
        ...         y = 1 / (1 + mx.nd.exp(-x))
        ...         self.save_for_backward(y)
        ...         return y
        ...     def backward(self, dy):
        ...         (y,) = self.saved_tensors
        ...         return dy * y * (1 - y)
        >>> x = mx.nd.array([0.0]); x.attach_grad()
        >>> with mx.autograd.record():
        ...     z = Sigmoid()(x)
        >>> z.backward(); x.grad.asnumpy()
        array([0.25], dtype=float32)
    """

    def __init__(self) -> None:
        self._used = False
        self.saved_tensors: tuple[Any, ...] = ()

    def save_for_backward(self, *args: Any) -> None:
        """Keep arrays for ``backward`` (in ``self.saved_tensors``)."""
        self.saved_tensors = args

    def forward(self, *inputs: Any) -> Any:
        """Compute the outputs (NDArray or tuple of NDArrays) from the inputs."""
        raise NotImplementedError(f"{type(self).__name__}.forward")

    def backward(self, *output_grads: Any) -> Any:
        """Return the gradient of each input (NDArray or tuple) from the output gradients."""
        raise NotImplementedError(f"{type(self).__name__}.backward")

    def __call__(self, *inputs: Any) -> Any:
        if self._used:
            raise AutogradError(
                f"{type(self).__name__}: each Function instance can be called once; "
                f"create a new instance per call ({type(self).__name__}()(x))"
            )
        self._used = True
        with pause(train_mode=is_training()):
            outputs = self.forward(*inputs)
        if not is_recording():
            return outputs
        results = list(outputs) if isinstance(outputs, (list, tuple)) else [outputs]
        prop = _FunctionProp(self, len(inputs), len(results))
        _record_op(prop, _FunctionOperator(self), list(inputs), results, [], is_training())
        return outputs


class _FunctionProp(OperatorProperty):
    """The property of one recorded :class:`Function` call (its backward reads out_grad only)."""

    def __init__(self, function: Function, num_inputs: int, num_outputs: int) -> None:
        super().__init__()
        self.function = function
        self.num_inputs = num_inputs
        self.count = num_outputs

    @property
    def op_name(self) -> str:
        """The Function subclass's name."""
        return type(self.function).__name__

    def list_arguments(self) -> list[str]:
        """``data0``, ``data1`` …"""
        return [f"data{i}" for i in range(self.num_inputs)]

    def list_outputs(self) -> list[str]:
        """``output0``, ``output1`` …"""
        return [f"output{i}" for i in range(self.count)]

    def declare_backward_dependency(self, out_grad: Any, in_data: Any, out_data: Any) -> list[Any]:
        """Only out_grad: the function keeps what else it needs in ``saved_tensors``."""
        return list(out_grad)


class _FunctionOperator:
    """Runs a Function's Python backward over NDArrays wrapping the raw gradient buffers."""

    def __init__(self, function: Function) -> None:
        self.function = function

    def backward(
        self,
        ctx: OpContext,
        out_grad: Sequence[Any],
        in_data: Sequence[Any],
        out_data: Sequence[Any],
        req: Sequence[OpReqType],
        in_grad: Sequence[Any],
        aux: Sequence[Any],
    ) -> None:
        """Call ``function.backward`` and write its results as ``req`` says."""
        from .context import cpu
        from .ndarray import NDArray

        context = getattr(ctx.run_ctx, "ctx", None) or cpu()
        heads = [NDArray._wrap_raw(g, context) for g in out_grad]
        with pause(train_mode=ctx.is_train):
            grads = self.function.backward(*heads)
        grads = list(grads) if isinstance(grads, (list, tuple)) else [grads]
        if len(grads) != len(in_grad):
            raise AutogradError(
                f"{type(self.function).__name__}.backward returned {len(grads)} gradients for "
                f"{len(in_grad)} inputs"
            )
        targets = []
        for buffer, request, value in zip(in_grad, req, grads):
            if request == OpReqType.NULL or value is None:
                continue
            target = NDArray._wrap_raw(buffer, context)
            if request == OpReqType.ADD_TO:
                target[:] = target + value
            else:
                target[:] = value
            targets.append(target)
        for target in targets:
            target.wait_to_read()
