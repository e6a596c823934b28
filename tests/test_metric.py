"""mx.metric equals MXNet 1.9.1's metrics on the same batches (vectors from real MXNet)."""

import json
import math
import os

import numpy as np
import pytest

import mxnb as mx

with open(os.path.join(os.path.dirname(__file__), "data", "metric_vectors.json")) as handle:
    CASES = json.load(handle)


@pytest.mark.parametrize(
    "case", CASES, ids=lambda c: f"{c['name']}-{'-'.join(map(str, c['kwargs'].values()))}"
)
def test_metric_matches_mxnet(case):
    """get() after each batch (reset_local after the second) and get_global() equal MXNet's."""
    metric = mx.metric.create(case["name"], **case["kwargs"])
    for index, (batch, expected) in enumerate(zip(case["batches"], case["values"])):
        labels = [mx.nd.array(np.array(batch["labels"], dtype="float32"))]
        preds = [mx.nd.array(np.array(batch["preds"], dtype="float32"))]
        metric.update(labels, preds)
        name, value = metric.get()
        assert name == expected[0]
        assert value == pytest.approx(expected[1], rel=1e-5)
        if index == 1:
            metric.reset_local()
    name, value = metric.get_global()
    assert value == pytest.approx(case["global"][1], rel=1e-5)


def test_composite_and_create_aliases():
    """A list creates a CompositeEvalMetric; get() returns lists."""
    metric = mx.metric.create(["acc", "ce"])
    assert isinstance(metric, mx.metric.CompositeEvalMetric)
    metric.update([mx.nd.array([1, 0])], [mx.nd.array([[0.2, 0.8], [0.6, 0.4]])])
    names, values = metric.get()
    assert names == ["accuracy", "cross-entropy"]
    assert values[0] == 1.0
    assert values[1] == pytest.approx(-(math.log(0.8) + math.log(0.6)) / 2)
    assert dict(metric.get_name_value())["accuracy"] == 1.0


def test_custom_metric_and_np():
    """A function becomes a CustomMetric named after it."""

    def half_error(label, pred):
        return float(np.abs(label - pred).sum()) / 2, label.size

    metric = mx.metric.create(half_error)
    metric.update([mx.nd.array([1.0, 2.0])], [mx.nd.array([2.0, 2.0])])
    assert metric.get() == ("half_error", 0.25)
    assert mx.metric.np(half_error).name == "half_error"


def test_bad_use_is_explained():
    with pytest.raises(mx.MXNBError, match="known metrics"):
        mx.metric.create("nosuch")
    with pytest.raises(ValueError, match="does not match"):
        mx.metric.Accuracy().update([mx.nd.array([1])], [])
    with pytest.raises(mx.MXNBError, match="binary"):
        mx.metric.F1().update([mx.nd.array([0, 1, 2])], [mx.nd.ones((3, 3))])
