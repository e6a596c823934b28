"""The language model MXNet 1.9.1's ``mx.rnn`` exported: zero begin states of unknown batch.

``data/lstm_lm-symbol.json`` (written by ``data/make_lstm_lm.py`` under real
MXNet) is two ``LSTMCell(200)`` unrolled over 35 steps; its begin states are
``_zeros`` nodes of shape ``(0, 200)``, whose batch size only inference can
find: backward from the ``elemwise_add`` of the first step's gates, through
the ``h2h`` FullyConnected, to the zeros.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import mxnb as mx

DATA = Path(__file__).resolve().parent / "data"
SHAPES = {"data": (32, 35), "softmax_label": (32, 35)}


def inputs(shapes: dict) -> dict:
    """The arguments ``make_lstm_lm.inputs`` gives MXNet: sorted names, RandomState(0)."""
    rng = np.random.RandomState(0)
    values = {}
    for name in sorted(shapes):
        if name in SHAPES:
            values[name] = rng.randint(0, 10000, size=shapes[name]).astype("float32")
        else:
            values[name] = rng.uniform(-0.1, 0.1, size=shapes[name]).astype("float32")
    return values


def bind(text: str):
    net = mx.sym.load_json(text)
    req = {name: "null" if name in SHAPES else "write" for name in net.list_arguments()}
    exe = net.simple_bind(mx.cpu(), grad_req=req, **SHAPES)
    for name, value in inputs({k: v.shape for k, v in exe.arg_dict.items()}).items():
        exe.arg_dict[name][:] = value
    exe.forward(is_train=True)
    exe.backward()
    return exe


@pytest.fixture(scope="module")
def text() -> str:
    return (DATA / "lstm_lm-symbol.json").read_text()


def test_zero_begin_states_get_the_batch_size_by_inference(text):
    net = mx.sym.load_json(text)
    internals = net.get_internals()
    zeros = [name for name in internals.list_outputs() if "begin_state" in name]
    assert len(zeros) == 4  # (c, h) per layer
    _, out_shapes, _ = internals.infer_shape(**SHAPES)
    shape_of = dict(zip(internals.list_outputs(), out_shapes))
    assert all(shape_of[name] == (32, 200) for name in zeros)
    assert net.infer_shape(**SHAPES)[1] == [(32 * 35, 10000)]
    _, partial_outs, _ = internals.infer_shape_partial()
    partial = dict(zip(internals.list_outputs(), partial_outs))
    assert all(partial[name] == (0, 200) for name in zeros)  # nothing fixes the batch yet


@pytest.mark.slow
def test_binds_runs_and_matches_full_shapes_and_mxnet(text):
    exe = bind(text)
    full = bind(text.replace('"(0, 200)"', '"(32, 200)"'))  # the same network, shapes given
    out = exe.outputs[0].asnumpy()
    np.testing.assert_array_equal(out, full.outputs[0].asnumpy())
    for name, grad in exe.grad_dict.items():
        if grad is not None:
            np.testing.assert_array_equal(grad.asnumpy(), full.grad_dict[name].asnumpy())
    reference = np.load(DATA / "lstm_lm_reference.npz")
    labels = exe.arg_dict["softmax_label"].asnumpy().reshape(-1).astype(np.int64)
    picked = out[np.arange(out.shape[0]), labels]
    np.testing.assert_allclose(picked, reference["picked"], rtol=1e-4, atol=1e-7)
    for name, grad in exe.grad_dict.items():
        if grad is None:
            continue
        grad = grad.asnumpy()
        np.testing.assert_allclose(grad.sum(dtype="float64"), reference[f"sum:{name}"], atol=1e-4)
        row = grad.reshape(grad.shape[0], -1)[0] if grad.ndim > 1 else grad
        np.testing.assert_allclose(row, reference[f"row:{name}"], rtol=1e-3, atol=1e-6)


def test_memory_plan_is_no_larger_than_mxnet(text):
    """MXNet 1.9.1 plans 46,873,600 bytes for inference, 116 MB (floored) for training."""
    net = mx.sym.load_json(text)
    inference = mx.executor.plan_memory(net, SHAPES, grad_req="null")
    training = mx.executor.plan_memory(net, SHAPES, grad_req="write")
    assert inference.internal_bytes <= 46_873_600
    assert training.internal_bytes <= 116 * (1 << 20)
