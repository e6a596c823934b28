"""Errors and array-module helpers shared by every layer of mxnb.

Idea: one error hierarchy, rooted at :class:`MXNBError`, so a user can catch
everything mxnb raises with one ``except``; each error also derives from the
built-in a Python user would expect (``ShapeError`` is a ``ValueError``), so
ordinary code keeps working.  Errors say which op or argument, what was
expected, what was found and what to try.

The second half names dtypes and chooses the *array module* (numpy, or cupy
on a GPU context).  Kernels are written once against the module they are
handed, so the numpy path tests the same code a GPU would run.

The last helper, :func:`acquire_lock`, takes a lock that the pushing thread
and the engine's workers both take once per op (storage, resources) without
forming a lock convoy.

Example::

    >>> from mxnb.base import MXNBError, ShapeError, np_dtype
    >>> issubclass(ShapeError, ValueError) and issubclass(ShapeError, MXNBError)
    True
    >>> np_dtype("float16")
    dtype('float16')
"""

from __future__ import annotations

import time
from threading import Lock
from typing import Any

import numpy as np

__all__ = [
    "DEFAULT_DTYPE",
    "SUPPORTED_DTYPES",
    "ContextError",
    "DTypeError",
    "EngineError",
    "FormatError",
    "GraphError",
    "MXNBError",
    "MXNetError",
    "NotImplementedForSymbol",
    "NotSupportedError",
    "OpError",
    "ParamError",
    "ShapeError",
    "SignatureError",
    "VarDeletedError",
    "acquire_lock",
    "array_module",
    "as_shape",
    "dtype_name",
    "integer_types",
    "mx_real_t",
    "np_dtype",
    "numeric_types",
    "py_str",
    "string_types",
]


class MXNBError(Exception):
    """Root of every error mxnb raises."""


MXNetError = MXNBError
"""MXNet's name for the root error (``mx.base.MXNetError``): the same class, so
``except mx.MXNetError`` catches everything mxnb raises."""


class EngineError(MXNBError, RuntimeError):
    """Misuse of the dependency engine (bad var, non-callable, engine shut down)."""


class VarDeletedError(EngineError):
    """A var was used or deleted after ``push_delete`` was pushed for it."""


class OpError(MXNBError, RuntimeError):
    """An operation pushed to the engine failed.

    Raised by ``wait_for_var`` / ``wait_for_all`` / ``asnumpy`` with the op's
    name; the original exception is chained as ``__cause__``.

    Attributes
    ----------
    op_name : str
        Name of the op that raised (for a skipped op: the op that failed first).
    op_id : int
        Engine id of the failing op, ``-1`` when unknown.
    """

    def __init__(self, message: str, op_name: str = "", op_id: int = -1) -> None:
        super().__init__(message)
        self.op_name = op_name
        self.op_id = op_id


class ShapeError(MXNBError, ValueError):
    """Shapes that do not fit together (names the op, the argument, both shapes)."""


class DTypeError(MXNBError, TypeError):
    """A dtype that is unsupported or does not match."""


class ContextError(MXNBError, ValueError):
    """A bad device context, or arrays on different contexts mixed in one op."""


class ParamError(MXNBError, ValueError):
    """An operator parameter that is missing, unknown or out of range."""


class SignatureError(ParamError, TypeError):
    """An operator function called with arguments that do not fit its signature (too many
    positional values, one parameter given twice): a ``TypeError`` as Python's own."""


class GraphError(MXNBError, ValueError):
    """A malformed symbol graph (unknown op, cycle, missing input)."""


class FormatError(MXNBError, ValueError):
    """A file that is not in the format expected (corrupt, truncated, wrong kind)."""


class NotSupportedError(MXNBError, NotImplementedError):
    """A feature that exists in MXNet but not (yet) in mxnb, or not on this machine."""


# ---------------------------------------------------------------------------
# dtypes
# ---------------------------------------------------------------------------

DEFAULT_DTYPE = np.dtype("float32")

#: The dtypes NDArray supports, in MXNet's order of type flags.
SUPPORTED_DTYPES: tuple[np.dtype, ...] = tuple(
    np.dtype(name) for name in ("float32", "float64", "float16", "uint8", "int32", "int8", "int64")
)

# MXNet's type flags (mshadow::TypeFlag), used by the symbol JSON and save format.
DTYPE_TO_FLAG: dict[np.dtype, int] = {dtype: flag for flag, dtype in enumerate(SUPPORTED_DTYPES)}
FLAG_TO_DTYPE: dict[int, np.dtype] = {flag: dtype for dtype, flag in DTYPE_TO_FLAG.items()}


def np_dtype(dtype: Any) -> np.dtype:
    """Return the numpy dtype for ``dtype`` (a name, a numpy type or ``None`` for float32).

    Raises :class:`DTypeError` naming the supported dtypes when it is not one of them.
    """
    if dtype is None:
        return DEFAULT_DTYPE
    try:
        result = np.dtype(dtype)
    except TypeError as exc:
        raise DTypeError(f"unknown dtype {dtype!r}; use one of {_dtype_names()}") from exc
    if result not in SUPPORTED_DTYPES:
        raise DTypeError(f"dtype {result.name} is not supported; use one of {_dtype_names()}")
    return result


def as_shape(value: Any, what: str) -> tuple[int, ...]:
    """Return ``value`` as a shape: a tuple of non-negative ints (an int ``n`` means ``(n,)``).

    ``what`` names the argument for the error (``"zeros: shape"``).  Floats,
    bools, strings and negative numbers are errors, never truncated or wrapped:
    ``(2.5, 3)`` must not quietly become ``(2, 3)``.
    """

    def is_int(dim: Any) -> bool:
        return isinstance(dim, (int, np.integer)) and not isinstance(dim, (bool, np.bool_))

    if is_int(value):
        value = (value,)
    if isinstance(value, (str, bytes)) or not hasattr(value, "__iter__"):
        raise ShapeError(
            f"{what} {value!r} is not a shape; pass an int or a tuple of non-negative ints "
            f"such as (32, 784)"
        )
    dims = tuple(value)
    bad = [dim for dim in dims if not is_int(dim)]
    if bad:
        raise ShapeError(
            f"{what} {dims!r} is not a shape: {bad[0]!r} is not an int; pass a tuple of "
            f"non-negative ints such as (32, 784)"
        )
    if any(dim < 0 for dim in dims):
        raise ShapeError(f"{what} {tuple(int(d) for d in dims)} has a negative dimension")
    return tuple(int(dim) for dim in dims)


def dtype_name(dtype: Any) -> str:
    """Return the short name of a dtype (``'float32'``)."""
    return np.dtype(dtype).name


def _dtype_names() -> str:
    return ", ".join(dtype.name for dtype in SUPPORTED_DTYPES)


# ---------------------------------------------------------------------------
# array modules
# ---------------------------------------------------------------------------


def array_module(device_type: str) -> Any:
    """Return the array module for a device type: numpy for ``'cpu'`` (and virtual GPUs).

    A real GPU context uses cupy; this raises :class:`ContextError` saying so
    when cupy is not installed.  (Not run on real hardware: our machines have
    no GPU; the cupy path is written once against the same kernels.)
    """
    if device_type in ("cpu", "cpu_pinned", "cpu_shared", "virtual_gpu"):
        return np
    if device_type == "gpu":
        try:
            import cupy  # type: ignore[import-not-found]
        except ImportError as exc:
            raise ContextError(
                "a GPU context needs cupy, which is not installed; install mxnb[gpu] "
                "or set MXNB_VIRTUAL_GPUS=N for host-backed virtual GPUs"
            ) from exc
        return cupy
    raise ContextError(f"unknown device type {device_type!r}; use 'cpu' or 'gpu'")


# ---------------------------------------------------------------------------
# locks shared by the pushing thread and the workers
# ---------------------------------------------------------------------------

_CONTENDED_NAP = 1e-6  # seconds: the shortest sleep, long enough to let the owner run


def acquire_lock(lock: Lock) -> None:
    """Take ``lock`` for a few lines of bookkeeping, never forming a lock convoy.

    A blocking ``acquire`` on a contended lock hands it, on release, to a
    thread that still waits for the GIL: the releasing thread then blocks on
    its next acquire, and the two trade lock and GIL once per operation (a
    context switch each time).  Here a contended acquire naps with the GIL
    released until a non-blocking acquire succeeds, so the owner finishes its
    few lines and releases a lock that nobody is queued on.  Release with
    ``lock.release()`` as usual (in a ``finally``).

    >>> import threading
    >>> lock = threading.Lock()
    >>> acquire_lock(lock); lock.locked()
    True
    >>> lock.release()
    """
    if lock.acquire(False):
        return
    acquire = lock.acquire
    while not acquire(False):
        time.sleep(_CONTENDED_NAP)


class NotImplementedForSymbol(MXNBError, NotImplementedError):
    """An NDArray-only operation was applied to a Symbol (MXNet: same name).

    Raised for ``bool(symbol)``: a Symbol has no value to test until it is bound
    and run; compare the NDArrays an executor returns instead.
    """

    def __init__(self, function: Any, alias: str | None = None, *args: Any) -> None:
        name = getattr(function, "__name__", str(function))
        message = f"Function {name}"
        if alias:
            message += f' (namely operator "{alias}")'
        message += " is not implemented for Symbol and only available in NDArray"
        super().__init__(message)
        self.function = name
        self.alias = alias


# ---------------------------------------------------------------------------
# MXNet 1.x helper names (python/mxnet/base.py) that user code and tests import
# ---------------------------------------------------------------------------

integer_types = (int, np.integer)
"""Types MXNet accepts where an integer is expected."""

numeric_types = (float, int, np.generic)
"""Types MXNet accepts where a number is expected."""

string_types = (str,)
"""Types MXNet accepts where a string is expected."""

mx_real_t = np.float32
"""MXNet's default real type."""


def py_str(value: bytes | str) -> str:
    """Decode ``bytes`` (UTF-8) to ``str``; a ``str`` is returned as it is."""
    return value.decode("utf-8") if isinstance(value, bytes) else value


def _as_list(value: Any) -> list[Any]:
    """``value`` as a list: a list stays, a tuple becomes a list, anything else is wrapped."""
    if isinstance(value, list):
        return value
    if isinstance(value, tuple):
        return list(value)
    return [value]
