"""Planning a symbol's memory: the one entry point, and the one place its options are read.

Idea: a user asks for a plan with a few options — strategies switched off to
compare, a recomputation rule, or a byte budget — and gets a
:class:`~.plan.MemoryPlan`.  This module reads those options once and hands
the work down:

* no budget: :func:`.tournament.plan_best` (the walk of :mod:`.memory` and the
  placements of :mod:`.placement` compete; :mod:`.recompute` applies the rule);
* a budget: :func:`.tradeoff.plan_within_budget`, the search over the family
  of recomputation plans, which calls the tournament for each of them;
* a budget with ``solver='milp'``: :func:`.exact.plan_milp`, the exact planner
  (a mixed-integer program, the greedy plan its incumbent).

Rule: the layers only call down — exact planner -> budget search ->
tournament -> walk — and never back up.  ``recompute`` names a rule (``None``, ``'mirror'``,
``'sqrt'``); ``budget`` is a number of bytes.  For compatibility with earlier
releases an integer ``recompute`` is read as ``budget``.

State kept: none.

Example::

    >>> import mxnb as mx
    >>> from mxnb.executor import zoo
    >>> plain = mx.executor.plan_memory(zoo.mlp(), {'data': (32, 784)})
    >>> mirror = mx.executor.plan_memory(zoo.mlp(), {'data': (32, 784)}, recompute='mirror')
    >>> mirror.recomputed_nodes
    ('relu1', 'relu2')
    >>> fit = mx.executor.plan_memory(zoo.mlp(), {'data': (32, 784)}, budget=plain.internal_bytes)
    >>> fit.internal_bytes <= plain.internal_bytes
    True
"""

from __future__ import annotations

import dataclasses
import numbers
from collections.abc import Mapping, Sequence
from typing import Any

from ..base import ParamError
from ..validate import check_number
from .exact import plan_milp
from .plan import MemoryPlan
from .steps import ExecGraph
from .tournament import plan_best
from .tradeoff import plan_within_budget

__all__ = ["RECOMPUTE_RULES", "SOLVERS", "check_budget", "plan_graph_and_memory", "plan_memory"]

#: The recomputation rules :mod:`.recompute` knows (None: only what node attributes force).
RECOMPUTE_RULES = (None, "mirror", "sqrt")
#: How a byte budget is searched: the greedy family (:mod:`.tradeoff`) or exactly (:mod:`.milp`).
SOLVERS = ("greedy", "milp")


def plan_memory(
    sym: Any,
    shapes: Mapping[str, tuple],
    grad_req: str | Mapping[str, str] | Sequence[str] = "write",
    inplace: bool = True,
    coshare: bool = True,
    type_dict: Mapping[str, Any] | None = None,
    recompute: str | int | None = None,
    budget: int | None = None,
    solver: str = "greedy",
    time_limit: float = 120.0,
    op_times: Mapping[str, float] | None = None,
) -> MemoryPlan:
    """Plan the memory of ``sym`` bound with ``shapes``; return the :class:`MemoryPlan`.

    Parameters
    ----------
    sym : Symbol
        The network.
    shapes : mapping
        Argument shapes by name (``{'data': (32, 784)}``).
    grad_req : str, dict or list
        ``'null'`` plans inference only; ``'write'`` / ``'add'`` (for all or per
        argument) adds the backward steps.
    inplace, coshare : bool
        Switch a strategy off to compare (both off: every entry its own block).
    type_dict : mapping, optional
        Argument dtypes (default float32).
    recompute : None, 'mirror' or 'sqrt'
        Recompute forward values in backward instead of keeping them
        (:mod:`.recompute`): MXNet's mirror rule or the paper's sqrt(n)
        segments.  An integer is read as ``budget`` (the earlier spelling).
    budget : int, optional
        A byte budget: the plan with the least recomputation whose planned
        bytes fit (:mod:`.tradeoff`; ``MemoryBudgetError`` when none does).
    solver : 'greedy' or 'milp'
        How a budget is searched: the greedy family of plans (the default), or
        the exact planner (:mod:`.milp`), whose plan carries ``solver`` and the
        proven ``mip_gap``.
    time_limit : float
        Seconds the exact planner may take (default 120); past it, the best plan
        found is returned with its gap.
    op_times : mapping, optional
        A measured per-op timing table (node name -> seconds, measured once:
        :func:`mxnb.executor.measure.op_times`).  A budget is then searched for
        the least recompute *time* instead of FLOPs, and the plan carries
        ``recompute_seconds``, its predicted extra time.

    Example::

        >>> import mxnb as mx
        >>> from mxnb.executor import zoo
        >>> plan = mx.executor.plan_memory(zoo.mlp(), {'data': (32, 784)}, grad_req='write')
        >>> plan.check()
        >>> plan.internal_bytes < plan.naive_internal_bytes
        True
    """
    return plan_graph_and_memory(
        sym,
        shapes,
        grad_req,
        type_dict,
        inplace,
        coshare,
        recompute,
        budget,
        solver,
        time_limit,
        op_times,
    )[1]


def plan_graph_and_memory(
    sym: Any,
    shapes: Mapping[str, tuple],
    grad_req: str | Mapping[str, str] | Sequence[str] = "write",
    type_dict: Mapping[str, Any] | None = None,
    inplace: bool = True,
    coshare: bool = True,
    recompute: str | int | None = None,
    budget: int | None = None,
    solver: str = "greedy",
    time_limit: float = 120.0,
    op_times: Mapping[str, float] | None = None,
) -> tuple[ExecGraph, MemoryPlan]:
    """:func:`plan_memory`, returning the graph the executor runs beside its plan."""
    rule, budget = _read_recompute(recompute, budget)
    _check_solver(solver, budget, time_limit)
    if budget is not None and solver == "milp":
        graph, plan = plan_milp(sym, shapes, budget, grad_req, type_dict, time_limit, op_times)
    elif budget is not None:
        graph, plan = plan_within_budget(sym, shapes, budget, grad_req, type_dict, op_times)
    else:
        graph, plan = plan_best(sym, shapes, grad_req, type_dict, inplace, coshare, recompute=rule)
    if op_times is not None:
        plan = dataclasses.replace(plan, recompute_seconds=plan.recompute_cost(op_times))
    return graph, plan


def check_budget(value: Any, argument: str = "budget") -> int:
    """Return ``value`` as a whole number of bytes, or raise a ParamError naming ``argument``.

    A budget is a finite, positive, whole number of bytes (``1e9`` is fine;
    ``inf``, ``nan``, ``2.5`` and ``True`` are not): :func:`mxnb.validate.check_number`.

        >>> check_budget(1.5e6)
        1500000
        >>> check_budget(float('inf'))
        Traceback (most recent call last):
        ...
        mxnb.base.ParamError: plan_memory: budget must be a finite number, got inf
    """
    number = check_number(value, argument, "plan_memory", low=0, low_open=True)
    assert number is not None  # (not optional)
    if number != int(number):
        raise ParamError(f"plan_memory: {argument} must be a whole number of bytes, got {value!r}")
    return int(number)


def _check_solver(solver: Any, budget: int | None, time_limit: Any) -> None:
    """A known solver, used with a budget, and a positive time limit."""
    if solver not in SOLVERS:
        raise ParamError(f"solver must be one of {', '.join(map(repr, SOLVERS))}; got {solver!r}")
    if solver == "milp" and budget is None:
        raise ParamError(
            "solver='milp' searches a byte budget; pass budget=<bytes> with it (got no budget)"
        )
    check_number(time_limit, "time_limit (seconds)", "plan_memory", low=0, low_open=True)


def _read_recompute(recompute: Any, budget: Any) -> tuple[str | None, int | None]:
    """Split the options into (rule, budget in bytes), with the integer alias resolved."""
    if isinstance(recompute, numbers.Real) and not isinstance(recompute, bool):
        if budget is not None:
            raise ParamError(
                f"recompute={recompute!r} is a byte budget and budget={budget!r} another; "
                f"pass only budget="
            )
        return None, check_budget(recompute, "recompute")
    if recompute not in RECOMPUTE_RULES:
        raise ParamError(
            f"recompute must be None, 'mirror', 'sqrt' or a byte budget (pass budget=<bytes>); "
            f"got {recompute!r}"
        )
    if budget is None:
        return recompute, None
    if recompute is not None:
        raise ParamError(
            f"recompute={recompute!r} and budget={budget!r} both choose what to recompute; "
            f"pass one of them"
        )
    return None, check_budget(budget)
