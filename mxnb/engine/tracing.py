"""The event record every view and profiler reads.

Idea: the engine, the storage managers and the executor describe what they
do as small immutable events (:mod:`mxnb.engine.events`) appended to the
attached recorders.  Views (``mxnb.widgets``), the chrome-trace export
(:mod:`.chrome`) and the stats table (:mod:`.analysis`) read these events
only, never engine internals.  With no recorder attached the cost to the
engine is one flag check: ``if tracing.enabled: ...``.  (The module is
``tracing``; ``mx.engine.trace()`` is only the function that makes a recorder.)

Rule: recording must stay cheaper than the ops it records.  The engine
extends one shared log with coded records (:mod:`.records`); a
:class:`Trace` builds the events from them the first time ``tr.events`` is
read, deriving the dependency edges with the engine's own code.  Vars made
before recording began are named by a ``VarName`` event the first time a
recorded push uses them; edges to ops pushed before recording began are not known.
A name given later (``eng.name_var(var, 'fc1_weight')``: executors and Gluon
parameters name their arrays) is one more ``VarName`` event; the latest wins.

Reading a trace: ``tr.stats()`` (per-op-name table, like MXNet's aggregate
profiler), ``tr.explain(op)`` (why an op ran when it did), ``tr.ops()``
(one summary per op), ``tr.to_chrome_trace(path)`` / ``Trace.from_chrome_trace``
(Chrome / Perfetto JSON with dependency arrows, and back).  The debugger
(``docs/debugger.md``): ``tr.idle()`` / ``tr.idle_summary()`` (why each worker
was idle), ``tr.diff(other)``, ``tr.replay(workers, scale)``, ``tr.lineage(op)``
and ``mx.engine.lint(tr)``, each in a module of its own, computed from the
events after the fact.

State kept:
    enabled      True while at least one recorder is attached (the engine's flag)
    _recorders   the attached :class:`Trace` objects
    (the shared log itself is in :mod:`.records`)

Example::

    >>> import mxnb as mx
    >>> eng = mx.engine.get()
    >>> with mx.engine.trace() as tr:
    ...     v = eng.new_var(name='a')
    ...     _ = eng.push_sync(lambda rctx: None, mx.cpu(), mutate_vars=[v], name='write_a')
    ...     eng.wait_for_all()
    >>> [e.name for e in tr.events_of(OpPush)]
    ['write_a']
    >>> tr.stats()['write_a'].count
    1
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Iterator
from typing import Any, TypeVar

from ..atomic_file import write_text_atomically
from ..base import FormatError
from . import chrome
from .analysis import OpSummary
from .events import (
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
    VarDelete,
    VarName,
    VarNew,
    WaitBegin,
    WaitEnd,
)
from .idle_time import IdleSpan, idle_spans, idle_summary, traced_span
from .lineage import lineage
from .records import (
    LONGEST_RECORD,
    RAW_ALLOC,
    RAW_FREE,
    RecordReader,
    _raw,
    append_raw,
    extend_raw,
    now,
    seen_vars,
)
from .replay import Replay, replay
from .stats import StatsRow, TraceStats
from .stats import explain as _explain
from .trace_diff import TraceDiff
from .trace_model import TraceModel

__all__ = [
    "RAW_ALLOC",
    "RAW_FREE",
    "DepKind",
    "Dependency",
    "Event",
    "IdleSpan",
    "OpDevice",
    "OpEnd",
    "OpPush",
    "OpReady",
    "OpStart",
    "OpSummary",
    "Replay",
    "StatsRow",
    "StorageAlloc",
    "StorageFree",
    "Trace",
    "TraceDiff",
    "TraceStats",
    "VarDelete",
    "VarName",
    "VarNew",
    "WaitBegin",
    "WaitEnd",
    "append_raw",
    "emit",
    "extend_raw",
    "now",
    "record",
]

E = TypeVar("E", bound=Event)

enabled: bool = False
_recorders: tuple[Trace, ...] = ()
_attach_lock = threading.Lock()


def emit(event: Event) -> None:
    """Append ``event`` to every attached recorder (call only when ``enabled``)."""
    append_raw(event)  # list.append is atomic under the GIL


def record(*raw: Any) -> None:
    """Append a raw record ``(builder, *args)``; it becomes ``builder(*args)`` when read.

    For layers whose events would cost more to build than the work they
    describe: events are built lazily, off the hot path, the first time
    :attr:`Trace.events` is read.  A builder returns one event or a tuple of them.
    """
    append_raw(raw)


class Trace:
    """An append-only record of engine, storage and executor events.

    Use as ``with mx.engine.trace() as tr:`` (attached for the block) or call
    :meth:`attach` / :meth:`detach`.  Several recorders may be attached at
    once; each gets every event.  ``tr.events`` is the list of events in the
    order they were recorded; :meth:`stats`, :meth:`explain` and
    :meth:`to_chrome_trace` read it.
    """

    def __init__(self, events: list[Event] | None = None) -> None:
        self._events: list[Event] = list(events) if events else []  # built events
        self._cursor = 0  # while attached: how much of the shared log is built
        self._build_lock = threading.Lock()
        self.attached = False
        self._reader = RecordReader(self._names_of(self._events))

    @staticmethod
    def _names_of(events: list[Event]) -> set[int]:
        """The var ids ``events`` name (a var first met later is named by a VarName event)."""
        return {e.var_id for e in events if isinstance(e, (VarNew, VarName))}

    def _absorb(self, limit: int | None = None) -> int:
        """Build the records logged since the last call, at most ``limit``; return how many wait."""
        with self._build_lock:
            if not self.attached:
                return 0
            add = self._events.append
            if limit is None:
                items = _raw[self._cursor :]  # ends on a record boundary: records come whole
                self._cursor += self._reader.read(items, len(items), add)
            else:  # limit records fit in limit * LONGEST_RECORD items
                limit = max(1, limit)
                items = _raw[self._cursor : self._cursor + limit * LONGEST_RECORD]
                self._cursor += self._reader.read(items, limit, add)
            return max(0, len(_raw) - self._cursor)

    def build(self, limit: int | None = None) -> int:
        """Build at most ``limit`` records; return how many log items still wait to be built.

        For readers that must not hold the interpreter for long (the live
        monitor builds in bounded chunks and yields between them);
        :attr:`events` builds everything.
        """
        return self._absorb(limit)

    @property
    def pending(self) -> int:
        """How many log items (record fields, events) are logged but not yet built."""
        return max(0, len(_raw) - self._cursor) if self.attached else 0

    @property
    def built_events(self) -> list[Event]:
        """The events built so far, without building more (see :meth:`build`)."""
        return self._events

    @property
    def events(self) -> list[Event]:
        """The recorded events, in order (raw engine records are built here, once)."""
        self._absorb()
        return self._events

    @events.setter
    def events(self, events: list[Event]) -> None:
        self._absorb()
        self._events = list(events)
        self._reader.named = self._names_of(self._events)

    def attach(self) -> Trace:
        """Start recording (idempotent)."""
        global _recorders, enabled
        with _attach_lock:
            if not self.attached:
                if not _recorders:
                    del _raw[:]  # records that raced the last detach
                seen_vars.clear()  # the engine names every var again for the new recorder
                with self._build_lock:
                    self._cursor = len(_raw)
                    self.attached = True
                _recorders = (*_recorders, self)
                enabled = True
        return self

    def detach(self) -> Trace:
        """Stop recording (idempotent); the events recorded so far stay."""
        global _recorders, enabled
        with _attach_lock:
            if self.attached:
                self._absorb()
                with self._build_lock:
                    self.attached = False
                _recorders = tuple(r for r in _recorders if r is not self)
                enabled = bool(_recorders)
                if not _recorders:
                    del _raw[:]
                    seen_vars.clear()
        return self

    def __enter__(self) -> Trace:  # noqa: PYI034 - Trace is final in practice
        self.attach()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.detach()

    def clear(self) -> None:
        """Forget the events recorded so far."""
        self._absorb()
        self._events = []
        self._reader.named = set()  # vars seen again are named again

    def __len__(self) -> int:
        return len(self.events)

    def __iter__(self) -> Iterator[Event]:
        return iter(list(self.events))

    def events_of(self, *kinds: type[E]) -> list[E]:
        """Return the recorded events of the given classes, in order."""
        return [event for event in list(self.events) if isinstance(event, kinds)]  # type: ignore[misc]

    # -- reading the record ------------------------------------------------
    def ops(self) -> dict[int, OpSummary]:
        """Return one :class:`OpSummary` per op seen, keyed by op id, in push order."""
        return TraceModel(self.events).ops

    def var_names(self) -> dict[int, str]:
        """Return var id -> name for every var created or pushed on while recording."""
        return {e.var_id: e.name for e in self.events if isinstance(e, (VarNew, VarName))}

    def stats(self) -> TraceStats:
        """Per-op-name count / total / mean / min / max run time (MXNet's aggregate profiler)."""
        return TraceStats.from_ops(self.ops().values())

    def explain(self, op: int | str) -> str:
        """Say in plain words why op ``op`` (an id, or the name of the latest such op) ran when it did."""
        return _explain(self.ops(), self.var_names(), op)

    def to_chrome_trace(self, path: str | os.PathLike[str] | None = None) -> dict[str, Any]:
        """Write (when ``path`` is given) and return the Chrome / Perfetto trace-event JSON.

        One complete ('X') event per op on a lane per worker, flow events
        ('s' / 'f') for every dependency edge, 'X' events for waits on a lane
        per waiting thread, memory counters ('C') per context, and metadata
        naming the lanes.  The exact mxnb events ride along under the
        ``"mxnb"`` key so :meth:`from_chrome_trace` loads them back losslessly.
        """
        document = chrome.chrome_document(self.events)
        if path is not None:
            write_text_atomically(path, json.dumps(document))
        return document

    # -- the debugger: why idle, what changed, what if, where from ----------
    def _model(self) -> TraceModel:
        return TraceModel(self.events)

    def idle(self) -> list[IdleSpan]:
        """Every idle stretch of every worker lane, with why (:mod:`.idle_time`'s rule).

        A list of ``IdleSpan(lane, start, end, reason, op, var)``; ``reason`` is
        ``'nothing_pushed'``, ``'waiting_on_var'`` (``var`` held by op ``op``) or
        ``'ready_not_started'``.  The spans of a lane tile its idle time in the
        traced span (first event to last), on the ops' clock.
        """
        events = self.events
        return idle_spans(TraceModel(events), traced_span(events))

    def idle_summary(self) -> dict[str, dict[str, float]]:
        """Seconds idle per lane and reason: ``{'cpu(0)/1': {'waiting_on_var': 0.02, ...}}``."""
        return idle_summary(self.idle())

    def lineage(self, op: int) -> tuple[list[int], list[int]]:
        """(ancestors, descendants) of op ``op``, as op ids, through the vars every op declared."""
        return lineage(self._model(), op)

    def replay(self, workers: int | None = None, scale: dict[str, float] | None = None) -> Replay:
        """What if: list-schedule this run on ``workers`` lanes, ops scaled by ``scale``.

        ``scale`` maps ``fnmatch`` patterns of op names to run-time factors
        (``{'conv*': 0.5}``); ``workers=None`` keeps the recorded pools.  The
        :class:`~mxnb.engine.replay.Replay` has ``.makespan`` (seconds) and
        ``.trace``, a simulated Trace every view draws.  See :mod:`.replay`.
        """
        return replay(self._model(), workers, scale, Trace)

    def diff(self, other: Trace) -> TraceDiff:
        """Compare this run (A) with ``other`` (B): ops matched, ranked by change (:mod:`.trace_diff`)."""
        return TraceDiff.of(self, other)

    @classmethod
    def from_chrome_trace(cls, source: str | os.PathLike[str] | dict[str, Any]) -> Trace:
        """Load a trace written by :meth:`to_chrome_trace` (a path or the loaded JSON) back into events."""
        if isinstance(source, dict):
            return cls(chrome.events_from_document(source))
        name = repr(os.fspath(source))
        with open(source, "rb") as handle:  # a missing file stays a FileNotFoundError
            raw = handle.read()
        try:
            document = json.loads(raw.decode("utf-8"))
        except UnicodeDecodeError as exc:
            raise FormatError(
                f"from_chrome_trace: {name}: byte {exc.start} is not UTF-8 text (not a trace file)"
            ) from None
        except (ValueError, RecursionError) as exc:  # bad JSON, deep nesting
            reason = "nested too deeply" if isinstance(exc, RecursionError) else str(exc)
            raise FormatError(f"from_chrome_trace: {name} is not JSON: {reason}") from None
        return cls(chrome.events_from_document(document, name))
