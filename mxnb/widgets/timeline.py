"""The engine timeline: a lane per worker, a bar per op, waits and the critical path.

Idea: the DAG says what *may* run in parallel; the timeline shows what *did*.
Each worker gets a lane (lanes grouped by device, copy workers last), each op
a bar from ``OpStart`` to ``OpEnd`` coloured by op name, each thread blocked in
``wait_for_var`` / ``wait_for_all`` a hatched bar on a lane of its own, and
the critical path — the chain of dependencies that decided when the last op
finished — is outlined in red.  Under each worker lane a thin strip shows why
it sat idle (:meth:`~mxnb.engine.tracing.Trace.idle`): grey nothing pushed,
red waiting on a var (the hover names the var and the op holding it), yellow
ready but not started.  Clicking an op in :meth:`Timeline.canvas` marks its
ancestors and descendants on every lane.

Rule: times are milliseconds since the first event of the trace; ``time_range``
zooms to a window of that axis.  Bars carry the SVG id ``op<N>`` so the
browser extension can report which op was clicked.  Two drawings: matplotlib
(``figure``, ``to_png``, ``to_svg``: notebooks, files) and :meth:`to_data`, the
plain lanes-and-bars the browser draws itself (``static/canvas.js``,
``renderTimeline``) with a level of detail for its width — what the live
monitor and the lab panel send, since matplotlib takes seconds at a few
thousand ops.

State kept:
    model        the :class:`EngineModel` drawn
    time_range   (start_ms, end_ms) or None for everything
    highlight_critical   outline the critical path
    show_idle    draw the idle spans under the lanes

Example::

    >>> from mxnb.engine.tracing import OpPush, OpStart, OpEnd
    >>> tl = Timeline([OpPush(0, 1, 'add', 'cpu(0)', (), (3,), 0, ()),
    ...                OpStart(0.001, 1, 'cpu(0)/0', 't'), OpEnd(0.002, 1)])
    >>> [lane.worker for lane in tl.lanes()]
    ['cpu(0)/0']
"""

from __future__ import annotations

from typing import Any

from ..engine.idle_time import IdleSpan, idle_spans
from ._render import FigureView, NameColours
from .dag import as_model, lineage_links
from .model import EngineModel, Lane, OpState, name_group

__all__ = ["IDLE_COLOURS", "Timeline"]

#: Colour of an idle span by reason (the browser's canvas.js uses the same).
IDLE_COLOURS = {
    "nothing_pushed": "#bab0ac",
    "waiting_on_var": "#e15759",
    "ready_not_started": "#edc948",
}


def _ms(seconds: float) -> float:
    return round(1e3 * seconds, 6)


class Timeline(FigureView):
    """Worker lanes with op bars, wait marks and the critical path of a trace.

    Parameters
    ----------
    source : Trace, EngineModel or list of Event
        What to draw (a finished trace, one loaded from chrome-trace JSON, or a live one).
    time_range : (float, float), optional
        Zoom: milliseconds since the first event.
    highlight_critical : bool
        Outline the critical path in red (default True).
    width : float
        Figure width in inches.
    """

    def __init__(
        self,
        source: Any,
        time_range: tuple[float, float] | None = None,
        highlight_critical: bool = True,
        width: float = 10.0,
        show_idle: bool = True,
    ) -> None:
        self._source = source
        self.model: EngineModel = as_model(source)
        self.time_range = time_range
        self.highlight_critical = highlight_critical
        self.width = width
        self.show_idle = show_idle

    def refresh(self) -> Timeline:
        """Read new events from the source trace."""
        if hasattr(self._source, "events"):
            self.model.update_from(self._source)
        return self

    def lanes(self) -> list[Lane]:
        """The worker lanes, top to bottom (see :meth:`EngineModel.lanes`)."""
        return self.model.lanes()

    def idle(self) -> list[IdleSpan]:
        """The lanes' idle spans with their reasons (``Trace.idle()``, from the model drawn)."""
        if not self.show_idle:
            return []
        return idle_spans(self.model)

    def describe_idle(self, span: IdleSpan) -> str:
        """Hover text of an idle span: its reason, the var and the op it names, its length."""
        ms = f"{1e3 * (span.end - span.start):.3f} ms"
        op = self.model.ops.get(span.op) if span.op is not None else None
        label = op.label if op is not None else (f"#{span.op}" if span.op is not None else "")
        if span.reason == "waiting_on_var":
            var = self.model.var_name(span.var) if span.var is not None else "?"
            return f"{span.lane} idle {ms}: waiting on var {var!r}, held by op {label or '?'}"
        if span.reason == "ready_not_started":
            return f"{span.lane} idle {ms}: op {label} was ready but not started here"
        later = f" (next: op {label})" if label else ""
        return f"{span.lane} idle {ms}: nothing pushed yet{later}"

    def tooltips(self) -> dict[str, str]:
        """Hover text per bar id (``'op12'``) and idle span (``'idle3'``), for :meth:`to_svg` in a canvas.

        Matplotlib's SVG carries no ``<title>`` on a bar, so without these a
        hovered bar shows nothing.
        """
        tips = {
            f"op{iv.op_id}": self.model.ops[iv.op_id].summary()
            for lane in self.lanes()
            for iv in lane.intervals
        }
        for index, span in enumerate(self.idle()):
            tips[f"idle{index}"] = self.describe_idle(span)
        return tips

    def lineage_links(self) -> dict[str, list[str]]:
        """Bar id -> the bar ids of the ops it depends on directly (for a click's lineage)."""
        return lineage_links(self.model)

    def canvas(self) -> Any:
        """An :class:`~mxnb.widgets.SvgCanvas` drawing this timeline in the browser.

        Hover names an op or an idle span's reason, var and op; a click marks
        the clicked op's ancestors and descendants across lanes.
        """
        from .canvas import SvgCanvas

        return SvgCanvas(timeline=self.to_data(), links=self.lineage_links())

    def to_data(self, flows: bool = False) -> dict[str, Any]:
        """The timeline as JSON-ready data for the browser's ``renderTimeline``.

        ``{"title", "span": [first_ms, last_ms], "lanes": [{"name", "kind", "device",
        "bars": [[op_id, start_ms, end_ms, name, state, error], ...]}], "critical":
        [op ids], "flows": [[holder, waiter, "RAW a"], ...], "idle": [[lane name,
        start_ms, end_ms, reason, hover text], ...]}``; a wait bar has
        ``op_id`` ``None`` and ``state`` ``"wait"``.  Flows (the dependency arrows)
        only when asked: a trace file's viewer draws them, the live panel does not.
        """
        first, last = self.model.span()
        lanes: list[dict[str, Any]] = []
        for thread, spans in self.wait_lanes().items():
            bars = [
                [
                    None,
                    _ms(begin),
                    _ms(end if end is not None else last),
                    f"wait {what}",
                    "wait",
                    None,
                ]
                for begin, end, what in spans
            ]
            lanes.append({"name": f"wait: {thread}", "kind": "wait", "device": "", "bars": bars})
        ops = self.model.ops
        for lane in self.lanes():
            bars = [
                [
                    iv.op_id,
                    _ms(iv.start),
                    _ms(iv.end if iv.end is not None else last),
                    iv.name,
                    iv.state.value,
                    ops[iv.op_id].error,
                ]
                for iv in lane.intervals
            ]
            name = f"{lane.worker} [copy]" if lane.is_copy else lane.worker
            lanes.append({"name": name, "kind": "worker", "device": lane.device, "bars": bars})
        span = list(self.time_range) if self.time_range else [_ms(first), _ms(last)]
        data: dict[str, Any] = {
            "title": f"engine timeline: {len(ops)} ops, {len(self.lanes())} workers",
            "span": span,
            "lanes": lanes,
            "critical": self.model.critical_path() if self.highlight_critical else [],
            "flows": [],
            "idle": self.idle_data(),
        }
        if flows:
            data["flows"] = [
                [e.holder, e.waiter, f"{e.kind.name} {self.model.var_name(e.var_id)}"]
                for e in self.model.edges
                if e.holder in ops and ops[e.holder].start_time is not None
            ]
        return data

    def idle_data(self) -> list[list[Any]]:
        """The idle spans as ``to_data()`` gives them: ``[lane name, start_ms, end_ms, reason, hover]``."""
        t0 = self.model.t0 or 0.0
        shown = {
            lane.worker: f"{lane.worker} [copy]" if lane.is_copy else lane.worker
            for lane in self.lanes()
        }
        return [
            [
                shown.get(s.lane, s.lane),
                _ms(s.start - t0),
                _ms(s.end - t0),
                s.reason,
                self.describe_idle(s),
            ]
            for s in self.idle()
        ]

    def wait_lanes(self) -> dict[str, list[tuple[float, float | None, str]]]:
        """Per waiting thread: (begin, end, what) of each wait; ``what`` is a var name or 'all'."""
        lanes: dict[str, list[tuple[float, float | None, str]]] = {}
        for wait in self.model.waits.values():
            what = "all" if wait.var_id is None else self.model.var_name(wait.var_id)
            lanes.setdefault(wait.thread or "main", []).append((wait.begin, wait.end, what))
        return lanes

    def figure(self) -> Any:
        """Draw the timeline on a new matplotlib ``Figure``."""
        from matplotlib.figure import Figure
        from matplotlib.patches import Patch

        lanes = self.lanes()
        waits = self.wait_lanes()
        rows = len(lanes) + len(waits)
        figure = Figure(figsize=(self.width, 1.2 + 0.42 * max(rows, 1)))
        axes = figure.add_subplot(1, 1, 1)
        first, last = self.model.span()
        critical = set(self.model.critical_path()) if self.highlight_critical else set()
        labels: list[str] = []
        named: list[tuple[float, float, int, str]] = []  # (left ms, width ms, lane row, op name)
        wait_texts: list[tuple[float, int, str]] = []  # (left ms, lane row, "wait <var>")
        colours = NameColours()
        y = 0
        for thread, spans in waits.items():
            for begin, end, what in spans:
                stop = end if end is not None else last
                _bar(
                    axes,
                    y,
                    1e3 * begin,
                    1e3 * max(stop - begin, 1e-7),
                    0.5,
                    facecolor="#ffffff",
                    edgecolor="#888888",
                    hatch="///",
                )
                wait_texts.append((1e3 * begin, y, f"wait {what}"))
            labels.append(f"wait: {thread}")
            y += 1
        idle_by_lane: dict[str, list[tuple[int, IdleSpan]]] = {}
        for index, span in enumerate(self.idle()):
            idle_by_lane.setdefault(span.lane, []).append((index, span))
        t0 = self.model.t0 or 0.0
        previous_device = None
        for lane in lanes:
            for index, span in idle_by_lane.get(lane.worker, ()):
                strip = _bar(
                    axes,
                    y + 0.42,
                    1e3 * (span.start - t0),
                    1e3 * (span.end - span.start),
                    0.12,
                    facecolor=IDLE_COLOURS[span.reason],
                    linewidth=0,
                )
                strip.set_gid(f"idle{index}")
            if previous_device is not None and lane.device != previous_device:
                axes.axhline(y - 0.5, color="#bbbbbb", linewidth=0.8)
            previous_device = lane.device
            for iv in lane.intervals:
                end = iv.end if iv.end is not None else last
                colour = colours(name_group(iv.name))
                edge = "#d62728" if iv.op_id in critical else "#333333"
                width = 2.0 if iv.op_id in critical else 0.4
                hatch = "xx" if iv.state in (OpState.FAILED, OpState.SKIPPED) else None
                bar = _bar(
                    axes,
                    y,
                    1e3 * iv.start,
                    1e3 * max(end - iv.start, 1e-7),
                    0.7,
                    facecolor=colour,
                    edgecolor=edge,
                    linewidth=width,
                    hatch=hatch,
                )
                bar.set_gid(f"op{iv.op_id}")
                named.append((1e3 * iv.start, 1e3 * (end - iv.start), y, iv.name))
            tag = " [copy]" if lane.is_copy else ""
            labels.append(f"{lane.worker}{tag}")
            y += 1
        axes.set_yticks(range(len(labels)))
        axes.set_yticklabels(labels, fontsize=8)
        axes.invert_yaxis()
        axes.set_xlabel("time since first event (ms)")
        if self.time_range is not None:
            axes.set_xlim(*self.time_range)
        else:  # the bars do not move the limits (see _bar): a run of no length gets 1 ms
            pad = 0.02 * 1e3 * (last - first) if last > first else 0.5
            axes.set_xlim(1e3 * first - pad, 1e3 * last + pad)
        axes.set_ylim(max(len(labels), 1) - 0.5, -0.5)
        self._label_wide_bars(axes, named)
        self._label_waits(axes, wait_texts)
        axes.grid(axis="x", color="#eeeeee")
        axes.set_axisbelow(True)
        handles = colours.legend(12)
        reasons = {span.reason for spans in idle_by_lane.values() for _, span in spans}
        handles.extend(
            Patch(color=IDLE_COLOURS[r], label=f"idle: {r.replace('_', ' ')}")
            for r in IDLE_COLOURS
            if r in reasons
        )
        if critical:
            handles.append(
                Patch(facecolor="white", edgecolor="#d62728", linewidth=2, label="critical path")
            )
        if handles:
            axes.legend(
                handles=handles,
                loc="upper left",
                bbox_to_anchor=(1.01, 1.0),
                fontsize=7,
                frameon=False,
            )
        axes.set_title(
            f"engine timeline: {len(self.model.ops)} ops, {len(lanes)} workers", fontsize=10
        )
        return figure

    @staticmethod
    def _label_waits(axes: Any, texts: list[tuple[float, int, str]]) -> None:
        """Write "wait <var>" at each wait's start, unless it would run into the last one written.

        Back-to-back waits (a loop's ``wait_to_read``) used to write their
        labels over each other; now the next label waits for room on its row.
        """
        low, high = axes.get_xlim()
        char_ms = _char_width(axes)
        free: dict[int, float] = {}  # row -> where its last label ends (ms)
        for left, row, text in sorted(texts):
            if not low <= left <= high or left < free.get(row, low):
                continue
            axes.text(left, row + 0.32, text, fontsize=6, color="#555555")
            free[row] = left + char_ms * (len(text) + 1)

    @staticmethod
    def _label_wide_bars(axes: Any, named: list[tuple[float, float, int, str]]) -> None:
        """Write the op name inside every bar wide enough to hold it.

        Colours repeat once there are more op names than the palette holds, so
        the name on the bar is what tells two long ops apart.
        """
        low, high = axes.get_xlim()
        span = max(high - low, 1e-9)
        char_ms = _char_width(axes)
        for left, width, row, name in named:
            visible = min(left + width, high) - max(left, low)
            if visible <= 0 or visible < char_ms * (len(name) + 1):
                continue
            axes.text(
                max(left, low) + 0.004 * span,
                row,
                name,
                fontsize=6,
                va="center",
                ha="left",
                color="#111111",
                clip_on=True,
            )

    def to_text(self) -> str:
        """One line per lane: worker, ops run, busy ms, and the first ops on it."""
        lines = [f"Timeline: {len(self.model.ops)} ops"]
        for thread, spans in self.wait_lanes().items():
            lines.append(f"  wait: {thread:<16} {len(spans)} waits")
        for lane in self.lanes():
            busy = sum((iv.end or iv.start) - iv.start for iv in lane.intervals)
            shown = ", ".join(f"#{iv.op_id} {iv.name}" for iv in lane.intervals[:6])
            more = " ..." if len(lane.intervals) > 6 else ""
            lines.append(
                f"  {lane.worker:<20} {len(lane.intervals):>5} ops {1e3 * busy:9.3f} ms  {shown}{more}"
            )
        path = self.model.critical_path()
        if path:
            chain = " -> ".join(self.model.ops[op_id].label for op_id in path)
            lines.append(f"  critical path: {chain}")
        return "\n".join(lines)


def _bar(axes: Any, y: float, left: float, width: float, height: float, **style: Any) -> Any:
    """A bar centred on lane ``y``, as ``axes.barh`` draws it, added without updating the data
    limits (the timeline sets its limits itself): ``barh``'s update was most of the drawing time
    of a figure of thousands of ops, and a notebook draws a wide figure twice."""
    from matplotlib.patches import Rectangle

    bar = Rectangle((left, y - height / 2), width, height, **style)
    axes.add_artist(bar)
    return bar


def _char_width(axes: Any) -> float:
    """How much of the time axis (ms) one fontsize-6 character takes: about 0.6 em."""
    low, high = axes.get_xlim()
    axes_inches = axes.get_position().width * axes.figure.get_figwidth()
    return (0.6 * 6 / 72) * max(high - low, 1e-9) / max(axes_inches, 1e-9)
