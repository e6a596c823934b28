"""The fused-map language (mxnb.operator.statements): random statements, every form one value.

A statement is run three ways on a CPU: the plain path (``evaluate``, computed into the
outputs), the Python form (``python_source``, small outputs) and the CUDA C text read back by
FakeCupy (the kernel a GPU would compile).  For random expressions over arrays, broadcast
arrays, numpy scalars, Python numbers and integer literals, with an output over an input or
not, all three give the same values bit for bit, NaN for NaN.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from mxnb.operator.fused import FusedMap
from mxnb.testing.fake_cupy import FakeCupy

NAMES = ("a", "b", "c")


def _expressions(reads: tuple[str, ...]) -> st.SearchStrategy[str]:
    """Expressions of the language over ``reads`` and small integer literals."""
    leaves = st.sampled_from(reads) | st.integers(1, 3).map(str)

    def extend(inner: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
        binary = st.tuples(inner, st.sampled_from("+-*/"), inner).map(
            lambda t: f"({t[0]} {t[1]} {t[2]})"
        )
        negative = inner.map(lambda e: f"-({e})")
        # a function's first argument reads the array a (the language's rule)
        function = st.tuples(
            st.sampled_from(["sqrt", "exp", "log", "tanh", "abs", "sign"]), inner
        ).map(lambda t: f"{t[0]}(a * {t[1]})")
        clipped = st.tuples(inner, st.sampled_from(reads)).map(
            lambda t: f"clip(a + {t[0]}, -{t[1]}, {t[1]})"
        )
        maxed = st.tuples(inner, inner).map(lambda t: f"maximum(a * {t[0]}, {t[1]})")
        return binary | negative | function | clipped | maxed

    return st.recursive(leaves, extend, max_leaves=6)


@st.composite
def _programs(draw: st.DrawFn) -> tuple[FusedMap, list, bool]:
    """A map ``y = E1; z = E2`` (E2 may read y), its arguments, and whether y is over ``a``."""
    first = draw(_expressions(NAMES))
    second = draw(_expressions((*NAMES, "y")))
    try:
        fused = FusedMap("random", NAMES, ("y", "z"), f"y = {first}\nz = {second}")
    except ValueError:  # a literal on both sides of an operator, refused by design
        assume(False)
    rng = np.random.default_rng(draw(st.integers(0, 2**16)))
    a = (rng.standard_normal((3, 4)) * 2).astype(np.float32)
    b = draw(st.sampled_from(["array", "row", "scalar"]))
    b = {
        "array": lambda: (rng.standard_normal((3, 4)) * 2).astype(np.float32),
        "row": lambda: (rng.standard_normal((1, 4)) * 2).astype(np.float32),  # broadcasts
        "scalar": lambda: np.float32(rng.standard_normal()),
    }[b]()
    c = draw(st.sampled_from([0.5, 1.75, np.float32(0.25), np.float32(3.0)]))
    return fused, [a, b, c], draw(st.booleans())


def _run(form, fused: FusedMap, args: list, over: bool) -> list:
    """``form(args, outs)``; the first output over a copy of ``a`` when ``over``."""
    args = [arg.copy() if isinstance(arg, np.ndarray) else arg for arg in args]
    outs = [args[0] if over else np.full((3, 4), 7.0, np.float32), np.full((3, 4), 7.0, np.float32)]
    form(args, outs)
    return outs


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_programs())
def test_the_plain_path_the_python_form_and_the_c_text_agree_bit_for_bit(program):
    """Random statements: the three forms agree bit for bit, NaN for NaN."""
    fused, args, over = program
    kernel = fused.compile(FakeCupy())  # the C text, read back as Python by the stand-in
    forms = {
        "plain path": lambda a, o: fused.evaluate(np, *a, out=o),
        "python form": lambda a, o: fused._python(np, *a, *o),
        "C text": lambda a, o: kernel(*a, *o),
    }
    with np.errstate(all="ignore"):
        results = {name: _run(form, fused, args, over) for name, form in forms.items()}
    expected = results.pop("plain path")
    for name, outs in results.items():
        for mine, theirs, output in zip(outs, expected, fused.outputs):
            np.testing.assert_array_equal(
                mine, theirs, err_msg=f"{name}, output {output}:\n{fused.python_source}"
            )


def test_a_function_of_a_python_number_alone_is_refused_by_the_plain_path():
    """``sqrt(eps)`` of a Python number: numpy computes it in double, C in T, so the plain path
    says to pass a numpy scalar of the arrays' dtype (which every form computes in T)."""
    fused = FusedMap("eps", ("x", "eps"), ("y",), "y = x + x * sqrt(eps)")
    x = np.ones((2, 3), np.float32)
    for run in (fused.evaluate, fused):  # the plain path; a call (small: the Python form's)
        with pytest.raises(ValueError, match=r"sqrt\(\) of a Python number alone.*numpy scalar"):
            run(np, x, 1e-3, out=[np.empty_like(x)])
    (y,) = fused.evaluate(np, x, np.float32(1e-3), out=[np.empty_like(x)])
    np.testing.assert_array_equal(y, x + x * np.sqrt(np.float32(1e-3)))


def test_the_c_maximum_is_numpys_on_signed_zeros_nans_and_infinities():
    """PREAMBLE's ``maximum`` is ``(a > b || a != a) ? a : b``: on every pair of special values it
    gives numpy's bits (b when equal, so a ReLU of -0.0 is 0.0; a NaN of either side)."""
    from mxnb.operator.statements import PREAMBLE

    assert "(a > T(b) || a != a) ? a : T(b)" in PREAMBLE["maximum"]
    special = np.array([-np.inf, -1.5, -0.0, 0.0, 2.0, np.inf, np.nan], np.float32)
    a, b = np.meshgrid(special, special)
    with np.errstate(invalid="ignore"):
        as_c = np.where((a > b) | (a != a), a, b)
    expected = np.maximum(a, b)
    np.testing.assert_array_equal(np.signbit(as_c), np.signbit(expected))
    np.testing.assert_array_equal(as_c, expected)
