"""The machine's own ceiling for data parallelism: the same kernels in two processes, no GIL shared.

Idea: two virtual GPUs are two threads of one process, so their kernels share
one GIL.  How much of a 2x speed-up is lost to that, and how much the machine
itself never gives?  This peer answers the second half.  It runs each
device's share of the batch in a process of its own (``ceiling_trainer`` of
``train.py``: the same LeNet-5 executor, forward + backward, nothing else, on
one virtual GPU with BLAS pinned to one thread), both processes at once.
Each process runs on the core the virtual GPU of its number gets in the
parent (:func:`mxnb.engine.affinity.virtual_gpu_cores`: the same policy).
Nothing is shared between them, not even the GIL, so the time two of them
take against one in-process device with the whole batch is what two cores
give two independent copies of these kernels: the per-call costs that do not
shrink with the batch, and whatever the two cores share (caches, memory
bandwidth, a virtual machine's host) are in it; the GIL is not.

Rule: the children are started once (a process's start and the bind are not
timed), wait on their stdin between rounds (no CPU), and run one round per line
they read; the parent times from the first ``go`` written to the last answer.

Example::

    with ProcessCeiling(rows=128, processes=2, steps=14) as run:
        run()                     # one round: both children train 14 steps at once
"""

from __future__ import annotations

import os
import subprocess
import sys
from typing import Self

from mxnb.engine.affinity import pin_current_thread, virtual_gpu_cores

HERE = os.path.dirname(os.path.abspath(__file__))


class ProcessCeiling:
    """``processes`` child processes, each training ``steps`` ceiling steps of ``rows`` rows per call.

    Call the object to run one round in all children at once; use it as a
    context manager (or call :meth:`close`) so the children end with it.
    """

    def __init__(self, rows: int, processes: int, steps: int) -> None:
        self.children: list[subprocess.Popen] = []
        try:
            for index in range(processes):
                cores = virtual_gpu_cores(index)  # the core gpu(index)'s workers get, or None
                core = "-" if cores is None else str(min(cores))
                child = subprocess.Popen(
                    [sys.executable, __file__, str(rows), str(steps), core],
                    stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE,
                    text=True,
                    env=dict(os.environ, MXNB_OP_THREADS="1"),
                )
                self.children.append(child)
            for child in self.children:
                self._answer(child, "ready")
        except BaseException:
            self.close()
            raise

    def __call__(self) -> None:
        """One round: every child trains its steps, all at once; returns when the last is done."""
        for child in self.children:
            child.stdin.write("go\n")
            child.stdin.flush()
        for child in self.children:
            self._answer(child, "done")

    @staticmethod
    def _answer(child: subprocess.Popen, expected: str) -> None:
        line = child.stdout.readline().strip()
        if line != expected:
            raise RuntimeError(
                f"process peer (pid {child.pid}) answered {line!r}, expected {expected!r}; "
                f"its exit code: {child.poll()}"
            )

    def close(self) -> None:
        """End the children (closing their stdin ends their loop)."""
        for child in self.children:
            if child.stdin:
                child.stdin.close()
        for child in self.children:
            try:
                child.wait(timeout=30)
            except subprocess.TimeoutExpired:
                child.kill()
        self.children = []

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _child(rows: int, steps: int, core: str) -> None:
    """A child's loop: bind once, then one round of ``steps`` steps per line on stdin.

    ``core``: the core the whole child runs on, the one the parent's virtual
    GPU of the same number gets (:mod:`mxnb.engine.affinity`), ``-`` for none.
    """
    if core != "-":
        pin_current_thread({int(core)})  # before any thread starts: they all inherit it
    sys.path.insert(0, HERE)
    import logging

    from threadpoolctl import threadpool_limits
    from train import ceiling_trainer

    import mxnb as mx

    logging.disable(logging.WARNING)
    mx.context.set_virtual_gpus(1)
    with threadpool_limits(1):
        run = ceiling_trainer([mx.gpu(0)], steps, rows)
        print("ready", flush=True)
        for _ in sys.stdin:
            run()
            print("done", flush=True)


if __name__ == "__main__":
    _child(int(sys.argv[1]), int(sys.argv[2]), sys.argv[3])
