"""Symbol: a handle on the outputs of a graph, and how graphs are built and composed.

Idea (MXNet: ``mx.sym.Symbol`` over ``nnvm::Symbol``): a :class:`Symbol` is a
list of output entries of a graph of :class:`~mxnb.symbol.graph.Node`; the
graph is everything reachable from them (nodes are made in ``creation.py``).  Calling an operator
(``mx.sym.FullyConnected(data, num_hidden=10, name='fc1')``) makes one new
node whose inputs are the given symbols' outputs; inputs not given become
*implicit variables* named ``{name}_{argument}`` (``fc1_weight``,
``bn_moving_mean``) that inherit the node's attributes, as nnvm does.
Calling a symbol (``net(data=other)``) copies its graph and replaces
variables by other symbols (composition).

Rule: symbols are immutable in use — every operation that changes a graph
(composition, copying) works on a fresh copy of its nodes, so a symbol
shared by two networks is never changed behind one's back.  ``_set_attr``
is the one in-place edit, as in MXNet.

State kept:
    Symbol._outputs   the head entries (``list[NodeEntry]``); nodes own everything else

Example::

    >>> import mxnb as mx
    >>> data = mx.sym.Variable('data')
    >>> fc = mx.sym.FullyConnected(data, num_hidden=10, name='fc1')
    >>> fc.list_arguments()
    ['data', 'fc1_weight', 'fc1_bias']
    >>> fc.infer_shape(data=(32, 784))[1]
    [(32, 10)]
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from ..atomic_file import write_text_atomically
from ..base import DTypeError, GraphError, NotImplementedForSymbol, NotSupportedError, as_shape
from ..operator import registry
from ..operator.param import format_value
from ..operator.partial import is_known
from .graph import Node, NodeEntry, aux_variable_nodes, input_names, topo_sort
from .inference import infer_shapes, infer_types
from .scope import HIDDEN_KEYS, hide_key

__all__ = ["Symbol", "param_string"]


# ---------------------------------------------------------------------------
# parameters as MXNet strings
# ---------------------------------------------------------------------------


def param_string(value: Any) -> str:
    """Format a Python parameter value as MXNet stores it in a node (``(3, 3)``, ``True``)."""
    if isinstance(value, str):
        return value
    if isinstance(value, np.dtype) or (isinstance(value, type) and issubclass(value, np.generic)):
        return np.dtype(value).name
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, (bool, tuple)) or value is None:
        return format_value(value)
    return str(value)


def _copy_graph(outputs: Sequence[NodeEntry]) -> list[NodeEntry]:
    """Copy every node reachable from ``outputs``; return the copied entries."""
    mapping: dict[int, Node] = {}
    for node in topo_sort(outputs):
        mapping[id(node)] = Node(
            node.op.copy() if node.op is not None else None,
            node.name,
            [NodeEntry(mapping[id(entry.node)], entry.index) for entry in node.inputs],
            dict(node.attrs),
            dict(node.params),
        )
    return [NodeEntry(mapping[id(entry.node)], entry.index) for entry in outputs]


def _single_entry(value: Any, where: str) -> NodeEntry:
    """The one output entry of a symbol used as an input; explain what to do otherwise."""
    if not isinstance(value, Symbol):
        raise TypeError(
            f"{where}: expected a Symbol, got {type(value).__name__}; "
            f"pass operator parameters by keyword (num_hidden=10)"
        )
    if len(value._outputs) != 1:
        raise GraphError(
            f"{where}: the symbol has {len(value._outputs)} outputs "
            f"({', '.join(value.list_outputs())}); pick one with sym[i] or sym['name']"
        )
    return value._outputs[0]


# ---------------------------------------------------------------------------
# Symbol
# ---------------------------------------------------------------------------


class Symbol:
    """The outputs of a symbolic graph (MXNet: ``mx.sym.Symbol``).

    Build symbols with :func:`Variable` and the operators of ``mx.sym``;
    combine them with :func:`Group`, arithmetic and composition.
    """

    def __init__(self, outputs: Sequence[NodeEntry]) -> None:
        self._outputs: list[NodeEntry] = list(outputs)

    @classmethod
    def _from_outputs(cls, entries: Sequence[NodeEntry]) -> Symbol:
        """Wrap existing entries (no copy) in a Symbol."""
        return cls(list(entries))

    # -- the graph -------------------------------------------------------------
    def _nodes(self) -> list[Node]:
        return topo_sort(self._outputs)

    def _head_node(self) -> Node | None:
        """The node every output belongs to, or None for a group of several nodes."""
        if not self._outputs:
            return None
        node = self._outputs[0].node
        if all(entry.node is node for entry in self._outputs):
            return node
        return None

    @property
    def name(self) -> str | None:
        """The name of the node this symbol is an output of; None for a group."""
        node = self._head_node()
        return None if node is None else node.name

    def list_outputs(self) -> list[str]:
        """Names of the outputs: ``fc1_output`` for an op, the name for a variable."""
        return [entry.node.output_name(entry.index) for entry in self._outputs]

    def list_arguments(self) -> list[str]:
        """Names of the arguments (variables that are not auxiliary states), in graph order."""
        return input_names(self._nodes(), "read_only")

    def list_auxiliary_states(self) -> list[str]:
        """Names of the auxiliary states (variables feeding an op's aux slots: BatchNorm stats)."""
        return input_names(self._nodes(), "aux")

    def list_inputs(self) -> list[str]:
        """Names of every variable, arguments and auxiliary states, in graph order."""
        return input_names(self._nodes(), "all")

    def get_internals(self) -> Symbol:
        """A symbol whose outputs are every visible output of every node (``fc1_output``, ``data``).

        As nnvm's ``GetInternals``: hidden outputs (BatchNorm's saved mean and
        variance) are not listed; the executor still sees them in the graph.
        """
        entries = []
        for node in self._nodes():
            count = 1 if node.op is None else node.op.num_visible_outputs()
            entries.extend(NodeEntry(node, index) for index in range(count))
        return Symbol(entries)

    def get_children(self) -> Symbol | None:
        """A symbol of the inputs of this symbol's node(s); None for a variable."""
        seen: set[int] = set()
        entries: list[NodeEntry] = []
        for entry in self._outputs:
            if id(entry.node) in seen:
                continue
            seen.add(id(entry.node))
            entries.extend(entry.node.inputs)
        return Symbol(entries) if entries else None

    # -- outputs as a sequence -------------------------------------------------
    def __len__(self) -> int:
        return len(self._outputs)

    def __iter__(self) -> Iterator[Symbol]:
        return (Symbol([entry]) for entry in self._outputs)

    def __bool__(self) -> bool:
        """A Symbol has no truth value before it runs (MXNet raises the same error)."""
        raise NotImplementedForSymbol(self.__bool__, "bool")

    def __getitem__(self, index: int | str | slice) -> Symbol:
        """Output ``index`` (an int, a slice, or an output name such as ``'fc1_output'``)."""
        if isinstance(index, str):
            names = self.list_outputs()
            matches = [i for i, name in enumerate(names) if name == index]
            if not matches:
                raise GraphError(f"no output named {index!r}; the outputs are: {', '.join(names)}")
            if len(matches) > 1:
                raise GraphError(f"several outputs are named {index!r}; index them by position")
            return Symbol([self._outputs[matches[0]]])
        if isinstance(index, slice):
            return Symbol(self._outputs[index])
        if not isinstance(index, (int, np.integer)):
            raise TypeError(
                f"Symbol index must be an int, a slice or a name, not {type(index).__name__}"
            )
        if not -len(self._outputs) <= index < len(self._outputs):
            raise IndexError(
                f"output {index} out of range: the symbol has {len(self._outputs)} outputs"
            )
        return Symbol([self._outputs[index]])

    # -- copying and composition -----------------------------------------------
    def __copy__(self) -> Symbol:
        return Symbol(_copy_graph(self._outputs))

    def __deepcopy__(self, memo: dict[int, Any]) -> Symbol:
        return Symbol(_copy_graph(self._outputs))

    def copy(self) -> Symbol:
        """Return a copy with its own nodes."""
        return self.__copy__()

    def __call__(self, *args: Symbol, **kwargs: Any) -> Symbol:
        """Compose: a copy of this graph with variables replaced (``net(data=other)``)."""
        result = self.__copy__()
        result._compose(*args, **kwargs)
        return result

    def _compose(self, *args: Symbol, name: str | None = None, **kwargs: Symbol) -> None:
        """Replace variables of this graph in place: positional ones in argument order, or by name."""
        if args and kwargs:
            raise TypeError(
                "compose takes input symbols either positionally or by keyword, not both"
            )
        nodes = self._nodes()
        aux = aux_variable_nodes(nodes)
        replace: dict[int, NodeEntry] = {}
        if args:
            arguments = [node for node in nodes if node.op is None and id(node) not in aux]
            if len(args) > len(arguments):
                raise GraphError(
                    f"compose: {len(args)} positional inputs but the symbol has only "
                    f"{len(arguments)} arguments ({', '.join(n.name for n in arguments)})"
                )
            for position, (node, value) in enumerate(zip(arguments, args)):
                replace[id(node)] = _single_entry(value, f"compose argument {position}")
        else:
            matched: set[str] = set()
            for node in nodes:
                if node.op is None and node.name in kwargs:
                    replace[id(node)] = _single_entry(kwargs[node.name], f"compose {node.name}=")
                    matched.add(node.name)
            missing = [key for key in kwargs if key not in matched]
            if missing:
                raise GraphError(
                    f"compose: {', '.join(map(repr, missing))} "
                    f"{'is not an input' if len(missing) == 1 else 'are not inputs'} of this "
                    f"symbol; its inputs are: {', '.join(self.list_inputs())}"
                )
        for node in nodes:
            node.inputs = [
                replace.get(id(entry.node), entry) if entry.node.op is None else entry
                for entry in node.inputs
            ]
        self._outputs = [
            replace.get(id(entry.node), entry) if entry.node.op is None else entry
            for entry in self._outputs
        ]
        head = self._head_node()
        if name and head is not None and head.op is not None:
            head.name = name

    # -- attributes --------------------------------------------------------------
    def attr(self, key: str) -> str | None:
        """The attribute (or given parameter) ``key`` of this symbol's node; None when absent."""
        node = self._head_node()
        if node is None:
            return None
        for candidate in (key, hide_key(key)):
            if candidate in node.attrs:
                return node.attrs[candidate]
            if candidate in node.params:
                return node.params[candidate]
        return None

    def list_attr(self, recursive: bool = False) -> dict[str, str]:
        """Attributes of this symbol's node (parameters given included)."""
        if recursive:
            raise NotSupportedError(
                "list_attr(recursive=True) is deprecated in MXNet; use attr_dict()"
            )
        node = self._head_node()
        if node is None:
            return {}
        return _listed_attrs(node)

    def attr_dict(self) -> dict[str, dict[str, str]]:
        """Attributes of every node that has some, by node name."""
        result: dict[str, dict[str, str]] = {}
        for node in self._nodes():
            merged = _listed_attrs(node)
            if merged:
                result.setdefault(node.name, {}).update(merged)
        return result

    def _set_attr(self, **kwargs: str) -> None:
        """Set string attributes on this symbol's node (a parameter key re-parses the op)."""
        node = self._head_node()
        if node is None:
            raise GraphError("_set_attr works on a single node's symbol, not on a group")
        new_params = dict(node.params)
        for key, value in kwargs.items():
            if not isinstance(value, str):
                raise ValueError(f"_set_attr takes string values; got {key}={value!r}")  # noqa: TRY004 - as MXNet
            if key == "name":
                node.name = value
            elif node.op is not None and key in node.op.params:
                new_params[key] = value
            else:
                node.attrs[hide_key(key)] = value
        if node.op is not None and new_params != node.params:
            node.op = type(node.op)(**new_params)
            node.params = new_params

    # -- inference ---------------------------------------------------------------
    def _known(
        self, what: str, args: Sequence[Any], kwargs: dict[str, Any], nodes: list[Node]
    ) -> dict[str, Any]:
        if args and kwargs:
            raise TypeError(
                f"infer_{what}: give known {what}s positionally or by keyword, not both"
            )
        arguments = input_names(nodes, "read_only")
        if len(args) > len(arguments):
            raise GraphError(
                f"infer_{what}: {len(args)} positional {what}s but only {len(arguments)} arguments "
                f"({', '.join(arguments)})"
            )
        known = {name: value for name, value in zip(arguments, args) if value is not None}
        inputs = input_names(nodes, "all")
        for key, value in kwargs.items():
            if key not in inputs:
                raise GraphError(
                    f"infer_{what}: {key!r} is not an input of this symbol; "
                    f"its inputs are: {', '.join(inputs)}"
                )
            if value is not None:
                known[key] = value
        return known

    def _infer_shape(self, partial: bool, args: Sequence[Any], kwargs: dict[str, Any]):
        known = {}
        nodes = self._nodes()
        for key, shape in self._known("shape", args, kwargs, nodes).items():
            shape = as_shape(shape, f"infer_shape: {key}")  # a 0 dim is unknown, inferred
            if shape:
                known[key] = shape
        values = infer_shapes(self._outputs, known, partial=True)
        aux = aux_variable_nodes(nodes)
        arg_values = [values[NodeEntry(n, 0)] for n in nodes if n.op is None and id(n) not in aux]
        aux_values = [values[NodeEntry(n, 0)] for n in nodes if n.op is None and id(n) in aux]
        out_values = [values[entry] for entry in self._outputs]
        complete = all(is_known(value) for value in values.values())
        return values, arg_values, out_values, aux_values, complete

    def infer_shape(self, *args: Any, **kwargs: Any):
        """Infer shapes from the known ones: ``(arg_shapes, out_shapes, aux_shapes)``.

        Known shapes are given positionally (in ``list_arguments()`` order) or
        by name.  Shapes flow forward and backward (a FullyConnected's weight
        shape comes from its data).  When something stays unknown this warns
        which arguments to pass and returns ``(None, None, None)``, as MXNet
        does; conflicting shapes raise :class:`~mxnb.base.ShapeError` naming
        the node, the argument and the shapes.
        """
        _, arg_values, out_values, aux_values, complete = self._infer_shape(False, args, kwargs)
        if not complete:
            unknown = [
                f"{name}: {() if value is None else value}"
                for name, value in zip(self.list_arguments(), arg_values)
                if not is_known(value)
            ]
            warnings.warn(
                "infer_shape: cannot decide the shape of the following arguments; pass them "
                "as input (e.g. infer_shape(data=(32, 784))) or use infer_shape_partial:\n\t"
                + "\n\t".join(unknown[:10] + (["..."] if len(unknown) > 10 else [])),
                stacklevel=2,
            )
            return None, None, None
        return arg_values, out_values, aux_values

    def infer_shape_partial(self, *args: Any, **kwargs: Any):
        """Like :meth:`infer_shape`, but unknown shapes come back as ``()`` instead of failing.

        An unknown dimension is 0, or -1 under ``np_shape`` (MXNet 1.x's two conventions;
        under ``np_shape`` mxnb cannot tell it from a real 0 here).
        """
        from ..util import is_np_shape

        _, arg_values, out_values, aux_values, _ = self._infer_shape(True, args, kwargs)
        unknown = -1 if is_np_shape() else 0

        def fill(values: list[Any]) -> list[tuple]:
            return [
                () if value is None else tuple(dim or unknown for dim in value) for value in values
            ]

        return fill(arg_values), fill(out_values), fill(aux_values)

    def _infer_type(self, args: Sequence[Any], kwargs: dict[str, Any]):
        known = {}
        nodes = self._nodes()
        for key, dtype in self._known("type", args, kwargs, nodes).items():
            try:
                known[key] = np.dtype(dtype)
            except TypeError as exc:
                raise DTypeError(f"infer_type: {key}={dtype!r} is not a dtype") from exc
        values = infer_types(self._outputs, known)
        aux = aux_variable_nodes(nodes)

        def as_type(value: Any) -> Any:
            return None if value is None else np.dtype(value).type

        arg_values = [
            as_type(values[NodeEntry(n, 0)]) for n in nodes if n.op is None and id(n) not in aux
        ]
        aux_values = [
            as_type(values[NodeEntry(n, 0)]) for n in nodes if n.op is None and id(n) in aux
        ]
        out_values = [as_type(values[entry]) for entry in self._outputs]
        complete = all(value is not None for value in values.values())
        return arg_values, out_values, aux_values, complete

    def infer_type(self, *args: Any, **kwargs: Any):
        """Infer dtypes: ``(arg_types, out_types, aux_types)`` as numpy types; ``(None,)*3`` if incomplete."""
        arg_values, out_values, aux_values, complete = self._infer_type(args, kwargs)
        if not complete:
            return None, None, None
        return arg_values, out_values, aux_values

    def infer_type_partial(self, *args: Any, **kwargs: Any):
        """Like :meth:`infer_type`; unknown dtypes come back as None."""
        arg_values, out_values, aux_values, _ = self._infer_type(args, kwargs)
        return arg_values, out_values, aux_values

    # -- serialization -------------------------------------------------------------
    def tojson(self, remove_amp_cast: bool = True) -> str:
        """The graph in MXNet 1.x's symbol JSON format (loadable by ``mx.sym.load_json`` and MXNet)."""
        from .serialization import to_json

        return to_json(self._outputs)

    def save(self, fname: str, remove_amp_cast: bool = True) -> None:
        """Write :meth:`tojson` to ``fname`` (``*-symbol.json``), atomically."""
        write_text_atomically(fname, self.tojson())

    def __getstate__(self) -> dict[str, Any]:
        return {"json": self.tojson()}

    def __setstate__(self, state: dict[str, Any]) -> None:
        from .serialization import from_json

        self._outputs = from_json(state["json"])

    # -- display ---------------------------------------------------------------
    def __repr__(self) -> str:
        name = self.name
        if name is None:
            return f"<Symbol group [{', '.join(self.list_outputs())}]>"
        return f"<Symbol {name}>"

    def debug_str(self) -> str:
        """A text listing of the graph: outputs, then each variable and op with its inputs."""
        lines = ["Symbol Outputs:"]
        lines += [f"\toutput[{i}]={e.node.name}({e.index})" for i, e in enumerate(self._outputs)]
        for node in self._nodes():
            if node.op is None:
                lines.append(f"Variable:{node.name}")
                continue
            lines.append("--------------------")
            lines.append(f"Op:{node.op.op_name}, Name={node.name}")
            lines.append("Inputs:")
            for i, entry in enumerate(node.inputs):
                lines.append(f"\targ[{i}]={entry.node.name}({entry.index}) version=0")
            merged = {**node.params, **node.attrs}
            if merged:
                lines.append("Attrs:")
                lines += [f"\t{key}={value}" for key, value in sorted(merged.items())]
        return "\n".join(lines) + "\n"

    # -- execution (the executor package implements these) --------------------------
    def simple_bind(
        self,
        ctx: Any,
        grad_req: Any = "write",
        type_dict: dict[str, Any] | None = None,
        stype_dict: dict[str, str] | None = None,
        group2ctx: dict[str, Any] | None = None,
        shared_arg_names: list[str] | None = None,
        shared_exec: Any = None,
        shared_buffer: dict[str, Any] | None = None,
        recompute: str | int | None = None,
        **kwargs: Any,
    ) -> Any:
        """Infer shapes from ``kwargs``, allocate arrays and return an Executor (``mx.executor``).

        ``recompute`` (None, 'mirror', 'sqrt' or a byte budget), or ``budget=<bytes>`` with
        ``solver`` ('greedy' / 'milp') and ``time_limit``, trades memory for compute, as
        ``mx.executor.plan_memory`` describes.  ``shared_exec``,
        ``shared_arg_names`` and ``shared_buffer`` share parameters, input buffers
        and the memory pool with another executor (``mxnb.executor.sharing``).
        """
        _reject_unsupported("simple_bind", stype_dict=stype_dict, group2ctx=group2ctx)
        from .. import executor

        return executor.simple_bind(
            self,
            ctx,
            grad_req=grad_req,
            type_dict=type_dict,
            recompute=recompute,
            shared_arg_names=shared_arg_names,
            shared_exec=shared_exec,
            shared_buffer=shared_buffer,
            **kwargs,
        )

    def bind(
        self,
        ctx: Any,
        args: Any,
        args_grad: Any = None,
        grad_req: Any = "write",
        aux_states: Any = None,
        group2ctx: dict[str, Any] | None = None,
        shared_exec: Any = None,
        recompute: str | int | None = None,
        **planner: Any,
    ) -> Any:
        """Bind given argument arrays (list or dict) and return an Executor (``mx.executor``).

        ``recompute`` and the ``planner`` options (``budget``, ``solver``, ``time_limit``) as
        in :meth:`simple_bind`.
        """
        _reject_unsupported("bind", group2ctx=group2ctx, shared_exec=shared_exec)
        from .. import executor

        return executor.bind(self, ctx, args, args_grad, grad_req, aux_states, recompute, **planner)

    #: MXNet 1.9's internal names of bind / simple_bind (its tests and Gluon call them).
    _bind = bind
    _simple_bind = simple_bind

    def eval(self, ctx: Any = None, **kwargs: Any) -> Any:
        """Bind ``kwargs`` (name -> NDArray), run forward and return the list of outputs."""
        if ctx is None:
            from ..context import current_context

            ctx = current_context()
        executor = self.bind(ctx, kwargs)
        return executor.forward()

    # -- arithmetic (MXNet: Symbol.__add__ and friends) ----------------------------------
    def __add__(self, other: Any) -> Symbol:
        return _creation._arith(self, other, "_Plus", "_PlusScalar")

    __radd__ = __add__

    def __sub__(self, other: Any) -> Symbol:
        return _creation._arith(self, other, "_Minus", "_MinusScalar")

    def __rsub__(self, other: Any) -> Symbol:
        return _creation._arith(self, other, None, "_RMinusScalar")

    def __mul__(self, other: Any) -> Symbol:
        return _creation._arith(self, other, "_Mul", "_MulScalar")

    __rmul__ = __mul__

    def __truediv__(self, other: Any) -> Symbol:
        return _creation._arith(self, other, "_Div", "_DivScalar")

    def __rtruediv__(self, other: Any) -> Symbol:
        return _creation._arith(self, other, None, "_RDivScalar")

    def __mod__(self, other: Any) -> Symbol:
        return _creation._arith(self, other, "_Mod", "_ModScalar")

    def __rmod__(self, other: Any) -> Symbol:
        return _creation._arith(self, other, None, "_RModScalar")

    def __pow__(self, other: Any) -> Symbol:
        return _creation._arith(self, other, "_Power", "_PowerScalar")

    def __rpow__(self, other: Any) -> Symbol:
        return _creation._arith(self, other, None, "_RPowerScalar")

    def __neg__(self) -> Symbol:
        return self.__mul__(-1.0)

    def __abs__(self) -> Symbol:
        return _creation.create("abs", self)

    def __eq__(self, other: object) -> Symbol:  # type: ignore[override]
        return _creation._arith(self, other, "_equal", "_equal_scalar")

    def __ne__(self, other: object) -> Symbol:  # type: ignore[override]
        return _creation._arith(self, other, "_not_equal", "_not_equal_scalar")

    def __gt__(self, other: Any) -> Symbol:
        return _creation._arith(self, other, "_greater", "_greater_scalar")

    def __ge__(self, other: Any) -> Symbol:
        return _creation._arith(self, other, "_greater_equal", "_greater_equal_scalar")

    def __lt__(self, other: Any) -> Symbol:
        return _creation._arith(self, other, "_lesser", "_lesser_scalar")

    def __le__(self, other: Any) -> Symbol:
        return _creation._arith(self, other, "_lesser_equal", "_lesser_equal_scalar")

    __hash__ = object.__hash__  # identity, although == builds a comparison symbol as in MXNet

    # -- fluent methods (MXNet: sym.reshape(...), sym.sum(...)) --------------------------
    def __getattr__(self, name: str) -> Any:
        if name.startswith("_") or name not in _FLUENT:
            raise AttributeError(f"'Symbol' object has no attribute {name!r}")
        op_name = _FLUENT[name]
        if registry.find(op_name) is None:
            raise AttributeError(
                f"Symbol.{name} needs the operator {op_name!r}, which is not registered"
            )
        if name == "reshape":
            return self._reshape
        return functools.partial(_creation.create, op_name, self, hint=name)

    def _reshape(self, *shape: Any, **kwargs: Any) -> Symbol:
        """``sym.reshape((2, -1))``, ``sym.reshape(2, -1)`` or ``sym.reshape(shape=(2, -1))``."""
        if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
            shape = tuple(shape[0])
        if shape:
            kwargs["shape"] = tuple(shape)
        return _creation.create("reshape", self, hint="reshape", **kwargs)

    def __dir__(self) -> list[str]:
        fluent = [name for name, op in _FLUENT.items() if registry.find(op) is not None]
        return sorted(set(super().__dir__()) | set(fluent))

    def astype(self, dtype: Any) -> Symbol:
        """Cast to ``dtype`` (the ``Cast`` operator)."""
        return _creation.create("Cast", self, dtype=dtype)


#: Fluent method -> operator (MXNet's generated ``Symbol.<method>``s), offered when registered.
_FLUENT_NAMES = (
    "reshape reshape_like zeros_like ones_like broadcast_to broadcast_like flatten "
    "expand_dims tile transpose flip sum mean max min prod nansum nanprod norm round rint fix "
    "floor ceil trunc sign sqrt rsqrt cbrt square reciprocal exp expm1 log log10 log2 log1p "
    "relu sigmoid softmax log_softmax slice slice_axis slice_like take one_hot pick split "
    "clip argmax argmin topk sort argsort squeeze swapaxes diag sin cos tan arcsin arccos "
    "arctan sinh cosh tanh"
)
_FLUENT: dict[str, str] = {name: name for name in _FLUENT_NAMES.split()}
_FLUENT.update({"flatten": "Flatten", "split": "SliceChannel", "swapaxes": "SwapAxis"})


def _reject_unsupported(where: str, **options: Any) -> None:
    given = [key for key, value in options.items() if value is not None]
    if given:
        raise NotSupportedError(
            f"{where}: {', '.join(given)} {'is' if len(given) == 1 else 'are'} not supported by mxnb; "
            f"leave {'it' if len(given) == 1 else 'them'} unset"
        )


# Symbol's operators build nodes with the creation module, which itself builds Symbols.
from . import creation as _creation  # noqa: E402 -- creation builds Symbols, so it is imported after the class


def _listed_attrs(node: Any) -> dict[str, str]:
    """A node's parameters and attributes as MXNet lists them: a hidden key
    (``__lr_mult__``) also under its plain name (``lr_mult``)."""
    listed = {**node.params, **node.attrs}
    for key in HIDDEN_KEYS:
        hidden = hide_key(key)
        if hidden in node.attrs and key not in listed:
            listed[key] = node.attrs[hidden]
    return listed
