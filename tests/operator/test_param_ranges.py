"""Every numeric operator parameter declares its range, and Param enforces it.

Specification (issue 20, "every operator parameter has a declared range,
checked in Param"): walking the operator registry (mxnb's own operators), each ``int``,
``float`` or ``Shape`` parameter without choices either declares ``low`` /
``high`` or says why it has no fixed range (``unbounded=ANY``, ``AXIS``,
``UNUSED`` or a reason of its own), and that reason shows in the generated
docs.  For every declared range, a value just outside it is a
:class:`ParamError` naming the op, the parameter, the value and the bound.
"""

from __future__ import annotations

import pytest

import mxnb as mx  # noqa: F401  (registers every operator)
from mxnb.base import ParamError
from mxnb.operator import registry
from mxnb.operator.param import REQUIRED, Param, Shape


def _numeric_params() -> list[tuple[str, type, Param]]:
    found, seen = [], set()
    for name in registry.list_ops():
        cls = registry.get(name).prop_cls
        if cls in seen or not cls.__module__.startswith("mxnb."):
            continue  # operators that tests register are theirs to describe
        seen.add(cls)
        for attr in sorted(dir(cls)):
            param = getattr(cls, attr, None)
            if isinstance(param, Param) and param.type in (int, float, Shape):
                if param.choices is None:
                    found.append((name, cls, param))
    return found


NUMERIC = _numeric_params()
RANGED = [item for item in NUMERIC if item[2].low is not None or item[2].high is not None]


def test_the_registry_has_numeric_parameters_to_check():
    assert len(NUMERIC) > 100 and len(RANGED) > 40


@pytest.mark.parametrize(
    ("op", "param"), [(op, param) for op, _, param in NUMERIC], ids=lambda v: getattr(v, "name", v)
)
def test_every_numeric_parameter_declares_a_range_or_why_it_has_none(op, param):
    ranged = param.low is not None or param.high is not None
    assert ranged or param.unbounded, (
        f"{op} parameter '{param.name}' ({param.type.__name__}) declares no range: give it "
        f"low= / high=, or unbounded=ANY / AXIS / UNUSED / a reason"
    )
    assert not (ranged and param.unbounded), f"{op}.{param.name}: a range and no range at once"
    shown = param.describe_type()
    assert (" in [" in shown) if ranged else (f"({param.unbounded})" in shown)
    assert shown in registry.make_docstring(op)


def _outside(param: Param) -> list:
    """Values just outside ``param``'s range, in its type."""
    values = []
    for bound, step in ((param.low, -1), (param.high, 1)):
        if bound is None or bound in (float("inf"), float("-inf")):
            continue
        number = bound + step if param.type is not float else bound + step * max(1e-3, abs(bound))
        number = int(number) if param.type in (int, Shape) else float(number)
        values.append((number,) if param.type is Shape else number)
    return values


@pytest.mark.parametrize(
    ("op", "cls", "param"),
    [item for item in RANGED if _outside(item[2])],
    ids=lambda v: getattr(v, "name", v if isinstance(v, str) else ""),
)
def test_a_value_outside_a_declared_range_is_a_param_error_naming_it(op, cls, param):
    for value in _outside(param):
        with pytest.raises(ParamError) as info:
            param.parse(value, op=cls.type_string or op, field=param.name)
        message = str(info.value)
        assert f"parameter '{param.name}'" in message and repr(value) in message
        assert "minimum" in message or "maximum" in message


@pytest.mark.parametrize(
    ("op", "cls", "param"),
    [item for item in RANGED if item[2].type is float],
    ids=lambda v: getattr(v, "name", v if isinstance(v, str) else ""),
)
def test_nan_is_outside_every_declared_float_range(op, cls, param):
    with pytest.raises(ParamError, match=f"parameter '{param.name}'"):
        param.parse(float("nan"), op=op, field=param.name)


def test_defaults_lie_inside_their_ranges():
    for op, _, param in RANGED:
        if param.default in (REQUIRED, None, ()):
            continue
        param.parse(param.default, op=op, field=param.name)  # raises if outside
