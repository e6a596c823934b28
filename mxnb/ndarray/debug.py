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

from collections.abc import Sequence
from typing import Any

import numpy as np

from ..base import OpError

__all__ = [
    "READONLY_HINT",
    "ReadOnlyArray",
    "check_written",
    "poison_outputs",
    "raise_read_only_write",
    "readonly_view",
    "write_error",
]

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


def raise_read_only_write(exc: ValueError, op_label: str, what: str) -> None:
    """Raise an :class:`OpError` from ``exc`` when it is numpy refusing a write to a read-only array.

    A kernel that writes into a read-only view through numpy itself (``np.add(a, b, out=a)``
    on a plain view, ``a[...] = 0`` after a ``.view()``) gets numpy's ``ValueError``
    ("... is read-only"), not :func:`write_error`.  ``what`` says what the kernel
    wrote into and what to do instead.  Returns when ``exc`` is another error:
    the caller re-raises it.
    """
    if "read-only" in str(exc):
        raise OpError(f"{op_label}: {what}", op_name=op_label) from exc


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


# -- outputs a kernel never wrote --------------------------------------------------------
#
# A kernel asked to write an output (req 'write') that leaves it, or part of it, alone
# returns whatever the storage pool handed over: stale values of another array.  In debug
# mode every such floating-point output is filled first with a NaN carrying a payload no
# arithmetic produces (arithmetic on NaNs yields numpy's default NaN, or passes on the
# payload of an input NaN, and inputs are never poisoned); a poisoned element left
# afterwards was not written.  Integer outputs have no spare bit pattern and are not checked.

_POISON_BITS = {
    np.dtype(np.float16): np.uint16(0x7E5D),
    np.dtype(np.float32): np.uint32(0x7FC0DEAD),
    np.dtype(np.float64): np.uint64(0x7FF8DEADBEEFDEAD),
}


def _poisonable(array: Any) -> bool:
    return isinstance(array, np.ndarray) and array.dtype in _POISON_BITS and array.size > 0


def poison_outputs(
    outputs: Sequence[Any], writes: Sequence[bool], inputs: Sequence[Any]
) -> list[bool]:
    """Fill each output the kernel must overwrite with the poison NaN; return which were.

    An output that shares memory with an input (an in-place op) is left alone:
    poisoning it would poison the input.
    """
    poisoned = []
    for array, write in zip(outputs, writes):
        chosen = (
            write
            and _poisonable(array)
            and not any(
                isinstance(source, np.ndarray) and np.may_share_memory(array, source)
                for source in inputs
            )
        )
        if chosen:
            bits = _POISON_BITS[array.dtype]
            array.view(bits.dtype)[...] = bits
        poisoned.append(chosen)
    return poisoned


def check_written(
    op_label: str, outputs: Sequence[Any], writes: Sequence[bool], names: Sequence[str]
) -> None:
    """Raise :class:`OpError` naming the first output that still holds poison somewhere."""
    for array, write, name in zip(outputs, writes, names):
        if not (write and _poisonable(array)):
            continue
        bits = _POISON_BITS[array.dtype]
        left = int(np.count_nonzero(array.view(bits.dtype) == bits))
        if left:
            raise OpError(
                f"{op_label}: kernel left {left} of {array.size} element(s) of output "
                f"{name!r} unwritten (req 'write'); write every element of out_data "
                f"(use mxnb.operator.assign), or the output keeps stale memory",
                op_name=op_label,
            )
