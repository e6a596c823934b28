"""The naive engine's idle fast paths (``_push_idle``, ``push_sync_one_var``) against the plain rule.

The fast paths write the rule's booking out for an op whose vars are all
idle (``push_sync_one_var``: for an op on one var, with push_sync's checks).  These tests run the same random workloads — nested pushes on busy and
idle vars, reads and writes, failing ops, deletes, waits — once through the
naive engine and once through a naive engine whose every push takes the plain
rule (``Engine._push_opr``), and assert identical runs: the order ops run in,
every var's state as each op sees it, the trace (pushes with their
dependency edges, starts, ends) and the final var states.
"""

from __future__ import annotations

import random
import re
from typing import Any

import pytest

import mxnb as mx
from mxnb.base import MXNBError
from mxnb.engine.base import Engine
from mxnb.engine.events import OpEnd, OpPush, OpReady, OpStart, VarDelete
from mxnb.engine.naive import NaiveEngine
from mxnb.engine.var import RUNNING, Opr
from mxnb.engine.waiting import _local


class PlainNaive(NaiveEngine):
    """The naive engine with every push through the plain rule: no idle fast path."""

    _push_opr = Engine._push_opr
    push_sync = Engine.push_sync


def var_state(var: Any) -> tuple:
    """A var's rule state, with ops by name (op ids differ between the two runs)."""
    holder = var.pending_write
    return (
        var.name,
        var.pending_reads,
        None if holder is None else holder.name,
        var.writes_pushed,
        var.writes_done,
        [(opr.name, is_write) for opr, is_write in (var.queue or ())],
        var.deleted,
        var.error is not None,
    )


def run_workload(engine: NaiveEngine, seed: int, fail: bool) -> tuple[list, list, list]:
    """Push a random workload; return (what each op saw, the trace, final var states)."""
    rng = random.Random(seed)
    variables = [engine.new_var(name=f"v{i}") for i in range(6)]
    seen: list = []
    count = 0

    def live() -> list:
        return [var for var in variables if not var.deleted]

    def make(name: str, depth: int):
        def fn(rctx: Any) -> None:
            seen.append((name, [var_state(var) for var in variables]))
            if depth < 2 and rng.random() < 0.3:
                push(depth + 1)  # from inside a running op: on its own vars, it waits
            if fail and rng.random() < 0.04:
                raise ValueError(f"{name} fails")

        return fn

    def push(depth: int) -> None:
        nonlocal count
        count += 1
        name = f"op{count}"
        pool = live()
        if len(pool) < 3:
            return
        const = rng.sample(pool, rng.randint(0, 2))
        others = [var for var in pool if var not in const]
        mutate = rng.sample(others, rng.randint(0 if const else 1, 2))
        if rng.random() < 0.5:  # push_sync takes tuples and lists
            const, mutate = tuple(const), tuple(mutate)
        engine.push_sync(make(name, depth), mx.cpu(), const, mutate, name=name)

    with mx.engine.trace() as recorder:
        for _ in range(80):
            push(0)
            roll = rng.random()
            if roll < 0.03 and len(live()) > 4:
                engine.push_delete(rng.choice(live()))
            elif roll < 0.08:
                try:
                    engine.wait_for_var(rng.choice(live()))
                except MXNBError as error:
                    seen.append(("wait raised", type(error).__name__))
        try:
            engine.wait_for_all()
        except MXNBError as error:
            seen.append(("wait_for_all raised", type(error).__name__))
    return seen, normalised(recorder.events), [var_state(var) for var in variables]


def normalised(events: list) -> list:
    """The trace with ops and vars by name, without times and threads."""
    op_names: dict[int, str] = {}
    var_names: dict[int, str] = {}
    out: list = []
    for event in events:
        kind = type(event)
        if hasattr(event, "var_id") and hasattr(event, "name"):
            var_names[event.var_id] = event.name
        if kind is OpPush:
            op_names[event.op_id] = event.name
            waits = [
                (op_names.get(dep.op_id), var_names.get(dep.var_id), dep.kind)
                for dep in event.waits_on
            ]
            const = [var_names.get(v) for v in event.const_vars]
            mutate = [var_names.get(v) for v in event.mutate_vars]
            out.append(("push", event.name, const, mutate, waits))
        elif kind is OpReady:
            out.append(("ready", op_names[event.op_id]))
        elif kind is OpStart:
            out.append(("start", op_names[event.op_id], event.worker))
        elif kind is OpEnd:
            out.append(("end", op_names[event.op_id], event.error, event.skipped))
        elif kind is VarDelete:
            out.append(("delete", var_names.get(event.var_id)))
    return out


def counting(engine: NaiveEngine, method: str) -> list[int]:
    """Count the calls of ``engine.<method>`` in the returned one-item list."""
    calls = [0]
    original = getattr(engine, method)

    def counted(*args: Any, **kwargs: Any) -> Any:
        calls[0] += 1
        return original(*args, **kwargs)

    setattr(engine, method, counted)
    return calls


@pytest.mark.parametrize("fail", [False, True])
def test_the_idle_fast_paths_run_random_workloads_as_the_plain_rule(fail):
    released = one_var = 0  # ops released by _complete_idle; pushes push_sync_one_var took
    for seed in range(25):
        fast, plain = NaiveEngine(), PlainNaive()
        idle_ends = counting(fast, "_complete_idle")
        # every push of the plain engine goes through _push_opr; the one-var form's do not
        fast_pushes, plain_pushes = counting(fast, "_push_opr"), counting(plain, "_push_opr")
        try:
            got = run_workload(fast, seed, fail)
            expected = run_workload(plain, seed, fail)
        finally:
            fast.shutdown(timeout=10)
            plain.shutdown(timeout=10)
        assert got[0] == expected[0], f"seed {seed}: ops ran differently"
        assert got[1] == expected[1], f"seed {seed}: traces differ"
        assert got[2] == expected[2], f"seed {seed}: final var states differ"
        released += idle_ends[0]
        one_var += plain_pushes[0] - fast_pushes[0]
    assert released > 300 and one_var > 80  # the workloads took both entries of the fast path


def test_an_op_pushed_behind_an_idle_op_while_it_runs_is_released_by_the_rule():
    engine = NaiveEngine()
    var = engine.new_var(name="v")
    order = []

    def outer(rctx):
        engine.push_sync(lambda rctx: order.append("inner"), mx.cpu(), [var], name="inner")
        order.append("outer")

    try:
        engine.push_sync(outer, mx.cpu(), mutate_vars=[var], name="outer")
        assert order == ["outer", "inner"]
        assert (var.pending_reads, var.pending_write, var.queue) == (0, None, var.queue)
        assert not var.queue and var.writes_done == 1 and var.writes_pushed == 1
    finally:
        engine.shutdown(timeout=10)


def test_an_idle_op_beside_another_pending_op_looks_at_its_vars_and_releases_them():
    engine = NaiveEngine()
    outer_var, inner_var = engine.new_var(name="a"), engine.new_var(name="b")
    released = counting(engine, "_complete_idle")
    pending, inner_after = [], []

    def outer(rctx):  # pending while the inner op, on another var, runs and completes
        engine.push_sync(
            lambda rctx: pending.append(engine._num_pending), mx.cpu(), [], [inner_var]
        )
        inner_after.append((inner_var.pending_write, inner_var.writes_done))

    try:
        engine.push_sync(outer, mx.cpu(), mutate_vars=[outer_var])
        assert pending == [2]  # the release could not take "the only op pending"
        assert inner_after == [(None, 1)]  # ... and released the inner op before outer ended
        assert released == [2]  # both ops released by the fast path, not by the rule
        assert (outer_var.writes_done, outer_var.pending_write, engine._num_pending) == (1, None, 0)
    finally:
        engine.shutdown(timeout=10)


def test_the_idle_fast_path_builds_the_op_opr_would_build():
    """The fast path writes ``Opr(...)`` out: every slot as the class sets it, then granted."""
    engine = NaiveEngine()
    read, written = engine.new_var(name="r"), engine.new_var(name="w")
    ctx = mx.cpu()
    slots = [slot for slot in Opr.__slots__ if slot != "__weakref__"]
    seen = {}

    def fn(rctx):
        opr = _local.stack[-1]
        seen.update({slot: getattr(opr, slot) for slot in slots})

    try:
        engine.push_sync(fn, ctx, [read], [written], priority=3, name="op")
        assert seen, "the op did not run"
        expected = Opr(seen["id"], "op", (read,), (written,), fn, ctx, 3, False, False)
        expected.wait_count = 0  # every var granted
        expected.state = RUNNING
        assert seen == {slot: getattr(expected, slot) for slot in slots}
    finally:
        engine.shutdown(timeout=10)


@pytest.mark.parametrize(
    "bad",
    [
        {"fn": 42},
        {"ctx": "cpu"},
        {"mutate_vars": ("a",)},
        {"mutate_vars": "single var"},
        {"const_vars": "single var"},
        {"priority": "high"},
        {"priority": None},
        {"name": 5},
        {"copy": "yes"},
        {"mutate_vars": "deleted"},
        {"const_vars": "deleted"},
    ],
)
def test_push_sync_one_var_refuses_what_push_sync_refuses_with_its_words(bad):
    """The fused path checks inline and hands anything unusual to ``Engine.push_sync``."""
    messages = []
    for engine in (NaiveEngine(), PlainNaive()):
        var, deleted = engine.new_var(name="a"), engine.new_var(name="gone")
        engine.push_delete(deleted)
        args = {"fn": lambda rctx: None, "ctx": mx.cpu(), "mutate_vars": (var,), "name": "op"}
        args.update(bad)
        for slot in ("const_vars", "mutate_vars"):
            if args.get(slot) == "single var":
                args[slot] = var
            elif args.get(slot) == "deleted":
                args[slot] = [deleted]
        if "const_vars" in bad:
            del args["mutate_vars"]
        try:
            with pytest.raises(MXNBError) as raised:
                engine.push_sync(**args)
            assert engine.num_pending() == 0 and var.writes_pushed == 0  # booked nothing
            messages.append((type(raised.value), re.sub(r"\d+", "N", str(raised.value))))  # var ids
        finally:
            engine.shutdown(timeout=10)
    assert messages[0] == messages[1]


def test_each_op_gets_the_run_context_of_its_own_context_when_contexts_alternate():
    """``RunContextCache.last`` is only a first guess: an op on another context gets its own."""
    engine = NaiveEngine()
    var = engine.new_var(name="v")
    contexts = [mx.cpu(0), mx.cpu(1), mx.Context("cpu", 0), mx.cpu(1), mx.cpu(0)]
    seen = []
    try:
        for ctx in contexts + contexts[::-1]:
            engine.push_sync(lambda rctx, ctx=ctx: seen.append(rctx.ctx is ctx), ctx, [], [var])
            engine.push_sync(lambda rctx, ctx=ctx: seen.append(rctx.ctx is ctx), ctx, [var], [])
        assert seen == [True] * 20
        assert engine._run_contexts.last.ctx is contexts[0]
    finally:
        engine.shutdown(timeout=10)


def test_a_failure_on_other_vars_leaves_the_idle_fast_path_on(monkeypatch):
    """Only an op on a failed var takes the rule (skipped, or recovering it); the rest stay idle.

    Before, one failure anywhere sent every later push through the rule: 1.86x the cost.
    """
    engine = NaiveEngine()
    failed, clean = engine.new_var(name="failed"), engine.new_var(name="clean")

    def boom(rctx):
        raise ValueError("boom")

    engine.push_sync(boom, mx.cpu(), mutate_vars=[failed], name="boom")
    with pytest.raises(MXNBError, match="boom"):
        engine.wait_for_all()
    by_rule = []
    rule = Engine._push_opr

    def counted(self, fn, is_async, ctx, const, mutate, priority, name, *rest):
        by_rule.append(name)
        return rule(self, fn, is_async, ctx, const, mutate, priority, name, *rest)

    monkeypatch.setattr(Engine, "_push_opr", counted)
    ran = []
    try:
        engine.push_sync(lambda rctx: ran.append("w"), mx.cpu(), mutate_vars=[clean], name="w")
        engine.push_sync(lambda rctx: ran.append("r"), mx.cpu(), const_vars=[clean], name="r")
        assert (by_rule, ran) == ([], ["w", "r"])  # the idle fast path
        engine.push_sync(lambda rctx: ran.append("skip"), mx.cpu(), [failed], [clean], name="s")
        assert by_rule == ["s"] and "skip" not in ran and clean.error is failed.error
        engine.push_sync(lambda rctx: ran.append("fix"), mx.cpu(), mutate_vars=[failed], name="f")
        engine.push_sync(lambda rctx: ran.append("again"), mx.cpu(), [failed], name="a")
        assert by_rule == ["s", "f"] and ran[-2:] == ["fix", "again"] and failed.error is None
    finally:
        engine.shutdown(timeout=10)
