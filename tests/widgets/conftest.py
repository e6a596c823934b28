"""Shared little traces for the widget tests (built by hand, so each test knows the answer)."""

from __future__ import annotations

import pytest

from mxnb.engine.tracing import (
    Dependency,
    DepKind,
    OpEnd,
    OpPush,
    OpReady,
    OpStart,
    StorageAlloc,
    StorageFree,
    VarNew,
    WaitBegin,
    WaitEnd,
)


@pytest.fixture(name="push")
def push_fixture():
    """The :func:`push` helper, for tests that build their own events."""
    return push


def push(t, op_id, name, reads=(), writes=(), waits=(), ctx="cpu(0)"):
    """An OpPush with ``waits`` given as (op_id, var_id, 'RAW'|'WAR'|'WAW') triples."""
    deps = tuple(Dependency(o, v, DepKind[k]) for o, v, k in waits)
    return OpPush(t, op_id, name, ctx, tuple(reads), tuple(writes), 0, deps, "MainThread")


@pytest.fixture
def diamond():
    r"""
        w        #1 writes a
       / \
     r1   r2     #2 reads a, writes b; #3 reads a (fails)
       \ /
        w2       #4 writes a (WAR on both readers; skipped: r2 failed... on its var)
        |
        w3       #5 writes a (WAW), still waiting
    """
    return [
        VarNew(0.0, 10, "a"),
        VarNew(0.0, 11, "b"),
        push(0.000, 1, "w", writes=[10]),
        OpReady(0.000, 1),
        push(0.001, 2, "r1", reads=[10], writes=[11], waits=[(1, 10, "RAW")]),
        push(0.001, 3, "r2", reads=[10], waits=[(1, 10, "RAW")]),
        push(0.002, 4, "w2", writes=[10], waits=[(2, 10, "WAR"), (3, 10, "WAR")]),
        push(0.002, 5, "w3", writes=[10], waits=[(4, 10, "WAW")]),
        OpStart(0.003, 1, "cpu(0)/0", "w0"),
        OpEnd(0.004, 1),
        OpReady(0.004, 2),
        OpReady(0.004, 3),
        OpStart(0.004, 2, "cpu(0)/0", "w0"),
        OpStart(0.0045, 3, "cpu(0)/1", "w1"),
        WaitBegin(0.005, 1, 11, "MainThread"),
        OpEnd(0.006, 2),
        WaitEnd(0.006, 1),
        OpEnd(0.007, 3, error="ValueError('boom')"),
        OpEnd(0.007, 4, error="ValueError('boom')", skipped=True),
        StorageAlloc(0.0, "cpu(0)", 1, 4096, False),
        StorageAlloc(0.001, "cpu(0)", 2, 1024, False),
        StorageFree(0.002, "cpu(0)", 1, 4096, True),
        StorageAlloc(0.003, "cpu(0)", 3, 4096, True),
        StorageFree(0.004, "cpu(0)", 2, 1024, False),
    ]


def _noop(rctx):
    return None


def _finished_bars(timeline: dict) -> int:
    """How many op bars of ``Timeline.to_data()`` show a finished op."""
    lanes = timeline.get("lanes", [])
    return sum(bar[4] == "done" for lane in lanes if lane["kind"] == "worker" for bar in lane["bars"])


def _stream_tiny_ops(eng, count: int) -> None:
    """Push ``count`` no-op writers over 8 vars, then wait for all."""
    import mxnb as mx

    variables = [eng.new_var(name=f"v{i}") for i in range(8)]
    for i in range(count):
        eng.push_sync(_noop, mx.cpu(), mutate_vars=[variables[i % 8]], name="tiny")
    eng.wait_for_all()


@pytest.fixture(name="finished_bars")
def finished_bars_fixture():
    """``finished_bars(timeline_data)``: the finished ops a browser-drawn timeline shows."""
    return _finished_bars


@pytest.fixture(name="stream_tiny_ops")
def stream_tiny_ops_fixture():
    """``stream_tiny_ops(engine, count)``: thousands of tiny ops for the catch-up tests."""
    return _stream_tiny_ops
