"""The memory–compute trade-off of recomputation, and the search for a plan within a byte budget.

Idea (Chen et al. 2016, section 4: "a greedy search over the budget"):
the paper's segmentation has one knob, the bytes a segment may hold before a
checkpoint is kept.  Sweeping it from 0 (every expensive node kept: the
mirror plan) to infinity (every node recomputed), with no recomputation and
the paper's sqrt(n) segments beside, and the mirror's nodes in growing parts
(which fill the room between no recomputation and the mirror plan), gives a family of plans,
each planned for real (in-place and co-share included), so each point is a
pair (planned bytes, ``recompute_flops / forward_flops``).  The points no other
point beats on both are the trade-off curve; a byte budget picks the point
with the least recomputation whose plan fits.

One more point costs no recomputation at all: the plain plan *packed* — its
values at byte offsets of one arena (:mod:`.arena`), not in MXNet's blocks.
The plain plan's blocks hold more than is ever live at once (on MXNet's
``resnet18_v1`` at batch 32, 732 MiB of blocks for 616 MiB live); the packed
plan holds about the live bytes.  A budget between the two is met with no
recomputation.  The plain plan stays what ``plan_memory`` returns without a
budget (MXNet's kind of plan, the one compared with MXNet's figures), and what
a budget it fits returns.

Rule: the search plans the same family for every budget, so it never returns
a plan above its budget, and when no plan of the family fits it raises
:class:`MemoryBudgetError` naming the smallest plan it reached.

State kept: none; :class:`TradeoffPoint` records are plain data.

Example::

    >>> import mxnb as mx
    >>> from mxnb.executor import zoo
    >>> from mxnb.executor.tradeoff import tradeoff_curve
    >>> points = tradeoff_curve(zoo.resnet(18, num_classes=10), {'data': (8, 3, 32, 32)})
    >>> points[0].label, points[0].recompute_ratio, len(points[0].plan.blocks)
    ('packed', 0.0, 1)
    >>> [p.label for p in pareto(points)][:2]
    ['packed', 'mirror 1/8']
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from ..base import ParamError
from .graph import build_graph
from .plan import MemoryPlan
from .recompute import candidates, choose
from .steps import ExecGraph
from .tournament import plan_best

__all__ = [
    "MemoryBudgetError",
    "TradeoffPoint",
    "floor_bytes",
    "pareto",
    "plan_within_budget",
    "tradeoff_curve",
]

#: The mirror set is also tried in this many growing parts (:func:`_mirror_parts`).
_MIRROR_PARTS = 8
#: Segment sizes tried: total / m for m growing by this factor from 1 to the chain's length.
_STEP = 1.5


class MemoryBudgetError(ParamError):
    """No recomputation plan fits the byte budget given."""


@dataclass(frozen=True)
class TradeoffPoint:
    """One plan of the family: how it was chosen, its bytes and its extra compute."""

    label: str  # 'none', 'mirror', 'segments > 12.0 MiB', 'all'
    threshold: float | None  # segment size in bytes (None: none / mirror)
    internal_bytes: int
    recompute_ratio: float  # recompute_flops / forward_flops
    plan: MemoryPlan = field(repr=False, compare=False)
    graph: ExecGraph = field(repr=False, compare=False)


def _mirror_parts(graph: ExecGraph) -> list[tuple[str, frozenset[str]]]:
    """The mirror set in :data:`_MIRROR_PARTS` growing parts: its first k / n of the bytes.

    Between the packed plan and the mirror plan there is no other plan of the
    segment sweep (on MXNet's ``resnet18_v1`` a step of 26 % of the plain
    plan); the mirror's nodes taken in forward order, k / n of their output
    bytes at a time, fill it.  Nodes ``__force_mirroring__`` recomputes are in
    every part.
    """
    mirror = choose(graph, "mirror")
    forced = choose(graph, None)
    steps = [step for step in candidates(graph) if step.name in mirror - forced]
    sizes = [sum(graph.entries[e].nbytes for e in step.outputs) for step in steps]
    total = sum(sizes)
    parts: list[tuple[str, frozenset[str]]] = []
    taken: list[str] = []
    running = 0
    for step, size in zip(steps, sizes):
        if len(parts) == _MIRROR_PARTS - 1:
            break
        taken.append(step.name)
        running += size
        if running * _MIRROR_PARTS >= total * (len(parts) + 1):
            parts.append((f"mirror {len(parts) + 1}/{_MIRROR_PARTS}", frozenset(taken) | forced))
    return parts


def _thresholds(graph: ExecGraph) -> list[float]:
    mirror = choose(graph, "mirror")
    chain = [step for step in candidates(graph) if step.name not in mirror]
    total = sum(graph.entries[e].nbytes for step in chain for e in step.outputs)
    if not chain:
        return []
    values = []
    count = 1.0
    while count <= len(chain) * _STEP:
        values.append(total / count)
        count *= _STEP
    return [math.inf, *values]


def tradeoff_curve(
    sym: Any,
    shapes: Mapping[str, tuple],
    grad_req: str | Mapping[str, str] | Sequence[str] = "write",
    type_dict: Mapping[str, Any] | None = None,
) -> list[TradeoffPoint]:
    """Plan ``sym`` with no recomputation (plain and packed), the mirror rule (whole and in
    parts) and the sweep.

    Returns the points sorted by recompute ratio (then bytes), duplicates removed
    (the packed point is left out when the arena saves nothing over the plain plan).
    """
    graph = build_graph(sym, shapes, grad_req=grad_req, type_dict=type_dict)
    family: list[tuple[str, dict[str, Any]]] = [
        ("none", {}),
        ("packed", {"pack": True}),
        ("mirror", {"recompute": "mirror"}),
        ("sqrt", {"recompute": "sqrt"}),
    ]
    family += [(label, {"nodes": nodes}) for label, nodes in _mirror_parts(graph)]
    family += [
        ("all" if math.isinf(value) else f"segments > {value / 2**20:.1f} MiB",
         {"recompute": "sqrt", "threshold": value})
        for value in _thresholds(graph)
    ]  # fmt: skip
    points = []
    for label, options in family:
        graph, plan = plan_best(sym, shapes, grad_req, type_dict, **options)
        plan = dataclasses.replace(plan, recompute=label)
        threshold = options.get("threshold")
        points.append(
            TradeoffPoint(label, threshold, plan.internal_bytes, plan.recompute_ratio, plan, graph)
        )
    unique: dict[tuple[int, int], TradeoffPoint] = {}
    for point in points:
        unique.setdefault((point.internal_bytes, point.plan.recompute_flops), point)
    return sorted(unique.values(), key=lambda p: (p.recompute_ratio, p.internal_bytes))


def floor_bytes(graph: ExecGraph) -> tuple[int, str]:
    """The bytes no plan of ``graph`` goes under, and the step that needs them.

    Every step needs its internal inputs and outputs at once, whatever is
    recomputed (a recompute reads copies of the same sizes): the largest such
    working set is a floor for every plan's internal bytes.  An output that may
    take an input's place (in-place) is counted once, so the floor is never
    above what some plan could reach.

        >>> import mxnb as mx
        >>> from mxnb.executor import zoo
        >>> from mxnb.executor.graph import build_graph
        >>> graph = build_graph(zoo.mlp(), {'data': (64, 784)})
        >>> floor, step = floor_bytes(graph)
        >>> floor <= mx.executor.plan_memory(zoo.mlp(), {'data': (64, 784)}).peak_bytes
        True
    """
    entries = graph.entries
    best, where = 0, ""
    for step in graph.steps:
        used = {
            e for e in [*step.inputs, *step.outputs] if e is not None and not entries[e].external
        }
        shared = sum(
            entries[src].nbytes
            for src, dst in graph.sized_inplace_options(step)
            if src in used and dst in used
        )
        nbytes = sum(entries[e].nbytes for e in used) - shared
        if nbytes > best:
            best, where = nbytes, step.name
    return best, where


#: a TradeoffPoint or a MemoryPlan: anything with ``internal_bytes`` and ``recompute_ratio``
Point = TypeVar("Point", TradeoffPoint, MemoryPlan)


def pareto(points: Sequence[Point]) -> list[Point]:
    """The points no other point beats on both bytes and recompute ratio, by growing ratio.

    Points are :class:`TradeoffPoint` records or plans (:class:`~.plan.MemoryPlan`) of one graph.
    """
    frontier: list[Point] = []
    for point in sorted(points, key=lambda p: (p.recompute_ratio, p.internal_bytes)):
        if not frontier or point.internal_bytes < frontier[-1].internal_bytes:
            frontier.append(point)
    return frontier


def plan_within_budget(
    sym: Any,
    shapes: Mapping[str, tuple],
    budget: int,
    grad_req: str | Mapping[str, str] | Sequence[str] = "write",
    type_dict: Mapping[str, Any] | None = None,
    op_times: Mapping[str, float] | None = None,
) -> tuple[ExecGraph, MemoryPlan]:
    """The graph and plan with the least recomputation whose planned bytes are at most ``budget``.

    Least in FLOPs, or in seconds of ``op_times`` (a measured per-op timing
    table, :meth:`.plan.MemoryPlan.recompute_cost`) when given.  Raises
    :class:`MemoryBudgetError` when no plan of the family fits.
    """
    if budget <= 0:
        raise ParamError(f"recompute budget must be a positive number of bytes; got {budget}")
    points = tradeoff_curve(sym, shapes, grad_req, type_dict)
    fitting = [p for p in points if p.internal_bytes <= budget]
    if not fitting:
        smallest = min(points, key=lambda p: (p.internal_bytes, p.recompute_ratio))
        floor, step = floor_bytes(points[0].graph)
        raise MemoryBudgetError(
            f"no recomputation plan fits in {budget:,} bytes ({budget / 2**20:.1f} MiB): the "
            f"smallest reachable plan needs {smallest.internal_bytes:,} bytes "
            f"({smallest.internal_bytes / 2**20:.1f} MiB, recompute '{smallest.label}', "
            f"recompute/forward FLOPs {smallest.recompute_ratio:.2f}), and no plan goes under "
            f"{floor / 2**20:.1f} MiB (step {step!r} needs its inputs and outputs at once); "
            f"raise the budget to at least that, or use a smaller batch"
        )
    # the least recomputation; the plain plan when it fits, else the fewest bytes
    best = min(fitting, key=lambda p: (p.plan.recompute_cost(op_times), p.label != "none",
                                       p.internal_bytes))  # fmt: skip
    plan = dataclasses.replace(best.plan, recompute=f"budget {budget} B: {best.label}")
    return best.graph, plan
