"""Typed operator parameters, parsed from Python values or MXNet-style strings.

Idea (MXNet: ``dmlc::Parameter`` / ``DMLC_DECLARE_FIELD``): an operator
declares its parameters once, as class attributes, with a type, a default, a
range or a set of choices, and a doc line.  The same declaration parses
``num_hidden=10`` and ``num_hidden='10'`` (symbol JSON stores every
parameter as a string), fills in defaults, checks ranges, generates the
docstring of ``mx.nd.Name`` and formats values back to MXNet's strings.

Example::

    >>> from mxnb.operator.param import Param, Shape
    >>> kernel = Param(Shape, doc='kernel size')
    >>> kernel.parse('(3,3)', op='Convolution', field='kernel')
    (3, 3)
    >>> Param(bool, default=False).format(True)
    'True'
"""

from __future__ import annotations

import ast
import math
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from ..base import ParamError, np_dtype

__all__ = ["ANY", "AXIS", "Param", "Shape", "DType", "REQUIRED", "UNUSED", "format_value"]


class _Required:
    def __repr__(self) -> str:
        return "REQUIRED"


#: Marker default of a parameter that must be given.
REQUIRED: Any = _Required()

#: ``Param(unbounded=...)`` reasons: every value of the type means something ...
ANY = "any value"
#: ... an axis (negative counts from the end), checked against the input's dimensions ...
AXIS = "an axis of the input, checked against its dimensions"
#: ... accepted for MXNet compatibility and ignored.
UNUSED = "unused"


class Shape(tuple):
    """Type marker for tuple-of-int parameters (``kernel=(3, 3)``; an int means ``(int,)``)."""


class DType(str):
    """Type marker for dtype parameters (``dtype='float32'``), stored as the dtype's name."""


_TYPE_NAMES = {
    int: "int",
    float: "float",
    bool: "boolean",
    str: "string",
    Shape: "Shape(tuple)",
    DType: "dtype",
}


@dataclass
class Param:
    """One operator parameter.

    Parameters
    ----------
    type : type
        ``int``, ``float``, ``bool``, ``str``, :class:`Shape` or :class:`DType`.
    default : Any
        The default value, or :data:`REQUIRED`.
    low, high : float, optional
        Inclusive range for numbers (and for every element of a Shape).
    choices : sequence of str, optional
        Allowed values of an enum-like string parameter.
    optional : bool
        ``None`` (or ``'None'``) is accepted, as MXNet's ``dmlc::optional``.
    unbounded : str
        For a number or Shape without ``low`` / ``high``: why no fixed range
        applies, shown in the docs (``ANY``: every value means something;
        ``AXIS``: an axis, checked against the input's dimensions).  Every
        numeric parameter declares a range or says why it has none.
    doc : str
        One line describing the parameter (shown by ``help(mx.nd.Name)``).
    """

    type: type
    default: Any = REQUIRED
    low: float | None = None
    high: float | None = None
    choices: Sequence[str] | None = None
    optional: bool = False
    unbounded: str = ""
    doc: str = ""
    name: str = ""  # set by __set_name__ when declared on an OperatorProperty

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def __get__(self, instance: Any, owner: type) -> Any:
        if instance is None:
            return self
        return instance._param_values[self.name]

    @property
    def required(self) -> bool:
        """True when the parameter has no default."""
        return self.default is REQUIRED

    # -- parsing ------------------------------------------------------------
    def parse(self, value: Any, op: str = "", field: str = "") -> Any:
        """Return ``value`` converted to this parameter's type, checked against its range.

        Raises :class:`ParamError` naming ``op``, ``field`` and what is allowed.
        """
        field = field or self.name
        where = f"{op} parameter '{field}'" if op else f"parameter '{field}'"
        if value is None or (isinstance(value, str) and value.strip() == "None"):
            if self.optional or self.default is None:
                return None
            raise ParamError(f"{where}: None is not allowed; expected {self.describe_type()}")
        try:
            result = self._convert(value)
        except (ValueError, TypeError, SyntaxError) as exc:
            raise ParamError(f"{where}: cannot read {value!r} as {self.describe_type()}") from exc
        self._check(result, where)
        return result

    def _convert(self, value: Any) -> Any:  # noqa: C901 -- one branch per parameter type MXNet's string form can hold
        kind = self.type
        if kind is bool:
            if isinstance(value, str):
                text = value.strip().lower()
                if text in ("true", "1"):
                    return True
                if text in ("false", "0"):
                    return False
                raise ValueError(value)
            if isinstance(value, (bool, int)) or hasattr(value, "__bool__"):
                return bool(value)
            raise TypeError(value)
        if kind is int:
            if isinstance(value, str):
                value = ast.literal_eval(value.strip())
            if isinstance(value, bool):
                return int(value)
            return _whole(value)
        if kind is float:
            number = float(value.strip()) if isinstance(value, str) else float(value)
            if math.isnan(number) and (self.low is not None or self.high is not None):
                raise ValueError("nan is outside every range")
            return number
        if kind is str:
            return str(value)
        if kind is DType:
            return DType(np_dtype(value).name)
        if kind is Shape:
            if isinstance(value, str):
                text = value.strip()
                value = ast.literal_eval(text) if text else ()
            if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
                return Shape((int(value),))
            return Shape(_whole(item) if item is not None else None for item in value)
        raise TypeError(f"unsupported parameter type {kind!r}")

    def _check(self, value: Any, where: str) -> None:
        if self.choices is not None and value not in self.choices:
            allowed = ", ".join(repr(choice) for choice in self.choices)
            raise ParamError(f"{where}: {value!r} is not one of {allowed}")
        numbers = value if isinstance(value, tuple) else (value,)
        for number in numbers:
            if not isinstance(number, (int, float)) or isinstance(number, bool):
                continue
            if self.low is not None and number < self.low:
                raise ParamError(f"{where}: {value!r} is below the minimum {self.low:g}")
            if self.high is not None and number > self.high:
                raise ParamError(f"{where}: {value!r} is above the maximum {self.high:g}")

    # -- description ----------------------------------------------------------
    def describe_type(self) -> str:
        """A short type description as MXNet's docs give it (``int, required``)."""
        if self.choices is not None:
            text = "{" + ", ".join(repr(choice) for choice in self.choices) + "}"
        else:
            text = _TYPE_NAMES.get(self.type, self.type.__name__)
        if self.optional:
            text += " or None"
        if self.low is not None or self.high is not None:
            low = "-inf" if self.low is None else f"{self.low:g}"
            high = "inf" if self.high is None else f"{self.high:g}"
            text += f" in [{low}, {high}]"
        elif self.unbounded:
            text += f" ({self.unbounded})"
        if self.required:
            return text + ", required"
        return f"{text}, optional, default={self.format(self.default)}"

    def format(self, value: Any) -> str:
        """Format a value as MXNet writes it into symbol JSON."""
        return format_value(value)


def _whole(value: Any) -> int:
    """``value`` as an int when it is a whole number (``3``, ``3.0``, ``np.int64(3)``), else raise.

    ``2.5`` must not silently become ``2``: a truncated kernel or shape
    computes something the user did not ask for.
    """
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise TypeError(f"{value!r} is not a whole number")
    if isinstance(value, (float, np.floating)) and not float(value).is_integer():
        raise ValueError(f"{value!r} is not a whole number")
    return int(value)


def format_value(value: Any) -> str:
    """Format a parameter value as an MXNet string (``True``, ``(3, 3)``, ``None``, ``0.001``)."""
    if value is None:
        return "None"
    if isinstance(value, bool):
        return "True" if value else "False"
    if isinstance(value, tuple):
        return "(" + ", ".join(str(item) for item in value) + ("," if len(value) == 1 else "") + ")"
    return str(value)
