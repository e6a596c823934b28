"""NumPy-shape semantics switch (MXNet: python/mxnet/util.py ``np_shape``).

Idea: MXNet 1.x reads a 0 in a shape as "unknown" and has no 0-d arrays;
``np_shape`` turns on NumPy's meaning (0 is a real, empty dimension; ``()`` a
scalar).  mxnb keeps the flag with MXNet's names so code written against
MXNet runs unchanged: shape inference may ask :func:`is_np_shape` which
meaning applies.

Rule: the flag is per thread (MXNet: thread-local too) and off by default.

State kept:
    _state.np_shape   this thread's flag

Example::

    >>> import mxnb as mx
    >>> with mx.util.np_shape(True):
    ...     mx.util.is_np_shape()
    True
    >>> mx.util.is_np_shape()
    False
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from typing import Any

__all__ = [
    "is_np_array",
    "is_np_shape",
    "np_array",
    "np_shape",
    "set_np_shape",
    "use_np",
    "use_np_shape",
]


class _State(threading.local):
    np_shape: bool = False


_state = _State()


def is_np_shape() -> bool:
    """Whether NumPy shape semantics are on in this thread."""
    return _state.np_shape


def set_np_shape(active: bool) -> bool:
    """Turn NumPy shape semantics on or off in this thread; return the previous setting."""
    previous = _state.np_shape
    _state.np_shape = bool(active)
    return previous


class np_shape:
    """``with np_shape(True):`` NumPy shape semantics inside the block (restored after)."""

    def __init__(self, active: bool = True) -> None:
        self._active = bool(active)
        self._previous = False

    def __enter__(self) -> np_shape:  # noqa: PYI034
        self._previous = set_np_shape(self._active)
        return self

    def __exit__(self, *exc: object) -> None:
        set_np_shape(self._previous)


def use_np_shape(func: Callable[..., Any]) -> Callable[..., Any]:
    """Decorator: run ``func`` (or every method of a class) with NumPy shape semantics on."""
    if isinstance(func, type):
        for name, member in list(vars(func).items()):
            if callable(member) and not name.startswith("__"):
                setattr(func, name, use_np_shape(member))
        return func

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        with np_shape(True):
            return func(*args, **kwargs)

    return wrapper


def is_np_array() -> bool:
    """Whether ``mx.np`` arrays are active: never in mxnb (no ``mx.np`` module)."""
    return False


class np_array:
    """``with np_array(False):`` accepted for compatibility; ``True`` is not supported."""

    def __init__(self, active: bool = True) -> None:
        if active:
            from .base import NotSupportedError

            raise NotSupportedError(
                "np_array(True): mxnb has no mx.np array module; use mx.nd arrays "
                "(np_shape(True) gives NumPy shape semantics)"
            )

    def __enter__(self) -> np_array:  # noqa: PYI034
        return self

    def __exit__(self, *exc: object) -> None:
        return None


class _NumpyArrayScope:
    """MXNet's thread-local ``np_array`` scope object; in mxnb ``mx.np`` arrays are never active."""

    _current: _NumpyArrayScope | None = None

    def __init__(self, is_np_array: bool) -> None:
        self._is_np_array = bool(is_np_array)


def use_np(func: Callable[..., Any]) -> Callable[..., Any]:
    """MXNet's decorator for code written against ``mx.np`` arrays: mxnb has no ``mx.np``.

    Decorating works (so modules that use it import); calling the function
    raises ``NotSupportedError``, naming it.
    """

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        from .base import NotSupportedError

        raise NotSupportedError(
            f"{getattr(func, '__name__', func)} is decorated with use_np: it needs MXNet's "
            f"mx.np arrays, which mxnb does not have; use mx.nd"
        )

    return wrapper
