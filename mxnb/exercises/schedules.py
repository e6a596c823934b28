"""The schedule grader: run a learner's program in every order the engine allows.

Idea: a race cannot be graded by running the code once — the one schedule
the threads happened to pick may be a lucky one.  The step engine
(:class:`~mxnb.engine.stepper.StepEngine`) runs nothing until told, so the
grader can walk every legal schedule: push the program on a fresh step
engine, list the ready ops (and the device jobs an async op started), try
each in turn, depth first, replaying the prefix on a new engine for each
branch — the walk of notebook 01, section 4, here as a library.  Every
complete schedule's result is compared with the *sequential reference*
(the reference solution run one op at a time in push order), and the first
that differs is the counterexample.

The ops share a :class:`~.store.Store` of small arrays that notes what each
op touched (:mod:`.store`); :mod:`.grader` turns the walk and those notes
into a verdict.

Rule (bound): at most :data:`MAX_SCHEDULES` schedules are walked exhaustively.
A program with more legal schedules is *sampled*: the first
:data:`MAX_SCHEDULES` of the walk, then :data:`SAMPLES` random schedules (each
move drawn uniformly among the ready ones, seed :data:`SEED`); the result says
so.  Outcomes are compared rounded to 9 decimals.

State kept (per run): the step engine, the store, the device's pending jobs,
op label <-> op id, and the declarations each push made.

Example::

    >>> import mxnb as mx
    >>> from mxnb.exercises.schedules import all_schedules
    >>> def program(eng, ctx, v, ops):
    ...     eng.push_sync(ops.noop, ctx, mutate_vars=[v.x], name='w')
    ...     eng.push_sync(ops.noop, ctx, const_vars=[v.x], name='r1')
    ...     eng.push_sync(ops.noop, ctx, const_vars=[v.x], name='r2')
    >>> sorted(all_schedules(program, ('x',)))
    [('w', 'r1', 'r2'), ('w', 'r2', 'r1')]
"""

from __future__ import annotations

import contextlib
import random
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

import numpy as np

from ..context import cpu
from .store import Device, GradingEngine, Store

__all__ = ["MAX_SCHEDULES", "SAMPLES", "SEED", "Run", "Spec", "all_schedules", "walk"]

MAX_SCHEDULES = 2000  # walked exhaustively up to this many complete schedules
SAMPLES = 300  # random schedules drawn beyond that
SEED = 0


@dataclass(frozen=True)
class Spec:
    """What the grader needs of a schedule exercise."""

    variables: tuple[str, ...]  # engine var names (and store keys)
    initial: Mapping[str, Any] = field(default_factory=dict)  # store values before the program
    make_ops: Callable[[Store, Device], Any] = lambda store, device: SimpleNamespace()
    outputs: tuple[str, ...] = ()  # the vars compared with the reference (all when empty)


def _noop_ops(store: Store, device: Device) -> Any:
    return SimpleNamespace(noop=lambda run_ctx: None, store=store, device=device)


class Run:
    """One run of a program on a fresh step engine, driven move by move."""

    def __init__(self, spec: Spec, program: Callable[..., Any]) -> None:
        from ..engine import create

        self.spec = spec
        self.store = Store({k: np.array(v, dtype=np.float64) for k, v in spec.initial.items()})
        self.device = Device(self.store)
        self.engine = create("step")
        self.grading = GradingEngine(self.engine, self.store)
        ops = spec.make_ops(self.store, self.device)
        variables = SimpleNamespace(**{n: self.grading.new_var(n) for n in spec.variables})
        self.moves: list[str] = []
        self.program_error: BaseException | None = None
        try:
            program(self.grading, cpu(), variables, ops)
        except Exception as exc:  # noqa: BLE001 - reported as the answer's error
            self.program_error = exc

    def options(self) -> list[str]:
        """What may happen next: device jobs first, then the ready ops in push order."""
        jobs = [job.label for job in self.device.pending]
        ready = [self.grading.label_of.get(op.op_id, op.name) for op in self.engine.ready_ops()]
        ready.sort(key=lambda label: self.grading.push_index.get(label, -1))
        return jobs + ready

    def apply(self, move: str) -> None:
        """Run the op or device job ``move``."""
        self.moves.append(move)
        if move.endswith(":device"):
            self.device.run(move)
            return
        op_id = next(i for i, label in self.grading.label_of.items() if label == move)
        self.engine.run_op(op_id)

    def unfinished(self) -> tuple[str, ...]:
        """Ops pushed but never completed, by label."""
        return tuple(
            self.grading.label_of.get(op.op_id, op.name) for op in self.engine.pending_ops()
        )

    def outcome(self) -> dict[str, Any]:
        """The values of the compared vars, the errors, and the ops that never finished."""
        store = self.store
        names = self.spec.outputs or tuple(sorted(store.values))
        result: dict[str, Any] = {}
        for name in names:
            if name in store.freed:
                result[name] = "freed"
            elif name in store.values:
                result[name] = np.round(store.values[name], 9).tolist()
        if store.errors:
            result["errors"] = sorted(store.errors)
        unfinished = self.unfinished()
        if unfinished:
            result["unfinished"] = list(unfinished)
        return result

    def close(self) -> None:
        """Shut the step engine down (pending ops are dropped)."""
        # Every op of a finished walk is complete; an async op whose on_complete was never
        # called stays running, and draining would wait for it forever: do not wait.
        with contextlib.suppress(Exception):
            self.engine.shutdown(timeout=0.0)


def replay(spec: Spec, program: Callable[..., Any], moves: Sequence[str]) -> Run:
    """Run ``program`` and apply ``moves``; the run is left open (call ``close``)."""
    run = Run(spec, program)
    for move in moves:
        run.apply(move)
    return run


def sequential(spec: Spec, program: Callable[..., Any]) -> Run:
    """Run ``program`` one op at a time in push order (device jobs as soon as they exist)."""
    run = Run(spec, program)
    while True:
        options = run.options()
        if not options:
            return run
        run.apply(options[0])


@dataclass
class Walk:
    """What :func:`walk` saw: the schedules, whether every one, and the first mismatch."""

    schedules: int = 0
    exhaustive: bool = True
    limit: int = MAX_SCHEDULES  # the bound of the exhaustive walk
    sampled: int = 0  # random schedules drawn after it
    mismatch: tuple[tuple[str, ...], dict[str, Any]] | None = None
    together: set[frozenset[str]] = field(default_factory=set)  # pairs of ops ready at once


def walk(
    spec: Spec,
    program: Callable[..., Any],
    expected: dict[str, Any] | None = None,
    limit: int = MAX_SCHEDULES,
    samples: int = SAMPLES,
) -> Walk:
    """Run ``program`` in every legal schedule (bounded, then sampled); stop at a mismatch.

    Depth first: the first branch at each point continues the run in hand,
    every other branch replays the prefix on a fresh engine, so the runs
    made equal the schedules visited.
    """
    seen = Walk(limit=limit)

    def finish(run: Run) -> bool:
        seen.schedules += 1
        outcome = run.outcome()
        run.close()
        if expected is not None and outcome != expected:
            seen.mismatch = (tuple(run.moves), outcome)
            return True
        return False

    def explore(run: Run) -> bool:  # True: stop
        options = run.options()
        _note_together(seen, options)
        if not options:
            return finish(run)
        prefix = list(run.moves)
        for index, move in enumerate(options):
            if seen.schedules >= limit:
                seen.exhaustive = False
                if index == 0:
                    run.close()
                return False
            branch = run if index == 0 else replay(spec, program, prefix)
            branch.apply(move)
            if explore(branch):
                return True
        return False

    if explore(Run(spec, program)) or seen.exhaustive:
        return seen
    rng = random.Random(SEED)
    for _ in range(samples):
        run = Run(spec, program)
        while True:
            options = run.options()
            _note_together(seen, options)
            if not options:
                break
            run.apply(rng.choice(options))
        seen.sampled += 1
        if finish(run):
            break
    return seen


def _note_together(seen: Walk, options: list[str]) -> None:
    for i, first in enumerate(options):
        for second in options[i + 1 :]:
            seen.together.add(frozenset((first, second)))


def all_schedules(
    program: Callable[..., Any], variables: Sequence[str], limit: int = 100_000
) -> Iterator[tuple[str, ...]]:
    """Every legal schedule of ``program`` (ops named by their push labels), depth first.

    ``program(eng, ctx, v, ops)`` pushes with ``ops.noop`` or its own functions.
    """
    spec = Spec(tuple(variables), make_ops=_noop_ops)
    found: list[tuple[str, ...]] = []

    def explore(run: Run) -> None:
        options = run.options()
        if not options or len(found) >= limit:
            found.append(tuple(run.moves))
            run.close()
            return
        prefix = list(run.moves)
        for index, move in enumerate(options):
            branch = run if index == 0 else replay(spec, program, prefix)
            branch.apply(move)
            explore(branch)

    explore(Run(spec, program))
    return iter(found)
