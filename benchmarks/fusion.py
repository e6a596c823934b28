"""Pointwise fusion (mxnb/executor/fusion.py): a training step fused against unfused, same run.

Two figures, each against its peer in the same run:

1. **Time on the CPU**: forward + backward of the zoo's unrolled LSTM (2 layers,
   35 steps, 200 hidden, batch 32: the network fusion was written for) and of
   MXNet 1.9.1's export of Gluon's ``resnet18_v1`` (held out: a graph fusion was
   not developed on; batch 8 at 64 x 64), with fusion on and off, in
   interleaved rounds: median wall and CPU ms, and the ratio.  On numpy a fused
   run saves the steps' Python calls, not passes over memory (each statement
   still makes its array), so this is the small share of the figure.
2. **Launches on a GPU, counted on the stand-in** (``FakeCupy``: cupy's kernel
   classes on numpy): per training step of a small LSTM, the elementwise kernels
   launched and the array-module functions called, fused and not.  Array
   operators (``g * b``) are not counted by the stand-in, so the unfused
   figure is a floor.  What the launches cost on a real GPU has not been
   measured here; ``benchmarks/gpu.py`` prints the LSTM fused and unfused.

Figures (stop 51, 2 cores, four runs): the LSTM 0.95-1.01x wall (202-226 ms fused) and
0.96-1.01x CPU; the held-out resnet18_v1 0.95-1.03x wall and 0.98-1.02x CPU: neutral on the
CPU, so the CPU default stays off.  Launches per step on the stand-in: 560 unfused, 169 fused
(module calls 1,197 and 514).

Run: ``python benchmarks/fusion.py [--repeat 9]``
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

import mxnb as mx
from mxnb.executor import fusion
from mxnb.executor.zoo import lstm
from mxnb.testing.fake_cupy import fake_virtual_gpus

EXPORTS = Path(__file__).resolve().parent.parent / "tests" / "executor" / "data"


def _bind(sym, shapes: dict, ctx, grad_req) -> mx.executor.Executor:
    exe = sym.simple_bind(ctx, grad_req=grad_req, **shapes)
    rng = np.random.default_rng(0)
    for name, array in exe.arg_dict.items():
        if name == "softmax_label":
            array[:] = rng.integers(0, 10, array.shape).astype(np.float32)
        else:
            array[:] = rng.uniform(-0.1, 0.1, array.shape).astype(np.float32)
    return exe


def _networks() -> dict[str, tuple]:
    """name -> (symbol, shapes, grad_req)."""
    resnet = mx.sym.load(str(EXPORTS / "resnet18_v1_train-symbol.json"))
    req = {name: "write" for name in resnet.list_arguments()}
    req["data"] = req["softmax_label"] = "null"
    return {
        "LSTM 2x35x200, batch 32 (tuned on)": (lstm.lstm_unrolled(), lstm.lstm_shapes(32), "write"),
        "MXNet's resnet18_v1, batch 8, 64 px (held out)": (
            resnet,
            {"data": (8, 3, 64, 64), "softmax_label": (8,)},
            req,
        ),
    }


def _step(exe: mx.executor.Executor, on: bool) -> Callable[[], None]:
    def step() -> None:
        with fusion.fused_on(on):
            exe.forward(is_train=True)
            exe.backward()
            mx.nd.waitall()

    return step


def cpu_times(repeat: int) -> dict:
    """Median wall / CPU ms of a training step, fused and not, interleaved."""
    print("Training step on the CPU, fusion on against off, medians of interleaved rounds")
    print(f"{'network':<48}{'fused wall':>11}{'unfused':>9}{'ratio':>7}"
          f"{'fused CPU':>11}{'unfused':>9}{'ratio':>7}{'runs':>6}")  # fmt: skip
    results = {}
    for label, (sym, shapes, req) in _networks().items():
        exes = {on: _bind(sym, shapes, mx.cpu(), req) for on in (True, False)}
        steps = {on: _step(exes[on], on) for on in exes}
        for run in steps.values():
            run()
        wall: dict[bool, list[float]] = {True: [], False: []}
        cpu: dict[bool, list[float]] = {True: [], False: []}
        for _ in range(repeat):
            for on, run in steps.items():
                start, start_cpu = time.perf_counter(), time.process_time()
                run()
                wall[on].append((time.perf_counter() - start) * 1e3)
                cpu[on].append((time.process_time() - start_cpu) * 1e3)
        w = {on: statistics.median(v) for on, v in wall.items()}
        c = {on: statistics.median(v) for on, v in cpu.items()}
        runs = len(fusion.fused_runs(exes[True]))
        print(f"{label:<48}{w[True]:>11.1f}{w[False]:>9.1f}{w[True] / w[False]:>7.2f}"
              f"{c[True]:>11.1f}{c[False]:>9.1f}{c[True] / c[False]:>7.2f}{runs:>6}")  # fmt: skip
        results[label] = {"wall_ms": w, "cpu_ms": c, "fused_runs": runs}
    return results


def launches() -> dict:
    """Kernel launches and module calls per training step on the stand-in GPU."""
    sym = lstm.lstm_unrolled(2, 35, num_hidden=32, num_embed=32, num_classes=50)
    shapes = lstm.lstm_shapes(8, 2, 35, num_hidden=32, num_embed=32)
    counts = {}
    with fake_virtual_gpus(1) as xp:
        for on in (False, True):
            exe = _bind(sym, shapes, mx.gpu(0), "write")
            step = _step(exe, on)
            step()  # each kernel's first call is checked against the plain path
            before = xp.launches, xp.calls
            step()
            counts[on] = (xp.launches - before[0], xp.calls - before[1])
    print("\nPer training step of an LSTM 2x35x32 on the stand-in GPU (FakeCupy)")
    print(f"{'':<10}{'kernel launches':>16}{'module calls':>14}  (array operators not counted)")
    for on in (False, True):
        print(f"{'fused' if on else 'unfused':<10}{counts[on][0]:>16}{counts[on][1]:>14}")
    return counts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=9)
    parser.add_argument("--json", help="write the figures to this file")
    args = parser.parse_args()
    figures = {"cpu": cpu_times(args.repeat), "launches": launches()}
    if args.json:
        Path(args.json).write_text(json.dumps(figures, default=str, indent=1))


if __name__ == "__main__":
    main()
