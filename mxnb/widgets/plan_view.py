"""The memory plan drawn: which entries share which storage block, and when.

Idea (MXNet's memory-planning notes): an executor does not give every
intermediate its own array.  *In-place* lets an output take its input's
storage; *co-share* hands a block whose last reader has run to a later entry.
Drawn as a chart with a row per storage block and a bar per entry along the
topological steps, the saving is visible: bars in one row never overlap, an
in-place pair touches end to start (linked by an arc), and the strategy bars
compare the bytes each strategy needs.  In a notebook the chart is
interactive (:meth:`MemoryPlanView.widget`, also what displaying the view
shows): hovering an entry's bar tells its lifetime, block and in-place
source, a click marks every entry sharing its block.

Rule: the view reads :class:`~mxnb.executor.plan.MemoryPlan` objects only
(from ``exe.memory_plan``, ``mx.executor.plan_memory`` or a dict of plans from
``mx.executor.plan_strategies``).

A plan is a promise; ``MemoryPlanView(mx.executor.measure_plan(sym, shapes))``
draws it beside what a real training step held (the storage pool's
high-water mark): the bar chart's "planned total" (entries + workspace)
and "measured" bars, and the title's ratio.

State kept:
    plan            the plan drawn in detail (the 'both' strategy when given several)
    strategies      name -> MemoryPlan compared in the bar chart
    top             how many of the largest entries the table lists
    measured_bytes  a training step's measured peak beyond the bound arrays, or None

Example::

    >>> import mxnb as mx
    >>> from mxnb.executor import zoo
    >>> view = MemoryPlanView(mx.executor.plan_memory(zoo.mlp(), {'data': (32, 784)}))
    >>> view.rows()[0].block.id
    0
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ._render import FigureView
from .memory import format_bytes

__all__ = ["BlockRow", "MemoryPlanView", "entry_id"]

_BLOCK_COLOURS = (
    "#4e79a7",
    "#f28e2b",
    "#59a14f",
    "#e15759",
    "#76b7b2",
    "#edc948",
    "#b07aa1",
    "#ff9da7",
    "#9c755f",
    "#86bcb6",
    "#d37295",
    "#a0cbe8",
)


def block_colour(storage_id: int) -> str:
    """The colour of a storage block (the same in the chart and the graph)."""
    if storage_id < 0:
        return "#dddddd"
    return _BLOCK_COLOURS[storage_id % len(_BLOCK_COLOURS)]


def entry_id(name: str) -> str:
    """The SVG id of an entry's bar: ``'entry-fc1_output'`` (clickable in the canvas)."""
    return f"entry-{name}"


@dataclass(frozen=True)
class BlockRow:
    """One storage block and the entries living in it, in step order."""

    block: Any  # StorageBlock
    entries: tuple[Any, ...]  # PlanEntry


class MemoryPlanView(FigureView):
    """Storage blocks with entry lifetimes, strategies compared, largest entries.

    Parameters
    ----------
    plan_or_executor : MemoryPlan, Executor or dict of MemoryPlan
        What to draw.  A dict (as from ``mx.executor.plan_strategies``) is
        compared in the bar chart and its ``'both'`` plan (or its last) drawn.
    symbol, shapes : optional
        With both given, the four strategies are recomputed with
        ``mx.executor.plan_strategies(symbol, shapes, grad_req)`` for the bar chart.
    top : int
        Number of rows in the table of largest entries.
    measured_bytes : int, optional
        What a real training step held beyond the bound arrays
        (:func:`mxnb.executor.measure_plan` / ``measure_peak``), drawn beside
        the planned total.  A :class:`~mxnb.executor.PlanMeasurement` given
        as ``plan_or_executor`` brings its own.
    """

    def __init__(
        self,
        plan_or_executor: Any,
        symbol: Any = None,
        shapes: Mapping[str, tuple] | None = None,
        top: int = 10,
        measured_bytes: int | None = None,
    ) -> None:
        self.strategies: dict[str, Any] = {}
        source = plan_or_executor
        #: the kernels' temporaries beside the plan (a PlanMeasurement's), or None
        self.temporaries_bytes: int | None = None
        if hasattr(source, "measured_bytes") and hasattr(source, "plan"):  # a PlanMeasurement
            measured_bytes = source.measured_bytes if measured_bytes is None else measured_bytes
            self.temporaries_bytes = getattr(source, "temporaries_bytes", None)
            source = source.plan
        if measured_bytes is not None and (
            isinstance(measured_bytes, bool)
            or not isinstance(measured_bytes, int)
            or measured_bytes < 0
        ):
            raise ValueError(
                f"MemoryPlanView: measured_bytes must be a byte count >= 0 (as "
                f"mx.executor.measure_plan gives), got {measured_bytes!r}"
            )
        self.measured_bytes = measured_bytes
        if isinstance(source, Mapping):
            self.strategies = dict(source)
            plan = self.strategies.get("both") or list(self.strategies.values())[-1]
        elif hasattr(source, "memory_plan"):
            plan = source.memory_plan
            if symbol is None and shapes is None and hasattr(source, "symbol"):
                # an executor: re-plan its symbol at its bound shapes to compare strategies
                symbol = source.symbol
                shapes = {name: array.shape for name, array in source.arg_dict.items()}
        else:
            plan = source
        if not hasattr(plan, "blocks") or not hasattr(plan, "entries"):
            raise TypeError(
                "MemoryPlanView: expected a MemoryPlan, an Executor (exe.memory_plan) or a dict "
                f"of plans, got {type(plan).__name__}; build one with mx.executor.plan_memory"
            )
        self.plan = plan
        self.top = top
        if symbol is not None and shapes is not None and not self.strategies:
            from ..executor import plan_strategies

            self.strategies = plan_strategies(
                symbol, shapes, grad_req=dict(plan.grad_req) or "write"
            )

    # -- data -----------------------------------------------------------------

    def rows(self) -> list[BlockRow]:
        """One row per storage block, entries in step order."""
        result = []
        for block in self.plan.blocks:
            entries = tuple(
                sorted(
                    (self.plan.entry(name) for name in block.entries), key=lambda e: e.first_step
                )
            )
            result.append(BlockRow(block, entries))
        return result

    def strategy_bytes(self) -> dict[str, int]:
        """Bytes each strategy allocates; without a strategy dict: naive vs this plan."""
        if self.strategies:
            return {name: plan.internal_bytes for name, plan in self.strategies.items()}
        label = {(True, True): "both", (True, False): "inplace", (False, True): "coshare"}.get(
            (self.plan.inplace, self.plan.coshare), "naive"
        )
        return {"naive": self.plan.naive_internal_bytes, label: self.plan.internal_bytes}

    def planned_against_measured(self) -> dict[str, int]:
        """``{'planned': total bytes, 'measured': bytes}`` when a measurement is given, else ``{}``,
        with ``'temporaries'`` (the kernels' own, outside the plan) when it was measured.

        The planned total is the entries' blocks plus the largest temp space
        (:attr:`~mxnb.executor.MemoryPlan.total_bytes`), what the measurement counts.
        """
        if self.measured_bytes is None:
            return {}
        figures = {"planned": self.plan.total_bytes, "measured": self.measured_bytes}
        if self.temporaries_bytes is not None:
            figures["temporaries"] = self.temporaries_bytes
        return figures

    def measured_line(self) -> str:
        """One line: planned total (with its workspace) against the measured peak, or ''."""
        if self.measured_bytes is None:
            return ""
        total = self.plan.total_bytes
        ratio = self.measured_bytes / total if total else 1.0
        line = (
            f"planned total {format_bytes(total)} (workspace {format_bytes(self.plan.workspace_bytes)})"
            f", measured {format_bytes(self.measured_bytes)} = {ratio:.2f}x the plan"
        )
        if self.temporaries_bytes is not None:
            line += (f"; kernel temporaries beside it (not planned) "
                     f"{format_bytes(self.temporaries_bytes)} at their peak")  # fmt: skip
        return line

    def largest(self) -> list[Any]:
        """The ``top`` largest planned entries, largest first."""
        entries = sorted(self.plan.internal_entries(), key=lambda e: (-e.nbytes, e.name))
        return entries[: self.top]

    # -- drawing -------------------------------------------------------------

    def figure(self) -> Any:
        """Block rows (left), strategies and largest entries (right) on one ``Figure``."""
        from matplotlib.figure import Figure
        from matplotlib.patches import FancyArrowPatch

        rows = self.rows()
        steps = len(self.plan.steps)
        height = max(4.0, 0.9 + 0.22 * len(rows))
        figure = Figure(figsize=(13, height))
        grid = figure.add_gridspec(
            2, 2, width_ratios=(2.4, 1.0), height_ratios=(1.0, 1.3), hspace=0.35
        )
        chart = figure.add_subplot(grid[:, 0])
        from matplotlib.colors import to_rgba

        ys, lefts, widths, colours, ids = [], [], [], [], []
        for y, row in enumerate(rows):
            colour = block_colour(row.block.id)
            for entry in row.entries:
                ids.append(entry_id(entry.name))
                start = max(entry.first_step, 0)
                width = max(entry.last_step - start + 1, 1)
                ys.append(y)
                lefts.append(start - 0.5)
                widths.append(width)
                # a fainter bar: the entry uses only part of its block
                colours.append(
                    to_rgba(colour, 0.35 + 0.65 * entry.nbytes / max(row.block.nbytes, 1))
                )
                if width >= max(3, steps / 25):
                    chart.text(start - 0.4, y, entry.name[:22], fontsize=6, va="center")
        if ys:  # one call: thousands of separate bars would take seconds to draw
            drawn_bars = chart.barh(
                ys,
                widths,
                left=lefts,
                height=0.7,
                color=colours,
                edgecolor="#333333",
                linewidth=0.4,
            )
            for patch, gid in zip(drawn_bars.patches, ids):
                patch.set_gid(gid)  # the SVG id the canvas reports on a click
        _mark_recomputed(chart, rows)
        place = {e.name: y for y, row in enumerate(rows) for e in row.entries}
        for source, target in self.plan.inplace_pairs:
            if source in place and target in place:
                target_entry = self.plan.entry(target)
                x = target_entry.first_step - 0.5
                chart.add_patch(
                    FancyArrowPatch(
                        (x, place[source] - 0.35),
                        (x + 0.01, place[target] - 0.35),
                        connectionstyle="arc3,rad=-0.6",
                        arrowstyle="-|>",
                        mutation_scale=6,
                        color="#d62728",
                        linewidth=0.8,
                    )
                )
        chart.set_yticks(range(len(rows)))
        chart.set_yticklabels(
            [f"block {row.block.id} ({format_bytes(row.block.nbytes)})" for row in rows], fontsize=6
        )
        chart.set_ylim(len(rows) - 0.5, -0.5)
        chart.set_xlim(-1, max(steps, 1))
        chart.set_xlabel(
            "step (topological order); red arcs: in-place pairs; hatched: recomputed in backward"
        )
        chart.set_title(
            f"storage blocks: {len(rows)} blocks, {format_bytes(self.plan.internal_bytes)} "
            f"(naive {format_bytes(self.plan.naive_internal_bytes)}), "
            f"peak live {format_bytes(self.plan.peak_bytes)}"
            + (f"\n{self.measured_line()}" if self.measured_bytes is not None else ""),
            fontsize=9,
            loc="left",
        )
        chart.grid(axis="x", color="#eeeeee")
        chart.set_axisbelow(True)

        self._draw_bytes(figure.add_subplot(grid[0, 1]))
        self._draw_largest(figure.add_subplot(grid[1, 1]))
        return figure

    def _draw_bytes(self, bars: Any) -> None:
        """The strategies' bytes as bars (and the planned total beside the measured peak)."""
        figures = {**self.strategy_bytes(), **self.planned_against_measured()}
        names = list(figures)
        scale, unit = (
            (2**20, "MiB") if max(figures.values(), default=0) >= 2**20 else (2**10, "KiB")
        )
        values = [figures[n] / scale for n in names]
        palette = ["#bab0ac", "#f28e2b", "#76b7b2", "#4e79a7"]
        colours = [palette[i % len(palette)] for i in range(len(self.strategy_bytes()))]
        # planned total, measured, kernel temporaries
        colours += ["#59a14f", "#e15759", "#b07aa1"][: len(names) - len(colours)]
        drawn = bars.bar(names, values, color=colours)
        for bar, value in zip(drawn, values):
            bars.text(
                bar.get_x() + bar.get_width() / 2,
                value,
                f"{value:.3g}",
                ha="center",
                va="bottom",
                fontsize=7,
            )
        bars.set_ylabel(f"{unit} allocated", fontsize=8)
        bars.set_title(
            "strategies compared"
            + ("; planned total, measured" if self.measured_bytes is not None else ""),
            fontsize=9,
        )
        bars.tick_params(labelsize=7)

    def _draw_largest(self, table: Any) -> None:
        """The table of the largest planned entries."""
        table.set_axis_off()
        cells = [
            [e.name[:24], "x".join(map(str, e.shape)), format_bytes(e.nbytes), str(e.storage_id)]
            for e in self.largest()
        ]
        if cells:
            drawn_table = table.table(
                cellText=cells,
                colLabels=["entry", "shape", "bytes", "block"],
                loc="upper center",
                colWidths=[0.46, 0.26, 0.18, 0.1],
            )
            drawn_table.auto_set_font_size(False)
            drawn_table.set_fontsize(6.5)
        table.set_title("largest entries", fontsize=9)

    # -- interactive --------------------------------------------------------

    def tooltips(self) -> dict[str, str]:
        """Hover text per entry bar id (``'entry-fc1_output'``): lifetime, block, in-place source."""
        tips = {}
        for row in self.rows():
            block = f"block {row.block.id} ({format_bytes(row.block.nbytes)}, {len(row.entries)} entries)"
            for entry in row.entries:
                shape = "x".join(map(str, entry.shape))
                lines = [
                    f"{entry.name}  {shape} {entry.dtype}, {format_bytes(entry.nbytes)}",
                    f"lives steps {entry.first_step}..{entry.last_step}",
                    block,
                ]
                if entry.inplace_source:
                    lines.append(f"in place of {entry.inplace_source}")
                if getattr(entry, "recompute_of", None):
                    lines.append(f"recomputed in backward (of {entry.recompute_of})")
                tips[entry_id(entry.name)] = "\n".join(lines)
        return tips

    def groups(self) -> dict[str, int]:
        """Entry bar id -> storage block id: a click on a bar marks the entries sharing its block."""
        return {entry_id(e.name): row.block.id for row in self.rows() for e in row.entries}

    def widget(self) -> Any:
        """An :class:`~mxnb.widgets.SvgCanvas` of the chart: hover and click the entries."""
        from .canvas import SvgCanvas

        return SvgCanvas(svg=self.to_svg(), tooltips=self.tooltips(), groups=self.groups())

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, Any]:
        bundle = dict(super()._repr_mimebundle_(include, exclude))  # PNG + text where no widgets
        widget_bundle = self.widget()._repr_mimebundle_(include=include, exclude=exclude)
        if isinstance(widget_bundle, tuple):  # (data, metadata)
            widget_bundle = widget_bundle[0]
        bundle.update(widget_bundle or {})
        bundle["text/plain"] = self.to_text()
        return bundle

    def to_dot(self) -> Any:
        """The plan's steps as a chain, each entry a node coloured by its storage block.

        An entry hangs off the step that writes it; a dashed edge goes to the last
        step that reads it (after which its block is free for co-share).
        """
        import graphviz

        dot = graphviz.Digraph(name="memory_plan")
        dot.attr(rankdir="LR", fontname="Helvetica", fontsize="9")
        dot.attr("node", fontname="Helvetica", fontsize="8")
        for index, step in enumerate(self.plan.steps):
            op = self.plan.step_ops[index] if index < len(self.plan.step_ops) else ""
            dot.node(f"s{index}", f"{index}: {step}\n{op}", shape="box", style="rounded")
            if index:
                dot.edge(f"s{index - 1}", f"s{index}", color="#bbbbbb")
        for entry in self.plan.internal_entries():
            node = f"e_{entry.name}"
            dot.node(
                node,
                f"{entry.name}\nblock {entry.storage_id} · {format_bytes(entry.nbytes)}",
                shape="ellipse",
                style="filled",
                fillcolor=block_colour(entry.storage_id),
                fontcolor="white",
            )
            if entry.first_step >= 0:
                dot.edge(f"s{entry.first_step}", node)
            if entry.last_step > entry.first_step:
                dot.edge(node, f"s{entry.last_step}", style="dashed", color="#888888")
        for source, target in self.plan.inplace_pairs:
            dot.edge(
                f"e_{source}", f"e_{target}", label="in-place", color="#d62728", constraint="false"
            )
        return dot

    def to_text(self) -> str:
        """Blocks with their entries' lifetimes, strategies and the largest entries."""
        head = (
            f"MemoryPlanView: {len(self.plan.steps)} steps, {len(self.plan.blocks)} blocks, "
            f"{format_bytes(self.plan.internal_bytes)} planned vs "
            f"{format_bytes(self.plan.naive_internal_bytes)} naive, "
            f"peak live {format_bytes(self.plan.peak_bytes)}"
        )
        lines = [head]
        if self.measured_bytes is not None:
            lines.append(f"  {self.measured_line()}")
        for row in self.rows():
            life = ", ".join(
                f"{e.name}[{e.first_step}..{e.last_step}]{' (recomputed)' if e.recompute_of else ''}"
                for e in row.entries
            )
            lines.append(f"  block {row.block.id:>3} {format_bytes(row.block.nbytes):>10}: {life}")
        if getattr(self.plan, "recompute_steps", ()):
            lines.append(
                f"  recomputed ({self.plan.recompute}): {len(self.plan.recompute_steps)} steps, "
                f"recompute/forward FLOPs {self.plan.recompute_ratio:.3f}, segments: "
                + "; ".join(" ".join(run) for run in self.plan.segments())
            )
        if self.plan.inplace_pairs:
            lines.append(
                "  in-place: " + ", ".join(f"{s} -> {t}" for s, t in self.plan.inplace_pairs)
            )
        lines.append(
            "  strategies: "
            + ", ".join(f"{n} {format_bytes(b)}" for n, b in self.strategy_bytes().items())
        )
        lines.append("  largest entries:")
        for entry in self.largest():
            lines.append(
                f"    {entry.name:<32} {entry.shape!s:<20} {format_bytes(entry.nbytes):>10}"
                f"  block {entry.storage_id}"
            )
        return "\n".join(lines)


def _mark_recomputed(chart: Any, rows: list[BlockRow]) -> None:
    """Hatch the bars of recomputed entries (a forward value computed again in backward)."""
    ys, lefts, widths, ids = [], [], [], []
    for y, row in enumerate(rows):
        for entry in row.entries:
            if getattr(entry, "recompute_of", None):
                start = max(entry.first_step, 0)
                ids.append(entry_id(entry.name))
                ys.append(y)
                lefts.append(start - 0.5)
                widths.append(max(entry.last_step - start + 1, 1))
    if ys:
        hatched = chart.barh(
            ys, widths, left=lefts, height=0.7, color="none", hatch="////", edgecolor="#222222",
            linewidth=0.0,
        )  # fmt: skip
        for patch, gid in zip(hatched.patches, ids):
            patch.set_gid(gid)  # the hatch lies over the entry's bar: a click on it is the entry's
