"""The optimal trade-off curve: exact plans at many budgets, and a proof for each wide step.

Idea: the exact planner (:mod:`.milp`) answers one question, "the fewest
recompute FLOPs within ``budget`` bytes".  Asked at budgets every ``step`` of
the plain plan, from the plain plan down until no plan fits, its answers are
points of the optimal curve; the curve is their Pareto front (fewer bytes for
more recomputation, nothing beaten on both).  Two neighbouring points of the
front may still lie far apart in bytes.  Either plans between them were
missed, or there are none.  Two more solves tell which.  A *probe* half of
``max_step`` under the higher point finds the next points where the curve is
dense (each answer is a new point, and the step shrinks).  A *proof* just under
the higher point (0.1 % of the plain plan under: closer, the planner's model
and the real plan differ by bytes of alignment, and misses cost rounds) either
finds a plan between the two points, or proves, with a gap of 0, that
everything under the higher point costs at least the lower point.  Then the
step is the graph's own, not the search's: no plan between the two points is
worth having, and a budget between them gets the lower point's plan at the
lower point's cost.

Rule: a step is *proven* when the proof under its higher point returned a
plan the exact planner proved optimal (``solver == 'milp'``, gap 0) that
costs as much as the lower point (which fits that budget, so it cannot cost
more: everything under the higher point costs at least the lower).  Proven
means proven for the program the planner solves (:mod:`.milp`'s model, which never promises less memory than the
real schedule keeps alive), in full: an answer from a windowed program proves nothing.  Steps wider than ``max_step`` of the plain plan
are probed, then proven, widest first, until every one is proven, or its proof
ran out of time (the step stays open, and says so), or ``refine`` solves are
spent.

State kept: none; :class:`OptimalCurve` and :class:`CurveStep` are plain data.

Example::

    >>> from mxnb.executor import zoo
    >>> curve = optimal_curve(zoo.deep_mlp(), {'data': (16, 64)}, step=0.1, time_limit=20)
    >>> widest = curve.widest()
    >>> round(widest.share, 2), widest.proven      # wider than 5 %, and the graph's own
    (0.14, True)
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..base import ParamError
from .exact import proven_optimal
from .milp import _GAP as _PROVEN_GAP  # the relative gap the exact planner stops at
from .plan import MemoryPlan
from .planning import plan_memory
from .tradeoff import MemoryBudgetError, pareto

__all__ = ["CurveStep", "OptimalCurve", "optimal_curve"]

_END_HALVINGS = 3  # budgets tried between the last plan and the first budget nothing met
_BELOW = 0.001  # a step is asked about this share of the plain plan under its higher point


@dataclass(frozen=True)
class CurveStep:
    """Two neighbouring points of the optimal curve, and whether the planner proved the step.

    ``share``: the bytes between them as a share of the plain plan;
    ``rise``: the extra recomputation of the lower point, in forward passes;
    ``proven``: no plan under ``high``'s bytes (less 0.1 % of plain) costs less than ``low``;
    ``asked``: the proof just under ``high`` was made (an open, asked step ran out of time).
    """

    high: MemoryPlan
    low: MemoryPlan
    share: float
    rise: float
    proven: bool
    asked: bool

    def describe(self) -> str:
        """One line: the two points, the share of plain, the rise in recomputation, proven."""
        mib = 2**20
        how = "proven" if self.proven else ("open (out of time)" if self.asked else "open")
        return (f"{self.share:.1%} of plain ({self.high.internal_bytes / mib:.1f} MiB "
                f"({self.high.recompute_ratio:.4f}) -> {self.low.internal_bytes / mib:.1f} "
                f"({self.low.recompute_ratio:.4f}), +{self.rise:.4f} forward), {how}")  # fmt: skip


@dataclass(frozen=True)
class OptimalCurve:
    """The exact planner's curve of one graph: every plan it returned, their front, its steps."""

    plain: MemoryPlan
    plans: tuple[MemoryPlan, ...]  # the plain plan, then every plan returned, in the order asked
    front: tuple[MemoryPlan, ...]  # the Pareto front, by growing recomputation
    steps: tuple[CurveStep, ...]  # neighbouring points of the front
    failed: int  # the highest budget no plan met (bytes)

    def widest(self, proven: bool | None = None) -> CurveStep | None:
        """The widest step (``proven=False``: the widest open one); None when there is none."""
        steps = [s for s in self.steps if proven is None or s.proven == proven]
        return max(steps, key=lambda s: s.share, default=None)


def _steps(front: list[MemoryPlan], plain: int, asked: Mapping[int, MemoryPlan]) -> list[CurveStep]:
    """The steps of ``front``, each marked proven by the answer ``asked`` under its higher point
    (keyed by the higher point's bytes)."""
    steps = []
    for high, low in zip(front, front[1:]):
        answer = asked.get(high.internal_bytes)
        proven = (
            answer is not None
            and proven_optimal(answer)
            and answer.recompute_flops >= low.recompute_flops * (1 - _PROVEN_GAP)
        )
        steps.append(CurveStep(high, low, (high.internal_bytes - low.internal_bytes) / plain,
                               low.recompute_ratio - high.recompute_ratio, proven,
                               answer is not None))  # fmt: skip
    return steps


Solve = Callable[[int], "MemoryPlan | None"]  # a budget in bytes -> the exact plan, or None


def _sweep(solve: Solve, plain: MemoryPlan, step: float) -> tuple[list[MemoryPlan], int]:
    """Budgets every ``step`` of plain from the plain plan down, then halvings towards the
    first budget nothing met: the plans found, and the highest failed budget (0: none)."""
    plans, failed, share = [plain], 0, 1.0 - step  # the curve starts with no recomputation
    while share > step / 2:
        plan = solve(int(plain.internal_bytes * share))
        if plan is None:
            failed = int(plain.internal_bytes * share)
            break
        plans.append(plan)
        share -= step
    for _ in range(_END_HALVINGS):  # the curve's end: half-way between its last plan and failure
        low = plans[-1].internal_bytes
        if low - failed < 0.01 * plain.internal_bytes:
            break
        plan = solve((low + failed) // 2)
        if plan is None:
            failed = (low + failed) // 2
        else:
            plans.append(plan)
    return plans, failed


def _refine(solve: Solve, plans: list[MemoryPlan], plain: int, max_step: float,
            refine: int) -> dict[int, MemoryPlan]:  # fmt: skip
    """The wide steps, widest first: a probe half a ``max_step`` under the higher point, then a
    proof just under it.  Appends every answer to ``plans``; returns the proofs' answers, keyed
    by the higher point's bytes."""
    asked: dict[int, MemoryPlan] = {}
    probed: set[int] = set()  # the higher points probed half a max_step under
    for _ in range(refine):
        wide = [s for s in _steps(pareto(plans), plain, asked)
                if s.share > max_step and not s.asked]  # fmt: skip
        if not wide:
            break
        high = max(wide, key=lambda s: s.share).high.internal_bytes
        proof = high in probed
        probed.add(high)
        plan = solve(high - int((_BELOW if proof else max_step / 2) * plain))
        assert plan is not None, "the lower point of a wide step fits under its higher point"
        if proof:
            asked[high] = plan
        plans.append(plan)
    return asked


def optimal_curve(
    sym: Any,
    shapes: Mapping[str, tuple],
    grad_req: str | Mapping[str, str] | Sequence[str] = "write",
    type_dict: Mapping[str, Any] | None = None,
    *,
    step: float = 0.04,
    max_step: float = 0.05,
    time_limit: float = 30.0,
    refine: int = 12,
    progress: Callable[[str], None] | None = None,
) -> OptimalCurve:
    """Solve ``sym``'s recomputation exactly at budgets every ``step`` of the plain plan, then
    ask about every step of the curve wider than ``max_step`` (see the module docstring).

    ``time_limit``: seconds per solve; ``refine``: at most this many solves to ask about
    steps; ``progress``: called with one line per solve (for example ``print``).
    """
    if not 0 < step < 1 or not 0 < max_step < 1:
        raise ParamError(f"optimal_curve: step and max_step are shares of the plain plan in "
                         f"(0, 1); got step={step!r}, max_step={max_step!r}")  # fmt: skip
    if refine < 0 or time_limit <= 0:
        raise ParamError(f"optimal_curve: refine >= 0 and time_limit > 0 are needed; got "
                         f"refine={refine!r}, time_limit={time_limit!r}")  # fmt: skip
    plain = plan_memory(sym, shapes, grad_req=grad_req, type_dict=type_dict)

    def solve(budget: int) -> MemoryPlan | None:
        try:
            plan = plan_memory(sym, shapes, grad_req=grad_req, type_dict=type_dict,
                               budget=budget, solver="milp", time_limit=time_limit)  # fmt: skip
        except MemoryBudgetError:
            plan = None
        if progress is not None:
            got = "no plan fits" if plan is None else (
                f"{plan.internal_bytes / 2**20:.1f} MiB ({plan.recompute_ratio:.4f}) {plan.solver}, "
                f"gap {plan.mip_gap}" + ("" if plan.milp_window is None else
                                         f" within a window of {plan.milp_window} steps"))  # fmt: skip
            progress(
                f"budget {budget / 2**20:.1f} MiB ({budget / plain.internal_bytes:.2f} of plain): {got}"
            )
        return plan

    plans, failed = _sweep(solve, plain, step)
    asked = _refine(solve, plans, plain.internal_bytes, max_step, refine)
    front = pareto(plans)
    return OptimalCurve(plain, tuple(plans), tuple(front),
                        tuple(_steps(front, plain.internal_bytes, asked)), failed)  # fmt: skip
