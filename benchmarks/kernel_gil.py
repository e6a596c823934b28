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
import os
import time
from typing import Any

os.environ.setdefault("MXNB_OP_THREADS", "1")
os.environ["MXNB_ENGINE_TYPE"] = "naive"

import numpy as np
from _gil import required_meter
from scaling_profile import OpProfile
from threadpoolctl import threadpool_limits
from train import bound_lenet

import mxnb as mx


def profile(batch: int, passes: int, gil: Any) -> None:
    """Print one batch size's table."""
    executor = bound_lenet(mx.gpu(0), batch, np.random.default_rng(0))
    counts = OpProfile(gil, kind=str)
    with threadpool_limits(1), mx.engine.bulk(0):
        for _ in range(5):
            executor.forward(is_train=True)
            executor.backward()
        engine = mx.engine.get()
        counts.install(engine)
        cpu, free, released = time.process_time(), gil.free_seconds(), gil.releases()
        for _ in range(passes):
            executor.forward(is_train=True)
            executor.backward()
        mx.nd.waitall()
        cpu = time.process_time() - cpu
        free = gil.free_seconds() - free
        released = gil.releases() - released
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
    gil = required_meter()
    mx.context.set_virtual_gpus(1)
    for batch in (int(text) for text in args.batches.split(",")):
        profile(batch, args.passes, gil)


if __name__ == "__main__":
    main()
