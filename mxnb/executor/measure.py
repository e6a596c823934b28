"""Measuring a plan: the bytes the storage pool really held, against the bytes planned.

Idea: a memory plan is a promise — "a forward and backward pass of this
graph holds ``internal_bytes`` of intermediates and ``workspace_bytes`` of
scratch" — and a promise is only worth what a measurement confirms.
PyTorch's ``activation_memory_budget`` shows why (pytorch/pytorch#197838): it
counts saved activations, while recomputed tensors stay alive across a
block, so its real peak is not even monotone in the budget.  Here the
executor allocates one block per planned storage id at bind, exactly the
planned size (:func:`mxnb.storage.alloc_exact`), and the context's temp
space grows to the largest request an op states (``temp_space_bytes``), so
the pool's high-water mark over bind, forward and backward, less the bound
arrays, is the plan's :attr:`~.plan.MemoryPlan.total_bytes`.

Rule: :func:`measure_peak` binds the plan on a context of its own (nothing
else allocates there), runs one training step and reads
:meth:`mxnb.storage.StorageManager.stats`; the arguments, their gradients,
the aux states and the head gradients are bound arrays, not planned, and
are left out.  What the pool never lends — numpy temporaries inside a
kernel — is not measured here (nor by MXNet's own figure).

State kept: none.

Example::

    >>> import mxnb as mx
    >>> from mxnb.executor import zoo
    >>> from mxnb.executor.planning import plan_graph_and_memory
    >>> graph, plan = plan_graph_and_memory(zoo.lenet(), {'data': (2, 1, 28, 28)})
    >>> measure_peak(zoo.lenet(), graph, plan, mx.cpu(96)) == plan.total_bytes
    True
"""

from __future__ import annotations

from typing import Any

from .. import storage
from ..context import Context
from ..ndarray import creation as _nd
from .executor import Executor
from .plan import MemoryPlan
from .sharing import bound_arrays
from .steps import ExecGraph

__all__ = ["measure_peak"]


def measure_peak(sym: Any, graph: ExecGraph, plan: MemoryPlan, ctx: Context) -> int:
    """Bytes the storage pool of ``ctx`` held beyond the bound arrays over bind + one training step.

    ``ctx`` should be a context nothing else allocates on meanwhile (a
    ``mx.cpu(n)`` of its own): every allocation on it is counted.
    """
    args, grads, aux = bound_arrays(graph, ctx, None, None, None)
    _nd.waitall()
    manager = storage.get_manager(ctx)
    before = manager.stats().bytes_in_use
    manager.reset_peak()
    exe = Executor(sym, ctx, graph, plan, args, grads, aux)
    heads = sum(_capacity(array) for array in exe._head_grads.values())
    exe.forward(is_train=True)
    exe.backward()
    _nd.waitall()
    return manager.stats().peak_bytes - before - heads


def _capacity(array: Any) -> int:
    """Bytes the pool lent for ``array`` (its block's capacity)."""
    handle = array.handle
    return 0 if handle is None else int(handle.capacity)
