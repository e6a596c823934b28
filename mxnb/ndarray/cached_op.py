"""``mx.nd.CachedOp``: a Symbol called like an operator on NDArrays.

Idea (MXNet: src/imperative/cached_op.cc): a CachedOp wraps a symbol so that
imperative code can call the whole graph as one function,
``op(data, weight, bias)``.  MXNet compiles the graph once and reuses it; in
mxnb each node of the graph is invoked imperatively in topological order, so
every node is one engine op and autograd records it like any other call
(gradients flow through a CachedOp inside ``autograd.record()``).

Rule: the inputs are the symbol's variables in ``list_inputs()`` order
(arguments and auxiliary states as they appear in the graph); an auxiliary
state is updated in place, as a node of the graph would update it.
``out=`` writes the outputs into given arrays.  ``flags`` (MXNet's static
allocation / bulking switches) are accepted and ignored.

State kept: the symbol and its node order, computed once.

Example::

    >>> import mxnb as mx
    >>> x = mx.sym.Variable('x')
    >>> op = mx.nd.CachedOp(x * 2 + 1)
    >>> op(mx.nd.array([1.0, 2.0])).asnumpy().tolist()
    [3.0, 5.0]
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..base import MXNBError
from .invoke import invoke
from .ndarray import NDArray

__all__ = ["CachedOp"]


class CachedOp:
    """Call ``sym`` on NDArrays: ``CachedOp(sym)(*inputs, out=None)``."""

    def __init__(self, sym: Any, flags: Sequence[Any] = ()) -> None:
        from ..symbol.graph import topo_sort

        self.sym = sym
        self.flags = tuple(flags)
        self._order = topo_sort(sym._outputs)
        self._variables = [node for node in self._order if node.is_variable]

    def __call__(self, *args: NDArray, out: Any = None) -> NDArray | list[NDArray]:
        """Run the graph on ``args`` (one per input); one NDArray or a list, as the symbol has."""
        if len(args) != len(self._variables):
            names = [node.name for node in self._variables]
            raise MXNBError(
                f"CachedOp: the symbol has {len(names)} inputs {names}, but {len(args)} "
                f"arrays were given; pass one NDArray per input, in that order"
            )
        values: dict[tuple[int, int], NDArray] = {}
        for node, array in zip(self._variables, args):
            values[(id(node), 0)] = array
        for node in self._order:
            if node.is_variable:
                continue
            inputs = [values[(id(entry.node), entry.index)] for entry in node.inputs]
            count = node.num_arguments()
            outputs = invoke(node.op, inputs[:count], aux=inputs[count:] or None, name=node.name)
            for index, output in enumerate(outputs):
                values[(id(node), index)] = output
        results = [values[(id(entry.node), entry.index)] for entry in self.sym._outputs]
        if out is not None:
            targets = [out] if isinstance(out, NDArray) else list(out)
            for target, result in zip(targets, results):
                result.copyto(target)
            return out
        return results[0] if len(results) == 1 else results
