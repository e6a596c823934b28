"""Run Module.fit with REAL MXNet 1.9.1 for each optimizer (run by hand, not by the tests).

    /work/mxnet-venv/bin/python tests/module/data/gen_fit_vectors.py

A small MLP (fc1 8 relu, fc2 3, SoftmaxOutput) on 60 fixed samples, batch 10, no shuffle,
3 epochs, from fixed initial parameters, kvstore 'local' on one CPU.  Writes fit_vectors.json:
    inputs    x, y and the initial parameters
    cases     per optimizer: its name and params, the per-epoch global training metrics
              (accuracy, cross-entropy) and the final parameters
"""

import json
import os

import mxnet as mx
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))

OPTIMIZERS = [
    ("sgd", {"learning_rate": 0.1}),
    ("sgd", {"learning_rate": 0.1, "momentum": 0.9, "wd": 0.001}),
    ("nag", {"learning_rate": 0.1, "momentum": 0.9}),
    ("adam", {"learning_rate": 0.01}),
    ("adagrad", {"learning_rate": 0.1}),
    ("rmsprop", {"learning_rate": 0.01}),
    ("rmsprop", {"learning_rate": 0.01, "centered": True}),
    ("adadelta", {}),
    ("signum", {"learning_rate": 0.01}),
    ("ftrl", {"learning_rate": 0.1}),
]


def network():
    data = mx.sym.Variable("data")
    net = mx.sym.FullyConnected(data, num_hidden=8, name="fc1")
    net = mx.sym.Activation(net, act_type="relu", name="relu1")
    net = mx.sym.FullyConnected(net, num_hidden=3, name="fc2")
    return mx.sym.SoftmaxOutput(net, name="softmax")


def main():
    rng = np.random.RandomState(11)
    centers = rng.uniform(-2, 2, (3, 5))
    y = np.arange(60) % 3
    x = (centers[y] + rng.normal(0, 1.0, (60, 5))).astype("float32")
    init = {
        "fc1_weight": rng.uniform(-0.5, 0.5, (8, 5)).astype("float32"),
        "fc1_bias": np.zeros(8, "float32"),
        "fc2_weight": rng.uniform(-0.5, 0.5, (3, 8)).astype("float32"),
        "fc2_bias": np.zeros(3, "float32"),
    }
    cases = []
    for name, params in OPTIMIZERS:
        it = mx.io.NDArrayIter(x, y.astype("float32"), batch_size=10, shuffle=False)
        mod = mx.mod.Module(network(), context=mx.cpu())
        epochs = {}

        def record(param, epochs=epochs):
            epochs[param.epoch] = [list(p) for p in param.eval_metric.get_global_name_value()]

        mod.fit(
            it,
            num_epoch=3,
            optimizer=name,
            optimizer_params=params,
            eval_metric=["acc", "ce"],
            arg_params={k: mx.nd.array(v) for k, v in init.items()},
            kvstore="local",
            batch_end_callback=record,
        )
        args, _ = mod.get_params()
        cases.append(
            {
                "optimizer": name,
                "params": params,
                "epochs": [epochs[e] for e in range(3)],
                "final": {k: v.asnumpy().tolist() for k, v in args.items()},
            }
        )
    out = {
        "x": x.tolist(),
        "y": y.tolist(),
        "init": {k: v.tolist() for k, v in init.items()},
        "cases": cases,
    }
    with open(os.path.join(HERE, "fit_vectors.json"), "w") as f:
        json.dump(out, f)
    print("wrote", len(cases), "fit cases")


if __name__ == "__main__":
    main()
