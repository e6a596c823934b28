"""How much CPU time holds the GIL: a preloaded meter for the benchmark scripts.

Idea: threads scale only while they run with the GIL released.  numpy and
BLAS release it through ``Py_BEGIN_ALLOW_THREADS``, i.e. ``PyEval_SaveThread``
/ ``PyEval_RestoreThread``; ``gil_meter.c`` wraps these two and adds each
thread's CPU time between them to one counter.  Process CPU time minus that
counter is the CPU time spent holding the GIL.  Both are CPU times, not wall
times, so they hold on a machine busy with other processes.

Rule: two threads can never be faster than the GIL-held time of their work,
nor than half of their total CPU time on two cores; so
``max(gil_held, cpu / 2)`` bounds a two-device step on two free cores.

The meter needs a C compiler and ``LD_PRELOAD`` at process start:
:func:`preload` builds it (into the temp directory) and runs the script
again with it preloaded.  :func:`meter` returns None when it is not loaded
or does not count (a Python linked statically, where the wrappers are not
reached); callers then print CPU times only.

Example::

    >>> from _gil import meter           # scripts in benchmarks/ import it by this name
    >>> gil = meter()                    # None unless run under preload()
    >>> gil is None or gil.free_seconds() >= 0
    True
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

__all__ = ["GilMeter", "meter", "preload"]

_SOURCE = Path(__file__).with_name("gil_meter.c")
_ENV = "MXNB_GIL_METER"  # set to the library's path in the re-run process


class GilMeter:
    """Reads the preloaded counter: CPU seconds spent with the GIL released, all threads."""

    def __init__(self) -> None:
        library = ctypes.PyDLL(None)  # PyDLL: a read keeps the GIL (CDLL would release it)
        self._free_ns = library.gil_meter_free_ns
        self._free_ns.restype = ctypes.c_longlong
        self._thread_free_ns = library.gil_meter_thread_free_ns
        self._thread_free_ns.restype = ctypes.c_longlong
        self._sections = library.gil_meter_sections
        self._sections.restype = ctypes.c_longlong

    def free_seconds(self) -> float:
        """CPU seconds spent with the GIL released since the process started."""
        return self._free_ns() / 1e9

    def thread_free_seconds(self) -> float:
        """CPU seconds the calling thread spent with the GIL released (per-op profiles)."""
        return self._thread_free_ns() / 1e9

    def releases(self) -> int:
        """GIL releases (each ``PyEval_SaveThread`` and its restore) since the start, all threads."""
        return self._sections()


def _counts(gil: GilMeter) -> bool:
    """True when a large numpy add (which releases the GIL) shows up on the meter."""
    import numpy as np

    big = np.ones(1 << 21)
    before = gil.free_seconds()
    for _ in range(4):
        np.add(big, big, out=big)
    return gil.free_seconds() > before


def meter() -> GilMeter | None:
    """The meter when this process runs with it preloaded and it counts, else None."""
    if not os.environ.get(_ENV):
        return None
    try:
        gil = GilMeter()
    except AttributeError:  # not preloaded after all
        return None
    return gil if _counts(gil) else None


def _build() -> Path | None:
    """Compile gil_meter.c once per source version; None without a C compiler."""
    compiler = shutil.which(os.environ.get("CC", "cc"))
    if compiler is None:
        return None
    digest = hashlib.sha256(_SOURCE.read_bytes()).hexdigest()[:12]
    target = Path(tempfile.gettempdir()) / f"mxnb-gil-meter-{digest}.so"
    if not target.exists():
        partial = target.with_suffix(f".{os.getpid()}.partial")
        command = [compiler, "-O2", "-shared", "-fPIC", "-o", str(partial), str(_SOURCE), "-ldl"]
        if subprocess.run(command, capture_output=True, check=False).returncode != 0:
            return None
        os.replace(partial, target)
    return target


def preload() -> None:
    """Run this script again with the meter preloaded (once; nothing happens without a compiler)."""
    if os.environ.get(_ENV) is not None:
        return
    library = _build()
    if library is None:
        os.environ[_ENV] = ""  # a note for meter(): tried, not available
        return
    env = dict(os.environ)
    env[_ENV] = str(library)
    env["LD_PRELOAD"] = " ".join(filter(None, [str(library), env.get("LD_PRELOAD", "")]))
    sys.stdout.flush()
    os.execve(sys.executable, [sys.executable, *sys.argv], env)


def required_meter() -> GilMeter:
    """:func:`preload`, then the meter, or exit saying why (scripts that only make sense with it)."""
    preload()
    gil = meter()
    if gil is None:
        raise SystemExit("the GIL meter is not running (needs a C compiler and a shared libpython)")
    return gil
