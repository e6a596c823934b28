"""``mx.nd.<Name>``: one Python function per registered operator, generated on demand.

Idea (MXNet: python/mxnet/ndarray/register.py): the functions of ``mx.nd``
are not written by hand; they are made from the operator registry, so an op
registered later — even in a notebook cell — is callable at once, with a
docstring generated from its Params (``registry.make_docstring``).  Calling
one sorts its arguments and hands them to :func:`mxnb.ndarray.invoke`.

Rules for the arguments of ``f(*arrays, out=None, name=None, ctx=None, **params)``:
    * positional NDArrays fill the op's arguments (``list_arguments()``), then
      its auxiliary states (``list_auxiliary_states()``); a single list of
      NDArrays works too (``mx.nd.add_n([a, b])``);
    * NDArrays may be given by name (``data=x``, ``moving_mean=m``);
    * positional non-arrays after the arrays fill parameters in declaration order;
    * a keyword that is not a parameter and is ``None`` is an input not given;
    * for ops that count their inputs (``key_var_num_args``: ``num_args`` of
      Concat / add_n) the count is set from the arrays given;
    * ``out=`` receives the visible outputs; the result is an NDArray, or a
      list for ops with several visible outputs (SliceChannel).

State kept:
    _functions   op name -> generated function (rebuilt when the op is registered again)

Example::

    >>> import mxnb as mx
    >>> mx.nd.elemwise_add(mx.nd.ones(2), mx.nd.ones(2)).asnumpy().tolist()
    [2.0, 2.0]
    >>> 'Parameters' in mx.nd.sum.__doc__
    True
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..base import MXNBError
from ..operator import registry
from ..operator.base import OperatorProperty
from .invoke import _get_prop, _invoke_prop
from .ndarray import NDArray

__all__ = ["make_op_function"]

_functions: dict[str, Callable[..., Any]] = {}


def make_op_function(op_name: str) -> Callable[..., Any]:
    """Return ``mx.nd.<op_name>``: ``f(*arrays, out=None, name=None, ctx=None, **params)``.

    Positional NDArrays fill the op's arguments then its auxiliary states;
    NDArrays may also be given by argument name.  Positional non-arrays after
    the arrays fill parameters in declaration order.  For ops counting their
    inputs (``num_args`` of Concat / add_n) the count is set from the arrays.
    """
    function = _functions.get(op_name)
    info = registry.get(op_name)
    if function is not None and function._op_info is info:  # type: ignore[attr-defined]
        return function
    prop_cls = info.prop_cls
    key_var_num_args = prop_cls.key_var_num_args

    def op_function(
        *args: Any, out: Any = None, name: str | None = None, ctx: Any = None, **kwargs: Any
    ) -> Any:
        arrays, index = _leading_arrays(args)
        extra = args[index:]
        if any(isinstance(value, NDArray) for value in extra):
            raise MXNBError(f"{op_name}: NDArray arguments must come before parameters")
        info.positional_params(extra, kwargs)
        named_arrays = {key: value for key, value in kwargs.items() if isinstance(value, NDArray)}
        params = {
            key: value
            for key, value in kwargs.items()
            if not isinstance(value, NDArray) and (value is not None or key in info.prop_cls.params)
        }  # MXNet: an input given as None is an input not given (sequence_length=None)
        if key_var_num_args and key_var_num_args not in params:
            params[key_var_num_args] = len(arrays) + len(named_arrays)
        prop, prop_key = _get_prop(op_name, params)
        if named_arrays:
            arrays = _order_arrays(prop, arrays, named_arrays)
        arg_count = len(prop.list_arguments())
        inputs, aux = arrays[:arg_count], arrays[arg_count:]
        if len(inputs) < arg_count:
            missing = prop.list_arguments()[len(inputs) :]
            raise MXNBError(f"{op_name}: missing input array(s) {', '.join(missing)}")
        plan, outputs = _invoke_prop(prop, prop_key, inputs, out, aux, ctx, name)
        if out is not None:
            return out
        if plan.num_visible == 1:
            return outputs[0]
        return outputs[: plan.num_visible]

    op_function._op_info = info  # type: ignore[attr-defined]
    op_function.__name__ = op_name
    op_function.__qualname__ = op_name
    try:
        op_function.__doc__ = registry.make_docstring(op_name)
    except Exception:  # noqa: BLE001 - a docstring must never break the op
        op_function.__doc__ = info.doc
    _functions[op_name] = op_function
    return op_function


def _leading_arrays(args: tuple) -> tuple[list[NDArray], int]:
    """The NDArrays at the front of ``args`` (or one list of them first), and where they end."""
    arrays: list[NDArray] = []
    index = 0
    while index < len(args) and isinstance(args[index], NDArray):
        arrays.append(args[index])
        index += 1
    if (
        index == 0
        and args
        and isinstance(args[0], (list, tuple))
        and args[0]
        and all(isinstance(item, NDArray) for item in args[0])
    ):
        arrays = list(args[0])
        index = 1
    return arrays, index


def _order_arrays(
    prop: OperatorProperty, positional: list[NDArray], named: dict[str, NDArray]
) -> list[NDArray]:
    names = prop.list_arguments() + prop.list_auxiliary_states()
    slots: list[NDArray | None] = list(positional) + [None] * max(0, len(names) - len(positional))
    for key, value in named.items():
        if key not in names:
            raise MXNBError(
                f"{prop.op_name}: unknown input {key!r}; its inputs are {', '.join(names)}"
            )
        position = names.index(key)
        if slots[position] is not None:
            raise MXNBError(f"{prop.op_name}: input {key!r} given twice")
        slots[position] = value
    while slots and slots[-1] is None:
        slots.pop()
    missing = [names[position] for position, value in enumerate(slots) if value is None]
    if missing:
        raise MXNBError(f"{prop.op_name}: missing input array(s) {', '.join(missing)}")
    return slots  # type: ignore[return-value]
