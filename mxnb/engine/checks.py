"""Checking a push: what the engine accepts, refused in the caller's thread before anything is booked.

Idea: a push names a function, a context and two lists of vars.  Everything
wrong with them must fail at the push, in the pusher's thread, with an error
saying which op and which argument: found later, inside the engine, it would
leave a booked op that never runs.  The hot paths check types with one
``type(x) is ...`` each and call these functions only when that test fails.

Rule (MXNet's normalisation): duplicate vars are dropped, and a var both read
and written counts as a write.

State kept: none.

Example::

    >>> from mxnb.engine.var import Var
    >>> a, b = Var('a'), Var('b')
    >>> const, mutate = normalise([a, b, a], [b], 'op')
    >>> [v.name for v in const], [v.name for v in mutate]
    (['a'], ['b'])
"""

from __future__ import annotations

import numbers
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from ..base import EngineError, VarDeletedError
from ..context import Context
from .var import Var

__all__ = ["OperatorHandle", "check_fn_ctx", "check_options", "normalise", "refuse_deleted"]

SEQUENCES = (list, tuple)


@dataclass(eq=False)
class OperatorHandle:
    """A reusable op from :meth:`Engine.new_operator` (MXNet: ``NewOperator``)."""

    fn: Callable[..., Any]
    const_vars: tuple[Var, ...]
    mutate_vars: tuple[Var, ...]
    name: str
    copy: bool = False
    deleted: bool = False  # delete_operator was called


def check_vars(vars_: Iterable[Var] | None, what: str, op_name: str) -> tuple[Var, ...]:
    """``vars_`` as a tuple of Vars; an error naming the op and the slot for anything else."""
    if vars_ is None:
        return ()
    if type(vars_) is Var:
        raise EngineError(
            f"push of op '{op_name}': {what} must be a list of vars, got the single var "
            f"{vars_!r}; write [{vars_.name}] instead"
        )
    try:
        result = tuple(vars_)
    except TypeError:
        raise EngineError(
            f"push of op '{op_name}': {what} must be a list of vars, got {vars_!r}"
        ) from None
    for var in result:
        if type(var) is not Var:
            raise EngineError(
                f"push of op '{op_name}': {what} must hold engine vars (from new_var), "
                f"got {type(var).__name__} {var!r}"
            )
    return result


def check_options(priority: Any, name: Any, copy: Any) -> int:
    """Check a push's priority, name and copy flag before anything is booked; return the priority.

    A wrongly typed option must fail here, in the caller's thread: found later,
    inside the engine, it would leave a booked op that never runs.
    """
    label = name if isinstance(name, str) and name else "op"
    if not isinstance(name, str):
        raise EngineError(f"push of op {name!r}: name must be a str, got {type(name).__name__}")
    if isinstance(priority, bool) or not isinstance(priority, numbers.Integral):
        raise EngineError(
            f"push of op '{label}': priority must be an int (larger runs first), got {priority!r}"
        )
    if not isinstance(copy, bool):
        raise EngineError(f"push of op '{label}': copy must be True or False, got {copy!r}")
    return int(priority)


def vars_of(vars_: Any, what: str, op_name: str) -> tuple[Var, ...]:
    """``vars_`` as a tuple of distinct vars; one or two vars in a list or tuple take no loop."""
    if type(vars_) is tuple and len(vars_) == 1 and type(vars_[0]) is Var:
        return vars_  # the commonest push: one var, already a tuple
    kind = type(vars_)
    if kind is tuple or kind is list:
        count = len(vars_)
        if count == 1:
            var = vars_[0]
            if type(var) is Var:
                return vars_ if kind is tuple else (var,)
        elif count == 2:
            first, second = vars_
            if type(first) is Var and type(second) is Var:
                return (first, second) if first is not second else (first,)
        elif not count:
            return ()
    result = check_vars(vars_, what, op_name)
    return tuple(dict.fromkeys(result)) if len(result) > 1 else result


def normalise(
    const_vars: Iterable[Var] | None, mutate_vars: Iterable[Var] | None, name: str
) -> tuple[tuple[Var, ...], tuple[Var, ...]]:
    """Drop duplicates; a var both read and written counts as a write."""
    const = vars_of(const_vars, "const_vars", name) if const_vars else ()
    mutate = vars_of(mutate_vars, "mutate_vars", name) if mutate_vars else ()
    if const and mutate:
        for var in const:
            if var in mutate:
                return tuple([v for v in const if v not in mutate]), mutate
    return const, mutate


def check_ctx(ctx: Any, name: str) -> None:
    """Refuse a ``ctx`` that is not a :class:`~mxnb.Context`."""
    if type(ctx) is not Context:
        raise EngineError(
            f"push of op '{name}': ctx must be a mxnb.Context such as mx.cpu(), got {ctx!r}"
        )


def check_fn_ctx(fn: Any, ctx: Any, name: str) -> None:
    """Refuse an ``fn`` that is not callable, then a bad ``ctx``."""
    if not callable(fn):
        raise EngineError(f"push of op '{name or fn!r}': fn must be callable, got {fn!r}")
    check_ctx(ctx, name or getattr(fn, "__name__", "op"))


def refuse_deleted(const: tuple[Var, ...], mutate: tuple[Var, ...], name: str) -> None:
    """Raise :class:`VarDeletedError` for the first deleted var of a push (call under the lock)."""
    for var in const:
        if var.deleted:
            raise VarDeletedError(
                f"push of op '{name}': var {var.name!r} (id {var.id}) was deleted "
                "with push_delete; it cannot be read any more"
            )
    for var in mutate:
        if var.deleted:
            raise VarDeletedError(
                f"push of op '{name}': var {var.name!r} (id {var.id}) was deleted "
                "with push_delete; it cannot be written or deleted again"
            )
