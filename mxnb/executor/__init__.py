"""The graph executor: gradient graph, memory planning and execution through the engine.

Modules, in the order data flows:
    plan.py      the MemoryPlan data objects (entries, storage blocks, figures)

Example::

    >>> from mxnb.executor import EXTERNAL_STORAGE_ID, EntryKind
    >>> EXTERNAL_STORAGE_ID, EntryKind.FORWARD.value
    (-1, 'forward')
"""

from .plan import EXTERNAL_STORAGE_ID, EntryKind, MemoryPlan, PlanEntry, StorageBlock

__all__ = [
    "EXTERNAL_STORAGE_ID",
    "EntryKind",
    "MemoryPlan",
    "PlanEntry",
    "StorageBlock",
]
