"""Two runs side by side: their timelines aligned, what changed marked.

Idea: :meth:`~mxnb.engine.tracing.Trace.diff` says in rows which ops got
slower or faster and which ran in one run only; this view shows where on the
two timelines that happened.  Run A on top, run B below, both on one time
axis (milliseconds since each run's first push), so the same op sits at the
same place when nothing changed.  The ``top`` largest changes are outlined —
red where B is slower, green where it is faster — and numbered by rank; the
key beside the plot names each number's op and change (a number, not the
whole label, so that the marks of neighbouring ops never write over one
another); ops of one run only are hatched.  A table of both runs' makespan,
overlap, critical path and idle time by reason sits in :meth:`to_text`.
:meth:`save` writes the same as a ``*.diff.json`` file, which the JupyterLab
extension opens as a panel: the two timelines drawn in the browser, aligned,
the changes outlined, the ranked rows below.

Rule: drawing never touches the engine; the diff is computed once, when the
view is made (:class:`~mxnb.engine.trace_diff.TraceDiff`).

State kept:
    diff     the :class:`~mxnb.engine.trace_diff.TraceDiff` of A against B
    models   the two runs' models (A, B)
    top      how many of the largest changes are marked

Example::

    >>> from mxnb.engine.events import OpPush, OpStart, OpEnd
    >>> def run(extra):
    ...     return [OpPush(0.0, 1, 'conv', 'cpu(0)', (), (7,), 0, ()),
    ...             OpStart(0.0, 1, 'cpu(0)/0', 't'), OpEnd(0.002 + extra, 1)]
    >>> view = TraceDiffView(run(0.0), run(0.005))
    >>> view.marked()
    {'a': {1: '+5.000 ms'}, 'b': {1: '+5.000 ms'}}
"""

from __future__ import annotations

import json
import os
from typing import Any

from ..atomic_file import write_atomically
from ..engine.trace_diff import DiffRow, TraceDiff
from ._render import FigureView, NameColours, short_name
from .dag import as_model
from .model import EngineModel, name_group

__all__ = ["TraceDiffView"]

SLOWER = "#d62728"
FASTER = "#2ca02c"
ONE_RUN = "#ff7f0e"


class TraceDiffView(FigureView):
    """Runs A and B as two aligned timelines, the largest changes marked (``to_png`` / ``to_svg``).

    Parameters
    ----------
    a, b : Trace, EngineModel or list of Event
        The two runs (A is the reference).
    top : int
        How many of the largest changes to mark.
    width : float
        Figure width in inches.
    """

    def __init__(self, a: Any, b: Any, top: int = 5, width: float = 10.0) -> None:
        self.diff = TraceDiff.of(a, b)
        self.models: tuple[EngineModel, EngineModel] = (as_model(a), as_model(b))
        self.top = top
        self.width = width

    def marked(self) -> dict[str, dict[int, str]]:
        """Per run ('a', 'b'): op id -> the label of its mark, for the ``top`` largest changes."""
        marks: dict[str, dict[int, str]] = {"a": {}, "b": {}}
        for (run, op), (_, row) in self._top().items():
            marks[run][op] = _label(row)
        return marks

    def _top(self) -> dict[tuple[str, int], tuple[int, DiffRow]]:
        """(run, op id) -> (rank from 1, row) of each of the ``top`` largest changes, by rank."""
        return {
            (run, op): (rank, row)
            for rank, row in enumerate(self.diff.rows[: self.top], 1)
            for run, op in (("a", row.a), ("b", row.b))
            if op is not None
        }

    def _key(self) -> list[Any]:
        """The legend's entries for the marks: each number, then the op's name and its change."""
        from matplotlib.lines import Line2D

        return [
            Line2D(
                [],
                [],
                linestyle="none",
                marker=f"${rank}$",
                markersize=7,
                color=_colour(row),
                label=f"{short_name(row.name)}: {_label(row)}",
            )
            for rank, row in enumerate(self.diff.rows[: self.top], 1)
        ]

    def figure(self) -> Any:
        """Draw A above B on one time axis, the ``top`` changes outlined and labelled."""
        from matplotlib.figure import Figure
        from matplotlib.patches import Patch

        lanes = [len(model.lanes()) for model in self.models]
        figure = Figure(figsize=(self.width, 2.0 + 0.45 * max(sum(lanes), 2)))
        axes_a, axes_b = figure.subplots(
            2, 1, sharex=True, gridspec_kw={"height_ratios": [max(n, 1) for n in lanes]}
        )
        colours = NameColours()
        top = self._top()
        only = {("a", row.a) for row in self.diff.only_a()} | {
            ("b", row.b) for row in self.diff.only_b()
        }
        summaries = {"a": self.diff.a, "b": self.diff.b}
        for run, axes, model in (("a", axes_a, self.models[0]), ("b", axes_b, self.models[1])):
            origin = min((op.push for op in model.ops.values() if op.push is not None), default=0.0)
            labels = []
            for y, lane in enumerate(model.lanes()):
                labels.append(lane.worker)
                for iv in lane.intervals:
                    op = model.ops[iv.op_id]
                    if op.start is None:
                        continue
                    end = op.end if op.end is not None else op.start
                    key = (run, iv.op_id)
                    edge, width, hatch = "#333333", 0.4, None
                    if key in top:
                        edge, width = _colour(top[key][1]), 2.2
                    if key in only:
                        edge, hatch = ONE_RUN, "//"
                    bars = axes.barh(
                        y,
                        1e3 * max(end - op.start, 1e-7),
                        left=1e3 * (op.start - origin),
                        height=0.7,
                        color=colours(name_group(op.name)),
                        edgecolor=edge,
                        linewidth=width,
                        hatch=hatch,
                    )
                    bars.patches[0].set_gid(f"{run}-op{iv.op_id}")
                    if key in top:  # its number above it; the key beside the plot says what
                        axes.text(
                            1e3 * ((op.start + end) / 2 - origin),
                            y - 0.42,
                            str(top[key][0]),
                            ha="center",
                            fontsize=7,
                            fontweight="bold",
                            color=edge,
                        )
            axes.set_yticks(range(len(labels)))
            axes.set_yticklabels(labels, fontsize=8)
            axes.set_ylim(max(len(labels), 1) - 0.5, -0.8)
            summary = summaries[run]
            axes.set_title(
                f"run {run.upper()}: makespan {1e3 * summary.makespan:.3f} ms, "
                f"{summary.overlap:.2f} ops at once, critical path {len(summary.critical_path)} ops",
                fontsize=9,
                loc="left",
            )
            axes.grid(axis="x", color="#eeeeee")
            axes.set_axisbelow(True)
        axes_b.set_xlabel("time since the run's first push (ms)")
        handles = colours.legend(10)
        handles += [
            Patch(facecolor="white", edgecolor=SLOWER, linewidth=2, label="slower in B"),
            Patch(facecolor="white", edgecolor=FASTER, linewidth=2, label="faster in B"),
            Patch(facecolor="white", edgecolor=ONE_RUN, hatch="//", label="in one run only"),
        ]
        handles += self._key()
        axes_a.legend(
            handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=7, frameon=False
        )
        return figure

    def to_data(self) -> dict[str, Any]:
        """The two timelines (``Timeline.to_data()`` each) and the ranked rows, JSON-ready.

        Both timelines get the same span (aligned axes) and ``marks``: ``[[op_id,
        colour, label], ...]`` for the ``top`` largest changes, which the browser's
        ``renderTimeline`` outlines (the JupyterLab viewer of ``*.diff.json`` files).
        """
        from .timeline import Timeline

        top = self._top()
        timelines = {}
        for run, model in (("a", self.models[0]), ("b", self.models[1])):
            data = Timeline(model).to_data()
            data["title"] = f"run {run.upper()}: {data['title']}"
            data["marks"] = [
                [op, _colour(row), _label(row)] for (on, op), (_, row) in top.items() if on == run
            ]
            timelines[run] = data
        end = max(timelines["a"]["span"][1], timelines["b"]["span"][1])
        for data in timelines.values():
            data["span"] = [0.0, end]
        rows = [
            {
                "name": row.name,
                "kind": row.kind,
                "a": row.a,
                "b": row.b,
                "change_ms": round(1e3 * row.change, 6),
            }
            for row in self.diff.rows
        ]
        return {
            "a": timelines["a"],
            "b": timelines["b"],
            "rows": rows,
            "marked": {run: sorted(ops) for run, ops in self.marked().items()},
            "summary": self.to_text(),
        }

    def save(self, path: str | os.PathLike[str]) -> str:
        """Write :meth:`to_data` as JSON (atomically) for JupyterLab's diff viewer; name it ``*.diff.json``."""
        document = {"mxnb_trace_diff": 1, **self.to_data()}
        write_atomically(path, json.dumps(document).encode("utf-8"))
        return os.fspath(path)

    def to_text(self) -> str:
        """The diff's table: both runs' figures, then the largest changes."""
        return self.diff.to_text(top=max(self.top, 10))


def _label(row: DiffRow) -> str:
    """What a marked change says: its change in run time, or the run it is alone in."""
    if row.kind == "only_a":
        return "only in A"
    if row.kind == "only_b":
        return "only in B"
    return f"{1e3 * row.change:+.3f} ms"


def _colour(row: DiffRow) -> str:
    """A marked change's colour: red slower in B, green faster, orange in one run only."""
    if row.kind != "changed":
        return ONE_RUN
    return SLOWER if row.change > 0 else FASTER
