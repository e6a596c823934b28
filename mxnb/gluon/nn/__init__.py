"""``mx.gluon.nn``: neural-network layers as Blocks (see :mod:`.basic_layers`)."""

from .basic_layers import Activation, Dense, Dropout, HybridSequential, Sequential

__all__ = ["Activation", "Dense", "Dropout", "HybridSequential", "Sequential"]
