"""The exact planner: solve the recomputation program, plan its answer for real, calibrate.

Idea: :mod:`.milp`'s program counts live bytes, not the pool's blocks
(co-share fragmentation, the arena's offsets), and it counts the values a
recompute segment makes all at once (conservative).  So its answer is a
proposal: every answer is planned for real (:func:`.tournament.plan_best`), and
only a plan whose real bytes fit is returned.

Rule: ``budget'`` (the program's budget) starts at the budget; a plan over it
tightens ``budget'`` by its miss and cuts its set off (some step it keeps must
be recomputed: a heuristic cut, since real bytes need not fall as a set
grows), a plan under it loosens ``budget'`` by half the room, until an optimal
answer leaves under 1 % of the budget unused or the time limit.  Until a
plan fits, a solve takes at most half the time left, so that an answer that
misses leaves time for the solve its cut needs.  If the plan
found was solved under a target below the budget, plans cheaper than it are
then asked for under the budget itself, past the sets known to miss (else a
lower budget could get a costlier plan of a higher peak).  The proven
``mip_gap`` is the gap of the program that chose the plan (model, window and
cuts included), not of the real planner.  The greedy plan (:mod:`.tradeoff`)
is the incumbent: ``scipy.optimize.milp`` takes no starting point, so a solved
plan replaces it only when it needs no more FLOPs, and otherwise the greedy
plan is returned with ``solver='greedy incumbent'``.  A budget the plain plan
packed into one arena meets (:mod:`.tradeoff`) is answered with that plan, no
recomputation and a gap of 0, before any solve.

State kept: none.

Example::

    >>> import mxnb as mx
    >>> from mxnb.executor import zoo
    >>> plain = mx.executor.plan_memory(zoo.mlp(), {'data': (32, 784)})
    >>> plan = mx.executor.plan_memory(zoo.mlp(), {'data': (32, 784)},
    ...                                budget=plain.internal_bytes - 1, solver='milp')
    >>> plan.solver, plan.mip_gap, plan.internal_bytes < plain.internal_bytes
    ('milp', 0.0, True)
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Mapping, Sequence
from typing import Any

from .milp import _GAP, Model, Solution
from .plan import MemoryPlan
from .steps import ExecGraph
from .tournament import plan_best
from .tradeoff import MemoryBudgetError, plan_within_budget

__all__ = ["plan_milp", "proven_optimal"]

#: Calibration rounds: solve, plan for real, move the modelled budget by the miss.
_ROUNDS = 8
#: Stop once an optimal answer's real plan leaves less than this share of the budget unused.
_ROOM = 0.01


def plan_milp(
    sym: Any,
    shapes: Mapping[str, tuple],
    budget: int,
    grad_req: str | Mapping[str, str] | Sequence[str] = "write",
    type_dict: Mapping[str, Any] | None = None,
    time_limit: float = 120.0,
    op_times: Mapping[str, float] | None = None,
    window: int | str | None = "auto",
) -> tuple[ExecGraph, MemoryPlan]:
    """The graph and plan with the fewest recompute FLOPs found within ``budget`` bytes.

    With ``op_times`` (a measured per-op timing table, node -> seconds) the objective is
    the recompute steps' measured seconds instead.  ``window``: :class:`.milp.Model`'s.

    Solves :class:`Model` under ``time_limit`` seconds (all rounds together); the plan
    carries ``solver='milp'``, the proven ``mip_gap`` of the solve that chose it and the
    window as ``milp_window``, or ``solver='greedy incumbent'`` when no solved plan beat
    the greedy search's.  Raises :class:`.tradeoff.MemoryBudgetError` when neither finds
    a plan whose real bytes fit.
    """
    deadline = time.perf_counter() + time_limit
    plain_graph, plain = plan_best(sym, shapes, grad_req, type_dict)
    if plain.internal_bytes <= budget:
        return plain_graph, dataclasses.replace(plain, solver="milp", mip_gap=0.0)
    packed_graph, packed = plan_best(sym, shapes, grad_req, type_dict, pack=True)
    if packed.internal_bytes <= budget:  # no recomputation at all: optimal, nothing to solve
        label = f"budget {budget} B: packed"
        return packed_graph, dataclasses.replace(packed, recompute=label, solver="milp",
                                                 mip_gap=0.0)  # fmt: skip
    try:
        best: tuple[ExecGraph, MemoryPlan] | None = plan_within_budget(
            sym, shapes, budget, grad_req, type_dict, op_times
        )
    except MemoryBudgetError as error:
        best, failure = None, error
    model = Model(plain_graph, op_times, window)
    # the greedy plan fits for real; its modelled peak (the model is conservative) is where the
    # search starts, so the program can choose the greedy set or anything cheaper
    start, left = float(budget), deadline - time.perf_counter()
    if best is not None and best[1].recomputed_nodes and left > 0:  # a quarter of the time left
        modelled = model.peak_of(frozenset(best[1].recomputed_nodes), left / 4)
        start = max(start, modelled) if modelled < float("inf") else start
    found = _search(model, budget, deadline, lambda nodes: plan_best(
        sym, shapes, grad_req, type_dict, nodes=nodes), start)  # fmt: skip
    if found is not None and (
        best is None or _cost(found[1], model) <= _cost(best[1], model)
    ):  # a tie goes to the solved plan: its optimality is proven
        graph, plan, solution = found
        window = "" if model.window is None else f", window {model.window} steps"
        label = f"budget {budget} B: milp ({len(solution.nodes)} recomputed{window})"
        return graph, dataclasses.replace(plan, recompute=label, solver="milp", mip_gap=solution.mip_gap,
                                          milp_window=model.window)  # fmt: skip
    if best is None:
        raise failure
    gap = found[2].mip_gap if found is not None else None
    return best[0], dataclasses.replace(best[1], solver="greedy incumbent", mip_gap=gap,
                                        milp_window=model.window)  # fmt: skip


def proven_optimal(plan: MemoryPlan, windowed: bool = False) -> bool:
    """Whether the exact planner proved ``plan`` optimal: its own answer (not the greedy
    incumbent), with a gap HiGHS stops at, in the full program (``windowed=True``: or
    among a window's plans)."""
    return (
        plan.solver == "milp"
        and plan.mip_gap is not None
        and plan.mip_gap <= _GAP
        and (windowed or plan.milp_window is None)
    )


def _search(
    model: Model, budget: int, deadline: float, plan: Any, start: float | None = None
) -> tuple[ExecGraph, MemoryPlan, Solution] | None:
    """Solve, plan the answer for real, move the modelled budget (or cut the answer), repeat.

    A plan over the budget cuts its set off (a later answer must recompute some
    step it kept) and tightens ``target`` by its miss, or to the budget less the
    bytes the model under-counted that set by, whichever is lower; when the tightened
    program has no answer, the tightening is undone and the cut stays.  A plan
    under the budget loosens ``target`` by half its room.  ``target`` starts at
    ``start`` (default: the budget).  Until a plan fits, a solve gets half the time
    left: on the zoo's ResNet-18 at its greedy floor the first answer, unproven after
    the whole time limit, missed for real, and the greedy plan (5.7x the FLOPs) was
    returned; with half, two more solves (8 s) prove a plan that fits.  Returns the cheapest
    plan that fit, with the solve that chose it.
    """
    found: tuple[ExecGraph, MemoryPlan, Solution] | None = None
    cuts: list[frozenset[str]] = []
    target: float = budget if start is None else start
    undo: float | None = None  # the target before the last tightening
    hidden = False  # the found plan was solved under a target below the budget
    for _ in range(_ROUNDS):
        left = deadline - time.perf_counter()
        # until a plan fits, a solve leaves half the time: its answer may miss for real, and
        # the cut and the tightened target it then needs take a solve of their own
        limit = left if found is not None else left / 2
        solution = model.solve(target, limit, cuts) if left > 0 else None
        if solution is None:
            if undo is None or left <= 0:
                break
            target, undo = undo, None
            continue
        graph, real = plan(solution.nodes)
        miss = real.internal_bytes - budget
        if miss > 0:
            cuts.append(solution.nodes)
            # the model under-counted this set by (real - modelled) bytes: ask the next answer
            # to leave that much room under the budget (at least ``miss`` below the target)
            modelled = model.peak_of(solution.nodes, max(left / 4, 0.1))
            shortfall = real.internal_bytes - modelled if modelled < float("inf") else 0.0
            target, undo = min(target - miss, budget - shortfall), target
            continue
        again = found is not None and found[2].nodes == solution.nodes
        if found is None or _cost(real, model) < _cost(found[1], model):
            found, hidden = (graph, real, solution), target < budget
        if again or (solution.optimal and -miss < _ROOM * budget):
            break
        target, undo = target - miss / 2, None
    return _cheaper(model, budget, deadline, plan, cuts, found) if found and hidden else found


def _cheaper(
    model: Model,
    budget: int,
    deadline: float,
    plan: Any,
    cuts: list[frozenset[str]],
    found: tuple[ExecGraph, MemoryPlan, Solution],
) -> tuple[ExecGraph, MemoryPlan, Solution]:
    """Plans cheaper than ``found`` under the budget itself, past the sets known to miss.

    Asked only when ``found`` was solved under a target below the budget (else its own
    solve already looked under the budget).  A miss tightens :func:`_search`'s target by
    that set's shortfall, which can hide a cheaper set the model counts more closely: on an
    unrolled LSTM a budget got one step recomputed, and a budget 171 bytes lower a step of
    twice the FLOPs and a peak 1 KiB higher.  Each round asks for a plan cheaper than the
    one found, with the budget as it is and the misses cut; an answer that misses for real
    is cut in turn.
    """
    for _ in range(_ROUNDS):
        left = deadline - time.perf_counter()
        cost = found[2].cost
        solution = model.solve(budget, left, cuts, below=cost) if left > 0 and cost > 0 else None
        if solution is None:
            break
        graph, real = plan(solution.nodes)
        if real.internal_bytes > budget:
            cuts.append(solution.nodes)
        elif _cost(real, model) < _cost(found[1], model):
            found = (graph, real, solution)
        else:
            break
    return found


def _cost(plan: MemoryPlan, model: Model) -> float:
    """``plan``'s recompute cost as ``model`` counts it: FLOPs, or its measured op times."""
    return plan.recompute_cost(model.op_times)
