"""The dependency DAG: ops as nodes, one edge per dependency, labelled var + kind.

Idea (MXNet's engine notes): the engine turns pushes into a DAG whose edges
say "this op waits for that one through this var".  A read after a write is
RAW, a write after reads is WAR, a write after a write is WAW.  Drawing the
edges the engine recorded (``OpPush.waits_on``) shows exactly why two ops were
serialized — and colouring nodes by state shows where a run is right now.

Rule: nodes are the selected ops (the most recent ``last``, filtered by name
or var); an edge from an op outside the window is drawn from a dashed ghost
node so nothing is silently dropped.  With ``show_vars=True`` the picture is
the op/var bipartite graph: each write makes a new version of the var
(``w@1``, ``w@2``), readers hang off the version they read, so the graph stays
acyclic and shows data flow.  Deletes (``delete:nd12`` ops, which NDArray
pushes one per freed array while a trace records) are folded by default into
the op that freed the array — the last op before the delete that touched its
var — as a "frees nd12" line, so a loop such as ``a = a * 2 + 1`` shows its
dependency structure; ``show_deletes=True`` draws them as nodes.  Graphs
without edges (independent ops) are laid out in rows of :data:`ROW`, not as
one endless rank.

State kept:
    model        the :class:`EngineModel` drawn (rebuilt from the trace on ``refresh``)
    last, name_filter, var_filter, show_vars, show_deletes, selected   drawing options

Example::

    >>> from mxnb.engine.tracing import OpPush, Dependency, DepKind
    >>> g = DependencyGraph([OpPush(0, 1, 'w', 'cpu(0)', (), (5,), 0, ()),
    ...                      OpPush(0, 2, 'r', 'cpu(0)', (5,), (), 0,
    ...                             (Dependency(1, 5, DepKind.RAW),))])
    >>> [(e.holder, e.waiter, e.kind.name) for e in g.visible_edges()]
    [(1, 2, 'RAW')]
"""

from __future__ import annotations

from typing import Any

from ..engine.tracing import DepKind
from ._render import GraphvizView, state_colours
from .model import KIND_SHORT, Edge, EngineModel, OpRecord

__all__ = ["ROW", "DependencyGraph", "edge_style", "is_delete", "lineage_links", "reduce_edges"]

ROW = 8  # nodes per row when ops without dependencies would otherwise share one rank

_EDGE_STYLE = {
    DepKind.RAW: {"color": "#333333", "style": "solid"},
    DepKind.WAR: {"color": "#1f6fd1", "style": "dashed"},
    DepKind.WAW: {"color": "#c62828", "style": "bold"},
}


def edge_style(kind: DepKind) -> dict[str, str]:
    """Graphviz attributes of an edge of ``kind`` (RAW black, WAR blue dashed, WAW red bold)."""
    return dict(_EDGE_STYLE[kind])


def _stacked(label: str) -> str:
    """An executor's bulk segment (``'#7 bulk[conv1, relu1]'``) drawn with one step per line."""
    head, bracket, rest = label.partition("bulk[")
    if not bracket or not rest.endswith("]"):
        return label
    return f"{head}bulk[\n  " + ",\n  ".join(rest[:-1].split(", ")) + "]"


def reduce_edges(edges: list[Edge]) -> tuple[list[list[Edge]], int]:
    """The edges a reader needs: one per (holder, waiter) pair, none a longer path implies.

    Returns the kept pairs (each the list of its edges, one per var) in the
    order first met, and how many dependency edges were left out because
    another chain of drawn edges already orders the same two ops (the
    transitive reduction of the DAG; the engine's order is the same).
    Holders are pushed before their waiters, so op ids order the DAG.
    """
    pairs: dict[tuple[int, int], list[Edge]] = {}
    successors: dict[int, set[int]] = {}
    for edge in edges:
        pairs.setdefault((edge.holder, edge.waiter), []).append(edge)
        successors.setdefault(edge.holder, set()).add(edge.waiter)
    below: dict[int, set[int]] = {}  # op -> every op reachable from it
    for op in sorted(successors, reverse=True):  # waiters (larger ids) first
        reach: set[int] = set()
        for nxt in successors[op]:
            reach.add(nxt)
            reach |= below.get(nxt, set())
        below[op] = reach
    kept: list[list[Edge]] = []
    hidden = 0
    for (holder, waiter), group in pairs.items():
        others = successors[holder] - {waiter}
        if any(waiter in below.get(other, ()) for other in others):
            hidden += len(group)
        else:
            kept.append(group)
    return kept, hidden


def is_delete(op: OpRecord) -> bool:
    """True for an op that deletes vars (``push_delete``: named ``delete:...``)."""
    return op.name.startswith("delete:")


def lineage_links(model: EngineModel) -> dict[str, list[str]]:
    """Element id -> the element ids of the ops it depends on directly (``'op7': ['op3']``).

    The graph :meth:`~mxnb.engine.tracing.Trace.lineage` walks, in the ids the
    views give ops; an :class:`~mxnb.widgets.SvgCanvas` with these ``links``
    marks the ancestors and descendants of a clicked op.
    """
    from ..engine.lineage import dependency_graph

    return {f"op{op}": [f"op{p}" for p in preds] for op, preds in dependency_graph(model).items()}


def as_model(source: Any) -> EngineModel:
    """An :class:`EngineModel` from a model, a ``Trace`` or a list of events."""
    if isinstance(source, EngineModel):
        return source
    if hasattr(source, "events"):
        return EngineModel.from_trace(source)
    return EngineModel(list(source))


class DependencyGraph(GraphvizView):
    """The dependency DAG of a trace, drawn with graphviz.

    Parameters
    ----------
    source : Trace, EngineModel or list of Event
        What to draw; a ``Trace`` (also one from ``Trace.from_chrome_trace``).
    last : int, optional
        Draw only the most recent ``last`` ops (default 60; ``None`` for all).
    name_filter : str, optional
        Keep ops whose name contains this text.
    var_filter : str or int, optional
        Keep ops touching this var (id, or text contained in its name).
    show_vars : bool
        Draw vars as nodes too (the op/var bipartite picture).
    selected : int, optional
        Op id drawn with a thick outline (the Inspect tab's choice).
    show_deletes : bool
        Draw delete ops as nodes (default False: each is folded into the op
        that freed the array, as a "frees ..." line on that op).
    implied : bool
        Draw every dependency (default False: an edge that a chain of other
        drawn edges implies is left out, and the picture says how many were;
        two ops waiting on each other through several vars share one edge).
    """

    def __init__(
        self,
        source: Any,
        last: int | None = 60,
        name_filter: str | None = None,
        var_filter: str | int | None = None,
        show_vars: bool = False,
        selected: int | None = None,
        show_deletes: bool = False,
        implied: bool = False,
    ) -> None:
        self._source = source
        self.model = as_model(source)
        self.last = last
        self.name_filter = name_filter
        self.var_filter = var_filter
        self.show_vars = show_vars
        self.selected = selected
        self.show_deletes = show_deletes
        self.implied = implied
        self.hidden_edges = 0  # set while drawing: dependencies implied by drawn ones, left out
        self._freed: dict[int, list[str]] = {}  # set while drawing

    def refresh(self) -> DependencyGraph:
        """Read new events from the source trace (no-op for a fixed list)."""
        if hasattr(self._source, "events"):
            self.model.update_from(self._source)
        return self

    def _hides_deletes(self) -> bool:
        return not self.show_deletes and "delete" not in (self.name_filter or "")

    def visible_ops(self) -> list[OpRecord]:
        """The ops this view draws, in push order (deletes folded unless ``show_deletes``)."""
        if not self._hides_deletes():
            return self.model.select(self.last, self.name_filter, self.var_filter)
        ops = self.model.select(None, self.name_filter, self.var_filter)
        ops = [op for op in ops if not is_delete(op)]
        if self.last is not None and self.last >= 0:
            ops = ops[-self.last :] if self.last else []
        return ops

    def visible_edges(self) -> list[Edge]:
        """The dependency edges whose waiter is drawn (none from a folded delete)."""
        shown = {op.op_id for op in self.visible_ops()}
        edges = [edge for edge in self.model.edges if edge.waiter in shown]
        if self._hides_deletes():
            ops = self.model.ops
            edges = [e for e in edges if e.holder not in ops or not is_delete(ops[e.holder])]
        return edges

    def drawn_edges(self) -> list[list[Edge]]:
        """The edges drawn, one list per (holder, waiter) pair; sets :attr:`hidden_edges`.

        All of :meth:`visible_edges` with ``implied=True``; else their
        transitive reduction (:func:`reduce_edges`).
        """
        edges = self.visible_edges()
        if self.implied:
            self.hidden_edges = 0
            return [[edge] for edge in edges]
        kept, self.hidden_edges = reduce_edges(edges)
        return kept

    def freed(self) -> dict[int, list[str]]:
        """Op id -> names of the vars whose delete was folded into it (empty with deletes shown).

        A delete is folded into the last op pushed before it that read or
        wrote the deleted var: the op whose end let the array go.
        """
        if not self._hides_deletes():
            return {}
        last_user: dict[int, int] = {}
        result: dict[int, list[str]] = {}
        for op in self.model.ops.values():
            if is_delete(op):
                for var_id in op.mutate_vars:
                    user = last_user.get(var_id)
                    if user is not None:
                        result.setdefault(user, []).append(self.model.var_name(var_id))
                continue
            for var_id in op.const_vars + op.mutate_vars:
                last_user[var_id] = op.op_id
        return result

    # -- graphviz ---------------------------------------------------------

    def to_dot(self) -> Any:
        """The DAG as a ``graphviz.Digraph`` (node ids ``op<N>``, var nodes ``var<N>_<version>``)."""
        import graphviz

        dot = graphviz.Digraph(name="dependencies")
        dot.attr(rankdir="TB", fontname="Helvetica", fontsize="10", nodesep="0.25", ranksep="0.35")
        dot.attr("node", shape="box", style="rounded,filled", fontname="Helvetica", fontsize="10")
        dot.attr("edge", fontname="Helvetica", fontsize="10", arrowsize="0.6")
        ops = self.visible_ops()
        self._freed = self.freed()
        if self.show_vars:
            self._bipartite(dot, ops)
        else:
            self._op_graph(dot, ops)
        self._rows_for_independent(dot, ops)
        if self.hidden_edges and not self.show_vars:
            dot.attr(
                label=f"{self.hidden_edges} implied dependencies hidden (implied=True draws them)",
                labelloc="b",
                fontsize="10",
                fontcolor="#555555",
            )
        if not ops:
            dot.node("empty", "no ops traced yet", shape="plaintext", style="")
        return dot

    def _rows_for_independent(self, dot: Any, ops: list[OpRecord]) -> None:
        """Stack ops that no drawn edge touches in rows of :data:`ROW` (invisible edges).

        Otherwise dot puts every one of them on the first rank: 40 independent
        ops make a strip too wide to read without zooming.
        """
        if self.show_vars:
            return
        linked = {e.holder for e in self.visible_edges()} | {e.waiter for e in self.visible_edges()}
        alone = [op.op_id for op in ops if op.op_id not in linked]
        for index in range(ROW, len(alone)):
            dot.edge(f"op{alone[index - ROW]}", f"op{alone[index]}", style="invis")

    def _op_node(self, dot: Any, op: OpRecord) -> None:
        state = op.state.value
        freed = self._freed.get(op.op_id, [])
        frees = ""
        if freed:
            more = f" +{len(freed) - 3}" if len(freed) > 3 else ""
            frees = "\nfrees " + ", ".join(freed[:3]) + more
        attrs = {
            "fillcolor": state_colours[state],
            "tooltip": op.summary() + (f"\nfrees {', '.join(freed)}" if freed else ""),
            "id": f"op{op.op_id}",
        }
        if op.op_id == self.selected:
            attrs["penwidth"] = "3"
        if state in ("failed", "skipped"):
            attrs["style"] = (
                "rounded,filled,dashed" if state == "skipped" else "rounded,filled,bold"
            )
        label = _stacked(op.label)
        dot.node(f"op{op.op_id}", f"{label}\n{op.ctx} · {state}{frees}", **attrs)

    def _op_graph(self, dot: Any, ops: list[OpRecord]) -> None:
        shown = {op.op_id for op in ops}
        # big graphs: labels placed after layout (xlabel), or dot spends seconds routing them
        label_key = "xlabel" if len(ops) > 150 else "label"
        for op in ops:
            self._op_node(dot, op)
        ghosts: set[int] = set()
        for group in self.drawn_edges():
            edge = group[0]
            if edge.holder not in shown and edge.holder not in ghosts:
                ghosts.add(edge.holder)
                holder = self.model.ops.get(edge.holder)
                label = holder.label if holder else f"#{edge.holder}"
                dot.node(
                    f"op{edge.holder}",
                    label,
                    style="rounded,dashed",
                    color="#999999",
                    fontcolor="#777777",
                    id=f"op{edge.holder}",
                )
            label = "\n".join(
                f"{self.model.var_name(each.var_id)} {KIND_SHORT[each.kind]}" for each in group
            )
            attrs = edge_style(edge.kind)
            attrs[label_key] = label
            dot.edge(f"op{edge.holder}", f"op{edge.waiter}", **attrs)

    def _bipartite(self, dot: Any, ops: list[OpRecord]) -> None:
        shown = {op.op_id for op in ops}
        version: dict[int, int] = {}
        drawn: set[str] = set()

        def var_node(var_id: int) -> str:
            k = version.get(var_id, 0)
            node = f"var{var_id}_{k}"
            if node not in drawn:
                drawn.add(node)
                dot.node(
                    node,
                    f"{self.model.var_name(var_id)}@{k}",
                    shape="ellipse",
                    style="filled",
                    fillcolor="#fff7e0",
                    fontsize="9",
                    id=node,
                )
            return node

        readers: dict[int, list[int]] = {}  # var -> shown ops reading its current version
        hidden = self._hides_deletes()
        for op in self.model.ops.values():  # versions count every write, shown or not
            if hidden and is_delete(op):
                continue
            if op.op_id in shown:
                self._op_node(dot, op)
                for var_id in op.const_vars:
                    dot.edge(var_node(var_id), f"op{op.op_id}", label="read", color="#333333")
                    readers.setdefault(var_id, []).append(op.op_id)
            for var_id in op.mutate_vars:
                if op.op_id in shown:
                    # the new version may only be written once the readers of the old one are done
                    for reader in readers.get(var_id, []):
                        if reader != op.op_id:
                            dot.edge(
                                f"op{reader}",
                                f"op{op.op_id}",
                                label="WAR",
                                constraint="true",
                                **edge_style(DepKind.WAR),
                            )
                    if f"var{var_id}_{version.get(var_id, 0)}" in drawn and not readers.get(var_id):
                        dot.edge(
                            var_node(var_id),
                            f"op{op.op_id}",
                            label="WAW",
                            **edge_style(DepKind.WAW),
                        )
                readers[var_id] = []
                version[var_id] = version.get(var_id, 0) + 1
                if op.op_id in shown:
                    dot.edge(f"op{op.op_id}", var_node(var_id), label="write", color="#c62828")

    # -- text ---------------------------------------------------------------

    def canvas(self) -> Any:
        """An :class:`~mxnb.widgets.SvgCanvas` of the graph: hover, zoom, click an op to mark its lineage."""
        from .canvas import SvgCanvas

        return SvgCanvas(svg=self.to_svg(), links=lineage_links(self.model))

    def to_text(self) -> str:
        """One line per op (id, name, ctx, state) and per edge (holder -> waiter var KIND)."""
        ops = self.visible_ops()
        freed = self.freed()
        lines = [f"DependencyGraph: {len(ops)} of {len(self.model.ops)} ops"]
        for op in ops:
            frees = f"  frees {', '.join(freed[op.op_id])}" if op.op_id in freed else ""
            lines.append(f"  {op.label:<24} {op.ctx:<12} {op.state.value}{frees}")
        for edge in self.visible_edges():
            lines.append(
                f"  #{edge.holder} -> #{edge.waiter}  "
                f"{self.model.var_name(edge.var_id)} {KIND_SHORT[edge.kind]}"
            )
        return "\n".join(lines)
