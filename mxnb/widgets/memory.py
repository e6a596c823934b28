"""Memory over time: bytes in use per context, pool hits and misses, the peak.

Idea: the storage managers emit ``StorageAlloc`` (with ``pool_hit``) and
``StorageFree`` (with ``to_pool``).  Summing them in order gives, per
context, the bytes handed out to arrays (*in use*) and the bytes the process
really holds (*held*: in use plus blocks parked in the pool).  The gap between
the two lines is the pool; green marks are allocations the pool served, red
marks ones that went to the system.

Rule: the chart reads :class:`~mxnb.widgets.model.MemorySeries` only.

State kept:
    model   the :class:`EngineModel` whose ``memory`` series are drawn

Example::

    >>> from mxnb.engine.tracing import StorageAlloc, StorageFree
    >>> chart = MemoryChart([StorageAlloc(0, 'cpu(0)', 1, 4096, False),
    ...                      StorageFree(1, 'cpu(0)', 1, 4096, True)])
    >>> chart.model.memory['cpu(0)'].in_use
    [4096, 0]
"""

from __future__ import annotations

from typing import Any

from ._render import FigureView
from .dag import as_model

__all__ = ["MemoryChart", "format_bytes"]


def format_bytes(nbytes: float) -> str:
    """``1536 -> '1.5 KiB'``."""
    value = float(nbytes)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(value) < 1024 or unit == "GiB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:.1f} GiB"


class MemoryChart(FigureView):
    """Bytes in use and held over time per context, from storage events.

    Parameters
    ----------
    source : Trace, EngineModel or list of Event
        The events to read.
    """

    def __init__(self, source: Any, width: float = 10.0) -> None:
        self._source = source
        self.model = as_model(source)
        self.width = width

    def refresh(self) -> MemoryChart:
        """Read new events from the source trace."""
        if hasattr(self._source, "events"):
            self.model.update_from(self._source)
        return self

    def figure(self) -> Any:
        """Draw one panel per context on a new matplotlib ``Figure``."""
        from matplotlib.figure import Figure

        series_list = list(self.model.memory.values())
        panels = max(len(series_list), 1)
        figure = Figure(figsize=(self.width, 2.4 * panels))
        if not series_list:
            axes = figure.add_subplot(1, 1, 1)
            axes.text(0.5, 0.5, "no storage events traced yet", ha="center", va="center")
            axes.set_axis_off()
            return figure
        for index, series in enumerate(series_list):
            _draw_series(figure.add_subplot(panels, 1, index + 1), series)
        figure.axes[-1].set_xlabel("time since first event (ms)")
        return figure

    def to_text(self) -> str:
        """One line per context: peak, now in use, held, pool hits and misses."""
        lines = ["Memory:"]
        if not self.model.memory:
            lines.append("  no storage events")
        for series in self.model.memory.values():
            now = series.in_use[-1] if series.in_use else 0
            held = series.held[-1] if series.held else 0
            lines.append(
                f"  {series.ctx:<16} peak {format_bytes(series.peak):>10}  in use {format_bytes(now):>10}"
                f"  held {format_bytes(held):>10}  pool hits {series.hits}  misses {series.misses}"
            )
        return "\n".join(lines)


def _draw_series(axes: Any, series: Any) -> None:
    """One context's panel: bytes in use and held over time, the peak, pool hits and misses."""
    times = [1e3 * t for t in series.times]
    axes.step(times, series.in_use, where="post", color="#1f77b4", label="in use")
    axes.step(
        times,
        series.held,
        where="post",
        color="#7f7f7f",
        linestyle="--",
        label="held (incl. pool)",
    )
    axes.fill_between(times, series.in_use, step="post", color="#1f77b4", alpha=0.15)
    axes.axhline(series.peak, color="#d62728", linewidth=0.8, linestyle=":")
    axes.annotate(
        f"peak {format_bytes(series.peak)}",
        (1e3 * series.peak_time, series.peak),
        textcoords="offset points",
        xytext=(4, 4),
        fontsize=8,
        color="#d62728",
    )
    if series.hit_times:
        axes.plot(
            [1e3 * t for t in series.hit_times],
            [0] * series.hits,
            "^",
            color="#2ca02c",
            markersize=5,
            label=f"pool hit ({series.hits})",
        )
    if series.miss_times:
        axes.plot(
            [1e3 * t for t in series.miss_times],
            [0] * series.misses,
            "v",
            color="#d62728",
            markersize=5,
            label=f"pool miss ({series.misses})",
        )
    top = max(series.peak_held, series.peak, 1)  # every line inside the axis
    axes.set_ylim(-0.05 * top, 1.2 * top)
    ticks = axes.get_yticks()
    axes.set_yticks(ticks)
    axes.set_yticklabels([format_bytes(t) for t in ticks], fontsize=7)
    axes.set_ylim(-0.05 * top, 1.2 * top)
    axes.set_title(f"memory on {series.ctx}", fontsize=9, loc="left")
    axes.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=7, frameon=False)
    axes.grid(color="#eeeeee")
