"""The kernel side of the JupyterLab panels: a comm target that streams the engine's views.

Idea (dask-labextension's panes, for the engine): the lab extension's DAG,
Timeline, Memory, Stats and Inspect panels dock beside the notebook and show
the engine of the ACTIVE notebook's kernel, with no widget in any cell.  They
talk to the kernel over a Jupyter comm to the target :data:`TARGET`, which
``import mxnb`` registers when it runs inside a kernel.

Rule: nobody pays while no panel is open.  Registering the target costs one
dictionary entry; a :class:`EngineChannel` is made when a panel opens a comm,
and its :class:`~mxnb.engine.tracing.Trace` is attached only while the front end
reports at least one open view (``{"views": [...]}``).  Redraws are paced as
the :class:`~mxnb.widgets.EngineMonitor` paces them: a background thread wakes
at most every ``interval`` (0.2 s), builds the trace's records in bounded
chunks resting four times each chunk's time, redraws only when events arrived,
only the open views, and then sleeps at least three times the redraw's time.

Messages, front end -> kernel: ``{"views": ["dag", ...], "inspect": op_id,
"last": 40, "show_deletes": false, "timeline_resync": seq, "clear": true,
"since_cell": bool, "resume": true}`` (on open and later, any subset).
``clear`` starts a new recording (every panel's time range starts again);
``since_cell`` does so each time a cell starts running (IPython's
``pre_run_cell``), so the range is the last cell's; ``resume`` (on open) takes
over the recording of the channel closed last in this kernel, so panels that
followed another notebook and came back show what they showed.  Kernel -> front end: ``{"status": "...", "pushed": n,
"dag": {"svg", "selected", "nodes"}, "timeline": {"data"} or {"delta"} (and
{"idle"} once the run is quiet),
"memory": {"svg"}, "stats": {"html"}, "inspect": {"text", "op_id"}, "lineage":
{"op", "ancestors", "descendants"}}`` with the open views only (``lineage``:
the clicked op's, for the DAG and Timeline panels to mark; sent once per click,
with the ops pushed by then).  The timeline is sent whole once (when its panel opens
or asks to resync), then as deltas (:mod:`mxnb.widgets.timeline_feed`).

State kept:
    trace      the recorder (attached while a view is open; a new one on clear)
    model      the :class:`EngineModel` folded from it
    views      the open views
    since_cell whether each cell's start clears the recording
    feed       the Timeline panel's :class:`~mxnb.widgets.timeline_feed.TimelineFeed`
    redraws    how many updates were sent (tests and the benchmark read it)

Example::

    >>> from mxnb.widgets.lab import TARGET, register_comm_target
    >>> TARGET
    'mxnb.engine'
    >>> register_comm_target()  # outside a kernel: nothing to register
    False
"""

from __future__ import annotations

import sys
import threading
import time
from typing import Any

__all__ = ["TARGET", "VIEWS", "EngineChannel", "register_comm_target"]

TARGET = "mxnb.engine"
VIEWS = ("dag", "timeline", "memory", "stats", "inspect")


def register_comm_target() -> bool:
    """Register :data:`TARGET` with the running IPython kernel; False outside a kernel."""
    ipython_module = sys.modules.get("IPython")
    shell = ipython_module.get_ipython() if ipython_module is not None else None
    kernel = getattr(shell, "kernel", None)
    if kernel is None:
        return False
    manager = getattr(kernel, "comm_manager", None)
    if manager is None:
        import comm

        manager = comm.get_comm_manager()
    manager.register_target(TARGET, _on_open)
    return True


def _on_open(comm: Any, message: dict) -> None:
    EngineChannel(comm, message.get("content", {}).get("data") or {})


# the recording (trace, model) of the channel closed last: a panel coming back resumes it
_closed: dict[str, Any] = {}


def _ipython_events() -> Any:
    """The running IPython shell's event manager (``pre_run_cell``), or None outside one."""
    ipython_module = sys.modules.get("IPython")
    shell = ipython_module.get_ipython() if ipython_module is not None else None
    return getattr(shell, "events", None)


class EngineChannel:
    """One panel connection: records while views are open and sends their updates.

    Parameters
    ----------
    comm : Comm
        The comm the front end opened (``send``, ``on_msg``, ``on_close``).
    data : dict
        The open message's data (``views``, ``inspect``, ``last``, ``show_deletes``).
    background : bool
        Send updates from a background thread (default); False: only :meth:`update`.
    interval : float
        Seconds between checks for new events (at least 0.2).
    """

    CHUNK = 2000  # engine records built per step of the catch-up

    def __init__(
        self, comm: Any, data: dict, background: bool = True, interval: float = 0.2
    ) -> None:
        from ..engine.tracing import Trace
        from .model import EngineModel
        from .timeline_feed import TimelineFeed

        self.comm = comm
        self.trace = Trace()
        self.model = EngineModel()
        self.views: set[str] = set()
        self.inspect: int | None = None
        self.last = 40
        self.show_deletes = False
        self.interval = max(0.2, float(interval))
        self.redraws = 0
        self.feed = TimelineFeed()
        self.since_cell = False
        if data.get("resume") and _closed:
            self.trace, self.model = _closed.pop("trace"), _closed.pop("model")
        self._lineage_sent: int | None = None  # the op whose lineage the panels have
        self._drawn = -1
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._poke = threading.Event()  # a message arrived: update now
        comm.on_msg(self._on_msg)
        comm.on_close(lambda _message: self.close())
        self.configure(data)
        self._thread: threading.Thread | None = None
        if background:
            self._thread = threading.Thread(target=self._loop, name="mxnb-lab-panels", daemon=True)
            self._thread.start()

    # -- messages -------------------------------------------------------------

    def _on_msg(self, message: dict) -> None:
        self.configure(message.get("content", {}).get("data") or {})

    def configure(self, data: dict) -> None:
        """Apply a front end message: open views, the op to inspect, DAG options."""
        if "views" in data:
            self.views = {view for view in data["views"] if view in VIEWS}
            if self.views:
                self.trace.attach()
            else:
                self.trace.detach()  # nobody looks: the engine's cost drops to a flag check
        if "views" in data or data.get("timeline_resync") is not None:
            with self._lock:
                self.feed.reset()  # a panel (re)opened or missed a delta: send it everything
                self._lineage_sent = None
        if data.get("clear"):
            self.clear()
        if "since_cell" in data:
            self._follow_cells(bool(data["since_cell"]))
        if data.get("inspect") is not None:
            self.inspect = int(data["inspect"])
        self.last = int(data.get("last", self.last))
        self.show_deletes = bool(data.get("show_deletes", self.show_deletes))
        self._drawn = -1  # redraw with the new settings, at once
        self._poke.set()

    def clear(self, *_args: Any) -> None:
        """Start a new recording: every panel's ops, time range and stats begin now."""
        from ..engine.tracing import Trace
        from .model import EngineModel

        with self._lock:
            old, self.trace, self.model = self.trace, Trace(), EngineModel()
            self.feed.reset()
            self.inspect = self._lineage_sent = None
            self._drawn = -1
        old.detach()
        if self.views:
            self.trace.attach()
        self._poke.set()

    def _follow_cells(self, on: bool) -> None:
        """Clear when each cell starts running (``on``), or stop doing so."""
        events = _ipython_events()
        if events is not None and on != self.since_cell:
            if on:
                events.register("pre_run_cell", self.clear)
            else:
                events.unregister("pre_run_cell", self.clear)
        self.since_cell = on

    def close(self) -> None:
        """Stop recording and the update thread (the front end closed the comm); the
        recording is kept for a channel that resumes it."""
        self._stop.set()
        self._poke.set()
        self._follow_cells(False)
        self.trace.detach()
        _closed.update(trace=self.trace, model=self.model)

    # -- updates --------------------------------------------------------------

    def _loop(self) -> None:
        pause = self.interval
        while not self._stop.is_set():
            self._poke.wait(pause)
            self._poke.clear()
            if self._stop.is_set():
                return
            pause = self.interval
            if not self.views or not self._catch_up():
                continue
            began = time.perf_counter()
            try:
                sent = self.update(build=False)
            except Exception as exc:  # noqa: BLE001 - shown in the panel, never kills the thread
                self._send({"status": f"redraw failed: {exc!r}"})
                continue
            if sent:  # back off when drawing is slow: at most a quarter of the time
                pause = max(self.interval, 3 * (time.perf_counter() - began))

    def _catch_up(self) -> bool:
        """Build waiting records in bounded chunks, resting 4x each chunk's time; False if closed."""
        deadline = time.perf_counter() + self.interval
        while True:
            began = time.perf_counter()
            left = self.trace.build(self.CHUNK)
            spent = time.perf_counter() - began
            if not left or began > deadline:
                return True
            if self._stop.wait(max(0.001, 4 * spent)):
                return False

    def update(self, build: bool = True) -> bool:
        """Fold new events and send the open views when anything changed; True when sent."""
        with self._lock:
            self.model.update_from(self.trace, build=build)
            count = self.model.consumed
            if count == self._drawn or not self.views:
                return False
            message = self.payload()
            self._drawn = count
            self.redraws += 1
        self._send(message)
        return True

    def payload(self) -> dict[str, Any]:
        """The message of the open views, drawn from :attr:`model`."""
        from .dag import DependencyGraph
        from .memory import MemoryChart
        from .stats import StatsTable

        model = self.model
        ops = model.ops
        finished = sum(op.finished for op in ops.values())
        message: dict[str, Any] = {
            "status": f"{len(ops)} ops pushed, {finished} finished, {len(ops) - finished} pending",
            "pushed": len(ops),
        }
        if "dag" in self.views:
            graph = DependencyGraph(
                model, last=self.last, show_deletes=self.show_deletes, selected=self.inspect
            )
            message["dag"] = {
                "svg": graph.to_svg(),
                "selected": "" if self.inspect is None else f"op{self.inspect}",
                "nodes": len(graph.visible_ops()),
            }
        if "timeline" in self.views:
            kind, data = self.feed.next(model)
            message["timeline"] = {"data" if kind == "full" else "delta": data}
            idle = self.feed.idle(model)
            if idle is not None:  # a quiet run: why each worker sat idle
                message["timeline"]["idle"] = idle
        if "memory" in self.views:
            message["memory"] = {"svg": MemoryChart(model).to_svg()}
        if "stats" in self.views:
            message["stats"] = {"html": StatsTable(model, idle=None).to_html()}
        if (
            self.inspect is not None
            and self.inspect != self._lineage_sent
            and self.inspect in ops
            and self.views & {"dag", "timeline"}
        ):  # once per click: the panels keep it (a whole run's ids are too many to resend)
            from .canvas import lineage_of

            message["lineage"] = lineage_of(model, self.inspect)
            self._lineage_sent = self.inspect
        if "inspect" in self.views:
            if self.inspect is not None and self.inspect in ops:
                text = model.explain(self.inspect)
            else:
                text = "click an op in the DAG or Timeline panel"
            message["inspect"] = {"text": text, "op_id": self.inspect}
        return message

    def _send(self, data: dict) -> None:
        try:
            self.comm.send(data)
        except Exception:  # noqa: BLE001 - the front end went away: stop recording
            self.close()
