"""Creating NDArrays: ``empty``, ``zeros``, ``ones``, ``full``, ``array``, ``arange`` and friends.

Idea (MXNet: python/mxnet/ndarray/utils.py and ``_zeros`` / ``_full``): a new
array borrows a block from its context's storage manager; filling it is a
pushed op that writes the new var (``_zeros``, ``_ones``, ``_full``), so it
is ordered like any other write.  ``array(numpy_array)`` copies at once, in
the calling thread: a fresh array has no pending op to wait for (MXNet's
``SyncCopyFromCPU``).

Rules: the default dtype is float32; ``array`` keeps an NDArray's or numpy
array's own dtype when mxnb supports it; the default context is the current
one (``with mx.cpu(1):``).

State kept: none.

Example::

    >>> import mxnb as mx
    >>> mx.nd.full((2, 2), 7, dtype='int32').asnumpy().tolist()
    [[7, 7], [7, 7]]
    >>> mx.nd.arange(0, 6, 2).asnumpy().tolist()
    [0.0, 2.0, 4.0]
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..base import DTypeError, ParamError, ShapeError, np_dtype
from ..operator.ops.init import arange_values
from . import chunk as _chunk_module
from .ndarray import (
    NDArray,
    _alloc,
    _ctx_of,
    _engine,
    _flush_deferred_deletes,
    _invoke,
    _push,
    _to_shape,
)

__all__ = [
    "arange",
    "array",
    "concatenate",
    "empty",
    "empty_like",
    "full",
    "full_like",
    "ones",
    "ones_like",
    "waitall",
    "zeros",
    "zeros_like",
]


def empty(shape: Any, ctx: Any = None, dtype: Any = None) -> NDArray:
    """Return a new array of ``shape`` whose contents are undefined (no op is pushed)."""
    return _alloc(_to_shape(shape), _ctx_of(ctx), np_dtype(dtype))


def _filled(shape: Any, ctx: Any, dtype: Any, value: Any, name: str) -> NDArray:
    result = empty(shape, ctx, dtype)
    raw = result._array

    def run(run_ctx: Any) -> None:
        raw.fill(value)

    _push(run, result.context, [], [result._var], name)
    return result


def _mxnet_shape(shape: Any, name: str) -> Any:
    """MXNet 1.x: outside ``np_shape`` a 0 dimension is unknown and ``()`` an unknown shape,
    so ``zeros`` / ``ones`` refuse them; under ``mx.np_shape()`` they make empty / 0-d arrays."""
    from ..util import is_np_shape

    dims = _to_shape(shape)
    if not is_np_shape() and (not dims or 0 in dims):
        raise ShapeError(
            f"{name}: shape {dims} has {'no dimensions' if not dims else 'a 0 dimension'}, "
            f"which MXNet 1.x reads as unknown; give every dimension (>= 1), or create "
            f"scalar and zero-size arrays inside `with mx.np_shape():`"
        )
    return dims


def zeros(shape: Any, ctx: Any = None, dtype: Any = None, **kwargs: Any) -> NDArray:
    """Return a new array of zeros (filled by a pushed ``_zeros`` op), or fill ``out=``.

    As MXNet 1.x, a ``()`` or zero-size ``shape`` needs ``mx.np_shape()``."""
    if kwargs.get("out") is not None:
        return full(shape, 0, out=kwargs["out"])
    return _filled(_mxnet_shape(shape, "zeros"), ctx, dtype, 0, "_zeros")


def ones(shape: Any, ctx: Any = None, dtype: Any = None, **kwargs: Any) -> NDArray:
    """Return a new array of ones (filled by a pushed ``_ones`` op), or fill ``out=``.

    As MXNet 1.x, a ``()`` or zero-size ``shape`` needs ``mx.np_shape()``."""
    if kwargs.get("out") is not None:
        return full(shape, 1, out=kwargs["out"])
    return _filled(_mxnet_shape(shape, "ones"), ctx, dtype, 1, "_ones")


def full(
    shape: Any, val: Any, ctx: Any = None, dtype: Any = None, out: NDArray | None = None
) -> NDArray:
    """Return a new array filled with ``val`` (or fill ``out``)."""
    if out is not None:
        out[:] = val
        return out
    _check_source(val, "full: val")
    return _filled(shape, ctx, dtype, val, "_full")


def array(source_array: Any, ctx: Any = None, dtype: Any = None) -> NDArray:
    """Return a new array holding a copy of ``source_array`` (numpy array, list, NDArray).

    The dtype is ``dtype``, else the NDArray's own, else float32 — as in
    MXNet 1.x, a numpy array of float64 or int64 becomes float32 unless
    ``dtype`` says otherwise.
    """
    if isinstance(source_array, NDArray):
        if dtype is None:
            dtype = source_array.dtype
        result = empty(source_array.shape, ctx if ctx is not None else source_array.context, dtype)
        source_array.copyto(result)
        return result
    dtype = np_dtype(dtype)
    _check_source(source_array)
    try:
        data = np.asarray(source_array, dtype=dtype)
    except (TypeError, ValueError) as exc:
        raise DTypeError(
            f"array: cannot convert {type(source_array).__name__} to {dtype.name}: {exc}"
        ) from exc
    result = empty(data.shape, ctx, dtype)
    raw = result._array
    # A fresh array has no pending ops, so the copy is made now (MXNet's SyncCopyFromCPU).
    if isinstance(raw, np.ndarray):
        raw[...] = data
    else:
        raw.set(data)  # not run on real hardware
    return result


def _check_source(source_array: Any, what: str = "array: source_array") -> None:
    """Refuse what numpy would convert into something the user did not mean.

    ``None`` would become ``nan``, complex numbers would lose their imaginary
    part, strings would be parsed as numbers and ragged lists become objects.
    ``what`` names the argument in the error (values for ``full`` and
    ``a[...] = value`` are checked alike).
    """
    if source_array is None:
        raise DTypeError(f"{what} is None; pass a number, a numpy array, a list or an NDArray")
    try:
        kind = np.asarray(source_array).dtype.kind
    except ValueError as exc:  # ragged nested lists
        raise DTypeError(f"{what} is not rectangular: {exc}") from None
    if kind == "c":
        raise DTypeError(
            f"{what} is complex, which mxnb does not store; pass its .real, .imag or abs() "
            f"explicitly"
        )
    if kind in "OUSV":
        raise DTypeError(
            f"{what} holds {np.asarray(source_array).dtype} values, not numbers; convert them first"
        )


def arange(
    start: float,
    stop: float | None = None,
    step: float = 1.0,
    repeat: int = 1,
    ctx: Any = None,
    dtype: Any = None,
) -> NDArray:
    """Return evenly spaced values in ``[start, stop)`` (MXNet's ``arange``, with ``repeat``)."""
    dtype = np_dtype(dtype)
    for what, value in (("start", start), ("stop", stop), ("step", step)):
        if value is not None and not (
            isinstance(value, (int, float, np.integer, np.floating)) and np.isfinite(value)
        ):
            raise ParamError(f"arange: {what} must be a finite number, got {value!r}")
    if step == 0:
        raise ParamError("arange: step must not be 0 (the range would never end)")
    if stop is None:
        start, stop = 0, start
    count = max(math.ceil((stop - start) / step), 0)
    values = arange_values(start, step, count, dtype)
    if repeat > 1:
        values = np.repeat(values, repeat)
    return array(values, ctx=ctx, dtype=dtype)


def zeros_like(other: NDArray) -> NDArray:
    """Return zeros with ``other``'s shape, dtype and context (any shape ``other`` has)."""
    return _filled(other.shape, other.context, other.dtype, 0, "_zeros")


def ones_like(other: NDArray) -> NDArray:
    """Return ones with ``other``'s shape, dtype and context (any shape ``other`` has)."""
    return _filled(other.shape, other.context, other.dtype, 1, "_ones")


def empty_like(other: NDArray) -> NDArray:
    """Return an uninitialised array with ``other``'s shape, dtype and context."""
    return empty(other.shape, other.context, other.dtype)


def full_like(other: NDArray, val: Any) -> NDArray:
    """Return an array of ``val`` with ``other``'s shape, dtype and context."""
    return full(other.shape, val, other.context, other.dtype)


def concatenate(arrays: Sequence[NDArray], axis: int = 0, always_copy: bool = True) -> NDArray:
    """Join arrays along ``axis`` (the ``Concat`` op)."""
    if not arrays:
        raise ShapeError("concatenate: no arrays given")
    if len(arrays) == 1 and not always_copy:
        return arrays[0]
    return _invoke("Concat", list(arrays), {"dim": axis, "num_args": len(arrays)})


def waitall(timeout: float | None = None) -> None:
    """Block until every pushed op has run (re-raises the first stored error).

    ``timeout``: seconds to wait at most; :class:`~mxnb.base.EngineError` after that.
    """
    if _chunk_module._delete_batches or _chunk_module._parked:
        _chunk_module.flush_delete_batches()
    if _chunk_module._deferred_deletes:
        _flush_deferred_deletes()
    _engine().wait_for_all(timeout)


_SUPPORTED = frozenset(
    np_dtype(name) for name in ("float32", "float64", "float16", "uint8", "int32", "int8", "int64")
)
