"""Debug mode's notes: which ops an op waited on, and ops that waited too long.

Idea: with ``mx.engine.debug()`` (or ``set_debug(True)``) every push notes
the chain of ops it must wait for, and every op that waited longer than the
threshold between push and start is reported (:class:`SlowWait`, a log
warning), with that chain: "op 'update' waited 2.1 s on 'read' via var 'w'
(write-after-read), which waited on ...".  These notes cost a little per
push, so they are kept only in debug mode; the dependency rule (:mod:`.var`)
never reads them.

Rule: an op waits on the newest incomplete write of each var it uses
(read-after-write, write-after-write) and, when it writes, on the reads pushed
since that write that are not done (write-after-read).  :func:`note_push`
states it once; the trace derives its dependency edges from it too.

State kept (per var and op, in debug mode only):
    Var.last_write   newest incomplete write
    Var.readers      reads pushed since ``last_write`` (finished ones dropped now and then)
    Opr.push_time    when it was pushed
    Opr.waited_on    its chain, as text, nearest first

Example::

    >>> import mxnb as mx
    >>> with mx.engine.debug(slow_wait=0.0):
    ...     eng = mx.engine.create('naive')
    ...     v = eng.new_var(name='v')
    ...     _ = eng.push_sync(lambda rctx: None, mx.cpu(), mutate_vars=[v], name='w')
    >>> mx.engine.is_debug()
    False
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from time import perf_counter as _now

from .events import DepKind
from .var import DONE, Opr, Var

__all__ = ["Debugging", "SlowWait", "note_done", "note_push"]

logger = logging.getLogger("mxnb.engine")

_READERS_PRUNE = (
    32  # drop finished readers from Var.readers when the list reaches a power of two past this
)


@dataclass(frozen=True)
class SlowWait:
    """Debug-mode record: an op waited ``waited`` seconds between push and start."""

    op_id: int
    name: str
    waited: float
    chain: tuple[str, ...]  # the ops it waited on, nearest first ('name#id via var')


class Debugging:
    """The debug-mode half of :class:`~mxnb.engine.base.Engine` (a mixin it inherits)."""

    slow_wait_threshold: float | None
    slow_waits: list[SlowWait]

    def _note_push(self, opr: Opr) -> None:
        """Note ``opr``'s chain and its place among its vars' readers and writers (under the lock)."""
        opr.waited_on = _chain(note_push(opr))
        opr.push_time = _now()

    @staticmethod
    def _note_done(opr: Opr) -> None:
        """``opr`` completed: it is no longer the newest incomplete write of its vars."""
        note_done(opr)

    def _note_slow_wait(self, opr: Opr) -> None:
        """Report ``opr`` if it waited longer than the threshold between push and start."""
        threshold = self.slow_wait_threshold
        if threshold is None or not opr.push_time:
            return
        waited = _now() - opr.push_time
        if waited > threshold:
            record = SlowWait(opr.id, opr.name, waited, opr.waited_on)
            self.slow_waits.append(record)
            logger.warning(
                "op '%s' (id %d) waited %.3f s between push and start; it waited on: %s",
                opr.name,
                opr.id,
                waited,
                "; ".join(opr.waited_on) or "(no recorded dependency: workers were busy)",
            )


def _note_reader(var: Var, opr: Opr) -> None:
    """Add ``opr`` to ``var``'s readers, dropping finished ones as the list doubles."""
    readers = var.readers
    if not readers:
        var.readers = [opr]
        return
    readers.append(opr)  # type: ignore[union-attr]
    count = len(readers)
    if count >= _READERS_PRUNE and count & (count - 1) == 0:  # amortised O(1)
        var.readers = [reader for reader in readers if reader.state != DONE]


def note_push(opr: Opr) -> list[tuple[Opr, Var, DepKind]]:
    """Return the incomplete ops ``opr`` waits on, then note it among its vars' readers / writers.

    Each link is (earlier op, var, why).  The trace derives its dependency
    edges from this same function, run over the events it records.
    """
    links = []
    for var in opr.const_vars:
        if var.last_write is not None:
            links.append((var.last_write, var, DepKind.RAW))
    for var in opr.mutate_vars:
        if var.last_write is not None:
            links.append((var.last_write, var, DepKind.WAW))
        links.extend((reader, var, DepKind.WAR) for reader in var.readers if reader.state != DONE)
    for var in opr.const_vars:
        _note_reader(var, opr)
    for var in opr.mutate_vars:
        var.last_write = opr
        var.readers = ()
    return links


def note_done(opr: Opr) -> None:
    """``opr`` completed: it is no longer the newest incomplete write of its vars."""
    opr.state = DONE
    for var in opr.mutate_vars:
        if var.last_write is opr:
            var.last_write = None


def _chain(links: list[tuple[Opr, Var, DepKind]]) -> tuple[str, ...]:
    """The ops of ``links``, each followed by what it waited on itself, as text."""
    chain: list[str] = []
    for other, var, kind in links:
        chain.append(f"'{other.name}' (id {other.id}) via var {var.name!r} ({kind.value})")
        chain.extend(f"  {link}" for link in other.waited_on[:8])
    return tuple(chain[:16])
