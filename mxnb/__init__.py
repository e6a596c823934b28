"""mxnb: Apache MXNet's system architecture rebuilt in Python and made visible in Jupyter.

A dependency engine, storage allocator, resource manager, NDArray, operator
library, Symbol and a graph executor with memory planning, plus notebook
widgets that draw the dependency DAG, memory reuse and the engine timeline.

Example::

    >>> import mxnb as mx
    >>> mx.current_context()
    cpu(0)
"""

from . import base
from .base import MXNBError
from .context import Context, RunContext, cpu, cpu_pinned, current_context, gpu, num_gpus
from . import context
from . import engine
from . import storage
from . import resource
from . import random
from . import operator
from . import ndarray
from . import ndarray as nd
from . import symbol
from . import symbol as sym
from . import executor
from . import autograd
from . import rnn
from . import testing
from . import widgets
from . import io
from . import optimizer
from .optimizer import lr_scheduler
from . import initializer
from . import initializer as init
from . import metric
from . import kvstore
from . import kvstore as kv
from . import model
from . import module
from . import module as mod
from . import callback
from . import recordio
from . import image

__version__ = "0.1.0"

__all__ = [
    "Context",
    "MXNBError",
    "RunContext",
    "autograd",
    "base",
    "callback",
    "context",
    "cpu",
    "cpu_pinned",
    "current_context",
    "engine",
    "executor",
    "gpu",
    "init",
    "initializer",
    "image",
    "io",
    "kv",
    "kvstore",
    "lr_scheduler",
    "metric",
    "mod",
    "model",
    "module",
    "nd",
    "ndarray",
    "num_gpus",
    "operator",
    "optimizer",
    "random",
    "recordio",
    "resource",
    "rnn",
    "storage",
    "sym",
    "symbol",
    "testing",
    "widgets",
]
