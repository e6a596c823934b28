"""Generate metric conformance vectors with REAL MXNet 1.9.1 (run by hand, not by the tests).

    /work/mxnet-venv/bin/python tests/data/gen_metric_vectors.py

Writes ``metric_vectors.json``: for each metric (by create name and kwargs), three batches of
(labels, preds) and MXNet's ``get()`` after each batch and ``get_global()`` at the end,
with a ``reset_local()`` after the second batch.
"""

import json
import os

import mxnet as mx
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))

CASES = [
    ("acc", {}, "class"),
    ("top_k_accuracy", {"top_k": 3}, "class"),
    ("f1", {}, "binary"),
    ("f1", {"average": "micro"}, "binary"),
    ("mae", {}, "regress"),
    ("mse", {}, "regress"),
    ("rmse", {}, "regress"),
    ("ce", {}, "class"),
    ("perplexity", {"ignore_label": 2}, "class"),
    ("loss", {}, "regress"),
]


def batch(rng, kind):
    if kind == "regress":
        return rng.uniform(-1, 1, (6,)).astype("float32"), rng.uniform(-1, 1, (6,)).astype(
            "float32"
        )
    classes = 2 if kind == "binary" else 5
    logits = rng.uniform(0, 1, (6, classes)).astype("float32")
    probs = logits / logits.sum(axis=1, keepdims=True)
    labels = rng.randint(0, classes, (6,)).astype("float32")
    return labels, probs


def main():
    rng = np.random.RandomState(3)
    out = []
    for name, kwargs, kind in CASES:
        metric = mx.metric.create(name, **kwargs)
        batches, values = [], []
        for i in range(3):
            labels, preds = batch(rng, kind)
            metric.update([mx.nd.array(labels)], [mx.nd.array(preds)])
            batches.append({"labels": labels.tolist(), "preds": preds.tolist()})
            values.append(list(metric.get()))
            if i == 1:
                metric.reset_local()
        out.append(
            {
                "name": name,
                "kwargs": kwargs,
                "batches": batches,
                "values": values,
                "global": list(metric.get_global()),
            }
        )
    with open(os.path.join(HERE, "metric_vectors.json"), "w") as f:
        json.dump(out, f)
    print("wrote", len(out), "metric cases")


if __name__ == "__main__":
    main()
