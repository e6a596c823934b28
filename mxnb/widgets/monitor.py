"""EngineMonitor: the live view of the engine in a notebook.

Idea: attach a trace recorder, fold its events into an :class:`EngineModel`
and redraw the visible tab — DAG, Timeline, Memory, Stats, Inspect — while
ops are pushed.  With the ``step`` engine, buttons run the next ready op, a
chosen ready op, everything, or everything up to a chosen op, so a class can
walk through legal schedules and watch readers reorder while writers keep
push order.

Rule: the monitor never runs in an engine worker and never blocks the pusher.
Events reach it through the recorder (one list append in the engine); a
background thread of the monitor wakes at most ``1 / interval`` times a second
(interval >= 0.2 s: at most 5 redraws a second, whatever the push rate),
redraws only when events arrived and only the visible tab, and backs off
further when a redraw is slow (it sleeps at least three times the last
redraw's time), so drawing takes at most a quarter of one core.  It builds
the trace's raw records into events in bounded chunks (``Trace.build(limit)``)
and rests four times each chunk's time before the next, so it never holds the
interpreter long and the pushing thread keeps four fifths of it while ops
stream in; when it cannot keep up it draws what it has built and catches up
when the pushes pause.  The DAG tab
folds only the events of its window of recent ops; the other tabs fold the
whole run into :attr:`model` (incrementally, once per event).  The Timeline tab
sends the whole timeline once, then only deltas (:mod:`.timeline_feed`), so a
redraw costs what changed, not the length of the run.  Detached, it costs the
engine nothing.

State kept:
    trace       the :class:`~mxnb.engine.tracing.Trace` recorder it reads
    model       the :class:`EngineModel` folded from it
    paused      True: events are still recorded but nothing is redrawn
    redraws     how many redraws happened (tests and the benchmark read it)

Example::

    >>> import mxnb as mx
    >>> from mxnb import widgets
    >>> eng = mx.engine.get()
    >>> with widgets.EngineMonitor(background=False) as mon:
    ...     v = eng.new_var(name='a')
    ...     op_id = eng.push_sync(lambda rctx: None, mx.cpu(), mutate_vars=[v], name='write_a')
    ...     eng.wait_for_all()
    >>> [op.name for op in mon.model.ops.values()]
    ['write_a']
"""

from __future__ import annotations

import html
import threading
import time
from typing import Any

import ipywidgets

from ..engine.tracing import OpEnd, OpPush, Trace, VarName, VarNew
from .canvas import SvgCanvas, lineage_of, selected_op_id
from .dag import DependencyGraph
from .memory import MemoryChart
from .model import EngineModel, OpState
from .stats import StatsTable
from .timeline import Timeline
from .timeline_feed import TimelineFeed

__all__ = ["TAB_TITLES", "EngineMonitor"]

TAB_TITLES = ("DAG", "Timeline", "Memory", "Stats", "Inspect")


def _set_options(choice: ipywidgets.Dropdown, options: list[tuple[str, int]]) -> None:
    """Set a dropdown's options, keeping its value when still offered, else the first.

    ipywidgets 8 leaves the value ``None`` (a blank dropdown) when the options
    change, even when an option is there to show.
    """
    if options == list(choice.options):
        return
    value = choice.value
    choice.options = options
    offered = [option for _, option in options]
    choice.value = value if value in offered else (offered[0] if offered else None)


class EngineMonitor(ipywidgets.VBox):
    """Live DAG / Timeline / Memory / Stats / Inspect tabs over the engine's trace.

    Parameters
    ----------
    trace : Trace, optional
        The recorder to read (a new one by default).
    attach : bool
        Attach the recorder now (default True); ``with`` attaches too, and detaches at exit.
    last : int
        The DAG shows the most recent ``last`` ops.
    interval : float
        Seconds between redraw checks (at least 0.2).
    background : bool
        Redraw from a background thread while ops are pushed (default True); with
        False, only :meth:`refresh` redraws (scripts, tests).
    engine : Engine, optional
        Engine whose step controls the buttons drive (default ``mx.engine.get()``).
    """

    CHUNK = 2000  # engine records built per step of the background catch-up

    def __init__(
        self,
        trace: Trace | None = None,
        attach: bool = True,
        last: int = 40,
        interval: float = 0.2,
        background: bool = True,
        engine: Any = None,
    ) -> None:
        self.trace = trace if trace is not None else Trace()
        self.interval = max(0.2, float(interval))
        self._engine = engine
        self._init_state()
        controls = self._build_controls()
        self.step_box = self._build_step_box()
        self.tabs = self._build_tabs(last)
        super().__init__(children=[controls, self.step_box, self.tabs])
        self._step_mode = self._is_step_engine()
        self.step_box.layout.display = "flex" if self._step_mode else "none"
        if attach:
            self.attach()
        if background:
            self._thread = threading.Thread(
                target=self._redraw_loop, name="mxnb-monitor", daemon=True
            )
            self._thread.start()
        self.refresh()

    def _init_state(self) -> None:
        """The counters, locks and bookkeeping of redraws (no widgets)."""
        self._model = EngineModel()
        self._fold_lock = threading.RLock()  # folding the full model, from either thread
        self._scanned = 0  # events counted by _scan
        self._pushed = 0
        self._finished = 0
        self._failed = 0
        self._var_names: dict[int, str] = {}
        self.paused = False
        self.redraws = 0
        self._lock = threading.Lock()  # one redraw at a time (thread vs refresh())
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._drawn_events = -1
        self._drawn_tab = -1
        self._build_now = True  # False while the background thread redraws (no bulk build)
        self._timeline_feed = TimelineFeed()  # the Timeline tab gets deltas after a full send

    def _build_controls(self) -> ipywidgets.HBox:
        """Pause / Resume / Clear / Refresh and the status line."""
        self.pause_button = ipywidgets.Button(description="Pause", icon="pause")
        self.resume_button = ipywidgets.Button(description="Resume", icon="play")
        self.clear_button = ipywidgets.Button(description="Clear", icon="trash")
        self.refresh_button = ipywidgets.Button(description="Refresh", icon="refresh")
        self.status = ipywidgets.HTML()
        self.pause_button.on_click(lambda _: self.pause())
        self.resume_button.on_click(lambda _: self.resume())
        self.clear_button.on_click(lambda _: self.clear())
        self.refresh_button.on_click(lambda _: self.refresh())
        return ipywidgets.HBox(
            [
                self.pause_button,
                self.resume_button,
                self.clear_button,
                self.refresh_button,
                self.status,
            ]
        )

    def _build_step_box(self) -> ipywidgets.HBox:
        """The step engine's buttons and ready / until choices (hidden for other engines)."""
        self.step_button = ipywidgets.Button(description="Step", tooltip="run the next ready op")
        self.run_button = ipywidgets.Button(description="Run", tooltip="run every ready op")
        self.ready_choice = ipywidgets.Dropdown(description="ready", options=[])
        self.run_chosen_button = ipywidgets.Button(description="Run chosen")
        self.until_choice = ipywidgets.Dropdown(description="until", options=[])
        self.run_until_button = ipywidgets.Button(description="Run until")
        self.step_button.on_click(lambda _: self._engine_call("step"))
        self.run_button.on_click(lambda _: self._engine_call("run"))
        self.run_chosen_button.on_click(lambda _: self.run_op(self.ready_choice.value))
        self.run_until_button.on_click(lambda _: self.run_until(self.until_choice.value))
        return ipywidgets.HBox(
            [
                self.step_button,
                self.run_button,
                self.ready_choice,
                self.run_chosen_button,
                self.until_choice,
                self.run_until_button,
            ]
        )

    def _build_dag_filters(self, last: int) -> ipywidgets.HBox:
        """The DAG tab's window, filters and toggles; each change redraws."""
        self.last = ipywidgets.BoundedIntText(value=last, min=1, max=100000, description="last ops")
        self.name_filter = ipywidgets.Text(description="op name", placeholder="filter")
        self.var_filter = ipywidgets.Text(description="var", placeholder="filter")
        self.show_vars = ipywidgets.Checkbox(description="vars as nodes", value=False)
        self.show_deletes = ipywidgets.Checkbox(description="show deletes", value=False)
        controls = (self.last, self.name_filter, self.var_filter, self.show_vars, self.show_deletes)
        for control in controls:
            control.observe(lambda _: self.refresh(), names="value")
        return ipywidgets.HBox(list(controls))

    def _build_tabs(self, last: int) -> ipywidgets.Tab:
        """The five tabs (:data:`TAB_TITLES`), their canvases and the Inspect choice."""
        self.dag_canvas = SvgCanvas()
        self.timeline_canvas = SvgCanvas()
        self.memory_image = ipywidgets.Image(format="png")
        self.memory_text = ipywidgets.HTML()
        self.stats_html = ipywidgets.HTML()
        self.inspect_choice = ipywidgets.Dropdown(description="op", options=[])
        self.inspect_text = ipywidgets.HTML()
        self.dag_canvas.observe(self._on_click, names=["selected", "clicks"])
        self.timeline_canvas.observe(self._on_click, names=["selected", "clicks"])
        self.timeline_canvas.on_msg(self._on_timeline_msg)
        self.inspect_choice.observe(lambda _: self._draw_inspect(), names="value")
        tabs = ipywidgets.Tab(
            children=[
                ipywidgets.VBox([self._build_dag_filters(last), self.dag_canvas]),
                self.timeline_canvas,
                ipywidgets.VBox([self.memory_text, self.memory_image]),
                self.stats_html,
                ipywidgets.VBox([self.inspect_choice, self.inspect_text]),
            ],
            titles=TAB_TITLES,
        )
        tabs.observe(lambda _: self.refresh(), names="selected_index")
        return tabs

    # -- life cycle ---------------------------------------------------------

    def attach(self) -> EngineMonitor:
        """Start recording engine events."""
        self.trace.attach()
        return self

    def detach(self) -> EngineMonitor:
        """Stop recording (the engine's cost drops back to one flag check); views stay."""
        self.trace.detach()
        return self

    def __enter__(self) -> EngineMonitor:  # noqa: PYI034
        return self.attach()

    def __exit__(self, *exc_info: object) -> None:
        self.detach()
        self.refresh()

    def close(self) -> None:
        """Detach, stop the redraw thread and close the widgets."""
        self.detach()
        self._stop.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout=2)
        super().close()

    def pause(self) -> None:
        """Stop redrawing (events are still recorded)."""
        self.paused = True
        self._set_status()

    def resume(self) -> None:
        """Redraw again, at once."""
        self.paused = False
        self.refresh()

    def clear(self) -> None:
        """Forget the events recorded so far and redraw empty views."""
        with self._lock, self._fold_lock:
            self.trace.clear()
            self._model = EngineModel()
            self._scanned = self._pushed = self._finished = self._failed = 0
            self._drawn_events = -1
        self.refresh()

    # -- redrawing ------------------------------------------------------------

    def _redraw_loop(self) -> None:
        pause = self.interval
        while not self._stop.wait(pause):
            pause = self.interval
            if self.paused:
                continue
            if not self._catch_up():
                return
            if len(self.trace.built_events) == self._drawn_events:
                continue
            began = time.perf_counter()
            try:
                self.refresh(force=False, build=False)
            except Exception as exc:  # noqa: BLE001 - a drawing error must not kill the thread
                self.status.value = (
                    f"<span style='color:#c62828'>redraw failed: {html.escape(repr(exc))}</span>"
                )
            # back off when drawing is slow: drawing takes at most a quarter of the time
            pause = max(self.interval, 3 * (time.perf_counter() - began))

    def _catch_up(self) -> bool:
        """Build the trace's new records in bounded chunks, resting 4x each chunk's time.

        The pushing thread keeps at least four fifths of the interpreter
        while ops stream in; after ``interval`` seconds of catching up the
        monitor redraws what it has (a view that lags beats no view).
        Returns False when the monitor was closed meanwhile.
        """
        deadline = time.perf_counter() + self.interval
        while True:
            began = time.perf_counter()
            left = self.trace.build(self.CHUNK)
            if self._needs_full_model(self.tabs.selected_index or 0):
                with self._fold_lock:
                    folded = self._model.update_from(self.trace, self.CHUNK, build=False)
                left += folded == self.CHUNK
            spent = time.perf_counter() - began
            if not left or began > deadline:
                return True
            if self._stop.wait(max(0.001, 4 * spent)):
                return False

    @property
    def model(self) -> EngineModel:
        """The :class:`EngineModel` of every event recorded so far (folded on demand)."""
        with self._fold_lock:
            self._model.update_from(self.trace)
            return self._model

    def _scan(self, events: list) -> None:
        """Count pushes / ends / failures and collect var names of the new events.

        A loop of type checks: cheap enough to run on every redraw, so the DAG
        tab never has to fold the whole run (see :meth:`EngineModel.from_tail`).
        """
        if len(events) < self._scanned:  # cleared
            self._scanned = self._pushed = self._finished = self._failed = 0
        names = self._var_names
        for event in events[self._scanned :]:
            kind = type(event)
            if kind is OpPush:
                self._pushed += 1
            elif kind is OpEnd:
                self._finished += 1
                if event.error is not None:
                    self._failed += 1
            elif kind is VarNew or kind is VarName:
                names[event.var_id] = event.name
        self._scanned = len(events)

    def refresh(self, force: bool = True, build: bool = True) -> None:
        """Read new events and redraw the visible tab now (also while paused when ``force``).

        ``build=False`` (the background thread) draws the events built so far
        instead of building every waiting record in one go.
        """
        if self.paused and not force:
            return
        with self._lock:
            self._build_now = build
            events = self.trace.events if build else self.trace.built_events
            count = len(events)
            self._scan(events)
            tab = self.tabs.selected_index or 0
            if self._needs_full_model(tab):
                self._update_choices()
            if force or count != self._drawn_events or tab != self._drawn_tab:
                self._draw_tab(tab, events, build)
                self._drawn_events = count
                self._drawn_tab = tab
                self.redraws += 1
            self._set_status()

    def _needs_full_model(self, tab: int) -> bool:
        filtered = bool(self.name_filter.value or self.var_filter.value)
        return tab != 0 or self._step_mode or filtered

    def _folded(self, build: bool) -> EngineModel:
        """The full model; ``build=False``: of the events built so far (the background's view)."""
        with self._fold_lock:
            self._model.update_from(self.trace, build=build)
            return self._model

    def _draw_tab(self, tab: int, events: list, build: bool = True) -> None:
        if tab == 0:
            if self._needs_full_model(tab):
                model = self._folded(build)
            else:  # the live DAG: only the window's events are folded
                window = self._window_pushes(events)
                model = EngineModel.from_tail(events, window, self._var_names)
            graph = DependencyGraph(
                model,
                last=self.last.value,
                name_filter=self.name_filter.value or None,
                var_filter=self.var_filter.value or None,
                show_vars=self.show_vars.value,
                selected=self.inspect_choice.value,
                show_deletes=self.show_deletes.value,
            )
            self.dag_canvas.svg = graph.to_svg()
        elif tab == 1:
            # drawn by the browser (canvas.js TimelineDrawing): the whole data once, then
            # only what changed (timeline_feed.py), so a redraw costs what changed
            model = self._folded(build)
            kind, data = self._timeline_feed.next(model)
            canvas = self.timeline_canvas
            if kind == "full":
                with canvas.hold_sync():  # one message: the view sees both at once
                    canvas.timeline = data
                    canvas.timeline_seq = data["seq"]
            else:
                canvas.send({"timeline_delta": data})
                canvas.timeline_seq = data["seq"]
            idle = self._timeline_feed.idle(model)
            if idle is not None:  # a quiet run: why each worker sat idle
                canvas.send({"timeline_idle": idle})
        elif tab == 2:
            chart = MemoryChart(self._folded(build))
            self.memory_text.value = f"<pre>{html.escape(chart.to_text())}</pre>"
            import io

            buffer = io.BytesIO()
            chart.figure().savefig(buffer, format="png", dpi=90, bbox_inches="tight")
            self.memory_image.value = buffer.getvalue()
        elif tab == 3:
            self.stats_html.value = StatsTable(self._folded(build), idle=None).to_html()
        else:
            self._draw_inspect()

    def _on_timeline_msg(self, _widget: Any, content: dict, _buffers: Any = None) -> None:
        """A timeline view missed a delta (drawn later, reloaded): send it everything again."""
        if content.get("timeline_resync") is None:
            return
        with self._lock:
            self._timeline_feed.reset()
        if self.tabs.selected_index == 1:
            self.refresh()

    def _window_pushes(self, events: list) -> int:
        """How many recent pushes hold the DAG's ``last`` ops (folded deletes not counted)."""
        last = self.last.value
        if self.show_deletes.value:
            return last
        seen = shown = 0
        for index in range(len(events) - 1, -1, -1):
            event = events[index]
            if type(event) is OpPush:
                seen += 1
                shown += not event.name.startswith("delete:")
                if shown >= last:
                    break
        return max(seen, last)

    def _draw_inspect(self) -> None:
        op_id = self.inspect_choice.value
        if op_id is None:
            self.inspect_text.value = "<i>choose an op (or click one in the DAG or timeline)</i>"
            return
        model = self._folded(self._build_now)
        self.inspect_text.value = f"<pre>{html.escape(model.explain(op_id))}</pre>"

    def _update_choices(self, also: int | None = None) -> None:
        """Fill the Inspect choice (the latest 500 ops, and op ``also``) and the step choices."""
        model = self._folded(self._build_now)
        latest = list(model.ops.values())[-500:]
        if also is not None and all(op.op_id != also for op in latest):
            latest.insert(0, model.ops[also])
        options = [(op.label, op.op_id) for op in latest]
        if options != list(self.inspect_choice.options):
            self.inspect_choice.options = options
        if self._step_mode:
            pending = [op for op in model.ops.values() if not op.finished][-500:]
            ready = [(op.label, op.op_id) for op in pending if op.state is OpState.READY]
            _set_options(self.ready_choice, ready)
            waiting = [(op.label, op.op_id) for op in pending if op.start_time is None]
            _set_options(self.until_choice, waiting)

    def _set_status(self) -> None:
        flag = " · paused" if self.paused else ""
        flag += "" if self.trace.attached else " · detached"
        running = self._pushed - self._finished
        self.status.value = (
            f"<small>{self._pushed} ops pushed, {self._finished} finished "
            f"({self._failed} failed), {running} pending{flag}</small>"
        )

    def _on_click(self, change: Any) -> None:
        canvas = change["owner"]
        op_id = selected_op_id(canvas.selected)
        if op_id is None or op_id not in self.model.ops:
            return
        with self._lock:  # the choices are filled only on some tabs: fill them now
            self._update_choices(also=op_id)
            marks = lineage_of(self.model, op_id)
        for other in (self.dag_canvas, self.timeline_canvas):
            other.lineage = marks  # its ancestors and descendants, marked on both views
        self.inspect_choice.value = op_id
        self.tabs.selected_index = 4

    # -- step engine ----------------------------------------------------------

    def _get_engine(self) -> Any:
        if self._engine is not None:
            return self._engine
        from .. import engine

        return engine.get()

    def _is_step_engine(self) -> bool:
        return hasattr(self._get_engine(), "run_until")

    def _engine_call(self, name: str, *args: Any) -> Any:
        eng = self._get_engine()
        if not hasattr(eng, name):
            self.status.value = (
                f"<b>{name}</b> needs the step engine: mx.engine.set_engine('step') "
                "before pushing the ops"
            )
            return None
        try:
            result = getattr(eng, name)(*args)
        except Exception as exc:  # noqa: BLE001 - shown in the status line, not raised in a callback
            self.status.value = f"<span style='color:#c62828'>{html.escape(str(exc))}</span>"
            return None
        self.refresh()
        return result

    def step(self) -> Any:
        """Run the next ready op (step engine) and redraw."""
        return self._engine_call("step")

    def run(self) -> Any:
        """Run every ready op (step engine) and redraw."""
        return self._engine_call("run")

    def run_op(self, op_id: int | None) -> Any:
        """Run the ready op ``op_id`` (step engine) and redraw."""
        if op_id is None:
            return None
        return self._engine_call("run_op", op_id)

    def run_until(self, op_id: int | None) -> Any:
        """Run ready ops until ``op_id`` is complete (step engine) and redraw."""
        if op_id is None:
            return None
        return self._engine_call("run_until", op_id)

    # -- headless forms -----------------------------------------------------------

    def to_text(self) -> str:
        """The DAG, the timeline, memory and stats as text."""
        parts = [
            DependencyGraph(self.model, last=self.last.value).to_text(),
            Timeline(self.model).to_text(),
            MemoryChart(self.model).to_text(),
            StatsTable(self.model).to_text(),
        ]
        return "\n\n".join(parts)

    def to_svg(self) -> str:
        """The DAG tab as SVG."""
        return DependencyGraph(self.model, last=self.last.value).to_svg()

    def to_png(self, path: Any) -> str:
        """The timeline as a PNG at ``path`` (the DAG: ``DependencyGraph(mon.model).to_png``)."""
        return Timeline(self.model).to_png(path)

    def __str__(self) -> str:
        return self.to_text()

    def __repr__(self) -> str:
        return f"EngineMonitor({len(self.model.ops)} ops, attached={self.trace.attached})"
