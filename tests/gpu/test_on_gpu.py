"""mxnb on ``gpu(0)``: conformance, networks, training, engine programs, copies, files.

Each test runs twice (``tests/gpu/conftest.py``): on a strict virtual GPU
(numpy through cupy's names and signatures, on every machine: a kernel that
calls numpy with something cupy refuses fails here, without a GPU) and on a
real GPU with cupy (marked ``gpu``; ``make test-gpu``), skipped where there is
none.  Numbers are judged as a real GPU's must be: against a float64 run on
the CPU, no further from it than float32 on the CPU is (summation order
differs on a device), not elementwise against float32.
"""

from __future__ import annotations

import os
import random
import sys

import numpy as np
import pytest

import mxnb as mx
from mxnb.executor import zoo

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "operator"))
import test_conformance as conformance  # noqa: E402 -- the vectors' loader and tolerances


def _run_case(case: dict, ctx: mx.Context) -> list[str]:
    """Run one MXNet 1.9.1 case through ``mx.nd`` + autograd on ``ctx``; the mismatches."""
    arrays = conformance._load(case)
    outputs, specs, nd_inputs, _ = conformance.run_through_nd(case, arrays, ctx)
    got = {f"output_{s['index']}": outputs[s["index"]] for s in case["outputs"]}
    if case["gradients"]:
        heads = [mx.nd.array(arrays[f"head_grad_{i}"], ctx=ctx) for i in range(len(outputs))]
        mx.autograd.backward(outputs, heads)
        got.update(
            {f"grad_{s['name']}": a.grad for s, a in zip(specs, nd_inputs) if a.grad is not None}
        )
    wrong = []
    atol = conformance.LOOSE_ATOL.get(case["op"], conformance.ATOL)
    for key, value in got.items():
        if key in arrays:
            actual = value.asnumpy()
            if not np.allclose(actual, arrays[key], rtol=conformance.RTOL, atol=atol):
                wrong.append(
                    f"{case['name']} {key}: max |diff| {np.abs(actual - arrays[key]).max():.2e}"
                )
    return wrong


def test_mxnets_conformance_vectors_on_the_gpu(gpu):
    wrong = []
    for case in conformance.CASES:
        try:
            wrong += _run_case(case, gpu)
        except Exception as exc:  # noqa: BLE001 - every case is reported, not the first
            wrong.append(f"{case['name']}: {type(exc).__name__}: {str(exc)[:300]}")
    assert not wrong, f"{len(wrong)} of {len(conformance.CASES)} cases:\n" + "\n".join(wrong)


NETS = {  # name -> (symbol, input shapes at a small batch)
    "mlp": lambda: (zoo.mlp(), {"data": (4, 784), "softmax_label": (4,)}),
    "lenet": lambda: (zoo.lenet(), {"data": (4, 1, 28, 28), "softmax_label": (4,)}),
    "resnet18": lambda: (zoo.resnet(18, 10), {"data": (2, 3, 64, 64), "softmax_label": (2,)}),
    "lstm": lambda: (
        zoo.lstm_unrolled(num_layers=1, seq_len=5, num_hidden=16, num_embed=16, num_classes=50),
        {
            "data": (2, 5),
            "l0_init_c": (2, 16),
            "l0_init_h": (2, 16),
            "softmax_label": (10,),
        },
    ),
}


def _step(sym, shapes: dict, values: dict, ctx: mx.Context, dtype) -> dict[str, np.ndarray]:
    """Forward + backward once on ``ctx`` in ``dtype``; the outputs and every gradient."""
    exe = sym.simple_bind(ctx, grad_req="write", type_dict={k: dtype for k in shapes}, **shapes)
    for name, array in exe.arg_dict.items():
        array[:] = values[name].astype(dtype)
    exe.forward(is_train=True)
    exe.backward()
    result = {f"out{i}": out.asnumpy() for i, out in enumerate(exe.outputs)}
    result.update({k: g.asnumpy() for k, g in exe.grad_dict.items() if g is not None})
    return result


@pytest.mark.parametrize("name", sorted(NETS))
def test_a_network_step_on_the_gpu_is_as_close_to_float64_as_the_cpus(gpu, name):
    sym, shapes = NETS[name]()
    arg_shapes, _, _ = sym.infer_shape(**shapes)
    rng = np.random.default_rng(7)
    values = {}
    for arg, shape in zip(sym.list_arguments(), arg_shapes):
        if arg == "softmax_label" or (name == "lstm" and arg == "data"):
            values[arg] = rng.integers(0, 10, shape).astype(np.float64)
        else:
            values[arg] = rng.normal(0, 0.1, shape)
    exact = _step(sym, shapes, values, mx.cpu(), np.float64)
    cpu = _step(sym, shapes, values, mx.cpu(), np.float32)
    device = _step(sym, shapes, values, gpu, np.float32)
    for key, truth in exact.items():
        scale = np.abs(truth).max() + 1e-12
        cpu_error = np.abs(cpu[key] - truth).max() / scale
        gpu_error = np.abs(device[key] - truth).max() / scale
        assert gpu_error <= max(4 * cpu_error, 1e-5), (key, gpu_error, cpu_error)


def test_module_fit_trains_on_the_gpu(gpu):
    rng = np.random.default_rng(0)
    x = rng.normal(0, 1, (64, 8)).astype(np.float32)
    y = (x[:, 0] + x[:, 1] > 0).astype(np.float32)
    data = mx.sym.Variable("data")
    net = mx.sym.FullyConnected(data, num_hidden=16, name="fc1")
    net = mx.sym.Activation(net, act_type="relu")
    net = mx.sym.FullyConnected(net, num_hidden=2, name="fc2")
    net = mx.sym.SoftmaxOutput(net, name="softmax")
    module = mx.mod.Module(net, context=gpu)
    train = mx.io.NDArrayIter(x, y, batch_size=16, shuffle=False)
    mx.random.seed(1)
    module.fit(train, num_epoch=15, optimizer="sgd", optimizer_params={"learning_rate": 0.5})
    score = dict(module.score(mx.io.NDArrayIter(x, y, batch_size=16), "acc"))
    assert score["accuracy"] >= 0.9


def test_a_random_engine_program_across_streams_and_copies_matches_numpy(gpu):
    rng = random.Random(3)
    host = [np.full((3, 4), float(i), np.float32) for i in range(6)]
    arrays = [mx.nd.array(h, ctx=gpu if i % 2 else mx.cpu()) for i, h in enumerate(host)]
    for _ in range(150):
        i, j, k = (rng.randrange(6) for _ in range(3))
        kind = rng.choice(["add", "mul", "copy", "scalar"])
        if kind == "add":
            arrays[k][:] = arrays[i].as_in_context(arrays[k].context) + arrays[j].as_in_context(
                arrays[k].context
            )
            host[k][:] = host[i] + host[j]
        elif kind == "mul":
            arrays[k][:] = arrays[i].as_in_context(arrays[k].context) * 0.5
            host[k][:] = host[i] * 0.5
        elif kind == "copy":
            arrays[i].copyto(arrays[k])
            host[k][:] = host[i]
        else:
            arrays[k] += 1
            host[k] += 1
    for array, expected in zip(arrays, host):
        np.testing.assert_allclose(array.asnumpy(), expected, rtol=1e-6)


def test_save_and_load_arrays_made_on_the_gpu(gpu, tmp_path):
    path = str(tmp_path / "x.params")
    saved = {
        "w": mx.nd.array(np.arange(6, dtype=np.float32).reshape(2, 3), ctx=gpu),
        "s": mx.nd.ones((1,), ctx=gpu),
    }
    mx.nd.save(path, saved)
    loaded = mx.nd.load(path)
    assert sorted(loaded) == ["s", "w"]
    np.testing.assert_array_equal(loaded["w"].asnumpy(), saved["w"].asnumpy())
    moved = loaded["w"].as_in_context(gpu)
    assert moved.context == gpu and (moved * 2).asnumpy().tolist() == [[0, 2, 4], [6, 8, 10]]


def test_batch_norms_fused_kernels_agree_with_the_cpu_and_are_kept(gpu):
    """BatchNorm's fused kernels (``operator/fused.py``): the CPU's numbers, and on a real GPU
    every kernel of a training step compiled, verified against the plain path and kept."""
    import warnings

    import test_fused  # tests/operator, on the path above

    from mxnb.operator.fused import is_cupy
    from mxnb.operator.ops import norm

    expected = test_fused._batch_norm_step(mx.cpu(), fix_gamma=False)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # a dropped kernel fails here
        got = test_fused._batch_norm_step(gpu, fix_gamma=False)
    for mine, theirs, name in zip(got, expected, ("out", "dx", "dgamma", "dbeta", "mm", "mv")):
        np.testing.assert_allclose(mine, theirs, rtol=1e-4, atol=1e-4, err_msg=name)
    xp = gpu.array_module
    if is_cupy(xp):
        used = (norm._SQUARES, norm._STATS, norm._NORMALIZE, norm._CENTERED_DOT,
                norm._BACKWARD_STATS, norm._GRAD_DATA)  # fmt: skip
        assert all(kernel._compiled.get(id(xp)) not in (None, False) for kernel in used)


@pytest.mark.parametrize("clip", [-1.0, 0.1])
def test_update_ops_agree_with_the_cpu_and_their_kernels_are_kept(gpu, clip):
    """The optimizer updates written as fused maps (``ops/optimizer_ops.py``): on ``gpu`` the
    weight and states are the CPU's, and on a real GPU each op's kernel (with ``clip`` from
    the preamble when clipping) compiled, passed its first-call check and was kept."""
    import warnings

    from mxnb.operator.fused import is_cupy
    from mxnb.operator.ops import optimizer_ops

    ops = {
        "sgd_update": 0, "sgd_mom_update": 1, "adam_update": 2, "rmsprop_update": 1,
        "rmspropalex_update": 3, "signsgd_update": 0, "signum_update": 1, "nag_mom_update": 1,
        "ftrl_update": 2,
    }  # fmt: skip
    rng = np.random.default_rng(11)
    for op, count in ops.items():
        start = [rng.standard_normal((64, 33)).astype(np.float32) for _ in range(2)]
        states = [
            1 + np.abs(rng.standard_normal((64, 33))).astype(np.float32) for _ in range(count)
        ]
        if op == "rmspropalex_update":
            states[1] = 0.1 * states[1]  # its mean gradient: n - g * g stays positive
        if op == "ftrl_update":
            states[0] = (0.02 * rng.standard_normal((64, 33))).astype(np.float32)  # |z| ~ lamda1
        results = []
        for ctx in (mx.cpu(), gpu):
            weight, grad, *arrays = (mx.nd.array(a, ctx=ctx) for a in (*start, *states))
            with warnings.catch_warnings():
                warnings.simplefilter("error", RuntimeWarning)  # a dropped kernel fails here
                for _ in range(2):
                    getattr(mx.nd, op)(weight, grad, *arrays, out=weight, lr=0.05, wd=1e-3,
                                       rescale_grad=0.5, clip_gradient=clip)  # fmt: skip
            results.append([a.asnumpy() for a in (weight, *arrays)])
        for mine, theirs in zip(results[1], results[0]):
            np.testing.assert_allclose(mine, theirs, rtol=1e-5, atol=1e-6, err_msg=op)
    xp = gpu.array_module
    if is_cupy(xp):
        compiled = [k for k in optimizer_ops.MAPS.values() if id(xp) in k._compiled]
        assert len(compiled) >= len(ops)
        assert all(kernel._compiled[id(xp)] is not False for kernel in compiled), compiled


def test_fused_runs_of_an_lstm_step_agree_with_the_cpu_and_their_kernels_are_kept(gpu):
    """Pointwise fusion (``executor/fusion.py``, on by default on a GPU): an LSTM training step's
    fused runs give the CPU's unfused numbers, and on a real GPU each run's kernel (a cell's
    gates, forward and backward, ``maximum`` from the preamble) compiled, passed its first-call
    check and was kept."""
    import warnings

    from mxnb.executor import fusion
    from mxnb.operator.fused import is_cupy

    sym = zoo.lstm.lstm_unrolled(2, 6, num_hidden=16, num_embed=16, num_classes=20)
    shapes = zoo.lstm.lstm_shapes(4, 2, 6, num_hidden=16, num_embed=16)
    rng = np.random.default_rng(3)
    values = {
        name: rng.uniform(-1, 1, shape).astype(np.float32)
        for name, shape in zip(sym.list_arguments(), sym.infer_shape(**shapes)[0])
    }
    values["softmax_label"] = rng.integers(0, 20, shapes["softmax_label"]).astype(np.float32)
    results = []
    for ctx, on in ((mx.cpu(), False), (gpu, True)):
        exe = sym.simple_bind(ctx, **shapes)
        for name, value in values.items():
            exe.arg_dict[name][:] = value
        with warnings.catch_warnings(), fusion.fused_on(on):
            warnings.simplefilter("error", RuntimeWarning)  # a dropped kernel fails here
            exe.forward(is_train=True)
            exe.backward()
            mx.nd.waitall()
        results.append(
            [exe.outputs[0].asnumpy()] + [exe.grad_dict[n].asnumpy() for n in sorted(exe.grad_dict)]
        )
    assert len(fusion.fused_runs(exe)) >= 12
    for mine, theirs in zip(results[1], results[0]):
        np.testing.assert_allclose(mine, theirs, rtol=1e-4, atol=1e-5)
    xp = gpu.array_module
    if is_cupy(xp):
        kernels = [k for k in fusion._MAPS.values() if id(xp) in k._compiled]
        assert kernels and all(k._compiled[id(xp)] is not False for k in kernels), kernels
