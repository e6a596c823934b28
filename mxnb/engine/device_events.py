"""Device completion by events: a GPU worker launches an op's kernels and moves on.

Idea (MXNet 2.0's GPU sync objects, in place of 1.x's stream synchronise
after every op): on a GPU an op "returns" when its kernels are *launched*,
not when they have run.  A worker that waited for them after each op would
hold the host for every kernel, which is what made a tiny op cost twice
bare cupy's.  Instead the worker launches on its own stream and records an
*event* there: the op's completion on the device.  Whoever needs the result
waits for that event where it runs: another stream on the device
(``stream.wait_event``: the host does not wait), the host only when it
reads.

Rule:
    * a GPU worker runs an op's kernels inside ``with stream:``, then records
      an event on its stream;
    * the vars the op wrote keep that event as their *write event*; the vars
      it read keep it as their *read event* of that stream;
    * before an op runs on a stream, the stream waits for the events of other
      streams it conflicts with, as the engine's rule orders the ops: a read
      waits for the last write; a write waits for the last write and for
      the last read of every other stream;
    * a host reader (``wait_for_var``, ``wait_for_all``, so ``wait_to_read`` and
      ``asnumpy``) synchronises the events after the engine's wait;
    * worker streams are *blocking* streams: an op a host thread runs (a
      waiting worker helping, a copy worker) uses the legacy default stream,
      which the device orders against every blocking stream.

State kept: per var (weakly: a deleted var takes its events with it), its
write event and its latest read event per stream; per stream, once traced,
its :class:`~.device_timing.DeviceClock` (the trace's device lane).

Example, with stand-in streams (a real one is a ``cupy.cuda.Stream``)::

    >>> from mxnb.engine.var import Opr, Var
    >>> class Stream:
    ...     def __init__(self, name): self.name, self.waited = name, []
    ...     def __enter__(self): return self
    ...     def __exit__(self, *exc): return False
    ...     def record(self): return f'{self.name}-done'
    ...     def wait_event(self, event): self.waited.append(event)
    >>> events, x = DeviceEvents(), Var()
    >>> one, two = Stream('s1'), Stream('s2')
    >>> events.run(Opr(1, 'write x', (), (x,)), lambda rctx: None, one, None)
    >>> events.run(Opr(2, 'read x', (x,), ()), lambda rctx: None, two, None)
    >>> two.waited                      # the reader's stream waited, on the device
    ['s1-done']
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable
from typing import Any

from . import tracing
from .device_timing import DeviceClock
from .records import record_device
from .var import Opr, Var

__all__ = ["DeviceEvents"]


class _VarEvents:
    """The device events of one var: its last write, and its last read per stream."""

    __slots__ = ("reads", "write")

    def __init__(self) -> None:
        self.write: tuple[Any, Any] | None = None  # (stream, event)
        self.reads: dict[int, tuple[Any, Any]] = {}  # id(stream) -> (stream, event)


class DeviceEvents:
    """The events of one engine's GPU workers (see the module docstring)."""

    def __init__(self) -> None:
        self._by_var: weakref.WeakKeyDictionary[Var, _VarEvents] = weakref.WeakKeyDictionary()
        self._lock = threading.Lock()  # workers of several streams book events at once
        self._clocks: dict[int, DeviceClock] = {}  # id(stream) -> its clock, once traced

    def run(self, opr: Opr, fn: Callable[[Any], Any], stream: Any, rctx: Any) -> None:
        """Run ``opr``'s function ``fn(rctx)`` on ``stream``: wait for what it conflicts with, launch, record.

        While tracing, an event before the launch too: the trace draws the
        op's device run between the two (:mod:`.device_timing`).
        """
        with self._lock:
            waits = self._waits(opr, stream)
        for event in waits:
            stream.wait_event(event)
        start = stream.record() if tracing.enabled else None
        with stream:
            fn(rctx)
        event = stream.record()
        with self._lock:
            self._book(opr, stream, event)
        if start is not None and tracing.enabled:
            record_device(opr, f"{rctx.worker} device", self._clock(stream), start, event)

    def _clock(self, stream: Any) -> DeviceClock:
        """The stream's clock for the trace (anchored at its first traced op)."""
        clock = self._clocks.get(id(stream))
        if clock is None:
            clock = self._clocks[id(stream)] = DeviceClock(stream)
        return clock

    def _waits(self, opr: Opr, stream: Any) -> list[Any]:
        """The events of other streams that ``opr`` must wait for on ``stream``."""
        waits = []
        for var in opr.const_vars:
            booked = self._by_var.get(var)
            if booked is not None and booked.write is not None and booked.write[0] is not stream:
                waits.append(booked.write[1])
        for var in opr.mutate_vars:
            booked = self._by_var.get(var)
            if booked is None:
                continue
            if booked.write is not None and booked.write[0] is not stream:
                waits.append(booked.write[1])
            waits.extend(event for s, event in booked.reads.values() if s is not stream)
        return waits

    def _book(self, opr: Opr, stream: Any, event: Any) -> None:
        """``event`` completes ``opr`` on ``stream``: the write event of what it wrote, a read event of what it read."""
        for var in opr.mutate_vars:
            booked = self._events_of(var)
            booked.write = (stream, event)
            booked.reads.clear()  # later writers wait for this write, which came after them
        for var in opr.const_vars:
            self._events_of(var).reads[id(stream)] = (stream, event)

    def _events_of(self, var: Var) -> _VarEvents:
        booked = self._by_var.get(var)
        if booked is None:
            booked = self._by_var[var] = _VarEvents()
        return booked

    def host_wait(self, var: Var) -> None:
        """Block the host until ``var``'s last write has run on the device (a host read)."""
        with self._lock:
            booked = self._by_var.get(var)
            write = None if booked is None else booked.write
        if write is not None:
            write[1].synchronize()

    def host_wait_all(self, streams: list[Any]) -> None:
        """Block the host until every stream has run what it was given."""
        for stream in streams:
            stream.synchronize()
