"""Device time on the trace's clock: when a GPU op's kernels really ran.

Idea: on a GPU a worker's OpStart / OpEnd are the *launch* of an op's
kernels, not their run (:mod:`.device_events`).  To draw both, the worker
records one CUDA event before the launch and one after it (the completion
event it records anyway), and the trace keeps the pair.  The device's own
clock tells how far apart two events of one device are
(``cupy.cuda.get_elapsed_time``), not when either happened on the host's
``time.perf_counter``.  So each stream gets an *anchor*: an event recorded
and waited for once, at a host time read just after it completed.  Every
later event's time is then ``anchor host time + elapsed(anchor, event)``,
a time on the trace's clock (the anchor's wait makes it late by at most the
synchronise's return, microseconds).

Rule:
    * only while tracing: a worker with nothing recorded pays no event;
    * events are read as times when the trace is read (:class:`DeviceClock`
      waits for each; by then the device has usually run them);
    * the lane of an op's device run is its worker's name + ``' device'``,
      beside the worker's own (host) lane.

A virtual GPU has no device: its kernels run on the host as they are
launched.  :func:`host_streams` gives its workers :class:`HostStream` objects
anyway (``ThreadedEnginePerDevice.virtual_streams = host_streams``), so that
the event protocol and the device lane can be shown and tested without a
GPU; there the device run is the launch exactly (the anchor's own host time is used: read
after it, the host time could be late by a preemption of the reading thread).

State kept: per stream, its :class:`DeviceClock` (the anchor event and its host time).

Example, with a stand-in event type whose elapsed time is the host's
(virtual GPUs, tests)::

    >>> class Event:
    ...     def __init__(self, at): self.host_time = at
    ...     def synchronize(self): pass
    >>> class Stream:
    ...     def record(self): return Event(2.0)
    >>> clock = DeviceClock(Stream(), now=lambda: 2.5)   # anchor ran by 2.5 on the host
    >>> clock.seconds(Event(2.25))                       # 0.25 s after the anchor
    2.75
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .records import now as _trace_now

__all__ = ["DeviceClock", "HostEvent", "HostStream", "elapsed_ms", "host_streams"]


def elapsed_ms(first: Any, second: Any) -> float:
    """Milliseconds from event ``first`` to event ``second`` (both completed) on one device.

    CUDA events through cupy; stand-in events (``host_time`` in seconds) by their
    difference.
    """
    if hasattr(second, "host_time"):
        return (second.host_time - first.host_time) * 1e3
    import cupy  # a real GPU's events: cupy is there

    return float(cupy.cuda.get_elapsed_time(first, second))


class DeviceClock:
    """Reads a stream's events as times on the trace's clock (see the module docstring)."""

    __slots__ = ("anchor", "host")

    def __init__(self, stream: Any, now: Callable[[], float] = _trace_now) -> None:
        self.anchor = stream.record()
        self.anchor.synchronize()  # once per stream: it has run by the host time read next
        # a virtual GPU's event knows its host time: its device runs are then the launches exactly
        self.host = self.anchor.host_time if isinstance(self.anchor, HostEvent) else now()

    def seconds(self, event: Any) -> float:
        """``event``'s time on the trace's clock (waits for it to complete)."""
        event.synchronize()
        return self.host + elapsed_ms(self.anchor, event) / 1e3


class HostEvent:
    """A virtual GPU's event: the host time it was recorded at (its kernels ran at launch)."""

    __slots__ = ("host_time",)

    def __init__(self) -> None:
        self.host_time = _trace_now()

    def synchronize(self) -> None:
        """Nothing to wait for: what came before it has run."""


class HostStream:
    """A virtual GPU worker's stream: kernels run at launch, events are host times."""

    def __enter__(self) -> HostStream:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def record(self) -> HostEvent:
        """An event after everything launched so far (all of it has run)."""
        return HostEvent()

    def wait_event(self, event: HostEvent) -> None:
        """Nothing to wait for on the device: the event's work has run."""

    def synchronize(self) -> None:
        """Nothing to wait for."""


def host_streams(device_id: int, count: int) -> list[HostStream]:
    """Streams for the ``count`` workers of virtual GPU ``device_id``: ``virtual_streams``'s form."""
    return [HostStream() for _ in range(count)]
