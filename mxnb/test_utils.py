"""``mx.test_utils``: the helpers MXNet's tests are written with, under MXNet's names.

Idea: :mod:`mxnb.testing` is the home of mxnb's checks (tolerant comparison,
numeric gradients, consistency across contexts).  MXNet users and MXNet's
own unit tests import them as ``mx.test_utils`` with MXNet 1.x's signatures
(``check_numeric_gradient(sym, location, aux_states, numeric_eps, ...)``,
``ctx=`` everywhere); this module gives them those signatures, plus the few
helpers that only make sense as MXNet compatibility (``set_default_context``,
``simple_forward``, ``np_reduce``, ``environment``).

Rule: every wrapper forwards to :mod:`mxnb.testing`; nothing is checked twice
or differently here.

State kept: none (``set_default_context`` sets the thread's default context
in :mod:`mxnb.context`; ``environment`` restores ``os.environ`` on exit).

Example::

    >>> import numpy as np
    >>> import mxnb as mx
    >>> from mxnb.test_utils import simple_forward, np_reduce
    >>> x = mx.sym.Variable('x')
    >>> simple_forward(x * 2, x=np.array([1.0, 2.0])).tolist()
    [2.0, 4.0]
    >>> np_reduce(np.ones((2, 3)), axis=1, keepdims=True, numpy_reduce_func=np.sum).tolist()
    [[3.0], [3.0]]
"""

from __future__ import annotations

import contextlib
import functools
import logging
import os
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import numpy as np

from . import testing as _testing
from .context import set_default_context
from .sampler_checks import (
    chi_square_check,
    gen_buckets_probs_with_ppf,
    mean_check,
    var_check,
    verify_generator,
)
from .testing import (
    ToleranceError,
    assert_exception,
    check_consistency,
    default_atol,
    default_context,
    default_rtol,
    numeric_grad,
    rand_ndarray,
    rand_shape_2d,
    rand_shape_3d,
    rand_shape_nd,
    random_arrays,
    same,
)
from .util import use_np

# MXNet's test_utils has no __all__, so its tests' ``from mxnet.test_utils import *``
# also brings the modules it imports; they use ``sys``, ``os`` and ``logging`` unimported.
__all__ = [
    "EnvManager",
    "ToleranceError",
    "almost_equal",
    "almost_equal_ignore_nan",
    "assert_almost_equal",
    "assert_almost_equal_ignore_nan",
    "assert_exception",
    "check_consistency",
    "check_numeric_gradient",
    "check_symbolic_backward",
    "check_symbolic_forward",
    "chi_square_check",
    "default_atol",
    "default_context",
    "default_dtype",
    "default_rtol",
    "discard_stderr",
    "environment",
    "gen_buckets_probs_with_ppf",
    "logging",
    "mean_check",
    "np_reduce",
    "numeric_grad",
    "os",
    "rand_ndarray",
    "rand_shape_2d",
    "rand_shape_3d",
    "rand_shape_nd",
    "random_arrays",
    "random_sample",
    "retry",
    "same",
    "set_default_context",
    "simple_forward",
    "sys",
    "use_np",
    "var_check",
    "verify_generator",
]


def assert_almost_equal(
    a: Any,
    b: Any,
    rtol: float | None = None,
    atol: float | None = None,
    names: tuple[str, str] = ("a", "b"),
    equal_nan: bool = False,
    use_broadcast: bool = True,
    mismatches: tuple[int, int] = (10, 10),
) -> None:
    """MXNet's signature for :func:`mxnb.testing.assert_almost_equal`.

    As in MXNet, shapes that broadcast together are compared after
    broadcasting (``use_broadcast=True``: a 0-d numpy result against MXNet's
    shape-(1,) output); ``use_broadcast=False`` requires equal shapes.
    ``mismatches`` (how many bad elements MXNet prints) is accepted: mxnb
    reports the worst one.
    """
    left, right = _testing._to_numpy(a), _testing._to_numpy(b)
    if use_broadcast and left.shape != right.shape:
        try:
            left, right = np.broadcast_arrays(left, right)
        except ValueError:
            pass  # not broadcastable: the strict check below reports both shapes
    _testing.assert_almost_equal(left, right, rtol, atol, names, equal_nan)


def almost_equal(
    a: Any,
    b: Any,
    rtol: float | None = None,
    atol: float | None = None,
    equal_nan: bool = False,
    use_broadcast: bool = True,
) -> bool:
    """True when :func:`assert_almost_equal` would pass (MXNet: same name and signature)."""
    try:
        assert_almost_equal(a, b, rtol, atol, equal_nan=equal_nan, use_broadcast=use_broadcast)
    except ToleranceError:
        return False
    return True


def _without_nan(a: Any, b: Any) -> tuple[np.ndarray, np.ndarray]:
    """Copies of ``a`` and ``b`` with 0 wherever either one is NaN."""
    left = np.array(_testing._to_numpy(a), dtype=np.float64)
    right = np.array(_testing._to_numpy(b), dtype=np.float64)
    left, right = np.broadcast_arrays(left, right)
    left, right = left.copy(), right.copy()
    nan = np.isnan(left) | np.isnan(right)
    left[nan] = right[nan] = 0
    return left, right


def almost_equal_ignore_nan(
    a: Any, b: Any, rtol: float | None = None, atol: float | None = None
) -> bool:
    """:func:`almost_equal` over the positions where neither array is NaN."""
    return almost_equal(*_without_nan(a, b), rtol, atol)


def assert_almost_equal_ignore_nan(
    a: Any,
    b: Any,
    rtol: float | None = None,
    atol: float | None = None,
    names: tuple[str, str] = ("a", "b"),
) -> None:
    """:func:`assert_almost_equal` over the positions where neither array is NaN."""
    assert_almost_equal(*_without_nan(a, b), rtol, atol, names)


def retry(n: int) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Decorator: run a flaky statistical test up to ``n`` times; the last failure is raised."""

    def decorate(function: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(function)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            for attempt in range(n):
                try:
                    return function(*args, **kwargs)
                except AssertionError:
                    if attempt == n - 1:
                        raise
            return None

        return wrapper

    return decorate


def default_dtype() -> type:
    """The dtype MXNet's tests use when none is given: float32."""
    return np.float32


@contextlib.contextmanager
def _on(ctx: Any) -> Iterator[None]:
    """Run the block on ``ctx`` (MXNet's ``ctx=`` argument); the current context when None."""
    if ctx is None:
        yield
        return
    with ctx:
        yield


def check_numeric_gradient(
    sym: Any,
    location: Any,
    aux_states: Any = None,
    numeric_eps: float | None = None,
    rtol: float | None = None,
    atol: float | None = None,
    grad_nodes: Any = None,
    use_forward_train: bool = True,
    ctx: Any = None,
    grad_stype_dict: Mapping[str, str] | None = None,
    dtype: Any = np.float64,
) -> dict[str, np.ndarray]:
    """MXNet's signature for :func:`mxnb.testing.check_numeric_gradient` (sparse grads: no).

    ``grad_nodes`` as a dict ``name -> req``: a ``'null'`` node is not compared with
    central differences (MXNet only checks that its gradient array was left alone,
    which a ``'null'`` request guarantees)."""
    _dense_only(grad_stype_dict, "check_numeric_gradient")
    if isinstance(grad_nodes, Mapping):
        grad_nodes = [name for name, req in grad_nodes.items() if req != "null"]
    with _on(ctx):
        return _testing.check_numeric_gradient(
            sym,
            location,
            aux_states=aux_states,
            numeric_eps=1e-3 if numeric_eps is None else numeric_eps,
            rtol=1e-2 if rtol is None else rtol,
            atol=atol,
            grad_nodes=grad_nodes,
            is_train=use_forward_train,
            dtype=dtype,
        )


def check_symbolic_forward(
    sym: Any,
    location: Any,
    expected: Sequence[Any],
    rtol: float | None = None,
    atol: float | None = None,
    aux_states: Any = None,
    ctx: Any = None,
    equal_nan: bool = False,
    dtype: Any = np.float32,
) -> list[np.ndarray]:
    """MXNet's signature for :func:`mxnb.testing.check_symbolic_forward` (runs with is_train=False).

    ``expected`` may also be a dict keyed by output name, as in MXNet; ``dtype='asnumpy'``
    (MXNet: the inputs as given) computes in float32."""
    if isinstance(dtype, str) and dtype == "asnumpy":
        dtype = np.float32
    if isinstance(expected, Mapping):
        expected = [expected[name] for name in sym.list_outputs()]
    with _on(ctx):
        return _testing.check_symbolic_forward(
            sym, location, expected, rtol, atol, aux_states, dtype=dtype, equal_nan=equal_nan
        )


def check_symbolic_backward(
    sym: Any,
    location: Any,
    out_grads: Sequence[Any],
    expected: Any,
    rtol: float | None = None,
    atol: float | None = None,
    aux_states: Any = None,
    grad_req: Any = "write",
    ctx: Any = None,
    grad_stypes: Mapping[str, str] | None = None,
    equal_nan: bool = False,
    dtype: Any = np.float32,
) -> dict[str, np.ndarray]:
    """MXNet's signature for :func:`mxnb.testing.check_symbolic_backward`."""
    _dense_only(grad_stypes, "check_symbolic_backward")
    with _on(ctx):
        return _testing.check_symbolic_backward(
            sym,
            location,
            out_grads,
            expected,
            rtol,
            atol,
            aux_states,
            grad_req,
            dtype=dtype,
            equal_nan=equal_nan,
        )


def _dense_only(stypes: Mapping[str, str] | None, what: str) -> None:
    from .base import NotSupportedError

    sparse = {name: stype for name, stype in (stypes or {}).items() if stype != "default"}
    if sparse:
        raise NotSupportedError(
            f"{what}: sparse storage types {sparse} are not supported by mxnb; use dense arrays"
        )


def random_sample(population: Sequence[Any], k: int) -> list[Any]:
    """``k`` distinct elements of ``population`` in random order (numpy's global generator).

    MXNet's tests use it to pick sizes (``random_sample([4, 5, 6], 1)[0]``); seeding
    ``np.random`` makes it repeatable, which :func:`random.sample` would not be.
    """
    if not 0 <= k <= len(population):
        raise ValueError(
            f"random_sample: k={k} must be in [0, {len(population)}] (the population size)"
        )
    order = np.random.permutation(len(population))[:k]
    return [population[int(i)] for i in order]


def simple_forward(sym: Any, ctx: Any = None, is_train: bool = False, **inputs: Any) -> Any:
    """Bind ``sym`` to the named numpy ``inputs``, run forward; the output(s) as numpy."""
    from . import ndarray as nd

    with _on(ctx):
        args = {name: nd.array(value) for name, value in inputs.items()}
        executor = sym.bind(ctx or default_context(), args=args)
        outputs = [out.asnumpy() for out in executor.forward(is_train=is_train)]
    return outputs[0] if len(outputs) == 1 else outputs


def np_reduce(
    dat: np.ndarray,
    axis: int | Sequence[int] | None,
    keepdims: bool,
    numpy_reduce_func: Callable[..., np.ndarray],
) -> np.ndarray:
    """Reduce ``dat`` over ``axis`` one axis at a time with ``numpy_reduce_func(x, axis=i)``.

    The reference MXNet's reduce tests compare with: axes are reduced from the
    last to the first; ``keepdims`` puts back each reduced axis with length 1.
    """
    if axis is None:
        axes = list(range(dat.ndim))
    elif isinstance(axis, (int, np.integer)):
        axes = [int(axis)]
    else:
        axes = list(axis)
    axes = sorted({a % dat.ndim for a in axes}) if dat.ndim else []
    result = dat
    for a in reversed(axes):
        result = numpy_reduce_func(result, axis=a)
    if keepdims:
        kept = [1 if index in axes else dim for index, dim in enumerate(dat.shape)]
        result = np.reshape(result, kept)
    return result


@contextlib.contextmanager
def environment(*args: Any) -> Iterator[None]:
    """``with environment('NAME', 'value'):`` or ``environment({'A': '1', 'B': None})``.

    Sets (a value of None: removes) environment variables for the block and
    restores the previous values after it.
    """
    if len(args) == 2:
        settings = {args[0]: args[1]}
    elif len(args) == 1 and isinstance(args[0], Mapping):
        settings = dict(args[0])
    else:
        from .base import ParamError

        raise ParamError("environment: pass (name, value) or one {name: value} dict")
    previous = {name: os.environ.get(name) for name in settings}
    try:
        for name, value in settings.items():
            _set_env(name, value)
        yield
    finally:
        for name, value in previous.items():
            _set_env(name, value)


def _set_env(name: str, value: str | None) -> None:
    if value is None:
        os.environ.pop(name, None)
    else:
        os.environ[name] = str(value)


@contextlib.contextmanager
def discard_stderr() -> Iterator[None]:
    """Send file descriptor 2 (stderr, also of C code and subprocesses) to /dev/null for the block."""
    import sys

    sys.stderr.flush()
    saved = os.dup(2)
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, 2)
        yield
    finally:
        sys.stderr.flush()
        os.dup2(saved, 2)
        os.close(saved)
        os.close(devnull)


class EnvManager:
    """MXNet's older spelling of :func:`environment` for one variable: ``with EnvManager(k, v):``."""

    def __init__(self, key: str, value: str | None) -> None:
        self._scope = environment(key, value)

    def __enter__(self) -> EnvManager:  # noqa: PYI034
        self._scope.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self._scope.__exit__(None, None, None)
