"""ClusterTrace's figure, from a saved job (``tests/lab/data/dist_sync-cluster.json``, notebook 10's
``dist_sync`` job, written by ``tests/lab/data/make_job.py``): no Ray needed."""

from __future__ import annotations

import pathlib

from mxnb.kvstore.dist_trace import ClusterTrace

JOB = pathlib.Path(__file__).parents[1] / "lab" / "data" / "dist_sync-cluster.json"


def test_the_figure_keeps_its_legend_off_the_lanes():
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    trace = ClusterTrace.load(JOB)
    figure = trace.figure()
    renderer = FigureCanvasAgg(figure).get_renderer()
    (axes,) = figure.axes
    legend = axes.get_legend()
    assert [text.get_text() for text in legend.get_texts()] == ["push", "update", "pull"]
    lanes, key = axes.get_window_extent(renderer), legend.get_window_extent(renderer)
    assert key.x0 >= lanes.x1, "the legend covers the lanes' right end"
    assert key.x1 <= figure.bbox.x1, "the legend is cut off at the figure's edge"
    assert len(axes.patches) > 3 * len(trace.parts)  # the lanes' bars were drawn
