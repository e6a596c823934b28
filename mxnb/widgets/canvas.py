"""The browser side of the interactive views: SVG in, clicks out.

Idea: layout is Python's job (graphviz, matplotlib); the browser only shows
the SVG it is sent and reports what was clicked.  :class:`SvgCanvas` is an
``anywidget.AnyWidget`` whose ES module (``static/canvas.js``) draws the
``svg`` trait, shows ``tooltips`` on hover, zooms and pans, and writes the id
of a clicked op (``'op12'``), plan entry (``'entry-fc1_output'``) or var node
into ``selected``.  Python observes ``selected`` like any trait.

Rule: the ES module and CSS live in ``mxnb/widgets/static/`` (package data);
``extension/README.md`` points there — one source of truth.

State kept (synced traits):
    svg        the SVG document to show
    tooltips   element id -> hover text (else a graphviz node's tooltip, else its ``<title>``)
    selected   id of the last clicked element ('' when none)
    clicks     how many clicks were reported (so re-clicking an element is seen)
    timeline   a timeline's data (``Timeline.to_data()``): drawn by the browser instead of
               ``svg`` when set, at the frame's width, with a level of detail
    timeline_seq  the ``seq`` of the live timeline's last message: the full ``timeline``
               is sent once, then deltas as custom messages ``{"timeline_delta": ...}``
               (:mod:`mxnb.widgets.timeline_feed`); a view behind asks
               ``{"timeline_resync": seq}`` and gets ``timeline`` again
    groups     element id -> group key: a click marks the elements of its group too
               (the memory plan's entries sharing a storage block)
    links      op element id -> the op element ids it depends on directly
               (:func:`~mxnb.widgets.dag.lineage_links`): a click marks the clicked op's
               ancestors and descendants, across lanes (``Trace.lineage``)
    lineage    ``{"op": id, "ancestors": [ids], "descendants": [ids]}``: one op's lineage
               sent by a live view (the monitor, the lab panels) instead of all the links

Example::

    >>> from mxnb.widgets import SvgCanvas
    >>> canvas = SvgCanvas(svg='<svg xmlns="http://www.w3.org/2000/svg"></svg>')
    >>> canvas.selected
    ''
"""

from __future__ import annotations

import pathlib

import anywidget
import traitlets

__all__ = ["STATIC", "SvgCanvas", "lineage_of", "selected_op_id"]

STATIC = pathlib.Path(__file__).parent / "static"


class SvgCanvas(anywidget.AnyWidget):
    """Shows an SVG, with hover tooltips, zoom / pan and click-to-select."""

    _esm = STATIC / "canvas.js"
    _css = STATIC / "canvas.css"

    svg = traitlets.Unicode("").tag(sync=True)
    tooltips = traitlets.Dict().tag(sync=True)
    selected = traitlets.Unicode("").tag(sync=True)
    clicks = traitlets.Int(0).tag(sync=True)
    groups = traitlets.Dict().tag(sync=True)
    links = traitlets.Dict().tag(sync=True)
    lineage = traitlets.Dict().tag(sync=True)
    timeline = traitlets.Dict().tag(sync=True)
    timeline_seq = traitlets.Int(0).tag(sync=True)


def lineage_of(model: object, op_id: int) -> dict[str, object]:
    """The ``lineage`` trait's value for op ``op_id`` of a trace model (element ids)."""
    from ..engine.lineage import lineage

    ancestors, descendants = lineage(model, op_id)  # type: ignore[arg-type]
    return {
        "op": f"op{op_id}",
        "ancestors": [f"op{i}" for i in ancestors],
        "descendants": [f"op{i}" for i in descendants],
    }


def selected_op_id(element_id: str) -> int | None:
    """``'op12' -> 12``; ``None`` for ids that do not name an op."""
    if element_id.startswith("op") and element_id[2:].isdigit():
        return int(element_id[2:])
    return None
