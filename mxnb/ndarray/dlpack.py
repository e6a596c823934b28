"""DLPack: hand an NDArray's memory to another framework, and take an array from one.

Idea (MXNet: ``NDArray.to_dlpack_for_read`` / ``to_dlpack_for_write`` and
``mx.nd.from_dlpack``): DLPack is the common C struct for "a tensor in
memory"; it travels in a Python capsule named ``dltensor``.  Handing an
array out is a promise about the engine: ``for_read`` waits for every
pending write of the array (its value is final), ``for_write`` also for
every pending read (nobody reads while the consumer writes).  After that the
consumer works on the memory outside the engine, as in MXNet.

Rule: the capsule shares the array's memory and keeps the array alive until
it is consumed and the consumer lets it go (the storage cannot be handed to
another array meanwhile).  :func:`from_dlpack` takes a capsule or any object
with ``__dlpack__`` (numpy >= 1.22, torch, cupy) and, as :func:`from_numpy`,
copies the values into an NDArray of mxnb's own storage.

State kept: none.

Example::

    >>> import mxnb as mx
    >>> a = mx.nd.array([1.0, 2.0])
    >>> mx.nd.from_dlpack(a.to_dlpack_for_read()).asnumpy().tolist()
    [1.0, 2.0]
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..base import NotSupportedError, ParamError
from .creation import array
from .ndarray import NDArray

__all__ = ["from_dlpack", "to_dlpack_for_read", "to_dlpack_for_write"]

_KDLCPU = 1


class _Lent(np.ndarray):
    """A numpy view of an NDArray's memory that keeps the NDArray alive (``owner``)."""

    owner: NDArray | None = None


def _capsule(source: NDArray, what: str) -> Any:
    if not isinstance(source, NDArray):
        raise ParamError(f"{what}: expected an NDArray, found {type(source).__name__}")
    raw = source._raw()
    if not isinstance(raw, np.ndarray):  # cupy (not run on real hardware)
        return raw.toDlpack()
    lent = raw.view(_Lent)
    lent.owner = source
    return lent.__dlpack__()


def to_dlpack_for_read(data: NDArray) -> Any:
    """A ``dltensor`` capsule of ``data``'s memory, once its pending writes have run."""
    if isinstance(data, NDArray):
        data.wait_to_read()
    return _capsule(data, "to_dlpack_for_read")


def to_dlpack_for_write(data: NDArray) -> Any:
    """A ``dltensor`` capsule of ``data``'s memory, once its pending reads and writes have run."""
    if isinstance(data, NDArray):
        data.wait_to_write()
    return _capsule(data, "to_dlpack_for_write")


class _CapsuleHolder:
    """Gives a bare ``dltensor`` capsule the ``__dlpack__`` protocol numpy asks for."""

    def __init__(self, capsule: Any) -> None:
        self._capsule = capsule

    def __dlpack__(self, stream: Any = None) -> Any:
        return self._capsule

    def __dlpack_device__(self) -> tuple[int, int]:
        return (_KDLCPU, 0)


def from_dlpack(dlpack: Any) -> NDArray:
    """An NDArray with the values of a DLPack capsule or of an object with ``__dlpack__``.

    The values are copied into mxnb's storage (as ``from_numpy`` does); the
    capsule is consumed and may not be used again, as in MXNet.
    """
    if type(dlpack).__name__ == "PyCapsule":
        source = _CapsuleHolder(dlpack)
    elif hasattr(dlpack, "__dlpack__"):
        source = dlpack
    else:
        raise ParamError(
            f"from_dlpack: expected a DLPack capsule (to_dlpack_for_read / _for_write) or an "
            f"object with __dlpack__, found {type(dlpack).__name__}"
        )
    try:
        values = np.from_dlpack(source)
    except (BufferError, RuntimeError, TypeError, ValueError) as exc:
        raise NotSupportedError(
            f"from_dlpack: numpy cannot read this tensor ({exc}); only host-memory tensors "
            f"can be taken, and a capsule only once"
        ) from exc
    return array(values, dtype=values.dtype)
