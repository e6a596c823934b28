"""Pointwise fusion (mxnb/executor/fusion.py): one kernel per run of elementwise steps, same bits."""

import json

import numpy as np
import pytest

import mxnb as mx
from mxnb.executor import fusion
from mxnb.executor.zoo import lstm
from mxnb.testing.fake_cupy import fake_virtual_gpus

DATA = __import__("pathlib").Path(__file__).parent / "data"


def _lstm(seq_len=4, layers=2):
    sym = lstm.lstm_unrolled(layers, seq_len, num_hidden=8, num_embed=8, num_classes=11)
    shapes = lstm.lstm_shapes(4, layers, seq_len, num_hidden=8, num_embed=8)
    return sym, shapes


def _values(sym, shapes, seed=0):
    rng = np.random.default_rng(seed)
    arg_shapes = sym.infer_shape(**shapes)[0]
    values = {
        name: rng.uniform(-1, 1, shape).astype(np.float32)
        for name, shape in zip(sym.list_arguments(), arg_shapes)
    }
    if "softmax_label" in values:
        values["softmax_label"] = rng.integers(0, 11, shapes["softmax_label"]).astype(np.float32)
    return values


def _step(sym, shapes, values, on, ctx=None, **bind):
    """Outputs and gradients of one training step, fusion ``on`` or off, and the executor."""
    exe = sym.simple_bind(ctx or mx.cpu(), **bind, **shapes)
    for name, value in values.items():
        exe.arg_dict[name][:] = value
    with fusion.fused_on(on):
        exe.forward(is_train=True)
        exe.backward()
        mx.nd.waitall()
    arrays = [out.asnumpy() for out in exe.outputs]
    arrays += [exe.grad_dict[name].asnumpy() for name in sorted(exe.grad_dict)]
    return arrays, exe


def _same_bits(first, second):
    assert len(first) == len(second)
    for mine, theirs in zip(first, second):
        np.testing.assert_array_equal(mine, theirs)


def test_an_lstm_step_fused_gives_the_same_bits_as_unfused():
    """Forward: each cell's nine gate ops (four activations, three products, a sum, a tanh) are
    one run.  Backward: their gradients and the gradient sums between them.  The outputs and
    every gradient are the unfused step's bits."""
    sym, shapes = _lstm()
    values = _values(sym, shapes)
    plain, plain_exe = _step(sym, shapes, values, on=False)
    fused, fused_exe = _step(sym, shapes, values, on=True)
    assert fusion.fused_runs(plain_exe) == []
    runs = fusion.fused_runs(fused_exe)
    ops = {prepared.step.name: prepared.step.op_type for prepared in fused_exe._prepared}
    forward = [run for run in runs if not run[0].endswith(("_backward", "_sum"))]
    backward = [run for run in runs if run not in forward]
    assert max(len(run) for run in forward) == 9
    assert {ops[name] for run in forward for name in run} == {"Activation", "elemwise_mul",
                                                              "elemwise_add"}  # fmt: skip
    assert {ops[name] for run in backward for name in run} == {
        "_backward_Activation", "_backward_elemwise_mul", "_backward_elemwise_add",
        "ElementWiseSum"}  # fmt: skip
    assert max(len(run) for run in backward) >= 9
    _same_bits(plain, fused)


def test_mxnets_resnet18_export_fused_gives_the_same_bits_as_unfused():
    """Held out (MXNet 1.9.1's export of Gluon's resnet18_v1): each block's sum and ReLU fuse."""
    sym = mx.sym.load(str(DATA / "resnet18_v1_train-symbol.json"))
    shapes = {"data": (2, 3, 32, 32)}
    req = {name: "write" for name in sym.list_arguments()}
    req["data"] = req["softmax_label"] = "null"
    values = _values(sym, {**shapes, "softmax_label": (2,)})
    values["softmax_label"] = np.array([1.0, 3.0], np.float32)
    values = {k: v * (0.1 if k != "softmax_label" else 1) for k, v in values.items()}
    plain, _ = _step(sym, shapes, values, False, grad_req=req)
    fused, exe = _step(sym, shapes, values, True, grad_req=req)
    runs = fusion.fused_runs(exe)
    assert len(runs) == 8 and all(len(run) == 2 for run in runs)  # 8 blocks: add, then relu
    _same_bits(plain, fused)
    json.dumps(runs)


def test_mxnets_lstm_language_model_export_fused_gives_the_same_bits_as_unfused():
    """Held out (MXNet 1.9.1's ``mx.rnn`` LSTMCell language model, as it exported it): 35 steps of
    gates fuse forward and backward, gradient sums included, and the bits do not change."""
    sym = mx.sym.load(str(DATA.parent.parent / "rnn" / "data" / "lstm_lm-symbol.json"))
    shapes = {"data": (4, 35), "softmax_label": (4, 35)}
    values = _values(sym, shapes)
    rng = np.random.default_rng(1)
    for name in ("data", "softmax_label"):
        values[name] = rng.integers(0, 50, shapes[name]).astype(np.float32)
    req = {name: "write" for name in sym.list_arguments()}
    req["data"] = req["softmax_label"] = "null"
    plain, _ = _step(sym, shapes, values, False, grad_req=req)
    fused, exe = _step(sym, shapes, values, True, grad_req=req)
    ops = {prepared.step.name: prepared.step.op_type for prepared in exe._prepared}
    kinds = {ops[name] for run in fusion.fused_runs(exe) for name in run}
    assert len(fusion.fused_runs(exe)) >= 140 and "ElementWiseSum" in kinds
    _same_bits(plain, fused)


def test_a_fused_run_is_one_kernel_launch_on_a_gpu():
    """On a stand-in GPU (FakeCupy: the kernel's C text run by numpy), each cell's gates are one
    launch, where unfused they were three sigmoid kernels and six array functions."""
    sym, shapes = _lstm(seq_len=3, layers=1)
    counts = {}
    with fake_virtual_gpus(1) as xp:
        for on in (False, True):
            with fusion.fused_on(on):
                exe = sym.simple_bind(mx.gpu(0), grad_req="null", **shapes)
                exe.forward()  # the first call of a kernel is checked against the plain path
                mx.nd.waitall()
                launches, calls = xp.launches, xp.calls
                exe.forward()
                mx.nd.waitall()
                counts[on] = (xp.launches - launches, xp.calls - calls, len(fusion.fused_runs(exe)))
    assert counts[False] == (9, counts[True][1] + 18, 0)  # 3 cells x 3 sigmoids; 6 calls a cell
    assert counts[True][0] == counts[True][2] == 3


def test_backward_launches_one_kernel_per_run_and_per_activation_left_alone():
    """Backward on the stand-in GPU: the activations' gradient kernels (15 for 3 cells) become one
    launch per fused run, plus one per activation gradient a segment's edge left alone."""
    sym, shapes = _lstm(seq_len=3, layers=1)
    launches = {}
    with fake_virtual_gpus(1) as xp:
        for on in (False, True):
            with fusion.fused_on(on):
                exe = sym.simple_bind(mx.gpu(0), **shapes)
                exe.forward(is_train=True)
                exe.backward()
                mx.nd.waitall()
                before = xp.launches
                exe.backward()
                mx.nd.waitall()
                launches[on] = xp.launches - before
    backward = [run for run in fusion.fused_runs(exe) if run[-1].endswith("_backward")]
    fused_steps = {name for run in backward for name in run}
    alone = [p.step.name for p in exe._prepared if p.step.op_type == "_backward_Activation"
             and p.step.name not in fused_steps]  # fmt: skip
    assert launches[False] == 15  # 3 cells x (3 sigmoid + 2 tanh gradients)
    assert backward and launches[True] == len(backward) + len(alone) < launches[False] / 2


def test_a_gradient_nobody_asked_for_is_not_computed():
    """With w's gradient off (req NULL), the product's backward computes only x's part."""
    x, w = mx.sym.Variable("x"), mx.sym.Variable("w")
    sym = mx.sym.tanh(mx.sym.elemwise_mul(mx.sym.sigmoid(x), w, name="product"))
    shapes = {"x": (3, 4), "w": (3, 4)}
    values = _values(sym, shapes)
    req = {"x": "write", "w": "null"}
    plain, _ = _step(sym, shapes, values, False, grad_req=req)
    fused, exe = _step(sym, shapes, values, True, grad_req=req)
    backward = [run for run in fusion.fused_runs(exe) if run[-1].endswith("_backward")]
    assert any("product_backward" in run for run in backward)
    mul = next(p for p in exe._prepared if p.step.name == "product_backward")
    assert [int(r) for r in mul.step.req] == [1, 0]
    (kernel,) = [k for run, k in fusion.fused_kernels(exe) if "product_backward" in run]
    assert "t1_da = " in kernel.python_source and "t1_db" not in kernel.python_source
    _same_bits(plain, fused)


def test_gpu_contexts_fuse_by_default_and_the_environment_decides(monkeypatch):
    """Unset, fusion is on for GPU contexts (virtual ones too) and off on the CPU; MXNB_EXEC_FUSION
    overrides it, and a bad value names the variable."""
    monkeypatch.delenv("MXNB_EXEC_FUSION", raising=False)
    assert fusion.enabled(mx.gpu(0)) and not fusion.enabled(mx.cpu())
    monkeypatch.setenv("MXNB_EXEC_FUSION", "1")
    assert fusion.enabled(mx.cpu())
    monkeypatch.setenv("MXNB_EXEC_FUSION", "0")
    assert not fusion.enabled(mx.gpu(0))
    with fusion.fused_on():
        assert fusion.enabled(mx.cpu())
    monkeypatch.setenv("MXNB_EXEC_FUSION", "yes")
    with pytest.raises(mx.base.MXNBError, match="MXNB_EXEC_FUSION must be 0 or 1.*'yes'"):
        fusion.enabled(mx.cpu())


def test_debug_mode_and_bulk_off_run_every_step_alone():
    """Debug mode checks each step's writes, and bulk(0) pushes each step: neither fuses."""
    sym, shapes = _lstm(seq_len=2, layers=1)
    values = _values(sym, shapes)
    plain, _ = _step(sym, shapes, values, on=False)
    with mx.engine.debug():
        debugged, exe = _step(sym, shapes, values, on=True)
    assert fusion.fused_runs(exe) == []
    with mx.engine.bulk(0):
        alone, exe = _step(sym, shapes, values, on=True)
    assert fusion.fused_runs(exe) == []
    _same_bits(plain, debugged)
    _same_bits(plain, alone)


def _chain_executor():
    x = mx.sym.Variable("x")
    y = mx.sym.tanh(mx.sym.relu(x * 2) + x)
    exe = y.simple_bind(mx.cpu(), x=(2, 3), grad_req="null")
    exe.arg_dict["x"][:] = np.arange(-3, 3).reshape(2, 3)
    return exe


def test_in_place_steps_fuse_and_a_partial_overlap_does_not():
    """The planner runs relu and tanh in place: the run's kernel writes the shared memory once per
    element (the earlier output a local).  Arrays overlapping at an offset stay unfused."""
    exe = _chain_executor()
    prepared = exe._prepared
    runs = [exe._runner_of(p, False) for p in prepared]
    functions, names, fused = fusion.fuse_span(prepared, runs, np)
    assert fused == [tuple(p.step.name for p in prepared)] and len(functions) == 1
    kernel = functions[0].args[0]
    written = {id(a) for a in functions[0].args[3]}
    assert len(kernel.outputs) < len(prepared) and len(written) == len(kernel.outputs)
    expected = np.tanh(np.maximum(np.arange(-3, 3) * 2, 0) + np.arange(-3, 3)).astype(np.float32)
    with fusion.fused_on():
        np.testing.assert_array_equal(exe.forward()[0].asnumpy(), expected.reshape(2, 3))

    buffer = np.zeros(7, np.float32)  # two outputs one element apart: a partial overlap
    first, second = prepared[0], prepared[1]
    saved = first.raw, second.raw
    try:
        first.raw = {**first.raw, "out_data": (buffer[0:6].reshape(2, 3),)}
        second.raw = {**second.raw, "in_data": first.raw["out_data"],
                      "out_data": (buffer[1:7].reshape(2, 3),)}  # fmt: skip
        functions, names, fused = fusion.fuse_span(prepared[:2], runs[:2], np)
    finally:
        first.raw, second.raw = saved
    assert fused == [] and functions == runs[:2] and names == [first.step.name, second.step.name]


def test_a_step_of_another_shape_or_kind_ends_a_run():
    """FullyConnected is no formula and a sum over a broadcast row has two shapes: neither joins."""
    x, w = mx.sym.Variable("x"), mx.sym.Variable("w")
    fc = mx.sym.FullyConnected(mx.sym.relu(x) * 3, num_hidden=4, no_bias=True, name="fc")
    y = mx.sym.sigmoid(mx.sym.broadcast_add(mx.sym.tanh(fc), w))
    exe = y.simple_bind(mx.cpu(), x=(2, 5), w=(1, 4), grad_req="null")
    runs = [exe._runner_of(p, False) for p in exe._prepared]
    _, names, fused = fusion.fuse_span(exe._prepared, runs, np)
    steps = [p.step.name for p in exe._prepared]
    assert fused == [tuple(steps[:2])]
    assert names == ["+".join(steps[:2]), *steps[2:]]


def test_a_runs_kernel_rounds_each_operation_as_its_steps_do():
    """NVRTC would contract ``a * b + c`` (an LSTM cell's ``f * c + i * g``) into one fused
    multiply-add; every FusedMap kernel is compiled with ``--fmad=false``, so each operation
    rounds on its own, as the unfused steps' operations do."""
    from mxnb.operator.fused import NVRTC_OPTIONS
    from mxnb.testing.fake_cupy import FakeCupy

    exe = _chain_executor()
    with fusion.fused_on():
        exe.forward()
    ((_, kernel),) = fusion.fused_kernels(exe)
    assert NVRTC_OPTIONS == ("--fmad=false",)
    assert kernel.compile(FakeCupy()).options == NVRTC_OPTIONS
