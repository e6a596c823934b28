"""Symbols drawn and summarised: ``plot_network`` and ``print_summary``, as ``mx.viz`` does.

Idea: a Symbol is a graph serialised as JSON (``sym.tojson()``: nodes with op,
name, attrs and inputs, plus ``node_row_ptr`` giving each node's first entry).
Drawing it needs only that JSON and, for shapes, ``infer_shape`` on
``sym.get_internals()`` (whose outputs are exactly the graph's entries, in
``node_row_ptr`` order).  No executor, no engine.

Rule (MXNet's ``python/mxnet/visualization.py``): inputs are ovals, ops are
boxes coloured by family (convolution / fully connected red, activations
yellow, batch norm purple, pooling blue, shape ops orange, softmax green);
with ``hide_weights`` the parameter variables (``*_weight``, ``*_bias``,
``*_gamma`` ...) are left out; with ``shape`` every edge carries the shape of
the tensor it carries, batch axis dropped.  ``print_summary`` lists layers,
output shapes, parameter counts (learned arguments of the layer, aux states
not counted) and the total.

Example::

    >>> import mxnb as mx
    >>> from mxnb import widgets
    >>> net = mx.sym.FullyConnected(mx.sym.Variable('data'), num_hidden=4, name='fc')
    >>> dot = widgets.plot_network(net, shape={'data': (2, 3)})
    >>> 'fc' in dot.source and '4' in dot.source
    True
    >>> widgets.print_summary(net, shape={'data': (2, 3)})  # doctest: +ELLIPSIS
    ____...
    Total params: 16
    ____...
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from typing import Any

from ..base import MXNBError

__all__ = ["NetworkVisualizationError", "network_layers", "plot_network", "print_summary"]

_PALETTE = ("#8dd3c7", "#fb8072", "#ffffb3", "#bebada", "#80b1d3", "#fdb462", "#b3de69", "#fccde5")
_FAMILY = {
    "Convolution": 1,
    "Deconvolution": 1,
    "FullyConnected": 1,
    "BatchNorm": 3,
    "LayerNorm": 3,
    "InstanceNorm": 3,
    "Activation": 2,
    "LeakyReLU": 2,
    "relu": 2,
    "sigmoid": 2,
    "tanh": 2,
    "Pooling": 4,
    "Concat": 5,
    "concat": 5,
    "Flatten": 5,
    "flatten": 5,
    "Reshape": 5,
    "reshape": 5,
    "SliceChannel": 5,
    "Dropout": 5,
    "SoftmaxOutput": 6,
    "softmax": 6,
    "Softmax": 6,
    "LinearRegressionOutput": 6,
    "LogisticRegressionOutput": 6,
}
_WEIGHT_SUFFIXES = (
    "_weight",
    "_bias",
    "_beta",
    "_gamma",
    "_moving_var",
    "_moving_mean",
    "_running_var",
    "_running_mean",
)


class NetworkVisualizationError(MXNBError, ValueError):
    """A symbol could not be drawn or summarised (bad shapes, unknown input names)."""


def _graph(sym: Any) -> dict[str, Any]:
    try:
        return json.loads(sym.tojson())
    except AttributeError as exc:
        raise NetworkVisualizationError(
            f"plot_network / print_summary take a Symbol (with tojson()), got {type(sym).__name__}"
        ) from exc


def _entry_shapes(
    sym: Any, shape: Mapping[str, tuple] | None, graph: dict
) -> dict[tuple[int, int], tuple] | None:
    """Shape of every visible graph entry, keyed ``(node index, output index)``."""
    if not shape:
        return None
    known = set(sym.list_arguments()) | set(sym.list_auxiliary_states())
    unknown = sorted(set(shape) - known)
    if unknown:
        raise NetworkVisualizationError(
            f"shape names {unknown} are not inputs of the symbol; its arguments are "
            f"{sym.list_arguments()}"
        )
    internals = sym.get_internals()
    try:
        _, out_shapes, _ = internals.infer_shape(**{k: tuple(v) for k, v in shape.items()})
    except MXNBError as exc:
        raise NetworkVisualizationError(
            f"cannot infer the shapes of the network from {dict(shape)}: {exc}"
        ) from exc
    if out_shapes is None or any(s is None for s in out_shapes):
        raise NetworkVisualizationError(
            f"shape {dict(shape)} does not determine every shape of the network; "
            "give the shapes of all data inputs (e.g. data and label)"
        )
    by_name = dict(zip(internals.list_outputs(), (tuple(x) for x in out_shapes)))
    table: dict[tuple[int, int], tuple] = {}
    for index, node in enumerate(graph["nodes"]):
        name = node["name"]
        if node["op"] == "null":
            if name in by_name:
                table[(index, 0)] = by_name[name]
            continue
        for key, value in by_name.items():
            if key == f"{name}_output":
                table[(index, 0)] = value
            elif key.startswith(f"{name}_output") and key[len(name) + 7 :].isdigit():
                table[(index, int(key[len(name) + 7 :]))] = value
    return table


def _is_weight(name: str) -> bool:
    return name.endswith(_WEIGHT_SUFFIXES)


def _op_label(node: dict[str, Any]) -> str:
    op = node["op"]
    attrs = node.get("attrs", node.get("param", {})) or {}
    name = node["name"]

    def tup(key: str, default: str = "1") -> str:
        value = str(attrs.get(key, default)).strip("()[] ").replace(",", "x").replace(" ", "")
        return value.rstrip("x")

    if op == "Convolution" or op == "Deconvolution":
        return f"{op}\n{tup('kernel')}/{tup('stride')}, {attrs.get('num_filter', '?')}\n{name}"
    if op == "FullyConnected":
        return f"FullyConnected\n{attrs.get('num_hidden', '?')}\n{name}"
    if op in ("Activation", "LeakyReLU"):
        return f"{op}\n{attrs.get('act_type', 'leaky' if op == 'LeakyReLU' else '')}\n{name}"
    if op == "Pooling":
        kernel = "global" if str(attrs.get("global_pool", "")).lower() == "true" else tup("kernel")
        return f"Pooling\n{attrs.get('pool_type', 'max')}, {kernel}/{tup('stride')}\n{name}"
    return f"{op}\n{name}"


def plot_network(
    sym: Any,
    shape: Mapping[str, tuple] | None = None,
    title: str = "plot",
    hide_weights: bool = True,
    node_attrs: Mapping[str, str] | None = None,
    save_format: str = "pdf",
    dtype: Any = None,
) -> Any:
    """Draw ``sym`` as a ``graphviz.Digraph``, like ``mx.viz.plot_network``.

    Parameters
    ----------
    sym : Symbol
        The network.
    shape : dict, optional
        Input shapes (``{'data': (1, 3, 224, 224)}``); edges then carry the
        shape of each tensor (batch axis dropped).
    title : str
        Graph name (and the file name ``render()`` writes).
    hide_weights : bool
        Leave out parameter variables (``*_weight``, ``*_bias``, ...).
    node_attrs : dict, optional
        Graphviz node attributes overriding the defaults (e.g. ``{'fixedsize': 'false'}``).
    save_format : str
        The Digraph's output format for ``render()``.
    dtype : optional
        Accepted for ``mx.viz`` compatibility; drawing does not depend on it.

    Example::

        >>> import mxnb as mx
        >>> from mxnb.executor import zoo
        >>> dot = plot_network(zoo.lenet(), shape={'data': (1, 1, 28, 28)})
        >>> 'Convolution' in dot.source
        True
    """
    import graphviz

    graph = _graph(sym)
    nodes = graph["nodes"]
    shapes = _entry_shapes(sym, shape, graph)
    attrs = {
        "shape": "box",
        "fixedsize": "true",
        "width": "1.3",
        "height": "0.8034",
        "style": "filled",
        "fontname": "Helvetica",
        "fontsize": "10",
    }
    attrs.update(node_attrs or {})
    dot = graphviz.Digraph(name=title, format=save_format)
    dot.attr(fontname="Helvetica")
    dot.attr("edge", fontname="Helvetica", fontsize="9")
    hidden: set[int] = set()
    for index, node in enumerate(nodes):
        op, name = node["op"], node["name"]
        node_kw = dict(attrs)
        if op == "null":
            if hide_weights and _is_weight(name):
                hidden.add(index)
                continue
            node_kw.update(shape="oval", fillcolor=_PALETTE[0])
            label = name
        else:
            node_kw["fillcolor"] = _PALETTE[_FAMILY.get(op, 7)]
            label = _op_label(node)
        dot.node(name=name, label=label, **node_kw)
    for index, node in enumerate(nodes):
        if node["op"] == "null":
            continue
        for item in node["inputs"]:
            source, output = item[0], item[1]
            if source in hidden:
                continue
            edge_kw = {"dir": "back", "arrowtail": "open"}
            if shapes is not None and (source, output) in shapes:
                entry_shape = shapes[(source, output)]
                edge_kw["label"] = "x".join(str(d) for d in entry_shape[1:]) or "1"
            dot.edge(tail_name=node["name"], head_name=nodes[source]["name"], **edge_kw)
    return dot


def network_layers(sym: Any, shape: Mapping[str, tuple] | None = None) -> list[dict[str, Any]]:
    """One dict per op node: ``name``, ``op``, ``output_shapes``, ``params``, ``inputs`` (names).

    Parameters count the learned arguments feeding the layer (weights, biases,
    gammas, betas) — inputs named in ``shape`` and aux states are not counted.
    Without ``shape`` the shapes are ``None`` and params 0.
    """
    graph = _graph(sym)
    nodes = graph["nodes"]
    shapes = _entry_shapes(sym, shape, graph)
    aux = set(sym.list_auxiliary_states())
    given = set(shape or ())
    layers = []
    for index, node in enumerate(nodes):
        if node["op"] == "null":
            continue
        outs = None
        if shapes is not None:
            outs = [shapes[(index, k)] for k in range(8) if (index, k) in shapes] or None
        params = 0
        inputs = []
        for item in node["inputs"]:
            source = nodes[item[0]]
            if source["op"] == "null":
                name = source["name"]
                learned = name not in given and name not in aux and not name.endswith("label")
                if learned and shapes is not None and (item[0], 0) in shapes:
                    params += math.prod(shapes[(item[0], 0)])
                if name in given or not _is_weight(name):
                    inputs.append(name)
            else:
                inputs.append(source["name"])
        layers.append(
            {
                "name": node["name"],
                "op": node["op"],
                "output_shapes": outs,
                "params": int(params),
                "inputs": inputs,
            }
        )
    return layers


def print_summary(
    sym: Any,
    shape: Mapping[str, tuple] | None = None,
    line_length: int = 120,
    positions: Sequence[float] = (0.44, 0.64, 0.74, 1.0),
) -> None:
    """Print a layer table of ``sym`` like ``mx.viz.print_summary``: layer (type), output shape,
    parameter count, previous layers, then the total parameter count.

    Parameters
    ----------
    sym : Symbol
        The network.
    shape : dict, optional
        Input shapes; without them shapes and counts cannot be known.
    line_length : int
        Total width of the table.
    positions : sequence of float
        Right edge of each column as a fraction of ``line_length`` (or absolute columns if > 1).

    Example::

        >>> import mxnb as mx
        >>> net = mx.sym.FullyConnected(mx.sym.Variable('data'), num_hidden=4, name='fc')
        >>> print_summary(net, {'data': (2, 3)}, line_length=60)  # doctest: +ELLIPSIS
        ____...
        Layer (type)  ...
        ====...
        fc(FullyConnected)  ...4  ...16  ...data
        ====...
        Total params: 16
        ____...
    """
    print(summary_text(sym, shape, line_length, positions))


def summary_text(
    sym: Any,
    shape: Mapping[str, tuple] | None = None,
    line_length: int = 120,
    positions: Sequence[float] = (0.44, 0.64, 0.74, 1.0),
) -> str:
    """The table :func:`print_summary` prints, as a string."""
    if positions[-1] <= 1:
        stops = [int(line_length * p) for p in positions]
    else:
        stops = [int(p) for p in positions]
    headers = ["Layer (type)", "Output Shape", "Param #", "Previous Layer"]

    def row(fields: Sequence[str]) -> str:
        line = ""
        for index, text in enumerate(fields):
            if index:
                line += " "
            line += str(text)
            line = line[: stops[index]]
            line += " " * (stops[index] - len(line))
        return line.rstrip()

    lines = ["_" * line_length, row(headers), "=" * line_length]
    layers = network_layers(sym, shape)
    total = 0
    for index, layer in enumerate(layers):
        outs = layer["output_shapes"]
        if outs is None:
            out_text = "?"
        else:
            out_text = ", ".join("x".join(str(d) for d in s[1:]) or "1" for s in outs)
        previous = layer["inputs"] or [""]
        lines.append(
            row([f"{layer['name']}({layer['op']})", out_text, str(layer["params"]), previous[0]])
        )
        for extra in previous[1:]:
            lines.append(row(["", "", "", extra]))
        total += layer["params"]
        lines.append(("=" if index == len(layers) - 1 else "_") * line_length)
    lines.append(f"Total params: {total}")
    lines.append("_" * line_length)
    return "\n".join(lines)
