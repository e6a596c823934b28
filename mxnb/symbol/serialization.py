"""Symbol JSON: MXNet 1.x's graph file format, written byte for byte as MXNet writes it.

Idea (MXNet: nnvm's ``SaveJSON`` / ``LoadJSON`` passes and
``src/nnvm/legacy_json_util.cc``): a graph is saved as its nodes in
topological (DFS post-) order.  Each node has ``op`` (``"null"`` for a
variable), ``name``, ``attrs`` (operator parameters and attributes, all
strings, keys sorted) and ``inputs`` as ``[node_id, output_index,
version]``.  ``arg_nodes`` lists the variables, ``node_row_ptr`` the first
entry id of each node, ``heads`` the outputs, and ``attrs`` carries
``{"mxnet_version": ["int", 10901]}``.

Rules:
* Writing follows dmlc's JSONWriter layout (two-space indent, ``", "``
  separators, arrays of more than ten numbers one per line, one-entry
  dicts on one line), so a file we write looks like one MXNet wrote, and
  ``to_json(from_json(text)) == text`` for our own output.
* Reading accepts what MXNet accepts: older files with ``"param"`` /
  ``"attr"`` instead of ``"attrs"``, two-element inputs, no
  ``node_row_ptr``, bare hidden keys (``lr_mult`` -> ``__lr_mult__``), aux
  states missing from pre-0.9 files; and Gluon exports (``__init__`` attrs,
  parameters as strings).  Every unknown operator is reported at once.

Example::

    >>> import mxnb as mx
    >>> net = mx.sym.Activation(mx.sym.Variable('x'), act_type='relu', name='relu1')
    >>> mx.sym.load_json(net.tojson()).tojson() == net.tojson()
    True
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

from ..base import SUPPORTED_DTYPES, FormatError, GraphError, ParamError
from ..operator import registry
from .creation import set_input_var_attrs
from .graph import Node, NodeEntry, parse_dtype_attr, parse_shape_attr, topo_sort
from .scope import HIDDEN_KEYS

__all__ = ["MXNET_VERSION", "SymbolFileError", "SymbolFileParamError", "from_json", "to_json"]

#: The MXNet version our files claim (1.9.1), as MXNET_VERSION encodes it.
MXNET_VERSION = 10901


# ---------------------------------------------------------------------------
# writing: dmlc::JSONWriter's layout
# ---------------------------------------------------------------------------


class _DmlcWriter:
    """Reproduces dmlc::JSONWriter: scopes remember whether they are multi-line."""

    def __init__(self) -> None:
        self.parts: list[str] = []
        self.multi_line: list[bool] = []
        self.counts: list[int] = []

    def separator(self) -> None:
        if not self.multi_line or self.multi_line[-1]:
            self.parts.append("\n" + " " * (2 * len(self.multi_line)))

    def begin(self, bracket: str, multi_line: bool) -> None:
        self.parts.append(bracket)
        self.multi_line.append(multi_line)
        self.counts.append(0)

    def end(self, bracket: str) -> None:
        newline = self.multi_line.pop()
        count = self.counts.pop()
        if newline and count:
            self.separator()
        self.parts.append(bracket)

    def key_value(self, key: str, write_value: Callable[[], None]) -> None:
        if self.counts[-1] > 0:
            self.parts.append(", ")
        self.separator()
        self.parts.append(f'"{key}": ')
        self.counts[-1] += 1
        write_value()

    def array_item(self, write_value: Callable[[], None]) -> None:
        if self.counts[-1]:
            self.parts.append(", ")
        self.counts[-1] += 1
        self.separator()
        write_value()

    def string(self, text: str) -> None:
        escaped = (
            text.replace("\\", "\\\\")
            .replace('"', '\\"')
            .replace("\r", "\\r")
            .replace("\n", "\\n")
            .replace("\t", "\\t")
        )
        self.parts.append(f'"{escaped}"')

    def number(self, value: int) -> None:
        self.parts.append(str(int(value)))

    # containers, as dmlc's ArrayHandler / MapHandler lay them out
    def int_array(self, values: Sequence[int]) -> None:
        self.begin("[", len(values) > 10)
        for value in values:
            self.array_item(lambda value=value: self.number(value))
        self.end("]")

    def entry(self, entry: tuple[int, int, int]) -> None:
        self.begin("[", False)
        for value in entry:
            self.array_item(lambda value=value: self.number(value))
        self.end("]")

    def entry_array(self, entries: Sequence[tuple[int, int, int]]) -> None:
        self.begin("[", len(entries) > 10)  # an entry is plain data (POD) in dmlc's eyes
        for item in entries:
            self.array_item(lambda item=item: self.entry(item))
        self.end("]")

    def string_map(self, mapping: dict[str, str]) -> None:
        self.begin("{", len(mapping) > 1)
        for key in sorted(mapping):
            self.key_value(key, lambda key=key: self.string(mapping[key]))
        self.end("}")

    def text(self) -> str:
        return "".join(self.parts)


def _node_dict(node: Node) -> dict[str, str]:
    """The strings MXNet keeps in a node's ``attrs.dict``: given parameters, then attributes."""
    merged: dict[str, str] = {}
    if node.op is not None:
        defaults = {name: param.default for name, param in node.op.params.items()}
        values = node.op.get_params()
        strings = node.op.get_params_str()
        for key, value in values.items():
            if key not in node.params and value != defaults.get(key):
                merged[key] = strings[key]  # set on the property directly, not given as a string
        merged.update(node.params)
    merged.update(node.attrs)
    return merged


def to_json(outputs: Sequence[NodeEntry]) -> str:
    """Write the graph of ``outputs`` in MXNet 1.x's symbol JSON format."""
    nodes = topo_sort(outputs)
    index = {id(node): position for position, node in enumerate(nodes)}
    row_ptr = [0]
    for node in nodes:
        row_ptr.append(row_ptr[-1] + node.num_outputs())
    writer = _DmlcWriter()
    writer.begin("{", True)

    def write_node(node: Node) -> None:
        writer.begin("{", True)
        op_name = "null" if node.op is None else (node.op.type_string or type(node.op).__name__)
        writer.key_value("op", lambda: writer.string(op_name))
        writer.key_value("name", lambda: writer.string(node.name))
        attrs = _node_dict(node)
        if attrs:
            writer.key_value("attrs", lambda: writer.string_map(attrs))
        inputs = [(index[id(entry.node)], entry.index, 0) for entry in node.inputs]
        writer.key_value("inputs", lambda: writer.entry_array(inputs))
        writer.end("}")

    def write_nodes() -> None:
        writer.begin("[", True)
        for node in nodes:
            writer.array_item(lambda node=node: write_node(node))
        writer.end("]")

    def write_version() -> None:
        writer.begin("{", False)

        def write_any() -> None:
            writer.begin("[", False)
            writer.array_item(lambda: writer.string("int"))
            writer.array_item(lambda: writer.number(MXNET_VERSION))
            writer.end("]")

        writer.key_value("mxnet_version", write_any)
        writer.end("}")

    arg_nodes = [position for position, node in enumerate(nodes) if node.op is None]
    heads = [(index[id(entry.node)], entry.index, 0) for entry in outputs]
    writer.key_value("nodes", write_nodes)
    writer.key_value("arg_nodes", lambda: writer.int_array(arg_nodes))
    writer.key_value("node_row_ptr", lambda: writer.int_array(row_ptr))
    writer.key_value("heads", lambda: writer.entry_array(heads))
    writer.key_value("attrs", write_version)
    writer.end("}")
    return writer.text()


# ---------------------------------------------------------------------------
# reading
# ---------------------------------------------------------------------------


class SymbolFileError(FormatError, GraphError):
    """A symbol file's graph is malformed: bad field, bad entry, unknown operator, wrong inputs.

    A :class:`~mxnb.base.FormatError` (the file is bad) and a
    :class:`~mxnb.base.GraphError` (the graph it describes is bad), so either catches it.
    """


class SymbolFileParamError(FormatError, ParamError):
    """An operator parameter written in a symbol file does not parse or is out of range."""


def _count(value: Any) -> bool:
    """A non-negative JSON integer (``True`` is an int to Python, not to a file)."""
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _check_document(data: Any) -> None:
    """Check the file's structure, field by field, before anything is built from it.

    Every failure names the field: ``nodes[3].inputs[1]: ...``.  After this
    the reader may index freely: nodes are objects with a string ``op`` and
    ``name``, entries are lists of non-negative ints, attributes are objects.
    """
    if not isinstance(data, dict) or "nodes" not in data or "heads" not in data:
        raise SymbolFileError(
            "not an MXNet symbol JSON: expected an object with 'nodes' and 'heads' "
            "(was this a params file? load those with mx.nd.load)"
        )
    nodes, heads = data["nodes"], data["heads"]
    if not isinstance(nodes, list) or not nodes:
        raise SymbolFileError("field 'nodes' must be a non-empty list of node objects")
    if not isinstance(heads, list) or not heads:
        raise SymbolFileError("field 'heads' must be a non-empty list of [node, index] entries")
    for position, raw in enumerate(nodes):
        where = f"nodes[{position}]"
        if not isinstance(raw, dict):
            raise SymbolFileError(f"{where}: a node must be an object, got {type(raw).__name__}")
        if "name" not in raw:  # MXNet's loader requires it; a nameless variable cannot be fed
            raise SymbolFileError(
                f"{where}: a node needs a 'name' field (MXNet's loader requires it)"
            )
        for field in ("op", "name"):
            if not isinstance(raw.get(field, "null" if field == "op" else ""), str):
                raise SymbolFileError(f"{where}.{field}: must be a string, got {raw[field]!r}")
        for field in ("param", "attr", "attrs"):
            if raw.get(field) is not None and not isinstance(raw[field], dict):
                raise SymbolFileError(
                    f"{where}.{field}: attributes must be an object, got {type(raw[field]).__name__}"
                )
        inputs = raw.get("inputs", [])
        if not isinstance(inputs, list):
            raise SymbolFileError(f"{where}.inputs: must be a list of entries, got {inputs!r}")
        for slot, item in enumerate(inputs):
            # an input refers to an earlier node: MXNet writes nodes in topological order
            _check_entry(item, position, f"{where}.inputs[{slot}]")
    for slot, item in enumerate(heads):
        _check_entry(item, len(nodes), f"heads[{slot}]")
    attrs = data.get("attrs")
    if attrs is not None and not isinstance(attrs, dict):
        raise SymbolFileError(f"field 'attrs' must be an object, got {type(attrs).__name__}")


def _check_entry(raw: Any, limit: int, where: str) -> None:
    """An entry is ``[node, index]`` or ``[node, index, version]`` with ``node < limit``."""
    if not isinstance(raw, list) or len(raw) not in (2, 3) or not all(map(_count, raw)):
        raise SymbolFileError(
            f"{where}: an entry must be [node, index] or [node, index, version] of "
            f"non-negative ints, got {raw!r}"
        )
    if raw[0] >= limit:
        raise SymbolFileError(
            f"{where}: entry {raw!r} refers to node {raw[0]}, but only nodes 0..{limit - 1} "
            f"come before it (nodes are listed inputs first)"
        )


def _string_dict(value: Any, where: str) -> dict[str, str]:
    if value is None:
        return {}
    return {
        str(key): item if isinstance(item, str) else json.dumps(item) for key, item in value.items()
    }


def _check_unknown_ops(raw_nodes: list[dict[str, Any]]) -> None:
    unknown: dict[str, list[str]] = {}
    for raw in raw_nodes:
        op_name = raw.get("op", "null")
        if op_name != "null" and registry.find(op_name) is None:
            unknown.setdefault(op_name, []).append(str(raw.get("name", "?")))
    if unknown:
        listed = "; ".join(
            f"{op} (node{'s' if len(names) > 1 else ''} {', '.join(names[:3])}"
            f"{', ...' if len(names) > 3 else ''})"
            for op, names in sorted(unknown.items())
        )
        raise SymbolFileError(
            f"the symbol file uses {len(unknown)} operator{'s' if len(unknown) > 1 else ''} "
            f"mxnb does not have: {listed}; register them (@mx.operator.register) "
            f"or check the file"
        )


def _is_legacy_hidden(key: str) -> bool:
    """MXNet's UpgradeJSON_FixParsing test: a hidden key as the whole key, its start or its end."""
    for hidden in HIDDEN_KEYS:
        position = key.rfind(hidden)
        if position == 0 or (position != -1 and position == len(key) - len(hidden)):
            return True
    return False


def _split_op_attrs(op_name: str, attrs: dict[str, str]) -> tuple[dict[str, str], dict[str, str]]:
    """Separate an op node's strings into its parameters and its other attributes."""
    declared = registry.get(op_name).prop_cls.params
    params: dict[str, str] = {}
    others: dict[str, str] = {}
    for key, value in attrs.items():
        if key in declared:
            params[key] = value
        elif key.startswith("__") and key.endswith("__"):
            others[key] = value
        elif op_name == "Custom":
            params[key] = value  # a custom op's kwargs go to its CustomOpProp
        else:
            others[key] = value  # a parameter mxnb's op does not declare: kept, written back
    return params, others


def _file_version(data: dict[str, Any]) -> int:
    """The ``mxnet_version`` a file was written by (0.8.0 when absent, as MXNet assumes)."""
    attrs = data.get("attrs") or {}
    value = attrs.get("mxnet_version")
    if value is None:
        return 800
    if not (isinstance(value, list) and len(value) == 2 and _count(value[1])):
        raise SymbolFileError(f'attrs.mxnet_version: expected ["int", version], got {value!r}')
    return value[1]


def _restore_hidden_keys(node: Node, hidden: dict[str, str]) -> None:
    """Put legacy hidden keys back as MXNet's UpgradeJSON_FixParsing does.

    ``lr_mult`` becomes ``__lr_mult__``; an op's ``weight_lr_mult`` becomes the
    ``__lr_mult__`` of the variable feeding its ``weight`` input; anything else stays as is.
    """
    for key, value in hidden.items():
        placed = False
        for hidden_key in HIDDEN_KEYS:
            position = key.rfind(hidden_key)
            if position == 0 and len(key) == len(hidden_key):
                node.attrs[f"__{hidden_key}__"] = value
                placed = True
                break
            if position > 1 and position == len(key) - len(hidden_key):
                if node.op is not None:
                    slots = [*node.op.list_arguments(), *node.op.list_auxiliary_states()]
                    argument = key[: position - 1]
                    slot = slots.index(argument) if argument in slots else len(node.inputs)
                    if slot < len(node.inputs) and node.inputs[slot].node.op is None:
                        node.inputs[slot].node.attrs[f"__{hidden_key}__"] = value
                        placed = True
                break
        if not placed:
            node.attrs[key] = value


def from_json(text: str | bytes) -> list[NodeEntry]:  # noqa: C901 -- MXNet's JSON loader and its legacy upgrades, one version check each
    """Read MXNet symbol JSON; return the head entries of the graph.

    Files older than MXNet 1.9.1 are upgraded as MXNet's LoadLegacyJSON pass
    does: hidden keys restored, aux-state variables added (before 0.9), and
    ``argmax``/``argmin``'s ``axis=-1`` dropped (before 0.9.5).
    """
    if isinstance(text, (bytes, bytearray)):
        try:
            text = bytes(text).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise SymbolFileError(
                f"not a symbol JSON file: byte {exc.start} is not UTF-8 text "
                f"(a binary file? params load with mx.nd.load)"
            ) from None
    try:
        data = json.loads(text)
    except (ValueError, RecursionError) as exc:  # JSONDecodeError, overlong ints, deep nesting
        reason = "nested too deeply" if isinstance(exc, RecursionError) else str(exc)
        raise SymbolFileError(f"not a symbol JSON file: {reason}") from None
    _check_document(data)
    version = _file_version(data)
    upgrading = version < MXNET_VERSION
    raw_nodes = data["nodes"]
    _check_unknown_ops(raw_nodes)
    nodes: list[Node] = []
    hidden_by_node: list[dict[str, str]] = []
    for position, raw in enumerate(raw_nodes):
        name = str(raw.get("name", ""))
        where = f"nodes[{position}] ({name!r})"
        merged = {
            **_string_dict(raw.get("param"), where),
            **_string_dict(raw.get("attr"), where),
            **_string_dict(raw.get("attrs"), where),
        }
        if raw.get("subgraphs"):
            raise GraphError(
                f"{where}: subgraphs (control-flow operators) are not supported by mxnb"
            )
        hidden = {}
        if upgrading:
            hidden = {key: value for key, value in merged.items() if _is_legacy_hidden(key)}
            merged = {key: value for key, value in merged.items() if key not in hidden}
        hidden_by_node.append(hidden)
        op_name = raw.get("op", "null")
        if op_name == "null":
            nodes.append(Node(None, name, [], merged))
            continue
        if version < 905 and op_name in ("argmax", "argmin") and merged.get("axis") == "-1":
            del merged["axis"]  # MXNet 0.9.5 made axis optional; -1 used to mean "all"
        params, attrs = _split_op_attrs(op_name, merged)
        try:
            prop = registry.get(op_name).create_property(**params)
        except (ParamError, ValueError, TypeError) as exc:
            raise SymbolFileParamError(f"{where}: {op_name} '{name}': {exc}") from exc
        nodes.append(Node(prop, name, [], attrs, params))
    variable_positions: dict[str, int] = {}
    for position, (raw, node) in enumerate(zip(raw_nodes, nodes)):
        where = f"nodes[{position}] ({node.name!r})"
        node.inputs = [NodeEntry(nodes[item[0]], item[1]) for item in raw.get("inputs", [])]
        if node.op is None:
            if node.inputs:
                raise SymbolFileError(f"{where}: a variable cannot have inputs")
            first = variable_positions.setdefault(node.name, position)
            if first != position:  # inputs are bound by name: two would get the same array
                raise SymbolFileError(
                    f"{where}: variable name {node.name!r} is already the name of nodes[{first}]; "
                    "variable names must be unique"
                )
            _check_variable_attrs(node, where)
    if upgrading:
        for node, hidden in zip(nodes, hidden_by_node):
            _restore_hidden_keys(node, hidden)
    for node in nodes:
        if node.op is None:
            continue
        arguments = node.op.list_arguments()
        aux_names = node.op.list_auxiliary_states()
        if len(node.inputs) == len(arguments) and aux_names and version < 900:
            # MXNet < 0.9 left aux states out of the graph: add them as MXNet's upgrade does,
            # named {node}_{aux} and carrying the node's attributes.
            inherited = {**node.params, **node.attrs}
            node.inputs += [
                NodeEntry(Node(None, f"{node.name}_{aux}", [], dict(inherited)), 0)
                for aux in aux_names
            ]
        expected = len(arguments) + len(aux_names)
        if len(node.inputs) != expected:
            raise SymbolFileError(
                f"{node.op.op_name} '{node.name}' in the symbol file has {len(node.inputs)} inputs "
                f"but takes {expected} ({', '.join([*arguments, *aux_names])})"
            )
        for entry in node.inputs:
            if entry.index >= entry.node.num_outputs():
                raise SymbolFileError(
                    f"{node.op.op_name} '{node.name}': input {entry.node.name!r} has no output "
                    f"{entry.index} (it has {entry.node.num_outputs()})"
                )
        if version < 904:
            set_input_var_attrs(node)  # MXNet 0.9.4 moved initialisers into variable attrs
    heads = [NodeEntry(nodes[item[0]], item[1]) for item in data["heads"]]
    for slot, head in enumerate(heads):
        if head.index >= head.node.num_outputs():
            raise SymbolFileError(
                f"heads[{slot}]: node {head.node.name!r} has no output {head.index} "
                f"(it has {head.node.num_outputs()})"
            )
    return heads


def _check_variable_attrs(node: Node, where: str) -> None:
    """A variable's ``__shape__`` / ``__dtype__`` must parse now, not fail later in infer_shape."""
    try:
        parse_shape_attr(node.attrs.get("__shape__"), partial=True)
    except ValueError:
        raise SymbolFileError(
            f"{where}: attribute __shape__ {node.attrs['__shape__']!r} is not a shape like '(32, 784)'"
        ) from None
    try:
        dtype = parse_dtype_attr(node.attrs.get("__dtype__"))
        if dtype is not None and dtype not in SUPPORTED_DTYPES:
            raise TypeError(dtype)
    except (ValueError, TypeError):
        raise SymbolFileError(
            f"{where}: attribute __dtype__ {node.attrs['__dtype__']!r} is not an MXNet type flag "
            f"or the name of a supported dtype"
        ) from None
