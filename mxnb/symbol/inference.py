"""Shape and dtype inference over the symbol graph (MXNet: the ``InferShape`` / ``InferType`` passes).

Idea: inference iterates: every operator node whose shapes are not all known asks
its property's ``infer_shape`` (given its input shapes, ``None`` where
unknown); what comes back fills the node's inputs (backward propagation: a
``FullyConnected`` fills in its weight) and its outputs (forward
propagation).  Passes run forward and then backward over the topological
order until nothing changes.  A shape that disagrees with one already known
is an error naming the node, the argument and both shapes.

Shapes may be partial (MXNet 1.x's rule, :mod:`mxnb.operator.partial`): a 0
is a dimension nobody has said yet, as in the ``_zeros`` begin states
``(0, 200)`` of an exported LSTM.  What each operator says of an entry is
*merged* into what is known, so dimensions arrive from either side; a
property marked ``@partial_shape`` sees partial shapes of its inputs and
outputs, any other one sees complete shapes or None.  An entry still
partial at the fixed point is an error naming its node and what is known.

State kept: one ``_ShapeInference`` / ``_TypeInference`` per call: the
value known for every entry so far, and the nodes still to ask.

Example::

    >>> from mxnb.symbol.graph import Node, NodeEntry
    >>> from mxnb.symbol.inference import infer_shapes
    >>> from mxnb.operator.base import OperatorProperty
    >>> a = Node(None, 'a', [], {})
    >>> add = Node(OperatorProperty(), 'add', [NodeEntry(a, 0)], {})
    >>> infer_shapes([NodeEntry(add, 0)], {'a': (2, 3)})[NodeEntry(add, 0)]
    (2, 3)
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..base import DTypeError, MXNBError, ShapeError, as_shape
from ..operator.partial import fmt_partial, is_known, known_or_none, merge, takes_partial

from .graph import Node, NodeEntry, parse_dtype_attr, parse_shape_attr, topo_sort

__all__ = ["infer_shapes", "infer_types"]


def _compatible(partial_shape: tuple, shape: tuple) -> bool:
    """Whether ``shape`` (maybe partial too) fits a partial shape whose 0 dims are unknown."""
    if len(partial_shape) != len(shape):
        return False
    return all(want == 0 or got in (0, want) for want, got in zip(partial_shape, shape))


def _describe_input(node: Node, position: int) -> str:
    """The argument or aux name of input ``position`` of ``node``."""
    assert node.op is not None
    names = list(node.op.list_arguments()) + list(node.op.list_auxiliary_states())
    if position < len(names):
        return names[position]
    return f"input {position}"


def _where(node: Node) -> str:
    assert node.op is not None
    return f"{node.op.op_name} '{node.name}'"


def _reword_error(node: Node, exc: Exception, kind: type[Exception]) -> Exception:
    """Re-raise a property's error prefixed with the node's type and name."""
    message = str(exc)
    op_name = node.op.op_name if node.op is not None else ""
    if f"'{node.name}'" not in message:
        if op_name and message.startswith(op_name):
            message = message[len(op_name) :].lstrip(":").lstrip()
        message = f"{_where(node)}: {message}"
    return kind(message)


@functools.cache
def _accepts_out_shape(prop_cls: type) -> bool:
    """Whether a property's ``infer_shape`` also takes the known ``out_shape`` (once per class)."""
    try:
        return "out_shape" in inspect.signature(prop_cls.infer_shape).parameters
    except (TypeError, ValueError):
        return False


class _Inference:
    """Shared fixed-point loop of shape and type inference over one graph."""

    def __init__(self, heads: Sequence[NodeEntry], what: str) -> None:
        self.nodes = topo_sort(heads)
        self.what = what  # 'shape' or 'dtype' (for messages)
        self.values: dict[NodeEntry, Any] = {}
        self.outputs: dict[int, list[NodeEntry]] = {}  # node id -> its output entries
        for node in self.nodes:
            entries = [NodeEntry(node, index) for index in range(node.num_outputs())]
            self.outputs[id(node)] = entries
            for entry in entries:
                self.values[entry] = None
        self.done: set[int] = set()  # operator nodes whose inputs and outputs are all known

    def set_value(self, entry: NodeEntry, value: Any, node: Node, slot: Callable[[], str]) -> bool:
        """Record ``value`` for ``entry``; return True if it was new; raise on a conflict.

        ``slot`` names the input or output for the error message (built only on a conflict).
        """
        current = self.values.get(entry)
        if value is None:
            return False
        if current is None:
            self.values[entry] = value
            return True
        if current != value:
            self.conflict(entry, current, value, node, slot())
        return False

    def conflict(self, entry: NodeEntry, current: Any, value: Any, node: Node, slot: str) -> None:
        raise NotImplementedError

    def run(self) -> None:
        operators = [node for node in self.nodes if node.op is not None]
        changed = True
        passes = 0
        while changed:
            changed = False
            order = operators if passes % 2 == 0 else list(reversed(operators))
            for node in order:
                if id(node) in self.done:
                    continue
                if self.infer_node(node):
                    changed = True
                if self.complete(node):
                    self.done.add(id(node))
            passes += 1
            if passes > 2 * len(operators) + 4:  # each pass fills something: cannot loop forever
                break

    def complete(self, node: Node) -> bool:
        known = self.is_complete
        values = self.values
        if not all(known(values.get(entry)) for entry in node.inputs):
            return False
        return all(known(values[entry]) for entry in self.outputs[id(node)])

    def is_complete(self, value: Any) -> bool:
        """Whether a value is fully known (shapes: no unknown dimension)."""
        return value is not None

    def fits(self, current: Any, value: Any) -> bool:
        """Whether ``value`` agrees with what is known (shapes: a partial shape)."""
        return current is None or current == value

    def infer_node(self, node: Node) -> bool:
        raise NotImplementedError

    def apply(self, node: Node, result: Any) -> bool:
        """Merge an op's ``(in, out, aux)`` result into the graph's values."""
        if result is None:
            return False
        in_values, out_values, aux_values = result
        changed = False
        num_args = node.num_arguments()
        new_inputs = list(in_values or [])[:num_args] + list(aux_values or [])
        for position, (entry, value) in enumerate(zip(node.inputs, new_inputs)):
            if value is None:
                continue
            changed |= self.set_value(
                entry,
                self._normalize_at(node, value),
                node,
                lambda position=position: _describe_input(node, position),
            )
        outputs = self.outputs[id(node)]
        for index, value in enumerate(list(out_values or [])[: len(outputs)]):
            if value is None:
                continue
            changed |= self.set_value(
                outputs[index],
                self._normalize_at(node, value),
                node,
                lambda index=index: f"output {node.op.list_outputs()[index]}",  # type: ignore[union-attr]
            )
        return changed

    def normalize(self, value: Any) -> Any:
        return value

    def _normalize_at(self, node: Node, value: Any) -> Any:
        """``normalize(value)``, an error naming ``node`` when the op answered no valid value."""
        try:
            return self.normalize(value)
        except ShapeError as exc:
            raise ShapeError(f"{_where(node)}: {exc}") from None

    def probe_same(self, node: Node, infer: Callable[[list[Any]], Any]) -> bool:
        """Backward through a same-shape (same-dtype) op: a known output fills unknown inputs.

        MXNet's elementwise ops infer in both directions; a property only sees
        its inputs.  So when inputs are still unknown and the known outputs
        agree, ask the property with the unknown inputs set to that value: if
        it answers that every input and output is that value, the op keeps
        shapes (dtypes) as they are, and the guess is the only consistent one.
        A FullyConnected, a Concat or a Reshape answer something else (or fail)
        and are left alone.  For dtypes a second probe with another dtype must
        echo too: a ``Cast`` to float16 echoes float16 but not float64.
        """
        num_args = node.num_arguments()
        usable = self.is_complete
        in_values = [self.values.get(entry) for entry in node.inputs[:num_args]]
        in_values = [value if usable(value) else None for value in in_values]
        out_values = [self.values[entry] for entry in self.outputs[id(node)]]
        known_outputs = [value for value in out_values if usable(value)]
        if all(value is not None for value in in_values) or not known_outputs:
            return False
        known = known_outputs[0]
        if any(value != known for value in known_outputs):
            return False
        probe = [known if value is None else value for value in in_values]
        if not all(self.fits(self.values.get(entry), known) for entry in node.inputs[:num_args]):
            return False
        try:
            result = infer(probe)
        except (MXNBError, ValueError, TypeError, IndexError):
            return False
        if result is None:
            return False
        answered = [*(result[0] or []), *(result[1] or []), *(result[2] or [])]
        if len(answered) < num_args + len(out_values):
            return False
        if any(value is None or self.normalize(value) != known for value in answered):
            return False
        other = self.another(known)
        if other is not None and not self.echoes(infer, num_args, in_values, other):
            return False
        return self.apply(node, result)

    def another(self, value: Any) -> Any:
        """A second probe value different from ``value``, or None to trust one probe."""
        return None

    def echoes(
        self, infer: Callable[[list[Any]], Any], num_args: int, in_values: list, value: Any
    ) -> bool:
        """Whether the property answers ``value`` everywhere when the unknown inputs are ``value``."""
        try:
            result = infer([value if known is None else known for known in in_values])
        except (MXNBError, ValueError, TypeError, IndexError):
            return False
        if result is None:
            return False
        outputs = list(result[1] or [])
        return bool(outputs) and all(
            item is not None and self.normalize(item) == value for item in outputs
        )


class _ShapeInference(_Inference):
    def __init__(self, heads: Sequence[NodeEntry], known: dict[str, tuple]) -> None:
        super().__init__(heads, "shape")
        self.hints: dict[NodeEntry, tuple] = {}  # partial __shape__ attrs: 0 = unknown dim
        for node in self.nodes:
            if node.op is not None:
                continue
            given = known.get(node.name)
            attr_shape = parse_shape_attr(node.attrs.get("__shape__"))
            if given is not None:
                given = as_shape(given, f"the shape passed for {node.name!r}")
            if given is not None and not is_known(given):
                # MXNet: a 0 dim means "unknown"; let inference fill it
                self.values[NodeEntry(node, 0)] = self.normalize(given) if given else None
                given = None
            if given is not None:
                given = self.normalize(given)
                hint = parse_shape_attr(node.attrs.get("__shape__"), partial=True)
                if attr_shape is None and hint and not _compatible(hint, given):
                    raise ShapeError(
                        f"variable '{node.name}' was declared with partial shape "
                        f"{fmt_partial(hint)} but {given} was passed; pass a shape that fits it "
                        "or re-create the variable"
                    )
                # a full shape passed in wins over a full declared one (MXNet 1.x)
                self.values[NodeEntry(node, 0)] = given
            elif attr_shape is not None:
                entry = NodeEntry(node, 0)
                if not _compatible(attr_shape, self.values[entry] or attr_shape):
                    raise ShapeError(
                        f"variable '{node.name}' was declared with shape {attr_shape} but "
                        f"{fmt_partial(self.values[entry])} was passed; pass {attr_shape} or "
                        f"re-create the variable"
                    )
                self.values[entry] = attr_shape
            else:
                hint = parse_shape_attr(node.attrs.get("__shape__"), partial=True)
                if hint:
                    self.hints[NodeEntry(node, 0)] = hint
                    entry = NodeEntry(node, 0)
                    self.values[entry] = merge(self.values[entry], hint, f"'{node.name}':")

    def set_value(self, entry: NodeEntry, value: Any, node: Node, slot: Callable[[], str]) -> bool:
        """Merge ``value`` (maybe partial) into what is known of ``entry``; True if it added.

        A value that conflicts with a partial ``__shape__`` declaration says so.
        """
        if value is None:
            return False
        hint = self.hints.get(entry)
        if hint is not None and not _compatible(hint, tuple(value)):
            raise ShapeError(
                f"{_where(node)}: {slot()} is inferred as {fmt_partial(value)} but variable "
                f"'{entry.node.name}' was declared with shape {fmt_partial(hint)}; fix the "
                f"declared shape or the shapes you passed"
            )
        current = self.values.get(entry)
        if current is None:
            self.values[entry] = value
            return True
        if current == value:
            return False
        try:
            merged = merge(current, value)
        except ShapeError:
            self.conflict(entry, current, value, node, slot())
            raise  # conflict() raises; this keeps type checkers content
        if merged == current:
            return False
        self.values[entry] = merged
        return True

    def is_complete(self, value: Any) -> bool:
        return is_known(value)

    def fits(self, current: Any, value: Any) -> bool:
        return current is None or _compatible(tuple(current), tuple(value))

    def normalize(self, value: Any) -> tuple:
        return as_shape(value, "an inferred shape")

    def conflict(self, entry: NodeEntry, current: Any, value: Any, node: Node, slot: str) -> None:
        source = entry.node
        if source is node or source.op is None:
            origin = f"'{source.name}'" if source.op is None else "it"
        else:
            origin = f"{source.op.op_name} '{source.name}' output {entry.index}"
        raise ShapeError(
            f"{_where(node)}: {slot} has shape {current} (from {origin}) but the operator "
            f"infers {value}; check the shapes you passed and the parameters of '{node.name}'"
        )

    def infer_node(self, node: Node) -> bool:
        prop = node.op
        assert prop is not None
        num_args = node.num_arguments()
        in_shapes = [self.values.get(entry) for entry in node.inputs[:num_args]]
        out_shapes = [self.values[entry] for entry in self.outputs[id(node)]]
        if not takes_partial(type(prop)):  # the simple contract: complete shapes or None
            in_shapes = [known_or_none(shape) for shape in in_shapes]
            out_shapes = [known_or_none(shape) for shape in out_shapes]
        try:
            if _accepts_out_shape(type(prop)):
                result = prop.infer_shape(list(in_shapes), out_shape=list(out_shapes))  # type: ignore[call-arg]
            else:
                result = prop.infer_shape(list(in_shapes))
        except ShapeError as exc:
            raise _reword_error(node, exc, ShapeError) from exc
        changed = self.apply(node, result)
        if not takes_partial(type(prop)):  # partial-aware ops infer backward themselves
            changed |= self.probe_same(node, prop.infer_shape)
        return changed


class _TypeInference(_Inference):
    def __init__(self, heads: Sequence[NodeEntry], known: dict[str, Any]) -> None:
        super().__init__(heads, "dtype")
        for node in self.nodes:
            if node.op is not None:
                continue
            given = known.get(node.name)
            value = (
                np.dtype(given)
                if given is not None
                else parse_dtype_attr(node.attrs.get("__dtype__"))
            )
            self.values[NodeEntry(node, 0)] = value

    def normalize(self, value: Any) -> np.dtype:
        return np.dtype(value)

    def another(self, value: Any) -> Any:
        return np.dtype("float64") if np.dtype(value) != np.float64 else np.dtype("float32")

    def conflict(self, entry: NodeEntry, current: Any, value: Any, node: Node, slot: str) -> None:
        raise DTypeError(
            f"{_where(node)}: {slot} has dtype {np.dtype(current).name} but the operator "
            f"infers {np.dtype(value).name}; cast the input (mx.sym.Cast) or pass a matching dtype"
        )

    def infer_node(self, node: Node) -> bool:
        prop = node.op
        assert prop is not None
        num_args = node.num_arguments()
        in_types = [self.values.get(entry) for entry in node.inputs[:num_args]]
        try:
            result = prop.infer_type(list(in_types))
        except DTypeError as exc:
            raise _reword_error(node, exc, DTypeError) from exc
        changed = self.apply(node, result)
        changed |= self.probe_same(node, prop.infer_type)
        return changed


def _unknown_report(inference: _Inference, kind: str) -> str:
    """Explain which arguments (or which nodes) are still unknown and what to pass."""
    complete = inference.is_complete
    values = inference.values

    def pretty(value: Any) -> str:
        return fmt_partial(value) if kind == "shape" else "unknown"

    unknown_vars = [
        node.name
        for node in inference.nodes
        if node.op is None and not complete(values[NodeEntry(node, 0)])
    ]
    if unknown_vars:
        example = ", ".join(f"{name}=..." for name in unknown_vars[:3])
        found = ""
        if kind == "shape":
            found = (
                " (known so far: "
                + ", ".join(
                    f"{name} {pretty(values[NodeEntry(node, 0)])}"
                    for node in inference.nodes
                    for name in [node.name]
                    if node.op is None and name in unknown_vars[:5]
                )
                + ")"
            )
        return (
            f"cannot infer the {kind} of {', '.join(map(repr, unknown_vars))}{found}; "
            f"pass {'them' if len(unknown_vars) > 1 else 'it'} (infer_{kind}({example})) "
            f"or declare it on the variable ({kind}=...)"
        )
    stuck = [
        f"{node.op.op_name} '{node.name}' output {pretty(values[NodeEntry(node, i)])}"  # type: ignore[union-attr]
        for node in inference.nodes
        if node.op is not None
        for i in range(node.num_outputs())
        if not complete(values[NodeEntry(node, i)])
    ]
    return (
        f"cannot infer the {kind} of {', '.join(stuck[:5])}: every argument's {kind} is known "
        f"but nothing in the graph fixes it; check that operator's parameters (a 0 in a shape "
        f"parameter is an unknown dimension that an operator connected to it must fix)"
    )


def infer_shapes(
    heads: Sequence[NodeEntry], known: dict[str, tuple], partial: bool = False
) -> dict[NodeEntry, tuple | None]:
    """Infer the shape of every entry reachable from ``heads`` (variables included).

    Parameters
    ----------
    heads : sequence of NodeEntry
        The outputs of the graph (``Symbol._outputs``).
    known : dict
        Shapes by variable name; variables' ``__shape__`` attributes are used too.
    partial : bool
        When False, raise :class:`ShapeError` if any entry stays unknown, naming
        the arguments to pass.  When True, unknown entries map to None.

    Returns
    -------
    dict mapping every NodeEntry to its shape tuple (or None when partial and unknown).
    """
    inference = _ShapeInference(heads, known)
    inference.run()
    if not partial and not all(map(inference.is_complete, inference.values.values())):
        raise ShapeError(_unknown_report(inference, "shape"))
    return inference.values


def infer_types(
    heads: Sequence[NodeEntry], known: dict[str, Any]
) -> dict[NodeEntry, np.dtype | None]:
    """Infer the dtype of every entry reachable from ``heads``; None where it stays unknown.

    ``known`` maps variable names to dtypes; variables' ``__dtype__``
    attributes (MXNet type flags) are used too.  Conflicts raise
    :class:`~mxnb.base.DTypeError` naming the node and the argument.
    """
    inference = _TypeInference(heads, known)
    inference.run()
    return inference.values
