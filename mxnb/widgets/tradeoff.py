"""The memory–compute trade-off of recomputation drawn: planned bytes against extra FLOPs.

Idea (Chen et al. 2016, figure 5): recomputation buys memory with compute.
Each point is a plan of the family :func:`mxnb.executor.tradeoff_curve`
plans — no recomputation (the plain plan, and the plain plan *packed* into one
arena, where packing saves: the curve starts there), MXNet's mirror rule, and
the paper's segments of growing size — at (``recompute_flops / forward_flops``,
planned bytes).  The
points no other beats on both form the curve; MXNet's own figures (its plan
and its ``MXNET_BACKWARD_DO_MIRROR`` plan) are drawn as marks to compare, and
plans of the exact planner (``solver='milp'``, :mod:`mxnb.executor.milp`) as a
second curve beside the greedy one.  For
one chosen point a strip shows the forward steps in order, recomputed ones
coloured by segment: the segments backward recomputes from their checkpoints.

Rule: the view reads :class:`~mxnb.executor.TradeoffPoint` and
:class:`~mxnb.executor.MemoryPlan` objects only.

State kept:
    points     every TradeoffPoint, by growing recompute ratio
    front      the points on the curve (pareto)
    selected   the point explained in the strip and the text
    marks      label -> bytes drawn as reference lines (MXNet's figures)
    exact      the exact planner's plans (MemoryPlan), by growing recompute ratio
    proven     the steps of an optimal curve the planner proved (CurveStep), drawn and listed

Example::

    >>> import mxnb as mx
    >>> from mxnb.executor import zoo
    >>> view = TradeoffView(zoo.resnet(18, num_classes=10), {'data': (4, 3, 32, 32)}, select='mirror')
    >>> view.selected.label, len(view.segments()) > 0
    ('mirror', True)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ._render import FigureView
from .memory import format_bytes

__all__ = ["TradeoffView"]

_SEGMENT_COLOURS = ("#e15759", "#f28e2b", "#b07aa1", "#59a14f", "#4e79a7", "#edc948")


class TradeoffView(FigureView):
    """Planned bytes against recompute overhead for a range of budgets, and one point explained.

    Parameters
    ----------
    symbol_or_points : Symbol or sequence of TradeoffPoint
        A network (planned with ``shapes``) or points from ``mx.executor.tradeoff_curve``.
    shapes : mapping, optional
        Input shapes, with a symbol.
    marks : mapping, optional
        ``{label: bytes}`` drawn as reference lines (e.g. MXNet's plain and mirror plans).
    select : str or int, optional
        The point to explain: its label, or its index in ``points``; default the
        curve's point with the fewest bytes among those with at most one extra forward.
    exact : sequence of MemoryPlan, or OptimalCurve, optional
        Plans of ``plan_memory(..., budget=b, solver='milp')`` at several budgets,
        or ``mx.executor.optimal_curve(...)``: the optimal curve, drawn beside the
        greedy one; an optimal curve's proven steps are marked (the graph's own:
        nothing between the two points is worth having).
    """

    def __init__(
        self,
        symbol_or_points: Any,
        shapes: Mapping[str, tuple] | None = None,
        marks: Mapping[str, float] | None = None,
        select: str | int | None = None,
        exact: Sequence[Any] = (),
    ) -> None:
        from ..executor import pareto, tradeoff_curve

        if isinstance(symbol_or_points, Sequence):
            points = list(symbol_or_points)
        else:
            if shapes is None:
                raise TypeError("TradeoffView: pass the input shapes with a symbol (shapes={...})")
            points = tradeoff_curve(symbol_or_points, shapes)
        if not points:
            raise ValueError("TradeoffView: no points to draw")
        self.points = sorted(points, key=lambda p: (p.recompute_ratio, p.internal_bytes))
        self.front = pareto(self.points)
        self.marks = dict(marks or {})
        self.selected = self._pick(select)
        self.proven: list[Any] = []
        if hasattr(exact, "steps") and hasattr(exact, "front"):  # an OptimalCurve
            self.proven = [step for step in exact.steps if step.proven]
            exact = exact.front
        self.exact = sorted(exact, key=lambda p: (p.recompute_ratio, p.internal_bytes))

    def _pick(self, select: str | int | None) -> Any:
        if isinstance(select, int):
            return self.points[select]
        if isinstance(select, str):
            for point in self.points:
                if point.label == select:
                    return point
            labels = ", ".join(repr(p.label) for p in self.points)
            raise KeyError(f"TradeoffView: no point labelled {select!r}; the labels are {labels}")
        within = [p for p in self.front if p.recompute_ratio <= 1.0]
        return min(within or self.front, key=lambda p: p.internal_bytes)

    # -- data -----------------------------------------------------------------

    def segments(self) -> tuple[tuple[str, ...], ...]:
        """The recomputed segments of the selected point (runs of forward steps)."""
        return self.selected.plan.segments()

    def strip(self) -> list[tuple[str, int]]:
        """Each forward step of the selected plan with its segment number (-1: kept)."""
        plan = self.selected.plan
        number = {step: i for i, run in enumerate(self.segments()) for step in run}
        forward = self.selected.graph.num_forward_steps
        return [(step, number.get(step, -1)) for step in plan.steps[:forward]]

    # -- drawing -------------------------------------------------------------

    def figure(self) -> Any:
        """The curve (top) and the selected point's forward steps by segment (bottom)."""
        from matplotlib.figure import Figure

        figure = Figure(figsize=(10, 5.6))
        grid = figure.add_gridspec(2, 1, height_ratios=(3.2, 1.0), hspace=0.45)
        curve = figure.add_subplot(grid[0])
        scale = 2**20
        curve.scatter(
            [p.recompute_ratio for p in self.points],
            [p.internal_bytes / scale for p in self.points],
            color="#bab0ac",
            s=18,
            label="plans of the family",
        )
        curve.plot(
            [p.recompute_ratio for p in self.front],
            [p.internal_bytes / scale for p in self.front],
            "-o",
            color="#4e79a7",
            markersize=4,
            label="trade-off curve",
        )
        for point in self.front:
            curve.annotate(
                point.label,
                (point.recompute_ratio, point.internal_bytes / scale),
                fontsize=6,
                xytext=(3, 3),
                textcoords="offset points",
            )
        if self.exact:
            curve.plot(
                [p.recompute_ratio for p in self.exact],
                [p.internal_bytes / scale for p in self.exact],
                "-s", color="#f28e2b", markersize=4, label="exact planner (MILP)",
            )  # fmt: skip
        for step in self.proven:  # the step's drop, and what it costs in recomputation
            x, y = (
                step.low.recompute_ratio,
                (step.high.internal_bytes + step.low.internal_bytes) / 2,
            )
            curve.annotate(f"proven step {step.share:.0%}", (x, y / scale), fontsize=6,
                           color="#9c5d2e", xytext=(4, 0), textcoords="offset points")  # fmt: skip
        for index, (label, nbytes) in enumerate(self.marks.items()):
            curve.axhline(
                nbytes / scale, color=("#e15759", "#f28e2b", "#59a14f")[index % 3], linestyle="--",
                linewidth=0.9, label=f"{label} ({format_bytes(nbytes)})",
            )  # fmt: skip
        chosen = self.selected
        curve.scatter(
            [chosen.recompute_ratio],
            [chosen.internal_bytes / scale],
            s=90,
            facecolors="none",
            edgecolors="#d62728",
            linewidths=1.6,
            label=f"selected: {chosen.label}",
        )
        curve.set_xlabel("recompute_flops / forward_flops (extra forward passes)")
        curve.set_ylabel("planned MiB")
        curve.set_title("memory against recomputation", fontsize=9, loc="left")
        curve.legend(fontsize=7, loc="upper right")
        curve.grid(color="#eeeeee")
        strip = figure.add_subplot(grid[1])
        cells = self.strip()
        colours = [
            "#dddddd" if seg < 0 else _SEGMENT_COLOURS[seg % len(_SEGMENT_COLOURS)]
            for _, seg in cells
        ]
        strip.bar(range(len(cells)), [1] * len(cells), width=1.0, color=colours, linewidth=0)
        strip.set_yticks([])
        strip.set_xlim(-0.5, max(len(cells), 1) - 0.5)
        strip.set_xlabel(
            f"forward steps of '{chosen.label}': grey kept, coloured recomputed "
            f"({len(self.segments())} segments, {len(chosen.plan.recompute_steps)} extra steps)",
            fontsize=8,
        )
        return figure

    def to_text(self) -> str:
        """The points (curve points starred), then the selected point's segments."""
        on_front = {id(p) for p in self.front}
        lines = [f"TradeoffView: {len(self.points)} plans, {len(self.front)} on the curve"]
        for point in self.points:
            star = "*" if id(point) in on_front else " "
            pick = "<" if point is self.selected else " "
            lines.append(
                f" {star}{pick} {point.label:<22} {format_bytes(point.internal_bytes):>11}  "
                f"recompute/forward {point.recompute_ratio:5.2f}"
            )
        for plan in self.exact:
            gap = "-" if plan.mip_gap is None else f"{plan.mip_gap:.2g}"
            if plan.milp_window is not None:  # proven within the window's plans only
                gap += f" (window {plan.milp_window} steps)"
            solver = plan.solver or "plain (no solve)"
            lines.append(
                f"  = {solver:<22} {format_bytes(plan.internal_bytes):>11}  "
                f"recompute/forward {plan.recompute_ratio:5.2f}  gap {gap}"
            )
        for step in self.proven:
            lines.append(f"  proven step: {step.describe()}")
        for label, nbytes in self.marks.items():
            lines.append(f"    mark: {label} {format_bytes(nbytes)}")
        lines.append(f"  segments recomputed at '{self.selected.label}':")
        for index, run in enumerate(self.segments()):
            lines.append(f"    [{index}] {' -> '.join(run)}")
        return "\n".join(lines)
