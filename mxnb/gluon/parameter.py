"""``gluon.Parameter`` / ``ParameterDict``: named arrays a Block trains.

Idea (MXNet: python/mxnet/gluon/parameter.py): a Parameter is a name, a shape
that may still hold unknown (0) axes, a gradient request and, once initialized,
one NDArray with an attached gradient.  Imperative code reads it with
``data()``; symbolic code reads it as ``var()``, a Variable of the same name.
A ParameterDict is an ordered name -> Parameter map under one prefix.

Rule: a Parameter whose shape is not known when ``initialize`` is called is
*deferred*: it is created on the first forward pass, when the Block that owns
it sets the missing axes (``_finish_deferred_init``).  ``data()`` before that
raises :class:`DeferredInitializationError` naming the parameter.

State kept: the array (``_data``) and the deferred (initializer, context)
pair until the shape is complete.

Example::

    >>> import mxnb as mx
    >>> p = mx.gluon.Parameter('w', shape=(2, 3))
    >>> p.initialize(mx.init.One())
    >>> float(p.data().asnumpy().sum()), p.grad().shape
    (6.0, (2, 3))
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterator
from typing import Any

import numpy as np

from ..base import MXNBError
from ..context import Context, current_context

__all__ = ["DeferredInitializationError", "Parameter", "ParameterDict"]


class DeferredInitializationError(MXNBError):
    """A parameter's data was read before its shape was known (before the first forward)."""


def _first_context(ctx: Any) -> Context:
    """MXNet's ``ctx`` argument: one Context, a list of them (the first is used), or None."""
    if ctx is None:
        return current_context()
    if isinstance(ctx, (list, tuple)):
        return ctx[0] if ctx else current_context()
    return ctx


class Parameter:
    """A named, trainable array: ``Parameter(name, grad_req='write', shape=None, dtype, init)``."""

    def __init__(
        self,
        name: str,
        grad_req: str = "write",
        shape: Any = None,
        dtype: Any = np.float32,
        init: Any = None,
        allow_deferred_init: bool = False,
    ) -> None:
        self.name = name
        self.grad_req = grad_req
        self._shape = tuple(shape) if isinstance(shape, (tuple, list)) else (
            (int(shape),) if shape is not None else None)  # fmt: skip
        self.dtype = dtype
        self.init = init
        self._allow_deferred_init = allow_deferred_init
        self._data: Any = None
        self._deferred: tuple[Any, Context] | None = None
        self._var: Any = None

    def __repr__(self) -> str:
        return f"Parameter {self.name} (shape={self.shape}, dtype={np.dtype(self.dtype).name})"

    @property
    def shape(self) -> tuple[int, ...] | None:
        """The shape; 0 marks an axis not known yet."""
        return self._shape

    @shape.setter
    def shape(self, new: Any) -> None:
        new = tuple(int(d) for d in new)
        old = self._shape
        if old is not None and (len(old) != len(new)
                                or any(o not in (0, n) for o, n in zip(old, new))):  # fmt: skip
            raise MXNBError(
                f"Parameter {self.name!r}: shape {new} does not match the declared {old}; "
                "only axes declared 0 (unknown) may be set"
            )
        self._shape = new

    def _known(self) -> bool:
        return self._shape is not None and all(d > 0 for d in self._shape)

    def initialize(self, init: Any = None, ctx: Any = None, default_init: Any = None,
                   force_reinit: bool = False) -> None:  # fmt: skip
        """Create the array with ``init`` (else the parameter's own, else ``default_init``)."""
        from .. import initializer

        if self._data is not None and not force_reinit:
            return
        chosen = self.init if self.init is not None else init
        chosen = chosen if chosen is not None else (default_init or initializer.Uniform())
        context = _first_context(ctx)
        if not self._known():
            self._deferred = (chosen, context)
            return
        self._create(chosen, context)

    def _create(self, init: Any, ctx: Context) -> None:
        from .. import ndarray as nd
        from ..initializer import InitDesc, create

        if isinstance(init, str):
            init = create(init)
        data = nd.zeros(self._shape, ctx=ctx, dtype=self.dtype)
        # as MXNet's Gluon: the chosen initializer fills the array whatever its name
        init._init_weight(InitDesc(self.name), data)
        if self.grad_req != "null":
            data.attach_grad(grad_req=self.grad_req)
        _name_arrays(self.name, data)
        self._data = data
        self._deferred = None

    def _finish_deferred_init(self, shape: Any) -> None:
        """Set the unknown axes from the first input and create the array (Blocks call this)."""
        self.shape = shape
        if self._data is None and self._deferred is not None:
            self._create(*self._deferred)

    def data(self, ctx: Any = None) -> Any:
        """The array; raises :class:`DeferredInitializationError` before it exists."""
        if self._data is None:
            state = "waits for its first forward pass (its shape is "
            state += f"{self._shape})" if self._deferred else "was never initialized)"
            raise DeferredInitializationError(
                f"Parameter {self.name!r} {state}; call block.initialize() and run the block once"
            )
        return self._data

    def list_data(self) -> list[Any]:
        """The array on each context (one here)."""
        return [self.data()]

    def grad(self, ctx: Any = None) -> Any:
        """The gradient array (``grad_req`` 'null' has none)."""
        data = self.data()
        if data.grad is None:
            raise MXNBError(f"Parameter {self.name!r} has grad_req='null': it has no gradient")
        return data.grad

    def set_data(self, data: Any) -> None:
        """Overwrite the values (the shape must match)."""
        self.data()[:] = data

    def zero_grad(self) -> None:
        """Set the gradient to zeros."""
        if self._data is not None and self._data.grad is not None:
            self._data.grad[:] = 0

    def var(self) -> Any:
        """The symbol Variable for this parameter (same name, shape and dtype)."""
        from .. import symbol

        if self._var is None:
            self._var = symbol.Variable(self.name, shape=self._shape, dtype=self.dtype)
        return self._var


def _name_arrays(name: str, data: Any) -> None:
    """Name the parameter's array and gradient in traces (``dense0_weight``, ``dense0_weight.grad``)."""
    from .. import engine

    eng = engine.get()
    eng.name_var(data._var, name)
    if data.grad is not None:
        eng.name_var(data.grad._var, f"{name}.grad")


class ParameterDict:
    """Ordered ``name -> Parameter`` under ``prefix``; ``get`` creates or returns one."""

    def __init__(self, prefix: str = "", shared: ParameterDict | None = None) -> None:
        self.prefix = prefix
        self._params: OrderedDict[str, Parameter] = OrderedDict()
        self._shared = shared

    def __repr__(self) -> str:
        body = "\n".join(f"  {param!r}" for param in self._params.values())
        return f"{self.prefix} (\n{body}\n)"

    def __getitem__(self, key: str) -> Parameter:
        return self._params[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._params)

    def __len__(self) -> int:
        return len(self._params)

    def __contains__(self, key: object) -> bool:
        return key in self._params

    def keys(self) -> Any:
        """The full parameter names."""
        return self._params.keys()

    def values(self) -> Any:
        """The Parameters."""
        return self._params.values()

    def items(self) -> Any:
        """``(name, Parameter)`` pairs."""
        return self._params.items()

    def get(self, name: str, **kwargs: Any) -> Parameter:
        """The parameter ``prefix + name``: the shared one, an existing one, or a new one."""
        full = self.prefix + name
        if full not in self._params:
            if self._shared is not None and full in self._shared._params:
                self._params[full] = self._shared._params[full]
            else:
                self._params[full] = Parameter(full, **kwargs)
        return self._params[full]

    def update(self, other: ParameterDict) -> None:
        """Add ``other``'s parameters (a name held by two different Parameters is refused)."""
        for key, value in other.items():
            if key in self._params and self._params[key] is not value:
                raise MXNBError(f"ParameterDict.update: two different parameters named {key!r}")
            self._params[key] = value

    def initialize(self, init: Any = None, ctx: Any = None, verbose: bool = False,
                   force_reinit: bool = False) -> None:  # fmt: skip
        """Initialize every parameter (deferred where the shape is not known yet)."""
        for param in self._params.values():
            param.initialize(init, ctx, force_reinit=force_reinit)

    def zero_grad(self) -> None:
        """Zero every gradient."""
        for param in self._params.values():
            param.zero_grad()
