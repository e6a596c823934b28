"""DependencyGraph: DOT edges, kinds, states; windows, filters, the bipartite picture."""

from __future__ import annotations

import pathlib
import re

import pytest

import mxnb as mx
from mxnb.widgets import DependencyGraph


def dot_edges(source: str) -> set[tuple[str, str, str]]:
    return set(re.findall(r"(\w+) -> (\w+) \[label=\"([^\"]*)\"", source))


def test_dot_has_every_dependency_with_var_and_kind(diamond):
    source = DependencyGraph(diamond).to_dot().source
    assert dot_edges(source) == {
        ("op1", "op2", "a RAW"),
        ("op1", "op3", "a RAW"),
        ("op2", "op4", "a WAR"),
        ("op3", "op4", "a WAR"),
        ("op4", "op5", "a WAW"),
    }


def test_nodes_coloured_by_state(diamond):
    source = DependencyGraph(diamond).to_dot().source
    for op_id, state in [(1, "done"), (3, "failed"), (4, "skipped"), (5, "waiting")]:
        assert re.search(rf"op{op_id} \[label=\"#{op_id} \w+\ncpu\(0\) · {state}\"", source)
    from mxnb.widgets._render import state_colours

    assert state_colours["failed"] in source and state_colours["skipped"] in source


def test_window_keeps_edges_from_outside_as_ghosts(diamond):
    graph = DependencyGraph(diamond, last=1)
    assert [op.op_id for op in graph.visible_ops()] == [5]
    source = graph.to_dot().source
    assert dot_edges(source) == {("op4", "op5", "a WAW")}
    assert "dashed" in source  # op4 drawn as a ghost


def test_filters(diamond):
    assert [op.op_id for op in DependencyGraph(diamond, name_filter="r").visible_ops()] == [2, 3]
    assert [op.op_id for op in DependencyGraph(diamond, var_filter="b").visible_ops()] == [2]


def test_bipartite_versions_reads_and_writes(diamond):
    source = DependencyGraph(diamond, show_vars=True).to_dot().source
    assert "op1 -> var10_1 [label=write" in source
    assert "var10_1 -> op2 [label=read" in source
    assert "op4 -> var10_2 [label=write" in source
    assert "op2 -> op4 [label=WAR" in source  # the new version waits for the old one's readers
    assert "var10_2 -> op5 [label=WAW" in source


def test_headless_forms(diamond, tmp_path):
    graph = DependencyGraph(diamond)
    assert "<svg" in graph.to_svg() and 'id="op3"' in graph.to_svg()
    path = graph.to_png(tmp_path / "dag.png")
    assert pathlib.Path(path).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "#3 -> #4  a WAR" in str(graph)
    bundle = graph._repr_mimebundle_()
    assert set(bundle) == {"image/svg+xml", "text/plain"}


@pytest.mark.timeout(60)
def test_real_engine_program_gives_expected_edges():
    r"""
    write_a           writes a
      |  \
    read1 read2       read a (RAW)
      \  /
    write_a2          writes a (WAR on both readers)
    """
    eng = mx.engine.create("threaded")
    with mx.engine.trace() as trace:
        a = eng.new_var(name="a")
        eng.push_sync(lambda rctx: None, mx.cpu(), mutate_vars=[a], name="write_a")
        eng.push_sync(lambda rctx: None, mx.cpu(), const_vars=[a], name="read1")
        eng.push_sync(lambda rctx: None, mx.cpu(), const_vars=[a], name="read2")
        eng.push_sync(lambda rctx: None, mx.cpu(), mutate_vars=[a], name="write_a2")
        eng.wait_for_all()
    graph = DependencyGraph(trace)
    names = {op.op_id: op.name for op in graph.visible_ops()}
    kinds = {
        (names[e.holder], names[e.waiter], e.kind.name)
        for e in graph.visible_edges()
        if e.holder in names
    }
    # the engine records only dependencies still unfinished at push time
    assert kinds <= {
        ("write_a", "read1", "RAW"),
        ("write_a", "read2", "RAW"),
        ("read1", "write_a2", "WAR"),
        ("read2", "write_a2", "WAR"),
        ("write_a", "write_a2", "WAW"),
    }
    assert all(op.state.value == "done" for op in graph.visible_ops())
    shutdown = getattr(eng, "shutdown", None)
    if shutdown:
        shutdown()


def test_step_engine_program_records_all_edges():
    r"""With the step engine nothing runs at push, so every dependency is recorded."""
    eng = mx.engine.create("step")
    with mx.engine.trace() as trace:
        a = eng.new_var(name="a")
        eng.push_sync(lambda rctx: None, mx.cpu(), mutate_vars=[a], name="write_a")
        eng.push_sync(lambda rctx: None, mx.cpu(), const_vars=[a], name="read1")
        eng.push_sync(lambda rctx: None, mx.cpu(), mutate_vars=[a], name="write_a2")
        eng.run()
    graph = DependencyGraph(trace)
    names = {op.op_id: op.name for op in graph.visible_ops()}
    kinds = {(names[e.holder], names[e.waiter], e.kind.name) for e in graph.visible_edges()}
    assert ("write_a", "read1", "RAW") in kinds
    assert ("read1", "write_a2", "WAR") in kinds


def test_empty_trace_draws(push):
    from mxnb.engine.tracing import Trace

    assert "no ops traced yet" in DependencyGraph(Trace()).to_dot().source
    assert DependencyGraph([push(0, 1, "x")]).to_text().startswith("DependencyGraph: 1 of 1")


@pytest.fixture
def loop_with_deletes(push):
    r"""``a = a * 2`` twice as NDArray records it while a trace runs: a delete per freed array.

    #1 ones -> nd1;  #2 mul reads nd1 -> nd2;  #3 delete:nd1 (WAR on #2)
    #4 mul reads nd2 -> nd3;  #5 delete:nd2 (WAR on #4)
    """
    from mxnb.engine.tracing import VarNew

    return [
        VarNew(0.0, 1, "nd1"),
        VarNew(0.0, 2, "nd2"),
        VarNew(0.0, 3, "nd3"),
        push(0.000, 1, "ones", writes=[1]),
        push(0.001, 2, "mul", reads=[1], writes=[2], waits=[(1, 1, "RAW")]),
        push(0.002, 3, "delete:nd1", writes=[1], waits=[(2, 1, "WAR")]),
        push(0.003, 4, "mul", reads=[2], writes=[3], waits=[(2, 2, "RAW")]),
        push(0.004, 5, "delete:nd2", writes=[2], waits=[(4, 2, "WAR")]),
    ]


def test_deletes_fold_into_the_op_that_freed_the_array(loop_with_deletes):
    graph = DependencyGraph(loop_with_deletes)
    assert [op.op_id for op in graph.visible_ops()] == [1, 2, 4]
    assert graph.freed() == {2: ["ones#1 out"], 4: ["mul#2 out"]}  # named after their writers
    source = graph.to_dot().source
    assert "delete:" not in source.replace("frees", "")
    assert dot_edges(source) == {("op1", "op2", "ones#1 out RAW"), ("op2", "op4", "mul#2 out RAW")}
    assert re.search(r'op2 \[label="#2 mul\ncpu\(0\) · waiting\nfrees ones#1 out"', source)
    assert "#4 mul" in graph.to_text() and "frees mul#2 out" in graph.to_text()
    # the window counts drawn ops: the last two are the muls, not a mul and a delete
    assert [op.op_id for op in DependencyGraph(loop_with_deletes, last=2).visible_ops()] == [2, 4]


def test_show_deletes_draws_them_as_nodes(loop_with_deletes):
    graph = DependencyGraph(loop_with_deletes, show_deletes=True)
    assert [op.op_id for op in graph.visible_ops()] == [1, 2, 3, 4, 5]
    assert graph.freed() == {}
    assert ("op2", "op3", "ones#1 out WAR") in dot_edges(graph.to_dot().source)
    # a name filter asking for deletes shows them too
    named = DependencyGraph(loop_with_deletes, name_filter="delete")
    assert [op.op_id for op in named.visible_ops()] == [3, 5]
    # so does the op/var picture when asked
    assert (
        "delete:nd1"
        in DependencyGraph(loop_with_deletes, show_vars=True, show_deletes=True).to_dot().source
    )
    assert "delete:nd1" not in DependencyGraph(loop_with_deletes, show_vars=True).to_dot().source


def test_independent_ops_are_laid_out_in_rows(push):
    from mxnb.widgets.dag import ROW

    graph = DependencyGraph([push(0.001 * i, i, f"op{i}", writes=[100 + i]) for i in range(1, 41)])
    source = graph.to_dot().source
    invisible = re.findall(r"op(\d+) -> op(\d+) \[style=invis\]", source)
    assert [(int(a), int(b)) for a, b in invisible] == [(i, i + ROW) for i in range(1, 41 - ROW)]
    svg = graph.to_svg()
    width, height = (
        float(v) for v in re.search(r'width="([\d.]+)pt" height="([\d.]+)pt"', svg).groups()
    )
    assert width < 1000, f"40 independent ops make {ROW} columns, not one {width:.0f} pt strip"
    assert height < 500


def test_a_short_chain_is_drawn_small(push):
    chain = [
        push(0.000, 1, "a", writes=[1]),
        push(0.001, 2, "b", reads=[1], writes=[2], waits=[(1, 1, "RAW")]),
        push(0.002, 3, "c", reads=[2], writes=[3], waits=[(2, 2, "RAW")]),
    ]
    svg = DependencyGraph(chain).to_svg()
    width, height = (
        float(v) for v in re.search(r'width="([\d.]+)pt" height="([\d.]+)pt"', svg).groups()
    )
    # the browser shows the drawing at its natural size (canvas.js), about 1.33 px a pt
    assert width < 200 and height < 300


def test_a_bulk_segment_shows_one_step_per_line():
    """An executor's bulk segment is one op; its box lists the steps it ran, one per line."""
    from mxnb.executor import zoo

    exe = zoo.mlp().simple_bind(mx.cpu(), data=(2, 784), grad_req="null")
    exe.forward()
    mx.nd.waitall()
    with mx.engine.bulk(15), mx.engine.trace() as trace:
        exe.forward()
        mx.nd.waitall()
    source = DependencyGraph(trace).to_dot().source
    assert "bulk[\n  fc1,\n  relu1,\n  fc2,\n  relu2,\n  fc3,\n  softmax]" in source


def test_edges_implied_by_a_chain_are_hidden_and_counted(push):
    """#1 -> #2 -> #3 and #1 -> #3: the last is implied (issue 39 item 10); two vars share one edge."""
    events = [
        push(0.000, 1, "w", writes=[1, 2]),
        push(0.001, 2, "f", reads=[1, 2], writes=[3], waits=[(1, 1, "RAW"), (1, 2, "RAW")]),
        push(0.002, 3, "g", reads=[1, 3], writes=[4], waits=[(1, 1, "RAW"), (2, 3, "RAW")]),
    ]
    graph = DependencyGraph(events)
    source = graph.to_dot().source
    assert dot_edges(source) == {
        ("op1", "op2", "w#1 out0 RAW\nw#1 out1 RAW"),
        ("op2", "op3", "f#2 out RAW"),
    }
    assert graph.hidden_edges == 1
    assert "1 implied dependencies hidden" in source
    assert len(graph.visible_edges()) == 4  # the text and Inspect still list every edge
    every = DependencyGraph(events, implied=True)
    assert ("op1", "op3", "w#1 out0 RAW") in dot_edges(every.to_dot().source)
    assert every.hidden_edges == 0 and "hidden" not in every.to_dot().source
