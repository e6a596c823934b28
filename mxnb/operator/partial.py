"""Partial shapes: MXNet's rule that a 0 dimension is unknown, and the helpers shape functions use.

Idea (MXNet 1.x, ``TShape`` outside numpy mode): while a graph is inferred
a shape may be known only in part.  ``None`` (``()`` at the user's side) is a
shape whose rank is unknown; a tuple with 0 in it, ``(0, 200)``, has a known
rank and unknown dimensions where it says 0.  A ``_zeros`` node exported with
``shape=(0, 200)`` is the usual source: its batch size comes from whatever
the zeros are added to.  Inference merges what every operator says about an
entry until nothing changes (:mod:`mxnb.symbol.graph`).

Rule: merging two partial shapes keeps every dimension either one knows; a
different rank, or two different known sizes of one dimension, is a
conflict (:class:`~mxnb.base.ShapeError`).

An operator opts in by decorating its ``infer_shape(self, in_shape,
out_shape=None)`` with :func:`partial_shape`: it then receives partial
shapes for its inputs *and* its outputs and returns partial shapes (None
where it can say nothing).  Shape functions without the decorator keep the
simple contract: they see complete shapes or None and are asked again when
more is known.

Example::

    >>> from mxnb.operator.partial import merge, is_known
    >>> merge((0, 10), (12, 0))
    (12, 10)
    >>> is_known((12, 0)), is_known((12, 10))
    (False, True)
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from ..base import ShapeError

__all__ = [
    "fill_one_unknown",
    "fmt_partial",
    "is_known",
    "known_or_none",
    "merge",
    "merge_all",
    "partial_shape",
    "product",
    "takes_partial",
]

Shape = tuple[int, ...]
_F = TypeVar("_F", bound=Callable[..., Any])


def partial_shape(function: _F) -> _F:
    """Mark an ``infer_shape(self, in_shape, out_shape=None)`` that understands partial shapes."""
    function.partial_shape = True  # type: ignore[attr-defined]
    return function


def takes_partial(prop_cls: type) -> bool:
    """Whether a property class's ``infer_shape`` is marked with :func:`partial_shape`."""
    return bool(getattr(prop_cls.infer_shape, "partial_shape", False))


def is_known(shape: Sequence[int] | None) -> bool:
    """True when the rank and every dimension are known (no 0)."""
    return shape is not None and all(int(dim) > 0 for dim in shape)


def known_or_none(shape: Sequence[int] | None) -> Shape | None:
    """The shape as a tuple when fully known, else None."""
    return tuple(int(dim) for dim in shape) if is_known(shape) else None  # type: ignore[union-attr]


def fmt_partial(shape: Sequence[int] | None) -> str:
    """Format a partial shape with ``?`` for unknown dimensions: ``(?, 200)``."""
    if shape is None:
        return "(unknown)"
    if len(shape) == 1:
        return f"({'?' if shape[0] == 0 else shape[0]},)"
    return "(" + ", ".join("?" if dim == 0 else str(dim) for dim in shape) + ")"


def merge(
    first: Sequence[int] | None, second: Sequence[int] | None, what: str = ""
) -> Shape | None:
    """Combine two partial shapes of the same value; raise :class:`ShapeError` on a conflict.

    ``what`` starts the error message (``"lhs and rhs"``).
    """
    if first is None:
        return None if second is None else tuple(int(dim) for dim in second)
    if second is None:
        return tuple(int(dim) for dim in first)
    if len(first) != len(second):
        raise ShapeError(
            f"{what or 'shapes'} {fmt_partial(first)} and {fmt_partial(second)} must have the "
            f"same number of dimensions"
        )
    dims = []
    for axis, (a, b) in enumerate(zip(first, second)):
        a, b = int(a), int(b)
        if a and b and a != b:
            raise ShapeError(
                f"{what or 'shapes'} {fmt_partial(first)} and {fmt_partial(second)} disagree "
                f"at axis {axis} ({a} vs {b}); they must match"
            )
        dims.append(a or b)
    return tuple(dims)


def merge_all(shapes: Sequence[Sequence[int] | None], names: Sequence[str]) -> Shape | None:
    """Merge several partial shapes that must be equal, naming the two that conflict."""
    merged: Shape | None = None
    first_name = ""
    for name, shape in zip(names, shapes):
        if shape is None:
            continue
        if merged is None:
            merged, first_name = tuple(int(dim) for dim in shape), name
            continue
        merged = merge(merged, shape, f"{first_name} and {name}:")
    return merged


def product(dims: Sequence[int]) -> int:
    """The product of dimensions, 0 when one of them is unknown."""
    return math.prod(int(dim) for dim in dims)


def fill_one_unknown(dims: tuple, total: int) -> tuple:
    """Fill the single unknown (0) dim of ``dims`` so that their product is ``total`` (if known)."""
    unknown = [i for i, dim in enumerate(dims) if dim == 0]
    if total == 0 or len(unknown) != 1:
        return tuple(dims)
    rest = product(dim for dim in dims if dim)
    if total % rest:
        raise ShapeError(f"{fmt_partial(dims)} cannot hold {total} elements")
    filled = list(dims)
    filled[unknown[0]] = total // rest
    return tuple(filled)
