"""The graph executor: gradient graph, memory planning and execution through the engine.

Modules, in the order data flows:
    steps.py     the types a graph is made of: DataEntry, Step, ExecGraph, GraphBuilder
    gradient.py  the gradient pass: backward, sum and zeros steps (MXNet: nnvm Gradient)
    recompute.py recomputation: which forward values backward computes again (mirror, sqrt)
    graph.py     the forward+backward steps built from a Symbol, in named phases
    memory.py    the planning walk: in-place and co-share (MXNet's PlanMemory)
    placement.py offline placements of the walk's chains (lifetimes known in advance)
    tournament.py  walks and placements compete, the smallest plan wins (plan_strategies)
    tradeoff.py  the memory-compute trade-off curve and the search within a byte budget
    milp.py      the exact planner: recomputation as a mixed-integer program (HiGHS)
    optimal.py   the optimal curve: exact plans at many budgets, each wide step proven or open
    planning.py  plan_memory: the one entry point, reading recompute= / budget=
    executor.py  the Executor: one engine op per step, one engine var per storage block
    executor_api.py  MXNet's Executor methods over the bound state (debug_str, reshape, ...)
    binding.py   simple_bind / bind: plan, make or check the arrays, make the Executor
    zoo/         model-zoo networks (MLP, LeNet, AlexNet, VGG-16, ResNet, Inception-BN, LSTM)
    plan.py      the MemoryPlan data objects (entries, storage blocks, figures)
    flops.py     FLOPs per operator (what recomputation costs)
    arena.py     offset placement: many entries in one block at byte offsets

Example::

    >>> import mxnb as mx
    >>> from mxnb.executor import zoo
    >>> exe = zoo.mlp().simple_bind(mx.cpu(), data=(32, 784))
    >>> exe.memory_plan.internal_bytes < exe.memory_plan.naive_internal_bytes
    True
"""

from . import zoo
from .binding import bind, simple_bind
from .executor import Executor
from .measure import PlanMeasurement, allocation_peak, measure_plan, measure_temporaries
from .optimal import CurveStep, OptimalCurve, optimal_curve
from .plan import EXTERNAL_STORAGE_ID, EntryKind, MemoryPlan, PlanEntry, StorageBlock
from .planning import plan_memory
from .tournament import plan_strategies
from .tradeoff import MemoryBudgetError, TradeoffPoint, pareto, tradeoff_curve

__all__ = [
    "EXTERNAL_STORAGE_ID",
    "EntryKind",
    "Executor",
    "CurveStep",
    "MemoryBudgetError",
    "MemoryPlan",
    "OptimalCurve",
    "PlanMeasurement",
    "PlanEntry",
    "StorageBlock",
    "TradeoffPoint",
    "allocation_peak",
    "bind",
    "measure_plan",
    "measure_temporaries",
    "optimal_curve",
    "pareto",
    "plan_memory",
    "plan_strategies",
    "simple_bind",
    "tradeoff_curve",
    "zoo",
]
