"""Indexing an NDArray: views that share the chunk's var, copies, and assignment.

Idea (MXNet: ``NDArray::At`` / ``NDArray::Slice`` and ``_slice_assign``): an
int or a unit-step slice on the first axis is a *view* — the same chunk and
the same engine var, so reads and writes through it are ordered with every
other use of the array.  Any other key (a column, a step, an index array)
gives a *copy*, made by a pushed op that reads the array.  Assignment
(``a[key] = value``) is a pushed op that writes the array's var and reads
the value's var; scalars, NDArrays (from any context) and numpy arrays work,
broadcast to the indexed region.

While autograd records, first-axis views go through ``slice_axis`` so the
gradient reaches the base array (MXNet's ``SliceWithRecord``).

State kept: none.

Example::

    >>> import mxnb as mx
    >>> a = mx.nd.zeros((2, 3))
    >>> a[1] = 7                      # a view of row 1, filled by a pushed op
    >>> a[:, 0] = mx.nd.array([1, 2])  # a general key: one op writing a
    >>> a.asnumpy().tolist()
    [[1.0, 0.0, 0.0], [2.0, 7.0, 7.0]]
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..base import ShapeError
from .ndarray import (
    _NUMBER_TYPES,
    NDArray,
    _alloc,
    _broadcast_shape,
    _engine,
    _has_op,
    _invoke,
    _push,
    _recording,
)

__all__ = ["copy_across", "copy_index", "set_item", "view_key"]


def view_key(nd: NDArray, key: Any) -> NDArray | None:
    """The view for a first-axis int or unit-step slice (MXNet's ``At`` / ``Slice``), else None."""
    if isinstance(key, tuple):
        if len(key) == 1:
            key = key[0]
        else:
            return None
    raw = nd._array
    if isinstance(key, (int, np.integer)) and not isinstance(key, (bool, np.bool_)):
        if not nd.shape:
            raise IndexError("cannot index a 0-d NDArray")
        length = nd.shape[0]
        index = int(key)
        if not -length <= index < length:
            raise IndexError(f"index {index} is out of bounds for axis 0 with size {length}")
        index %= length
        if _recording() and _has_op("slice_axis"):
            sliced = _invoke("slice_axis", [nd], {"axis": 0, "begin": index, "end": index + 1})
            return sliced if nd.ndim == 1 else sliced.reshape(nd.shape[1:])
        return nd._view(raw[index] if nd.ndim > 1 else raw[index : index + 1])
    if isinstance(key, slice) and key.step in (None, 1):
        if not nd.shape:
            raise IndexError("cannot slice a 0-d NDArray")
        start, stop, _ = key.indices(nd.shape[0])
        stop = max(start, stop)
        if _recording() and _has_op("slice_axis") and (start, stop) != (0, nd.shape[0]):
            return _invoke("slice_axis", [nd], {"axis": 0, "begin": start, "end": stop})
        return nd._view(raw[start:stop])
    return None


def _numpy_key(key: Any) -> Any:
    if isinstance(key, NDArray):
        return key.asnumpy().astype(np.int64)
    if isinstance(key, tuple):
        return tuple(_numpy_key(item) for item in key)
    return key


def _dummy(nd: NDArray) -> np.ndarray:
    """A zero-stride stand-in of ``nd``'s shape: indexing it gives result shapes for free."""
    return np.lib.stride_tricks.as_strided(
        np.zeros(1, dtype=np.int8), shape=nd.shape, strides=(0,) * nd.ndim
    )


def copy_index(nd: NDArray, key: Any) -> NDArray:
    key = _numpy_key(key)
    try:
        shape = _dummy(nd)[key].shape
    except IndexError as exc:
        raise IndexError(f"NDArray of shape {nd.shape}: {exc}") from None
    result = _alloc(tuple(shape), nd.context, nd.dtype)
    source, target = nd._array, result._array

    def run(run_ctx: Any) -> None:
        target[...] = source[key]

    _push(run, nd.context, [nd._var], [result._var], "_slice")
    return result


def set_item(nd: NDArray, key: Any, value: Any) -> None:
    key = _numpy_key(key)
    try:
        target_shape = _dummy(nd)[key].shape
    except IndexError as exc:
        raise IndexError(f"NDArray of shape {nd.shape}: {exc}") from None
    raw = nd._array
    if isinstance(value, NDArray):
        if value.context != nd.context:
            value = value.as_in_context(nd.context)
        _broadcast_into("__setitem__", value.shape, target_shape)
        source = value._array
        same_chunk = value._var is nd._var

        def run_copy(run_ctx: Any) -> None:
            raw[key] = source.copy() if same_chunk else source

        const = [] if same_chunk else [value._var]
        _push(run_copy, nd.context, const, [nd._var], "_slice_assign")
        return
    from .creation import _check_source  # (creation imports this module's users)

    if not isinstance(value, _NUMBER_TYPES) or isinstance(value, (complex, np.complexfloating)):
        _check_source(value, "__setitem__: value")  # None, complex, strings, ragged lists
    if isinstance(value, _NUMBER_TYPES):
        scalar = value

        def run_fill(run_ctx: Any) -> None:
            raw[key] = scalar

        _push(run_fill, nd.context, [], [nd._var], "_set_value")
        return
    data = np.array(value, dtype=nd.dtype)
    _broadcast_into("__setitem__", data.shape, target_shape)
    xp = nd.context.array_module
    if xp is not np:
        data = xp.asarray(data)  # not run on real hardware

    def run_numpy(run_ctx: Any) -> None:
        raw[key] = data

    _push(run_numpy, nd.context, [], [nd._var], "_slice_assign")


def _broadcast_into(op: str, source: tuple, target: tuple) -> None:
    if _broadcast_shape(op, source, target) != tuple(target):
        raise ShapeError(
            f"{op}: a value of shape {source} cannot be assigned to a region of shape {target}"
        )


def copy_across(source: NDArray, target: NDArray) -> None:
    """Copy between contexts: one engine op reading the source, writing the target."""
    src, dst = source._array, target._array
    src_np = isinstance(src, np.ndarray)
    dst_np = isinstance(dst, np.ndarray)

    def run(run_ctx: Any) -> None:
        if src_np and dst_np:  # cpu and virtual GPUs: host memory on both sides
            dst[...] = src
        elif dst_np:  # device -> host (cupy; not run on real hardware)
            dst[...] = src.get()
        elif src_np:  # host -> device (cupy; not run on real hardware)
            dst.set(src)
        else:  # device -> device (cupy copies between devices; not run on real hardware)
            dst[...] = src

    # copy=True: threaded_per_device runs it on its copy workers, as MXNet's CopyFromTo
    _engine().push_sync(run, target.context, [source._var], [target._var], 0, "_copyto", copy=True)
