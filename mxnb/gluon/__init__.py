"""``mx.gluon``: MXNet's imperative front end, at the depth its core tests use.

Blocks (:mod:`.block`) hold Parameters (:mod:`.parameter`) and run their
``hybrid_forward`` on NDArrays, on Symbols, or hybridized as one CachedOp;
:mod:`.nn` has Dense, Dropout, Activation and the Sequential containers.
Trainer, losses, data loaders and the model zoo are not rebuilt.
"""

from . import block, nn, parameter
from .block import Block, HybridBlock
from .parameter import DeferredInitializationError, Parameter, ParameterDict

__all__ = [
    "Block",
    "DeferredInitializationError",
    "HybridBlock",
    "Parameter",
    "ParameterDict",
    "block",
    "nn",
    "parameter",
]
