"""Module.fit over NDArrayIter equals real MXNet 1.9.1's fit, optimizer by optimizer (committed vectors)."""

import json
import logging
import os

import numpy as np
import pytest

import mxnb as mx

pytestmark = pytest.mark.timeout(300)

with open(os.path.join(os.path.dirname(__file__), "data", "fit_vectors.json")) as handle:
    CASES = json.load(handle)["cases"]


@pytest.mark.parametrize(
    "case", CASES, ids=lambda c: c["optimizer"] + "".join(f"-{k}" for k in sorted(c["params"]))
)
def test_fit_matches_mxnet(case, caplog, mlp, fit_data):
    """Same data, same initial parameters, no shuffle, 3 epochs: MXNet's per-epoch metrics and final weights."""
    caplog.set_level(logging.ERROR)
    x, y, params, _ = fit_data
    module = mx.mod.Module(mlp, context=mx.cpu())
    module.fit(
        mx.io.NDArrayIter(x, y, batch_size=10, shuffle=False),
        num_epoch=3,
        optimizer=case["optimizer"],
        optimizer_params=case["params"],
        eval_metric=["acc", "ce"],
        arg_params=params,
        kvstore="local",
    )
    for epoch, expected in enumerate(case["epochs"]):
        got = module.epoch_metrics[epoch]["train"]
        assert [name for name, _ in got] == [name for name, _ in expected]
        np.testing.assert_allclose([v for _, v in got], [v for _, v in expected], rtol=1e-5)
    args, _ = module.get_params()
    for name, expected in case["final"].items():
        np.testing.assert_allclose(args[name].asnumpy(), expected, rtol=1e-4, atol=1e-5)


def test_fit_on_two_devices_with_eval_callbacks_and_predict(
    tmp_path, caplog, mlp, fit_data, two_virtual_gpus
):
    """fit over two virtual GPUs with validation, Speedometer, do_checkpoint, a live plot; then score/predict."""
    caplog.set_level(logging.INFO)
    x, y, params, _ = fit_data
    valid = mx.io.NDArrayIter(x[:25], y[:25], batch_size=10)
    module = mx.mod.Module(mlp, context=two_virtual_gpus)
    speed = mx.callback.Speedometer(10, frequent=2)
    module.fit(
        mx.io.NDArrayIter(x, y, batch_size=10, shuffle=False),
        eval_data=valid,
        num_epoch=2,
        optimizer="sgd",
        optimizer_params={"learning_rate": 0.1, "momentum": 0.9},
        arg_params=params,
        kvstore="device",
        batch_end_callback=speed,
        epoch_end_callback=mx.callback.do_checkpoint(str(tmp_path / "mlp")),
        progress=True,
        live_plot=True,
    )
    assert speed.last_speed is not None and speed.last_speed > 0
    assert "Epoch[1] Validation-accuracy" in caplog.text
    assert [record["epoch"] for record in module.epoch_metrics] == [0, 1]
    _, args, _ = mx.model.load_checkpoint(str(tmp_path / "mlp"), 2)
    np.testing.assert_array_equal(
        args["fc2_weight"].asnumpy(), module.get_params()[0]["fc2_weight"].asnumpy()
    )
    predictions = module.predict(valid)
    assert predictions.shape == (25, 3)  # the padding of the last batch is dropped
    exact = (predictions.asnumpy().argmax(axis=1) == y[:25]).mean()
    score = dict(module.score(valid, "acc"))["accuracy"]
    # score counts the 5 padded rows of the last batch too (as MXNet does): 30 rows scored
    assert abs(score - exact) <= 5 / 30


def test_fit_view_counts_the_first_epochs_batches_and_plots_whole_epochs():
    """Issue 39 (15): the bar was empty in the first epoch (the count came at its end) and read
    'batch 43/42' on a longer epoch; the plot had fractional epoch ticks and no y label."""
    from types import SimpleNamespace

    from mxnb.callback import FitView, batches_hint

    data = mx.io.NDArrayIter(np.zeros((85, 2)), np.zeros(85), batch_size=2)
    assert batches_hint(data) == 43 and batches_hint(object()) is None
    view = FitView(2, progress=True, live_plot=True, notebook=False, batches=42)
    view.batch_end(SimpleNamespace(epoch=0, nbatch=0))
    assert view.text == "epoch 1/2 batch 1/42"  # the count known from the first batch on
    view.batch_end(SimpleNamespace(epoch=0, nbatch=42))
    assert view.text == "epoch 1/2 batch 43/43"  # never past its count
    for epoch in range(2):
        view.epoch_end({"epoch": epoch, "train": [("accuracy", 0.5 + epoch / 4)]})
    axes = view.figure.axes[0]
    assert all(t == int(t) for t in axes.get_xticks())  # 0 and 1, no 0.2 ... 0.8
    assert axes.get_ylabel() == "metric"
    assert axes.get_legend().get_bbox_to_anchor().x0 > axes.get_window_extent().x1 - 1  # beside
