"""Stats: time per op name and how busy each worker was.

Idea: the same events that draw the timeline, summed: per op name the number
of runs, total / mean / max time and failures (largest total first), and per
worker the share of the traced span it spent running ops, and why it sat idle
the rest of the time (``Trace.idle_summary()``: nothing pushed, waiting on a
var, ready but not started).  A low utilisation with many ready ops means too
few workers; a high one on a single lane with idle others means a dependency
chain (see the critical path).

A live view (the monitor's Stats tab, the lab Stats panel) redraws the table
over the whole run each time: it shows the idle summary while the run has at
most :data:`LIVE_IDLE_OPS` ops (``idle=None``), since attributing idle time
costs ten times the rest of the table.

State kept:
    model   the :class:`EngineModel` summed
    idle    show the idle summary: True, False, or None (only up to LIVE_IDLE_OPS ops)

Example::

    >>> from mxnb.engine.tracing import OpPush, OpStart, OpEnd
    >>> table = StatsTable([OpPush(0, 1, 'add', 'cpu(0)', (), (3,), 0, ()),
    ...                     OpStart(0, 1, 'cpu(0)/0', 't'), OpEnd(0.002, 1)])
    >>> [(row.name, row.count) for row in table.rows()]
    [('add', 1)]
"""

from __future__ import annotations

import html
from typing import Any

from ..engine.idle_time import REASONS, idle_spans, idle_summary
from ._render import FigureView, NameColours
from .dag import as_model
from .model import OpStats

__all__ = ["LIVE_IDLE_OPS", "StatsTable"]

#: The most ops a live Stats view attributes idle time for on every redraw.
LIVE_IDLE_OPS = 20_000


class StatsTable(FigureView):
    """Per-op-name timing and per-worker utilisation of a trace, as text, HTML or a chart."""

    def __init__(self, source: Any, width: float = 10.0, idle: bool | None = True) -> None:
        self._source = source
        self.model = as_model(source)
        self.width = width
        self.idle = idle

    def _shows_idle(self) -> bool:
        if self.idle is None:
            return len(self.model.ops) <= LIVE_IDLE_OPS
        return self.idle

    def refresh(self) -> StatsTable:
        """Read new events from the source trace."""
        if hasattr(self._source, "events"):
            self.model.update_from(self._source)
        return self

    def rows(self) -> list[OpStats]:
        """Per op name, largest total time first."""
        return self.model.stats()

    def utilisation(self) -> dict[str, float]:
        """Worker -> busy share (0..1)."""
        return self.model.utilisation()

    def idle_summary(self) -> dict[str, dict[str, float]]:
        """Worker -> reason -> seconds idle (``Trace.idle_summary()`` of the model shown; {} when not shown)."""
        return idle_summary(idle_spans(self.model)) if self._shows_idle() else {}

    def to_text(self) -> str:
        """Fixed-width tables: op names, then workers with their idle time by reason."""
        lines = [
            f"{'op':<28}{'count':>7}{'total ms':>12}{'mean ms':>11}{'max ms':>11}{'failed':>8}",
        ]
        for row in self.rows():
            lines.append(
                f"{row.name[:27]:<28}{row.count:>7}{1e3 * row.total:>12.3f}"
                f"{1e3 * row.mean:>11.3f}{1e3 * row.max:>11.3f}{row.failed:>8}"
            )
        lines.append("")
        shown = self._shows_idle()
        idle = self.idle_summary()
        reasons = REASONS if shown else ()
        heads = "".join(f"{r.replace('_', ' ') + ' ms':>22}" for r in reasons)
        lines.append(f"{'worker':<28}{'busy':>7}{heads}")
        for worker, share in self.utilisation().items():
            row = idle.get(worker, dict.fromkeys(REASONS, 0.0))
            cells = "".join(f"{1e3 * row[r]:>22.3f}" for r in reasons)
            lines.append(f"{worker:<28}{100 * share:>6.1f}%{cells}")
        if not shown:
            lines.append(self._idle_note())
        return "\n".join(lines)

    def _idle_note(self) -> str:
        return (
            f"(idle time by reason: not attributed live past {LIVE_IDLE_OPS} ops; "
            "call trace.idle_summary())"
        )

    def to_html(self) -> str:
        """The two tables as HTML (what the monitor's Stats tab shows)."""
        cells = "".join(
            f"<tr><td>{html.escape(r.name)}</td><td>{r.count}</td><td>{1e3 * r.total:.3f}</td>"
            f"<td>{1e3 * r.mean:.3f}</td><td>{1e3 * r.max:.3f}</td><td>{r.failed}</td></tr>"
            for r in self.rows()
        )
        shown = self._shows_idle()
        idle = self.idle_summary()
        reasons = REASONS if shown else ()
        zero = dict.fromkeys(REASONS, 0.0)
        workers = "".join(
            f"<tr><td>{html.escape(w)}</td><td>{100 * s:.1f}%</td>"
            f"<td><div style='background:#4e79a7;height:8px;width:{int(100 * s)}px'></div></td>"
            + "".join(f"<td>{1e3 * idle.get(w, zero)[r]:.3f}</td>" for r in reasons)
            + "</tr>"
            for w, s in self.utilisation().items()
        )
        idle_heads = "".join(f"<th>idle: {r.replace('_', ' ')} ms</th>" for r in reasons)
        note = "" if shown else f"<p><small>{html.escape(self._idle_note())}</small></p>"
        return (
            "<table class='mxnb-table'><tr><th>op</th><th>count</th><th>total ms</th>"
            f"<th>mean ms</th><th>max ms</th><th>failed</th></tr>{cells}</table>"
            f"<table class='mxnb-table'><tr><th>worker</th><th>busy</th><th></th>{idle_heads}</tr>"
            f"{workers}</table>{note}"
        )

    def figure(self) -> Any:
        """Bars of total time per op name and of utilisation per worker."""
        from matplotlib.figure import Figure

        rows = self.rows()[:20]
        util = self.utilisation()
        figure = Figure(figsize=(self.width, 1.5 + 0.25 * max(len(rows), len(util), 1)))
        left = figure.add_subplot(1, 2, 1)
        names = [row.name for row in rows]
        colours = NameColours()
        left.barh(names, [1e3 * row.total for row in rows], color=[colours(n) for n in names])
        left.invert_yaxis()
        left.set_xlabel("total time (ms)")
        left.set_title("time per op name", fontsize=9)
        left.tick_params(labelsize=7)
        right = figure.add_subplot(1, 2, 2)
        right.barh(list(util), [100 * s for s in util.values()], color="#4e79a7")
        right.invert_yaxis()
        right.set_xlim(0, 100)
        right.set_xlabel("busy (% of traced span)")
        right.set_title("worker utilisation", fontsize=9)
        right.tick_params(labelsize=7)
        figure.tight_layout()
        return figure

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, str]:
        return {"text/html": self.to_html(), "text/plain": self.to_text()}
