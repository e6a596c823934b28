"""``mx.sym``: symbolic graphs — construction, composition, shape/type inference, JSON.

Chapters of this package:
    graph.py          Node / NodeEntry, topological order, shape and type inference (the
                      contract the executor and memory planner read)
    scope.py          automatic names (NameManager, Prefix) and attribute scopes (AttrScope)
    symbol.py         the Symbol: outputs, arguments, internals, composition, attributes,
                      inference, JSON and executor hooks
    creation.py       making nodes: Variable, operators applied (implicit variables named
                      like MXNet), Group, arithmetic through the registered ops
    random.py         ``mx.sym.random.uniform / normal / randint`` nodes
    serialization.py  MXNet 1.x symbol JSON, written as MXNet writes it; old and Gluon files read

``mx.sym.<Name>`` exists for every registered operator (module-level
``__getattr__``), so an operator registered later — even in a notebook cell —
is available at once, with its docstring generated from the registry.

Example::

    >>> import mxnb as mx
    >>> data = mx.sym.Variable('data')
    >>> net = mx.sym.FullyConnected(data, num_hidden=4, name='fc1')
    >>> net = mx.sym.Activation(net, act_type='relu', name='relu1')
    >>> net.list_arguments(), net.list_outputs()
    (['data', 'fc1_weight', 'fc1_bias'], ['relu1_output'])
    >>> net.infer_shape(data=(2, 3))
    ([(2, 3), (4, 3), (4,)], [(2, 4)], [])
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Sequence
from typing import Any

from ..base import FormatError
from ..operator import registry
from . import _internal, contrib, graph, linalg, random  # noqa: F401 - _internal: mx.sym._internal
from .compat import histogram, hypot, maximum, minimum, pow, power, split_v2  # noqa: F401
from . import image  # noqa: F401  (MXNet: mx.sym.image)
from .creation import Group, Variable, create, var
from .scope import AttrScope, NameManager, Prefix
from .serialization import from_json
from .symbol import Symbol

__all__ = [
    "AttrScope",
    "Group",
    "NameManager",
    "Prefix",
    "Symbol",
    "Variable",
    "arange",
    "contrib",
    "create",
    "full",
    "graph",
    "hypot",
    "linalg",
    "load",
    "load_json",
    "maximum",
    "minimum",
    "ones",
    "power",
    "random",
    "var",
    "zeros",
]


def load_json(json_str: str | bytes) -> Symbol:
    """Load a symbol from MXNet symbol JSON text (``sym.tojson()``, ``*-symbol.json`` files).

    Raises :class:`~mxnb.base.GraphError` listing every operator the file uses
    that is not registered, and :class:`~mxnb.base.FormatError` when the text
    is not a symbol file.
    """
    return Symbol._from_outputs(from_json(json_str))


def load(fname: str) -> Symbol:
    """Load a symbol from a ``*-symbol.json`` file written by ``sym.save`` or MXNet/Gluon.

    A file that is not a symbol file (binary, malformed, a field of the wrong
    type) raises :class:`~mxnb.base.FormatError` naming the file and the field.
    """
    with open(fname, "rb") as handle:
        content = handle.read()
    try:
        return load_json(content)
    except FormatError as exc:
        raise type(exc)(f"load {os.fspath(fname)!r}: {exc}") from None


def _dtype_name(dtype: Any) -> str:
    import numpy as np

    return np.dtype("float32" if dtype is None else dtype).name


def zeros(shape: int | Sequence[int], dtype: Any = None, **kwargs: Any) -> Symbol:
    """A symbol of zeros of ``shape`` (the ``_zeros`` operator; dtype defaults to float32)."""
    return create("_zeros", shape=shape, dtype=_dtype_name(dtype), hint="_zeros", **kwargs)


def ones(shape: int | Sequence[int], dtype: Any = None, **kwargs: Any) -> Symbol:
    """A symbol of ones of ``shape`` (the ``_ones`` operator)."""
    return create("_ones", shape=shape, dtype=_dtype_name(dtype), hint="_ones", **kwargs)


def full(shape: int | Sequence[int], val: float, dtype: Any = None, **kwargs: Any) -> Symbol:
    """A symbol of ``shape`` filled with ``val`` (the ``_full`` operator)."""
    return create(
        "_full", shape=shape, value=float(val), dtype=_dtype_name(dtype), hint="_full", **kwargs
    )


def arange(
    start: float,
    stop: float | None = None,
    step: float = 1.0,
    repeat: int = 1,
    infer_range: bool = False,
    name: str | None = None,
    dtype: Any = None,
) -> Symbol:
    """Evenly spaced values in ``[start, stop)`` (the ``_arange`` operator)."""
    return create(
        "_arange",
        start=start,
        stop=stop,
        step=step,
        repeat=repeat,
        infer_range=infer_range,
        name=name,
        dtype=_dtype_name(dtype),
        hint="_arange",
    )


@functools.cache
def _op_function(name: str, prop_cls: type) -> Callable[..., Symbol]:
    def function(*args: Any, **kwargs: Any) -> Symbol:
        return create(name, *args, **kwargs)

    function.__name__ = name
    function.__qualname__ = name
    function.__module__ = __name__
    function.__doc__ = registry.make_docstring(name)
    return function


def __getattr__(name: str) -> Callable[..., Symbol]:
    """``mx.sym.<Name>``: the registered operator ``Name`` as a symbol-building function."""
    info = registry.find(name)
    if info is None or name.startswith("__"):
        raise AttributeError(f"module 'mxnb.symbol' has no attribute {name!r}")
    return _op_function(name, info.prop_cls)


def __dir__() -> list[str]:
    ops = [name for name in registry.list_ops() if not name.startswith("_")]
    return sorted(set(globals()) | set(ops))
