"""Device contexts: where an array lives and where an op runs.

Idea (MXNet: ``Context`` in include/mxnet/base.h): a context is a device type
plus an id.  Every array has one; every op pushed to the engine names one, and
the engine hands the op a :class:`RunContext` (the context plus the stream of
the worker that runs it).  ``with ctx:`` makes ``ctx`` the default for array
creation in the block.

Virtual GPUs: machines without a GPU can still teach multi-device scheduling.
``MXNB_VIRTUAL_GPUS=N`` (or :func:`set_virtual_gpus`) makes ``gpu(0)`` …
``gpu(N-1)`` *virtual*: host memory, numpy kernels, but their own worker
pools and copy ops in the engine.  They are labelled ``[virtual]`` wherever
they are shown.

State kept:
    _DEFAULT_STACK   per-thread stack of contexts entered with ``with``
    _virtual_gpus    how many virtual GPUs exist (env var or set_virtual_gpus)

Example::

    >>> import mxnb as mx
    >>> mx.cpu()
    cpu(0)
    >>> with mx.Context('cpu', 1):
    ...     mx.current_context()
    cpu(1)
"""

from __future__ import annotations

import functools
import os
import threading
from dataclasses import dataclass
from typing import Any, ClassVar

from .base import ContextError, array_module

__all__ = [
    "Context",
    "RunContext",
    "cpu",
    "cpu_pinned",
    "current_context",
    "gpu",
    "num_gpus",
    "set_default_context",
    "set_virtual_gpus",
    "virtual_gpus",
]

_DEVICE_TYPES = ("cpu", "gpu", "cpu_pinned", "cpu_shared")


def _env_virtual_gpus() -> int:
    text = os.environ.get("MXNB_VIRTUAL_GPUS", "0").strip() or "0"
    try:
        return max(0, int(text))
    except ValueError:
        raise ContextError(f"MXNB_VIRTUAL_GPUS must be a whole number, got {text!r}") from None


_virtual_gpus = _env_virtual_gpus()


def set_virtual_gpus(count: int) -> None:
    """Make ``gpu(0)`` … ``gpu(count-1)`` virtual GPUs backed by host memory (0 turns them off)."""
    global _virtual_gpus
    if count < 0:
        raise ContextError(f"set_virtual_gpus: count must be >= 0, got {count}")
    _virtual_gpus = int(count)


def virtual_gpus() -> int:
    """Return how many virtual GPUs are configured."""
    return _virtual_gpus


@functools.cache
def _real_gpu_count() -> int:
    """GPUs cupy sees, asked once: without cupy, each ``import cupy`` searches the whole path.

    (``Context.is_virtual`` and ``array_module`` ask it; uncached, a failed
    import cost ~0.2 ms per call.)
    """
    try:
        import cupy  # type: ignore[import-not-found]

        return int(cupy.cuda.runtime.getDeviceCount())
    except Exception:  # noqa: BLE001 - no cupy, no driver or no device: no GPU
        return 0


def num_gpus() -> int:
    """Return the number of usable GPUs: real ones if cupy sees any, else virtual ones."""
    return _real_gpu_count() or _virtual_gpus


class _DefaultContext(type):
    """Metaclass of Context: ``Context.default_ctx`` is read and assigned per thread (MXNet 1.x)."""

    @property
    def default_ctx(cls) -> Context:
        """The context used when none is given (the innermost ``with``, else the default)."""
        return current_context()

    @default_ctx.setter
    def default_ctx(cls, ctx: Context) -> None:
        set_default_context(ctx)


@dataclass(frozen=True)
class Context(metaclass=_DefaultContext):
    """A device: ``Context('cpu', 0)``, ``Context('gpu', 1)``.

    Parameters
    ----------
    device_type : str or Context
        ``'cpu'``, ``'gpu'``, ``'cpu_pinned'`` or ``'cpu_shared'`` (a Context is copied;
        ``cpu_shared``, MXNet's shared-memory CPU context, is host memory here).
    device_id : int
        Which device of that type.
    """

    device_type: str
    device_id: int = 0

    def __init__(self, device_type: "str | Context", device_id: int = 0) -> None:
        if isinstance(device_type, Context):
            device_type, device_id = device_type.device_type, device_type.device_id
        if device_type not in _DEVICE_TYPES:
            raise ContextError(
                f"unknown device type {device_type!r}; use one of {', '.join(_DEVICE_TYPES)}"
            )
        if not isinstance(device_id, int) or device_id < 0:
            raise ContextError(f"device_id must be an int >= 0, got {device_id!r}")
        object.__setattr__(self, "device_type", device_type)
        object.__setattr__(self, "device_id", device_id)

    @property
    def is_virtual(self) -> bool:
        """True for a GPU context backed by host memory (see ``MXNB_VIRTUAL_GPUS``)."""
        return (
            self.device_type == "gpu"
            and self.device_id < _virtual_gpus
            and _real_gpu_count() <= self.device_id
        )

    @property
    def array_module(self) -> Any:
        """The array module kernels on this context use (numpy, or cupy on a real GPU)."""
        if self.device_type == "gpu":
            if self.is_virtual:
                return array_module("virtual_gpu")
            if _real_gpu_count() <= self.device_id:
                raise ContextError(
                    f"{self}: no such GPU (cupy sees {_real_gpu_count()}); set "
                    "MXNB_VIRTUAL_GPUS=N or mx.context.set_virtual_gpus(N) to teach with "
                    "host-backed virtual GPUs"
                )
        return array_module(self.device_type)

    def __str__(self) -> str:
        return f"{self.device_type}({self.device_id})"

    def __repr__(self) -> str:
        return f"{self}{' [virtual]' if self.is_virtual else ''}"

    # ``with ctx:`` scoping -------------------------------------------------
    def __enter__(self) -> "Context":
        _stack().append(self)
        return self

    def __exit__(self, *exc_info: object) -> None:
        _stack().pop()

    #: MXNet's device type codes (``Context.devtype2str[ctx.device_typeid]``).
    devtype2str: ClassVar[dict[int, str]] = {1: "cpu", 2: "gpu", 3: "cpu_pinned", 5: "cpu_shared"}
    devstr2type: ClassVar[dict[str, int]] = {"cpu": 1, "gpu": 2, "cpu_pinned": 3, "cpu_shared": 5}

    @property
    def device_typeid(self) -> int:
        """MXNet's code of the device type (cpu 1, gpu 2, cpu_pinned 3, cpu_shared 5)."""
        return self.devstr2type[self.device_type]


_local = threading.local()


def _stack() -> list[Context]:
    stack = getattr(_local, "stack", None)
    if stack is None:
        stack = _local.stack = []
    return stack


def current_context() -> Context:
    """Return the context of the innermost ``with ctx:`` block, or ``cpu(0)``."""
    stack = _stack()
    if stack:
        return stack[-1]
    default = getattr(_local, "default", None)
    return default if default is not None else Context("cpu", 0)


def set_default_context(ctx: Context) -> None:
    """Make ``ctx`` this thread's context outside any ``with ctx:`` block (MXNet: test_utils)."""
    if not isinstance(ctx, Context):
        raise ContextError(f"set_default_context: expected a Context, found {type(ctx).__name__}")
    _local.default = ctx


def cpu(device_id: int = 0) -> Context:
    """Return the CPU context ``cpu(device_id)``."""
    return Context("cpu", device_id)


def cpu_pinned(device_id: int = 0) -> Context:
    """Return the pinned-host-memory context (a CPU context for staging GPU copies)."""
    return Context("cpu_pinned", device_id)


def gpu(device_id: int = 0) -> Context:
    """Return the GPU context ``gpu(device_id)`` (real with cupy, or virtual)."""
    return Context("gpu", device_id)


@dataclass(frozen=True)
class RunContext:
    """What the engine hands a running op: its context and the worker's stream.

    MXNet: ``RunContext`` in include/mxnet/base.h.  ``stream`` is a cupy
    stream on a real GPU worker and ``None`` on CPU and virtual GPU workers.
    ``worker`` names the worker thread that runs the op (as the trace shows it);
    ``thread`` is that thread's ident when the worker is one thread (``None``
    on the naive and step engines, which run ops in whichever thread asks).
    """

    ctx: Context
    stream: Any = None
    worker: str = ""
    thread: int | None = None

    def get_stream(self) -> Any:
        """Return the worker's stream (``None`` on the CPU)."""
        return self.stream
