"""Operator benchmark: forward + backward of mxnb kernels beside PyTorch (CPU) in the same run.

Shapes (issue 4): Convolution batch 32, 64 -> 64 channels, 3x3, pad 1, 56x56;
FullyConnected batch 256, 1024 -> 4096; max Pooling (3x3, stride 2, pad 1) and
BatchNorm (training) on the convolution's 32x64x56x56 activations.  Both
sides run float32 with the same thread count, on pre-allocated mxnb buffers
(as the executor provides them) and torch autograd.  Figures are medians of
``--repeat`` runs after one warm-up, alternating mxnb and torch, printed as a ratio mxnb / torch.

Targets: FullyConnected <= 1.2x, Convolution <= 3x, Pooling and BatchNorm <= 2x.

Run: ``python benchmarks/operators.py [--repeat 5] [--only Convolution]``
(needs ``pip install torch==2.13.0``, the ``bench`` extra).
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

import numpy as np

from mxnb.operator import OpContext, OpReqType, ResourceRequest, registry
from mxnb.operator.eager import EagerRandom, EagerTempSpace

CASES = {
    "FullyConnected": {
        "params": {"num_hidden": 4096},
        "shapes": [(256, 1024), (4096, 1024), (4096,)],
        "aux": [],
        "target": 1.2,
    },
    "Convolution": {
        "params": {"kernel": (3, 3), "pad": (1, 1), "num_filter": 64},
        "shapes": [(32, 64, 56, 56), (64, 64, 3, 3), (64,)],
        "aux": [],
        "target": 3.0,
    },
    "Pooling": {
        "params": {"kernel": (3, 3), "stride": (2, 2), "pad": (1, 1), "pool_type": "max"},
        "shapes": [(32, 64, 56, 56)],
        "aux": [],
        "target": 2.0,
    },
    "BatchNorm": {
        "params": {"fix_gamma": False},
        "shapes": [(32, 64, 56, 56), (64,), (64,)],
        "aux": [(64,), (64,)],
        "target": 2.0,
    },
}


def _median_times(
    ours: Callable[[], None], theirs: Callable[[], None], repeat: int
) -> tuple[float, float]:
    """Median seconds of each, measured alternately so that load from other processes hits both alike."""
    ours()  # warm-up (allocations, BLAS threads)
    theirs()
    times: tuple[list[float], list[float]] = ([], [])
    for _ in range(repeat):
        for side, function in enumerate((ours, theirs)):
            start = time.perf_counter()
            function()
            times[side].append(time.perf_counter() - start)
    return statistics.median(times[0]), statistics.median(times[1])


def mxnb_step(name: str, rng: np.random.Generator) -> Callable[[], None]:
    """Return a closure running one forward + backward of the mxnb op on fixed buffers."""
    case = CASES[name]
    prop = registry.get(name).create_property(**case["params"])
    inputs = [rng.standard_normal(s).astype(np.float32) for s in case["shapes"]]
    aux = [np.zeros(s, np.float32) for s in case["aux"]]
    _, out_shapes, _ = prop.infer_shape([x.shape for x in inputs])
    outputs = [np.empty(s, np.float32) for s in out_shapes]
    head = [rng.standard_normal(s).astype(np.float32) for s in out_shapes]
    grads = [np.empty_like(x) for x in inputs]
    operator = prop.create_operator(None)
    # resources as the resource manager provides them: one temp block reused across calls
    resources = {
        ResourceRequest.TEMP_SPACE: EagerTempSpace(),
        ResourceRequest.RANDOM: EagerRandom(0),
    }
    requested = [resources[r] for r in prop.forward_resource([x.shape for x in inputs])]
    ctx = OpContext(is_train=True, requested=requested)
    tokens = list(range(3 * len(outputs) + len(inputs)))
    declared = set(
        prop.declare_backward_dependency(
            tokens[: len(outputs)],
            tokens[len(outputs) : len(outputs) + len(inputs)],
            tokens[len(outputs) + len(inputs) : 2 * len(outputs) + len(inputs)],
        )
    )
    n_out = len(outputs)

    def step() -> None:
        operator.forward(ctx, inputs, [OpReqType.WRITE_TO] * n_out, outputs, aux)
        out_grad = [h if i in declared else None for i, h in enumerate(head)]
        in_data = [x if n_out + i in declared else None for i, x in enumerate(inputs)]
        out_data = [
            y if n_out + len(inputs) + i in declared else None for i, y in enumerate(outputs)
        ]
        operator.backward(
            ctx, out_grad, in_data, out_data, [OpReqType.WRITE_TO] * len(grads), grads, aux
        )

    return step


def torch_step(name: str, rng: np.random.Generator) -> Callable[[], None]:
    """Return a closure running the same forward + backward in PyTorch."""
    import torch
    import torch.nn.functional as F

    case = CASES[name]
    tensors = [
        torch.tensor(rng.standard_normal(s).astype(np.float32), requires_grad=True)
        for s in case["shapes"]
    ]
    if name == "FullyConnected":
        forward = lambda: F.linear(*tensors)
    elif name == "Convolution":
        forward = lambda: F.conv2d(tensors[0], tensors[1], tensors[2], padding=1)
    elif name == "Pooling":
        forward = lambda: F.max_pool2d(tensors[0], 3, stride=2, padding=1)
    else:
        running_mean, running_var = torch.zeros(64), torch.ones(64)
        forward = lambda: F.batch_norm(
            tensors[0],
            running_mean,
            running_var,
            tensors[1],
            tensors[2],
            training=True,
            momentum=0.1,
            eps=1e-3,
        )
    with torch.no_grad():
        head = torch.tensor(rng.standard_normal(tuple(forward().shape)).astype(np.float32))

    def step() -> None:
        for t in tensors:
            t.grad = None
        forward().backward(head)

    return step


def main() -> None:
    """Print one line per op: mxnb time, torch time, ratio, target."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--only", choices=sorted(CASES), action="append")
    args = parser.parse_args()
    import torch

    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads; numpy {np.__version__}")
    print(f"{'op':<16}{'mxnb ms':>10}{'torch ms':>10}{'ratio':>8}{'target':>8}")
    for name in args.only or list(CASES):
        rng = np.random.default_rng(0)
        ours, theirs = _median_times(mxnb_step(name, rng), torch_step(name, rng), args.repeat)
        target = CASES[name]["target"]
        ratio = ours / theirs
        verdict = "ok" if ratio <= target else "over"
        print(
            f"{name:<16}{ours * 1e3:>10.1f}{theirs * 1e3:>10.1f}{ratio:>8.2f}{target:>7.1f}x {verdict}"
        )


if __name__ == "__main__":
    main()
