"""One timeline for a cluster: every worker's and server's engine trace, merged.

Idea: each participant (worker or server process) exports its engine trace
as Chrome trace JSON (:meth:`~mxnb.engine.tracing.Trace.to_chrome_trace`, the
public format) plus a small log of its pushes, pulls and updates, and its
clock offset (wall clock minus ``perf_counter``).  Merging puts each
participant in a process of its own, shifts its times onto one wall clock,
and draws flow arrows push -> server update -> the pulls that read it.

Rules:
    * built only on the exported chrome JSON and the public event classes
      (``Trace.from_chrome_trace``), never on a Trace's private fields;
    * a push ``(rank, key, part, seq)`` links to the update that consumed it;
      an update of version ``v`` links to every pull that returned version ``v``;
    * :meth:`ClusterTrace.trace` gives a plain :class:`~mxnb.engine.tracing.Trace`
      whose lanes are named ``worker0 cpu(0)/1`` ... so ``Timeline`` draws it.

State kept:
    parts   the participants' dicts (role, index, host, pid, clock_offset, chrome, log)
    t0      the earliest wall-clock time of any event: 0 on the merged axis

Example::

    >>> part = {'role': 'worker', 'index': 0, 'host': 'h', 'pid': 1, 'clock_offset': 0.0,
    ...         'chrome': {'traceEvents': [], 'mxnb': {'t0': 0.0, 'events': []}}, 'log': []}
    >>> ClusterTrace([part]).process_names()
    ['worker 0']
"""

from __future__ import annotations

import json
import os
from typing import Any

from ..atomic_file import write_text_atomically
from ..base import FormatError
from ..engine.tracing import Event, OpEnd, OpPush, OpStart, Trace, VarName, VarNew, WaitBegin, WaitEnd

__all__ = ["ClusterTrace"]


def _label(part: dict) -> str:
    return f"{part['role']} {part['index']}"


class ClusterTrace:
    """The merged trace of a job's workers and servers (see the module docstring)."""

    def __init__(self, parts: list[dict]) -> None:
        self.parts = list(parts)
        starts = []
        for part in self.parts:
            events = Trace.from_chrome_trace(part["chrome"]).events
            starts += [e.time + part["clock_offset"] for e in events[:1]]
            starts += [entry["t0"] + part["clock_offset"] for entry in part["log"][:1]]
        self.t0 = min(starts, default=0.0)

    def process_names(self) -> list[str]:
        """``['worker 0', 'worker 1', 'server 0', ...]``, one per participant (pid order)."""
        return [_label(part) for part in self.parts]

    def _us(self, part: dict, t: float) -> float:
        return round((t + part["clock_offset"] - self.t0) * 1e6, 3)

    # -- chrome / perfetto ---------------------------------------------------------------------
    def chrome_events(self) -> list[dict[str, Any]]:
        """Every participant's chrome events in its own pid, plus the comm lane and flow arrows."""
        out: list[dict[str, Any]] = []
        slices: dict[tuple, tuple[int, float]] = {}  # record id -> (pid, ts of its middle)
        for pid, part in enumerate(self.parts, start=1):
            document = part["chrome"]
            t0 = document.get("mxnb", {}).get("t0", 0.0)
            shift = self._us(part, t0)
            for event in document["traceEvents"]:
                event = dict(event, pid=pid)
                if event.get("ph") == "M" and event.get("name") == "process_name":
                    event["args"] = {"name": _label(part)}
                elif "ts" in event:
                    event["ts"] = round(event["ts"] + shift, 3)
                if event.get("ph") in ("s", "f"):
                    event["id"] = f"{pid}.{event['id']}"
                out.append(event)
            out.append(
                {
                    "name": "thread_name",
                    "ph": "M",
                    "pid": pid,
                    "tid": 0,
                    "args": {"name": "kvstore"},
                }
            )
            for entry in part["log"]:
                ts, end = self._us(part, entry["t0"]), self._us(part, entry["t1"])
                name = f"{entry['kind']} {entry['key']}" + (
                    f"#{entry['part']}" if entry["part"] else ""
                )
                out.append(
                    {
                        "name": name,
                        "cat": "kvstore",
                        "ph": "X",
                        "ts": ts,
                        "dur": max(end - ts, 0.001),
                        "pid": pid,
                        "tid": 0,
                        "args": {k: v for k, v in entry.items() if k not in ("t0", "t1")},
                    }
                )
                slices[_record_id(entry)] = (pid, round((ts + end) / 2, 3))
        out += self._flows(slices)
        return out

    def _flows(self, slices: dict[tuple, tuple[int, float]]) -> list[dict[str, Any]]:
        arrows = []
        for source, target in self.links():
            if source not in slices or target not in slices:
                continue
            (spid, sts), (tpid, tts) = slices[source], slices[target]
            flow = f"flow.{len(arrows)}"
            name = f"{source[0]} -> {target[0]}"
            arrows.append(
                {
                    "name": name,
                    "cat": "kvstore",
                    "ph": "s",
                    "id": flow,
                    "ts": sts,
                    "pid": spid,
                    "tid": 0,
                }
            )
            arrows.append(
                {
                    "name": name,
                    "cat": "kvstore",
                    "ph": "f",
                    "bp": "e",
                    "id": flow,
                    "ts": max(tts, sts),
                    "pid": tpid,
                    "tid": 0,
                }
            )
        return arrows

    def links(self) -> list[tuple[tuple, tuple]]:
        """``(from, to)`` record ids: push -> update that applied it -> pulls that read it."""
        records = [entry for part in self.parts for entry in part["log"]]
        updates = [e for e in records if e["kind"] == "update"]
        by_push = {}
        for update in updates:
            for rank, seq in update["pushes"]:
                by_push[(update["key"], update["part"], rank, seq)] = update
        by_version = {(u["key"], u["part"], u["version"]): u for u in updates}
        links = []
        for entry in records:
            if entry["kind"] == "push":
                update = by_push.get((entry["key"], entry["part"], entry["rank"], entry["seq"]))
                if update is not None:
                    links.append((_record_id(entry), _record_id(update)))
            elif entry["kind"] == "pull" and entry.get("version"):
                update = by_version.get((entry["key"], entry["part"], entry["version"]))
                if update is not None:
                    links.append((_record_id(update), _record_id(entry)))
        return links

    def to_chrome_trace(self, path: str | os.PathLike[str] | None = None) -> dict[str, Any]:
        """The Chrome / Perfetto JSON of the whole job (written to ``path`` when given)."""
        document = {"traceEvents": self.chrome_events(), "displayTimeUnit": "ms"}
        if path is not None:
            write_text_atomically(path, json.dumps(document))
        return document

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write the participants' parts as JSON (:meth:`load` reads them back)."""
        write_text_atomically(path, json.dumps({"mxnb_cluster_trace": 1, "parts": self.parts}))

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> ClusterTrace:
        """Read a file written by :meth:`save`."""
        with open(path, encoding="utf-8") as handle:
            document = json.load(handle)
        if not isinstance(document, dict) or "mxnb_cluster_trace" not in document:
            raise FormatError(f"ClusterTrace.load: {path} is not a file of ClusterTrace.save")
        return cls(document["parts"])

    def figure(self, width: float = 10.0) -> Any:
        """The kvstore lane of every participant (pushes, updates, pulls) with the arrows of
        :meth:`links`, on a matplotlib ``Figure`` (milliseconds on the shared clock)."""
        from matplotlib.figure import Figure

        figure = Figure(figsize=(width, 1.0 + 0.6 * len(self.parts)))
        axes = figure.add_subplot(1, 1, 1)
        colours = {"push": "#1f77b4", "update": "#2ca02c", "pull": "#ff7f0e"}
        where: dict[tuple, tuple[float, int]] = {}
        for row, part in enumerate(self.parts):
            for entry in part["log"]:
                start = self._us(part, entry["t0"]) / 1e3
                stop = self._us(part, entry["t1"]) / 1e3
                axes.barh(
                    row,
                    max(stop - start, 0.05),
                    left=start,
                    height=0.5,
                    color=colours[entry["kind"]],
                    edgecolor="#333333",
                    linewidth=0.3,
                )
                where[_record_id(entry)] = ((start + stop) / 2, row)
        for source, target in self.links():
            if source in where and target in where:
                (x0, y0), (x1, y1) = where[source], where[target]
                axes.annotate(
                    "",
                    xy=(x1, y1),
                    xytext=(x0, y0),
                    arrowprops={"arrowstyle": "->", "color": "#555555", "lw": 0.6},
                )
        axes.set_yticks(range(len(self.parts)), self.process_names())
        axes.invert_yaxis()
        axes.set_xlabel("ms (one clock for every process)")
        for kind, colour in colours.items():
            axes.barh(0, 0, color=colour, label=kind)
        # beside the lanes, not on them: the last pushes and pulls end at the right edge
        axes.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=7, frameon=False)
        figure.tight_layout()
        return figure

    # -- one Trace for the widgets --------------------------------------------------------------------
    def trace(self) -> Trace:
        """A :class:`Trace` of every participant's events: ids made unique, lanes prefixed with
        the participant (``'worker1 cpu(0)/0'``), times on the shared clock."""
        merged: list[Event] = []
        for number, part in enumerate(self.parts):
            prefix = f"{part['role']}{part['index']} "
            base = (number + 1) * 10_000_000
            for event in Trace.from_chrome_trace(part["chrome"]).events:
                merged.append(_relabel(event, base, prefix, part["clock_offset"] - self.t0))
        merged.sort(key=lambda e: e.time)
        return Trace(merged)


def _record_id(entry: dict) -> tuple:
    if entry["kind"] == "update":
        return ("update", entry["key"], entry["part"], entry["version"])
    return (entry["kind"], entry["key"], entry["part"], entry["rank"], entry["seq"])


def _relabel(event: Event, base: int, prefix: str, shift: float) -> Event:
    """``event`` with its op / var / wait ids offset by ``base``, lanes prefixed, time shifted."""
    changes: dict[str, Any] = {"time": event.time + shift}
    for field in ("op_id", "var_id", "wait_id", "handle_id"):
        value = getattr(event, field, None)
        if isinstance(value, int):
            changes[field] = value + base
    if isinstance(event, OpPush):
        changes["const_vars"] = tuple(v + base for v in event.const_vars)
        changes["mutate_vars"] = tuple(v + base for v in event.mutate_vars)
        changes["waits_on"] = tuple(
            d._replace(op_id=d.op_id + base, var_id=d.var_id + base) for d in event.waits_on
        )
        changes["ctx"] = prefix + event.ctx
    elif isinstance(event, OpStart):
        changes["worker"] = prefix + event.worker
    elif isinstance(event, (VarNew, VarName)):
        changes["name"] = prefix + event.name
    elif isinstance(event, (WaitBegin, WaitEnd, OpEnd)):
        pass
    if hasattr(event, "thread") and isinstance(event.thread, str):
        changes["thread"] = prefix + event.thread
    return event._replace(**changes)  # events are NamedTuples
