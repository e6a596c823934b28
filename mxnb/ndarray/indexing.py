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

from ..base import MXNBError, ShapeError
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
        if _recording():
            return None  # x[:] while recording: a recorded copy (copy_index), not a view
        return nd._view(raw[start:stop])
    return None


def _recorded_getitem(key: Any) -> Any:
    """An autograd Function for ``x[key]``: the gradient adds the head gradient back at ``key``."""
    from ..autograd import Function

    class GetItem(Function):
        def forward(self, x: NDArray) -> NDArray:
            self.shape, self.dtype, self.context = x.shape, x.dtype, x.context
            return copy_index(x, key)  # forward runs paused: the plain copy

        def backward(self, dy: NDArray) -> NDArray:
            grad = np.zeros(self.shape, dtype=self.dtype)
            np.add.at(grad, key, dy.asnumpy())  # repeated indices add up, as MXNet's do
            from .creation import array

            return array(grad, ctx=self.context, dtype=self.dtype)

    return GetItem()


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
    """``nd[key]`` for any numpy key, as a new array (recorded for autograd while recording)."""
    key = _numpy_key(key)
    if _recording():
        return _recorded_getitem(key)(nd)
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
    """``nd[key] = value`` as one engine op writing ``nd`` (numpy's indexing rules)."""
    key = _numpy_key(key)
    try:
        target_shape = _dummy(nd)[key].shape
    except IndexError as exc:
        raise IndexError(f"NDArray of shape {nd.shape}: {exc}") from None
    raw = nd._array
    if isinstance(value, NDArray):
        _refuse_recorded_assignment(value)
        if value.context != nd.context:
            value = value.as_in_context(nd.context)
        _broadcast_into("__setitem__", value.shape, target_shape)
        source = value._array if target_shape != () else value._array.reshape(())
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
    if target_shape == ():
        data = data.reshape(())
    xp = nd.context.array_module
    if xp is not np:
        data = xp.asarray(data)  # not run on real hardware

    def run_numpy(run_ctx: Any) -> None:
        raw[key] = data

    _push(run_numpy, nd.context, [], [nd._var], "_slice_assign")


def _refuse_recorded_assignment(value: NDArray) -> None:
    """MXNet 1.x refuses ``x[...] = y`` while recording when ``y`` is in the graph."""
    if _recording():
        from .. import autograd

        if autograd._entry_of(value) is not None:
            raise MXNBError(
                "__setitem__: Inplace operations (+=, -=, x[:]=, etc) are not supported when "
                "recording with autograd: the value is in the recorded graph, so the "
                "assignment would have no gradient; build the result with an op (e.g. "
                "mx.nd.concat / where) or assign outside autograd.record()"
            )


def _broadcast_into(op: str, source: tuple, target: tuple) -> None:
    if target == () and int(np.prod(source, dtype=np.int64)) == 1:
        return  # one value into one element, as MXNet (and numpy) allow
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
