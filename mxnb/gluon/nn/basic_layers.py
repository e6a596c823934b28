"""``gluon.nn``'s basic layers: Sequential, HybridSequential, Dense, Dropout, Activation.

Idea (MXNet: python/mxnet/gluon/nn/basic_layers.py): each layer is a
HybridBlock whose ``hybrid_forward`` calls one operator (``FullyConnected``,
``Dropout``, ``Activation``) through ``F``, so the same layer runs on NDArrays,
inside ``autograd.record()``, on Symbols, and hybridized.

Rule: ``Dense(units, in_units=0)`` leaves the weight's second axis unknown
until the first input arrives; then ``in_units`` is the product of the
input's non-batch axes (``flatten=True``) or its last axis (``flatten=False``)
and the deferred weight is created.  ``Sequential.add`` takes several blocks.

State kept: the layer's settings and its Parameters.

Example::

    >>> import mxnb as mx
    >>> net = mx.gluon.nn.Sequential()
    >>> net.add(mx.gluon.nn.Dense(4, activation='relu'), mx.gluon.nn.Dense(2))
    >>> net.initialize(mx.init.One())
    >>> net(mx.nd.ones((3, 5))).shape
    (3, 2)
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..block import Block, HybridBlock

__all__ = ["Activation", "Dense", "Dropout", "HybridSequential", "Sequential"]


class Sequential(Block):
    """Run the added blocks one after the other."""

    def add(self, *blocks: Block) -> None:
        """Append ``blocks`` (in order)."""
        for block in blocks:
            self.register_child(block)

    def forward(self, x: Any) -> Any:
        """Each child's output is the next child's input."""
        for block in self._children.values():
            x = block(x)
        return x

    def __len__(self) -> int:
        return len(self._children)

    def __getitem__(self, index: int) -> Block:
        return list(self._children.values())[index]


class HybridSequential(HybridBlock):
    """Sequential for HybridBlocks: hybridizes as one graph."""

    def add(self, *blocks: Block) -> None:
        """Append ``blocks`` (in order)."""
        for block in blocks:
            self.register_child(block)

    def hybrid_forward(self, F: Any, x: Any) -> Any:
        """Each child in turn (hybridized: the chain is traced as one graph)."""
        for block in self._children.values():
            x = block(x)
        return x

    def __len__(self) -> int:
        return len(self._children)


class Dense(HybridBlock):
    """Fully connected layer: ``activation(dot(x, weight.T) + bias)``."""

    def __init__(self, units: int, activation: str | None = None, use_bias: bool = True,
                 flatten: bool = True, dtype: Any = np.float32, weight_initializer: Any = None,
                 bias_initializer: Any = "zeros", in_units: int = 0,
                 prefix: str | None = None, params: Any = None) -> None:  # fmt: skip
        super().__init__(prefix, params)
        self._units = int(units)
        self._flatten = flatten
        self._activation = activation
        self._use_bias = use_bias
        with self.name_scope():
            self.weight = self.params.get("weight", shape=(units, in_units), dtype=dtype,
                                          init=weight_initializer)  # fmt: skip
            if use_bias:
                self.bias = self.params.get("bias", shape=(units,), dtype=dtype,
                                            init=bias_initializer)  # fmt: skip

    def _alias(self) -> str:
        return "dense"

    def infer_shape(self, x: Any, *args: Any) -> None:
        """Set ``in_units`` from the first input and create a deferred weight."""
        in_units = int(np.prod(x.shape[1:])) if self._flatten else int(x.shape[-1])
        self.weight._finish_deferred_init((self._units, in_units))
        if self._use_bias:
            self.bias._finish_deferred_init((self._units,))

    def hybrid_forward(self, F: Any, x: Any, weight: Any, bias: Any = None) -> Any:
        """``FullyConnected`` then the activation, if any."""
        out = F.FullyConnected(x, weight, bias, no_bias=bias is None, num_hidden=self._units,
                               flatten=self._flatten, name="fwd")  # fmt: skip
        if self._activation is not None:
            out = F.Activation(out, act_type=self._activation, name="fwd")
        return out


class Dropout(HybridBlock):
    """Dropout with rate ``rate`` (identity outside training)."""

    def __init__(self, rate: float, axes: tuple[int, ...] = (), **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._rate = rate
        self._axes = axes

    def hybrid_forward(self, F: Any, x: Any) -> Any:
        """``Dropout(x, p=rate, axes=axes)``."""
        if self._axes:
            return F.Dropout(x, p=self._rate, axes=self._axes, name="fwd")
        return F.Dropout(x, p=self._rate, name="fwd")


class Activation(HybridBlock):
    """An activation function by name (``'relu'``, ``'tanh'``, ``'sigmoid'`` ...)."""

    def __init__(self, activation: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._act_type = activation

    def _alias(self) -> str:
        return self._act_type

    def hybrid_forward(self, F: Any, x: Any) -> Any:
        """``Activation(x, act_type)``."""
        return F.Activation(x, act_type=self._act_type, name="fwd")
