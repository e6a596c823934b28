"""The threaded engines' fast path "the pusher helps" (``ThreadedEngine._push_opr``) against the rule.

With ``behind`` at -1 the workers always count as behind: every push whose
vars are idle runs at once in the pushing thread (the idle fast path,
:mod:`mxnb.engine.idle`), while the workers run the others.  Random workloads
(reads and writes of a few vars, priorities, failing ops) must then give what
the naive engine — the rule with no threads — gives: every op sees the same
var values, failures reach the same ops, writes to a var complete in push
order, and the trace still shows each op pushed, started after the ops it
depends on, and ended.
"""

from __future__ import annotations

import random
import threading
from typing import Any

import pytest

import mxnb as mx
from mxnb.base import MXNBError
from mxnb.engine.events import OpEnd, OpPush, OpStart


def helping(kind: str) -> Any:
    """A threaded engine whose pushing thread always helps (``behind`` = -1)."""
    engine = mx.engine.create(kind)
    engine.behind = -1
    return engine


def run_workload(engine: Any, seed: int, fail: bool) -> tuple[dict, dict, list]:
    """Push a random workload; return (what each op saw, each var's writes in completion order, events)."""
    rng = random.Random(seed)
    names = [f"v{i}" for i in range(8)]
    variables = {name: engine.new_var(name=name) for name in names}
    values = dict.fromkeys(names, "")
    seen: dict[str, tuple] = {}
    writes: dict[str, list[str]] = {name: [] for name in names}

    def make(op: str, reads: list[str], written: list[str], fails: bool):
        def fn(rctx: Any) -> None:
            seen[op] = tuple(values[name] for name in reads + written)
            if fails:
                raise ValueError(f"{op} fails")
            for name in written:
                values[name] = op
                writes[name].append(op)

        return fn

    with mx.engine.trace() as recorder:
        for index in range(300):
            op = f"op{index}"
            if rng.random() < 0.3:  # an op on a new var: idle, so it runs in the pusher
                names.append(f"new{index}")
                variables[names[-1]] = engine.new_var(name=names[-1])
                values[names[-1]], writes[names[-1]] = "", []
                reads, written = [], [names[-1]]
            else:
                reads = rng.sample(names, rng.randint(0, 2))
                written = rng.sample(
                    [n for n in names if n not in reads], rng.randint(0 if reads else 1, 2)
                )
            engine.push_sync(
                make(op, reads, written, fail and rng.random() < 0.03),
                mx.cpu(),
                [variables[n] for n in reads],
                [variables[n] for n in written],
                priority=rng.choice((0, 0, 0, 0, 1, 5)),
                name=op,
            )
        try:
            engine.wait_for_all()
        except MXNBError:
            pass
    return seen, writes, recorder.events


def check_trace(events: list) -> set[str]:
    """Every op pushed, started after the ops it waits on ended, ended once; return the workers."""
    ended: set[int] = set()
    pushed: dict[int, OpPush] = {}
    workers = set()
    for event in events:
        if type(event) is OpPush:
            pushed[event.op_id] = event
        elif type(event) is OpStart:
            waits = {dep.op_id for dep in pushed[event.op_id].waits_on}
            assert waits <= ended, f"op {event.op_id} started before {waits - ended} ended"
            workers.add(event.worker)
        elif type(event) is OpEnd:
            assert event.op_id not in ended
            ended.add(event.op_id)
    assert set(pushed) == ended
    return workers


@pytest.mark.timeout(120)
@pytest.mark.parametrize("kind", ["threaded", "threaded_per_device"])
@pytest.mark.parametrize("fail", [False, True])
def test_the_pusher_helping_runs_random_workloads_as_the_rule_says(kind, fail):
    pusher_ran = 0
    for seed in range(8):
        engine, naive = helping(kind), mx.engine.create("naive")
        try:
            got = run_workload(engine, seed, fail)
            expected = run_workload(naive, seed, fail)
        finally:
            engine.shutdown(timeout=10)
            naive.shutdown(timeout=10)
        assert got[0] == expected[0], f"seed {seed}: an op saw other values"
        assert got[1] == expected[1], f"seed {seed}: writes completed in another order"
        workers = check_trace(got[2])
        pusher_ran += sum(1 for e in got[2] if type(e) is OpStart and e.worker.endswith("/push"))
        assert workers <= {
            *engine.workers(),
            *(f"{w.rsplit('/', 1)[0]}/push" for w in engine.workers()),
        }
    assert pusher_ran > 80  # the pushing thread did run ops (fewer once a var failed)


@pytest.mark.timeout(30)
def test_a_thread_inside_an_op_never_helps():
    """An op run by the helping pusher that pushes leaves its pushes to the rule: none runs inside it."""
    engine = mx.engine.create("threaded_per_device")
    gate = threading.Event()
    held = threading.Semaphore(0)
    stacks = []

    def hold(rctx):
        held.release()
        gate.wait(10)

    try:
        for _ in range(2):  # hold both workers
            engine.push_sync(hold, mx.cpu(), mutate_vars=[engine.new_var()], name="hold")
        assert held.acquire(timeout=10) and held.acquire(timeout=10)
        engine.behind = -1  # now the pusher helps at every push

        def outer(rctx):
            stacks.append(rctx.worker)  # both workers are held by the gates: the pusher
            for _ in range(5):
                engine.push_sync(
                    lambda r: stacks.append(len(mx.engine.base._running_stack())), mx.cpu()
                )

        engine.push_sync(outer, mx.cpu(), mutate_vars=[engine.new_var()], name="outer")
        engine.push_sync(lambda r: None, mx.cpu(), mutate_vars=[engine.new_var()])
        gate.set()
        engine.wait_for_all()
        assert stacks == ["cpu(0)/push", *[1] * 5]  # each pushed op ran alone on its stack
    finally:
        gate.set()
        engine.shutdown(timeout=10)


@pytest.mark.timeout(30)
def test_gpu_pools_are_never_helped():
    engine = helping("threaded_per_device")
    workers = []
    try:
        for _ in range(50):
            engine.push_sync(
                lambda r: workers.append(r.worker), mx.gpu(0), mutate_vars=[engine.new_var()]
            )
        engine.wait_for_all()
        assert workers and not any(w.endswith("/push") for w in workers)
    finally:
        engine.shutdown(timeout=10)
