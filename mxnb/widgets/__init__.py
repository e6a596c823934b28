"""Notebook views of the engine, the memory planner and symbols.

Idea: every view reads trace events (``mxnb.engine.tracing``) or plan objects
(``mxnb.executor.plan``) — never engine internals — so a view costs the engine
nothing unless a recorder is attached, and the same view draws a live run, a
finished trace or one loaded from a chrome-trace file.  Each view renders
headless (``to_svg()``, ``to_png(path)``, ``to_text()``) and in a notebook
(``_repr_mimebundle_``).

Names (loaded on first use so ``import mxnb`` stays fast):
    EngineModel       op states, edges, lanes, memory, stats rebuilt from events
    DependencyGraph   the dependency DAG (graphviz), edges labelled var + RAW/WAR/WAW
    Timeline          worker lanes, op bars, waits, critical path (matplotlib)
    MemoryChart       bytes in use per context over time, pool hits / misses
    StatsTable        per op name timing, per worker utilisation and idle time by reason
    TraceDiffView     two runs' timelines aligned, the largest changes marked (``Trace.diff``)
    EngineMonitor     the live ipywidgets Tab (DAG / Timeline / Memory / Stats / Inspect)
    MemoryPlanView    storage blocks and entry lifetimes of a memory plan (recomputed ones hatched)
    TradeoffView      planned bytes against recompute FLOPs, one point's segments explained
    FigureImage       a matplotlib Figure shown as a PNG (no pyplot state needed)
    plot_network, print_summary   like ``mx.viz``
    SvgCanvas         the anywidget front end (hover, click to inspect, zoom)

Example::

    >>> import mxnb as mx
    >>> from mxnb import widgets
    >>> from mxnb.engine.tracing import Trace
    >>> widgets.DependencyGraph(Trace()).to_text()
    'DependencyGraph: 0 of 0 ops'
"""

from __future__ import annotations

import importlib
from typing import Any

__all__ = [
    "DependencyGraph",
    "EngineModel",
    "EngineMonitor",
    "FigureImage",
    "MemoryChart",
    "MemoryPlanView",
    "OpState",
    "StatsTable",
    "SvgCanvas",
    "Timeline",
    "TraceDiffView",
    "TradeoffView",
    "plot_network",
    "print_summary",
]

_WHERE = {
    "EngineModel": "model",
    "OpState": "model",
    "DependencyGraph": "dag",
    "Timeline": "timeline",
    "MemoryChart": "memory",
    "StatsTable": "stats",
    "EngineMonitor": "monitor",
    "MemoryPlanView": "plan_view",
    "TradeoffView": "tradeoff",
    "TraceDiffView": "trace_diff_view",
    "plot_network": "network",
    "print_summary": "network",
    "SvgCanvas": "canvas",
    "FigureImage": "_render",
}

_MODULES = frozenset(_WHERE.values()) | {"_render"}


def __getattr__(name: str) -> Any:
    if name in _MODULES:  # the chapters themselves: widgets.model, widgets.network ...
        return importlib.import_module(f".{name}", __name__)
    module_name = _WHERE.get(name)
    if module_name is None:
        raise AttributeError(f"module 'mxnb.widgets' has no attribute {name!r}")
    module = importlib.import_module(f".{module_name}", __name__)
    value = getattr(module, name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(list(globals()) + __all__)
