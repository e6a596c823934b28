"""Testing helpers: tolerant comparison, random arrays and numeric gradient checks.

Idea (MXNet: python/mxnet/test_utils.py): an operator is trustworthy when its
forward matches a reference and its backward matches *central differences*
of its forward.  :func:`check_numeric_gradient` does the second for any
registered operator (library ops, SimpleOps, ``Custom`` ops) and, once an
executor exists, for a whole Symbol: it projects the outputs onto a random
direction ``proj`` so that ``f(x) = sum(out * proj)`` is a scalar, asks the
op's backward for ``df/dx`` with ``proj`` as the head gradient, and compares it
with ``(f(x + eps/2) - f(x - eps/2)) / eps`` element by element, in float64.

:func:`check_consistency` binds one Symbol on several contexts and dtypes
(CPU, virtual GPUs, float32 / float64) and checks that outputs and gradients
agree with the most precise run.

Rule: comparisons report the *worst* element — its index, both values, the
error and the tolerance — so a failure says where to look.  Default
tolerances depend on the dtype, as MXNet's ``default_rtols`` / ``default_atols``.

State kept: none (a ``numpy.random`` generator is drawn per call from ``seed``).

Example::

    >>> import numpy as np
    >>> from mxnb.testing import assert_almost_equal, check_numeric_gradient
    >>> assert_almost_equal(np.array([1.0, 2.0]), np.array([1.0, 2.0 + 1e-9]))
    >>> from mxnb import operator as op
    >>> def square(src, env, ret, req, run_ctx):
    ...     op.assign(ret, req, src * src)
    >>> def square_grad(out_grad, x, env, in_grad, req, run_ctx):
    ...     op.assign(in_grad, req, 2 * x * out_grad)
    >>> _ = op.simple_op('doc_square').set_function(square).set_gradient(
    ...     square_grad, uses=op.GradUses.INPUT)
    >>> grads = check_numeric_gradient('doc_square', [np.array([0.5, -1.0, 2.0])])
    >>> sorted(grads)
    ['data']
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from .base import MXNBError, NotSupportedError, ParamError

__all__ = [
    "ToleranceError",
    "almost_equal",
    "assert_almost_equal",
    "assert_exception",
    "check_consistency",
    "check_numeric_gradient",
    "check_symbolic_backward",
    "check_symbolic_forward",
    "default_atol",
    "default_context",
    "default_rtol",
    "numeric_grad",
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
    with np.errstate(invalid="ignore", over="ignore"):
        error = np.abs(a64 - b64)
        allowed = atol + rtol * np.abs(b64)
        relative = error / np.where(allowed > 0, allowed, np.finfo(np.float64).tiny)
    nan_a, nan_b = np.isnan(a64), np.isnan(b64)
    both_nan = nan_a & nan_b
    if equal_nan:
        relative = np.where(both_nan, 0.0, relative)
    # A NaN on either side (not matched when equal_nan) is the worst possible element.
    relative = np.where(np.isnan(relative), np.inf, relative)
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
    from .context import current_context

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
    from . import ndarray as nd

    values = np.random.standard_normal(tuple(shape))
    return nd.array(values, ctx=ctx or default_context(), dtype=dtype or np.float32)


# ---------------------------------------------------------------------------
# numeric gradients
# ---------------------------------------------------------------------------


def numeric_grad(function: Callable[[], float], array: np.ndarray, eps: float = 1e-3) -> np.ndarray:
    """Central differences of the scalar ``function()`` with respect to ``array`` (in place).

    Each element is moved by ``+eps/2`` and ``-eps/2`` and restored;
    the estimate is ``(f(x + eps/2) - f(x - eps/2)) / eps`` (MXNet's ``numeric_grad``).
    """
    grad = np.zeros(array.shape, dtype=np.float64)
    flat = array.reshape(-1)  # a view: array is contiguous (we made it)
    grad_flat = grad.reshape(-1)
    for i in range(flat.size):
        old = flat[i]
        flat[i] = old + eps / 2
        f_plus = function()
        flat[i] = old - eps / 2
        f_minus = function()
        flat[i] = old
        grad_flat[i] = (f_plus - f_minus) / eps
    return grad


def _as_named(location: Any, names: Sequence[str], what: str, op: str) -> dict[str, np.ndarray]:
    """Turn a list (in argument order) or dict into ``name -> float64 numpy array``."""
    if location is None:
        return {}
    if isinstance(location, Mapping):
        unknown = [key for key in location if key not in names]
        if unknown:
            raise ParamError(
                f"check_numeric_gradient({op}): {what} {unknown} are not among {list(names)}"
            )
        return {key: _to_numpy(value) for key, value in location.items()}
    values = list(location)
    if len(values) != len(names):
        raise ParamError(
            f"check_numeric_gradient({op}): {len(values)} {what} given for {list(names)}"
        )
    return {name: _to_numpy(value) for name, value in zip(names, values)}


def _grad_node_names(grad_nodes: Any, arguments: Sequence[str], op: str) -> list[str]:
    if grad_nodes is None:
        return list(arguments)
    names = list(grad_nodes.keys()) if isinstance(grad_nodes, Mapping) else list(grad_nodes)
    unknown = [name for name in names if name not in arguments]
    if unknown:
        raise ParamError(
            f"check_numeric_gradient({op}): grad_nodes {unknown} are not arguments "
            f"{list(arguments)}"
        )
    return names


def check_numeric_gradient(
    op_or_sym: Any,
    location: Any,
    params: Mapping[str, Any] | None = None,
    aux_states: Any = None,
    numeric_eps: float = 1e-3,
    rtol: float = 1e-2,
    atol: float | None = None,
    grad_nodes: Any = None,
    is_train: bool = True,
    dtype: Any = np.float64,
    seed: int | None = 0,
) -> dict[str, np.ndarray]:
    """Check an operator's (or a Symbol's) backward against central differences of its forward.

    Parameters
    ----------
    op_or_sym : str, OperatorProperty or Symbol
        A registered operator name (run through :mod:`mxnb.operator.eager`,
        with ``params`` as its parameters), a ready property, or a Symbol
        (bound with ``simple_bind``).
    location : list or dict of arrays
        The inputs, in ``list_arguments()`` order or by name.
    aux_states : list or dict of arrays, optional
        Auxiliary states; restored before every forward.
    numeric_eps : float
        The central-difference step.
    rtol, atol : float
        Tolerances of the comparison (``atol`` default 1e-4: an absolute floor for
        gradients near zero).
    grad_nodes : list of str, optional
        The arguments to check (default: all).
    is_train : bool
        Forward in training mode.
    dtype : dtype
        The dtype everything is computed in (float64 keeps the differences exact).
    seed : int or None
        Seed of the random projection of the outputs.

    Returns
    -------
    dict
        ``name -> analytic gradient`` of every checked argument.
    """
    atol = 1e-4 if atol is None else atol
    rng = np.random.default_rng(seed)
    if _is_symbol(op_or_sym):
        runner = _SymbolRunner(op_or_sym, location, aux_states, is_train, dtype)
    else:
        runner = _OpRunner(op_or_sym, params or {}, location, aux_states, is_train, dtype)
    checked = _grad_node_names(grad_nodes, runner.arguments, runner.label)
    outputs = runner.forward()
    projections = [rng.standard_normal(out.shape).astype(dtype) for out in outputs]

    def objective() -> float:
        return float(sum(np.sum(out * proj) for out, proj in zip(runner.forward(), projections)))

    analytic = runner.backward(projections, checked)
    for name in checked:
        numeric = numeric_grad(objective, runner.inputs[name], numeric_eps)
        assert_almost_equal(
            numeric,
            analytic[name],
            rtol=rtol,
            atol=atol,
            names=(f"NUMERICAL_{name}", f"BACKWARD_{name}"),
        )
    return analytic


def _is_symbol(value: Any) -> bool:
    return hasattr(value, "list_arguments") and hasattr(value, "simple_bind")


class _OpRunner:
    """Runs one registered operator forward and backward through mxnb.operator.eager."""

    def __init__(
        self,
        op: Any,
        params: Mapping[str, Any],
        location: Any,
        aux_states: Any,
        is_train: bool,
        dtype: Any,
    ) -> None:
        from .operator import registry
        from .operator.base import OperatorProperty

        if isinstance(op, OperatorProperty):
            self.prop = op
        else:
            self.prop = registry.get(op).create_property(**dict(params))
        self.label = self.prop.op_name
        self.is_train = is_train
        self.arguments = self.prop.list_arguments()
        self.inputs = {
            name: np.ascontiguousarray(value, dtype=dtype)
            for name, value in _as_named(location, self.arguments, "inputs", self.label).items()
        }
        missing = [name for name in self.arguments if name not in self.inputs]
        if missing:
            raise ParamError(f"check_numeric_gradient({self.label}): no value for {missing}")
        aux_names = self.prop.list_auxiliary_states()
        self.aux = {
            name: np.ascontiguousarray(value, dtype=dtype)
            for name, value in _as_named(aux_states, aux_names, "aux states", self.label).items()
        }
        self.aux_names = aux_names
        if self.aux_names and set(self.aux) != set(self.aux_names):
            raise ParamError(
                f"check_numeric_gradient({self.label}): aux_states must give {aux_names}"
            )
        visible = self.prop.num_visible_outputs()
        num_outputs = self.prop.num_outputs()
        deps = self.prop.declare_backward_dependency(
            [("out_grad", i) for i in range(num_outputs)],
            [("in_data", i) for i in range(len(self.arguments))],
            [("out_data", i) for i in range(num_outputs)],
        )
        if not any(isinstance(d, tuple) and d[0] == "out_grad" for d in deps):
            raise NotSupportedError(
                f"check_numeric_gradient({self.label}): the op ignores its head gradient (a loss "
                f"layer), so its backward is not the derivative of its output; check it with "
                f"check_symbolic_backward against the expected gradient instead"
            )
        self.visible = visible

    def _run(self) -> tuple[list[np.ndarray], Any]:
        from .operator import eager

        inputs = [self.inputs[name] for name in self.arguments]
        aux = [self.aux[name].copy() for name in self.aux_names]
        outputs, _aux_out, state = eager.run_forward(self.prop, inputs, None, aux, self.is_train)
        return [np.asarray(out, dtype=np.float64) for out in outputs], state

    def forward(self) -> list[np.ndarray]:
        outputs, _ = self._run()
        return outputs[: self.visible]

    def backward(self, head_grads: list[np.ndarray], names: list[str]) -> dict[str, np.ndarray]:
        from .operator import eager

        outputs, state = self._run()
        heads = list(head_grads) + [np.zeros_like(out) for out in outputs[self.visible :]]
        in_grads = eager.run_backward(state, heads, is_train=self.is_train)
        return {
            name: np.asarray(grad, dtype=np.float64)
            for name, grad in zip(self.arguments, in_grads)
            if name in names
        }


class _SymbolRunner:
    """Runs a Symbol forward and backward through an executor from ``simple_bind``."""

    def __init__(
        self, sym: Any, location: Any, aux_states: Any, is_train: bool, dtype: Any
    ) -> None:
        from .context import cpu

        self.sym = sym
        self.label = "symbol"
        self.is_train = is_train
        self.arguments = sym.list_arguments()
        self.inputs = {
            name: np.ascontiguousarray(value, dtype=dtype)
            for name, value in _as_named(location, self.arguments, "inputs", "symbol").items()
        }
        aux_names = sym.list_auxiliary_states()
        self.aux = {
            name: np.ascontiguousarray(value, dtype=dtype)
            for name, value in _as_named(aux_states, aux_names, "aux states", "symbol").items()
        }
        shapes = {name: value.shape for name, value in self.inputs.items()}
        type_dict = {name: np.dtype(dtype) for name in self.inputs}
        self.executor = sym.simple_bind(cpu(), grad_req="write", type_dict=type_dict, **shapes)

    def _load(self) -> None:
        for name, value in self.inputs.items():
            self.executor.arg_dict[name][:] = value
        for name, value in self.aux.items():
            self.executor.aux_dict[name][:] = value

    def forward(self) -> list[np.ndarray]:
        self._load()
        self.executor.forward(is_train=self.is_train)
        return [out.asnumpy().astype(np.float64) for out in self.executor.outputs]

    def backward(self, head_grads: list[np.ndarray], names: list[str]) -> dict[str, np.ndarray]:
        from . import ndarray as nd

        self.forward()
        self.executor.backward([nd.array(head, dtype=head.dtype) for head in head_grads])
        return {name: self.executor.grad_dict[name].asnumpy() for name in names}


# ---------------------------------------------------------------------------
# symbolic forward / backward against expected values
# ---------------------------------------------------------------------------


def _bind_symbol(sym: Any, location: Any, aux_states: Any, grad_req: Any, dtype: Any) -> Any:
    from .context import cpu

    arguments = sym.list_arguments()
    inputs = _as_named(location, arguments, "inputs", "symbol")
    aux = _as_named(aux_states, sym.list_auxiliary_states(), "aux states", "symbol")
    shapes = {name: value.shape for name, value in inputs.items()}
    type_dict = {name: np.dtype(dtype) for name in inputs}
    executor = sym.simple_bind(cpu(), grad_req=grad_req, type_dict=type_dict, **shapes)
    for name, value in inputs.items():
        executor.arg_dict[name][:] = value
    for name, value in aux.items():
        executor.aux_dict[name][:] = value
    return executor


def check_symbolic_forward(
    sym: Any,
    location: Any,
    expected: Sequence[Any],
    rtol: float | None = None,
    atol: float | None = None,
    aux_states: Any = None,
    is_train: bool = False,
    dtype: Any = np.float32,
    equal_nan: bool = False,
) -> list[np.ndarray]:
    """Bind ``sym`` at ``location``, run forward and compare every output with ``expected``."""
    executor = _bind_symbol(sym, location, aux_states, "null", dtype)
    executor.forward(is_train=is_train)
    outputs = [out.asnumpy() for out in executor.outputs]
    for index, (out, want) in enumerate(zip(outputs, expected)):
        assert_almost_equal(
            out,
            want,
            rtol,
            atol,
            names=(f"FORWARD_{index}", f"EXPECTED_{index}"),
            equal_nan=equal_nan,
        )
    return outputs


def check_symbolic_backward(
    sym: Any,
    location: Any,
    out_grads: Sequence[Any],
    expected: Any,
    rtol: float | None = None,
    atol: float | None = None,
    aux_states: Any = None,
    grad_req: str = "write",
    is_train: bool = True,
    dtype: Any = np.float32,
    equal_nan: bool = False,
) -> dict[str, np.ndarray]:
    """Bind ``sym``, run forward and backward with ``out_grads``; compare gradients with ``expected``.

    ``expected`` is a list in argument order or a dict by argument name.  As in
    MXNet, ``grad_req`` (one string, a list in argument order or a dict) is
    checked per argument: the gradient arrays start with random values, 'write'
    must give ``expected``, 'add' the start value plus ``expected``, and 'null'
    must leave the start value untouched.
    """
    from . import ndarray as nd
    from .context import cpu

    arguments = sym.list_arguments()
    wanted = _as_named(expected, arguments, "expected gradients", "symbol")
    reqs = _grad_reqs(grad_req, arguments)
    inputs = _as_named(location, arguments, "inputs", "symbol")
    aux = _as_named(aux_states, sym.list_auxiliary_states(), "aux states", "symbol")
    start = {name: np.random.normal(size=value.shape) for name, value in inputs.items()}
    grad_arrays = {name: nd.array(value, dtype=dtype) for name, value in start.items()}
    executor = sym.bind(
        cpu(),
        {name: nd.array(value, dtype=dtype) for name, value in inputs.items()},
        args_grad=grad_arrays,
        grad_req=reqs,
        aux_states={name: nd.array(value, dtype=dtype) for name, value in aux.items()} or None,
    )
    executor.forward(is_train=is_train)
    executor.backward([nd.array(_to_numpy(g), dtype=dtype) for g in out_grads])
    grads = {name: grad_arrays[name].asnumpy() for name in wanted}
    for name, want in wanted.items():
        begun = start[name].astype(dtype)
        target = {"write": want, "add": begun + want, "null": begun}[reqs[name]]
        assert_almost_equal(
            grads[name],
            target,
            rtol,
            atol,
            names=(f"BACKWARD_{name}", f"EXPECTED_{name}"),
            equal_nan=equal_nan,
        )
    return grads


def _grad_reqs(grad_req: Any, arguments: Sequence[str]) -> dict[str, str]:
    """``grad_req`` as a dict by argument name (MXNet: a string, a list or a dict)."""
    if isinstance(grad_req, str):
        reqs = dict.fromkeys(arguments, grad_req)
    elif isinstance(grad_req, Mapping):
        reqs = {name: grad_req.get(name, "null") for name in arguments}
    else:
        reqs = dict(zip(arguments, grad_req))
    bad = {name: req for name, req in reqs.items() if req not in ("write", "add", "null")}
    if bad or len(reqs) != len(arguments):
        raise ParamError(
            f"check_symbolic_backward: grad_req must be 'write', 'add' or 'null' for each of "
            f"{list(arguments)}; got {grad_req!r}"
        )
    return reqs


# ---------------------------------------------------------------------------
# consistency across contexts and dtypes
# ---------------------------------------------------------------------------


def check_consistency(
    sym: Any,
    ctx_list: Sequence[Mapping[str, Any]],
    scale: float = 1.0,
    grad_req: Any = "write",
    arg_params: Mapping[str, Any] | None = None,
    aux_params: Mapping[str, Any] | None = None,
    rtol: float | None = None,
    atol: float | None = None,
    is_train: bool = True,
    seed: int = 0,
    equal_nan: bool = False,
) -> list[dict[str, np.ndarray]]:
    """Bind ``sym`` once per entry of ``ctx_list`` and check that all runs agree (MXNet: same name).

    ``sym`` may also be a list of Symbols with the same arguments, one per
    entry of ``ctx_list`` (two spellings of one network).  Each entry is a
    dict with ``ctx`` (a Context), the argument shapes by name and optionally
    ``type_dict`` and ``group2ctx``.  ``equal_nan`` counts NaNs in the same
    places as equal.  Every run gets the same random arguments
    (uniform in ``[-scale, scale]`` unless given in ``arg_params``), runs
    forward and, unless ``grad_req='null'``, backward with the same random
    head gradients.  The run in the most precise dtype is the reference; the
    others are compared with the tolerances of their own dtype.

    Returns
    -------
    list of dict
        Per run: ``output_<i>`` and ``grad_<name>`` as numpy arrays.
    """
    from . import ndarray as nd

    if not ctx_list:
        raise ParamError("check_consistency: ctx_list is empty")
    rng = np.random.default_rng(seed)
    runs = []
    symbols = list(sym) if isinstance(sym, (list, tuple)) else [sym] * len(ctx_list)
    if len(symbols) != len(ctx_list):
        raise ParamError(
            f"check_consistency: {len(symbols)} symbols for {len(ctx_list)} entries of ctx_list"
        )
    arguments = symbols[0].list_arguments()
    aux_names = symbols[0].list_auxiliary_states()
    for symbol, spec in zip(symbols, ctx_list):
        spec = dict(spec)
        ctx = spec.pop("ctx", None) or default_context()
        type_dict = spec.pop("type_dict", None) or {}
        extra = {"group2ctx": spec.pop("group2ctx")} if "group2ctx" in spec else {}
        executor = symbol.simple_bind(ctx, grad_req=grad_req, type_dict=type_dict, **extra, **spec)
        runs.append((executor, type_dict))
    reference_executor = runs[0][0]
    values = {}
    for name in arguments:
        shape = reference_executor.arg_dict[name].shape
        given = (arg_params or {}).get(name)
        values[name] = (
            _to_numpy(given).astype(np.float64)
            if given is not None
            else rng.uniform(-scale, scale, size=shape)
        )
    aux_values = {
        name: _to_numpy((aux_params or {})[name]).astype(np.float64)
        for name in aux_names
        if name in (aux_params or {})
    }
    results = []
    heads = None
    for executor, _ in runs:
        for name, value in values.items():
            executor.arg_dict[name][:] = value
        for name, value in aux_values.items():
            executor.aux_dict[name][:] = value
        executor.forward(is_train=is_train)
        outputs = [out.asnumpy() for out in executor.outputs]
        result = {f"output_{i}": out for i, out in enumerate(outputs)}
        if grad_req != "null":
            if heads is None:
                heads = [rng.standard_normal(out.shape) for out in outputs]
            executor.backward(
                [
                    nd.array(h, ctx=out.context, dtype=out.dtype)
                    for h, out in zip(heads, executor.outputs)
                ]
            )
            for name, grad in executor.grad_dict.items():
                if grad is not None:
                    result[f"grad_{name}"] = grad.asnumpy()
        results.append(result)
    precision = [
        max(np.finfo(a.dtype).resolution if a.dtype.kind == "f" else 0 for a in r.values())
        for r in results
    ]
    best = int(np.argmin(precision))
    for index, result in enumerate(results):
        if index == best:
            continue
        for key, value in result.items():
            expected = results[best][key]
            assert_almost_equal(
                value,
                expected.astype(value.dtype) if value.dtype != expected.dtype else expected,
                rtol=rtol if rtol is not None else default_rtol(value.dtype) * 10,
                atol=atol if atol is not None else default_atol(value.dtype),
                names=(
                    f"{key} of run {index} ({ctx_list[index].get('ctx', default_context())})",
                    f"run {best}",
                ),
                equal_nan=equal_nan,
            )
    return results
