"""Training benchmark: Module.fit against PyTorch, two virtual GPUs against one, KVStore cost.

Three figures, each a ratio against a peer measured in the same run:

1. **Speed against PyTorch**: samples per second of ``Module.fit`` training
   LeNet-5 on scikit-learn's digits (16x16, batch 32, SGD with momentum) against
   the same network in PyTorch on the CPU (``torch.optim.SGD``, same batch size,
   same thread count).  Target: mxnb's time <= 2x PyTorch's.
2. **Scaling**: ``Module.fit`` on two virtual GPUs (``kvstore='device'``)
   against one, with BLAS pinned to one thread per worker (threadpoolctl) and
   ``MXNB_OP_THREADS=1``, so each device's lane is one core.  Target: >= 1.4x
   samples per second (numpy releases the GIL inside its kernels).  Measured at
   each ``--batches`` size (the total batch; each device gets half; default
   32, the speed figure's, 128, 256 and 512) in interleaved rounds of at least
   ``MIN_STEPS`` steps (more epochs per round at big batches): the speed-up is
   the median of the rounds' ratios.  Beside it, what explains the figure:
   engine ops per step, CPU time per step, the time runnable threads waited
   for a core (other processes' load), and, when the GIL meter (``_gil.py``,
   needs a C compiler) runs, the CPU time that holds the GIL.  Wall-clock
   speed-ups need two free cores; the CPU-time bound ``max(gil_held, cpu / 2)``
   of a two-device step holds on a busy machine too.  The **ceiling** row runs
   the same executors with nothing but forward + backward on each device (no
   data copies, no kvstore, no update, no metric; :func:`ceiling_trainer`), in
   the same rounds: what the kernels allow two threads under one GIL, and so
   the most Module.fit's speed-up can be at that batch.  The **machine's
   ceiling** row runs each device's executor in a process of its own, both at
   once (:mod:`process_peer`): nothing shared, not even the GIL, so two
   processes against the one-device ceiling is what the two cores give two
   independent copies of these kernels, the bound for any implementation.
3. **KVStore cost**: ``kv.push`` + ``kv.pull`` of every LeNet parameter on a
   ``local`` store (no updater) against a plain ``a += b`` on the same arrays.

Run: ``python benchmarks/train.py [--epochs 1] [--repeat 5] [--batches 32,128,256,512] [--only scaling]
[--compare-bulk] [--no-gil-meter]`` (``--compare-bulk``: the scaling pair also with the
executor's bulk execution off, in the same interleaved rounds)
(PyTorch from the ``bench`` extra; figure 1 is skipped with a note when torch is missing).
"""

from __future__ import annotations

import argparse
import logging
import os
import statistics
import time
from dataclasses import dataclass
from typing import Any

os.environ.setdefault("MXNB_OP_THREADS", "1")

import numpy as np
from _gil import GilMeter, meter, preload
from process_peer import ProcessCeiling
from sklearn.datasets import load_digits
from threadpoolctl import threadpool_limits

import mxnb as mx
from mxnb.engine.affinity import AFFINITY_ENV, virtual_gpu_cores
from mxnb.engine.tracing import OpPush
from mxnb.executor import zoo

BATCH = 32
MIN_STEPS = 14  # a scaling round trains at least this many steps (more epochs at big batches)


def digits(batch: int = BATCH) -> tuple[np.ndarray, np.ndarray]:
    """Standardized 16x16 digits (nearest-neighbour upsampled) and their labels, whole batches."""
    data = load_digits()
    images = data.images.astype(np.float32) / 16.0
    images = (images - images.mean()) / images.std()
    big = np.kron(images, np.ones((2, 2), np.float32))[:, None]
    usable = len(big) // batch * batch
    return big[:usable], data.target[:usable].astype(np.float32)


def mxnb_trainer(
    x: np.ndarray, y: np.ndarray, contexts: list, kvstore: str, epochs: int, batch: int = BATCH
) -> Any:
    """A function running ``epochs`` epochs of ``Module.fit`` (bound and warmed up once, here)."""
    mx.random.seed(0)
    module = mx.mod.Module(zoo.lenet5_digits(), context=contexts)
    params = {"learning_rate": 0.05, "momentum": 0.9}
    train = mx.io.NDArrayIter(x, y, batch_size=batch, shuffle=False)
    warm = mx.io.NDArrayIter(x[:batch], y[:batch], batch_size=batch)
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


def bound_lenet(ctx: Any, rows: int, rng: np.random.Generator) -> Any:
    """LeNet-5's executor on ``ctx`` as Module binds it (gradients of the parameters only), random values."""
    net = zoo.lenet5_digits()
    requests = {name: "write" for name in net.list_arguments()}
    requests.update(data="null", softmax_label="null")
    executor = net.simple_bind(
        ctx, grad_req=requests, data=(rows, 1, 16, 16), softmax_label=(rows,)
    )
    for array in executor.arg_dict.values():
        array[:] = rng.standard_normal(array.shape).astype(np.float32) * 0.1
    executor.arg_dict["softmax_label"][:] = rng.integers(0, 10, rows).astype(np.float32)
    return executor


def ceiling_trainer(contexts: list, steps: int, batch: int) -> Any:
    """The kernels' own parallelism: forward + backward on each device, no sync, no Module.

    Each device gets its executor (``batch / len(contexts)`` rows, gradients
    of the parameters only, as ``Module`` binds) and runs ``steps`` training
    passes with nothing between the devices: no data copies, no kvstore, no
    update, no metric.  Two devices against one is then the most that
    ``Module.fit``'s figure can reach with these kernels (what the GIL lets two
    threads of numpy calls do at once); the figure Module reaches, over this
    one, is what its data loading, gradient sync and update keep of it.
    """
    rng = np.random.default_rng(0)
    executors = [bound_lenet(ctx, batch // len(contexts), rng) for ctx in contexts]

    def run() -> None:
        for _ in range(steps):
            for executor in executors:
                executor.forward(is_train=True)
                executor.backward()
        mx.nd.waitall()

    run()
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


def run_queue_wait() -> float:
    """Seconds this process's threads have waited for a core, runnable (Linux schedstat; else 0).

    Time another process held the core: on a shared machine it is what the
    wall clock loses beyond CPU and GIL, and it hits the two-device run,
    which wants both cores, harder than the one-device run.
    """
    total = 0
    try:
        for task in os.listdir("/proc/self/task"):
            with open(f"/proc/self/task/{task}/schedstat") as file:
                total += int(file.read().split()[1])
    except (OSError, IndexError, ValueError):
        return 0.0
    return total / 1e9


@dataclass
class StepCost:
    """What one training step costs, per round: wall, CPU, GIL-held and run-queue seconds."""

    wall: list[float]
    cpu: list[float]
    gil_held: list[float]  # empty: the GIL meter is not running
    waiting: list[float]  # runnable but not running: other processes had the cores
    ops: float = 0.0

    def median(self, name: str) -> float | None:
        """The median of one field over the rounds (None when it was not measured)."""
        values = getattr(self, name)
        return statistics.median(values) if values else None


def step_costs(functions: list, steps: int, repeat: int, gil: GilMeter | None) -> list[StepCost]:
    """Per-step costs of each function (``steps`` steps per call), rounds interleaved.

    Round ``r`` runs every function once, one after the other, so a burst of
    load from other processes hits them alike; each round's figures are kept
    (callers take medians, and ratios round by round).  The engine ops are
    counted in one more, traced, round.
    """
    costs = [StepCost([], [], [], []) for _ in functions]
    for _ in range(repeat):
        for cost, function in zip(costs, functions):
            free = gil.free_seconds() if gil else 0.0
            waited = run_queue_wait()
            cpu = time.process_time()
            start = time.perf_counter()
            function()
            cost.wall.append((time.perf_counter() - start) / steps)
            cost.cpu.append((time.process_time() - cpu) / steps)
            cost.waiting.append((run_queue_wait() - waited) / steps)
            if gil:
                cost.gil_held.append(cost.cpu[-1] - (gil.free_seconds() - free) / steps)
    for cost, function in zip(costs, functions):
        with mx.engine.trace() as trace:
            function()
        cost.ops = len(trace.events_of(OpPush)) / steps
    return costs


def _bulked(function: Any, size: int) -> Any:
    """``function`` run under ``mx.engine.bulk(size)`` (0: one engine op per executor step)."""

    def run() -> None:
        with mx.engine.bulk(size):
            function()

    return run


def scaling(
    batch: int, epochs: int, repeat: int, gil: GilMeter | None, compare_bulk: bool = False
) -> None:
    """Print figure 2 for one batch size: one and two virtual GPUs, and the speed-up.

    ``compare_bulk``: the same pair again with bulk execution off, in the same
    interleaved rounds, so the before / after of :mod:`mxnb.executor.bulk` is one run.
    """
    x, y = digits(batch)
    epochs = max(epochs, -(-MIN_STEPS * batch // len(x)))  # enough steps for a steady round
    steps = len(x) // batch * epochs
    size = mx.engine.bulk_size()
    sizes = (size, 0) if compare_bulk else (size,)
    with threadpool_limits(1):
        one = mxnb_trainer(x, y, [mx.gpu(0)], "device", epochs, batch)
        two = mxnb_trainer(x, y, [mx.gpu(0), mx.gpu(1)], "device", epochs, batch)
        functions = [_bulked(f, bulk) for bulk in sizes for f in (one, two)]
        ceiling = [
            ceiling_trainer(devices, steps, batch)
            for devices in ([mx.gpu(0)], [mx.gpu(0), mx.gpu(1)])
        ]
        with ProcessCeiling(batch // 2, 2, steps) as processes:
            costs = step_costs(functions + ceiling + [processes], steps, repeat, gil)
    print(f"  batch {batch} ({batch // 2} per device on two), {steps} steps per round, medians")
    for index, bulk in enumerate(sizes):
        if compare_bulk:
            print(f"   executor bulk size {bulk}{' (off)' if bulk <= 1 else ''}")
        _print_pair(batch, costs[2 * index : 2 * index + 2])
    _print_ceiling(costs[:2], costs[-3:-1], costs[-1])


def _ratios(one: StepCost, two: StepCost) -> list[float]:
    """Round by round, the wall time of ``one`` over that of ``two``: the speed-up of each round."""
    return [a / b for a, b in zip(one.wall, two.wall)]


def _per_step(cost: StepCost) -> str:
    """``ops/step  CPU .. ms/step  GIL-held .. ms/step`` of one configuration (medians)."""
    held = cost.median("gil_held")
    return (
        f"{cost.ops:6.1f} ops/step  CPU {cost.median('cpu') * 1e3:6.2f} ms/step"
        f"  GIL-held {'-' if held is None else f'{held * 1e3:.2f}'} ms/step"
    )


def _print_pair(batch: int, costs: list[StepCost]) -> None:
    for devices, cost in zip((1, 2), costs):
        print(
            f"    {devices} virtual GPU{'s' if devices > 1 else ' '}"
            f"  {batch / cost.median('wall'):8.0f} samples/s  {_per_step(cost)}"
            f"  waiting for a core {cost.median('waiting') * 1e3:6.2f} ms/step"
        )
    first, second = costs
    rounds = _ratios(first, second)
    print(
        f"    speed-up 2 vs 1 (wall) = {statistics.median(rounds):.2f}x median of rounds "
        f"[{', '.join(f'{r:.2f}' for r in rounds)}]; best-of ratio "
        f"{min(first.wall) / min(second.wall):.2f}x   (target >= 1.4x)"
    )
    held = second.median("gil_held")
    if held is not None:
        floor = max(held, second.median("cpu") / 2)
        print(
            f"    CPU-time bound on two free cores: 1-device step CPU / max(GIL-held, CPU / 2) "
            f"of 2 devices = {first.median('cpu') / floor:.2f}x"
        )


def _print_ceiling(module: list[StepCost], ceiling: list[StepCost], machine: StepCost) -> None:
    """The ceilings, threads (:func:`ceiling_trainer`) and processes (:mod:`process_peer`), and the shares kept.

    Three speed-ups against the same one-device ceiling, round by round: two
    processes (what the machine gives two independent copies of the kernels),
    two threads under one GIL (the ceiling), Module.fit (the ceiling plus data
    copies, gradient sync, update and metric).
    """

    threads = statistics.median(_ratios(ceiling[0], ceiling[1]))
    reached = statistics.median(_ratios(*module))
    rounds = _ratios(ceiling[0], machine)
    processes = statistics.median(rounds)
    rounds_text = ", ".join(f"{ratio:.2f}" for ratio in rounds)
    print(
        f"    ceiling: the executors alone, no sync (forward + backward per device, nothing else): "
        f"2 vs 1 = {threads:.2f}x; Module.fit keeps {reached / threads:.0%} of it"
    )
    for devices, cost in zip((1, 2), ceiling):
        print(
            f"      ceiling, {devices} virtual GPU{'s' if devices > 1 else ' '}  {_per_step(cost)}"
        )
    print(
        f"    the machine's ceiling: the same executors in two processes, no GIL shared "
        f"(process_peer.py): 2 vs 1 = {processes:.2f}x [{rounds_text}]; threads under one GIL keep "
        f"{threads / processes:.0%} of it, Module.fit {reached / processes:.0%}"
    )


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
    parser.add_argument(
        "--repeat", type=int, default=5, help="timed rounds (speed: best; scaling: medians)"
    )
    parser.add_argument(
        "--batches",
        default="32,128,256,512",
        help="batch sizes of the scaling figure, comma separated",
    )
    parser.add_argument(
        "--no-gil-meter", action="store_true", help="do not build and preload the GIL meter"
    )
    parser.add_argument(
        "--only", choices=("speed", "scaling", "kvstore"), help="print one figure only"
    )
    parser.add_argument(
        "--compare-bulk",
        action="store_true",
        help="scaling: also run with executor bulk execution off, in the same rounds",
    )
    args = parser.parse_args()
    if not args.no_gil_meter:
        preload()  # runs this script again with the meter preloaded (when a C compiler exists)
    gil = meter()
    logging.disable(logging.WARNING)
    if args.only in (None, "speed"):
        speed(args.epochs, args.repeat)
    if args.only in (None, "scaling"):
        mx.context.set_virtual_gpus(2)
        load = os.getloadavg()[0]
        print(
            f"Data parallel (kvstore='device'), BLAS 1 thread per worker, MXNB_OP_THREADS=1; "
            f"{os.cpu_count()} cores, load average {load:.1f} (wall figures need free cores)"
        )
        workers = os.environ.get("MXNB_GPU_WORKER_NTHREADS", "the default 2")
        print(
            f"  engine {mx.engine.engine_type()!r}, {workers} worker threads per virtual GPU, "
            f"executor bulk size {mx.engine.bulk_size()} (MXNB_EXEC_BULK_EXEC_TRAIN=0: off)"
        )
        cores = [virtual_gpu_cores(device) for device in range(2)]
        print(
            f"  virtual GPU workers' cores ({AFFINITY_ENV}="
            f"{os.environ.get(AFFINITY_ENV, 'auto')!r}): "
            + ", ".join(
                f"gpu({device}) {'free' if pin is None else sorted(pin)}"
                for device, pin in enumerate(cores)
            )
        )
        if gil is None:
            print("  GIL meter not running (no C compiler, --no-gil-meter, or a static libpython)")
        for batch in (int(text) for text in args.batches.split(",")):
            scaling(batch, args.epochs, args.repeat, gil, args.compare_bulk)
    if args.only in (None, "kvstore"):
        with_kv, plain = kvstore_ratio()
        print("KVStore cost, 10 LeNet parameters per round")
        print(f"  push+pull per key   {with_kv * 1e6 / 10:8.1f} us/key")
        print(f"  a += b              {plain * 1e6 / 10:8.1f} us/key")
        print(f"  kvstore / a += b = {with_kv / plain:.2f}x")


def speed(epochs: int, repeat: int) -> None:
    """Print figure 1: Module.fit against PyTorch, batch 32, best of ``repeat`` alternating."""
    x, y = digits()
    samples = len(x) * epochs
    threads = int(os.environ.get("MXNB_BENCH_THREADS", "1"))
    with threadpool_limits(threads):
        theirs = torch_trainer(x, y, epochs)
        if theirs is not None:
            import torch

            torch.set_num_threads(threads)
        ours = mxnb_trainer(x, y, [mx.cpu()], "local", epochs)
        times = best_alternating([ours] if theirs is None else [ours, theirs], repeat)
    print(
        f"LeNet-5 on digits, batch {BATCH}, {samples} samples per round, {threads} thread(s), "
        f"best of {repeat}"
    )
    print(f"  mxnb Module.fit     {samples / times[0]:8.0f} samples/s")
    if theirs is None:
        print("  PyTorch: not installed (pip install -e '.[bench]'); ratio skipped")
    else:
        print(f"  PyTorch (CPU)       {samples / times[1]:8.0f} samples/s")
        print(f"  time mxnb / PyTorch = {times[0] / times[1]:.2f}x   (target <= 2x)")


if __name__ == "__main__":
    main()
