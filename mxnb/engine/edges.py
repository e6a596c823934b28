"""The dependency edges: which incomplete ops a pushed op waits on, and why (RAW, WAR, WAW).

Idea (MXNet's architecture notes, "Dependency Engine"): the rule of :mod:`.var`
grants vars in push order; an edge names the earlier op an op waited on, the
var between them and the kind of conflict.  The trace derives its dependency
arrows from these edges (:mod:`.records`), and debug mode its chains
(:mod:`.debugging`); the rule itself never reads them.

Rule: an op waits on the newest incomplete write of each var it uses
(read-after-write, write-after-write) and, when it writes, on the reads pushed
since that write that are not done (write-after-read).

State kept (per var, while a trace records or in debug mode):
    Var.last_write   newest incomplete write
    Var.readers      reads pushed since ``last_write`` (finished ones dropped now and then)

Example::

    >>> from mxnb.engine.var import Opr, Var
    >>> v = Var('v')
    >>> write, read = Opr(1, 'write', (), (v,)), Opr(2, 'read', (v,), ())
    >>> note_push(write), [(op.name, kind.name) for op, _, kind in note_push(read)]
    ([], [('write', 'RAW')])
"""

from __future__ import annotations

from .events import DepKind
from .var import DONE, Opr, Var

__all__ = ["note_done", "note_push"]

#: Drop finished readers from ``Var.readers`` when the list reaches a power of two past this.
_READERS_PRUNE = 32


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
