"""Training benchmark: Module.fit against PyTorch, two virtual GPUs against one, KVStore cost.

Three figures, each a ratio against a peer measured in the same run:

1. **Speed against PyTorch**: samples per second of ``Module.fit`` training
   LeNet-5 on scikit-learn's digits (16x16, batch 32, SGD with momentum) against
   the same network in PyTorch on the CPU (``torch.optim.SGD``, same batch size,
   same thread count).  Target: mxnb's time <= 2x PyTorch's.
2. **Scaling**: ``Module.fit`` on two virtual GPUs (``kvstore='device'``)
   against one, with BLAS pinned to one thread per worker (threadpoolctl) and
   ``MXNB_OP_THREADS=1``, so each device's lane is one core.  Target: >= 1.4x
   samples per second (numpy releases the GIL inside its kernels).
3. **KVStore cost**: ``kv.push`` + ``kv.pull`` of every LeNet parameter on a
   ``local`` store (no updater) against a plain ``a += b`` on the same arrays.

Run: ``python benchmarks/train.py [--epochs 1] [--repeat 3]`` (PyTorch from the ``bench``
extra; figure 1 is skipped with a note when torch is missing).
"""

from __future__ import annotations

import argparse
import logging
import os
import time
from typing import Any

os.environ.setdefault("MXNB_OP_THREADS", "1")

import numpy as np
from sklearn.datasets import load_digits
from threadpoolctl import threadpool_limits

import mxnb as mx
from mxnb.executor import zoo

BATCH = 32


def digits() -> tuple[np.ndarray, np.ndarray]:
    """Standardized 16x16 digits (nearest-neighbour upsampled) and their labels."""
    data = load_digits()
    images = data.images.astype(np.float32) / 16.0
    images = (images - images.mean()) / images.std()
    big = np.kron(images, np.ones((2, 2), np.float32))[:, None]
    usable = len(big) // BATCH * BATCH
    return big[:usable], data.target[:usable].astype(np.float32)


def mxnb_trainer(x: np.ndarray, y: np.ndarray, contexts: list, kvstore: str, epochs: int) -> Any:
    """A function running ``epochs`` epochs of ``Module.fit`` (bound and warmed up once, here)."""
    mx.random.seed(0)
    module = mx.mod.Module(zoo.lenet5_digits(), context=contexts)
    params = {"learning_rate": 0.05, "momentum": 0.9}
    train = mx.io.NDArrayIter(x, y, batch_size=BATCH, shuffle=False)
    warm = mx.io.NDArrayIter(x[:BATCH], y[:BATCH], batch_size=BATCH)
    module.fit(
        warm,
        num_epoch=1,
        kvstore=kvstore,
        optimizer="sgd",
        optimizer_params=params,
        initializer=mx.init.Xavier(),
        progress=False,
    )

    def run() -> None:
        module.fit(
            train,
            num_epoch=epochs,
            kvstore=kvstore,
            optimizer="sgd",
            optimizer_params=params,
            progress=False,
        )
        mx.nd.waitall()

    return run


def torch_trainer(x: np.ndarray, y: np.ndarray, epochs: int) -> Any:
    """A function running the same training in PyTorch (CPU), or None without torch."""
    try:
        import torch
    except ImportError:
        return None
    torch.manual_seed(0)
    net = torch.nn.Sequential(
        torch.nn.Conv2d(1, 6, 5, padding=2),
        torch.nn.ReLU(),
        torch.nn.MaxPool2d(2),
        torch.nn.Conv2d(6, 16, 5),
        torch.nn.ReLU(),
        torch.nn.MaxPool2d(2),
        torch.nn.Flatten(),
        torch.nn.Linear(64, 120),
        torch.nn.ReLU(),
        torch.nn.Linear(120, 84),
        torch.nn.ReLU(),
        torch.nn.Linear(84, 10),
    )
    optimizer = torch.optim.SGD(net.parameters(), lr=0.05, momentum=0.9)
    loss_fn = torch.nn.CrossEntropyLoss()
    images, labels = torch.from_numpy(x), torch.from_numpy(y.astype(np.int64))

    def run() -> None:
        for _ in range(epochs):
            for begin in range(0, len(images), BATCH):
                optimizer.zero_grad()
                loss = loss_fn(net(images[begin : begin + BATCH]), labels[begin : begin + BATCH])
                loss.backward()
                optimizer.step()

    return run


def best_alternating(functions: list, repeat: int) -> list[float]:
    """The fastest of ``repeat`` timings of each function, run in turns (load hits all alike)."""
    best = [float("inf")] * len(functions)
    for _ in range(repeat):
        for index, function in enumerate(functions):
            start = time.perf_counter()
            function()
            best[index] = min(best[index], time.perf_counter() - start)
    return best


def kvstore_ratio(repeat: int = 20) -> tuple[float, float]:
    """Seconds per round of push+pull of every LeNet parameter, and of ``a += b`` on the same arrays."""
    shapes = [
        (6, 1, 5, 5),
        (6,),
        (16, 6, 5, 5),
        (16,),
        (120, 16),
        (120,),
        (84, 120),
        (84,),
        (10, 84),
        (10,),
    ]
    kv = mx.kv.create("local")
    grads = [mx.nd.ones(shape) for shape in shapes]
    weights = [mx.nd.zeros(shape) for shape in shapes]
    for key, weight in enumerate(weights):
        kv.init(key, weight)

    def with_kvstore() -> None:
        for key in range(len(shapes)):
            kv.push(key, grads[key], priority=-key)
            kv.pull(key, out=weights[key], priority=-key)
        mx.nd.waitall()

    def plain() -> None:
        for weight, grad in zip(weights, grads):
            weight += grad
        mx.nd.waitall()

    results = []
    for function in (with_kvstore, plain):
        function()
        start = time.perf_counter()
        for _ in range(repeat):
            function()
        results.append((time.perf_counter() - start) / repeat)
    return results[0], results[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=1, help="epochs per timed round")
    parser.add_argument("--repeat", type=int, default=3, help="timed rounds (best is kept)")
    args = parser.parse_args()
    logging.disable(logging.WARNING)
    x, y = digits()
    samples = len(x) * args.epochs
    threads = int(os.environ.get("MXNB_BENCH_THREADS", "1"))
    with threadpool_limits(threads):
        theirs = torch_trainer(x, y, args.epochs)
        if theirs is not None:
            import torch

            torch.set_num_threads(threads)
        ours = mxnb_trainer(x, y, [mx.cpu()], "local", args.epochs)
        times = best_alternating([ours] if theirs is None else [ours, theirs], args.repeat)
    print(
        f"LeNet-5 on digits, batch {BATCH}, {samples} samples per round, {threads} thread(s), "
        f"best of {args.repeat}"
    )
    print(f"  mxnb Module.fit     {samples / times[0]:8.0f} samples/s")
    if theirs is None:
        print("  PyTorch: not installed (pip install -e '.[bench]'); ratio skipped")
    else:
        print(f"  PyTorch (CPU)       {samples / times[1]:8.0f} samples/s")
        print(f"  time mxnb / PyTorch = {times[0] / times[1]:.2f}x   (target <= 2x)")

    mx.context.set_virtual_gpus(2)
    with threadpool_limits(1):
        one = mxnb_trainer(x, y, [mx.gpu(0)], "device", args.epochs)
        two = mxnb_trainer(x, y, [mx.gpu(0), mx.gpu(1)], "device", args.epochs)
        one_time, two_time = best_alternating([one, two], args.repeat)
    print("Data parallel, BLAS 1 thread per worker, MXNB_OP_THREADS=1")
    print(f"  1 virtual GPU       {samples / one_time:8.0f} samples/s")
    print(f"  2 virtual GPUs      {samples / two_time:8.0f} samples/s")
    print(f"  speed-up 2 vs 1 = {one_time / two_time:.2f}x   (target >= 1.4x)")

    with_kv, plain = kvstore_ratio()
    print("KVStore cost, 10 LeNet parameters per round")
    print(f"  push+pull per key   {with_kv * 1e6 / 10:8.1f} us/key")
    print(f"  a += b              {plain * 1e6 / 10:8.1f} us/key")
    print(f"  kvstore / a += b = {with_kv / plain:.2f}x")


if __name__ == "__main__":
    main()
