"""Elementwise formulas in blocks (mxnb/operator/split.py) beside the same formula on whole arrays.

The peer is the plain path in the same run: :meth:`FusedMap.evaluate` (or the one-line numpy
expression) over the whole array, which is what the kernels did before blocks.  Both compute
the same values bit for bit (tests/operator/test_split.py); this measures time, wall and CPU
(blocks run on the op threads), and the temporaries each allocates (``tracemalloc``).

Shapes: ResNet's first stage at batch 32, 32x64x56x56 float32 (24.5 MiB an array).  Figures
are medians of ``--repeat`` runs after a warm-up, blocks and whole alternating.

Run: ``python benchmarks/split.py [--repeat 9]``.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

import numpy as np

from mxnb.executor import allocation_peak
from mxnb.operator.ops import norm
from mxnb.operator.ops.activation import _relu_backward
from mxnb.operator.ops.elemwise import SIGMOID, SIGMOID_GRAD, TANH_GRAD
from mxnb.operator.split import BLOCK_ELEMENTS, op_threads, in_blocks

SHAPE = (32, 64, 56, 56)


def cases(rng: np.random.Generator) -> dict[str, tuple[Callable[[], None], Callable[[], None]]]:
    """name -> (in blocks, whole): each writes the same output."""
    y = np.tanh(rng.standard_normal(SHAPE, dtype=np.float32))
    g = rng.standard_normal(SHAPE, dtype=np.float32)
    out = np.empty_like(g)
    x3 = rng.standard_normal(SHAPE, dtype=np.float32).reshape(32, 64, -1)
    out3 = np.empty_like(x3)
    column = rng.standard_normal((1, 64, 1), dtype=np.float32)

    def pair(fused, *args, target):
        return (lambda: fused(np, *args, out=(target,)),
                lambda: fused.evaluate(np, *args, out=(target,)))  # fmt: skip

    return {
        "tanh gradient, in place": pair(TANH_GRAD, out, y, target=out),
        "sigmoid gradient, in place": pair(SIGMOID_GRAD, out, y, target=out),
        "sigmoid": pair(SIGMOID, g, target=out),
        "BatchNorm normalize": pair(norm._NORMALIZE, x3, column, column, target=out3),
        "BatchNorm data gradient": pair(
            norm._GRAD_DATA, x3, x3, column, column, column, target=out3
        ),
        "relu gradient, in place": (
            lambda: in_blocks(np, lambda *a: _relu_backward(np, *a), (out, y), (out,)),
            lambda: _relu_backward(np, out, y, out),
        ),
    }


def measure(function: Callable[[], None]) -> tuple[float, float]:
    """One run: wall and CPU seconds."""
    wall, cpu = time.perf_counter(), time.process_time()
    function()
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    return wall, cpu


def main() -> None:
    """Print one line per formula: blocks and whole (wall, CPU, temporaries), and the ratio."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=9)
    args = parser.parse_args()
    print(f"shape {SHAPE} float32, blocks of {BLOCK_ELEMENTS} elements, "
          f"{op_threads()} op threads; numpy {np.__version__}")  # fmt: skip
    print(f"{'formula':<28}{'blocks ms':>11}{'cpu':>7}{'temp MiB':>10}"
          f"{'whole ms':>10}{'cpu':>7}{'temp MiB':>10}{'wall ratio':>12}")  # fmt: skip
    for name, (blocks, whole) in cases(np.random.default_rng(0)).items():
        blocks(), whole()  # warm-up
        runs: tuple[list, list] = ([], [])
        for _ in range(args.repeat):
            for side, function in enumerate((blocks, whole)):
                runs[side].append(measure(function))
        figures = []
        for side, function in enumerate((blocks, whole)):
            wall = statistics.median(r[0] for r in runs[side])
            cpu = statistics.median(r[1] for r in runs[side])
            figures.append((wall, cpu, allocation_peak(function)))
        (bw, bc, bp), (ww, wc, wp) = figures
        print(f"{name:<28}{bw * 1e3:>11.2f}{bc * 1e3:>7.1f}{bp / 2**20:>10.2f}"
              f"{ww * 1e3:>10.2f}{wc * 1e3:>7.1f}{wp / 2**20:>10.2f}{bw / ww:>11.2f}x")  # fmt: skip


if __name__ == "__main__":
    main()
