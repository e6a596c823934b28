"""Per kernel: CPU, GIL-held time and GIL releases of one LeNet-5 training pass on one device.

Idea: two virtual GPUs run their kernels in two threads under one GIL
(docs/scaling.md).  What limits them is not only the time a kernel holds the
GIL but how often it lets go of it: every numpy call that releases the GIL is
a point where the other device's thread may take it and this one must wait to
come back.  This script binds the executor ``Module.fit`` binds (LeNet-5 on
16x16 digits, gradients of the parameters only), runs training passes with
bulk execution off (one engine op per step) on the naive engine (every op in
this thread), and prints per step kind: CPU us, GIL-held us and the number of
GIL releases per call, read from the GIL meter (``_gil.py``, needs a C
compiler; the script re-runs itself with the meter preloaded).

Rule: CPU times only (they hold on a busy machine); the kinds are sorted by
GIL-held time.  Figures, not a pass/fail test.

Run: ``python benchmarks/kernel_gil.py [--batches 4,128] [--passes 40]``
"""

from __future__ import annotations

import argparse
import collections
import ctypes
import os
import time
from typing import Any

os.environ.setdefault("MXNB_OP_THREADS", "1")
os.environ["MXNB_ENGINE_TYPE"] = "naive"

import numpy as np
from _gil import meter, preload
from threadpoolctl import threadpool_limits

import mxnb as mx
from mxnb.executor import zoo


class KernelCounts:
    """Per step name: calls, thread CPU seconds, GIL-free seconds and GIL releases of its body."""

    def __init__(self, gil: Any) -> None:
        self.gil = gil
        library = ctypes.PyDLL(None)  # keeps the GIL: reading adds no release
        self.sections = library.gil_meter_sections
        self.sections.restype = ctypes.c_longlong
        self.totals: dict[str, list[float]] = collections.defaultdict(lambda: [0, 0.0, 0.0, 0])

    def wrap(self, fn: Any, name: str) -> Any:
        """``fn`` with its body counted under ``name``."""
        totals, gil, sections = self.totals, self.gil, self.sections

        def counted(*args: Any) -> Any:
            cpu, free, released = time.thread_time(), gil.thread_free_seconds(), sections()
            try:
                return fn(*args)
            finally:
                entry = totals[name]
                entry[0] += 1
                entry[1] += time.thread_time() - cpu
                entry[2] += gil.thread_free_seconds() - free
                entry[3] += sections() - released

        return counted

    def install(self, engine: Any) -> None:
        """Count every function pushed to ``engine`` from now on (an instance attribute)."""
        push = engine._push_opr

        def push_opr(fn, is_async, ctx, const, mutate, priority, name, copy, delete=None):
            if fn is not None:
                fn = self.wrap(fn, name)
            return push(fn, is_async, ctx, const, mutate, priority, name, copy, delete)

        engine._push_opr = push_opr

    @staticmethod
    def uninstall(engine: Any) -> None:
        """Stop counting."""
        del engine._push_opr


def bound_lenet(batch: int) -> Any:
    """LeNet-5's executor on one virtual GPU, as Module binds it, with random values."""
    net = zoo.lenet5_digits()
    requests = {name: "write" for name in net.list_arguments()}
    requests.update(data="null", softmax_label="null")
    executor = net.simple_bind(
        mx.gpu(0), grad_req=requests, data=(batch, 1, 16, 16), softmax_label=(batch,)
    )
    rng = np.random.default_rng(0)
    for array in executor.arg_dict.values():
        array[:] = rng.standard_normal(array.shape).astype(np.float32) * 0.1
    executor.arg_dict["softmax_label"][:] = rng.integers(0, 10, batch).astype(np.float32)
    return executor


def profile(batch: int, passes: int, gil: Any) -> None:
    """Print one batch size's table."""
    executor = bound_lenet(batch)
    counts = KernelCounts(gil)
    with threadpool_limits(1), mx.engine.bulk(0):
        for _ in range(5):
            executor.forward(is_train=True)
            executor.backward()
        engine = mx.engine.get()
        counts.install(engine)
        cpu, free, released = time.process_time(), gil.free_seconds(), counts.sections()
        for _ in range(passes):
            executor.forward(is_train=True)
            executor.backward()
        mx.nd.waitall()
        cpu = time.process_time() - cpu
        free = gil.free_seconds() - free
        released = counts.sections() - released
        counts.uninstall(engine)
    print(
        f"batch {batch}: per training pass CPU {cpu / passes * 1e6:.0f} us, GIL-held "
        f"{(cpu - free) / passes * 1e6:.0f} us, {released / passes:.0f} GIL releases"
    )
    print(f"  {'step':20s} {'CPU us':>8s} {'GIL-held us':>12s} {'releases':>9s}   (per call)")
    rows = sorted(counts.totals.items(), key=lambda item: -(item[1][1] - item[1][2]))
    for name, (calls, spent, unheld, sections) in rows:
        print(
            f"  {name:20s} {spent / calls * 1e6:8.0f} {(spent - unheld) / calls * 1e6:12.0f}"
            f" {sections / calls:9.1f}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batches", default="4,128", help="rows per device, comma separated")
    parser.add_argument("--passes", type=int, default=40, help="training passes timed per batch")
    args = parser.parse_args()
    preload()
    gil = meter()
    if gil is None:
        raise SystemExit("the GIL meter is not running (needs a C compiler and a shared libpython)")
    mx.context.set_virtual_gpus(1)
    for batch in (int(text) for text in args.batches.split(",")):
        profile(batch, args.passes, gil)


if __name__ == "__main__":
    main()
