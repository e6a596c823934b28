"""MXNet 1.x operators that older code and MXNet's own NDArray tests still call.

Idea: a few operators from MXNet's early NDArray API survived into 1.x under
their old names: assignment into a box of an array (``_slice_assign``, also
called ``_crop_assign``), the element tests of ``mx.nd.contrib`` (``isinf``,
``isfinite``, ``isnan``), and the per-row element ops ``choose_element_0index``
/ ``fill_element_0index``.  They are small, so they live together here.

Rule: each follows MXNet's name, inputs and parameters (MXNet:
src/operator/tensor/matrix_op.cc ``_slice_assign``, src/operator/contrib/
isinf / isnan, src/ndarray/ndarray_function.cc).  ``begin`` / ``end`` are read
as ``slice`` reads them (``None`` means the whole axis).  The element tests
return 0 / 1 in the input's dtype and have a zero gradient.

State kept: none.

Example::

    >>> import mxnb as mx
    >>> x = mx.nd.zeros((2, 3))
    >>> mx.nd._internal._slice_assign_scalar(x, scalar=5, begin=(0, 1), end=(1, 3)).asnumpy().tolist()
    [[0.0, 5.0, 5.0], [0.0, 0.0, 0.0]]
    >>> mx.nd.contrib.isnan(mx.nd.array([1.0, float('nan')])).asnumpy().tolist()
    [0.0, 1.0]
"""

from __future__ import annotations

from typing import Any

from ..param import ANY, Param, Shape
from ..registry import register, register_alias
from ._common import KernelProp, write
from .elemwise import INPUT, UnaryRule, _make_unary

__all__ = ["FillElement0IndexProp", "SliceAssignProp", "SliceAssignScalarProp"]


def _box(begin: tuple, end: tuple, shape: tuple) -> tuple:
    """The index of the box ``[begin, end)`` (``None`` entries: the whole axis), as slice does."""
    box = [slice(None)] * len(shape)
    for axis, (start, stop) in enumerate(zip(begin, end)):
        box[axis] = slice(start, stop)
    return tuple(box)


class _AssignBox(KernelProp):
    begin = Param(Shape, unbounded=ANY, doc="Start of the box on each axis (None: 0).")
    end = Param(Shape, unbounded=ANY, doc="End of the box on each axis (None: the axis size).")

    def _region(self, shape: tuple) -> tuple:
        if len(self.begin) != len(self.end) or len(self.begin) > len(shape):
            raise self.shape_error(
                f"begin {self.begin} and end {self.end} must have the same length, "
                f"at most the rank of lhs {shape}"
            )
        return _box(self.begin, self.end, shape)


@register("_slice_assign")
class SliceAssignProp(_AssignBox):
    """``lhs`` with the box ``[begin, end)`` replaced by ``rhs`` (MXNet alias ``_crop_assign``)."""

    def list_arguments(self) -> list[str]:
        """``lhs`` is copied, ``rhs`` fills the box."""
        return ["lhs", "rhs"]

    def infer_shape(self, in_shape):
        """The output is lhs's shape; rhs must have the box's shape."""
        lhs, rhs = in_shape
        if lhs is None:
            return None
        import numpy as np

        box = np.empty(tuple(lhs), dtype=np.bool_)[self._region(tuple(lhs))].shape
        if rhs is not None and tuple(rhs) != box:
            raise self.shape_error(f"rhs has shape {tuple(rhs)} but the box has shape {box}")
        return [tuple(lhs), box], [tuple(lhs)], []

    def forward(self, ctx, in_data, req, out_data, aux):
        """out = lhs; out[box] = rhs."""
        lhs, rhs = in_data
        out = lhs.copy()
        out[self._region(tuple(lhs.shape))] = rhs
        write(out_data[0], req[0], out)

    def backward(self, ctx, out_grad, in_data, out_data, req, in_grad, aux):
        """d lhs = head gradient outside the box; d rhs = head gradient inside it."""
        region = self._region(tuple(out_grad[0].shape))
        outside = out_grad[0].copy()
        outside[region] = 0
        write(in_grad[0], req[0], outside)
        write(in_grad[1], req[1], out_grad[0][region])


register_alias("_crop_assign", "_slice_assign")


@register("_slice_assign_scalar")
class SliceAssignScalarProp(_AssignBox):
    """``data`` with the box ``[begin, end)`` set to ``scalar`` (MXNet alias ``_crop_assign_scalar``)."""

    scalar = Param(float, unbounded=ANY, default=0.0, doc="The value written into the box.")

    def forward(self, ctx, in_data, req, out_data, aux):
        """out = data; out[box] = scalar."""
        out = in_data[0].copy()
        out[self._region(tuple(out.shape))] = self.scalar
        write(out_data[0], req[0], out)

    def backward(self, ctx, out_grad, in_data, out_data, req, in_grad, aux):
        """d data = head gradient outside the box."""
        outside = out_grad[0].copy()
        outside[self._region(tuple(outside.shape))] = 0
        write(in_grad[0], req[0], outside)


register_alias("_crop_assign_scalar", "_slice_assign_scalar")


@register("fill_element_0index")
class FillElement0IndexProp(KernelProp):
    """``lhs`` with ``lhs[i, rhs[i]] = mhs[i]`` for every row ``i`` (a 2-D lhs)."""

    def list_arguments(self) -> list[str]:
        """``lhs`` (rows x columns), ``mhs`` the values, ``rhs`` the column of each row."""
        return ["lhs", "mhs", "rhs"]

    def infer_shape(self, in_shape):
        """The output is lhs's shape; mhs and rhs have one entry per row."""
        lhs = in_shape[0]
        if lhs is None:
            return None
        if len(lhs) != 2:
            raise self.shape_error(f"lhs must be 2-D, found shape {tuple(lhs)}")
        return [tuple(lhs), (lhs[0],), (lhs[0],)], [tuple(lhs)], []

    def _rows(self, xp: Any, rhs: Any) -> tuple:
        return xp.arange(rhs.shape[0]), rhs.astype("int64")

    def forward(self, ctx, in_data, req, out_data, aux):
        """out = lhs; out[i, rhs[i]] = mhs[i]."""
        lhs, mhs, rhs = in_data
        out = lhs.copy()
        out[self._rows(ctx.xp, rhs)] = mhs
        write(out_data[0], req[0], out)

    def backward(self, ctx, out_grad, in_data, out_data, req, in_grad, aux):
        """d lhs: the head gradient but at the filled places; d mhs: the head gradient there."""
        rows = self._rows(ctx.xp, in_data[2])
        rest = out_grad[0].copy()
        rest[rows] = 0
        write(in_grad[0], req[0], rest)
        write(in_grad[1], req[1], out_grad[0][rows])
        write(in_grad[2], req[2], 0)


register_alias("choose_element_0index", "pick")  # lhs[i, rhs[i]]: pick along the last axis


def _element_test(test: str) -> UnaryRule:
    return UnaryRule(
        lambda xp, x: getattr(xp, test)(x).astype(x.dtype),
        None,
        INPUT,
        f"1 where ``{test}(x)``, else 0, in x's dtype (``mx.nd.contrib.{test}``).",
    )


for _test in ("isinf", "isfinite", "isnan"):
    _make_unary(f"_contrib_{_test}", _element_test(_test))
