"""Measuring a plan: the bytes the storage pool really held, and the time its steps took.

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
are left out.  What the pool never lends — the temporaries a kernel makes
with numpy (or, on a GPU, cupy) — is not in the plan, nor in MXNet's own
figure; :func:`measure_temporaries` measures their high-water mark over a
training step with :mod:`tracemalloc`, which numpy reports its arrays to.  On
a GPU they come from the same device pool as the plan's blocks, so the two
together are what the device must hold.

Time is measured, not only counted: :func:`op_times` times every step of a
training step once (a per-op timing table), and :func:`predicted_overhead`
states a plan's extra time as the table's seconds of its recompute steps,
beside :func:`flops_overhead`, the FLOPs prediction.  Handed to the planner
(``plan_memory(..., op_times=table)``), the table replaces FLOPs as the cost
a budget search minimises.

State kept: none.

Example::

    >>> import mxnb as mx
    >>> from mxnb.executor import zoo
    >>> from mxnb.executor.planning import plan_graph_and_memory
    >>> graph, plan = plan_graph_and_memory(zoo.lenet(), {'data': (2, 1, 28, 28)})
    >>> measure_peak(zoo.lenet(), graph, plan, mx.cpu(96)) == plan.total_bytes
    True
    >>> measured = measure_plan(zoo.mlp(), {'data': (8, 784)}, recompute='mirror')
    >>> measured.measured_bytes == measured.plan.total_bytes
    True
"""

from __future__ import annotations

import itertools
import tracemalloc
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

from .. import engine as _engine
from .. import storage
from ..context import Context
from ..operator.fused import is_cupy
from ..ndarray import creation as _nd
from .executor import Executor
from .plan import MemoryPlan
from .planning import plan_graph_and_memory
from .sharing import bound_arrays
from .steps import ExecGraph


__all__ = [
    "PlanMeasurement",
    "allocation_peak",
    "flops_overhead",
    "measure_peak",
    "measure_plan",
    "measure_temporaries",
    "op_times",
    "predicted_overhead",
    "training_step",
]

#: A training step's FLOPs in forward passes: backward computes two products per forward one
#: (the data's gradient and the weights'), the rule of thumb the FLOPs prediction uses.
STEP_IN_FORWARDS = 3.0


def measure_peak(sym: Any, graph: ExecGraph, plan: MemoryPlan, ctx: Context) -> int:
    """Bytes the storage pool of ``ctx`` held beyond the bound arrays over bind + one training step.

    ``ctx`` should be a context nothing else allocates on meanwhile (a
    ``mx.cpu(n)`` of its own): every allocation on it is counted.
    """
    return _bind_and_step(sym, graph, plan, ctx)[0]


def _bind_and_step(
    sym: Any, graph: ExecGraph, plan: MemoryPlan, ctx: Context
) -> tuple[int, Executor]:
    """:func:`measure_peak`'s figure, and the executor it bound."""
    args, grads, aux = bound_arrays(graph, ctx, None, None, None)
    _nd.waitall()
    manager = storage.get_manager(ctx)
    before = manager.stats().bytes_in_use
    manager.reset_peak()
    exe = Executor(sym, ctx, graph, plan, args, grads, aux)
    heads = sum(_capacity(array) for array in exe._head_grads.values())
    training_step(exe)
    return manager.stats().peak_bytes - before - heads, exe


def measure_temporaries(exe: Executor) -> int:
    """The high-water mark of what a training step of ``exe`` allocates outside its plan (bytes).

    Kernel temporaries, mostly: one step runs first (so the pool's blocks and
    the temp space exist), then a second under :mod:`tracemalloc`; the figure
    is its peak beyond what was allocated when it began.  Concurrent ops'
    temporaries add up, as they would on a device.  Only arrays whose memory
    numpy or Python allocate are seen (a CPU context); an already running
    ``tracemalloc`` is left running.
    """
    training_step(exe)
    return allocation_peak(lambda: training_step(exe))


def allocation_peak(function: Callable[[], Any]) -> int:
    """The most ``function()`` held allocated at once beyond what was allocated when it began.

    In bytes, by :mod:`tracemalloc` (numpy reports its arrays to it); an
    already running ``tracemalloc`` is left running.
    """
    running = tracemalloc.is_tracing()
    if not running:
        tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        before = tracemalloc.get_traced_memory()[0]
        function()
        return max(tracemalloc.get_traced_memory()[1] - before, 0)
    finally:
        if not running:
            tracemalloc.stop()


class PlanMeasurement(NamedTuple):
    """A plan and what a real training step held: ``measured_bytes`` against ``plan.total_bytes``,
    and ``temporaries_bytes``, what its kernels allocated beside it (:func:`measure_temporaries`;
    None when not measured)."""

    plan: MemoryPlan
    measured_bytes: int  # the pool's high-water mark beyond the bound arrays (measure_peak)
    ctx: Context  # where it was measured
    temporaries_bytes: int | None = None  # kernel temporaries outside the plan, at their peak

    @property
    def ratio(self) -> float:
        """Measured over planned total bytes (1.0: the plan held exactly)."""
        return self.measured_bytes / self.plan.total_bytes if self.plan.total_bytes else 1.0


#: device ids of the CPU contexts measure_plan makes: far above any a user or test picks
_MEASURE_CONTEXTS = itertools.count(1 << 16)


def measure_plan(
    sym: Any, shapes: Mapping[str, tuple], ctx: Context | None = None, **plan_args: Any
) -> PlanMeasurement:
    """Plan ``sym`` at ``shapes`` (``plan_args`` as :func:`~.planning.plan_memory` takes them)
    and measure it: the plan beside the bytes one training step really held, and the
    kernels' temporaries beside them (:func:`measure_temporaries`, two steps more; not
    on a real GPU, where cupy's memory is not traced).

    ``ctx``: where to measure (default: a CPU context of its own, so nothing
    else allocates there).  On a GPU, pass it, and run nothing else on it
    meanwhile.  Show the result with ``mx.widgets.MemoryPlanView(measurement)``.
    """
    own = ctx is None
    if ctx is None:
        ctx = Context("cpu", next(_MEASURE_CONTEXTS))
    elif not isinstance(ctx, Context):
        raise TypeError(
            f"measure_plan: ctx must be an mx.Context such as mx.cpu(1) or mx.gpu(0), "
            f"got {type(ctx).__name__} {ctx!r}"
        )
    graph, plan = plan_graph_and_memory(sym, shapes, **plan_args)
    measured, exe = _bind_and_step(sym, graph, plan, ctx)
    # the kernels' temporaries, where tracemalloc sees them (numpy: not cupy's device memory)
    temporaries = None if is_cupy(ctx.array_module) else measure_temporaries(exe)
    del exe
    if own:  # the step's arrays are gone: hand the pool's cached blocks back
        _nd.waitall()
        storage.release_all(ctx)
    return PlanMeasurement(plan, measured, ctx, temporaries)


def _capacity(array: Any) -> int:
    """Bytes the pool lent for ``array`` (its block's capacity)."""
    handle = array.handle
    return 0 if handle is None else int(handle.capacity)


def training_step(exe: Executor) -> None:
    """One forward (training) and backward pass of ``exe``, waited for."""
    exe.forward(is_train=True)
    exe.backward()
    _nd.waitall()


def op_times(exe: Executor, repeats: int = 3) -> dict[str, float]:
    """A per-op timing table: step name -> its fastest run (seconds) over ``repeats`` steps.

    Measured once, on the plain plan: each step pushed as an engine op of
    its own (no bulking) under a trace, after one step to warm up.
    """
    with _engine.bulk(1):
        training_step(exe)
        with _engine.trace() as recorded:
            for _ in range(repeats):
                training_step(exe)
    return {row.name: row.min for row in recorded.stats().rows}


def predicted_overhead(plan: MemoryPlan, times: dict[str, float]) -> float:
    """The extra time of ``plan``'s recompute steps, as a share of a plain training step.

    Each recompute step costs what its node's forward step took in ``times``
    (:func:`op_times` of the plain plan); the plain step is the sum of the table.
    """
    plain = sum(times.values())
    return plan.recompute_cost(times) / plain if plain else 0.0


def flops_overhead(plan: MemoryPlan) -> float:
    """The FLOPs prediction of the same share: recompute FLOPs over a step's (3 forwards)."""
    return plan.recompute_ratio / STEP_IN_FORWARDS
