"""Reshape's target shape for an NDArray: MXNet's codes, the arguments it accepts, its errors.

Idea: ``x.reshape(...)`` takes a shape in every form MXNet's does (ints, one
tuple, ``shape=``, ``reverse=``) and MXNet's codes: ``0`` copies the input
dimension, ``-1`` infers one, and ``-2`` / ``-3`` / ``-4`` (copy the rest,
merge two, split one) as the Reshape op reads them.  The result is a view
when the data allows (:meth:`NDArray.reshape <mxnb.ndarray.NDArray.reshape>`).

Rule: the common codes (``0``, ``-1`` and sizes) are resolved here, where a
zero-size array is a real array of zero elements; the Reshape op's
:func:`~mxnb.operator.ops.views.infer_reshape` takes the rest, and reads a 0
dimension as *unknown* (partial shape inference), which an existing array
never has.

State kept: none.

Example::

    >>> reshape_target((2, 3, 4), ((0, -1),), {})
    (2, 12)
    >>> reshape_target((2, 3, 4), (-1, 0), {'reverse': True})
    (6, 4)
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..base import MXNBError, ShapeError

__all__ = ["reshape_target"]


def reshape_target(old: tuple, shape: tuple, kwargs: dict[str, Any]) -> tuple:
    """The shape ``x.reshape(*shape, **kwargs)`` gives an array of shape ``old``."""
    if len(shape) == 1 and not isinstance(shape[0], (int, np.integer)):
        shape = tuple(shape[0])
    if "shape" in kwargs:
        shape = tuple(kwargs.pop("shape"))
    reverse = bool(kwargs.pop("reverse", False))
    if kwargs:
        raise MXNBError(f"reshape: unknown keyword arguments {sorted(kwargs)}")
    bad = [dim for dim in shape if not isinstance(dim, (int, np.integer)) or isinstance(dim, bool)]
    if bad:
        raise ShapeError(
            f"reshape: shape {shape!r} holds {bad[0]!r}, which is not an int; pass ints "
            f"(0 keeps a dimension, -1 infers one)"
        )
    return _resolve_reshape(old, tuple(int(dim) for dim in shape), reverse)


class _ReshapeErrors:
    """What :func:`~mxnb.operator.ops.views.infer_reshape` needs of an op: its errors."""

    @staticmethod
    def shape_error(message: str) -> ShapeError:
        return ShapeError(f"reshape: {message}")


def _resolve_reshape(old: tuple, new: tuple, reverse: bool = False) -> tuple:
    """MXNet's reshape codes: ``0`` copies the input dimension, ``-1`` infers one.

    ``-2`` / ``-3`` / ``-4`` (copy the rest, merge two, split one) are the
    Reshape op's own rule (:func:`~mxnb.operator.ops.views.infer_reshape`).
    """
    if any(dim < -1 for dim in new):
        from ..operator.ops.views import infer_reshape

        return tuple(infer_reshape(_ReshapeErrors, old, new, reverse))
    if reverse:
        return tuple(reversed(_resolve_reshape(tuple(reversed(old)), tuple(reversed(new)))))
    result: list[int] = []
    infer = -1
    for index, dim in enumerate(new):
        if dim == 0:
            if index >= len(old):
                raise ShapeError(
                    f"reshape: 0 at position {index} but the input {old} has {len(old)} dimensions"
                )
            result.append(old[index])
        elif dim == -1:
            if infer >= 0:
                raise ShapeError(f"reshape: at most one -1 in {new}")
            infer = index
            result.append(1)
        elif dim < 0:
            raise ShapeError(f"reshape: code {dim} in {new} is not supported; use 0, -1 or sizes")
        else:
            result.append(dim)
    total = int(np.prod(old, dtype=np.int64))
    known = int(np.prod(result, dtype=np.int64))
    if infer >= 0:
        if known == 0 or total % known:
            raise ShapeError(f"reshape: cannot reshape {old} ({total} elements) into {new}")
        result[infer] = total // known
    elif known != total:
        raise ShapeError(
            f"reshape: cannot reshape {old} ({total} elements) into {tuple(result)} ({known} elements)"
        )
    return tuple(result)
