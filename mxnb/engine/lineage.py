"""Lineage: every op an op depended on, and every op that depended on it.

Idea: a push record's ``waits_on`` lists only the ops still *unfinished*
when the op was pushed (what the engine had to wait for).  Lineage asks a
wider question — which earlier ops this op's result came from, and which
later ops its result (or its place in a var's order) fed — so it rebuilds
the whole ordering graph from the vars every op declared, in push order,
with the engine's own dependency rule applied as if no op had finished yet.
The same graph is what a what-if replay (:mod:`.replay`) must respect.

Rule: op ``b`` depends directly on an earlier op ``a`` when ``a`` is the
newest earlier write of a var ``b`` reads or writes (read-after-write,
write-after-write), or ``b`` writes a var ``a`` read since that var's newest
earlier write (write-after-read) — :func:`~mxnb.engine.edges.note_push`'s
rule without the finished ops dropped.  Ancestors are the ops reachable
backwards along these edges, descendants those reachable forwards.

State kept: none.

Example::

    >>> from mxnb.engine.events import OpPush
    >>> from mxnb.engine.trace_model import TraceModel
    >>> m = TraceModel([OpPush(0.0, 1, 'w', 'cpu(0)', (), (7,), 0, ()),
    ...                 OpPush(0.1, 2, 'r', 'cpu(0)', (7,), (8,), 0, ()),
    ...                 OpPush(0.2, 3, 'x', 'cpu(0)', (), (9,), 0, ())])
    >>> lineage(m, 2)
    ([1], [])
    >>> lineage(m, 1)
    ([], [2])
"""

from __future__ import annotations

from collections.abc import Iterable

from ..base import ParamError
from .events import Dependency, DepKind
from .trace_model import TraceModel

__all__ = ["dependency_graph", "dependency_links", "lineage", "lineage_of_many", "successors"]


def dependency_links(model: TraceModel) -> dict[int, list[Dependency]]:
    """op id -> its direct dependencies (earlier op, var, kind) by the module rule, one per earlier op."""
    last_write: dict[int, int] = {}
    readers: dict[int, list[int]] = {}
    links: dict[int, list[Dependency]] = {}
    for op in sorted(model.ops.values(), key=lambda o: o.seq):
        direct: dict[int, Dependency] = {}  # earlier op -> its first link
        for var in op.const_vars:
            if var in last_write:
                direct.setdefault(last_write[var], Dependency(last_write[var], var, DepKind.RAW))
        for var in op.mutate_vars:
            if var in last_write:
                direct.setdefault(last_write[var], Dependency(last_write[var], var, DepKind.WAW))
            for reader in readers.get(var, ()):
                direct.setdefault(reader, Dependency(reader, var, DepKind.WAR))
        direct.pop(op.op_id, None)
        links[op.op_id] = list(direct.values())
        for var in op.const_vars:
            readers.setdefault(var, []).append(op.op_id)
        for var in op.mutate_vars:
            last_write[var] = op.op_id
            readers[var] = []
    return links


def dependency_graph(model: TraceModel) -> dict[int, list[int]]:
    """op id -> the op ids it depends on directly (the module rule), for every recorded op."""
    return {op: [dep.op_id for dep in deps] for op, deps in dependency_links(model).items()}


def _reach(start: int, edges: dict[int, list[int]]) -> list[int]:
    seen = {start}
    stack = [start]
    while stack:
        for other in edges.get(stack.pop(), ()):
            if other not in seen:
                seen.add(other)
                stack.append(other)
    seen.discard(start)
    return sorted(seen)


def successors(preds: dict[int, list[int]]) -> dict[int, list[int]]:
    """Invert a :func:`dependency_graph`: op id -> the op ids that depend on it directly."""
    succs: dict[int, list[int]] = {op_id: [] for op_id in preds}
    for op_id, direct in preds.items():
        for pred in direct:
            succs.setdefault(pred, []).append(op_id)
    return succs


def lineage(
    model: TraceModel, op: int, graph: dict[int, list[int]] | None = None
) -> tuple[list[int], list[int]]:
    """(ancestors, descendants) of op ``op`` as sorted op ids (the module rule)."""
    preds = graph if graph is not None else dependency_graph(model)
    if op not in preds:
        known = ", ".join(map(str, list(preds)[:8]))
        raise ParamError(
            f"lineage: op={op!r} is not an op of this trace; pass one of its op ids "
            f"(e.g. {known or 'none recorded'}), as Trace.ops() lists them"
        )
    return _reach(op, preds), _reach(op, successors(preds))


def lineage_of_many(
    model: TraceModel, ops: Iterable[int]
) -> dict[int, tuple[list[int], list[int]]]:
    """:func:`lineage` of each op of ``ops``, building the graph once (what the views send)."""
    preds = dependency_graph(model)
    succs = successors(preds)
    return {op: (_reach(op, preds), _reach(op, succs)) for op in ops if op in preds}
