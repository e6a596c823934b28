"""``gluon.Block`` / ``HybridBlock``: layers as Python objects over NDArray and Symbol.

Idea (MXNet: python/mxnet/gluon/block.py): a Block owns Parameters and child
Blocks and computes ``forward(x)``.  A HybridBlock writes its computation once,
``hybrid_forward(F, x, **params)``, where ``F`` is ``mx.nd`` for NDArray input
(the parameters come as their arrays) and ``mx.sym`` for Symbol input (they
come as Variables).  ``hybridize()`` traces that function into one Symbol and
runs it as a :class:`mxnb.ndarray.CachedOp`, so autograd records it like any
other call.

Rule: names are scoped as in MXNet.  A Block created outside any Block gets the
prefix ``<hint><n>_`` from the thread's NameManager; one created inside a
parent's ``name_scope()`` gets ``<parent prefix><hint><n>_`` from the parent's
own counters.  :class:`_BlockScope` is the thread-local "current parent", and
inside it ``NameManager.current`` is a :class:`Prefix` of the block's prefix,
so symbols named there carry it too.

State kept: children and parameters per Block; per hybridized Block the traced
CachedOp, keyed by the input shapes and dtypes.

Example::

    >>> import mxnb as mx
    >>> net = mx.gluon.nn.Dense(2, in_units=3, prefix='fc_')
    >>> net.initialize(mx.init.One())
    >>> net(mx.nd.ones((1, 3))).asnumpy().tolist()
    [[3.0, 3.0]]
    >>> sorted(net.collect_params().keys())
    ['fc_bias', 'fc_weight']
"""

from __future__ import annotations

import threading
import weakref
from collections import OrderedDict
from typing import Any

from ..base import MXNBError
from ..symbol.scope import NameManager, Prefix
from .parameter import ParameterDict

__all__ = ["Block", "HybridBlock"]


class _BlockScope:
    """The Block whose ``name_scope()`` is open in this thread, with its name counters."""

    _current = threading.local()

    def __init__(self, block: Any) -> None:
        self._block = weakref.ref(block) if block is not None else None
        self._counter: dict[str, int] = {}
        self._old_scope: _BlockScope | None = None
        self._name_scope: Prefix | None = None

    @staticmethod
    def create(
        prefix: str | None, params: ParameterDict | None, hint: str
    ) -> tuple[str, ParameterDict]:
        """The (prefix, ParameterDict) of a new Block, from the current scope (MXNet's rule)."""
        current = getattr(_BlockScope._current, "value", None)
        if current is None or current._block is None or current._block() is None:
            if prefix is None:
                prefix = NameManager.current.get(None, hint) + "_"
            if params is None:
                return prefix, ParameterDict(prefix)
            return prefix, ParameterDict(params.prefix, params)
        if prefix is None:
            count = current._counter.get(hint, 0)
            prefix = f"{hint}{count}_"
            current._counter[hint] = count + 1
        parent = current._block()
        if params is None:
            params = ParameterDict(parent.params.prefix + prefix, parent.params._shared)
        else:
            params = ParameterDict(params.prefix, params)
        return parent.prefix + prefix, params

    def __enter__(self) -> _BlockScope:
        block = self._block() if self._block is not None else None
        if block is None or getattr(block, "_empty_prefix", False):
            return self
        self._old_scope = getattr(_BlockScope._current, "value", None)
        _BlockScope._current.value = self
        self._name_scope = Prefix(block.prefix)
        self._name_scope.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._name_scope is None:
            return
        self._name_scope.__exit__(*exc)
        self._name_scope = None
        _BlockScope._current.value = self._old_scope


class Block:
    """A layer: parameters, children, ``forward``; call it on NDArrays (or Symbols)."""

    def __init__(self, prefix: str | None = None, params: ParameterDict | None = None) -> None:
        self._empty_prefix = prefix == ""
        self._prefix, self._params = _BlockScope.create(prefix, params, self._alias())
        self._name = self._prefix[:-1] if self._prefix.endswith("_") else self._prefix
        self._profiler_scope_name = self._prefix
        self._scope = _BlockScope(self)
        self.__dict__.setdefault("_children", OrderedDict())
        self.__dict__.setdefault("_reg_params", {})

    def _alias(self) -> str:
        return type(self).__name__.lower()

    def __setattr__(self, name: str, value: Any) -> None:
        from .parameter import Parameter

        if isinstance(value, Block):
            self.__dict__.setdefault("_children", OrderedDict())[name] = value
        elif isinstance(value, Parameter):
            self.__dict__.setdefault("_reg_params", {})[name] = value
        super().__setattr__(name, value)

    def __repr__(self) -> str:
        inner = "".join(f"\n  ({key}): {child!r}" for key, child in self._children.items())
        return f"{type(self).__name__}({inner}\n)" if inner else f"{type(self).__name__}()"

    @property
    def prefix(self) -> str:
        """The name prefix of this block's parameters and symbols."""
        return self._prefix

    @property
    def name(self) -> str:
        """The prefix without its trailing underscore."""
        return self._name

    @property
    def params(self) -> ParameterDict:
        """This block's own parameters (not its children's)."""
        return self._params

    def name_scope(self) -> _BlockScope:
        """``with block.name_scope():`` children created inside get this block's prefix."""
        return self._scope

    def register_child(self, block: Block, name: str | None = None) -> None:
        """Add ``block`` as a child (its parameters join ``collect_params``)."""
        self._children[name or str(len(self._children))] = block

    def collect_params(self, select: str | None = None) -> ParameterDict:
        """This block's and all its children's parameters, in creation order."""
        import re

        out = ParameterDict(self._params.prefix)
        pattern = re.compile(select) if select else None
        for key, value in self._params.items():
            if pattern is None or pattern.match(key):
                out._params[key] = value
        for child in self._children.values():
            out.update(child.collect_params(select))
        return out

    def initialize(self, init: Any = None, ctx: Any = None, verbose: bool = False,
                   force_reinit: bool = False) -> None:  # fmt: skip
        """Initialize every parameter (``init`` default: ``mx.init.Uniform()``)."""
        from .. import initializer

        self.collect_params().initialize(init or initializer.Uniform(), ctx, verbose, force_reinit)

    def hybridize(self, active: bool = True, **kwargs: Any) -> None:
        """Hybridize the HybridBlocks among the children (a plain Block runs as written)."""
        for child in self._children.values():
            child.hybridize(active, **kwargs)

    def __call__(self, *args: Any) -> Any:
        return self.forward(*args)

    def forward(self, *args: Any) -> Any:
        """The computation; subclasses define it."""
        raise NotImplementedError(f"{type(self).__name__} must define forward()")


class HybridBlock(Block):
    """A Block written once as ``hybrid_forward(F, x, **params)`` for NDArray and Symbol input."""

    def __init__(self, prefix: str | None = None, params: ParameterDict | None = None) -> None:
        super().__init__(prefix, params)
        self._active = False
        self._cached: dict[tuple[Any, ...], tuple[Any, list[Any]]] = {}

    def hybridize(self, active: bool = True, **kwargs: Any) -> None:
        """From now on run NDArray calls through one traced graph (a CachedOp)."""
        self._active = active
        self._cached.clear()
        super().hybridize(active, **kwargs)

    def infer_shape(self, *args: Any) -> None:
        """Complete deferred parameter shapes from the first inputs (layers override this)."""

    def forward(self, x: Any, *args: Any) -> Any:
        """Dispatch to ``hybrid_forward`` with ``mx.nd`` or ``mx.sym``, or to the traced graph."""
        from .. import ndarray, symbol

        if isinstance(x, symbol.Symbol):
            params = {key: param.var() for key, param in self._reg_params.items()}
            return self.hybrid_forward(symbol, x, *args, **params)
        self.infer_shape(x, *args)
        pending = any(p._data is None for p in self.collect_params().values())
        if self._active and not pending:
            return self._call_cached(x, *args)
        params = {key: param.data() for key, param in self._reg_params.items()}
        return self.hybrid_forward(ndarray, x, *args, **params)

    def _call_cached(self, *inputs: Any) -> Any:
        from .. import ndarray, symbol

        key = tuple((a.shape, str(a.dtype)) for a in inputs)
        if key not in self._cached:
            names = [f"data{i}" if i else "data" for i in range(len(inputs))]
            graph = self(*[symbol.Variable(n) for n in names])
            if isinstance(graph, (list, tuple)):
                graph = symbol.Group(list(graph))
            by_name = dict(zip(names, range(len(inputs))))
            params = {p.name: p for p in self.collect_params().values()}
            order = [by_name.get(n, params.get(n)) for n in graph.list_inputs()]
            if any(item is None for item in order):
                raise MXNBError(f"{self.name}: hybridized graph has inputs {graph.list_inputs()} "
                                "that are neither the call's inputs nor parameters")  # fmt: skip
            self._cached[key] = (ndarray.CachedOp(graph), order)
        op, order = self._cached[key]
        arrays = [inputs[item] if isinstance(item, int) else item.data() for item in order]
        return op(*arrays)

    def hybrid_forward(self, F: Any, x: Any, *args: Any, **params: Any) -> Any:
        """The computation with ``F`` = ``mx.nd`` or ``mx.sym``; subclasses define it."""
        raise NotImplementedError(f"{type(self).__name__} must define hybrid_forward()")
