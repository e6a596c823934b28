"""Optimizer updates: one pass over ResNet-18's parameters, mxnb's fused update ops beside peers.

mxnb runs ``mx.nd.sgd_mom_update`` / ``mx.nd.adam_update`` / ``mx.nd.ftrl_update`` with
``out=weight``, through the engine, as ``mx.optimizer`` calls them (one fused map each: a Python
function of numpy expressions for small parameters, blocks for large ones).  The peers, in the same run:

* **expressions**: the same formula as whole-array numpy expressions, called directly (no
  engine), which is what the update ops computed before they were fused maps;
* **torch**: PyTorch's ``SGD(momentum)`` / ``Adam`` step (``foreach=False``, its CPU default)
  on the same shapes, when PyTorch is installed (the ``bench`` extra); PyTorch has no FTRL.

Each figure is the median of ``--repeat`` passes after a warm-up, the sides alternating: wall
and CPU milliseconds, and the temporaries a pass allocates (``tracemalloc``; PyTorch's own
allocator is not seen by it).

Run: ``python benchmarks/updates.py [--repeat 9]``.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

import numpy as np

import mxnb as mx
from mxnb.executor import allocation_peak
from mxnb.executor.zoo.cnn import resnet
from mxnb.operator.split import op_threads

LR, WD, MOMENTUM, RESCALE, CLIP = 0.01, 1e-4, 0.9, 1 / 32, 5.0
BETA1, BETA2, EPSILON = 0.9, 0.999, 1e-8
LAMDA1, BETA = 0.01, 1.0
#: Each update's own parameters, beside the learning rate, decay, rescale and clip all share.
EXTRA = {"sgd_mom_update": {"momentum": MOMENTUM}, "adam_update": {},
         "ftrl_update": {"lamda1": LAMDA1, "beta": BETA}}  # fmt: skip
#: The updates PyTorch has an optimizer for (it has no FTRL).
TORCH_PEERS = ("sgd_mom_update", "adam_update")


def parameter_shapes() -> list[tuple[int, ...]]:
    """The shapes of ResNet-18's learned parameters (ImageNet size: 11.7M floats in 61 arrays)."""
    symbol = resnet(18)
    shapes, _, _ = symbol.infer_shape(data=(1, 3, 224, 224), softmax_label=(1,))
    names = symbol.list_arguments()
    return [tuple(s) for n, s in zip(names, shapes) if n not in ("data", "softmax_label")]


def ours(op: str, arrays: list) -> Callable[[], None]:
    """A pass of mxnb's update op over every parameter, waited for."""
    update = getattr(mx.nd, op)
    extra = EXTRA[op]
    tensors = [[mx.nd.array(a) for a in group] for group in arrays]

    def run() -> None:
        for weight, grad, *states in tensors:
            update(weight, grad, *states, out=weight, lr=LR, wd=WD, rescale_grad=RESCALE,
                   clip_gradient=CLIP, **extra)  # fmt: skip
        mx.nd.waitall()

    return run


def expressions(op: str, arrays: list) -> Callable[[], None]:
    """The same formula as whole-array numpy expressions, scalars in float32 (no engine)."""
    f32 = np.float32
    lr, wd, momentum, rescale, clip = f32(LR), f32(WD), f32(MOMENTUM), f32(RESCALE), f32(CLIP)
    beta1, beta2, epsilon = f32(BETA1), f32(BETA2), f32(EPSILON)
    groups = [[a.copy() for a in group] for group in arrays]

    def sgd_mom() -> None:
        for weight, grad, mom in groups:
            rescaled = np.clip(rescale * grad, -clip, clip)
            mom[...] = momentum * mom - lr * wd * weight - lr * rescaled
            weight += mom

    def adam() -> None:
        for weight, grad, mean, var in groups:
            rescaled = np.clip(rescale * grad + wd * weight, -clip, clip)
            mean[...] = beta1 * mean + (1 - beta1) * rescaled
            var[...] = beta2 * var + (1 - beta2) * rescaled * rescaled
            weight -= lr * mean / (np.sqrt(var) + epsilon)

    def ftrl() -> None:  # what ftrl_update computed before it was a fused map
        lamda1, beta = f32(LAMDA1), f32(BETA)
        for weight, grad, z, n in groups:
            rescaled = np.clip(rescale * grad, -clip, clip)
            z[...] = z + rescaled - (np.sqrt(n + rescaled * rescaled) - np.sqrt(n)) * weight / lr
            n[...] = n + rescaled * rescaled
            value = (np.sign(z) * lamda1 - z) / ((beta + np.sqrt(n)) / lr + wd)
            weight[...] = value * (np.abs(z) > lamda1).astype(weight.dtype)

    return {"sgd_mom_update": sgd_mom, "adam_update": adam, "ftrl_update": ftrl}[op]


def torch_step(op: str, arrays: list) -> Callable[[], None] | None:
    """PyTorch's optimizer step on the same shapes, or None without PyTorch or without this
    optimizer in it (:data:`TORCH_PEERS`)."""
    if op not in TORCH_PEERS:
        return None
    try:
        import torch
    except ImportError:
        return None
    params = []
    for weight, grad, *_ in arrays:
        tensor = torch.tensor(weight)
        tensor.grad = torch.tensor(grad * RESCALE)
        params.append(tensor)
    if op == "sgd_mom_update":
        optimizer = torch.optim.SGD(params, lr=LR, momentum=MOMENTUM, weight_decay=WD,
                                    foreach=False)  # fmt: skip
    else:
        optimizer = torch.optim.Adam(params, lr=LR, betas=(BETA1, BETA2), eps=EPSILON,
                                     weight_decay=WD, foreach=False)  # fmt: skip
    return optimizer.step


def measure(function: Callable[[], None]) -> tuple[float, float]:
    """One run: wall and CPU seconds."""
    wall, cpu = time.perf_counter(), time.process_time()
    function()
    return time.perf_counter() - wall, time.process_time() - cpu


def main() -> None:
    """Print one line per optimizer and side: wall, CPU, temporaries, and mxnb's ratio to it."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=9)
    args = parser.parse_args()
    shapes = parameter_shapes()
    rng = np.random.default_rng(0)
    print(f"ResNet-18: {len(shapes)} parameters, {sum(np.prod(s) for s in shapes) / 1e6:.1f}M "
          f"float32; {op_threads()} op threads; numpy {np.__version__}")  # fmt: skip
    print(f"{'update':<16}{'side':<13}{'wall ms':>9}{'cpu ms':>8}{'temp MiB':>10}"
          f"{'mxnb / side, wall':>19}{'cpu':>6}")  # fmt: skip
    for op, count in (("sgd_mom_update", 1), ("adam_update", 2), ("ftrl_update", 2)):
        arrays = [
            [rng.standard_normal(s, dtype=np.float32) for _ in range(2)]
            + [1 + np.abs(rng.standard_normal(s, dtype=np.float32)) for _ in range(count)]
            for s in shapes
        ]
        sides = {"mxnb": ours(op, arrays), "expressions": expressions(op, arrays)}
        peer = torch_step(op, arrays)
        if peer is not None:
            sides["torch"] = peer
        for function in sides.values():
            function()  # warm-up
        runs: dict[str, list] = {name: [] for name in sides}
        for _ in range(args.repeat):
            for name, function in sides.items():
                runs[name].append(measure(function))
        figures = {
            name: (statistics.median(r[0] for r in runs[name]),
                   statistics.median(r[1] for r in runs[name]), allocation_peak(sides[name]))
            for name in sides
        }  # fmt: skip
        wall0, cpu0, _ = figures["mxnb"]
        for name, (wall, cpu, peak) in figures.items():
            ratio = "" if name == "mxnb" else f"{wall0 / wall:>18.2f}x{cpu0 / cpu:>5.2f}x"
            print(f"{op:<16}{name:<13}{wall * 1e3:>9.2f}{cpu * 1e3:>8.2f}{peak / 2**20:>10.2f}"
                  f"{ratio}")  # fmt: skip


if __name__ == "__main__":
    main()
