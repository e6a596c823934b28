"""The trace as data, folded event by event: ops, vars, edges, waits and memory.

Idea: every view of the engine (DAG, timeline, memory, stats, inspect) and
every reading of a trace (``Trace.ops()``, ``stats()``, ``explain()``) asks the
same questions of the same events — which ops exist, in which state, who
waits on whom through which var, which worker ran what when, how many bytes
were in use.  :class:`TraceModel` answers them once, incrementally, from
:mod:`mxnb.engine.events`, so the views stay thin and a finished trace (or one
loaded from a chrome-trace file) reads exactly like a live one.  The records
and the stats / explanation rules are in :mod:`mxnb.engine.analysis`.

Rule: the model reads events and nothing else — never the engine's internals.

State kept:
    ops            op id -> :class:`~mxnb.engine.analysis.OpRecord`, in push order
    vars           var id -> :class:`~mxnb.engine.analysis.VarRecord` (name, writers, readers, deleted)
    edges          every :class:`~mxnb.engine.analysis.Edge` (waiter, holder, var, RAW/WAR/WAW)
    waits          :class:`~mxnb.engine.analysis.WaitRecord` per wait_for_var / wait_for_all
    memory         ctx -> :class:`~mxnb.engine.analysis.MemorySeries` (bytes in use over time)
    t0             time of the first event seen (record times relative to it)
    consumed       how many events of the source list were read so far

Example::

    >>> from mxnb.engine.events import OpPush, OpStart, OpEnd
    >>> m = TraceModel([OpPush(0.0, 1, 'add', 'cpu(0)', (), (7,), 0, ()),
    ...                 OpStart(0.1, 1, 'cpu(0)/0', 't'), OpEnd(0.3, 1)])
    >>> m.ops[1].state.name, round(m.ops[1].duration, 3)
    ('DONE', 0.2)
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import ClassVar

from .analysis import (
    Blocker,
    Edge,
    Interval,
    Lane,
    MemorySeries,
    OpRecord,
    OpState,
    VarRecord,
    WaitRecord,
)
from .events import (
    Event,
    OpDevice,
    OpEnd,
    OpPush,
    OpReady,
    OpStart,
    StorageAlloc,
    StorageFree,
    VarDelete,
    VarName,
    VarNew,
    WaitBegin,
    WaitEnd,
)
from .stats import StatsRow, TraceStats, account, explain

__all__ = ["TraceModel"]

#: Names the engine and NDArray make up (``nd28874``, ``var7``, ``v12``, ``wrapped``): no one's words.
_GENERATED_NAME = re.compile(r"(nd|var|v)\d+|wrapped")


class TraceModel:
    """Op states, dependency edges, lanes, memory and stats rebuilt from trace events.

    Parameters
    ----------
    events : iterable of Event, optional
        Events to read at once; more can be fed with :meth:`update`.
    """

    def __init__(self, events: Iterable[Event] = ()) -> None:
        self.ops: dict[int, OpRecord] = {}
        self.vars: dict[int, VarRecord] = {}
        self.edges: list[Edge] = []
        self.waits: dict[int, WaitRecord] = {}
        self.memory: dict[str, MemorySeries] = {}
        self.t0: float | None = None
        self.consumed = 0
        self._handles: dict[tuple[str, int], int] = {}
        self._pooled: dict[str, int] = {}
        self.update(list(events))

    @classmethod
    def from_trace(cls, trace: object) -> TraceModel:
        """Build a model from a ``Trace`` (or anything with an ``events`` list)."""
        model = cls()
        model.update_from(trace)
        return model

    def update_from(self, trace: object, limit: int | None = None, build: bool = True) -> int:
        """Read the events appended to ``trace.events`` since the last call; return how many.

        ``limit`` folds at most that many (a live view folds in bounded chunks);
        ``build=False`` reads only the events the trace has built so far
        (``trace.built_events``) instead of building its waiting records.
        """
        if build:
            events = trace.events  # type: ignore[attr-defined]
        else:
            events = getattr(trace, "built_events", None)
            if events is None:
                events = trace.events  # type: ignore[attr-defined]
        if len(events) < self.consumed:  # the trace was cleared: start over
            self.reset()
        end = len(events) if limit is None else min(len(events), self.consumed + limit)
        new = events[self.consumed : end]
        self.update(new)
        self.consumed += len(new)
        return len(new)

    @classmethod
    def from_tail(
        cls, events: Sequence[Event], last: int, var_names: dict[int, str] | None = None
    ) -> TraceModel:
        """A model of only the most recent ``last`` pushed ops and the events after them.

        What a live DAG window needs, at a cost set by the window, not by the
        length of the run.  Ops pushed earlier appear only as ids; ``var_names``
        (var id -> name, e.g. gathered cheaply from ``VarNew`` events) names
        vars created before the window.
        """
        start = 0
        seen = 0
        for index in range(len(events) - 1, -1, -1):
            if type(events[index]) is OpPush:
                seen += 1
                if seen >= last:
                    start = index
                    break
        model = cls(events[start:])
        for var_id, record in model.vars.items():
            if var_names and var_id in var_names and record.name == f"v{var_id}":
                record.name = var_names[var_id]
        return model

    def reset(self) -> None:
        """Forget everything (used when the source trace is cleared)."""
        self.__init__()  # type: ignore[misc]

    # -- reading events ---------------------------------------------------

    def update(self, events: Sequence[Event]) -> None:
        """Apply ``events`` (in order) to the model."""
        for event in events:
            if self.t0 is None:
                self.t0 = event.time
            handler = self._HANDLERS.get(type(event))
            if handler is not None:
                handler(self, event, event.time - self.t0)

    def _var(self, var_id: int) -> VarRecord:
        record = self.vars.get(var_id)
        if record is None:
            record = self.vars[var_id] = VarRecord(var_id, f"v{var_id}")
        return record

    def _on_var_new(self, event: VarNew, t: float) -> None:
        record = self._var(event.var_id)
        record.name = event.name or f"v{event.var_id}"

    def _on_var_delete(self, event: VarDelete, t: float) -> None:
        self._var(event.var_id).deleted = True

    def _on_push(self, event: OpPush, t: float) -> None:
        record = OpRecord(
            op_id=event.op_id,
            name=event.name,
            ctx=event.ctx,
            const_vars=tuple(event.const_vars),
            mutate_vars=tuple(event.mutate_vars),
            priority=event.priority,
            waits_on=tuple(event.waits_on),
            thread=event.thread,
            push=event.time,
            seq=len(self.ops),
            t0=self.t0,  # type: ignore[arg-type]  # set by the first event
        )
        self.ops[event.op_id] = record
        for var_id in record.const_vars:
            self._var(var_id).readers.append(record.op_id)
        for var_id in record.mutate_vars:
            self._var(var_id).writers.append(record.op_id)
        for dep in record.waits_on:
            self._var(dep.var_id)
            self.edges.append(Edge(dep.op_id, record.op_id, dep.var_id, dep.kind))

    def _on_ready(self, event: OpReady, t: float) -> None:
        record = self.ops.get(event.op_id)
        if record is not None:
            record.ready = event.time

    def _on_start(self, event: OpStart, t: float) -> None:
        record = self.ops.get(event.op_id)
        if record is not None:
            record.start = event.time
            record.worker = event.worker
            if record.ready is None:
                record.ready = event.time

    def _on_end(self, event: OpEnd, t: float) -> None:
        record = self.ops.get(event.op_id)
        if record is not None:
            record.end = event.time
            record.error = event.error
            record.skipped = event.skipped
            if record.ready is None:
                record.ready = event.time

    def _on_device(self, event: OpDevice, t: float) -> None:
        record = self.ops.get(event.op_id)
        if record is not None:
            record.device = (event.stream, event.time, event.end)

    def _on_wait_begin(self, event: WaitBegin, t: float) -> None:
        self.waits[event.wait_id] = WaitRecord(event.wait_id, event.var_id, event.thread, t)

    def _on_wait_end(self, event: WaitEnd, t: float) -> None:
        record = self.waits.get(event.wait_id)
        if record is not None:
            record.end = t

    def _series(self, ctx: str) -> MemorySeries:
        series = self.memory.get(ctx)
        if series is None:
            series = self.memory[ctx] = MemorySeries(ctx)
            self._pooled[ctx] = 0
        return series

    def _record_memory(self, series: MemorySeries, t: float, delta_use: int, delta_held: int):
        in_use = (series.in_use[-1] if series.in_use else 0) + delta_use
        held = (series.held[-1] if series.held else 0) + delta_held
        series.times.append(t)
        series.in_use.append(in_use)
        series.held.append(held)
        if in_use > series.peak:
            series.peak = in_use
            series.peak_time = t
        series.peak_held = max(series.peak_held, held)

    def _on_alloc(self, event: StorageAlloc, t: float) -> None:
        series = self._series(event.ctx)
        self._handles[(event.ctx, event.handle_id)] = event.nbytes
        if event.pool_hit:
            series.hit_times.append(t)
            # bytes the pool held before the recording began were never counted as held
            unseen = max(0, event.nbytes - self._pooled[event.ctx])
            self._pooled[event.ctx] = max(0, self._pooled[event.ctx] - event.nbytes)
            self._record_memory(series, t, event.nbytes, unseen)
        else:
            series.miss_times.append(t)
            self._record_memory(series, t, event.nbytes, event.nbytes)

    def _on_free(self, event: StorageFree, t: float) -> None:
        series = self._series(event.ctx)
        if self._handles.pop((event.ctx, event.handle_id), None) is None:
            # allocated before the recording began: never counted in use; now held by the pool
            if event.to_pool:
                self._pooled[event.ctx] += event.nbytes
                self._record_memory(series, t, 0, event.nbytes)
            return
        if event.to_pool:
            self._pooled[event.ctx] += event.nbytes
            self._record_memory(series, t, -event.nbytes, 0)
        else:
            self._record_memory(series, t, -event.nbytes, -event.nbytes)

    _HANDLERS: ClassVar[dict] = {
        VarNew: _on_var_new,
        VarName: _on_var_new,  # a var made before recording: only its name is new
        VarDelete: _on_var_delete,
        OpPush: _on_push,
        OpReady: _on_ready,
        OpStart: _on_start,
        OpEnd: _on_end,
        OpDevice: _on_device,
        WaitBegin: _on_wait_begin,
        WaitEnd: _on_wait_end,
        StorageAlloc: _on_alloc,
        StorageFree: _on_free,
    }

    # -- questions the views ask ------------------------------------------

    def var_name(self, var_id: int) -> str:
        """What to call a var in a view: its name, or for an unnamed one the op that made it.

        A name a person gave (``'fc1_weight'``, ``'data'``: executors name
        their arrays, ``new_var(name=...)``) is shown as is.  A var with only
        a generated name (``'nd28874'``, ``'var7'``, ``'v12'`` when the trace
        never named it) is called after its first writer in the trace, e.g.
        ``'dot#5 out'`` (``'split#6 out1'`` for an op's second output): the
        op a person sees in the same view.  ``vars[id].name`` keeps the raw name.
        """
        record = self.vars.get(var_id)
        if record is None:
            return f"v{var_id}"
        if not _GENERATED_NAME.fullmatch(record.name):
            return record.name
        writers = (self.ops.get(op_id) for op_id in record.writers)
        writer = next((op for op in writers if op and not op.name.startswith("delete:")), None)
        if writer is None:  # written before the trace began, or only deleted in it
            return record.name
        outputs = writer.mutate_vars
        which = f"{outputs.index(var_id)}" if len(outputs) > 1 and var_id in outputs else ""
        return f"{writer.name}#{writer.op_id} out{which}"

    def _raw_name(self, var_id: int) -> str:
        record = self.vars.get(var_id)
        return record.name if record is not None else f"v{var_id}"

    def ops_in_state(self, *states: OpState) -> list[OpRecord]:
        """Ops currently in any of ``states``, in push order."""
        return [op for op in self.ops.values() if op.state in states]

    def select(
        self,
        last: int | None = None,
        name: str | None = None,
        var: str | int | None = None,
    ) -> list[OpRecord]:
        """Ops to show: optionally only those whose name contains ``name``, that touch
        ``var`` (a var id or a substring of its name), and the most recent ``last``."""
        chosen: list[OpRecord] = []
        for op in self.ops.values():
            if name and name not in op.name:
                continue
            if var is not None and not self._touches(op, var):
                continue
            chosen.append(op)
        if last is not None and last >= 0:
            chosen = chosen[-last:] if last else []
        return chosen

    def _touches(self, op: OpRecord, var: str | int) -> bool:
        for var_id in op.const_vars + op.mutate_vars:
            if isinstance(var, int):
                if var_id == var:
                    return True
            elif var in self.var_name(var_id) or var in self._raw_name(var_id):
                return True
        return False

    def blockers(self, op_id: int) -> list[Blocker]:
        """What ``op_id`` waits on right now: its dependencies whose holder has not finished."""
        op = self.ops[op_id]
        if op.start_time is not None or op.end_time is not None:
            return []
        result = []
        for dep in op.waits_on:
            holder = self.ops.get(dep.op_id)
            if holder is not None and not holder.finished:
                result.append(Blocker(dep, holder, self.var_name(dep.var_id)))
        return result

    def explain(self, op_id: int) -> str:
        """A plain-language account of an op: the trace's (:func:`.stats.account`), then what holds it now."""
        op = self.ops.get(op_id)
        if op is None:
            return f"no op with id {op_id} in this trace"
        lines = account(self.ops, op, self.var_name)
        lines[0] = f"{op.label} on {op.ctx or '?'}: {op.state.value}"  # the views' label, and now
        now = []
        blockers = self.blockers(op_id)
        if blockers:
            now.append("  right now it " + blockers[0].describe(op))
            now.extend("  and " + b.describe(op) for b in blockers[1:])
        elif op.state is OpState.READY:
            now.append("  all its dependencies are done; it waits for a free worker (or a step)")
        lines[1:1] = now
        return "\n".join(lines)

    def lanes(self) -> list[Lane]:
        """One lane per worker with its op intervals; CPU/GPU devices first, copy workers last.

        On a GPU a worker's lane holds its ops' launches, and a lane named
        ``'<worker> device'`` when its kernels ran on the device (``OpDevice``).
        """
        lanes: dict[str, Lane] = {}

        def lane_of(name: str) -> Lane:
            lane = lanes.get(name)
            if lane is None:
                device, is_copy = _device_of(name)
                lane = lanes[name] = Lane(name, device, is_copy)
            return lane

        for op in self.ops.values():
            if op.start_time is None or op.worker is None:
                continue
            interval = Interval(op.op_id, op.name, op.start_time, op.end_time, op.state)
            lane_of(op.worker).intervals.append(interval)
            if op.device is not None:
                stream, start, end = op.device
                lane_of(stream).intervals.append(
                    Interval(op.op_id, op.name, start - op.t0, end - op.t0, op.state)
                )
        return sorted(lanes.values(), key=_lane_key)

    def span(self) -> tuple[float, float]:
        """(first, last) time seen on any op, relative to ``t0``."""
        times = [0.0]
        for op in self.ops.values():
            times.append(op.push_time)
            if op.end_time is not None:
                times.append(op.end_time)
            elif op.start_time is not None:
                times.append(op.start_time)
            if op.device is not None:
                times.append(op.device[2] - op.t0)
        for wait in self.waits.values():
            times.append(wait.end if wait.end is not None else wait.begin)
        return min(times), max(times)

    def critical_path(self) -> list[int]:
        """The chain that decided when the last op finished, first op first.

        Start at the op that ended last and step back, each time to the
        dependency that finished last (the one that made the op ready).
        """
        finished = [op for op in self.ops.values() if op.end_time is not None]
        if not finished:
            return []
        current = max(finished, key=lambda op: (op.end_time, op.seq))
        path = [current.op_id]
        seen = {current.op_id}
        while True:
            preds = [
                self.ops[d.op_id]
                for d in current.waits_on
                if d.op_id in self.ops
                and self.ops[d.op_id].end_time is not None
                and d.op_id not in seen
            ]
            if not preds:
                break
            current = max(preds, key=lambda op: (op.end_time, op.seq))
            path.append(current.op_id)
            seen.add(current.op_id)
        path.reverse()
        return path

    def stats(self) -> list[StatsRow]:
        """Per op name group: runs, total / mean / min / max seconds, failures; largest total first."""
        return list(TraceStats.from_ops(self.ops.values()).rows)

    def why(self, op: int | str) -> str:
        """Why op ``op`` (an id, or the latest op of that name) ran when it did (``Trace.explain``)."""
        names = {var_id: record.name for var_id, record in self.vars.items()}
        return explain(self.ops, names, op)

    def utilisation(self) -> dict[str, float]:
        """Share of the traced span each worker spent running ops (0..1)."""
        first, last = self.span()
        width = last - first
        result = {}
        for lane in self.lanes():
            busy = sum((iv.end if iv.end is not None else last) - iv.start for iv in lane.intervals)
            result[lane.worker] = busy / width if width > 0 else 0.0
        return result


def _device_of(worker: str) -> tuple[str, bool]:
    """'gpu(1)/2' -> ('gpu(1)', False); 'copy/0' or 'gpu(0)/copy/1' -> ('copy', True)."""
    if "copy" in worker:
        return "copy", True
    head = worker.split("/", 1)[0]
    return head, False


def _lane_key(lane: Lane) -> tuple:
    device = lane.device
    group = 0 if device.startswith("cpu") else 1 if device.startswith("gpu") else 2
    if lane.is_copy:
        group = 3
    return (group, device, len(lane.worker), lane.worker)
