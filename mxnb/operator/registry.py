"""The operator registry: one table that ``mx.nd`` and ``mx.sym`` are generated from.

Idea (MXNet: ``MXNET_REGISTER_OP_PROPERTY`` / the nnvm op registry): an
operator is registered once, by name, with its property class.  Everything
else — ``mx.nd.Name``, ``mx.sym.Name``, ``help(mx.nd.Name)``, symbol JSON
loading — looks it up here, so a new operator appears everywhere without
extra code.  Python custom ops (``CustomOpProp`` subclasses) go to a second
table keyed by ``op_type`` and run through the ``Custom`` operator.

State kept:
    _OPS        name -> OpInfo for every operator (aliases share one OpInfo)
    _CUSTOM     op_type -> CustomOpProp subclass
    generation  bumped by every registration: a cache keyed by op name that
                saw this number needs no other check that its entry is current

Example::

    >>> from mxnb.operator import OperatorProperty, register, registry
    >>> @register('my_identity_doc_example')
    ... class IdentityProp(OperatorProperty):
    ...     '''Return the input unchanged.'''
    >>> registry.get('my_identity_doc_example').prop_cls is IdentityProp
    True
"""

from __future__ import annotations

import difflib
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..base import GraphError, SignatureError
from .base import OperatorProperty

__all__ = [
    "OpInfo",
    "find",
    "generation",
    "get",
    "get_custom",
    "list_ops",
    "make_docstring",
    "register",
    "register_alias",
]


@dataclass
class OpInfo:
    """What the registry knows of one operator."""

    name: str
    prop_cls: type[OperatorProperty]
    doc: str = ""
    aliases: list[str] = field(default_factory=list)

    def create_property(self, **kwargs: Any) -> OperatorProperty:
        """Return a property with ``kwargs`` parsed into its parameters."""
        return self.prop_cls(**kwargs)

    def positional_params(self, values: Sequence[Any], kwargs: dict[str, Any]) -> None:
        """Put positional values given after an op's inputs into ``kwargs`` as parameters.

        MXNet's generated ``mx.nd`` / ``mx.sym`` functions take the parameters, in
        declaration order, after the inputs: ``mx.nd.depth_to_space(x, 2)`` is
        ``block_size=2``.  A property's ``trailing_params`` go last (a sampler's
        ``shape, ctx, dtype`` follow its distribution's parameters, as in MXNet).  A parameter given both ways, or more values than
        parameters, is an error naming the op and its parameters.
        """
        trailing = [name for name in getattr(self.prop_cls, "trailing_params", ()) if name in
                    self.prop_cls.params]  # fmt: skip
        names = [name for name in self.prop_cls.params if name not in trailing] + trailing
        if len(values) > len(names):
            raise SignatureError(
                f"{self.name}: {len(values)} positional parameter value(s) after the inputs, "
                f"but the operator has {len(names)} parameter(s)"
                f"{' (' + ', '.join(names) + ')' if names else ''}; pass them by keyword"
            )
        for name, value in zip(names, values):
            if name in kwargs:
                raise SignatureError(
                    f"{self.name}: parameter {name!r} given both by position and by keyword"
                )
            kwargs[name] = value


_OPS: dict[str, OpInfo] = {}
_CUSTOM: dict[str, type] = {}
_lock = threading.Lock()
#: Bumped (under ``_lock``) by every register / register_alias; read it as
#: ``registry.generation`` (the imperative invoke compares it once per op).
generation = 0


def register(name: str) -> Callable[[type], type]:
    """Class decorator registering an operator under ``name``.

    An :class:`OperatorProperty` subclass becomes ``mx.nd.<name>`` and
    ``mx.sym.<name>``.  A ``CustomOpProp`` subclass becomes the op type
    ``name`` of ``mx.nd.Custom(..., op_type=name)``.  Registering a name again
    replaces the earlier definition (convenient while prototyping in a notebook).
    """

    def decorate(cls: type) -> type:
        global generation
        if getattr(cls, "_is_custom_op_prop", False):
            with _lock:
                _CUSTOM[name] = cls
                generation += 1
            cls._op_type = name  # type: ignore[attr-defined]
            return cls
        if not (isinstance(cls, type) and issubclass(cls, OperatorProperty)):
            raise TypeError(
                f"register({name!r}) decorates an OperatorProperty or CustomOpProp subclass, "
                f"not {cls!r}"
            )
        cls.type_string = name
        doc = (cls.__doc__ or "").strip()
        with _lock:
            _OPS[name] = OpInfo(name=name, prop_cls=cls, doc=doc)
            generation += 1
        return cls

    return decorate


def register_alias(alias: str, name: str) -> None:
    """Make ``alias`` another name of the registered operator ``name`` (``split`` of SliceChannel)."""
    global generation
    info = get(name)
    with _lock:
        _OPS[alias] = info
        generation += 1
        if alias not in info.aliases:
            info.aliases.append(alias)


def find(name: str) -> OpInfo | None:
    """Return the OpInfo registered as ``name``, or None."""
    return _OPS.get(name)


def get(name: str) -> OpInfo:
    """Return the OpInfo registered as ``name``; a GraphError with close matches otherwise."""
    info = _OPS.get(name)
    if info is None:
        close = difflib.get_close_matches(name, list(_OPS), n=3)
        hint = f"; did you mean {', '.join(close)}?" if close else ""
        raise GraphError(f"no operator named {name!r} is registered{hint}")
    return info


def list_ops() -> list[str]:
    """Return every registered operator name (aliases included), sorted."""
    return sorted(_OPS)


def get_custom(op_type: str) -> type:
    """Return the CustomOpProp class registered as ``op_type``."""
    cls = _CUSTOM.get(op_type)
    if cls is None:
        known = ", ".join(sorted(_CUSTOM)) or "none"
        raise GraphError(
            f"Custom: no custom operator registered as op_type={op_type!r} "
            f"(registered: {known}); decorate your CustomOpProp with @mx.operator.register({op_type!r})"
        )
    return cls


def make_docstring(name: str) -> str:
    """Build the docstring of ``mx.nd.<name>`` / ``mx.sym.<name>`` from the registry."""
    info = get(name)
    cls = info.prop_cls
    lines = [info.doc or f"The {name} operator.", "", "Parameters", "----------"]
    try:
        arguments = (
            cls().list_arguments() if not any(p.required for p in cls.params.values()) else None
        )
    except Exception:  # noqa: BLE001 - arguments may depend on parameters
        arguments = None
    for argument in arguments or ["data"]:
        lines.append(f"{argument} : NDArray or Symbol")
        lines.append("    Input array.")
    for pname, param in cls.params.items():
        lines.append(f"{pname} : {param.describe_type()}")
        if param.doc:
            lines.append(f"    {param.doc}")
    lines += [
        "out : NDArray, optional",
        "    The output array (mx.nd only).",
        "name : str, optional",
        "    The node name (mx.sym only).",
    ]
    return "\n".join(lines)
