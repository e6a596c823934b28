"""Pointwise fusion: a run of elementwise steps inside a bulk segment runs as one kernel.

Idea (MXNet: the pointwise fusion of ``src/operator/fusion/``, ``MXNET_USE_FUSION``,
on by default on GPUs): an LSTM cell's gates are nine elementwise ops after
its two matrix products (four activations, three products, a sum, a tanh).
Run one by one, each is a kernel launch and a pass over memory, and on a GPU
the launches cost more than the arithmetic.  An op whose forward *is* one
formula says so in the language of :mod:`mxnb.operator.statements`, either as
the one ufunc it calls (``forward_ufunc``: ``add``, ``maximum(x, 0)`` for a
ReLU, ...) or as the fused map it runs (``forward_fused``: sigmoid).  Inside a
bulk segment (:mod:`.bulk`), a run of such steps becomes one
:class:`~mxnb.operator.fused.FusedMap`: one ``ElementwiseKernel`` on a GPU,
and on numpy the same statements, in the steps' order, each into its output.

Rule:

* a step joins a run when it is a forward step of such an op with one
  output, written (not added to), no aux states and no resources, and every
  array it reads or writes has the run's shape and floating dtype and is
  contiguous; two or more neighbouring steps of one segment make a run;
* the run's kernel reads the values it does not compute (and the ops'
  scalars, as numpy scalars of the dtype) and writes every step's output, so
  each array holds afterwards what the steps would have left in it.  The
  one exception: an output whose memory a later step of the run writes again
  (the planner's in place) is a local of the kernel, dead by then;
* the arrays a run writes and the ones it reads are the same memory or
  apart.  A partial overlap (an arena's offsets) leaves the run unfused: a
  GPU computes the elements at once, and a write could reach an element not
  read yet;
* the memory plan is the one without fusion (every value keeps its block),
  and on numpy the bits are the same as the steps': each statement is what
  its op's forward computes, evaluated in the steps' order;
* when: ``MXNB_EXEC_FUSION=1`` / ``0``; unset, on for GPU contexts (real or
  virtual) and off on the CPU, as MXNet's.  Debug mode, a monitor and
  ``mx.engine.bulk(0)`` (no segments) run every step alone.

State kept: one FusedMap per distinct run text (:data:`_MAPS`), compiled once
for all the cells of an LSTM.

Example::

    >>> import numpy as np
    >>> import mxnb as mx
    >>> x = mx.sym.Variable('x')
    >>> y = mx.sym.Activation(mx.sym.Activation(x * 2, act_type='relu') + x, act_type='tanh')
    >>> exe = y.simple_bind(mx.cpu(), x=(2, 3), grad_req='null')
    >>> exe.arg_dict['x'][:] = np.arange(-3, 3).reshape(2, 3)
    >>> with fused_on():
    ...     out = exe.forward()[0].asnumpy()
    >>> fused_runs(exe)
    [('_mulscalar0', 'activation0', '_plus0', 'activation1')]
    >>> bool(np.all(out == np.tanh(np.maximum(np.arange(-3, 3) * 2, 0) + np.arange(-3, 3)).reshape(2, 3).astype(np.float32)))
    True
"""

from __future__ import annotations

import ast
import contextlib
import hashlib
import os
from collections.abc import Callable, Iterator, Sequence
from functools import partial
from typing import Any

import numpy as np

from ..base import MXNBError
from ..operator.base import OpReqType
from ..operator.fused import FusedMap
from .steps import StepKind

__all__ = ["enabled", "fuse_span", "fused_on", "fused_runs"]

#: The statement of each ufunc a forward may be (``forward_ufunc``), over its operands.
UFUNC_EXPRESSIONS = {
    "add": "{0} + {1}",
    "subtract": "{0} - {1}",
    "multiply": "{0} * {1}",
    "divide": "{0} / {1}",
    "true_divide": "{0} / {1}",
    "negative": "-{0}",
    "positive": "{0}",
    "maximum": "maximum({0}, {1})",
    "tanh": "tanh({0})",
    "exp": "exp({0})",
    "log": "log({0})",
    "sqrt": "sqrt({0})",
    "absolute": "abs({0})",
    "sign": "sign({0})",
}
_WRITTEN = (OpReqType.WRITE_TO, OpReqType.WRITE_INPLACE)
_MAPS: dict[tuple, FusedMap] = {}  # (inputs, outputs, statements) -> its map
_forced: list[bool] = []  # fused_on() / fused_off() blocks, innermost last


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


def _formula(prepared: Any) -> tuple[FusedMap, tuple[Any, ...]] | None:
    """The map a step's forward is and its scalar operands, or None when it is no such step."""
    step = prepared.step
    if step.kind is not StepKind.FORWARD or step.prop is None or step.aux or prepared.resources:
        return None
    if len(step.out_data) != 1 or step.req[0] not in _WRITTEN or None in step.in_data:
        return None
    arrays = (*prepared.raw["in_data"], prepared.raw["out_data"][0])
    first = arrays[-1]
    if getattr(first, "dtype", None) is None or first.dtype.kind != "f":
        return None
    for array in arrays:
        if array.shape != first.shape or array.dtype != first.dtype:
            return None
        if not array.flags.c_contiguous:
            return None
    types = [array.dtype for array in prepared.raw["in_data"]]
    prop = step.prop
    fused = getattr(prop, "forward_fused", lambda *_: None)(types, [first.dtype])
    if fused is not None:
        return (fused, ()) if len(fused.inputs) == len(types) else None
    kernel = getattr(prop, "forward_ufunc", lambda *_: None)(types, [first.dtype])
    if kernel is None or kernel.ufunc not in UFUNC_EXPRESSIONS:
        return None
    operands = [f"x{i}" for i in range(len(types))]
    scalars: tuple[Any, ...] = ()
    if kernel.scalar is not None:
        operands.insert(0 if kernel.scalar_first else len(operands), "s")
        scalars = (first.dtype.type(kernel.scalar),)
    text = "y = " + UFUNC_EXPRESSIONS[kernel.ufunc].format(*operands)
    inputs = (*(f"x{i}" for i in range(len(types))), *(("s",) if scalars else ()))
    return _map(inputs, ("y",), text), scalars


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
    """A run being built: its steps' pieces, the names of the values, the arrays."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.names: dict[int, str] = {}  # entry id -> its name in the kernel
        self.inputs: list[str] = []  # the kernel's inputs, in order
        self.args: list[Any] = []  # their arrays and scalars
        self.outputs: list[tuple[str, Any]] = []  # (name, array) of every step's output
        self.steps: list[str] = []

    def add(self, prepared: Any, fused: FusedMap, scalars: tuple[Any, ...]) -> None:
        """Inline one step: its map's statements with its operands' names."""
        step, index = prepared.step, len(self.steps)
        rename: dict[str, str] = {}
        for name, entry, array in zip(fused.inputs, step.in_data, prepared.raw["in_data"]):
            if entry not in self.names:  # a value the run reads, not computes
                self.names[entry] = f"a{len(self.inputs)}"
                self.inputs.append(self.names[entry])
                self.args.append(array)
            rename[name] = self.names[entry]
        for name, value in zip(fused.inputs[len(step.in_data) :], scalars):
            rename[name] = f"s{len(self.inputs)}"
            self.inputs.append(rename[name])
            self.args.append(value)
        output = f"y{index}"
        rename[fused.outputs[0]] = self.names[step.out_data[0]] = output
        for target, expression in fused.statements:
            rename.setdefault(target, f"t{index}_{target}")  # a local of the step's map
            renamed = _Renamed(rename).visit(ast.parse(ast.unparse(expression), mode="eval"))
            self.lines.append(f"{rename[target]} = {ast.unparse(renamed)}")
        self.outputs.append((output, prepared.raw["out_data"][0]))
        self.steps.append(step.name)

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
            run.add(prepared[position], *formulas[position])  # type: ignore[misc]
        function = run.runner(xp) if len(pending) > 1 else None
        if function is None:  # alone, or overlapping: each step its own function
            functions.extend(runs[position] for position in pending)
            names.extend(prepared[position].step.name for position in pending)
        else:
            functions.append(function)
            names.append("+".join(run.steps))
            fused.append(tuple(run.steps))
        pending.clear()

    formulas = [_formula(item) for item in prepared]
    for position, formula in enumerate(formulas):
        mine = None if formula is None else _signature(prepared[position])
        if pending and mine != shape:
            close()
        if formula is None:
            functions.append(runs[position])
            names.append(prepared[position].step.name)
            continue
        pending.append(position)
        shape = mine
    if pending:
        close()
    return functions, names, fused


def _signature(prepared: Any) -> tuple:
    """What every step of one run shares: the output's shape and dtype."""
    out = prepared.raw["out_data"][0]
    return tuple(out.shape), np.dtype(out.dtype)


def fused_runs(executor: Any) -> list[tuple[str, ...]]:
    """The runs of steps ``executor``'s passes have fused so far, by step name, in order."""
    return [run for segments in executor._segments.values() for s in segments for run in s.fused]
