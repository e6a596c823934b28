"""Binding a symbol: ``simple_bind`` (shapes in, arrays made) and ``bind`` (arrays given).

Idea (MXNet: ``Symbol.simple_bind`` / ``Symbol.bind`` and ``GraphExecutor::Init``):
plan the graph for the given shapes (through the plan cache, :mod:`.plan_cache`),
make or check the argument, gradient and auxiliary arrays, and hand all of it
to an :class:`~.executor.Executor`.

Rule: ``simple_bind`` makes every array (zeros) on ``ctx``; ``bind`` takes
the caller's arrays as given (a list in argument order or a dict), checks
every name and shape, and gives ``grad_req='null'`` to arguments without a
gradient array.

State kept: none.

Example::

    >>> import mxnb as mx
    >>> net = mx.sym.FullyConnected(mx.sym.Variable('x'), num_hidden=2, name='fc')
    >>> exe = simple_bind(net, mx.cpu(), x=(4, 3))
    >>> sorted(exe.arg_dict), exe.outputs[0].shape
    (['fc_bias', 'fc_weight', 'x'], (4, 2))
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..base import ParamError
from ..context import Context, current_context
from ..ndarray.ndarray import NDArray, _ctx_of
from .executor import Executor
from .plan_cache import plan_for_bind
from .sharing import bound_arrays
from .steps import without_gc_pauses

__all__ = ["bind", "simple_bind"]


def _context(ctx: Any) -> Context:
    if ctx is None:
        return current_context()
    if isinstance(ctx, Context):
        return ctx
    return _ctx_of(ctx)


def simple_bind(
    sym: Any,
    ctx: Any = None,
    grad_req: str | Mapping[str, str] | Sequence[str] = "write",
    type_dict: Mapping[str, Any] | None = None,
    recompute: str | int | None = None,
    shared_arg_names: Sequence[str] | None = None,
    shared_exec: Executor | None = None,
    shared_buffer: dict[str, NDArray] | None = None,
    budget: int | None = None,
    solver: str = "greedy",
    time_limit: float = 120.0,
    **shapes: Any,
) -> Executor:
    """Infer shapes from ``shapes``, allocate every array (zeros) and plan memory.

    ``recompute`` (None, 'mirror', 'sqrt' or a byte budget), ``budget``,
    ``solver`` ('greedy' or 'milp') and ``time_limit`` are passed to the
    planner (:func:`mxnb.executor.plan_memory`).  ``shared_exec``,
    ``shared_arg_names`` and ``shared_buffer`` share parameters, input buffers
    and the memory pool with another executor, as :mod:`.sharing` describes.

    Example::

        >>> import mxnb as mx
        >>> net = mx.sym.FullyConnected(mx.sym.Variable('data'), num_hidden=10, name='fc')
        >>> exe = mx.executor.simple_bind(net, mx.cpu(), data=(32, 784))
        >>> exe.memory_plan.internal_bytes, sorted(exe.grad_dict)
        (1280, ['data', 'fc_bias', 'fc_weight'])
    """
    ctx = _context(ctx)
    # MXNet reads only the tuple-valued keywords as shapes and ignores the others
    shapes = {name: shape for name, shape in shapes.items() if isinstance(shape, (tuple, list))}
    with without_gc_pauses():  # a long graph's objects would make every collection slower
        graph, plan = plan_for_bind(
            sym, shapes, grad_req, type_dict, recompute, budget, solver, time_limit
        )

        args, grads, aux = bound_arrays(graph, ctx, shared_exec, shared_arg_names, shared_buffer)
        return Executor(sym, ctx, graph, plan, args, grads, aux, shared_exec=shared_exec)


def _as_dict(values: Any, names: Sequence[str], what: str, allow_missing: bool) -> dict[str, Any]:
    if values is None:
        return {}
    if isinstance(values, Mapping):
        # a None for a name the symbol lacks is nothing given (MXNet: bias=None without a bias)
        unknown = [name for name in values if name not in names and values[name] is not None]
        if unknown:
            raise ParamError(
                f"bind: {what} names {', '.join(map(repr, unknown))} which the symbol does not "
                f"have; expected names: {', '.join(names)}"
            )
        result = {
            name: values[name] for name in names if name in values and values[name] is not None
        }
    else:
        items = list(values)
        if len(items) != len(names):
            raise ParamError(
                f"bind: {what} has {len(items)} arrays but the symbol has {len(names)} "
                f"({', '.join(names)})"
            )
        result = {name: item for name, item in zip(names, items) if item is not None}
    if not allow_missing:
        missing = [name for name in names if name not in result]
        if missing:
            raise ParamError(f"bind: {what} is missing {', '.join(map(repr, missing))}")
    return result


def bind(
    sym: Any,
    ctx: Any,
    args: Any,
    args_grad: Any = None,
    grad_req: str | Mapping[str, str] | Sequence[str] = "write",
    aux_states: Any = None,
    recompute: str | int | None = None,
    budget: int | None = None,
    solver: str = "greedy",
    time_limit: float = 120.0,
) -> Executor:
    """Bind the given arrays (lists in argument order, or dicts by name) and plan memory.

    With ``args_grad=None`` no gradient is computed; arguments missing from a
    ``args_grad`` dict get ``grad_req='null'``.  ``recompute``, ``budget``,
    ``solver`` and ``time_limit`` as in :func:`simple_bind`.
    """
    ctx = _context(ctx)
    arg_names = sym.list_arguments()
    aux_names = sym.list_auxiliary_states()
    arg_map = _as_dict(args, arg_names, "args", allow_missing=False)
    grad_map = _as_dict(args_grad, arg_names, "args_grad", allow_missing=True)
    aux_map = _as_dict(aux_states, aux_names, "aux_states", allow_missing=False)
    if isinstance(grad_req, str):
        req = {name: (grad_req if name in grad_map else "null") for name in arg_names}
    elif isinstance(grad_req, Mapping):
        req = {
            name: (grad_req.get(name, "null") if name in grad_map else "null") for name in arg_names
        }
    else:
        req = {
            name: (value if name in grad_map else "null")
            for name, value in zip(arg_names, grad_req)
        }
    shapes = {name: tuple(array.shape) for name, array in arg_map.items()}
    shapes.update({name: tuple(array.shape) for name, array in aux_map.items()})
    types = {name: array.dtype for name, array in arg_map.items()}
    with without_gc_pauses():  # (see simple_bind)
        graph, plan = plan_for_bind(sym, shapes, req, types, recompute, budget, solver, time_limit)
        grads = {name: grad_map[name] for name in graph.grad_entries}
        return Executor(sym, ctx, graph, plan, arg_map, grads, aux_map)
