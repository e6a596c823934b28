"""Where a data-parallel step's time goes: per op kind, CPU and GIL-held time per step.

Idea: the scaling figure of ``train.py`` (two virtual GPUs against one) is
bounded by the time a step holds the GIL.  This script trains LeNet-5 on the
digits as ``train.py`` does, on one and on two virtual GPUs, and wraps every
function pushed to the engine: each call's thread CPU time and the part of it
spent with the GIL released (the GIL meter's per-thread counter, see
``_gil.py``) are added up per op kind (the op's name without its layer /
key / device numbers, e.g. ``Convolution_backward``, ``kv_reduce``).  The
rest of the process's time (pushing, engine dispatch and completion, module,
metric) is printed as "outside op bodies".

Rule: CPU times only (they hold on a busy machine); one traced-free round
per configuration, after a warm-up round.  Needs a C compiler for the meter.

Run: ``python benchmarks/scaling_profile.py [--batches 32,256] [--top 14]``
"""

from __future__ import annotations

import argparse
import collections
import logging
import os
import re
import time

os.environ.setdefault("MXNB_OP_THREADS", "1")

from _gil import required_meter
from threadpoolctl import threadpool_limits
from train import digits, mxnb_trainer

import mxnb as mx

_NUMBERS = re.compile(r"\d+")


def kind_of(name: str) -> str:
    """An op's kind: its name with numbers folded (``conv2_backward`` -> ``conv#_backward``)."""
    return _NUMBERS.sub("#", name)


class OpProfile:
    """Per-kind totals of pushed functions: calls, thread CPU and GIL-free seconds, GIL releases.

    ``kind``: how an op's name becomes the key of its totals (default
    :func:`kind_of`; ``benchmarks/kernel_gil.py`` keeps the names).
    """

    def __init__(self, gil, kind=None) -> None:
        self.gil = gil
        self.kind = kind or kind_of
        self.totals: dict[str, list[float]] = collections.defaultdict(lambda: [0, 0.0, 0.0, 0])

    def wrap(self, fn, is_async: bool, name: str):
        """``fn`` with its body timed (an async op: until it returns, its work is inside)."""
        totals, gil, kind = self.totals, self.gil, self.kind(name)

        def timed(*args):
            cpu, free, released = time.thread_time(), gil.thread_free_seconds(), gil.releases()
            try:
                return fn(*args)
            finally:
                entry = totals[kind]
                entry[0] += 1
                entry[1] += time.thread_time() - cpu
                entry[2] += gil.thread_free_seconds() - free
                entry[3] += gil.releases() - released

        return timed

    def install(self, engine) -> None:
        """Wrap every function pushed to ``engine`` from now on (an instance attribute)."""
        push = engine._push_opr
        profile = self

        def push_opr(fn, is_async, ctx, const, mutate, priority, name, copy, delete=None):
            if fn is not None:
                fn = profile.wrap(fn, is_async, name)
            return push(fn, is_async, ctx, const, mutate, priority, name, copy, delete)

        engine._push_opr = push_opr

    def uninstall(self, engine) -> None:
        """Stop wrapping."""
        del engine._push_opr


def profile(batch: int, devices: int, gil, top: int) -> None:
    """Train one epoch, print per-kind figures per step and the total."""
    x, y = digits(batch)
    steps = len(x) // batch
    contexts = [mx.gpu(i) for i in range(devices)]
    with threadpool_limits(1):
        run = mxnb_trainer(x, y, contexts, "device", 1, batch)
        run()
        engine = mx.engine.get()
        ops = OpProfile(gil)
        ops.install(engine)
        free, cpu = gil.free_seconds(), time.process_time()
        run()
        cpu, free = time.process_time() - cpu, gil.free_seconds() - free
        ops.uninstall(engine)
    held = cpu - free
    body_cpu = sum(v[1] for v in ops.totals.values())
    body_held = sum(v[1] - v[2] for v in ops.totals.values())
    calls = sum(v[0] for v in ops.totals.values())
    print(f"batch {batch}, {devices} device(s), {steps} steps: per step")
    print(f"  {'op kind':34s} {'calls':>6s} {'CPU us':>9s} {'GIL-held us':>12s} {'held/call':>10s}")
    rows = sorted(ops.totals.items(), key=lambda item: -(item[1][1] - item[1][2]))
    for kind, (count, spent, released, _) in rows[:top]:
        print(
            f"  {kind:34s} {count / steps:6.1f} {spent / steps * 1e6:9.0f}"
            f" {(spent - released) / steps * 1e6:12.0f} {(spent - released) / count * 1e6:10.1f}"
        )
    print(
        f"  {'op bodies':34s} {calls / steps:6.1f} {body_cpu / steps * 1e6:9.0f}"
        f" {body_held / steps * 1e6:12.0f}"
    )
    print(
        f"  {'outside op bodies':34s} {'':6s} {(cpu - body_cpu) / steps * 1e6:9.0f}"
        f" {(held - body_held) / steps * 1e6:12.0f}"
    )
    print(f"  {'whole step':34s} {'':6s} {cpu / steps * 1e6:9.0f} {held / steps * 1e6:12.0f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batches", default="32,256", help="batch sizes, comma separated")
    parser.add_argument("--top", type=int, default=14, help="op kinds shown, most GIL-held first")
    args = parser.parse_args()
    gil = required_meter()
    logging.disable(logging.WARNING)
    mx.context.set_virtual_gpus(2)
    for batch in (int(text) for text in args.batches.split(",")):
        for devices in (1, 2):
            profile(batch, devices, gil, args.top)


if __name__ == "__main__":
    main()
