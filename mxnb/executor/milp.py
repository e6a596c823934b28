"""The exact recomputation planner: which forward values to keep, as a mixed-integer program.

Idea (Jain et al., "Checkmate", MLSys 2020): choosing what to recompute is a
0/1 program, and a MILP solver either proves a choice optimal or bounds how
far from optimal it is.  Checkmate schedules every op in every stage; here the
schedule is fixed by the executor (forward in the plain plan's order, backward
in reverse, a recomputed segment run just before backward first needs it,
:mod:`.recompute`), so the only decisions are Checkmate's ``R`` collapsed to
one bit per forward step, and its ``S`` / free variables follow from them.
Solved with HiGHS (``scipy.optimize.milp``), no licence needed.

Rule — the program, over the plain plan's steps ``k = 0 .. S-1`` (forward
steps ``< nf``; each recomputed copy is made just before the step that needs it):

* ``x[j]`` binary, one per candidate step (:func:`.recompute.candidates`;
  ``__force_mirroring__`` fixes it): 1 = its outputs are recomputed;
* ``A[j, k]`` in [0, 1], nondecreasing in ``k``: j's recompute has run by step
  ``k``.  ``A[j, k] >= x[j]`` from backward's first read of j's outputs,
  ``A[j, k] >= A[c, k] + x[j] - 1`` for a consumer ``c`` of j (producers
  first), ``A[j, k] <= x[j]`` and ``A[j, k] <= [k >= first read] + sum A[c, k]``
  (never earlier than needed): with ``x`` binary, ``A`` is the executor's
  trigger exactly;
* ``L[e, k]`` (a recomputed copy alive) ``>= A[j, k]`` up to e's last
  backward reader, and ``>= A[j, k] + x[c] - A[c, k-1] - 1`` (alive while a
  recomputed consumer c has not run yet);
* ``E[e, k]`` (a kept value held past its plain last reader)
  ``>= x[c] - A[c, k-1] - x[j]``: kept for a recomputed consumer;
* ``L`` and ``E`` take one column per run of neighbouring steps with the same
  lower bounds (exact: a held value only adds to memory, so it sits at its
  greatest lower bound, the same bytes along the run);
* per step: ``plain_live[k] - sum b[e] x[j] [e's last forward read < k <= its
  last read] + sum b[e] (L[e, k] + E[e, k]) <= peak <= budget'``;
* minimise ``sum flops[j] x[j]`` (:mod:`.flops`), or ``sum seconds[j] x[j]`` with a
  measured per-op timing table (``op_times``);
* a *window* of ``W`` steps: ``A[j, k]`` is 0 more than ``W`` steps before
  j's latest trigger, and a consumer triggered before that is never
  recomputed with j (``A[c, start - 1] + x[j] <= 1``).  The plans are then
  those whose recomputes run at most ``W`` steps ahead of need, and the gap
  proven is within them.  ``window='auto'`` sets none while the full program
  has at most :data:`MAX_TRIGGERS` trigger columns, else the widest window
  under it: in an unrolled LSTM every later step reads an early value, so its
  recompute could run anywhere in backward (the LSTM LM's full program:
  490k trigger columns, 1.45M in all; the zoo LSTM's, before the merge above,
  gave HiGHS no plan better than the greedy one in 120 s at any budget).

What is exact: the objective (each chosen step runs once, as the executor
does) and the liveness of every value under the executor's schedule, with the
plain graph's in-place pairs and a recompute writing over an input it alone
still needs.  What is modelled: bytes are live bytes, not the pool's blocks
(co-share fragmentation, the arena's offsets), and the values a recompute
segment makes are all counted at the step that needs them, though the
executor frees some within the segment (conservative).  So every answer is
planned for real, by :mod:`.exact`, which calls this program.

State kept: none; :class:`Model` holds one program's arrays.

Example::

    >>> from mxnb.executor import zoo
    >>> from mxnb.executor.tournament import plan_best
    >>> graph, plain = plan_best(zoo.deep_mlp(layers=4), {'data': (16, 64)})
    >>> model = Model(graph)
    >>> model.peak_of(frozenset()) == plain.peak_bytes, model.window
    (True, None)
    >>> answer = model.solve(plain.peak_bytes - 1, time_limit=10)
    >>> sorted(answer.nodes), answer.optimal
    (['fc0', 'relu0'], True)
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ..base import MXNBError, ParamError
from .flops import step_flops
from .recompute import REPLAYED_OPS, node_flag, candidates
from .steps import ExecGraph


def _scipy() -> tuple[Any, Any]:
    """scipy's ``optimize`` and ``sparse``, imported when the exact planner runs.

    ``import mxnb`` needs no scipy (a GPU machine may have none); the exact
    planner does, for HiGHS.
    """
    try:
        from scipy import optimize, sparse
    except ImportError as exc:
        raise MXNBError(
            "plan_memory(solver='milp') needs scipy (its HiGHS solver): pip install scipy, "
            "or use the greedy planner (solver='greedy')"
        ) from exc
    return optimize, sparse


__all__ = ["MAX_TRIGGERS", "Model", "Solution"]

#: The most trigger columns ``A`` a program gets before :class:`Model` narrows its window.
MAX_TRIGGERS = 20_000
_GAP = 1e-6  # relative gap HiGHS must prove to stop early (0 would chase rounding)


@dataclasses.dataclass(frozen=True)
class Solution:
    """One solve: the chosen steps, their FLOPs, the proven gap and HiGHS' status."""

    nodes: frozenset[str]
    cost: float  # recompute FLOPs, or microseconds of measured op times
    mip_gap: float
    optimal: bool
    seconds: float


def _summed(terms: list[tuple[dict[int, float], float]]) -> dict[int, float]:
    """``sum(sign * coeffs)`` over ``terms``, one coefficient per column."""
    row: dict[int, float] = {}
    for coeffs, sign in terms:
        for col, value in coeffs.items():
            row[col] = row.get(col, 0.0) + sign * value
    return row


class Model:
    """The program of the module docstring for one plain (unrecomputed) graph.

    ``op_times``: a measured per-op timing table (node -> seconds), the cost instead of
    FLOPs.  ``window``: a number of steps, ``None`` (no window) or ``'auto'`` (none while
    the full program has at most :data:`MAX_TRIGGERS` trigger columns); kept as ``window``.
    """

    #: one ``L`` / ``E`` column per run of steps with the same bounds (False: one per step,
    #: the plain form the tests compare the runs against)
    merge_runs = True

    def __init__(
        self,
        graph: ExecGraph,
        op_times: Mapping[str, float] | None = None,
        window: int | str | None = "auto",
    ) -> None:
        self.graph = graph
        self.op_times = op_times  # a measured per-op timing table replaces FLOPs as the cost
        self.cols: dict[tuple, int] = {}
        self.rows: list[tuple[dict[int, float], float, float]] = []
        nf, S = graph.num_forward_steps, len(graph.steps)
        self.steps = list(candidates(graph))
        for step in self.steps:
            self.col(("x", step.index))
        self.peak = self.col(("peak",))
        entries = graph.entries
        live = np.zeros(S)
        for e in entries:
            if not e.external and e.writer >= 0:
                last = S - 1 if e.is_output else max(e.readers, default=e.writer)
                live[e.writer : last + 1] += e.nbytes
        for step in graph.steps:  # an output written over an input read last here (in-place)
            for source, target in graph.sized_inplace_options(step):
                src, dst = entries[source], entries[target]
                if not (src.external or dst.external or src.is_output) and (
                    max(src.readers) == step.index
                ):
                    live[step.index] -= src.nbytes
        self.copies: dict[int, list[int]] = {}  # step -> the outputs recomputed as copies
        for step in self.steps:
            kept = REPLAYED_OPS.get(step.op_type)
            self.copies[step.index] = [e for i, e in enumerate(step.out_data)
                                       if e is not None and i != kept]  # fmt: skip
        self.consumers: dict[int, set[int]] = {s.index: set() for s in self.steps}
        for step in self.steps:
            for read in step.in_data:
                writer = entries[read].writer if read is not None else -1
                if writer in self.copies and read in self.copies[writer]:
                    self.consumers[writer].add(step.index)
        self.first = {j: min((r for e in out for r in entries[e].readers if r >= nf), default=None)
                      for j, out in self.copies.items()}  # fmt: skip
        self.window = self._choose_window(window)
        self.latest, self.earliest = self._reach(self.window)
        self.memory: list[dict[int, float]] = [{} for _ in range(S)]
        self.lower_bounds: dict[tuple[str, int], dict[int, set]] = {}
        for step in self.steps:
            self._add_step(step, live)
        self._add_held()
        for k in range(S):
            self.memory[k][self.peak] = -1.0
            self.rows.append((self.memory[k], -np.inf, -live[k]))

    def _reach(self, window: int | None) -> tuple[dict[int, int | None], dict[int, int]]:
        """Each candidate's latest step its recompute can run before, and its earliest.

        The latest is backward's first read of its outputs, or else its recomputed consumers'
        latest; the earliest is its consumers' earliest (a recomputed consumer needs it), and
        at most ``window`` steps before the latest.
        """
        latest: dict[int, int | None] = {}
        earliest: dict[int, int] = {}
        for step in reversed(self.steps):
            j, first = step.index, self.first[step.index]
            later = [k for k in (latest[c] for c in self.consumers[j]) if k is not None]
            last = first if first is not None else max(later, default=None)
            latest[j] = last
            if last is not None:
                sooner = [earliest[c] for c in self.consumers[j] if c in earliest]
                earliest[j] = min([*sooner, *([first] if first is not None else [])])
                if window is not None:
                    earliest[j] = max(earliest[j], last - window)
        return latest, earliest

    def triggers(self, window: int | None) -> int:
        """How many trigger columns ``A[j, k]`` the program has with ``window``."""
        latest, earliest = self._reach(window)
        nf = self.graph.num_forward_steps
        spans = [(latest[j] or 0) - max(nf, start) for j, start in earliest.items()]
        return sum(span for span in spans if span > 0)

    def _choose_window(self, window: int | str | None) -> int | None:
        """``window`` checked, or for ``'auto'`` the widest within :data:`MAX_TRIGGERS` (None: all)."""
        if window is None or (
            isinstance(window, int) and not isinstance(window, bool) and window >= 1
        ):
            return window
        if window != "auto":
            raise ParamError(
                f"window must be 'auto', None or a number of steps >= 1; got {window!r}"
            )
        if self.triggers(None) <= MAX_TRIGGERS:
            return None
        low, high = 1, len(self.graph.steps)  # the widest window within the cap, by bisection
        while low < high:
            middle = (low + high + 1) // 2
            low, high = (
                (middle, high) if self.triggers(middle) <= MAX_TRIGGERS else (low, middle - 1)
            )
        return low

    def col(self, key: tuple) -> int:
        """The column of variable ``key``, added on first use."""
        if key not in self.cols:
            self.cols[key] = len(self.cols)
        return self.cols[key]

    def trigger(self, j: int, k: int) -> dict[int, float]:
        """``A[j, k]`` as coefficients: 0 in forward, ``x[j]`` once backward surely needed it."""
        latest = self.latest[j]
        if latest is None or k < max(self.graph.num_forward_steps, self.earliest[j]):
            return {}
        return {self.col(("x", j) if k >= latest else ("A", j, k)): 1.0}

    def _row(self, terms: list[tuple[dict[int, float], float]], lo: float, hi: float) -> None:
        self.rows.append((_summed(terms), lo, hi))

    def _add_step(self, step: Any, live: np.ndarray) -> None:
        entries, nf = self.graph.entries, self.graph.num_forward_steps
        j, x = step.index, {self.col(("x", step.index)): 1.0}
        latest = self.latest[j]
        start = max(nf, self.earliest.get(j, nf))
        for k in range(start, latest if latest is not None else start):
            a = self.trigger(j, k)
            self._row([(a, 1), (self.trigger(j, k - 1), -1)], 0, np.inf)  # nondecreasing
            self._row([(a, 1), (x, -1)], -np.inf, 0)  # never without x
            need = [(self.trigger(c, k), -1) for c in self.consumers[j]]
            self._row([(a, 1), *need], -np.inf, 0)  # not before backward or a consumer needs it
            for c in self.consumers[j]:
                self._row([(a, 1), (self.trigger(c, k), -1), (x, -1)], -1, np.inf)
        for c in self.consumers[j]:  # a consumer triggered before j's window: not both recomputed
            if self.latest[c] is not None and start - 1 >= max(nf, self.earliest[c]):
                self._row([(self.trigger(c, start - 1), 1), (x, 1)], -np.inf, 1)
        for e in self.copies[j]:
            record = entries[e]
            last_forward = max((r for r in record.readers if r < nf), default=record.writer)
            last = max(record.readers, default=last_forward)
            for k in range(last_forward + 1, last + 1):  # the original is freed early
                self.memory[k][self.col(("x", j))] = -record.nbytes
            for k in range(start, last + 1):
                self._copy_alive(e, k, [(self.trigger(j, k), 1)])
        for e in step.in_data:
            if e is not None and not entries[e].external and latest is not None:
                self._input_alive(j, e, latest)

    def _input_alive(self, j: int, e: int, latest: int) -> None:
        """Input ``e`` of step j must exist when j is recomputed: its copy, or the original held."""
        record, nf = self.graph.entries[e], self.graph.num_forward_steps
        writer = record.writer
        copied = writer in self.copies and e in self.copies[writer]
        last = max(record.readers, default=writer)  # the plain plan frees it after this step
        x = {self.col(("x", j)): 1.0}
        step = self.graph.steps[j]
        # a recompute writing over this input (in-place) needs it only before its own step
        over = any(src == e for src, _ in self.graph.sized_inplace_options(step))
        for k in range(min(nf, last + 1), latest + 1):
            pending = [(x, 1), (self.trigger(j, k if over else k - 1), -1)]  # j not run yet
            if copied and k >= max(nf, self.earliest.get(writer, nf)):
                self._copy_alive(e, k, [(self.trigger(writer, k), 1), *pending], minus=1)
            if k > last:  # E[e, k]: the original held for this recompute
                own = [({self.col(("x", writer)): 1.0}, -1)] if copied else []
                self._at_least("E", e, k, pending + own)

    def _copy_alive(self, e: int, k: int, terms: list, minus: float = 0) -> None:
        """``L[e, k] >= sum(terms) - minus``: a recomputed copy of ``e`` alive at step k."""
        self._at_least("L", e, k, terms, minus)

    def _at_least(self, kind: str, e: int, k: int, terms: list, minus: float = 0) -> None:
        """Record ``kind[e, k] >= sum(terms) - minus``; :meth:`_add_held` makes the columns."""
        bound = tuple(sorted(_summed(terms).items()))
        self.lower_bounds.setdefault((kind, e), {}).setdefault(k, set()).add((bound, minus))

    def _add_held(self) -> None:
        """One column per run of steps whose ``L`` / ``E`` lower bounds are the same, and its rows.

        A held value only adds to memory, so each of its columns sits at its greatest lower
        bound; neighbouring steps with the same bounds hold the same bytes, and one column
        (counted in each of their memory rows) is exact.  An LSTM's values wait the length of
        the forward pass with one bound: without this, half its program's columns.
        """
        for (kind, e), by_step in self.lower_bounds.items():
            nbytes = self.graph.entries[e].nbytes
            previous: tuple[int, frozenset] | None = None
            for k in sorted(by_step):
                bounds = frozenset(by_step[k])
                if not self.merge_runs or previous != (k - 1, bounds):
                    held = self.col((kind, e, k))
                    for bound, minus in bounds:
                        self._row([({held: 1.0}, 1), (dict(bound), -1)], -minus, np.inf)
                self.memory[k][held] = nbytes
                previous = (k, bounds)

    def arrays(self) -> tuple[np.ndarray, Any, np.ndarray, np.ndarray]:
        """The costs, the sparse constraint matrix and its bounds."""
        data, rows, cols = [], [], []
        for r, (row, _, _) in enumerate(self.rows):
            for c, value in row.items():
                rows.append(r)
                cols.append(c)
                data.append(value)
        matrix = _scipy()[1].coo_matrix(
            (data, (rows, cols)), shape=(len(self.rows), len(self.cols))
        )
        lower = np.array([lo for _, lo, _ in self.rows])
        upper = np.array([hi for _, _, hi in self.rows])
        costs = np.zeros(len(self.cols))
        for step in self.steps:
            costs[self.cols[("x", step.index)]] = (
                step_flops(step, self.graph.entries)
                if self.op_times is None
                else self.op_times.get(step.name, 0.0) * 1e6  # microseconds: HiGHS' tolerances
            )
        return costs, matrix.tocsr(), lower, upper

    def _bounds(self, fixed: frozenset[str] | None) -> tuple[np.ndarray, np.ndarray]:
        n = len(self.cols)
        lower, upper = np.zeros(n), np.ones(n)
        upper[self.peak] = np.inf
        for step in self.steps:
            col = self.cols[("x", step.index)]
            forced = node_flag(step.node, "__force_mirroring__")
            if fixed is not None:
                lower[col] = upper[col] = float(step.name in fixed)
            elif self.latest[step.index] is None or forced is False:
                upper[col] = 0.0  # never needed again, or kept by its attribute
            elif forced:
                lower[col] = 1.0
        return lower, upper

    def peak_of(self, nodes: frozenset[str], time_limit: float | None = None) -> float:
        """The modelled peak bytes when exactly ``nodes`` are recomputed (inf: not found in time)."""
        optimize, _ = _scipy()
        costs, matrix, lo, hi = self.arrays()
        lower, upper = self._bounds(nodes)
        objective = np.zeros(len(self.cols))
        objective[self.peak] = 1.0
        options = {} if time_limit is None else {"time_limit": max(time_limit, 0.1)}
        result = optimize.milp(objective, bounds=(lower, upper), options=options,
                               constraints=optimize.LinearConstraint(matrix, lo, hi))  # fmt: skip
        return float(result.x[self.peak]) if result.x is not None else float("inf")

    def solve(
        self,
        budget: float,
        time_limit: float,
        cuts: Sequence[frozenset[str]] = (),
        below: float | None = None,
    ) -> Solution | None:
        """The fewest recompute FLOPs with a modelled peak of at most ``budget`` (None: none).

        Each set in ``cuts`` is excluded with its subsets: some step outside it is recomputed.
        ``below``: only plans that cost less than it.
        """
        optimize, _ = _scipy()
        costs, matrix, lo, hi = self.arrays()
        constraints = [optimize.LinearConstraint(matrix, lo, hi)]
        for cut in cuts:
            row = np.zeros(len(self.cols))
            for step in self.steps:
                row[self.cols[("x", step.index)]] = float(step.name not in cut)
            constraints.append(optimize.LinearConstraint(row, 1, np.inf))
        if below is not None:
            constraints.append(optimize.LinearConstraint(costs, -np.inf, below * (1 - _GAP)))
        lower, upper = self._bounds(None)
        upper[self.peak] = max(budget, 0.0)
        integrality = np.zeros(len(self.cols))
        for step in self.steps:
            integrality[self.cols[("x", step.index)]] = 1
        start = time.perf_counter()
        result = optimize.milp(costs, integrality=integrality, bounds=(lower, upper), constraints=constraints,
                      options={"time_limit": max(time_limit, 1.0), "mip_rel_gap": _GAP})  # fmt: skip
        if result.x is None:
            return None
        x, cost = result.x, float(result.fun)
        chosen = frozenset(s.name for s in self.steps if x[self.cols[("x", s.index)]] > 0.5)
        gap = float(getattr(result, "mip_gap", 0.0) or 0.0)
        return Solution(chosen, cost, gap, result.status == 0, time.perf_counter() - start)
