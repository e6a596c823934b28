"""What one engine op of an executor runs: a step's engine function.

Idea (MXNet: the ``OpExecutor`` of each node in src/executor/): binding
prepares, per step, everything a push needs (:class:`_Prepared`: operator,
resources, the raw arrays of each slot, const and mutate vars); a step's
*engine function* then calls the operator's ``forward`` / ``backward`` on
those arrays with an ``OpContext``, or sums gradient parts, writes zeros, or
runs a node's forward again for recomputation (:mod:`.recompute`).

Rule: a plain forward / backward step's function is a ``functools.partial``
of :func:`_run_forward` / :func:`_run_backward` (two objects per step: a
closure kept a function and a cell per captured name, and a 20,000-op graph's
collector walked them all); the others are closures.  In debug mode
(``mx.engine.debug``) inputs are read-only views and a forward must write
every element of an output it overwrites.  The executor makes each step's
function once per mode (``is_train``, debug) and keeps it.

State kept: none here; the functions are kept in ``_Prepared.runners``.

Example::

    >>> import mxnb as mx
    >>> x = mx.sym.Variable('x')
    >>> exe = (x * 2).simple_bind(mx.cpu(), x=(1, 2))
    >>> prepared = exe._prepared[0]
    >>> run = make_runner(prepared, False, exe._operator_for)
    >>> run.func.__name__
    '_run_forward'
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import numpy as np

from .. import engine as _engine_mod
from ..ndarray.debug import check_written, poison_outputs, readonly_view
from ..operator.base import OpContext, OpReqType
from ..operator.ops.elemwise import sum_into
from .recompute import REPLAYED_OPS
from .steps import Step, StepKind

__all__ = ["make_runner"]


def _run_forward(
    forward: Any,
    is_train: bool,
    resources: Any,
    xp: Any,
    in_data: Any,
    req: Any,
    out_data: Any,
    aux: Any,
    run_ctx: Any,
) -> None:
    """A forward step's engine function, bound with ``functools.partial`` at first push.

    A partial keeps two objects per step where a closure kept a function and
    a cell per captured name: a 20,000-op graph's first run made 360,000
    cells, and the garbage collector walked them all twice.
    """
    forward(OpContext(is_train, run_ctx, resources, xp), in_data, req, out_data, aux)


def _run_backward(
    backward: Any,
    is_train: bool,
    resources: Any,
    xp: Any,
    out_grad: Any,
    in_data: Any,
    out_data: Any,
    req: Any,
    in_grad: Any,
    aux: Any,
    run_ctx: Any,
) -> None:
    """A backward step's engine function (see :func:`_run_forward`)."""
    backward(
        OpContext(is_train, run_ctx, resources, xp), out_grad, in_data, out_data, req, in_grad, aux
    )


@dataclass(eq=False)
class _Prepared:
    """What one step needs at push time, computed once at bind."""

    step: Step
    operator: Any = None
    resources: Sequence[Any] = ()
    const_vars: tuple[Any, ...] = ()
    mutate_vars: tuple[Any, ...] = ()
    raw: dict[str, Sequence[Any]] = field(default_factory=dict)  # slot -> raw arrays (or None)
    runners: dict[tuple[bool, bool], Any] = field(default_factory=dict)  # (is_train, debug) -> fn
    xp: Any = np


def make_runner(
    prepared: _Prepared, is_train: bool, operator_for: Callable[[Step], Any]
) -> Callable[[Any], None]:
    """The engine function of one step in one mode (``is_train``, and debug mode at the call).

    ``operator_for(step)`` gives a backward step the operator of its forward
    step (they share one), bound at the first backward.
    """
    kind = prepared.step.kind
    debug = _engine_mod.is_debug()
    if kind is StepKind.SUM:
        return _sum_runner(prepared, debug)
    if kind is StepKind.ZEROS:
        out = prepared.raw["out_data"][0]

        def run_zeros(run_ctx: Any) -> None:
            out[...] = 0

        return run_zeros
    if kind is StepKind.RECOMPUTE:
        return _recompute_runner(prepared, is_train)
    if kind is StepKind.FORWARD:
        return _forward_runner(prepared, is_train, debug)
    if prepared.operator is None:
        prepared.operator = operator_for(prepared.step)
    return _backward_runner(prepared, is_train, debug)


def _sum_runner(prepared: _Prepared, debug: bool) -> Callable[[Any], None]:
    """A gradient sum: ElementWiseSum's kernel, the parts added into the output (``ADD_TO``: onto it)."""
    step = prepared.step
    parts = prepared.raw["in_data"]
    out = prepared.raw["out_data"][0]
    if debug:
        parts = [readonly_view(p, step.name, f"part{i}") for i, p in enumerate(parts)]
    return partial(_run_sum, prepared.xp, parts, out, step.req[0])


def _run_sum(xp: Any, parts: Sequence[Any], out: Any, req: OpReqType, run_ctx: Any) -> None:
    sum_into(xp, parts, out, req)


def _forward_runner(prepared: _Prepared, is_train: bool, debug: bool) -> Callable[[Any], None]:
    """An operator's forward; in debug mode on read-only inputs, every written output checked."""
    step, raw, xp = prepared.step, prepared.raw, prepared.xp
    req = step.req
    resources = prepared.resources
    in_data, out_data, aux = raw["in_data"], raw["out_data"], raw["aux"]
    forward = prepared.operator.forward
    if not debug:
        return partial(_run_forward, forward, is_train, resources, xp, in_data, req, out_data, aux)
    names = step.prop.list_arguments()  # type: ignore[union-attr]
    in_data = [readonly_view(a, step.name, n) for a, n in zip(in_data, names)]
    writes = [r == OpReqType.WRITE_TO for r in req]  # every element it overwrites: written
    out_names = step.prop.list_outputs()  # type: ignore[union-attr]

    def run_checked_forward(run_ctx: Any) -> None:
        poisoned = poison_outputs(out_data, writes, [*in_data, *aux])
        forward(OpContext(is_train, run_ctx, resources, xp), in_data, req, out_data, aux)
        check_written(step.name, out_data, poisoned, out_names)

    return run_checked_forward


def _backward_runner(prepared: _Prepared, is_train: bool, debug: bool) -> Callable[[Any], None]:
    """An operator's backward; in debug mode every value it reads is a read-only view."""
    step, raw = prepared.step, prepared.raw
    out_grad, in_data, out_data = raw["out_grad"], raw["in_data"], raw["out_data"]
    aux, in_grad = raw["aux"], raw["in_grad"]
    if debug:
        args = step.prop.list_arguments()  # type: ignore[union-attr]
        aux_names = step.prop.list_auxiliary_states()  # type: ignore[union-attr]
        out_grad = _read_only(out_grad, step.name, [f"out_grad{i}" for i in range(len(out_grad))])
        in_data = _read_only(in_data, step.name, args)
        out_data = _read_only(out_data, step.name, [f"out_data{i}" for i in range(len(out_data))])
        aux = _read_only(aux, step.name, aux_names)
    backward = prepared.operator.backward
    return partial(
        _run_backward, backward, is_train, prepared.resources, prepared.xp,
        out_grad, in_data, out_data, step.req, in_grad, aux,
    )  # fmt: skip


def _read_only(arrays: Sequence[Any], op: str, names: Sequence[str]) -> list[Any]:
    """Debug mode's read-only views of ``arrays`` (None stays None: not declared)."""
    return [None if a is None else readonly_view(a, op, name) for a, name in zip(arrays, names)]


def _recompute_runner(prepared: _Prepared, is_train: bool) -> Callable[[Any], None]:
    """Run a node's forward again into its recomputed entries (see :mod:`.recompute`).

    Dropout is replayed from its kept mask; any other op runs its forward
    on scratch copies of its aux states, so moving statistics update once.
    """
    step = prepared.step
    raw = prepared.raw
    in_data, out_data, aux = raw["in_data"], raw["out_data"], raw["aux"]
    kept = REPLAYED_OPS.get(step.op_type)
    if kept is not None:
        out, mask, x = out_data[0], out_data[kept], in_data[0]

        def run_replay(run_ctx: Any) -> None:
            out[...] = x * mask  # as Dropout's forward wrote it: the same bits

        return run_replay
    forward = prepared.operator.forward
    resources = prepared.resources
    xp = prepared.xp
    req = step.req

    def run_recompute(run_ctx: Any) -> None:
        scratch = [array.copy() for array in aux]  # the real aux states were updated once
        forward(OpContext(is_train, run_ctx, resources, xp), in_data, req, out_data, scratch)

    return run_recompute
