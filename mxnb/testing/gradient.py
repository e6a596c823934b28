"""Numeric gradient checks: an operator's or a symbol's backward against central differences.

Idea (MXNet: ``check_numeric_gradient`` in python/mxnet/test_utils.py): project
the outputs onto a random direction ``proj`` so that ``f(x) = sum(out * proj)``
is a scalar, ask the backward for ``df/dx`` with ``proj`` as the head
gradient, and compare it with ``(f(x + eps/2) - f(x - eps/2)) / eps`` element
by element, in float64.  Any registered operator (library ops, SimpleOps,
``Custom`` ops) runs through :class:`_OpRunner`; a Symbol through an executor
(:class:`_SymbolRunner`).

Rule: the comparison is :func:`~.compare.assert_almost_equal`'s: the worst
element is reported.

State kept: none (a ``numpy.random`` generator is drawn per call from ``seed``).

Example::

    >>> import numpy as np
    >>> from mxnb.testing import check_numeric_gradient
    >>> sorted(check_numeric_gradient('tanh', [np.array([0.5, -1.0, 2.0])]))
    ['data']
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from ..base import NotSupportedError, ParamError
from .compare import _to_numpy, assert_almost_equal

__all__ = ["check_numeric_gradient", "numeric_grad"]


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
    projections = [rng.standard_normal(out.shape).astype(dtype) for out in runner.forward()]
    analytic = runner.backward(projections, checked)
    _compare_with_differences(runner, projections, analytic, checked, numeric_eps, rtol, atol)
    return analytic


def _compare_with_differences(
    runner: Any,
    projections: list[np.ndarray],
    analytic: dict[str, np.ndarray],
    checked: list[str],
    eps: float,
    rtol: float,
    atol: float,
) -> None:
    """Each checked gradient against central differences of ``f(x) = sum(out * proj)``."""

    def objective() -> float:
        return float(sum(np.sum(out * proj) for out, proj in zip(runner.forward(), projections)))

    for name in checked:
        numeric = numeric_grad(objective, runner.inputs[name], eps)
        assert_almost_equal(
            numeric, analytic[name], rtol=rtol, atol=atol,
            names=(f"NUMERICAL_{name}", f"BACKWARD_{name}"),
        )  # fmt: skip


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
        from ..operator import registry
        from ..operator.base import OperatorProperty

        if isinstance(op, OperatorProperty):
            self.prop = op
        else:
            self.prop = registry.get(op).create_property(**dict(params))
        self.label = self.prop.op_name
        self.is_train = is_train
        self.arguments = self.prop.list_arguments()
        self.inputs = {
            name: np.array(value, dtype=dtype, order="C")  # a copy: numeric_grad moves it in place
            for name, value in _as_named(location, self.arguments, "inputs", self.label).items()
        }
        missing = [name for name in self.arguments if name not in self.inputs]
        if missing:
            raise ParamError(f"check_numeric_gradient({self.label}): no value for {missing}")
        aux_names = self.prop.list_auxiliary_states()
        self.aux = {
            name: np.array(value, dtype=dtype, order="C")  # a copy: numeric_grad moves it in place
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
        from ..operator import eager

        inputs = [self.inputs[name] for name in self.arguments]
        aux = [self.aux[name].copy() for name in self.aux_names]
        outputs, _aux_out, state = eager.run_forward(self.prop, inputs, None, aux, self.is_train)
        return [np.asarray(out, dtype=np.float64) for out in outputs], state

    def forward(self) -> list[np.ndarray]:
        outputs, _ = self._run()
        return outputs[: self.visible]

    def backward(self, head_grads: list[np.ndarray], names: list[str]) -> dict[str, np.ndarray]:
        from ..operator import eager

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
        from ..context import cpu

        self.sym = sym
        self.label = "symbol"
        self.is_train = is_train
        self.arguments = sym.list_arguments()
        self.inputs = {
            name: np.array(value, dtype=dtype, order="C")  # a copy: numeric_grad moves it in place
            for name, value in _as_named(location, self.arguments, "inputs", "symbol").items()
        }
        aux_names = sym.list_auxiliary_states()
        self.aux = {
            name: np.array(value, dtype=dtype, order="C")  # a copy: numeric_grad moves it in place
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
        from .. import ndarray as nd

        self.forward()
        self.executor.backward([nd.array(head, dtype=head.dtype) for head in head_grads])
        return {name: self.executor.grad_dict[name].asnumpy() for name in names}
