"""The live timeline as a stream of deltas: what changed since the browser's last drawing.

Idea: a live Timeline view (the EngineMonitor's tab, the lab extension's
panel) used to send :meth:`Timeline.to_data` of the whole run on every
redraw, so each redraw cost the kernel time in the length of the run, and the
redraw pacing (it waits three times the last redraw) let the view fall
seconds behind the engine at a few thousand ops.  :class:`TimelineFeed` sends
the whole data once, then only *deltas*: the bars of ops that started or
ended since, the time span, the title, the lane list when a worker appeared,
and the critical path as "keep the first k ids of the last one, add these".
The browser (``static/canvas.js``, ``TimelineDrawing``) appends and redraws
only what a delta touches.

Rule: the data a browser holds after the full send and every delta since is
the :meth:`Timeline.to_data` of the model at the last delta (same lanes in the
same order, same bars by op id, same span, title and critical path);
:func:`apply_delta` is that merge, the reference the browser follows.  Each
message carries ``seq``; a delta's ``base`` is the ``seq`` it applies to, so a
view that missed one (drawn later, reloaded) asks for a resync and gets a
full send.  The cost of a delta is in the ops that changed, the still
unfinished ones and the new part of the critical path, not in the run.
Idle spans (``Trace.idle()``) are read after the fact: :meth:`TimelineFeed.idle`
gives them once the run is quiet (every pushed op finished, at most
``LIVE_IDLE_OPS`` ops), tagged with the ``seq`` they belong to; the browser
draws them until the next delta.

State kept:
    model       the :class:`EngineModel` followed (a new one: a full send)
    incremental False: full sends only (the peer the benchmark measures deltas against)
    seq         number of the last message
    pending     op id -> nothing, for every op not yet finished when last looked at

Example::

    >>> from mxnb.engine.tracing import OpPush, OpStart, OpEnd
    >>> from mxnb.widgets.model import EngineModel
    >>> model = EngineModel([OpPush(0, 1, 'add', 'cpu(0)', (), (3,), 0, ()),
    ...                      OpStart(0.001, 1, 'cpu(0)/0', 't')])
    >>> feed = TimelineFeed()
    >>> kind, data = feed.next(model)
    >>> kind, data['seq'], data['lanes'][0]['bars'][0][4]
    ('full', 1, 'running')
    >>> model.update([OpEnd(0.002, 1)])
    >>> kind, delta = feed.next(model)
    >>> kind, delta['base'], delta['bars']['cpu(0)/0'][0][4]
    ('delta', 1, 'done')
"""

from __future__ import annotations

import copy
from itertools import islice
from typing import Any

from ..engine.trace_model import _device_of, _lane_key
from .model import EngineModel, Lane, OpRecord, WaitRecord
from .timeline import Timeline, _ms

__all__ = ["TimelineFeed", "TimelineReplica", "apply_delta", "bar_key"]


class TimelineFeed:
    """Full timeline data once, then deltas, for one browser view of a live model.

    Parameters
    ----------
    incremental : bool
        False: every message is a full send, as live views drew before deltas
        (``benchmarks/extension.py`` measures both).
    """

    def __init__(self, incremental: bool = True) -> None:
        self.incremental = incremental
        self.seq = 0
        self.reset()

    def idle(self, model: EngineModel) -> dict[str, Any] | None:
        """``{"seq", "spans"}``: the idle spans (``Timeline.idle_data()``) of a quiet run; else None.

        Quiet: every pushed op finished and the run has at most
        :data:`~mxnb.widgets.stats.LIVE_IDLE_OPS` ops (attribution reads the whole run).
        """
        from .stats import LIVE_IDLE_OPS

        if not model.ops or len(model.ops) > LIVE_IDLE_OPS:
            return None
        if any(op.end is None for op in model.ops.values()):
            return None
        return {"seq": self.seq, "spans": Timeline(model).idle_data()}

    def reset(self) -> None:
        """Forget what was sent: the next :meth:`next` is a full send (a view asked to resync)."""
        self.model: EngineModel | None = None

    def next(self, model: EngineModel) -> tuple[str, dict[str, Any]]:
        """``("full", Timeline.to_data() + seq)`` or ``("delta", changes since the last)``."""
        self.seq += 1
        if not self.incremental or model is not self.model or len(model.ops) < self._ops_seen:
            return "full", self._full(model)
        return "delta", self._delta(model)

    # -- the full send: remember where everything stands --------------------

    def _full(self, model: EngineModel) -> dict[str, Any]:
        data = Timeline(model, show_idle=False).to_data()  # idle spans: after the fact, not live
        data["seq"] = self.seq
        self.model = model
        self._ops_seen = len(model.ops)
        self._waits_seen = len(model.waits)
        self.pending = {op.op_id: None for op in model.ops.values() if op.end is None}
        self._open_waits = {w.wait_id for w in model.waits.values() if w.end is None}
        self._workers = {op.worker for op in model.ops.values() if op.start is not None}
        self._workers.discard(None)
        self._workers.update(op.device[0] for op in model.ops.values() if op.device is not None)
        self._wait_threads = list(Timeline(model).wait_lanes())
        self._first, self._last = (t / 1e3 for t in data["span"])
        self._critical = list(data["critical"])
        self._on_path = {op_id: i for i, op_id in enumerate(self._critical)}
        self._latest: OpRecord | None = None
        if self._critical:
            self._latest = model.ops[self._critical[-1]]
        return data

    # -- a delta ------------------------------------------------------------

    def _delta(self, model: EngineModel) -> dict[str, Any]:
        ops = model.ops
        new_ops = list(islice(ops.values(), self._ops_seen, None))
        self._ops_seen = len(ops)
        looked = [ops[op_id] for op_id in self.pending] + new_ops
        new_waits = list(islice(model.waits.values(), self._waits_seen, None))
        self._waits_seen = len(model.waits)
        waits = [model.waits[w] for w in self._open_waits] + new_waits
        for op in looked:
            self._stretch(op.push_time, op.end_time, op.start_time)
            if op.device is not None:
                self._stretch(op.device[2] - op.t0)
        for wait in waits:
            self._stretch(wait.begin, wait.end)
        last_ms = _ms(self._last)
        bars: dict[str, list[list[Any]]] = {}
        lanes_changed = False
        for op in looked:
            if op.end is None:
                self.pending[op.op_id] = None
            else:
                self.pending.pop(op.op_id, None)
                if self._latest is None or (op.end_time, op.seq) > (
                    self._latest.end_time,
                    self._latest.seq,
                ):
                    self._latest = op
            if op.start is None or op.worker is None:
                continue
            if op.worker not in self._workers:
                self._workers.add(op.worker)
                lanes_changed = True
            bars.setdefault(_worker_lane(op.worker), []).append(_op_bar(op, last_ms))
            if op.device is not None:  # on a GPU: its kernels' run, on the stream's lane
                if op.device[0] not in self._workers:
                    self._workers.add(op.device[0])
                    lanes_changed = True
                bars.setdefault(op.device[0], []).append(_device_bar(op))
        for wait in waits:
            if wait.end is None:
                self._open_waits.add(wait.wait_id)
            else:
                self._open_waits.discard(wait.wait_id)
            thread = wait.thread or "main"
            if thread not in self._wait_threads:
                self._wait_threads.append(thread)
                lanes_changed = True
            bars.setdefault(f"wait: {thread}", []).append(_wait_bar(model, wait, last_ms))
        delta: dict[str, Any] = {
            "seq": self.seq,
            "base": self.seq - 1,
            "title": f"engine timeline: {len(ops)} ops, {len(self._workers)} workers",
            "span": [_ms(self._first), last_ms],
            "bars": bars,
            "critical": self._critical_delta(model),
        }
        if lanes_changed:
            delta["lanes"] = self._lane_list()
        return delta

    def _stretch(self, *times: float | None) -> None:
        for t in times:
            if t is not None:
                self._first = min(self._first, t)
                self._last = max(self._last, t)

    def _lane_list(self) -> list[dict[str, str]]:
        """Every lane, in :meth:`Timeline.to_data`'s order: waits first, then workers."""
        lanes = [{"name": f"wait: {t}", "kind": "wait", "device": ""} for t in self._wait_threads]
        workers = sorted((Lane(w, *_device_of(w)) for w in self._workers), key=_lane_key)
        for lane in workers:
            name = f"{lane.worker} [copy]" if lane.is_copy else lane.worker
            lanes.append({"name": name, "kind": "worker", "device": lane.device})
        return lanes

    def _critical_delta(self, model: EngineModel) -> list[Any]:
        """``[keep, added]``: the new path is the first ``keep`` ids of the last one + ``added``.

        The walk back from the op that ended last (as :meth:`EngineModel.critical_path`
        walks) stops at the first op on the previous path: from there back the
        path is the same, since a finished op's dependencies finished before it.
        """
        if self._latest is None:
            return [len(self._critical), []]
        index = self._on_path
        current = self._latest
        tail: list[int] = []
        keep = 0
        while True:
            if current.op_id in index:
                keep = index[current.op_id] + 1
                break
            tail.append(current.op_id)
            preds = [
                model.ops[d.op_id]
                for d in current.waits_on
                if d.op_id in model.ops and model.ops[d.op_id].end is not None
            ]
            if not preds:
                break
            current = max(preds, key=lambda op: (op.end_time, op.seq))
        tail.reverse()
        for op_id in self._critical[keep:]:
            del index[op_id]
        del self._critical[keep:]
        for op_id in tail:
            index[op_id] = len(self._critical)
            self._critical.append(op_id)
        return [keep, tail]


def _worker_lane(worker: str) -> str:
    return f"{worker} [copy]" if _device_of(worker)[1] else worker


def _op_bar(op: OpRecord, last_ms: float) -> list[Any]:
    end = _ms(op.end_time) if op.end is not None else last_ms
    return [op.op_id, _ms(op.start_time), end, op.name, op.state.value, op.error]


def _device_bar(op: OpRecord) -> list[Any]:
    stream, start, end = op.device  # type: ignore[misc]  # the caller checked it is set
    return [op.op_id, _ms(start - op.t0), _ms(end - op.t0), op.name, op.state.value, op.error]


def _wait_bar(model: EngineModel, wait: WaitRecord, last_ms: float) -> list[Any]:
    what = "all" if wait.var_id is None else model.var_name(wait.var_id)
    end = _ms(wait.end) if wait.end is not None else last_ms
    return [None, _ms(wait.begin), end, f"wait {what}", "wait", None]


def bar_key(bar: list[Any]) -> Any:
    """A bar's identity on its lane: the op id, or a wait's start time."""
    return bar[0] if bar[0] is not None else ("wait", bar[1])


def apply_delta(data: dict[str, Any], delta: dict[str, Any]) -> dict[str, Any]:
    """Merge ``delta`` into the timeline ``data`` (in place, returned), as the browser does.

    Raises ``ValueError`` when ``delta`` does not follow ``data`` (``base != seq``):
    the view must ask for a full send.
    """
    if delta["base"] != data.get("seq"):
        raise ValueError(
            f"timeline delta {delta['seq']} follows {delta['base']}, not {data.get('seq')}"
        )
    lanes = {lane["name"]: lane for lane in data["lanes"]}
    if "lanes" in delta:
        data["lanes"] = [lanes.get(meta["name"]) or {**meta, "bars": []} for meta in delta["lanes"]]
        lanes = {lane["name"]: lane for lane in data["lanes"]}
    for name, bars in delta["bars"].items():
        lane = lanes[name]
        where = {bar_key(bar): i for i, bar in enumerate(lane["bars"])}
        for bar in bars:
            key = bar_key(bar)
            if key in where:
                lane["bars"][where[key]] = bar
            else:
                where[key] = len(lane["bars"])
                lane["bars"].append(bar)
    keep, added = delta["critical"]
    data["critical"] = data["critical"][:keep] + added
    data.update(seq=delta["seq"], title=delta["title"], span=delta["span"])
    return data


class TimelineReplica:
    """The timeline data a browser view holds, rebuilt from what a live view sent.

    What tests and benchmarks read instead of a browser: :meth:`full` with a
    full send, :meth:`delta` with each delta (:func:`apply_delta`).
    """

    def __init__(self) -> None:
        self.data: dict[str, Any] = {"lanes": [], "critical": []}

    def full(self, data: dict[str, Any]) -> None:
        """A full send: the view starts over from ``data`` (copied)."""
        self.data = copy.deepcopy(data)

    def delta(self, delta: dict[str, Any]) -> None:
        """A delta: merged into the data held (``ValueError`` when one was missed)."""
        apply_delta(self.data, delta)

    @classmethod
    def of_canvas(cls, canvas: Any, on_change: Any = None) -> TimelineReplica:
        """A replica following an :class:`SvgCanvas` (its ``timeline`` trait and deltas).

        ``on_change(data)`` is called after each full send or delta.
        """
        replica = cls()
        if canvas.timeline:
            replica.full(canvas.timeline)
        send = canvas.send

        def changed() -> None:
            if on_change is not None:
                on_change(replica.data)

        def full(change: dict) -> None:
            replica.full(change["new"])
            changed()

        def sent(content: dict, buffers: Any = None) -> None:
            if "timeline_delta" in content:
                replica.delta(content["timeline_delta"])
                changed()
            send(content, buffers)

        canvas.observe(full, names="timeline")
        canvas.send = sent
        return replica

    def receive(self, part: dict[str, Any]) -> None:
        """A lab panel's ``timeline`` part: ``{"data": full}`` or ``{"delta": delta}``."""
        if "data" in part:
            self.full(part["data"])
        else:
            self.delta(part["delta"])
