"""Module.fit over NDArrayIter equals real MXNet 1.9.1's fit, optimizer by optimizer (committed vectors)."""

import json
import logging
import os

import numpy as np
import pytest

import mxnb as mx

pytestmark = pytest.mark.timeout(300)

with open(os.path.join(os.path.dirname(__file__), "data", "fit_vectors.json")) as handle:
    VECTORS = json.load(handle)
X = np.array(VECTORS["x"], dtype="float32")
Y = np.array(VECTORS["y"], dtype="float32")


def network():
    data = mx.sym.Variable("data")
    net = mx.sym.FullyConnected(data, num_hidden=8, name="fc1")
    net = mx.sym.Activation(net, act_type="relu", name="relu1")
    net = mx.sym.FullyConnected(net, num_hidden=3, name="fc2")
    return mx.sym.SoftmaxOutput(net, name="softmax")


def initial_params():
    return {k: mx.nd.array(np.array(v, dtype="float32")) for k, v in VECTORS["init"].items()}


@pytest.mark.parametrize(
    "case",
    VECTORS["cases"],
    ids=lambda c: c["optimizer"] + "".join(f"-{k}" for k in sorted(c["params"])),
)
def test_fit_matches_mxnet(case, caplog):
    """Same data, same initial parameters, no shuffle, 3 epochs: MXNet's per-epoch metrics and final weights."""
    caplog.set_level(logging.ERROR)
    train = mx.io.NDArrayIter(X, Y, batch_size=10, shuffle=False)
    module = mx.mod.Module(network(), context=mx.cpu())
    module.fit(
        train,
        num_epoch=3,
        optimizer=case["optimizer"],
        optimizer_params=case["params"],
        eval_metric=["acc", "ce"],
        arg_params=initial_params(),
        kvstore="local",
    )
    for epoch, expected in enumerate(case["epochs"]):
        got = module.epoch_metrics[epoch]["train"]
        assert [name for name, _ in got] == [name for name, _ in expected]
        np.testing.assert_allclose([v for _, v in got], [v for _, v in expected], rtol=1e-5)
    args, _ = module.get_params()
    for name, expected in case["final"].items():
        np.testing.assert_allclose(args[name].asnumpy(), expected, rtol=1e-4, atol=1e-5)


def test_fit_on_two_devices_with_eval_callbacks_and_predict(tmp_path, caplog):
    """fit over two virtual GPUs with validation, Speedometer, do_checkpoint, a live plot; then score/predict."""
    caplog.set_level(logging.INFO)
    before = mx.context.virtual_gpus()
    mx.context.set_virtual_gpus(2)
    try:
        train = mx.io.NDArrayIter(X, Y, batch_size=10, shuffle=False)
        valid = mx.io.NDArrayIter(X[:25], Y[:25], batch_size=10)
        module = mx.mod.Module(network(), context=[mx.gpu(0), mx.gpu(1)])
        speed = mx.callback.Speedometer(10, frequent=2)
        module.fit(
            train,
            eval_data=valid,
            num_epoch=2,
            optimizer="sgd",
            optimizer_params={"learning_rate": 0.1, "momentum": 0.9},
            arg_params=initial_params(),
            kvstore="device",
            batch_end_callback=speed,
            epoch_end_callback=mx.callback.do_checkpoint(str(tmp_path / "mlp")),
            progress=True,
            live_plot=True,
        )
        assert speed.last_speed is not None and speed.last_speed > 0
        assert "Epoch[1] Validation-accuracy" in caplog.text
        assert [r["epoch"] for r in module.epoch_metrics] == [0, 1]
        sym, args, _ = mx.model.load_checkpoint(str(tmp_path / "mlp"), 2)
        np.testing.assert_array_equal(
            args["fc2_weight"].asnumpy(), module.get_params()[0]["fc2_weight"].asnumpy()
        )
        predictions = module.predict(valid)
        assert predictions.shape == (25, 3)  # the padding of the last batch is dropped
        score = dict(module.score(valid, "acc"))
        expected = (predictions.asnumpy().argmax(axis=1) == Y[:25]).mean()
        # score counts the padded rows of the last batch too (as MXNet does)
        assert 0.0 <= score["accuracy"] <= 1.0
        assert abs(score["accuracy"] - expected) <= 5 / 30
    finally:
        mx.nd.waitall()
        mx.context.set_virtual_gpus(before)
