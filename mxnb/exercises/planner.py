"""The memory-planner exercise: write a planner, graded by the plan check, then scored in bytes.

Idea (MXNet: ``PlanMemory`` in src/nnvm/plan_memory.cc; UW CSE 599W's
memory-planning assignment): a training graph's intermediate values each live
from the step that writes them to the step that last reads them.  A planner
maps every value to a storage id; values whose lifetimes do not overlap may
share one, and an op that allows it may write its output *in place* over an
input it reads for the last time.  The bytes of a plan are the sum over
storage ids of the largest value each holds.

Rule (the plan check, the same as :meth:`~mxnb.executor.plan.MemoryPlan.check`):
two entries with one storage id must not be alive at a common step, except
an in-place pair — the target is written by the step that last reads the
source, the source lists it among ``inplace_candidates``, the two have the
same size, and no other entry took that source in place.  A plan that
passes is scored against mxnb's plan (in-place + co-share, the best of its
orders and placements) and MXNet 1.9.1's figure for the same graph; it
passes when within 10 % of mxnb's bytes on both LeNet (batch 32) and
ResNet-18 (batch 1), trained with ``grad_req='write'``.

State kept: the graphs' entries and mxnb's bytes, built once per process.

Example::

    >>> import mxnb as mx
    >>> entries = mxnb_entries('lenet')
    >>> entries[0].first_step <= entries[0].last_step
    True
    >>> mx.exercises.check('memory_planner', mx.exercises.solution('memory_planner')).passed
    True
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .catalogue import Exercise, register
from .result import Result

__all__ = ["MXNET_BYTES", "Entry", "check_plan", "mxnb_entries", "plan_bytes"]

#: The graded networks: name -> batch (training, grad_req='write').
NETWORKS = {"lenet": 32, "resnet18": 1}

#: MXNet 1.9.1's planned bytes for the same graphs (exact, from the data pointers its
#: executor used): benchmarks/mxnet_reference.json, made by benchmarks/mxnet_reference.py.
MXNET_BYTES = {"lenet": 6392320, "resnet18": 25432920}

#: How far above mxnb's bytes a plan may be and still pass.
TOLERANCE = 0.10


@dataclass(frozen=True)
class Entry:
    """One intermediate value to place: its size, lifetime, and inputs it may overwrite."""

    name: str
    nbytes: int
    first_step: int  # the step that writes it
    last_step: int  # the step that reads it last
    inplace_candidates: tuple[str, ...] = ()  # entries its writer may overwrite in place


@functools.cache
def _network(name: str) -> tuple[tuple[Entry, ...], int]:
    from ..executor import zoo
    from ..executor.graph import build_graph
    from ..executor.planning import plan_memory
    from ..executor.tournament import plan_graph

    sym, shapes = zoo.build(name), zoo.input_shapes(name, NETWORKS[name])
    graph = build_graph(sym, shapes, grad_req="write")
    lifetimes = plan_graph(graph)  # one order: the lifetimes the learner's planner places
    candidates: dict[int, list[str]] = {}
    for step in graph.steps:
        for source, target in step.inplace_options:
            candidates.setdefault(target, []).append(graph.entries[source].name)
    entries = tuple(
        Entry(
            entry.name,
            entry.nbytes,
            entry.first_step,
            entry.last_step,
            tuple(candidates.get(index, ())),
        )
        for index, entry in enumerate(lifetimes.entries)
        if not entry.external
    )
    return entries, plan_memory(sym, shapes, grad_req="write").internal_bytes


def mxnb_entries(name: str) -> list[Entry]:
    """The entries of network ``name`` ('lenet' or 'resnet18') in the order they are written."""
    return sorted(_network(name)[0], key=lambda e: (e.first_step, e.name))


def check_plan(entries: list[Entry], storage: Mapping[str, Any]) -> str:
    """'' when ``storage`` is a legal plan of ``entries``; else what is wrong, in a sentence."""
    by_name = {entry.name: entry for entry in entries}
    missing = [entry.name for entry in entries if entry.name not in storage]
    if missing:
        return f"no storage id for {len(missing)} entries, first '{missing[0]}'"
    members: dict[Any, list[Entry]] = {}
    for name, sid in storage.items():
        if name not in by_name:
            return f"'{name}' is not an entry of the graph"
        if isinstance(sid, bool) or not isinstance(sid, int) or sid < 0:
            return f"'{name}': storage ids are ints >= 0, got {sid!r}"
        members.setdefault(sid, []).append(by_name[name])
    taken: set[str] = set()
    for sid, group in members.items():
        group.sort(key=lambda e: (e.first_step, e.last_step))
        for index, later in enumerate(group):
            for earlier in group[:index]:
                if earlier.last_step < later.first_step:
                    continue
                inplace = (
                    earlier.last_step == later.first_step
                    and earlier.name in later.inplace_candidates
                    and earlier.nbytes == later.nbytes
                    and earlier.name not in taken
                )
                if not inplace:
                    step = max(earlier.first_step, later.first_step)
                    return (
                        f"'{earlier.name}' [{earlier.first_step}, {earlier.last_step}] and "
                        f"'{later.name}' [{later.first_step}, {later.last_step}] share storage "
                        f"{sid} while both alive at step {step} (and they are no in-place pair)"
                    )
                taken.add(earlier.name)
    return ""


def plan_bytes(entries: list[Entry], storage: Mapping[str, int]) -> int:
    """The bytes of a plan: per storage id, the largest entry it holds, summed."""
    largest: dict[int, int] = {}
    for entry in entries:
        sid = storage[entry.name]
        largest[sid] = max(largest.get(sid, 0), entry.nbytes)
    return sum(largest.values())


def _grade(planner: Any) -> Result:
    figures = {}
    for name in NETWORKS:
        entries = mxnb_entries(name)
        try:
            storage = planner([*entries])
        except Exception as exc:  # noqa: BLE001 - reported as the answer's error
            return Result(
                False, f"the planner raised {type(exc).__name__}: {exc}", None, "program_error"
            )
        if not isinstance(storage, Mapping):
            return Result(
                False,
                f"return a dict entry name -> storage id, got {type(storage).__name__}",
                None,
                "program_error",
            )
        problem = check_plan(entries, storage)
        if problem:
            return Result(False, f"{name}: the plan check fails: {problem}", None, "overlap")
        figures[name] = (plan_bytes(entries, storage), _network(name)[1], MXNET_BYTES[name])
    table = "; ".join(
        f"{name}: {mine:,} B (mxnb {ours:,} B, x{mine / ours:.2f}; MXNet 1.9.1 {theirs:,} B, "
        f"x{mine / theirs:.2f})"
        for name, (mine, ours, theirs) in figures.items()
    )
    over = [name for name, (mine, ours, _) in figures.items() if mine > (1 + TOLERANCE) * ours]
    if over:
        return Result(
            False,
            f"legal, but more than {TOLERANCE:.0%} above mxnb's plan on {', '.join(over)}: "
            f"{table}. Reuse storage whose last reader has run, and take inputs in place",
            None,
            "too_many_bytes",
            {"figures": figures},
        )
    return Result(
        True, f"legal and within {TOLERANCE:.0%}: {table}.", None, "", {"figures": figures}
    )


register(
    Exercise(
        "memory_planner",
        "Memory planning: write the planner",
        "`plan(entries)` gets a training graph's intermediate values (`Entry`: `name`, "
        "`nbytes`, `first_step`, `last_step`, `inplace_candidates`), in the order they are "
        "written, and returns a dict name → storage id. Two entries may share an id when their "
        "lifetimes do not overlap, or as an in-place pair: the target is written at the step "
        "that last reads the source, lists it as a candidate, has its size, and no other entry "
        "took it. The grader checks the plan on LeNet and ResNet-18, then scores its bytes "
        "(the largest entry per id, summed) against mxnb's plan and MXNet 1.9.1's: within 10 % "
        "of mxnb's passes.",
        '''def plan(entries):
    """Every entry its own storage (legal, and the most memory there is)."""
    return {entry.name: index for index, entry in enumerate(entries)}
''',
        '''def plan(entries):
    """MXNet's walk: in place when allowed, else the best-fitting free block, else a new one."""
    by_name = {e.name: e for e in entries}
    storage, size, holder, free, taken = {}, [], {}, [], set()
    last = max(e.last_step for e in entries)
    for step in range(last + 1):
        for e in sorted((e for e in entries if e.first_step == step), key=lambda e: -e.nbytes):
            source = next(
                (c for c in e.inplace_candidates
                 if c in storage and c not in taken and by_name[c].last_step == step
                 and by_name[c].nbytes == e.nbytes and holder[storage[c]] == c),
                None,
            )
            if source is not None:
                taken.add(source)
                block = storage[source]
            else:
                fitting = [b for b in free if size[b] >= e.nbytes]
                if fitting:
                    block = min(fitting, key=lambda b: size[b])
                elif free:
                    block = max(free, key=lambda b: size[b])
                    size[block] = e.nbytes
                else:
                    block = len(size)
                    size.append(e.nbytes)
                if block in free:
                    free.remove(block)
            storage[e.name] = block
            holder[block] = e.name
        for e in entries:  # release after the step's outputs are placed
            if e.last_step == step and holder.get(storage.get(e.name)) == e.name:
                free.append(storage[e.name])
    return storage
''',
        "plan",
        _grade,
        "memory planning",
    )
)
