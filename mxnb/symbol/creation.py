"""Making nodes: variables, operators applied to symbols, implicit variables, groups, arithmetic.

Idea (MXNet: ``mx.sym.Variable``, the generated ``mx.sym.<Op>`` functions and
nnvm's ``Symbol::Compose``): calling an operator creates one node.  Its
parameters are parsed by the operator's property (errors name the op and the
parameter); its inputs are the symbols given, by position in
``list_arguments()`` (then aux) order or by name; every input not given
becomes an *implicit variable* ``{name}_{argument}`` carrying the node's
attributes, exactly as nnvm copies them.  A node without ``name=`` is named
by the current :class:`~mxnb.symbol.scope.NameManager` from its lower-cased
op name; attributes come from ``attr=`` and the current
:class:`~mxnb.symbol.scope.AttrScope`.

Rule: arithmetic goes through registered operators and is named as MXNet
names it — ``a + b`` is an ``elemwise_add`` node called ``_plus0``,
``a * 2`` a ``_mul_scalar`` node called ``_mulscalar0``.

State kept: none (names and attributes come from the scopes).

Example::

    >>> import mxnb as mx
    >>> with mx.sym.NameManager():
    ...     net = mx.sym.Variable('x') * 2 + 1
    >>> net.get_internals().list_outputs()
    ['x', '_mulscalar0_output', '_plusscalar0_output']
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ..base import DTYPE_TO_FLAG, GraphError, NotSupportedError, ParamError, as_shape, np_dtype
from ..operator import registry
from ..operator.param import REQUIRED
from .graph import Node, NodeEntry
from .scope import AttrScope, NameManager, hide_key
from .symbol import Symbol, _single_entry, param_string

__all__ = ["VAR_ATTRS_ON_COMPOSE", "Group", "Variable", "create", "set_input_var_attrs", "var"]


def Variable(
    name: str,
    attr: dict[str, str] | None = None,
    shape: Sequence[int] | None = None,
    lr_mult: float | None = None,
    wd_mult: float | None = None,
    dtype: Any = None,
    init: Any = None,
    stype: str | None = None,
    **kwargs: Any,
) -> Symbol:
    """A variable: an input the user (or the executor) supplies (MXNet: ``mx.sym.Variable``).

    Parameters
    ----------
    name : str
        The variable's name (not changed by name scopes, as in MXNet).
    attr : dict, optional
        Extra string attributes.
    shape, dtype : optional
        Stored as ``__shape__`` / ``__dtype__`` and used by inference.
    lr_mult, wd_mult : float, optional
        Stored as ``__lr_mult__`` / ``__wd_mult__``.
    init : str or initializer, optional
        Stored as ``__init__`` (an initializer's ``dumps()``).
    **kwargs
        Further attributes, which must look like ``__name__``.

    Example: ``mx.sym.Variable('data', shape=(32, 784))``.
    """
    if not isinstance(name, str):
        raise TypeError(f"Variable: name must be a string, got {type(name).__name__}")
    attrs = AttrScope.current.get(attr)
    if shape is not None:
        attrs["__shape__"] = param_string(as_shape(_np_unknown(shape), f"Variable {name!r}: shape"))
    if lr_mult is not None:
        attrs["__lr_mult__"] = str(lr_mult)
    if wd_mult is not None:
        attrs["__wd_mult__"] = str(wd_mult)
    if dtype is not None:
        attrs["__dtype__"] = str(DTYPE_TO_FLAG[np_dtype(dtype)])
    if init is not None:
        attrs["__init__"] = init if isinstance(init, str) else init.dumps()
    if stype is not None:
        storage_types = {"default": 0, "row_sparse": 1, "csr": 2}
        if stype not in storage_types:
            raise ParamError(f"Variable {name!r}: stype must be one of {', '.join(storage_types)}")
        attrs["__storage_type__"] = str(storage_types[stype])
    for key, value in kwargs.items():
        if not (key.startswith("__") and key.endswith("__")):
            raise ValueError(
                f"Variable {name!r}: attribute {key!r} is not supported; extra attributes must "
                f"start and end with double underscores, e.g. __{key}__"
            )
        attrs[key] = str(value)
    return Symbol([NodeEntry(Node(None, name, [], attrs), 0)])


var = Variable


def _np_unknown(shape: Any) -> Any:
    """Under ``np_shape`` MXNet writes an unknown dimension as -1; mxnb keeps it as 0."""
    from ..util import is_np_shape

    if is_np_shape() and not isinstance(shape, int) and shape is not None:
        return tuple(0 if dim == -1 else dim for dim in shape)
    return shape


def Group(symbols: Sequence[Symbol]) -> Symbol:
    """A symbol whose outputs are the outputs of ``symbols``, in order (MXNet: ``mx.sym.Group``)."""
    symbols = list(symbols)
    if not symbols or not all(isinstance(symbol, Symbol) for symbol in symbols):
        raise TypeError("Group expects a non-empty list of Symbols")
    return Symbol([entry for symbol in symbols for entry in symbol._outputs])


def _split_kwargs(
    info: registry.OpInfo, kwargs: dict[str, Any]
) -> tuple[dict[str, Symbol], dict[str, Any], dict[str, str]]:
    """Separate symbol inputs, operator parameters and attributes among ``kwargs``."""
    inputs: dict[str, Symbol] = {}
    params: dict[str, Any] = {}
    attrs: dict[str, str] = {}
    declared = info.prop_cls.params
    for key, value in kwargs.items():
        if isinstance(value, Symbol):
            inputs[key] = value
        elif value is None and key not in declared:
            continue  # MXNet: an input given as None is an input not given (sequence_length=None)
        elif key not in declared and (hide_key(key) != key or key.startswith("__")):
            attrs[hide_key(key)] = str(value)
        elif value is None and key in declared and declared[key].default is not REQUIRED:
            continue  # None means "the default", as MXNet's generated signatures treat _Null
        else:
            params[key] = value
    return inputs, params, attrs


def create(op_name: str, *args: Any, hint: str | None = None, **kwargs: Any) -> Symbol:
    """Apply the registered operator ``op_name`` to input symbols (``mx.sym.<op_name>``).

    Positional arguments are input symbols in ``list_arguments()`` order (then
    aux states), and after them parameter values in declaration order; keyword arguments that are symbols are inputs by name; other
    keyword arguments are parameters, except ``name`` (the node's name; an
    automatic ``{hint}{n}`` otherwise) and ``attr`` (string attributes).
    Inputs not given become variables named ``{name}_{argument}``.
    """
    info = registry.get(op_name)
    count = 0
    while count < len(args) and (args[count] is None or isinstance(args[count], Symbol)):
        count += 1
    if count < len(args):  # MXNet: positional values after the inputs are parameters
        info.positional_params(args[count:], kwargs)
        args = args[:count]
    name = kwargs.pop("name", None)
    attr = kwargs.pop("attr", None)
    if kwargs.pop("out", None) is not None:
        raise NotSupportedError(f"{op_name}: out= is for mx.nd; a symbol has no output array")
    inputs_by_name, params, extra_attrs = _split_kwargs(info, kwargs)
    prop_cls = info.prop_cls
    count_key = prop_cls.key_var_num_args
    if count_key and count_key not in params and count_key in prop_cls.params:
        params[count_key] = len(args)
    prop = _parse(prop_cls, op_name, name, params)
    node_name = NameManager.current.get(name, hint or op_name.lower())
    attrs = AttrScope.current.get(attr)
    attrs.update(extra_attrs)
    arg_names = list(prop.list_arguments())
    input_slots = arg_names + list(prop.list_auxiliary_states())
    where = f"{prop.op_name} '{node_name}'"
    while args and args[-1] is None:  # MXNet: a None input is one not given (bias=None)
        args = args[:-1]
    if len(args) > len(input_slots):
        raise GraphError(
            f"{where}: {len(args)} positional inputs but the operator takes "
            f"{len(input_slots)} ({', '.join(input_slots)})"
        )
    unknown = [key for key in inputs_by_name if key not in input_slots]
    if unknown:
        raise GraphError(
            f"{where}: {', '.join(map(repr, unknown))} "
            f"{'is not an input' if len(unknown) == 1 else 'are not inputs'}; "
            f"its inputs are: {', '.join(input_slots)}"
        )
    param_strings = {key: param_string(value) for key, value in params.items()}
    inherited = {**param_strings, **attrs}  # nnvm copies the node's attrs onto implicit variables
    entries = _input_entries(input_slots, args, inputs_by_name, where, node_name, inherited)
    node = Node(prop, node_name, entries, attrs, param_strings)
    set_input_var_attrs(node)
    return Symbol([NodeEntry(node, index) for index in range(prop.num_visible_outputs())])


def _parse(prop_cls: type, op_name: str, name: str | None, params: dict[str, Any]) -> Any:
    """The operator's property from ``params``; an error names the op and the node."""
    try:
        return prop_cls(**params)
    except ParamError as exc:
        message = str(exc)
        where = f"{op_name} '{name}'" if name else op_name
        prefix = f"{prop_cls.type_string or op_name}:"  # type: ignore[attr-defined]
        if message.startswith(prefix):
            message = message[len(prefix) :].lstrip()
        raise ParamError(f"{where}: {message}") from exc


def _input_entries(
    input_slots: list[str],
    args: tuple,
    inputs_by_name: dict[str, Any],
    where: str,
    node_name: str,
    inherited: dict[str, str],
) -> list[NodeEntry]:
    """An entry per input slot: given by position or by name, else a new ``{node}_{slot}`` variable."""
    entries: list[NodeEntry] = []
    for position, slot in enumerate(input_slots):
        if position < len(args) and args[position] is not None:
            if slot in inputs_by_name:
                raise GraphError(f"{where}: input {slot!r} given both by position and by keyword")
            entries.append(_single_entry(args[position], f"{where} input {slot!r}"))
        elif slot in inputs_by_name:
            entries.append(_single_entry(inputs_by_name[slot], f"{where} input {slot!r}"))
        else:
            variable = Node(None, f"{node_name}_{slot}", [], dict(inherited))
            entries.append(NodeEntry(variable, 0))
    return entries


#: Attributes an operator gives the variables in its input slots when composed (MXNet:
#: ``FSetInputVarAttrOnCompose``; BatchNorm initialises its moving mean to 0 and variance to 1).
#: A property may also define ``input_var_attrs(index) -> dict`` itself.
VAR_ATTRS_ON_COMPOSE: dict[str, dict[int, dict[str, str]]] = {
    "BatchNorm": {3: {"__init__": '["zero", {}]'}, 4: {"__init__": '["one", {}]'}},
}


def set_input_var_attrs(node: Node) -> None:
    """Give input variables the attributes the op asks for, unless they set ``__init__``."""
    assert node.op is not None
    hook = getattr(node.op, "input_var_attrs", None)
    table = VAR_ATTRS_ON_COMPOSE.get(node.op.type_string, {})
    if hook is None and not table:
        return
    for index, entry in enumerate(node.inputs):
        if entry.node.op is not None or "__init__" in entry.node.attrs:
            continue
        extra = hook(index) if hook is not None else table.get(index)
        if extra:
            entry.node.attrs.update(extra)


# MXNet's Python names of the arithmetic functions -> registered op names to look for.
_ARITH_OPS: dict[str, tuple[str, ...]] = {
    "_Plus": ("_Plus", "elemwise_add", "_plus", "_add"),
    "_Minus": ("_Minus", "elemwise_sub", "_minus", "_sub"),
    "_Mul": ("_Mul", "elemwise_mul", "_mul"),
    "_Div": ("_Div", "elemwise_div", "_div"),
    "_Mod": ("_Mod", "_mod"),
    "_Power": ("_Power", "_power"),
    "_PlusScalar": ("_PlusScalar", "_plus_scalar"),
    "_MinusScalar": ("_MinusScalar", "_minus_scalar"),
    "_RMinusScalar": ("_RMinusScalar", "_rminus_scalar"),
    "_MulScalar": ("_MulScalar", "_mul_scalar"),
    "_DivScalar": ("_DivScalar", "_div_scalar"),
    "_RDivScalar": ("_RDivScalar", "_rdiv_scalar"),
    "_ModScalar": ("_ModScalar", "_mod_scalar"),
    "_RModScalar": ("_RModScalar", "_rmod_scalar"),
    "_PowerScalar": ("_PowerScalar", "_power_scalar"),
    "_RPowerScalar": ("_RPowerScalar", "_rpower_scalar"),
}


def _arith_op(function: str) -> str:
    for candidate in _ARITH_OPS.get(function, (function,)):
        if registry.find(candidate) is not None:
            return candidate
    raise NotSupportedError(
        f"Symbol arithmetic needs the operator {function} "
        f"(registered as one of {', '.join(_ARITH_OPS.get(function, (function,)))}), "
        f"which is not registered"
    )


def _arith(lhs: Symbol, rhs: Any, symbol_op: str | None, scalar_op: str) -> Symbol:
    """``lhs <op> rhs`` through the registered operators, named like MXNet (``_plus0``)."""
    if isinstance(rhs, Symbol):
        if symbol_op is None:  # a reflected op only ever sees a scalar
            raise TypeError(f"unsupported operand for {scalar_op}: {type(rhs).__name__}")
        return create(_arith_op(symbol_op), lhs, rhs, hint=symbol_op.lower())
    if isinstance(rhs, (int, float, np.number)) and not isinstance(rhs, bool):
        return create(_arith_op(scalar_op), lhs, scalar=float(rhs), hint=scalar_op.lower())
    return NotImplemented  # type: ignore[return-value]
