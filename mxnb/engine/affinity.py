"""A virtual GPU's own core: which CPU core a virtual GPU's worker threads run on.

Idea: a real GPU is a processor of its own; its kernels never compete with
another device's for the same cores or caches.  A virtual GPU
(``MXNB_VIRTUAL_GPUS``) runs its kernels in its worker threads on the host.
Left free, the operating system moves those threads between cores whenever
they wake (every time a numpy call gives the GIL back and takes it again), so
two devices keep trading cores and each finds the other's data in its core's
caches.  Given a
core each, every virtual GPU's working set stays in its own core's L2 cache,
as a device's memory stays on the device.  (Measured: LeNet-5 on two virtual
GPUs, batch 512: 1.34-1.47x -> 1.55-1.57x against one; the kernels alone
1.72x -> 1.97x; ``docs/scaling.md``.)

Rule (``MXNB_VIRTUAL_GPU_AFFINITY``, read when a virtual GPU's worker pool starts):
    auto (default)  pin when there are at least two virtual GPUs and the process
                    may use a core for each; else leave the threads free (one
                    device has no other device's data to keep out of its caches)
    on              always pin; with more virtual GPUs than cores, devices share
                    cores in turn (gpu(N) on the N-th allowed core, modulo their number)
    off             never pin
Virtual GPU ``gpu(N)`` gets the N-th core the process may use (the main
thread's CPU affinity when the pool starts).  Only virtual GPUs' workers are
pinned: CPU workers, copy workers, the pushing thread and real GPUs' workers
stay free.  On a system without ``os.sched_setaffinity`` nothing is pinned.

State kept: none (the policy is read from the environment each time a pool starts).

Example::

    >>> from mxnb.engine.affinity import virtual_gpu_cores
    >>> cores = virtual_gpu_cores(0)   # {0} on a 2-core machine with 2 virtual GPUs
"""

from __future__ import annotations

import logging
import os

from ..context import virtual_gpus

__all__ = ["AFFINITY_ENV", "pin_current_thread", "virtual_gpu_cores"]

logger = logging.getLogger("mxnb.engine")

AFFINITY_ENV = "MXNB_VIRTUAL_GPU_AFFINITY"
_MODES = {"auto": "auto", "on": "on", "1": "on", "off": "off", "0": "off"}


def _mode() -> str:
    text = os.environ.get(AFFINITY_ENV, "").strip().lower() or "auto"
    mode = _MODES.get(text)
    if mode is None:
        logger.warning("%s=%r is not one of auto, on, off; using auto", AFFINITY_ENV, text)
        return "auto"
    return mode


def virtual_gpu_cores(device_id: int) -> set[int] | None:
    """The cores virtual GPU ``gpu(device_id)``'s workers run on (None: leave them free)."""
    mode = _mode()
    if mode == "off" or not hasattr(os, "sched_getaffinity"):
        return None
    # The main thread's cores (pid = the main thread's id on Linux), not the caller's:
    # a pool may start from inside another virtual GPU's pinned worker.
    allowed = sorted(os.sched_getaffinity(os.getpid()))
    if mode == "auto" and not 2 <= virtual_gpus() <= len(allowed):
        return None
    return {allowed[device_id % len(allowed)]}


def pin_current_thread(cores: set[int]) -> None:
    """Run the calling thread on ``cores`` only (a failure is logged, never raised)."""
    try:
        os.sched_setaffinity(0, cores)  # 0: the calling thread (Linux sets it per thread)
    except OSError as error:
        logger.warning("could not pin a virtual GPU worker to cores %s: %s", sorted(cores), error)
