"""EngineModel: what the trace says about ops, edges, lanes, memory and stats."""

from __future__ import annotations

import pytest

from mxnb.engine.tracing import DepKind, OpEnd, OpStart
from mxnb.widgets.model import EngineModel, OpState


def test_states_follow_events(diamond):
    model = EngineModel(diamond)
    states = {op_id: op.state for op_id, op in model.ops.items()}
    assert states == {
        1: OpState.DONE,
        2: OpState.DONE,
        3: OpState.FAILED,
        4: OpState.SKIPPED,
        5: OpState.WAITING,
    }


def test_state_sequence_waiting_ready_running_done(push):
    model = EngineModel([push(0.0, 1, "op", writes=[1])])
    assert model.ops[1].state is OpState.WAITING
    from mxnb.engine.tracing import OpReady

    model.update([OpReady(0.1, 1)])
    assert model.ops[1].state is OpState.READY
    model.update([OpStart(0.2, 1, "cpu(0)/0", "t")])
    assert model.ops[1].state is OpState.RUNNING
    model.update([OpEnd(0.3, 1)])
    assert model.ops[1].state is OpState.DONE
    assert model.ops[1].duration == pytest.approx(0.1)


def test_edges_carry_var_and_kind(diamond):
    model = EngineModel(diamond)
    edges = {(e.holder, e.waiter, model.var_name(e.var_id), e.kind) for e in model.edges}
    assert edges == {
        (1, 2, "a", DepKind.RAW),
        (1, 3, "a", DepKind.RAW),
        (2, 4, "a", DepKind.WAR),
        (3, 4, "a", DepKind.WAR),
        (4, 5, "a", DepKind.WAW),
    }


def test_lanes_grouped_by_device_copy_workers_last(push):
    events = []
    for op_id, worker in enumerate(["copy/0", "gpu(0)/0", "cpu(0)/1", "cpu(0)/0"], start=1):
        events += [push(0, op_id, "op"), OpStart(0.1, op_id, worker, "t"), OpEnd(0.2, op_id)]
    lanes = EngineModel(events).lanes()
    assert [lane.worker for lane in lanes] == ["cpu(0)/0", "cpu(0)/1", "gpu(0)/0", "copy/0"]
    assert [lane.is_copy for lane in lanes] == [False, False, False, True]


def test_critical_path_follows_the_last_finishing_dependency(diamond):
    model = EngineModel(diamond)
    # #4 ended last (skipped at 7 ms); of its two readers #3 finished last; #3 waited on #1
    assert model.critical_path() == [1, 3, 4]


def test_memory_series_in_use_held_hits_misses_peak(diamond):
    series = EngineModel(diamond).memory["cpu(0)"]
    assert series.in_use == [4096, 5120, 1024, 5120, 4096]
    assert series.held == [4096, 5120, 5120, 5120, 4096]
    assert (series.hits, series.misses) == (1, 2)
    assert series.peak == 5120


def test_stats_and_utilisation(diamond):
    model = EngineModel(diamond)
    rows = {row.name: row for row in model.stats()}
    assert rows["r2"].count == 1 and rows["r2"].failed == 1
    assert rows["r1"].total == pytest.approx(0.002)
    assert rows["w"].max == pytest.approx(0.001)
    util = model.utilisation()
    assert set(util) == {"cpu(0)/0", "cpu(0)/1"}
    assert util["cpu(0)/0"] == pytest.approx(0.003 / 0.007)


def test_blockers_say_who_holds_which_var(diamond):
    model = EngineModel(diamond[:8])  # pushes only: nothing has run
    blockers = model.blockers(4)
    assert [(b.holder.op_id, b.var_name, b.dependency.kind) for b in blockers] == [
        (2, "a", DepKind.WAR),
        (3, "a", DepKind.WAR),
    ]
    text = model.explain(4)
    assert "waits on #2 r1" in text and "which 'r1' still reads" in text and "[WAR]" in text


def test_incremental_update_matches_one_shot(diamond):
    from mxnb.engine.tracing import Trace

    trace = Trace()
    model = EngineModel()
    for event in diamond:
        trace.events.append(event)
        model.update_from(trace)
    whole = EngineModel(diamond)
    assert {k: v.state for k, v in model.ops.items()} == {k: v.state for k, v in whole.ops.items()}
    trace.clear()
    model.update_from(trace)
    assert model.ops == {}


def test_select_window_and_filters(diamond):
    model = EngineModel(diamond)
    assert [op.op_id for op in model.select(last=2)] == [4, 5]
    assert [op.op_id for op in model.select(name="r")] == [2, 3]
    assert [op.op_id for op in model.select(var="b")] == [2]


def test_stats_group_generated_names(push):
    events = []
    for op_id, name in enumerate(["delete:nd1", "delete:nd2", "add"], start=1):
        events += [push(0, op_id, name), OpStart(0, op_id, "cpu(0)/0", "t"), OpEnd(0.001, op_id)]
    assert {row.name: row.count for row in EngineModel(events).stats()} == {"delete": 2, "add": 1}
