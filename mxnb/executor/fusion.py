"""Pointwise fusion: a run of elementwise steps inside a bulk segment runs as one kernel.

Idea (MXNet: the pointwise fusion of ``src/operator/fusion/``, ``MXNET_USE_FUSION``,
on by default on GPUs): an LSTM cell's gates are nine elementwise ops after
its two matrix products, and its backward nine more.  One by one, each is a
kernel launch and a pass over memory, and on a GPU the launches cost more
than the arithmetic.  An op whose forward or backward *is* one formula says
so in the language of :mod:`mxnb.operator.statements` (``forward_ufunc``:
``maximum(x, 0)`` for a ReLU; ``forward_fused`` / ``backward_fused``: the
fused map it runs, sigmoid's, or ``da = g * b`` for a product).  Inside a
bulk segment (:mod:`.bulk`), a run of such steps becomes one
:class:`~mxnb.operator.fused.FusedMap`: one ``ElementwiseKernel`` on a GPU,
and on numpy the same statements, in the steps' order, each into its output.

Rule:

* a step joins a run when its op says its formula (forward or backward), or
  it is a gradient sum (``x0 + x1 + ...``, in ``sum_into``'s order); its
  outputs are written (a NULL one is not computed; an added-to one keeps the
  step alone), it has no aux states and no resources, and its arrays have the
  run's shape and floating dtype and are contiguous.  Two or more
  neighbouring steps of one segment make a run;
* the kernel reads the values the run does not compute (and the ops'
  scalars, as numpy scalars of the dtype) and writes every step's output, so
  each array holds afterwards what the steps would have left in it; an
  output whose memory a later step writes again (the planner's in place) is a
  local, dead by then.  A step of several outputs computes all of them before
  writing any, as its op does;
* the arrays a run writes and the ones it reads are the same memory or
  apart.  A partial overlap (an arena's offsets) leaves the run unfused: a
  GPU computes the elements at once, and a write could reach one not read yet;
* the memory plan is the one without fusion, and on numpy the bits are the
  steps' own: each statement is what its op computes, in the steps' order;
* when: ``MXNB_EXEC_FUSION=1`` / ``0``; unset, on for GPU contexts (real or
  virtual) and off on the CPU, as MXNet's.  Debug mode, a monitor and
  ``mx.engine.bulk(0)`` (no segments) run every step alone.

State kept: one FusedMap per distinct run text (:data:`_MAPS`), compiled once
for all the cells of an LSTM.

Example::

    >>> import numpy as np
    >>> import mxnb as mx
    >>> x = mx.sym.Variable('x')
    >>> square = mx.sym.elemwise_mul(x, x, name='square')
    >>> relu = mx.sym.Activation(square, act_type='relu', name='relu')
    >>> y = mx.sym.Activation(mx.sym.elemwise_add(relu, x, name='plus'), act_type='tanh', name='tanh')
    >>> exe = y.simple_bind(mx.cpu(), x=(2, 3), grad_req='null')
    >>> exe.arg_dict['x'][:] = np.arange(-3, 3).reshape(2, 3)
    >>> with fused_on():
    ...     out = exe.forward()[0].asnumpy()
    >>> fused_runs(exe)
    [('square', 'relu', 'plus', 'tanh')]
    >>> x = np.arange(-3, 3, dtype=np.float32).reshape(2, 3)
    >>> bool((out == np.tanh(np.maximum(x * x, 0) + x)).all())
    True
"""

from __future__ import annotations

import ast
import contextlib
import hashlib
import os
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

import numpy as np

from ..base import MXNBError
from ..operator.base import OpReqType
from ..operator.fused import FusedMap
from ..operator.statements import names
from .steps import StepKind

__all__ = ["enabled", "fuse_span", "fused_kernels", "fused_on", "fused_runs"]

#: The statement of each ufunc a forward may be (``forward_ufunc``), over its operands.
UFUNC_EXPRESSIONS = {
    "add": "{0} + {1}", "subtract": "{0} - {1}", "multiply": "{0} * {1}", "divide": "{0} / {1}",
    "true_divide": "{0} / {1}", "negative": "-{0}", "positive": "{0}", "tanh": "tanh({0})",
    "maximum": "maximum({0}, {1})", "exp": "exp({0})", "log": "log({0})", "sqrt": "sqrt({0})",
    "absolute": "abs({0})", "sign": "sign({0})",
}  # fmt: skip
_WRITTEN = (OpReqType.WRITE_TO, OpReqType.WRITE_INPLACE)
_MAPS: dict[tuple, FusedMap] = {}  # (inputs, outputs, statements) -> its map
_forced: list[bool] = []  # the fused_on(on) blocks around this point, innermost last


def enabled(ctx: Any) -> bool:
    """Whether bulk segments on ``ctx`` fuse pointwise runs (see the module docstring)."""
    if _forced:
        return _forced[-1]
    value = os.environ.get("MXNB_EXEC_FUSION", "").strip()
    if value in ("0", "1"):
        return value == "1"
    if value:
        raise MXNBError(f"MXNB_EXEC_FUSION must be 0 or 1 (unset: on for GPUs), got {value!r}")
    return getattr(ctx, "device_type", "cpu") == "gpu"


@contextlib.contextmanager
def fused_on(on: bool = True) -> Iterator[None]:
    """Within the block, executors built or run fuse (``on=False``: never), whatever the context.

    An executor cuts its segments once per mode, so this decides for passes first run inside.
    """
    _forced.append(bool(on))
    try:
        yield
    finally:
        _forced.pop()


@dataclass
class _Piece:
    """One step as a map: which value each of the map's names is, and what it writes."""

    fused: FusedMap
    values: dict[str, tuple[int, Any]]  # input name -> (entry id, its array)
    scalars: dict[str, Any]  # input name -> a numpy scalar of the arrays' dtype
    writes: dict[str, tuple[int, Any]]  # output name -> (entry id, its array): the ones written


def _piece(prepared: Any) -> _Piece | None:
    """A step as a :class:`_Piece`, or None when it is no pointwise step (see the rule)."""
    step = prepared.step
    if step.aux or prepared.resources:
        return None
    if step.kind is StepKind.SUM:
        piece = _sum_piece(prepared)
    elif step.kind is StepKind.FORWARD and step.prop is not None:
        piece = _forward_piece(prepared)
    elif step.kind is StepKind.BACKWARD and step.prop is not None:
        piece = _backward_piece(prepared)
    else:
        return None
    if piece is None or not piece.writes:
        return None
    arrays = [array for _, array in (*piece.values.values(), *piece.writes.values())]
    first = arrays[-1]
    if getattr(first, "dtype", None) is None or first.dtype.kind != "f":
        return None
    for array in arrays:
        if array.shape != first.shape or array.dtype != first.dtype:
            return None
        if not array.flags.c_contiguous:
            return None
    return piece


def _forward_piece(prepared: Any) -> _Piece | None:
    """A forward step whose op says its forward is one ufunc or one fused map."""
    step, raw = prepared.step, prepared.raw
    if len(step.out_data) != 1 or step.req[0] not in _WRITTEN or None in step.in_data:
        return None
    out = raw["out_data"][0]
    types, out_types = [array.dtype for array in raw["in_data"]], [out.dtype]
    fused = getattr(step.prop, "forward_fused", lambda *_: None)(types, out_types)
    scalars: dict[str, Any] = {}
    if fused is None:
        kernel = getattr(step.prop, "forward_ufunc", lambda *_: None)(types, out_types)
        if kernel is None or kernel.ufunc not in UFUNC_EXPRESSIONS:
            return None
        operands = [f"x{i}" for i in range(len(types))]
        if kernel.scalar is not None:
            operands.insert(0 if kernel.scalar_first else len(operands), "s")
            scalars["s"] = out.dtype.type(kernel.scalar)
        text = "y = " + UFUNC_EXPRESSIONS[kernel.ufunc].format(*operands)
        fused = _map((*(f"x{i}" for i in range(len(types))), *scalars), ("y",), text)
    elif len(fused.inputs) != len(types) or len(fused.outputs) != 1:
        return None
    values = {
        name: (entry, array)
        for name, entry, array in zip(fused.inputs, step.in_data, raw["in_data"])
    }
    return _Piece(fused, values, scalars, {fused.outputs[0]: (step.out_data[0], out)})


def _backward_piece(prepared: Any) -> _Piece | None:
    """A backward step whose op says its backward is one fused map (``backward_fused``)."""
    step, raw = prepared.step, prepared.raw
    head = raw["out_grad"][0] if raw["out_grad"] else None
    if head is None:
        return None
    types = [head.dtype] * len(step.in_data)
    answer = getattr(step.prop, "backward_fused", lambda *_: None)(types, [head.dtype])
    if answer is None:
        return None
    fused, binding = answer
    values, writes = {}, {}
    for name in fused.inputs:
        slot, index = binding[name]
        entry = getattr(step, slot)[index]
        if entry is None:
            return None  # the map reads a value backward did not declare
        values[name] = (entry, raw[slot][index])
    for name in fused.outputs:
        slot, index = binding[name]
        if slot != "in_grad":
            return None
        if step.req[index] == OpReqType.NULL:
            continue  # not asked for: its statement is dropped (see _Run.add)
        if step.req[index] not in _WRITTEN:
            return None
        writes[name] = (step.in_grad[index], raw["in_grad"][index])
    return _Piece(fused, values, {}, writes)


def _sum_piece(prepared: Any) -> _Piece | None:
    """A gradient sum: ``y = x0 + x1 + ...``, added in order as ``sum_into`` adds."""
    step, raw = prepared.step, prepared.raw
    parts = list(zip(step.inputs, raw["in_data"]))
    if len(parts) < 2 or step.req[0] not in _WRITTEN:
        return None
    inputs = tuple(f"x{i}" for i in range(len(parts)))
    fused = _map(inputs, ("y",), "y = " + " + ".join(inputs))
    values = dict(zip(inputs, parts))
    return _Piece(fused, values, {}, {"y": (step.outputs[0], raw["out_data"][0])})


def _map(inputs: tuple[str, ...], outputs: tuple[str, ...], text: str) -> FusedMap:
    """The FusedMap of these statements, made once (its kernel compiled once per device)."""
    key = (inputs, outputs, text)
    found = _MAPS.get(key)
    if found is None:
        digest = hashlib.sha1(repr(key).encode()).hexdigest()[:12]
        found = _MAPS[key] = FusedMap(f"fused_{digest}", inputs, outputs, text)
    return found


def _address(array: Any) -> tuple[int, int]:
    """The bytes an array spans: (first, past the last)."""
    pointer = getattr(getattr(array, "data", None), "ptr", None)  # cupy's MemoryPointer
    if pointer is None:
        pointer = array.__array_interface__["data"][0]
    return pointer, pointer + array.nbytes


class _Run:
    """A run being built: its statements, the names of the values, the arrays."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.names: dict[int, str] = {}  # entry id -> its name in the kernel
        self.inputs: list[str] = []  # the kernel's inputs, in order
        self.args: list[Any] = []  # their arrays and scalars
        self.outputs: list[tuple[str, Any]] = []  # (name, array) of every output written
        self.steps: list[str] = []

    def add(self, piece: _Piece, step_name: str) -> None:
        """Inline one step's map, its names renamed to the run's.

        A map of one output assigns it directly; a map of several computes every
        value into a local first and then assigns the outputs, so that an output
        over an input's memory (in place) is written after the input is read.
        """
        index, fused = len(self.steps), piece.fused
        rename: dict[str, str] = {}
        for name, (entry, array) in piece.values.items():
            if entry not in self.names:  # a value the run reads, not computes
                self.names[entry] = f"a{len(self.inputs)}"
                self.inputs.append(self.names[entry])
                self.args.append(array)
            rename[name] = self.names[entry]
        for name, value in piece.scalars.items():
            rename[name] = f"s{len(self.inputs)}"
            self.inputs.append(rename[name])
            self.args.append(value)
        direct = len(fused.outputs) == 1
        needed = set(piece.writes)
        for target, expression in reversed(fused.statements):  # what the written outputs need
            if target in needed:
                needed |= names(expression) - set(fused.inputs)
        for target, expression in fused.statements:
            if target not in needed:
                continue  # an output nobody asked for (req NULL), or a local only it used
            renamed = _Renamed(rename).visit(ast.parse(ast.unparse(expression), mode="eval"))
            if direct and target in piece.writes:
                rename[target] = f"o{len(self.outputs)}"
            else:
                rename[target] = f"t{index}_{target}"
            self.lines.append(f"{rename[target]} = {ast.unparse(renamed)}")
        for name, (entry, array) in piece.writes.items():
            if not direct:
                self.lines.append(f"o{len(self.outputs)} = {rename[name]}")
            self.outputs.append((f"o{len(self.outputs)}", array))
            self.names[entry] = rename[name]
        self.steps.append(step_name)

    def runner(self, xp: Any) -> Callable[[Any], None] | None:
        """The run's engine function, or None when its arrays overlap in part."""
        spans = [_address(array) for array in self.args if hasattr(array, "shape")]
        written = [_address(array) for _, array in self.outputs]
        for mine in written:
            for other in [*spans, *written]:
                if other != mine and other[0] < mine[1] and mine[0] < other[1]:
                    return None  # a partial overlap: not one elementwise kernel
        live = [
            (name, array)
            for k, (name, array) in enumerate(self.outputs)
            if _address(array) not in written[k + 1 :]  # else a later step writes it again
        ]
        fused = _map(tuple(self.inputs), tuple(name for name, _ in live), "\n".join(self.lines))
        return partial(_run_fused, fused, xp, tuple(self.args), tuple(a for _, a in live))


class _Renamed(ast.NodeTransformer):
    """An expression with its names replaced."""

    def __init__(self, rename: dict[str, str]) -> None:
        self.rename = rename

    def visit_Name(self, node: ast.Name) -> ast.AST:  # noqa: N802 - ast's name
        return ast.copy_location(ast.Name(self.rename.get(node.id, node.id), node.ctx), node)


def _run_fused(fused: FusedMap, xp: Any, args: tuple, outs: tuple, run_ctx: Any) -> None:
    """A fused run's engine function: its map, every live output written."""
    fused(xp, *args, out=outs)


def fuse_span(
    prepared: Sequence[Any], runs: Sequence[Callable[[Any], None]], xp: Any
) -> tuple[list[Callable[[Any], None]], list[str], list[tuple[str, ...]]]:
    """One segment's steps as engine functions, runs of pointwise steps fused.

    Returns the functions, a name for each (a fused run's is its steps joined
    by ``+``) and the fused runs' step names.
    """
    functions: list[Callable[[Any], None]] = []
    names: list[str] = []
    fused: list[tuple[str, ...]] = []
    pending: list[int] = []  # the current run's positions
    shape: Any = None

    def close() -> None:
        run = _Run()
        for position in pending:
            run.add(pieces[position], prepared[position].step.name)  # type: ignore[arg-type]
        function = run.runner(xp) if len(pending) > 1 else None
        if function is None:  # alone, or overlapping: each step its own function
            functions.extend(runs[position] for position in pending)
            names.extend(prepared[position].step.name for position in pending)
        else:
            functions.append(function)
            names.append("+".join(run.steps))
            fused.append(tuple(run.steps))
        pending.clear()

    pieces = [_piece(item) for item in prepared]
    for position, piece in enumerate(pieces):
        mine = None if piece is None else _signature(piece)
        if pending and mine != shape:
            close()
        if piece is None:
            functions.append(runs[position])
            names.append(prepared[position].step.name)
            continue
        pending.append(position)
        shape = mine
    if pending:
        close()
    return functions, names, fused


def _signature(piece: _Piece) -> tuple:
    """What every step of one run shares: the arrays' shape and dtype."""
    _, out = next(iter(piece.writes.values()))
    return tuple(out.shape), np.dtype(out.dtype)


def fused_runs(executor: Any) -> list[tuple[str, ...]]:
    """The runs of steps ``executor``'s passes have fused so far, by step name, in order."""
    return [run for segments in executor._segments.values() for s in segments for run in s.fused]


def fused_kernels(executor: Any) -> list[tuple[tuple[str, ...], FusedMap]]:
    """Each fused run of ``executor``'s passes so far with its kernel (``.source()``: its CUDA C)."""
    found: list[tuple[tuple[str, ...], FusedMap]] = []
    for segment in (s for segments in executor._segments.values() for s in segments if s.fused):
        run = segment.run  # the fused run alone, or _run_steps(functions, names)
        functions = [run] if getattr(run, "func", None) is _run_fused else run.args[0]
        kernels = [f.args[0] for f in functions if getattr(f, "func", None) is _run_fused]
        found.extend(zip(segment.fused, kernels))
    return found
