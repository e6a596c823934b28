"""Chrome / Perfetto trace-event JSON: a trace as a file any trace viewer opens, and back.

Idea: ``chrome://tracing`` and https://ui.perfetto.dev draw the "Trace Event
Format".  An mxnb trace becomes one complete ('X') event per op on a lane per
worker, flow arrows ('s' / 'f') for every dependency edge, 'X' events for
waits on a lane per waiting thread, memory counters ('C') per context, and
metadata naming the lanes.  The exact mxnb events ride along under the
``"mxnb"`` key, so :func:`events_from_document` loads them back losslessly; a
file from elsewhere loads as ops rebuilt from its complete events.

Rule: the document is derived from the events alone (via
:mod:`mxnb.engine.analysis`), never from engine internals.

State kept: none.

Example::

    >>> from mxnb.engine.events import OpPush, OpStart, OpEnd
    >>> doc = chrome_document([OpPush(0.0, 1, 'add', 'cpu(0)', (), (7,), 0, ()),
    ...                        OpStart(0.0, 1, 'main', 't'), OpEnd(0.001, 1)])
    >>> [e['name'] for e in doc['traceEvents'] if e['ph'] == 'X']
    ['add']
    >>> [type(e).__name__ for e in events_from_document(doc)]
    ['OpPush', 'OpStart', 'OpEnd']
"""

from __future__ import annotations

from typing import Any

from ..base import FormatError
from .analysis import summarise
from .events import (
    EVENT_CLASSES,
    Dependency,
    DepKind,
    Event,
    OpEnd,
    OpPush,
    OpStart,
    StorageAlloc,
    StorageFree,
    VarName,
    VarNew,
    WaitBegin,
    WaitEnd,
)

__all__ = ["chrome_document", "events_from_document"]


def encode(event: Event) -> list[Any]:
    """An event as a JSON list: its kind's name, then its fields."""
    values: list[Any] = [type(event).__name__]
    for name, value in zip(event._fields, event):  # type: ignore[attr-defined, call-overload]
        if name == "waits_on":
            value = [[d.op_id, d.var_id, d.kind.name] for d in value]
        elif isinstance(value, tuple):
            value = list(value)
        values.append(value)
    return values


def decode(item: list[Any]) -> Event:
    """The event :func:`encode` wrote."""
    cls = EVENT_CLASSES.get(item[0])
    if cls is None:
        raise FormatError(f"from_chrome_trace: unknown mxnb event kind {item[0]!r}")
    values = []
    for name, value in zip(cls._fields, item[1:]):
        if name == "waits_on":
            value = tuple(Dependency(op_id, var_id, DepKind[kind]) for op_id, var_id, kind in value)
        elif isinstance(value, list):
            value = tuple(value)
        values.append(value)
    return cls(*values)


def chrome_document(events: list[Event]) -> dict[str, Any]:  # noqa: C901 -- one branch per record kind of the Chrome trace format, each a few lines
    """The Chrome / Perfetto trace-event document of ``events`` (see the module notes)."""
    events = list(events)
    t0 = min((e.time for e in events), default=0.0)

    def us(t: float) -> float:
        return round((t - t0) * 1e6, 3)

    ops = summarise(events)
    lanes: dict[str, int] = {}

    def lane(name: str) -> int:
        if name not in lanes:
            lanes[name] = len(lanes) + 1
        return lanes[name]

    names = {e.var_id: e.name for e in events if isinstance(e, (VarNew, VarName))}
    out: list[dict[str, Any]] = []
    for op in ops.values():
        if op.start is None:
            continue
        end = op.end if op.end is not None else op.start
        out.append(
            {
                "name": op.name,
                "cat": "op",
                "ph": "X",
                "ts": us(op.start),
                "dur": max(round((end - op.start) * 1e6, 3), 0.001),
                "pid": 1,
                "tid": lane(op.worker or "?"),
                "args": {
                    "op_id": op.op_id,
                    "ctx": op.ctx,
                    "reads": [names.get(v, f"var#{v}") for v in op.const_vars],
                    "writes": [names.get(v, f"var#{v}") for v in op.mutate_vars],
                    "priority": op.priority,
                    "queued_us": None if op.push is None else round((op.start - op.push) * 1e6, 3),
                    "error": op.error,
                },
            }
        )
    flow_id = 0
    for op in ops.values():
        if op.start is None:
            continue
        for dep in op.waits_on:
            source = ops.get(dep.op_id)
            if source is None or source.start is None or source.end is None:
                continue
            flow_id += 1
            label = f"{dep.kind.name} {names.get(dep.var_id, f'var#{dep.var_id}')}"
            out.append(
                {
                    "name": label,
                    "cat": "dependency",
                    "ph": "s",
                    "id": flow_id,
                    "ts": us(max(source.start, source.end - 1e-9)),
                    "pid": 1,
                    "tid": lane(source.worker or "?"),
                }
            )
            out.append(
                {
                    "name": label,
                    "cat": "dependency",
                    "ph": "f",
                    "bp": "e",
                    "id": flow_id,
                    "ts": us(op.start),
                    "pid": 1,
                    "tid": lane(op.worker or "?"),
                }
            )
    begins: dict[int, WaitBegin] = {}
    for event in events:
        if isinstance(event, WaitBegin):
            begins[event.wait_id] = event
        elif isinstance(event, WaitEnd) and event.wait_id in begins:
            begin = begins.pop(event.wait_id)
            what = (
                "wait_for_all"
                if begin.var_id is None
                else f"wait_for_var({names.get(begin.var_id, f'var#{begin.var_id}')})"
            )
            out.append(
                {
                    "name": what,
                    "cat": "wait",
                    "ph": "X",
                    "ts": us(begin.time),
                    "dur": max(round((event.time - begin.time) * 1e6, 3), 0.001),
                    "pid": 1,
                    "tid": lane(f"wait: {begin.thread}"),
                }
            )
    in_use: dict[str, int] = {}
    for event in events:
        if isinstance(event, (StorageAlloc, StorageFree)):
            delta = event.nbytes if isinstance(event, StorageAlloc) else -event.nbytes
            in_use[event.ctx] = in_use.get(event.ctx, 0) + delta
            out.append(
                {
                    "name": f"memory {event.ctx}",
                    "cat": "storage",
                    "ph": "C",
                    "ts": us(event.time),
                    "pid": 1,
                    "args": {"bytes": in_use[event.ctx]},
                }
            )
    meta: list[dict[str, Any]] = [
        {"name": "process_name", "ph": "M", "pid": 1, "args": {"name": "mxnb engine"}}
    ]
    for name, tid in lanes.items():
        meta.append(
            {"name": "thread_name", "ph": "M", "pid": 1, "tid": tid, "args": {"name": name}}
        )
        meta.append(
            {
                "name": "thread_sort_index",
                "ph": "M",
                "pid": 1,
                "tid": tid,
                "args": {"sort_index": tid},
            }
        )
    return {
        "traceEvents": meta + out,
        "displayTimeUnit": "ms",
        "mxnb": {"version": 1, "t0": t0, "events": [encode(e) for e in events]},
    }


def events_from_document(document: dict[str, Any]) -> list[Event]:
    """The events of a document :func:`chrome_document` wrote (or ops rebuilt from any other)."""
    if not isinstance(document, dict) or "traceEvents" not in document:
        raise FormatError("from_chrome_trace: not a Chrome trace (no 'traceEvents' key)")
    embedded = document.get("mxnb")
    if embedded is not None:
        return [decode(item) for item in embedded.get("events", [])]
    # A trace from elsewhere (or stripped): rebuild ops from the complete events.
    events: list[Event] = []
    for item in document["traceEvents"]:
        if item.get("ph") != "X" or item.get("cat") != "op":
            continue
        args = item.get("args", {})
        op_id = int(args.get("op_id", len(events)))
        start = item["ts"] / 1e6
        events.append(
            OpPush(start, op_id, item.get("name", ""), args.get("ctx", ""), (), (), 0, ())
        )
        events.append(OpStart(start, op_id, str(item.get("tid", "")), ""))
        events.append(OpEnd(start + item.get("dur", 0) / 1e6, op_id, args.get("error")))
    events.sort(key=lambda e: e.time)
    return events
