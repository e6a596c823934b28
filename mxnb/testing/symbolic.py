"""Symbolic checks: a Symbol's forward and backward against expected values, and across devices.

Idea (MXNet: ``check_symbolic_forward`` / ``check_symbolic_backward`` /
``check_consistency`` in python/mxnet/test_utils.py): bind the symbol, run
it, compare with what the caller expects; :func:`check_consistency` binds one
Symbol on several contexts and dtypes (CPU, virtual GPUs, float32 / float64)
and checks that outputs and gradients agree with the most precise run.

Rule: comparisons go through :func:`~.compare.assert_almost_equal`.

State kept: none.

Example::

    >>> import numpy as np, mxnb as mx
    >>> from mxnb.testing import check_symbolic_forward
    >>> x = mx.sym.Variable('x')
    >>> check_symbolic_forward(x * 2, {'x': np.array([1.0, 2.0])}, [np.array([2.0, 4.0])])
    [array([2., 4.], dtype=float32)]
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ..base import ParamError
from .compare import _to_numpy, assert_almost_equal, default_atol, default_context, default_rtol
from .gradient import _as_named

__all__ = ["check_consistency", "check_symbolic_backward", "check_symbolic_forward"]


def _bind_symbol(sym: Any, location: Any, aux_states: Any, grad_req: Any, dtype: Any) -> Any:
    from ..context import cpu

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
    from .. import ndarray as nd
    from ..context import cpu

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
    from .. import ndarray as nd

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
