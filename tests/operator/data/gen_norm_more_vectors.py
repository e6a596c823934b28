"""Generate tests/operator/data/norm_more_vectors.npz with Apache MXNet 1.9.1 (run by hand).

    /work/mxnet-venv/bin/python tests/operator/data/gen_norm_more_vectors.py

For the operators of issue 21's third pass (InstanceNorm, L2Normalization,
SyncBatchNorm, BatchNorm's third output, bilinear UpSampling, linalg.gelqf):
each case calls ``mx.nd.<function>(*inputs, **kwargs)`` under
``autograd.record(train_mode=True)`` on inputs drawn from a fixed
``numpy.random.RandomState`` seed, then back-propagates
``sum(output_i * head_i)`` over the visible outputs.  Stored per case:
``in<i>``, ``out<i>``, ``head<i>``, ``grad<i>`` for each input that takes a
gradient, and ``after<i>`` for each input the op mutates (moving statistics).

The index (case -> function, kwargs, which inputs take a gradient, dtype) is
JSON inside the archive under ``__index__``; mxnb's tests read only the archive.
"""

import json
import os

import mxnet as mx
import numpy as np

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "norm_more_vectors.npz")

# name: (function, [(shape, low, high)], kwargs, gradient inputs, mutated inputs, dtype)
CASES = {
    "instance_norm_4d": (
        "InstanceNorm", [((2, 3, 4, 5), -2, 2), ((3,), 0.5, 1.5), ((3,), -1, 1)],
        {"eps": 1e-3}, [0, 1, 2], [], "float32",
    ),
    "instance_norm_3d": (
        "InstanceNorm", [((3, 2, 6), -1, 3), ((2,), 0.5, 1.5), ((2,), -1, 1)],
        {"eps": 0.01}, [0, 1, 2], [], "float32",
    ),
    "l2_instance": ("L2Normalization", [((2, 3, 4, 5), -1, 1)], {"mode": "instance"}, [0], [], "float32"),
    "l2_channel": ("L2Normalization", [((2, 3, 4, 5), -1, 1)], {"mode": "channel"}, [0], [], "float32"),
    "l2_spatial": ("L2Normalization", [((2, 3, 4, 5), -1, 1)], {"mode": "spatial"}, [0], [], "float32"),
    "l2_channel_eps": ("L2Normalization", [((3, 4, 2), -1, 1)], {"mode": "channel", "eps": 0.5}, [0], [], "float32"),
    "l2_channel_float16": ("L2Normalization", [((2, 5, 6), -1, 1)], {"mode": "channel"}, [], [], "float16"),
    "sync_batch_norm": (
        "contrib.SyncBatchNorm",
        [((4, 3, 5), 0, 1), ((3,), 0.5, 1.5), ((3,), -1, 1), ((3,), -0.1, 0.1), ((3,), 0.9, 1.1)],
        {"key": "sbn", "fix_gamma": False, "output_mean_var": True, "momentum": 0.8},
        [0, 1, 2], [3, 4], "float32",
    ),
    "batch_norm_mean_var": (
        "BatchNorm",
        [((4, 3, 5), 0, 1), ((3,), 0.5, 1.5), ((3,), -1, 1), ((3,), -0.1, 0.1), ((3,), 0.9, 1.1)],
        {"fix_gamma": False, "output_mean_var": True, "momentum": 0.8},
        [0, 1, 2], [3, 4], "float32",
    ),
    "upsampling_bilinear_2": (
        "UpSampling", [((1, 2, 5, 5), -1, 1), ((2, 1, 4, 4), -1, 1)],
        {"sample_type": "bilinear", "scale": 2, "num_filter": 2, "num_args": 2}, [0, 1], [], "float32",
    ),
    "upsampling_bilinear_3": (
        "UpSampling", [((2, 3, 3, 4), -1, 1), ((3, 1, 5, 5), -1, 1)],
        {"sample_type": "bilinear", "scale": 3, "num_filter": 3, "num_args": 2}, [0, 1], [], "float32",
    ),
    "gelqf": ("linalg.gelqf", [((2, 3), -1, 1)], {}, [0], [], "float32"),
    "gelqf_batch_float64": ("linalg.gelqf", [((2, 3, 5), -1, 1)], {}, [0], [], "float64"),
}  # fmt: skip


def _function(path):
    target = mx.nd
    for part in path.split("."):
        target = getattr(target, part)
    return target


def main():
    arrays, index = {}, {}
    for seed, (name, (function, specs, kwargs, grads, mutated, dtype)) in enumerate(CASES.items()):
        rng = np.random.RandomState(100 + seed)
        values = [rng.uniform(low, high, size=shape).astype(dtype) for shape, low, high in specs]
        inputs = [mx.nd.array(v, dtype=dtype) for v in values]
        for i in grads:
            inputs[i].attach_grad()
        with mx.autograd.record(train_mode=True):
            outputs = _function(function)(*inputs, **kwargs)
            outputs = outputs if isinstance(outputs, (list, tuple)) else [outputs]
            heads = [rng.uniform(-1, 1, size=out.shape).astype(dtype) for out in outputs]
            if grads:
                loss = sum(
                    (out * mx.nd.array(h, dtype=dtype)).sum() for out, h in zip(outputs, heads)
                )
        if grads:
            loss.backward()
        for i, value in enumerate(values):
            arrays[f"{name}/in{i}"] = value
        for i, (out, head) in enumerate(zip(outputs, heads)):
            arrays[f"{name}/out{i}"] = out.asnumpy()
            arrays[f"{name}/head{i}"] = head
        for i in grads:
            arrays[f"{name}/grad{i}"] = inputs[i].grad.asnumpy()
        for i in mutated:
            arrays[f"{name}/after{i}"] = inputs[i].asnumpy()
        index[name] = {"function": function, "kwargs": kwargs, "grads": grads,
                       "mutated": mutated, "dtype": dtype, "inputs": len(values),
                       "outputs": len(outputs)}  # fmt: skip
    arrays["__index__"] = np.frombuffer(json.dumps(index, sort_keys=True).encode(), dtype=np.uint8)
    np.savez_compressed(OUT, **arrays)
    print(f"wrote {len(index)} cases to {OUT}")


if __name__ == "__main__":
    main()
