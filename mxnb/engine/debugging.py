"""Debug mode's notes: which ops an op waited on, and ops that waited too long.

Idea: with ``mx.engine.debug()`` (or ``set_debug(True)``) every push notes
the chain of ops it must wait for, and every op that waited longer than the
threshold between push and start is reported (:class:`SlowWait`, a log
warning), with that chain: "op 'update' waited 2.1 s on 'read' via var 'w'
(write-after-read), which waited on ...".  These notes cost a little per
push, so they are kept only in debug mode; the dependency rule (:mod:`.var`)
never reads them.

Rule: the chain is made of the edges of :mod:`.edges` (read-after-write,
write-after-write, write-after-read), the rule the trace's dependency edges
come from too.

State kept (per op, in debug mode only):
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

from .edges import note_done, note_push
from .events import DepKind
from .var import Opr, Var

__all__ = ["Debugging", "SlowWait"]

logger = logging.getLogger("mxnb.engine")


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


def _chain(links: list[tuple[Opr, Var, DepKind]]) -> tuple[str, ...]:
    """The ops of ``links``, each followed by what it waited on itself, as text."""
    chain: list[str] = []
    for other, var, kind in links:
        chain.append(f"'{other.name}' (id {other.id}) via var {var.name!r} ({kind.value})")
        chain.extend(f"  {link}" for link in other.waited_on[:8])
    return tuple(chain[:16])
