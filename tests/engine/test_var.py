"""MXNet's dependency rule, op by op, on bare Var / Opr objects (no engine, no threads).

Each test drives the four operations the way an engine does: append every
var of an op, take the pusher's count off (``decrement_wait``), and complete
the vars of a finished op; the ops reported ready are the ones it may run.
"""

from __future__ import annotations

import itertools
import random

from mxnb.engine.var import Opr, Var


def push(op_id: int, reads=(), writes=()) -> tuple[Opr, bool]:
    """Append a new op to its vars as an engine would; return it and whether it is ready."""
    opr = Opr(op_id, f"op{op_id}", tuple(reads), tuple(writes))
    for var in opr.const_vars:
        var.append_read_dependency(opr)
    for var in opr.mutate_vars:
        var.append_write_dependency(opr)
    return opr, opr.decrement_wait()


def complete(opr: Opr) -> list[Opr]:
    """Complete an op's vars as an engine would; return the ops made ready."""
    ready: list[Opr] = []
    for var in opr.const_vars:
        ready += var.complete_read_dependency()
    for var in opr.mutate_vars:
        ready += var.complete_write_dependency()
    return ready


def test_reads_share_a_var_and_a_write_waits_for_all_of_them():
    """w1 -> (r2, r3) -> w4: both reads run at once, the write after both."""
    a = Var("a")
    w1, ready1 = push(1, writes=[a])
    r2, ready2 = push(2, reads=[a])
    r3, ready3 = push(3, reads=[a])
    w4, ready4 = push(4, writes=[a])
    assert (ready1, ready2, ready3, ready4) == (True, False, False, False)
    assert complete(w1) == [r2, r3]  # the run of reads behind the write, in push order
    assert complete(r2) == []  # r3 still reads
    assert complete(r3) == [w4]  # the last read grants the pending write
    assert complete(w4) == []
    assert a.pending_write is None and a.pending_reads == 0 and not a.queue
    assert (a.writes_pushed, a.writes_done, a.version) == (2, 2, 2)


def test_version_counts_completed_writes_as_mxnet_does():
    """MXNet's ``version_`` goes up in ``CompleteWriteDependency``, not when a write is pushed."""
    a = Var("a")
    w1, _ = push(1, writes=[a])
    w2, _ = push(2, writes=[a])
    assert (a.writes_pushed, a.version) == (2, 0)
    complete(w1)
    assert a.version == 1
    complete(w2)
    assert a.version == 2


def test_an_op_waits_for_every_var_before_it_is_ready():
    a, b = Var("a"), Var("b")
    wa, _ = push(1, writes=[a])
    wb, _ = push(2, writes=[b])
    both, ready = push(3, reads=[a], writes=[b])
    assert not ready and both.wait_count == 2
    assert complete(wa) == []  # a granted, b still held
    assert complete(wb) == [both]


def test_writes_are_granted_one_at_a_time_in_push_order():
    a = Var("a")
    writes = [push(i, writes=[a]) for i in range(1, 5)]
    assert [ready for _, ready in writes] == [True, False, False, False]
    for (current, _), (following, _) in itertools.pairwise(writes):
        assert complete(current) == [following]


def test_random_workloads_run_in_an_order_the_rule_allows():
    """Any op reported ready conflicts with no incomplete earlier op (checked by brute force)."""
    rng = random.Random(7)
    for _ in range(50):
        variables = [Var(f"v{i}") for i in range(4)]
        ops, pending, done = [], [], set()
        for op_id in range(1, 25):
            reads = rng.sample(variables, rng.randint(0, 2))
            writes = [v for v in rng.sample(variables, rng.randint(0, 2)) if v not in reads]
            opr, ready = push(op_id, reads, writes)
            ops.append(opr)
            if ready:
                pending.append(opr)
        while pending:
            opr = pending.pop(rng.randrange(len(pending)))
            for earlier in ops[: opr.id - 1]:
                conflict = set(earlier.mutate_vars) & set(opr.const_vars + opr.mutate_vars) or (
                    set(earlier.const_vars) & set(opr.mutate_vars)
                )
                assert not conflict or earlier.id in done, (earlier, opr)
            done.add(opr.id)
            pending += complete(opr)
        assert done == {op.id for op in ops}  # nothing left waiting


def _check_invariants(variables: list[Var], ops: list[Opr]) -> None:
    """MXNet's checks: ``CHECK_GE(num_pending_reads_, 0)`` and a wait counter never below zero."""
    for var in variables:
        assert var.pending_reads >= 0, var
        assert var.writes_done <= var.writes_pushed, var
        if var.pending_write is None:
            assert not var.queue, f"{var}: ops queued behind no write"
    for opr in ops:
        assert opr.wait_count >= 0, opr


def test_the_counts_never_go_negative_on_random_workloads():
    """After every append and every completion, MXNet's invariants hold."""
    rng = random.Random(11)
    for _ in range(100):
        variables = [Var(f"v{i}") for i in range(3)]
        ops, pending = [], []
        for op_id in range(1, 30):
            reads = rng.sample(variables, rng.randint(0, 2))
            writes = [v for v in rng.sample(variables, rng.randint(0, 2)) if v not in reads]
            opr, ready = push(op_id, reads, writes)
            ops.append(opr)
            _check_invariants(variables, ops)
            if ready:
                pending.append(opr)
            if pending and rng.random() < 0.4:  # completions interleaved with pushes
                pending += complete(pending.pop(rng.randrange(len(pending))))
                _check_invariants(variables, ops)
        while pending:
            pending += complete(pending.pop(rng.randrange(len(pending))))
            _check_invariants(variables, ops)
        assert all(opr.wait_count == 0 for opr in ops)
        assert all(v.pending_reads == 0 and v.pending_write is None for v in variables)
