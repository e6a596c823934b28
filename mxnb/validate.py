"""Checking the numbers a user passes: finite, of the right kind, in range, or a clear error.

Idea: a hyper-parameter that is NaN or infinite does not fail where it is
given; it turns every weight to NaN many steps later, or surfaces as an
``OverflowError`` from deep inside a planner.  So every number that
configures mxnb (an optimizer's learning rate and betas, an initializer's
scale, a recomputation budget, the launcher's timeout, an iterator's
``num_parts``) passes through :func:`check_number` or :func:`check_count`
once, where it is given, and is refused there with a :class:`ParamError`
naming the owner, the argument, the value and the range.

Rule: booleans are not numbers; NaN and the infinities are refused unless
``finite=False``; bounds are closed unless ``low_open`` / ``high_open``;
``None`` passes only with ``optional=True``.  The checked value comes back
as a Python ``float`` (or ``int`` from :func:`check_count`), so numpy scalars
and strings never travel further.

State kept: none.

Example::

    >>> from mxnb.validate import check_number
    >>> check_number(0.9, "beta1", "Adam", low=0, high=1, high_open=True)
    0.9
    >>> check_number(float("nan"), "learning_rate", "SGD")
    Traceback (most recent call last):
    ...
    mxnb.base.ParamError: SGD: learning_rate must be a finite number, got nan
"""

from __future__ import annotations

import math
import numbers
from typing import Any

from .base import ParamError

__all__ = ["check_count", "check_number"]


def _range(low: float | None, high: float | None, low_open: bool, high_open: bool) -> str:
    left = "(" if low_open or low is None else "["
    right = ")" if high_open or high is None else "]"
    low_text = "-inf" if low is None else f"{low:g}"
    high_text = "inf" if high is None else f"{high:g}"
    return f"{left}{low_text}, {high_text}{right}"


def check_number(
    value: Any,
    name: str,
    owner: str,
    *,
    low: float | None = None,
    high: float | None = None,
    low_open: bool = False,
    high_open: bool = False,
    optional: bool = False,
    finite: bool = True,
) -> float | None:
    """``value`` as a float, or a :class:`ParamError` naming ``owner``, ``name`` and the range."""
    if value is None:
        if optional:
            return None
        raise ParamError(f"{owner}: {name} must be a number, got None")
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ParamError(f"{owner}: {name} must be a number, got {value!r}")
    number = float(value)
    if finite and not math.isfinite(number):
        raise ParamError(f"{owner}: {name} must be a finite number, got {number!r}")
    if math.isnan(number):
        raise ParamError(f"{owner}: {name} must be a number, got nan")
    below = low is not None and (number <= low if low_open else number < low)
    above = high is not None and (number >= high if high_open else number > high)
    if below or above:
        raise ParamError(
            f"{owner}: {name} must be in {_range(low, high, low_open, high_open)}, got {number!r}"
        )
    return number


def check_count(value: Any, name: str, owner: str, *, low: int = 0, high: int | None = None) -> int:
    """``value`` as an int in ``[low, high]`` (no floats, no bools), or a :class:`ParamError`."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise ParamError(f"{owner}: {name} must be an int, got {value!r}")
    count = int(value)
    if count < low or (high is not None and count > high):
        raise ParamError(
            f"{owner}: {name} must be in {_range(low, high, False, False)}, got {count}"
        )
    return count
