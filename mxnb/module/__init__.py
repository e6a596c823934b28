"""``mx.mod`` / ``mx.module``: MXNet's Module API (bind / fit / score / predict, data parallel).

:mod:`.base_module` holds the loops (``fit``, ``score``, ``predict``),
:mod:`.module` the :class:`Module` (parameters, optimizer, kvstore),
:mod:`.bucketing_module` the :class:`BucketingModule` (one Module per bucket
key, parameters shared) and :mod:`.executor_group` the data-parallel executors.

Example::

    >>> import mxnb as mx
    >>> mx.mod.Module is mx.module.Module
    True
"""

from .base_module import BaseModule, BatchEndParam
from .bucketing_module import BucketingModule
from .executor_group import DataParallelExecutorGroup
from .module import Module

__all__ = ["BaseModule", "BatchEndParam", "BucketingModule", "DataParallelExecutorGroup", "Module"]
