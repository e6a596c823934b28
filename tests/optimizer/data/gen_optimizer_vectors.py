"""Generate optimizer conformance vectors with REAL MXNet 1.9.1 (run by hand, not by the tests).

    /work/mxnet-venv/bin/python tests/optimizer/data/gen_optimizer_vectors.py

Writes ``optimizer_vectors.json`` beside this file:
    ops         each fused update op: inputs, states, params; the weight and states after 3 calls
    optimizers  mx.optimizer.create(name, **params) run through get_updater for 4 steps on a
                '*_weight' and a '*_bias' parameter (MXNet's wd_mult rule): weights after each step
    schedulers  lr of each scheduler at num_update 0..40
"""

import json
import os

import mxnet as mx
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))


def rand(rng, shape):
    return rng.uniform(-1, 1, size=shape).astype("float32")


OPS = [
    ("sgd_update", [], {"lr": 0.1, "wd": 0.01, "rescale_grad": 0.5, "clip_gradient": 0.3}),
    ("sgd_update", [], {"lr": 0.2}),
    ("sgd_mom_update", ["mom"], {"lr": 0.1, "momentum": 0.9, "wd": 0.01, "rescale_grad": 2.0}),
    ("sgd_mom_update", ["mom"], {"lr": 0.1, "momentum": 0.8, "clip_gradient": 0.4}),
    ("nag_mom_update", ["mom"], {"lr": 0.1, "momentum": 0.9, "wd": 0.01, "clip_gradient": 0.5}),
    ("adam_update", ["mean", "var"], {"lr": 0.01, "wd": 0.01, "rescale_grad": 0.5}),
    (
        "adam_update",
        ["mean", "var"],
        {"lr": 0.01, "beta1": 0.8, "epsilon": 1e-6, "clip_gradient": 0.2},
    ),
    ("rmsprop_update", ["n"], {"lr": 0.01, "gamma1": 0.9, "wd": 0.01, "clip_weights": 0.5}),
    (
        "rmspropalex_update",
        ["n", "g", "delta"],
        {"lr": 0.01, "gamma1": 0.9, "gamma2": 0.8, "clip_gradient": 0.5},
    ),
    ("ftrl_update", ["z", "n"], {"lr": 0.1, "lamda1": 0.05, "beta": 1.0, "wd": 0.01}),
    ("signsgd_update", [], {"lr": 0.1, "wd": 0.05}),
    ("signum_update", ["mom"], {"lr": 0.1, "momentum": 0.9, "wd": 0.01, "wd_lh": 0.02}),
]

OPTIMIZERS = [
    ("sgd", {"learning_rate": 0.1}),
    (
        "sgd",
        {
            "learning_rate": 0.1,
            "momentum": 0.9,
            "wd": 0.01,
            "rescale_grad": 0.5,
            "clip_gradient": 0.4,
        },
    ),
    (
        "sgd",
        {
            "learning_rate": 0.1,
            "momentum": 0.9,
            "lr_scheduler": ("factor", {"step": 2, "factor": 0.5}),
        },
    ),
    ("nag", {"learning_rate": 0.1, "momentum": 0.9, "wd": 0.01}),
    ("adam", {"learning_rate": 0.01, "wd": 0.01}),
    ("adagrad", {"learning_rate": 0.1, "wd": 0.01, "clip_gradient": 0.5}),
    ("rmsprop", {"learning_rate": 0.01, "wd": 0.01}),
    ("rmsprop", {"learning_rate": 0.01, "centered": True, "clip_weights": 0.8}),
    ("adadelta", {"rho": 0.9, "wd": 0.01}),
    ("signum", {"learning_rate": 0.01, "wd_lh": 0.01, "wd": 0.01}),
    ("signum", {"learning_rate": 0.01, "momentum": 0.0}),
    ("ftrl", {"learning_rate": 0.1, "lamda1": 0.01, "wd": 0.01}),
]

SCHEDULERS = [
    ("factor", {"step": 5, "factor": 0.5, "base_lr": 0.1}),
    (
        "factor",
        {
            "step": 3,
            "factor": 0.1,
            "base_lr": 1.0,
            "stop_factor_lr": 1e-3,
            "warmup_steps": 4,
            "warmup_begin_lr": 0.1,
        },
    ),
    ("multifactor", {"step": [5, 12, 30], "factor": 0.5, "base_lr": 0.2}),
    ("poly", {"max_update": 30, "base_lr": 0.1, "pwr": 2, "final_lr": 0.001}),
    (
        "poly",
        {
            "max_update": 30,
            "base_lr": 0.1,
            "pwr": 1,
            "warmup_steps": 5,
            "warmup_mode": "constant",
            "warmup_begin_lr": 0.01,
        },
    ),
    ("cosine", {"max_update": 30, "base_lr": 0.1, "final_lr": 0.001, "warmup_steps": 5}),
]

SCHEDULER_CLASSES = {
    "factor": mx.lr_scheduler.FactorScheduler,
    "multifactor": mx.lr_scheduler.MultiFactorScheduler,
    "poly": mx.lr_scheduler.PolyScheduler,
    "cosine": mx.lr_scheduler.CosineScheduler,
}


def main():
    rng = np.random.RandomState(17)
    out = {"ops": [], "optimizers": [], "schedulers": []}
    shape = (3, 4)
    for name, states, params in OPS:
        weight = rand(rng, shape)
        state_values = [
            np.abs(rand(rng, shape)) if s in ("n", "var") else rand(rng, shape) for s in states
        ]
        grads = [rand(rng, shape) * 2 for _ in range(3)]
        w = mx.nd.array(weight)
        st = [mx.nd.array(v) for v in state_values]
        for g in grads:
            getattr(mx.nd, name)(w, mx.nd.array(g), *st, out=w, **params)
        out["ops"].append(
            {
                "op": name,
                "params": params,
                "weight": weight.tolist(),
                "states": {s: v.tolist() for s, v in zip(states, state_values)},
                "grads": [g.tolist() for g in grads],
                "out_weight": w.asnumpy().tolist(),
                "out_states": {s: v.asnumpy().tolist() for s, v in zip(states, st)},
            }
        )
    for name, params in OPTIMIZERS:
        kwargs = dict(params)
        if "lr_scheduler" in kwargs:
            kind, sched = kwargs.pop("lr_scheduler")
            kwargs["lr_scheduler"] = SCHEDULER_CLASSES[kind](**sched)
        opt = mx.optimizer.create(name, param_idx2name={0: "fc_weight", 1: "fc_bias"}, **kwargs)
        updater = mx.optimizer.get_updater(opt)
        weights = {0: rand(rng, shape), 1: rand(rng, (4,))}
        grads = [{k: rand(rng, v.shape) * 2 for k, v in weights.items()} for _ in range(4)]
        nd_weights = {k: mx.nd.array(v) for k, v in weights.items()}
        history = []
        for step in grads:
            for k in (0, 1):
                updater(k, mx.nd.array(step[k]), nd_weights[k])
            history.append({str(k): v.asnumpy().tolist() for k, v in nd_weights.items()})
        out["optimizers"].append(
            {
                "name": name,
                "params": params,
                "weights": {str(k): v.tolist() for k, v in weights.items()},
                "grads": [{str(k): v.tolist() for k, v in step.items()} for step in grads],
                "history": history,
            }
        )
    for kind, params in SCHEDULERS:
        sched = SCHEDULER_CLASSES[kind](**params)
        out["schedulers"].append(
            {"kind": kind, "params": params, "lr": [sched(n) for n in range(41)]}
        )
    with open(os.path.join(HERE, "optimizer_vectors.json"), "w") as f:
        json.dump(out, f)
    print("wrote", len(out["ops"]), "op cases,", len(out["optimizers"]), "optimizer cases")


if __name__ == "__main__":
    main()
