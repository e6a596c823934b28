"""The planning tournament: several plans of one graph compete, the smallest wins.

Idea: MXNet plans once, with its walk (:mod:`.memory`) at one match range
and one topological order.  Every candidate here is a valid plan, so trying
several and keeping the smallest can only help:

* the walk at match ranges 16, 4, 2 and 1, with and without in-place (in-place
  is an option, not an obligation: a chain can outlive the blocks around it);
* the offline placements of :mod:`.placement`, and with recomputation the arena;
* both topological orders of :data:`~.graph.ORDERS` (MXNet's DFS wins ties).

Rule: the bigger the graph, the fewer candidates, so that planning stays
O(n log n) on chains of thousands of steps (:data:`MID_GRAPH_STEPS`,
:data:`LARGE_GRAPH_STEPS`).  Recomputation (:mod:`.recompute`) is chosen on the
winner and planned in the winner's order, so gradients are summed in the same
order, bit for bit.  A byte budget is searched above this module, by
:mod:`.tradeoff`, which calls :func:`plan_best`; nothing here calls it back.

State kept: none.

Example::

    >>> import mxnb as mx
    >>> from mxnb.executor import zoo
    >>> graph, plan = plan_best(zoo.mlp(), {'data': (32, 784)}, grad_req='write')
    >>> plan.check()
    >>> plan.internal_bytes < plan.naive_internal_bytes
    True
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import Any

from .graph import ORDERS, build_graph
from .memory import DEFAULT_MATCH_RANGE, Planner, make_plan
from .placement import arena_placement, offline_placements
from .plan import MemoryPlan
from .recompute import choose
from .steps import ExecGraph, without_gc_pauses

__all__ = ["LARGE_GRAPH_STEPS", "MID_GRAPH_STEPS", "plan_best", "plan_graph", "plan_strategies"]

_TRIED_MATCH_RANGES = (16, 4, 2, 1)
#: Above this many steps planning keeps to MXNet's order and drops the largest-first offline
#: placement, whose best-fit scan grows with the square of the steps in a long chain (every
#: forward activation lives until backward): a 4,000-step chain took 10 s to bind.  The
#: walks (every match range) and the in-order placement, O(n log n) each, still compete.
#: Every network of the zoo (the 35-step LSTM has 1,964 training steps) stays below it.
MID_GRAPH_STEPS = 2500
#: Above this many steps (an unrolled RNN of thousands of steps, a 5,000-layer chain)
#: planning tries MXNet's walk and the in-order offline placement only: even the walks of
#: every match range would take seconds.
LARGE_GRAPH_STEPS = 5000


def plan_best(
    sym: Any,
    shapes: Mapping[str, tuple],
    grad_req: str | Mapping[str, str] | Sequence[str] = "write",
    type_dict: Mapping[str, Any] | None = None,
    inplace: bool = True,
    coshare: bool = True,
    recompute: str | None = None,
    threshold: float | None = None,
    nodes: Collection[str] | None = None,
    pack: bool = False,
) -> tuple[ExecGraph, MemoryPlan]:
    """Build the graph in each topological order of ``ORDERS``, plan each; keep the smallest.

    Returns the graph and its plan (the executor runs the steps in that order).
    MXNet's DFS order wins ties.  ``recompute`` is None, ``'mirror'`` or
    ``'sqrt'`` (:func:`.recompute.choose`); ``threshold`` sets the segment size
    of ``'sqrt'`` (bytes).  ``nodes`` names the forward steps to recompute
    outright (chosen by a search above, :mod:`.milp`), replacing the rule.
    ``pack=True`` lets the arena compete even with nothing recomputed (the
    *packed* plan a byte budget may use, :mod:`.tradeoff`); without it, a plan
    with no recomputation is MXNet's kind, blocks only.
    A byte budget is :func:`.tradeoff.plan_within_budget`'s.
    """
    with without_gc_pauses():
        return _plan_best(
            sym, shapes, grad_req, type_dict, inplace, coshare, recompute, threshold, nodes, pack
        )


def _plan_best(
    sym: Any,
    shapes: Mapping[str, tuple],
    grad_req: str | Mapping[str, str] | Sequence[str],
    type_dict: Mapping[str, Any] | None,
    inplace: bool,
    coshare: bool,
    recompute: str | None = None,
    threshold: float | None = None,
    nodes: Collection[str] | None = None,
    pack: bool = False,
) -> tuple[ExecGraph, MemoryPlan]:
    best: tuple[ExecGraph, MemoryPlan] | None = None
    for order in ORDERS if coshare or inplace else ORDERS[:1]:
        graph = build_graph(sym, shapes, grad_req=grad_req, type_dict=type_dict, order=order)
        plan = plan_graph(graph, inplace=inplace, coshare=coshare)
        if best is None or plan.internal_bytes < best[1].internal_bytes:
            best = (graph, plan)
        if len(graph.steps) > MID_GRAPH_STEPS:
            break  # a larger graph is planned in MXNet's order only (see MID_GRAPH_STEPS)
    assert best is not None
    chosen = choose(best[0], recompute, threshold) if nodes is None else frozenset(nodes)
    if chosen:
        # Recomputation keeps the plain plan's order: the same steps in the same order (plus
        # the recompute steps), so gradients are summed in the same order, bit for bit.
        forward = best[0].steps[: best[0].num_forward_steps]
        order = "dfs" if len(forward) < 2 else _order_of(sym, shapes, grad_req, type_dict, forward)
        graph = build_graph(
            sym, shapes, grad_req=grad_req, type_dict=type_dict, order=order, recompute=chosen
        )
        graph.recompute = recompute or ("attributes" if nodes is None else "chosen")
        best = (graph, plan_graph(graph, inplace=inplace, coshare=coshare))
    elif pack and coshare:
        # packed in the plain plan's order, so its gradients are the plain plan's, bit for bit
        best = (best[0], plan_graph(best[0], inplace=inplace, coshare=coshare, pack=True))
    return best


def _order_of(
    sym: Any,
    shapes: Mapping[str, tuple],
    grad_req: str | Mapping[str, str] | Sequence[str],
    type_dict: Mapping[str, Any] | None,
    forward: Sequence[Any],
) -> str:
    """The order of ``ORDERS`` whose forward steps are ``forward``."""
    names = [step.name for step in forward]
    dfs = build_graph(sym, shapes, grad_req="null", type_dict=type_dict, order="dfs")
    return "dfs" if [step.name for step in dfs.steps] == names else "reverse_dfs"


def plan_strategies(
    sym: Any,
    shapes: Mapping[str, tuple],
    grad_req: str | Mapping[str, str] | Sequence[str] = "write",
    type_dict: Mapping[str, Any] | None = None,
) -> dict[str, MemoryPlan]:
    """Plan ``sym`` four times: ``'naive'``, ``'inplace'`` only, ``'coshare'`` only and ``'both'``.

    Each is what :func:`plan_memory` returns with those strategies, so they can
    be drawn side by side (``mx.widgets.MemoryPlanView``).

    Example::

        >>> import mxnb as mx
        >>> from mxnb.executor import zoo
        >>> plans = mx.executor.plan_strategies(zoo.mlp(), {'data': (1, 784)}, grad_req='null')
        >>> {name: plan.internal_bytes for name, plan in plans.items()}
        {'naive': 1616, 'inplace': 808, 'coshare': 1024, 'both': 768}
    """
    return {
        name: plan_best(sym, shapes, grad_req, type_dict, inplace=inplace, coshare=coshare)[1]
        for name, inplace, coshare in (
            ("naive", False, False),
            ("inplace", True, False),
            ("coshare", False, True),
            ("both", True, True),
        )
    }


def plan_graph(
    graph: ExecGraph,
    inplace: bool = True,
    coshare: bool = True,
    match_range: int | None = None,
    pack: bool = False,
) -> MemoryPlan:
    """Plan an already built :class:`~mxnb.executor.steps.ExecGraph`.

    With ``match_range=None`` a few match ranges and the offline placement are
    tried and the smallest plan is kept; pass a number to get exactly MXNet's
    single walk.  The arena competes when something is recomputed, or with
    ``pack=True``.
    """
    if match_range is not None or not coshare:
        walk = Planner(graph, inplace, coshare, match_range or DEFAULT_MATCH_RANGE)
        return make_plan(graph, walk.run(), inplace, coshare)
    # In-place is an option, not an obligation: an in-place chain can outlive the
    # blocks around it and fit worse, so with both strategies on the co-share-only
    # placements compete too.
    candidates = []
    if len(graph.steps) > LARGE_GRAPH_STEPS:  # MXNet's walk and the O(n log n) placement
        candidates.append(Planner(graph, inplace, coshare, DEFAULT_MATCH_RANGE).run())
        candidates.append(offline_placements(graph, inplace, by_size=False)[0])
    else:
        by_size = len(graph.steps) <= MID_GRAPH_STEPS  # (see MID_GRAPH_STEPS)
        for use_inplace in (True, False) if inplace else (False,):
            candidates.extend(
                Planner(graph, use_inplace, coshare, value).run() for value in _TRIED_MATCH_RANGES
            )
            candidates.extend(offline_placements(graph, use_inplace, by_size=by_size))
            if graph.recomputed_nodes or pack:
                # recomputation frees large values early and needs large gradients late:
                # offsets in one arena let dead small values make room for them
                candidates.append(arena_placement(graph, use_inplace))
    best = min(candidates, key=lambda result: sum(result.block_bytes))
    return make_plan(graph, best, inplace, coshare)
