"""Tolerant comparison and random test data.

Idea (MXNet: ``assert_almost_equal``, ``default_rtols`` / ``default_atols``,
``rand_ndarray`` in python/mxnet/test_utils.py): compare arrays with a
tolerance that depends on their dtype, and say where they differ.

Rule: a failure reports the *worst* element — its index, both values, the
error and the tolerance — so it says where to look.

State kept: none.

Example::

    >>> import numpy as np
    >>> from mxnb.testing import assert_almost_equal, default_rtol
    >>> assert_almost_equal(np.array([1.0, 2.0]), np.array([1.0, 2.0 + 1e-9]))
    >>> default_rtol(np.float16) > default_rtol(np.float64)
    True
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from ..base import MXNBError, NotSupportedError

__all__ = [
    "ToleranceError",
    "almost_equal",
    "assert_almost_equal",
    "assert_exception",
    "default_atol",
    "default_context",
    "default_rtol",
    "rand_ndarray",
    "rand_shape_2d",
    "rand_shape_3d",
    "rand_shape_nd",
    "random_arrays",
    "same",
]


class ToleranceError(MXNBError, AssertionError):
    """Two arrays differ by more than the tolerance (names the worst element)."""


# MXNet 1.9.1 test_utils: default_rtols() / default_atols()
_RTOLS = {
    np.dtype("float16"): 1e-2,
    np.dtype("float32"): 1e-4,
    np.dtype("float64"): 1e-5,
}
_ATOLS = {
    np.dtype("float16"): 1e-1,
    np.dtype("float32"): 1e-3,
    np.dtype("float64"): 1e-20,
}


def default_rtol(*dtypes: Any) -> float:
    """The relative tolerance MXNet uses for the least precise of ``dtypes`` (1e-5 if none)."""
    values = [_RTOLS.get(np.dtype(d), 0.0) for d in dtypes if d is not None]
    return max(values) if values else 1e-5


def default_atol(*dtypes: Any) -> float:
    """The absolute tolerance MXNet uses for the least precise of ``dtypes`` (1e-20 if none)."""
    values = [_ATOLS.get(np.dtype(d), 0.0) for d in dtypes if d is not None]
    return max(values) if values else 1e-20


def _to_numpy(array: Any) -> np.ndarray:
    """Return a numpy array for an NDArray, a numpy array, a scalar or a nested list."""
    if hasattr(array, "asnumpy"):
        return array.asnumpy()
    if hasattr(array, "get") and not isinstance(array, (np.ndarray, Mapping)):
        return np.asarray(array.get())  # a cupy array
    return np.asarray(array)


def same(a: Any, b: Any) -> bool:
    """True when ``a`` and ``b`` hold exactly the same values and shape (NDArray or numpy)."""
    return bool(np.array_equal(_to_numpy(a), _to_numpy(b)))


def assert_almost_equal(
    a: Any,
    b: Any,
    rtol: float | None = None,
    atol: float | None = None,
    names: tuple[str, str] = ("a", "b"),
    equal_nan: bool = False,
) -> None:
    """Check ``|a - b| <= atol + rtol * |b|`` elementwise; report the worst element on failure.

    Parameters
    ----------
    a, b : NDArray, numpy array or array-like
        The values to compare; shapes must be equal.
    rtol, atol : float, optional
        Tolerances; by default MXNet's per-dtype ones (float32: 1e-4 / 1e-3,
        float64: 1e-5 / 1e-20, float16: 1e-2 / 1e-1), for the less precise dtype.
    names : (str, str)
        What to call ``a`` and ``b`` in the message.
    equal_nan : bool
        Whether NaNs in the same places count as equal.

    Raises
    ------
    ToleranceError
        (an ``AssertionError``) naming the worst element's index, both values,
        the relative error and the tolerances.
    """
    a_np = _to_numpy(a)
    b_np = _to_numpy(b)
    rtol = default_rtol(a_np.dtype, b_np.dtype) if rtol is None else rtol
    atol = default_atol(a_np.dtype, b_np.dtype) if atol is None else atol
    if a_np.shape != b_np.shape:
        raise ToleranceError(
            f"{names[0]} has shape {a_np.shape} but {names[1]} has shape {b_np.shape}"
        )
    if a_np.size == 0:
        return
    a64 = a_np.astype(np.float64) if a_np.dtype.kind != "c" else a_np
    b64 = b_np.astype(np.float64) if b_np.dtype.kind != "c" else b_np
    error, allowed, relative = _relative_error(a64, b64, rtol, atol, equal_nan)
    bad = relative > 1.0
    if not bad.any():
        return
    worst = np.unravel_index(int(np.argmax(relative)), relative.shape)
    index = tuple(int(i) for i in worst)
    fraction = 100.0 * bad.sum() / bad.size
    raise ToleranceError(
        f"{names[0]} and {names[1]} differ: worst element at index {index}: "
        f"{names[0]}={a64[worst].item()!r}, {names[1]}={b64[worst].item()!r}, |diff|={error[worst]:.6g} "
        f"exceeds atol + rtol*|{names[1]}| = {allowed[worst]:.6g} (rtol={rtol:g}, atol={atol:g}); "
        f"{int(bad.sum())} of {bad.size} elements ({fraction:.3g}%) are out of tolerance"
    )


def _relative_error(
    a64: np.ndarray, b64: np.ndarray, rtol: float, atol: float, equal_nan: bool
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``|a - b|``, the allowed error, and their ratio (a NaN not matched on both sides: inf)."""
    with np.errstate(invalid="ignore", over="ignore"):
        error = np.abs(a64 - b64)
        allowed = atol + rtol * np.abs(b64)
        relative = error / np.where(allowed > 0, allowed, np.finfo(np.float64).tiny)
    if equal_nan:
        relative = np.where(np.isnan(a64) & np.isnan(b64), 0.0, relative)
    # A NaN on either side (not matched when equal_nan) is the worst possible element.
    return error, allowed, np.where(np.isnan(relative), np.inf, relative)


def almost_equal(
    a: Any, b: Any, rtol: float | None = None, atol: float | None = None, equal_nan: bool = False
) -> bool:
    """True when :func:`assert_almost_equal` would pass (MXNet: ``almost_equal``)."""
    try:
        assert_almost_equal(a, b, rtol, atol, equal_nan=equal_nan)
    except ToleranceError:
        return False
    return True


def assert_exception(
    function: Callable[..., Any], exception_type: type, *args: Any, **kwargs: Any
) -> None:
    """Check that ``function(*args, **kwargs)`` raises ``exception_type`` (MXNet: same name)."""
    try:
        function(*args, **kwargs)
    except exception_type:
        return
    raise ToleranceError(
        f"{getattr(function, '__name__', function)} did not raise {exception_type.__name__}"
    )


def random_arrays(*shapes: Sequence[int]) -> Any:
    """Standard-normal float32 numpy arrays, one per shape (a single one when one shape is given)."""
    arrays = [np.random.standard_normal(tuple(shape)).astype(np.float32) for shape in shapes]
    return arrays[0] if len(arrays) == 1 else arrays


def default_context() -> Any:
    """The context tests run on: ``mx.current_context()`` (MXNet: ``default_context``)."""
    from ..context import current_context

    return current_context()


def rand_shape_nd(num_dim: int, dim: int = 10) -> tuple[int, ...]:
    """A random shape of ``num_dim`` dimensions, each in ``[1, dim]``."""
    return tuple(int(d) for d in np.random.randint(1, dim + 1, size=num_dim))


def rand_shape_2d(dim0: int = 10, dim1: int = 10) -> tuple[int, int]:
    """A random 2-d shape with sides in ``[1, dim0]`` and ``[1, dim1]``."""
    return int(np.random.randint(1, dim0 + 1)), int(np.random.randint(1, dim1 + 1))


def rand_shape_3d(dim0: int = 10, dim1: int = 10, dim2: int = 10) -> tuple[int, int, int]:
    """A random 3-d shape with sides in ``[1, dim_i]``."""
    return (
        int(np.random.randint(1, dim0 + 1)),
        int(np.random.randint(1, dim1 + 1)),
        int(np.random.randint(1, dim2 + 1)),
    )


def rand_ndarray(
    shape: Sequence[int],
    stype: str = "default",
    density: float | None = None,
    dtype: Any = None,
    ctx: Any = None,
) -> Any:
    """A dense NDArray of standard-normal values (MXNet: ``rand_ndarray``; sparse is not supported)."""
    if stype != "default":
        raise NotSupportedError(
            f"rand_ndarray: stype={stype!r}; mxnb has dense arrays only, use stype='default'"
        )
    from .. import ndarray as nd

    values = np.random.standard_normal(tuple(shape))
    return nd.array(values, ctx=ctx or default_context(), dtype=dtype or np.float32)
