"""Random programs on every engine give the same result as running them one by one.

A program is a list of steps over a few vars: sync ops, async ops completed
from other threads, pushes of reusable operators, failing ops, deletes and
``wait_for_all`` barriers.  Each op reads the current value of the vars it
reads and writes its own index into the vars it writes.  The reference runs
the same steps sequentially in push order with the engine's error rule (an op
reading a failed var is skipped and its outputs inherit the failure, which
they keep until an op writes them again; a delete still runs, to free memory;
a barrier raises a failure no wait has raised yet).  Every var's history of
writes, every value each reader saw and every barrier's outcome must be
identical.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import mxnb as mx
from mxnb.base import OpError

NUM_VARS = 4
CPU = mx.cpu()


@dataclass
class Step:
    kind: str  # 'sync' | 'async' | 'fail' | 'operator' | 'delete' | 'barrier'
    reads: tuple[int, ...] = ()
    writes: tuple[int, ...] = ()
    handle: int = 0  # for 'operator': which reusable operator


@dataclass
class Outcome:
    histories: dict[int, list[int]] = field(default_factory=dict)  # var -> writer indices
    seen: dict[int, tuple[int, ...]] = field(default_factory=dict)  # op index -> values read
    barriers: list[bool] = field(default_factory=list)  # did each barrier raise?


var_sets = st.lists(st.integers(0, NUM_VARS - 1), max_size=3).map(tuple)


@st.composite
def programs(draw):
    handles = [
        tuple(sorted(set(draw(var_sets)) | {draw(st.integers(0, NUM_VARS - 1))})) for _ in range(2)
    ]
    steps = []
    for _ in range(draw(st.integers(1, 25))):
        kind = draw(
            st.sampled_from(
                ["sync", "sync", "sync", "async", "fail", "operator", "delete", "barrier"]
            )
        )
        if kind == "operator":
            steps.append(Step(kind, handle=draw(st.integers(0, 1))))
        elif kind == "delete":
            steps.append(Step(kind, writes=(draw(st.integers(0, NUM_VARS - 1)),)))
        elif kind == "barrier":
            steps.append(Step(kind))
        else:
            steps.append(Step(kind, draw(var_sets), draw(var_sets)))
    return handles, steps


def normalise(reads, writes):
    writes = tuple(dict.fromkeys(writes))
    reads = tuple(v for v in dict.fromkeys(reads) if v not in writes)
    return reads, writes


def reference(handles, steps) -> Outcome:
    """Run the program sequentially with the engine's error rule."""
    out = Outcome(histories={v: [] for v in range(NUM_VARS)})
    value = dict.fromkeys(range(NUM_VARS), -1)
    failed: dict[int, bool] = {}
    deleted: set[int] = set()
    pending_failure = False  # a failure not yet raised by a barrier
    for index, step in enumerate(steps):
        if step.kind == "barrier":
            out.barriers.append(pending_failure)
            pending_failure = False  # raised; the vars keep their failure
            continue
        reads, writes = normalise(*(handles_vars(handles, step)))
        if deleted & set(reads + writes):
            continue  # refused at push (the engine raises VarDeletedError)
        if step.kind == "delete":
            deleted.update(writes)
        if step.kind != "delete" and any(failed.get(v) for v in reads):
            for v in writes:
                failed[v] = True
            continue
        if step.kind == "fail":
            pending_failure = True
            for v in writes:
                failed[v] = True
            continue
        out.seen[index] = tuple(value[v] for v in reads)
        for v in writes:
            failed[v] = False  # written again
            value[v] = index
            out.histories[v].append(index)
    return out


def handles_vars(handles, step):
    if step.kind == "operator":
        return (), handles[step.handle]
    return step.reads, step.writes


def run_on(engine, handles, steps, completer, expected: Outcome) -> Outcome:
    """Run the program on ``engine`` and collect the same observations.

    A reusable operator's function cannot know which push it runs for; the
    k-th run is matched to the k-th push the reference did *not* skip (an
    engine that runs a push it should skip then runs out of pushes and fails).
    """
    out = Outcome(histories={v: [] for v in range(NUM_VARS)})
    value = dict.fromkeys(range(NUM_VARS), -1)
    variables = [engine.new_var(name=f"v{i}") for i in range(NUM_VARS)]
    deleted: set[int] = set()

    def body(index, reads, writes):
        out.seen[index] = tuple(value[v] for v in reads)
        for v in writes:
            value[v] = index
            out.histories[v].append(index)

    # reusable operators: the k-th run of a handle belongs to its k-th unskipped push
    pushes_of: dict[int, list[int]] = {
        h: [
            i
            for i, s in enumerate(steps)
            if s.kind == "operator" and s.handle == h and i in expected.seen
        ]
        for h in (0, 1)
    }
    runs_of = {0: 0, 1: 0}

    def make_handle_fn(h):
        def fn(rctx, on_complete):
            index = pushes_of[h][runs_of[h]]
            runs_of[h] += 1
            body(index, (), handles[h])
            on_complete()

        return fn

    operators = [
        engine.new_operator(make_handle_fn(h), [], [variables[v] for v in handles[h]], name=f"h{h}")
        for h in (0, 1)
    ]
    for index, step in enumerate(steps):
        if step.kind == "barrier":
            try:
                engine.wait_for_all()
                out.barriers.append(False)
            except OpError:
                out.barriers.append(True)
            continue
        reads, writes = normalise(*handles_vars(handles, step))
        if deleted & set(reads + writes):
            with pytest.raises(mx.base.VarDeletedError):
                engine.push_sync(
                    lambda rctx: None,
                    CPU,
                    [variables[v] for v in reads],
                    [variables[v] for v in writes],
                )
            continue
        const = [variables[v] for v in step.reads]
        mutate = [variables[v] for v in step.writes]
        if step.kind == "sync":
            engine.push_sync(
                lambda rctx, i=index, r=reads, w=writes: body(i, r, w), CPU, const, mutate
            )
        elif step.kind == "async":

            def start(rctx, on_complete, i=index, r=reads, w=writes):
                def finish():
                    body(i, r, w)
                    on_complete()

                completer.submit(finish)

            engine.push_async(start, CPU, const, mutate)
        elif step.kind == "fail":

            def fail(rctx):
                raise RuntimeError("planned failure")

            engine.push_sync(fail, CPU, const, mutate, name=f"fail{index}")
        elif step.kind == "operator":
            engine.push(operators[step.handle], CPU)
        elif step.kind == "delete":
            deleted.update(writes)
            engine.push_delete(
                variables[writes[0]], CPU, fn=lambda rctx, i=index, w=writes: body(i, (), w)
            )
    try:
        engine.wait_for_all()
    except OpError:
        pass
    return out


@pytest.mark.timeout(120)
@pytest.mark.parametrize("engine_name", mx.engine.ENGINE_TYPES)
@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(program=programs())
def test_random_programs_match_sequential_execution(engine_name, program, completer):
    handles, steps = program
    expected = reference(handles, steps)
    engine = mx.engine.create(engine_name)
    try:
        got = run_on(engine, handles, steps, completer, expected)
    finally:
        engine.shutdown(timeout=10)
    assert got.histories == expected.histories
    assert got.seen == expected.seen
    assert got.barriers == expected.barriers
