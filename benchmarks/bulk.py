"""Bulk execution: an executor's forward + backward with segments against one engine op per step.

Idea: :mod:`mxnb.executor.bulk` pushes up to ``mx.engine.bulk_size()``
consecutive steps as one engine op.  What that saves is the engine's cost per
op (pushing, dispatch, completion: Python holding the GIL), so it shows best
where the kernels are small.  This script binds a network on one virtual GPU
at a small batch and times forward + backward at bulk size 15 against bulk
size 0 (the peer, one op per step), in interleaved rounds, and prints the
ratio of CPU time and of wall time per pass, with the engine ops per pass and
the CPU saved per op removed.

Rule: CPU time is the figure that holds on a busy machine; wall needs free
cores.  BLAS pinned to one thread, ``MXNB_OP_THREADS=1`` (as ``train.py``).

Run: ``python benchmarks/bulk.py [--network lenet5_digits] [--batch 2] [--passes 200] [--repeat 7]``
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

os.environ.setdefault("MXNB_OP_THREADS", "1")

from threadpoolctl import threadpool_limits

import mxnb as mx
from mxnb.engine.tracing import OpPush
from mxnb.executor import zoo

SHAPES = {"lenet5_digits": (1, 16, 16), "mlp": (784,), "lenet": (1, 28, 28)}


def passes(exe: mx.executor.Executor, count: int) -> None:
    """``count`` training passes (forward + backward), then wait for the engine."""
    for _ in range(count):
        exe.forward(is_train=True)
        exe.backward()
    mx.nd.waitall()


def ops_per_pass(exe: mx.executor.Executor, size: int) -> int:
    """Engine ops one pass pushes at bulk ``size``."""
    with mx.engine.bulk(size), mx.engine.trace() as trace:
        passes(exe, 1)
    return len(trace.events_of(OpPush))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--network", default="lenet5_digits", choices=sorted(SHAPES))
    parser.add_argument("--batch", type=int, default=2)
    parser.add_argument("--passes", type=int, default=200, help="passes per timed round")
    parser.add_argument("--repeat", type=int, default=7, help="interleaved rounds")
    args = parser.parse_args()
    mx.context.set_virtual_gpus(1)
    exe = getattr(zoo, args.network)().simple_bind(
        mx.gpu(0), data=(args.batch, *SHAPES[args.network])
    )
    sizes = (15, 0)
    cpu: dict[int, list[float]] = {size: [] for size in sizes}
    wall: dict[int, list[float]] = {size: [] for size in sizes}
    with threadpool_limits(1):
        for size in sizes:
            with mx.engine.bulk(size):
                passes(exe, 5)  # warm: runners and segments are built at the first pass
        for _ in range(args.repeat):
            for size in sizes:
                with mx.engine.bulk(size):
                    start_cpu, start = time.process_time(), time.perf_counter()
                    passes(exe, args.passes)
                    cpu[size].append((time.process_time() - start_cpu) / args.passes)
                    wall[size].append((time.perf_counter() - start) / args.passes)
        ops = {size: ops_per_pass(exe, size) for size in sizes}
    print(
        f"{args.network}, batch {args.batch}, one virtual GPU, {len(exe._graph.steps)} steps per "
        f"pass; load average {os.getloadavg()[0]:.1f}; medians of {args.repeat} rounds"
    )
    for size in sizes:
        print(
            f"  bulk size {size:2d}: {ops[size]:3d} engine ops/pass  "
            f"CPU {statistics.median(cpu[size]) * 1e6:8.1f} us/pass  "
            f"wall {statistics.median(wall[size]) * 1e6:8.1f} us/pass"
        )
    saved = statistics.median(cpu[0]) - statistics.median(cpu[15])
    print(
        f"  bulk 15 / bulk 0: CPU {statistics.median(cpu[15]) / statistics.median(cpu[0]):.2f}x, "
        f"wall {statistics.median(wall[15]) / statistics.median(wall[0]):.2f}x; "
        f"{saved / max(ops[0] - ops[15], 1) * 1e6:.1f} us of CPU per engine op removed"
    )


if __name__ == "__main__":
    main()
