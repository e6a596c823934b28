"""``mx.optimizer``: optimizers, the Updater and learning-rate schedules (MXNet 1.x names).

Idea (MXNet: python/mxnet/optimizer/): :mod:`.optimizer` holds the base
class, the registry (``create('sgd', ...)``) and the :class:`Updater` that a
KVStore calls; :mod:`.sgd` the momentum methods; :mod:`.adaptive` Adam,
AdaGrad, RMSProp, AdaDelta and FTRL; :mod:`.lr_scheduler` the schedules
(also ``mx.lr_scheduler``).  Each step runs the fused update operators of
:mod:`mxnb.operator.ops.optimizer_ops` on the engine.

Example::

    >>> import mxnb as mx
    >>> type(mx.optimizer.create('adam')).__name__
    'Adam'
"""

from . import lr_scheduler
from .adaptive import AdaDelta, AdaGrad, Adam, Ftrl, RMSProp
from .lr_scheduler import (
    CosineScheduler,
    FactorScheduler,
    LRScheduler,
    MultiFactorScheduler,
    PolyScheduler,
)
from .optimizer import Optimizer, Updater, create, get_updater, register
from .sgd import NAG, SGD, Signum

__all__ = [
    "NAG",
    "SGD",
    "AdaDelta",
    "AdaGrad",
    "Adam",
    "CosineScheduler",
    "FactorScheduler",
    "Ftrl",
    "LRScheduler",
    "MultiFactorScheduler",
    "Optimizer",
    "PolyScheduler",
    "RMSProp",
    "Signum",
    "Updater",
    "create",
    "get_updater",
    "lr_scheduler",
    "register",
]
