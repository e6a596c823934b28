"""Chrome / Perfetto trace-event JSON: a trace as a file any trace viewer opens, and back.

Idea: ``chrome://tracing`` and https://ui.perfetto.dev draw the "Trace Event
Format".  An mxnb trace becomes one complete ('X') event per op on a lane per
worker, flow arrows ('s' / 'f') for every dependency edge, 'X' events for
waits on a lane per waiting thread, memory counters ('C') per context, on a
GPU an 'X' event per op's device run on its stream's lane with a 'launch'
flow from the host's launch, and metadata naming the lanes.  The exact mxnb events ride along under the
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

import math
from typing import Any

from ..base import FormatError
from .analysis import summarise
from .events import (
    EVENT_CLASSES,
    Dependency,
    DepKind,
    Event,
    OpDevice,
    OpEnd,
    OpPush,
    OpReady,
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
    fields: tuple[Any, ...] = tuple(event)
    for name, value in zip(event._fields, fields):
        if name == "waits_on":
            values.append([[d.op_id, d.var_id, d.kind.name] for d in value])
        else:
            values.append(list(value) if isinstance(value, tuple) else value)
    return values


def _field_kinds(cls: Any) -> list[tuple[str, str]]:
    """``[(field, annotation text), ...]`` of an event class (its NamedTuple base's hints)."""
    hints: dict[str, Any] = {}
    for klass in reversed(cls.__mro__):
        hints.update(getattr(klass, "__annotations__", {}))
    return [
        (name, str(getattr(hints[name], "__forward_arg__", hints[name]))) for name in cls._fields
    ]


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: Any) -> bool:
    return _is_int(value) or (isinstance(value, float) and not math.isnan(value))


def _is_dependency(value: Any) -> bool:
    return (
        isinstance(value, list)
        and len(value) == 3
        and _is_int(value[0])
        and _is_int(value[1])
        and value[2] in DepKind.__members__
    )


#: annotation text -> (check of a JSON value, what is expected)
_KIND_CHECKS: dict[str, tuple[Any, str]] = {
    "float": (_is_number, "a number"),
    "int": (_is_int, "an int"),
    "str": (lambda v: isinstance(v, str), "a string"),
    "bool": (lambda v: isinstance(v, bool), "true or false"),
    "str | None": (lambda v: v is None or isinstance(v, str), "a string or null"),
    "int | None": (lambda v: v is None or _is_int(v), "an int or null"),
    "tuple[int, ...]": (lambda v: isinstance(v, list) and all(map(_is_int, v)), "a list of ints"),
    "tuple[Dependency, ...]": (
        lambda v: isinstance(v, list) and all(map(_is_dependency, v)),
        "a list of [op id, var id, 'RAW' | 'WAR' | 'WAW']",
    ),
}


def decode(item: Any, where: str = "an event") -> Event:
    """The event :func:`encode` wrote; FormatError (naming ``where`` and the field) if malformed."""
    if not isinstance(item, list) or not item or not isinstance(item[0], str):
        raise FormatError(f"{where} is not a list [kind, fields...]: {str(item)[:80]}")
    cls = EVENT_CLASSES.get(item[0])
    if cls is None:
        raise FormatError(f"{where} is of unknown kind {item[0]!r}")
    kinds = _field_kinds(cls)
    required = len(kinds) - len(cls._field_defaults)
    if not required <= len(item) - 1 <= len(kinds):
        raise FormatError(
            f"{where} ({item[0]}) has {len(item) - 1} fields; expected {required}"
            + ("" if required == len(kinds) else f" to {len(kinds)}")
            + f": {', '.join(name for name, _ in kinds)}"
        )
    values = []
    for (name, kind), value in zip(kinds, item[1:]):
        check, expected = _KIND_CHECKS[kind]
        if not check(value):
            raise FormatError(
                f"{where} ({item[0]}) field {name!r} must be {expected}, got {value!r}"[:300]
            )
        if name == "waits_on":
            value = tuple(Dependency(op_id, var_id, DepKind[kind]) for op_id, var_id, kind in value)
        elif isinstance(value, list):
            value = tuple(value)
        values.append(value)
    return cls(*values)


def _check_consistent(events: list[Event]) -> None:
    """Every op event follows its op's push; every wait end, its begin (views rely on it)."""
    pushed: set[int] = set()
    waits: set[int] = set()
    for position, event in enumerate(events):
        if isinstance(event, OpPush):
            pushed.add(event.op_id)
        elif isinstance(event, WaitBegin):
            waits.add(event.wait_id)
        elif isinstance(event, WaitEnd) and event.wait_id not in waits:
            raise FormatError(f"event {position} ends wait {event.wait_id}, which never began")
        elif isinstance(event, (OpReady, OpStart, OpEnd, OpDevice)) and event.op_id not in pushed:
            raise FormatError(
                f"event {position} ({type(event).__name__}) is about op {event.op_id}, "
                "which was never pushed"
            )


def chrome_document(events: list[Event]) -> dict[str, Any]:
    """The Chrome / Perfetto trace-event document of ``events`` (see the module notes)."""
    document = _Document(list(events))
    out = document.op_slices() + document.dependency_flows() + document.device_slices()
    out += document.wait_slices() + document.memory_counters()
    return {
        "traceEvents": document.metadata() + out,
        "displayTimeUnit": "ms",
        "mxnb": {"version": 1, "t0": document.t0, "events": [encode(e) for e in document.events]},
    }


class _Document:
    """One trace's Chrome records, kind by kind: lanes are numbered as they are first used."""

    def __init__(self, events: list[Event]) -> None:
        self.events = events
        self.t0 = min((e.time for e in events), default=0.0)
        self.ops = summarise(events)
        self.lanes: dict[str, int] = {}
        self.names = {e.var_id: e.name for e in events if isinstance(e, (VarNew, VarName))}

    def us(self, t: float) -> float:
        return round((t - self.t0) * 1e6, 3)

    def lane(self, name: str) -> int:
        if name not in self.lanes:
            self.lanes[name] = len(self.lanes) + 1
        return self.lanes[name]

    def var(self, var_id: int) -> str:
        return self.names.get(var_id, f"var#{var_id}")

    def op_slices(self) -> list[dict[str, Any]]:
        """One complete ('X') slice per op that started, on its worker's lane."""
        out = []
        for op in self.ops.values():
            if op.start is None:
                continue
            end = op.end if op.end is not None else op.start
            queued = None if op.push is None else round((op.start - op.push) * 1e6, 3)
            args = {
                "op_id": op.op_id,
                "ctx": op.ctx,
                "reads": [self.var(v) for v in op.const_vars],
                "writes": [self.var(v) for v in op.mutate_vars],
                "priority": op.priority,
                "queued_us": queued,
                "error": op.error,
            }
            out.append(
                {"name": op.name, "cat": "op", "ph": "X", "ts": self.us(op.start),
                 "dur": max(round((end - op.start) * 1e6, 3), 0.001), "pid": 1,
                 "tid": self.lane(op.worker or "?"), "args": args}
            )  # fmt: skip
        return out

    def dependency_flows(self) -> list[dict[str, Any]]:
        """A flow arrow ('s' at the holder's end, 'f' at the waiter's start) per dependency."""
        out: list[dict[str, Any]] = []
        for op in self.ops.values():
            if op.start is None:
                continue
            for dep in op.waits_on:
                source = self.ops.get(dep.op_id)
                if source is None or source.start is None or source.end is None:
                    continue
                flow = {"name": f"{dep.kind.name} {self.var(dep.var_id)}", "cat": "dependency",
                        "id": len(out) // 2 + 1, "pid": 1}  # fmt: skip
                out.append({**flow, "ph": "s", "ts": self.us(max(source.start, source.end - 1e-9)),
                            "tid": self.lane(source.worker or "?")})  # fmt: skip
                out.append({**flow, "ph": "f", "bp": "e", "ts": self.us(op.start),
                            "tid": self.lane(op.worker or "?")})  # fmt: skip
        return out

    def device_slices(self) -> list[dict[str, Any]]:
        """On a GPU: a slice per op's device run, on its stream's lane, with a flow from its launch."""
        out: list[dict[str, Any]] = []
        for op in self.ops.values():
            if op.device is None or op.start is None:
                continue
            stream, start, end = op.device
            out.append(
                {"name": op.name, "cat": "device", "ph": "X", "ts": self.us(start),
                 "dur": max(round((end - start) * 1e6, 3), 0.001), "pid": 1,
                 "tid": self.lane(stream), "args": {"op_id": op.op_id}}
            )  # fmt: skip
            flow = {"name": "launch", "cat": "launch", "id": f"launch-{op.op_id}", "pid": 1}
            out.append({**flow, "ph": "s", "ts": self.us(op.start), "tid": self.lane(op.worker or "?")})
            out.append({**flow, "ph": "f", "bp": "e", "ts": self.us(start), "tid": self.lane(stream)})
        return out

    def wait_slices(self) -> list[dict[str, Any]]:
        """A slice per wait, on a lane of the waiting thread."""
        out = []
        begins: dict[int, WaitBegin] = {}
        for event in self.events:
            if isinstance(event, WaitBegin):
                begins[event.wait_id] = event
            elif isinstance(event, WaitEnd) and event.wait_id in begins:
                begin = begins.pop(event.wait_id)
                what = (
                    "wait_for_all"
                    if begin.var_id is None
                    else f"wait_for_var({self.var(begin.var_id)})"
                )
                out.append(
                    {"name": what, "cat": "wait", "ph": "X", "ts": self.us(begin.time),
                     "dur": max(round((event.time - begin.time) * 1e6, 3), 0.001), "pid": 1,
                     "tid": self.lane(f"wait: {begin.thread}")}
                )  # fmt: skip
        return out

    def memory_counters(self) -> list[dict[str, Any]]:
        """A counter ('C') of the bytes in use per context, at every allocation and free."""
        out = []
        in_use: dict[str, int] = {}
        for event in self.events:
            if isinstance(event, (StorageAlloc, StorageFree)):
                delta = event.nbytes if isinstance(event, StorageAlloc) else -event.nbytes
                in_use[event.ctx] = in_use.get(event.ctx, 0) + delta
                out.append(
                    {"name": f"memory {event.ctx}", "cat": "storage", "ph": "C",
                     "ts": self.us(event.time), "pid": 1, "args": {"bytes": in_use[event.ctx]}}
                )  # fmt: skip
        return out

    def metadata(self) -> list[dict[str, Any]]:
        """The process's name, and each lane's name and order."""
        meta: list[dict[str, Any]] = [
            {"name": "process_name", "ph": "M", "pid": 1, "args": {"name": "mxnb engine"}}
        ]
        for name, tid in self.lanes.items():
            meta.append(
                {"name": "thread_name", "ph": "M", "pid": 1, "tid": tid, "args": {"name": name}}
            )
            meta.append(
                {"name": "thread_sort_index", "ph": "M", "pid": 1, "tid": tid,
                 "args": {"sort_index": tid}}
            )  # fmt: skip
        return meta


def events_from_document(document: Any, source: str = "the trace document") -> list[Event]:
    """The events of a document :func:`chrome_document` wrote (or ops rebuilt from any other).

    Anything malformed is a :class:`FormatError` that names ``source`` (the
    file) and what is wrong, never a ``KeyError`` or ``TypeError`` from inside.
    """
    try:
        events = _events(document)
        _check_consistent(events)
    except FormatError as exc:
        raise FormatError(f"from_chrome_trace: {source}: {exc}") from None
    return events


def _events(document: Any) -> list[Event]:
    if not isinstance(document, dict) or "traceEvents" not in document:
        kind = "an object" if isinstance(document, dict) else type(document).__name__
        raise FormatError(f"not a Chrome trace: {kind} without a 'traceEvents' key")
    if not isinstance(document["traceEvents"], list):
        raise FormatError("'traceEvents' must be a list of events")
    embedded = document.get("mxnb")
    if embedded is not None:
        if not isinstance(embedded, dict) or not isinstance(embedded.get("events", []), list):
            raise FormatError("'mxnb' must be an object whose 'events' is a list")
        return [
            decode(item, f"mxnb event {position}")
            for position, item in enumerate(embedded.get("events", []))
        ]
    # A trace from elsewhere (or stripped): rebuild ops from the complete events.
    events: list[Event] = []
    for position, item in enumerate(document["traceEvents"]):
        where = f"traceEvents[{position}]"
        if not isinstance(item, dict):
            raise FormatError(f"{where} is not an object")
        if item.get("ph") != "X" or item.get("cat") != "op":
            continue
        args = item.get("args", {})
        ts: Any = item.get("ts")
        dur: Any = item.get("dur", 0)
        if not isinstance(args, dict) or not _is_number(ts) or not _is_number(dur):
            raise FormatError(
                f"{where}: a complete event needs numbers 'ts' and 'dur' and 'args' an object"
            )
        op_id = args.get("op_id", len(events))
        if not _is_int(op_id):
            raise FormatError(f"{where}: args.op_id must be an int, got {op_id!r}")
        start = ts / 1e6
        error = args.get("error")
        events.append(
            OpPush(start, op_id, str(item.get("name", "")), str(args.get("ctx", "")), (), (), 0, ())
        )
        events.append(OpStart(start, op_id, str(item.get("tid", "")), ""))
        events.append(OpEnd(start + dur / 1e6, op_id, None if error is None else str(error)))
    events.sort(key=lambda e: e.time)
    return events
