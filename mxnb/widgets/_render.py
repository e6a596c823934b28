"""What every view shares: headless output as SVG, PNG, text and a notebook mime bundle.

Idea: a view is a small object that knows how to draw itself once; this mixin
turns that one drawing into every format a notebook, a script or a test asks
for.  Graphviz views implement ``to_dot()``; matplotlib views implement
``figure()``; both implement ``to_text()``.

Rule: rendering never touches the engine — a view holds a model or a plan and
draws it.  Matplotlib is used through ``Figure`` objects (no pyplot, no global
state, no GUI backend), so views draw in any thread.

Example::

    >>> from mxnb.widgets import DependencyGraph
    >>> from mxnb.engine.tracing import Trace
    >>> svg = DependencyGraph(Trace()).to_svg()
    >>> svg.lstrip().startswith('<?xml') or svg.lstrip().startswith('<svg')
    True
"""

from __future__ import annotations

import copy
import io
import math
import os
from typing import Any

__all__ = ["FigureImage", "FigureView", "GraphvizView", "View", "name_colour", "state_colours"]

# fill colours of op states, shared by the DAG, the timeline and the extension's CSS
state_colours = {
    "waiting": "#e3e3e3",
    "ready": "#ffe08a",
    "running": "#8ec5ff",
    "done": "#a8e6a3",
    "failed": "#ff8a80",
    "skipped": "#f3c6f0",
}

# op colours, 20 so that few names of one view share one; none is an idle reason's
# (IDLE_COLOURS) nor the failure / critical red; canvas.js PALETTE is the same list
_PALETTE = (
    "#4e79a7",
    "#f28e2b",
    "#59a14f",
    "#76b7b2",
    "#b07aa1",
    "#ff9da7",
    "#9c755f",
    "#1f77b4",
    "#8c564b",
    "#17becf",
    "#bcbd22",
    "#aec7e8",
    "#ffbb78",
    "#98df8a",
    "#c5b0d5",
    "#c49c94",
    "#9edae5",
    "#dbdb8d",
    "#6b6ecf",
    "#8ca252",
)


def name_colour(name: str) -> str:
    """The colour of an op name's family (``'delete:nd9'`` -> ``'delete'``), the same in every
    view: a hash into the palette, computed the same way by canvas.js ``opColour`` for the
    browser views (the Timeline panel, the trace viewer).

    >>> name_colour('delete:nd9') == name_colour('delete:nd10')
    True
    """
    value = 0
    for char in name.split(":", 1)[0]:
        value = (value * 131 + ord(char)) % 1_000_003
    return _PALETTE[value % len(_PALETTE)]


def short_name(name: str, limit: int = 40) -> str:
    """An op name cut to about ``limit`` characters for a legend.

    A bulk segment keeps its first step and its last, and says how many it
    runs; any other long name keeps its start.  A legend of full segment names
    (90 characters each) left the axes a third of the notebook's width.

    >>> short_name('bulk[conv1, tanh1, pool1, conv2, tanh2, pool2, flatten, fc1, softmax]')
    'bulk[conv1, …, softmax] (9 steps)'
    >>> short_name('relu')
    'relu'
    """
    if len(name) <= limit:
        return name
    if name.startswith("bulk[") and name.endswith("]"):
        steps = name[5:-1].split(", ")
        if len(steps) > 2:
            return f"bulk[{steps[0]}, …, {steps[-1]}] ({len(steps)} steps)"
    return name[: limit - 1] + "…"


class NameColours:
    """The colours (:func:`name_colour`) of one view's op names; ``assigned`` keeps them in
    order of first appearance, for the view's legend (:meth:`legend`)."""

    def __init__(self) -> None:
        self.assigned: dict[str, str] = {}

    def __call__(self, name: str) -> str:
        colour = self.assigned.get(name)
        if colour is None:
            colour = self.assigned[name] = name_colour(name)
        return colour

    def legend(self, most: int) -> list[Any]:
        """Legend patches for the first ``most`` names, each labelled by :func:`short_name`."""
        from matplotlib.patches import Patch

        return [
            Patch(color=colour, label=short_name(name))
            for name, colour in list(self.assigned.items())[:most]
        ]


class View:
    """Base of all views: ``to_svg``, ``to_png``, ``to_text`` and ``_repr_mimebundle_``."""

    def to_svg(self) -> str:
        """The view as an SVG document (a string)."""
        raise NotImplementedError

    def to_png(self, path: str | os.PathLike) -> str:
        """Write the view as a PNG file at ``path`` and return the path."""
        raise NotImplementedError

    def to_text(self) -> str:
        """The view as plain text (what tests and terminals read)."""
        raise NotImplementedError

    def __str__(self) -> str:
        return self.to_text()

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, str]:
        return {"image/svg+xml": self.to_svg(), "text/plain": self.to_text()}


def run_dot(source: str, output_format: str) -> bytes:
    """Lay out DOT ``source`` with graphviz's ``dot`` and return the rendered bytes.

    Files, not pipes: the calling thread then blocks once in ``waitpid`` with
    the GIL released, instead of polling pipes — a monitor redrawing from a
    background thread would otherwise keep taking the GIL from the engine's
    threads (the convoy effect).
    """
    import subprocess
    import tempfile

    with tempfile.TemporaryDirectory(prefix="mxnb-dot-") as folder:
        source_path = os.path.join(folder, "graph.gv")
        output_path = os.path.join(folder, f"graph.{output_format}")
        with open(source_path, "w", encoding="utf-8") as handle:
            handle.write(source)
        completed = subprocess.run(
            ["dot", f"-T{output_format}", source_path, "-o", output_path],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            check=False,
        )
        if completed.returncode != 0 or not os.path.exists(output_path):
            raise RuntimeError(
                f"graphviz 'dot -T{output_format}' failed (exit {completed.returncode}); "
                "is graphviz installed (apt-get install graphviz)?"
            )
        with open(output_path, "rb") as handle:
            return handle.read()


class GraphvizView(View):
    """A view drawn by graphviz's ``dot``: subclasses implement ``to_dot()``."""

    def to_dot(self) -> Any:
        """The view as a ``graphviz.Digraph``."""
        raise NotImplementedError

    def to_svg(self) -> str:
        """The view as SVG, laid out by ``dot``."""
        return run_dot(self.to_dot().source, "svg").decode("utf-8")

    def to_png(self, path: str | os.PathLike) -> str:
        """Write a PNG laid out by ``dot`` (150 dpi) and return the path."""
        dot = self.to_dot().copy()
        dot.graph_attr.setdefault("dpi", "150")
        data = run_dot(dot.source, "png")
        with open(path, "wb") as handle:
            handle.write(data)
        return os.fspath(path)


SHOWN_WIDTH_PX = 940  # a JupyterLab notebook's output column, about (953 px in the issue)


def _shown_pixels(figure: Any) -> int:
    """How wide ``figure``'s PNG at 100 dpi with ``bbox_inches='tight'`` comes out, in pixels,
    read from its tight box (and savefig's padding) without rendering it; never under."""
    from matplotlib import rcParams
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    box = figure.get_tightbbox(FigureCanvasAgg(figure).get_renderer())
    return math.ceil(100 * (box.width + 2 * rcParams["savefig.pad_inches"]))


def png_width(data: bytes) -> int:
    """The width in pixels of PNG ``data`` (its IHDR chunk)."""
    return int.from_bytes(data[16:20], "big")


class FigureView(View):
    """A view drawn by matplotlib: subclasses implement ``figure()``."""

    #: The figure's width in inches, for a view whose ``figure()`` is drawn to it (None: the
    #: figure sets its own); a notebook's PNG draws such a view again narrower
    #: (:meth:`to_notebook_png`).
    width: float | None = None

    def figure(self) -> Any:
        """A new ``matplotlib.figure.Figure`` with the view drawn on it."""
        raise NotImplementedError

    def to_svg(self) -> str:
        """The view as SVG (matplotlib's SVG backend; artists carry ids for the extension)."""
        buffer = io.StringIO()
        self.figure().savefig(buffer, format="svg", bbox_inches="tight")
        return buffer.getvalue()

    def to_png(self, path: str | os.PathLike, dpi: int = 120) -> str:
        """Write a PNG at ``dpi`` and return the path."""
        self.figure().savefig(path, format="png", dpi=dpi, bbox_inches="tight")
        return os.fspath(path)

    def to_notebook_png(self) -> bytes:
        """The PNG a notebook shows: at most :data:`SHOWN_WIDTH_PX` wide at 100 dpi.

        A notebook scales a wider picture down to its column, and its 7-point labels with it
        (to 5 px); so a figure that comes out wider is narrowed (its axes, not its text).
        The width is found on the figure drawn once, resized (measuring its tight box is
        cheap); a view with a ``width`` is then drawn again at that width, once, so that
        labels it spaces by its own width fit again.  Then the PNG is rendered, once.
        """
        figure = self.figure()
        drawn_at = figure.get_size_inches()[0]
        for _ in range(6):  # the tight box's labels do not shrink: a few steps
            pixels = _shown_pixels(figure)
            if pixels <= SHOWN_WIDTH_PX:
                break
            width = figure.get_size_inches()[0] - 1.2 * (pixels - SHOWN_WIDTH_PX) / 100 - 0.05
            figure.set_size_inches(width, figure.get_size_inches()[1])
        width = figure.get_size_inches()[0]
        if self.width is not None and width < drawn_at:
            view = copy.copy(self)  # the view itself is left as it was
            view.width = width
            figure = view.figure()
        buffer = io.BytesIO()
        figure.savefig(buffer, format="png", dpi=100, bbox_inches="tight")
        return buffer.getvalue()

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, str]:
        import base64

        return {
            "image/png": base64.b64encode(self.to_notebook_png()).decode("ascii"),
            "text/plain": self.to_text(),
        }


class FigureImage(FigureView):
    """A matplotlib ``Figure`` already drawn, shown as a PNG: ``display(FigureImage(figure))``.

    A bare ``Figure`` displays as ``<Figure size ...>`` text unless pyplot's inline backend
    happens to be active in that kernel; this view needs no pyplot state.

    >>> from matplotlib.figure import Figure
    >>> image = FigureImage(Figure(figsize=(4, 2)))
    >>> sorted(image._repr_mimebundle_())
    ['image/png', 'text/plain']
    >>> image.to_text()
    'figure 4.0 x 2.0 in'
    """

    def __init__(self, figure: Any) -> None:
        self._figure = figure

    def figure(self) -> Any:
        """The figure given (drawn once, shown as often as asked)."""
        return self._figure

    def to_text(self) -> str:
        """``'figure W x H in'``: the figure's size."""
        width, height = self._figure.get_size_inches()
        return f"figure {width:.1f} x {height:.1f} in"
