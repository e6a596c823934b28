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
from .base import MXNBError, MXNetError
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
from . import test_utils
from . import util
from .util import is_np_shape, np_shape, set_np_shape, use_np_shape
from . import runtime
from . import name
from . import attribute
from .attribute import AttrScope
from . import widgets
from . import io
from . import optimizer
from .optimizer import lr_scheduler
from . import initializer
from . import initializer as init
from . import gluon
from . import metric
from . import kvstore
from . import kvstore as kv
from . import model
from . import module
from . import module as mod
from . import callback
from . import recordio
from . import image
from . import exercises  # on top of engine, executor and widgets: nothing below imports it

__version__ = "0.1.0"

# Inside a Jupyter kernel: the lab extension's engine panels connect to this comm target
# (mxnb/widgets/lab.py; nothing is recorded until a panel is open).
from .widgets.lab import register_comm_target as _register_comm_target

_register_comm_target()

__all__ = [
    "AttrScope",
    "Context",
    "MXNBError",
    "MXNetError",
    "RunContext",
    "attribute",
    "autograd",
    "base",
    "callback",
    "context",
    "cpu",
    "cpu_pinned",
    "current_context",
    "engine",
    "executor",
    "exercises",
    "gpu",
    "init",
    "gluon",
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
    "name",
    "nd",
    "ndarray",
    "num_gpus",
    "operator",
    "optimizer",
    "random",
    "recordio",
    "resource",
    "rnn",
    "runtime",
    "storage",
    "sym",
    "symbol",
    "test_utils",
    "testing",
    "util",
    "is_np_shape",
    "np_shape",
    "set_np_shape",
    "use_np_shape",
    "widgets",
]
