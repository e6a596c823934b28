"""Debug-mode guards: hand kernels read-only views of the arrays they only read.

Idea: an op declares the vars it reads (const) and the vars it writes
(mutate); the engine orders ops by those declarations only.  A kernel that
writes into an input it declared as const races with every other reader of
that array — the bug is silent and timing dependent.  In debug mode
(``mx.engine.is_debug()``) the imperative invoke and the executor hand each
const input to the kernel through :func:`readonly_view`, so the first write
fails at once, naming the op and the argument.

Rule: a read-only view is a numpy view with ``flags.writeable = False`` (the
backstop numpy itself enforces) of a subclass whose ``__setitem__`` and
in-place operators raise :class:`~mxnb.base.OpError` naming the op and the
argument.  Anything computed *from* the view is a plain array again.  Arrays
of other modules (cupy) are returned unchanged: they have no read-only flag.

State kept: none (each view carries ``op_label`` and ``arg_name``).

Example::

    >>> import numpy as np
    >>> from mxnb.ndarray.debug import readonly_view
    >>> x = readonly_view(np.zeros(3), "elemwise_add", "lhs")
    >>> float((x + 1).sum())
    3.0
    >>> try:
    ...     x[0] = 1
    ... except Exception as err:
    ...     print(type(err).__name__, str(err).split(';')[0])
    OpError elemwise_add: kernel wrote into its const input 'lhs'
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..base import OpError

__all__ = ["READONLY_HINT", "ReadOnlyArray", "readonly_view", "write_error"]

READONLY_HINT = (
    "; inputs are read-only: compute into out_data (use mxnb.operator.assign), or "
    "declare the array as an output / auxiliary state if the op must update it"
)


def write_error(op_label: str, arg_name: str) -> OpError:
    """The error raised when a kernel writes into a const input."""
    return OpError(
        f"{op_label}: kernel wrote into its const input {arg_name!r}{READONLY_HINT}",
        op_name=op_label,
    )


def _plain(array: Any) -> Any:
    return array.view(np.ndarray) if isinstance(array, ReadOnlyArray) else array


class ReadOnlyArray(np.ndarray):
    """A numpy view that refuses writes, naming the op and the argument."""

    op_label: str = ""
    arg_name: str = ""

    def __array_finalize__(self, obj: Any) -> None:
        self.op_label = getattr(obj, "op_label", "")
        self.arg_name = getattr(obj, "arg_name", "")

    def __setitem__(self, key: Any, value: Any) -> None:
        if not self.flags.writeable:
            raise write_error(self.op_label, self.arg_name)
        super().__setitem__(key, value)

    def __array_ufunc__(self, ufunc: Any, method: str, *inputs: Any, **kwargs: Any) -> Any:
        outs = kwargs.get("out")
        if outs:
            for target in outs:
                if isinstance(target, ReadOnlyArray) and not target.flags.writeable:
                    raise write_error(target.op_label, target.arg_name)
            kwargs["out"] = tuple(_plain(target) for target in outs)
        inputs = tuple(_plain(item) for item in inputs)
        return getattr(ufunc, method)(*inputs, **kwargs)


def readonly_view(array: Any, op_label: str, arg_name: str) -> Any:
    """Return a read-only view of ``array`` whose writes raise an OpError naming ``op_label`` and ``arg_name``.

    Non-numpy arrays (cupy) are returned unchanged.
    """
    if type(array) is not np.ndarray and not isinstance(array, np.ndarray):
        return array
    view = array.view(ReadOnlyArray)
    view.op_label = op_label
    view.arg_name = arg_name
    view.flags.writeable = False
    return view
