"""Binding the same symbol again: the planned graph is kept and handed out again.

Idea: ``bind`` builds the execution graph (shape and type inference, the
gradient graph, in two topological orders) and plans its memory; for a small
symbol that is most of a bind's cost.  Tests and tools that bind one symbol
thousands of times with the same shapes (MXNet's
``test_convolution_independent_gradients`` binds a convolution 28 times per
case, 16,000 times in all) redo identical work.  The result is plain data —
:class:`~.graph.ExecGraph` and :class:`~.plan.MemoryPlan` are only read by
the executors that use them (each makes its own operators, arrays and engine
vars) — so one planning can serve every bind of the same question.

Rule: only ``bind`` / ``simple_bind`` use the cache (:func:`plan_for_bind`);
``plan_memory`` and the views plan afresh.  A cached plan is reused only for
the same question.  The key holds
every input of planning: each node of the symbol (by identity, which the
cached entry keeps alive, so an id is never reused while it is a key) with
its inputs and attributes (``set_attr`` after a bind changes the key), the
shapes, dtypes, gradient requests, the strategies and recompute settings,
``np_shape`` and ``MXNB_BACKWARD_DO_MIRROR``.  Only symbols of at most
``MAX_NODES`` nodes are kept, the last ``SIZE`` questions, least recently
used out first.

State kept:
    _CACHE   key -> (nodes kept alive, graph, plan), in least-recently-used order

Example::

    >>> import mxnb as mx
    >>> net = mx.sym.FullyConnected(mx.sym.Variable('x'), num_hidden=2, name='fc')
    >>> first = net.simple_bind(mx.cpu(), x=(3, 4))
    >>> again = net.simple_bind(mx.cpu(), x=(3, 4))
    >>> first.memory_plan is again.memory_plan, first.arg_dict['x'] is again.arg_dict['x']
    (True, False)
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable, Mapping, Sequence
from typing import Any

import numpy as np

from .planning import plan_graph_and_memory

__all__ = ["MAX_NODES", "SIZE", "cached_plan", "clear", "plan_for_bind"]

#: Symbols with more nodes are planned at every bind (planning dwarfs a lookup there).
MAX_NODES = 512
#: How many (symbol, shapes, ...) questions are remembered.
SIZE = 64

_CACHE: OrderedDict[tuple, tuple[list[Any], Any, Any]] = OrderedDict()
_LOCK = threading.Lock()


def clear() -> None:
    """Forget every cached plan."""
    with _LOCK:
        _CACHE.clear()


def _hashable(value: Any) -> Hashable:
    """Shapes, dtypes and gradient requests as a hashable value (dicts sorted by key)."""
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    if isinstance(value, Mapping):
        return tuple(sorted((str(key), _hashable(item)) for key, item in value.items()))
    if isinstance(value, Sequence):
        return tuple(_hashable(item) for item in value)
    return str(np.dtype(value))


def _symbol_key(nodes: Sequence[Any], heads: Sequence[Any]) -> tuple:
    """Each node by identity with what planning reads of it."""
    return tuple(
        (
            id(node),
            id(node.op),
            tuple((id(entry.node), entry.index) for entry in node.inputs),
            tuple(sorted(node.attrs.items())),
        )
        for node in nodes
    ) + tuple((id(head.node), head.index) for head in heads)


def cached_plan(sym: Any, settings: tuple, plan: Callable[[], tuple[Any, Any]]) -> tuple[Any, Any]:
    """``plan()`` (a ``(graph, plan)`` pair), or the pair it gave before for the same question.

    ``settings`` holds everything planning reads besides the symbol
    (shapes, dtypes, requests, strategies).
    """
    from ..util import is_np_shape

    nodes = sym._nodes() if hasattr(sym, "_nodes") else None
    if nodes is None or len(nodes) > MAX_NODES:
        return plan()
    mirror = os.environ.get("MXNB_BACKWARD_DO_MIRROR", "0")
    key = (
        _symbol_key(nodes, sym._outputs),
        _hashable(settings),
        is_np_shape(),
        mirror,
    )
    with _LOCK:
        found = _CACHE.get(key)
        if found is not None:
            _CACHE.move_to_end(key)
            return found[1], found[2]
    graph, memory_plan = plan()
    with _LOCK:
        _CACHE[key] = (list(nodes), graph, memory_plan)
        while len(_CACHE) > SIZE:
            _CACHE.popitem(last=False)
    return graph, memory_plan


def plan_for_bind(
    sym: Any,
    shapes: Mapping[str, tuple],
    grad_req: Any,
    type_dict: Mapping[str, Any] | None,
    recompute: Any,
    budget: int | None = None,
    solver: str = "greedy",
    time_limit: float = 120.0,
) -> tuple[Any, Any]:
    """:func:`~.planning.plan_graph_and_memory` for a bind, through the cache."""
    return cached_plan(
        sym,
        (shapes, grad_req, type_dict, recompute, budget, solver, time_limit),
        lambda: plan_graph_and_memory(
            sym,
            shapes,
            grad_req=grad_req,
            type_dict=type_dict,
            recompute=recompute,
            budget=budget,
            solver=solver,
            time_limit=time_limit,
        ),
    )
