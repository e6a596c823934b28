"""The statements fused kernels are written in: one text, valid Python and valid CUDA C.

Idea: a fused kernel (:mod:`.fused`) is written once as lines ``name =
expression`` and run three ways: compiled as CUDA C on a GPU, evaluated
operator by operator into its outputs on any array module (the plain path),
and, for small arrays, as one Python function of array expressions.  This
module is the language: what a statement may say, and the two ways Python
runs it.

Rule:
    * An expression is made of names, integer literals, ``+ - * /``, unary
      minus, parentheses and the functions of :data:`FUNCTIONS`.  Anything
      that means something else in C is refused, with the line and the
      reason: ``x ** 2``, ``0.5`` (a double in C), ``1 / 2`` (0 in C).
      ``abs``, ``clip`` and ``sign``, which CUDA's math library lacks for T, are defined by
      :data:`PREAMBLE` for the kernels that call them.  A function of a
      Python number alone (``sqrt(eps)``, ``eps`` given as ``1e-5``) is
      computed in double by numpy and in T by C, so it is refused: pass
      ``eps`` as a numpy scalar of the arrays' dtype (C's T), or the value in.
    * **The plain path** (:func:`evaluate`): an expression given ``out`` is
      computed *into* it.  An operand that is itself an expression is
      evaluated into ``out`` (the left one when both are), the other applied
      with ``out=``, so no temporary of the output's size is made, unless the
      other side reads memory ``out`` shares (:func:`reads`): then
      ``out=weight`` goes through a temporary and stays correct.  A temporary
      the evaluation made itself takes the next result that fits it
      (:func:`holds`), so ``1 - y * y`` makes one temporary, not two.  A part
      that is a number (``1 - beta1``) stays a number, as in the Python
      form, until the statement writes it.
    * **The Python form** (:func:`python_source`): the same expressions as
      numpy evaluates them, each output's last operation written into it
      (``out=``).  It gives
      the plain path's values bit for bit (``tests/operator/test_fused.py``
      runs every kernel of the library both ways, and
      ``test_statements.py`` random ones) at a fraction of its bookkeeping,
      and a temporary per operator.

State kept: on each checked node, the names it reads (``reads``), whether
its two sides are one expression (``same_sides``), and its plain path
(``run``), compiled once.

Example::

    >>> import ast, numpy as np
    >>> node = ast.parse("g * (1 - y * y)", mode="eval").body
    >>> check(node, "tanh_grad")
    >>> out = np.empty(3)
    >>> evaluate(node, {"g": np.ones(3), "y": np.array([0.0, 0.5, 1.0])}, np, out).tolist()
    [1.0, 0.75, 0.0]
    >>> print(python_source("tanh_grad", ("g", "y"), ("dx",), [("dx", node)]))
    def tanh_grad(xp, g, y, dx):
        xp.multiply(g, 1 - y * y, out=dx)
"""

from __future__ import annotations

import ast
import operator
from collections.abc import Sequence
from typing import Any

__all__ = [
    "FUNCTIONS",
    "PREAMBLE",
    "check",
    "evaluate",
    "holds",
    "is_leaf",
    "names",
    "numbers_alone",
    "python_source",
    "reads",
]

#: Functions a statement may call, with their number of arguments: the same name on ``xp``
#: and in CUDA C (its math library, or :data:`PREAMBLE` for ``abs``, ``clip``, ``maximum`` and
#: ``sign``).
FUNCTIONS = {
    "sqrt": 1, "exp": 1, "log": 1, "tanh": 1, "abs": 1, "clip": 3, "sign": 1, "maximum": 2,
}  # fmt: skip

#: CUDA C for the functions CUDA's math library lacks, given to a kernel that calls them, each
#: numpy's: ``abs(x)`` for any T (C's ``abs`` takes an int) is 0 for -0.0; ``clip(x, low,
#: high)`` keeps a NaN (CUDA's ``fminf`` / ``fmaxf`` drop it); ``sign(x)`` is 0 for -0.0 and
#: NaN for NaN; ``maximum(a, b)`` keeps a NaN of either side and gives ``b`` when the two are
#: equal (``maximum(-0.0, 0.0)`` is 0.0, as numpy's: a ReLU's ``maximum(x, 0)``).
PREAMBLE = {
    "abs": "template <typename T> __device__ T abs(T x) "
    "{ return x < T(0) ? -x : (x == T(0) ? T(0) : x); }",
    "clip": "template <typename T> __device__ T clip(T x, T low, T high) "
    "{ return x > high ? high : (x < low ? low : x); }",
    "sign": "template <typename T> __device__ T sign(T x) "
    "{ return x > T(0) ? T(1) : (x < T(0) ? T(-1) : (x == T(0) ? T(0) : x)); }",
    "maximum": "template <typename T, typename U> __device__ T maximum(T a, U b) "
    "{ return (a > T(b) || a != a) ? a : T(b); }",
}

_UFUNCS = {ast.Add: "add", ast.Sub: "subtract", ast.Mult: "multiply", ast.Div: "true_divide"}
_NUMBERS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
            ast.Div: operator.truediv}  # fmt: skip


def names(node: ast.AST) -> set[str]:
    """The names an expression reads (the functions it calls are not names: they are reserved)."""
    return {
        child.id
        for child in ast.walk(node)
        if isinstance(child, ast.Name) and child.id not in FUNCTIONS
    }


def check(node: ast.AST, where: str) -> None:
    """Refuse anything that is not the same expression in Python and in CUDA C.

    Notes on each node the names it reads (``reads``) and its plain path (``run``).
    """
    _check_node(node, where)
    for child in ast.walk(node):
        if isinstance(child, (ast.Name, ast.Constant, ast.UnaryOp, ast.Call, ast.BinOp)):
            child.run = _compile(child)  # type: ignore[attr-defined]


def _check_node(node: ast.AST, where: str) -> None:
    """:func:`_check` of one node and its operands (``reads`` noted on each)."""
    node.reads = frozenset(names(node))  # type: ignore[attr-defined]
    if isinstance(node, ast.Name):
        return
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return
    if isinstance(node, ast.BinOp) and type(node.op) in _UFUNCS:
        if isinstance(node.left, ast.Constant) and isinstance(node.right, ast.Constant):
            raise ValueError(f"{where}: a literal on both sides ({ast.unparse(node)}) "
                             "divides differently in C; write its value")  # fmt: skip
        _check_node(node.left, where)
        _check_node(node.right, where)
        # ``d * d``: the plain path computes the side once (a square needs no temporary)
        node.same_sides = ast.dump(node.left) == ast.dump(node.right)  # type: ignore[attr-defined]
        return
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        _check_node(node.operand, where)
        return
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id in FUNCTIONS
        and len(node.args) == FUNCTIONS[node.func.id]
        and not node.keywords
    ):
        for argument in node.args:
            _check_node(argument, where)
        return
    raise ValueError(
        f"{where}: {ast.unparse(node)!r} is not both Python and CUDA C; use names, integer "
        f"literals, + - * /, unary minus, sqrt(x), exp(x), log(x), tanh(x), abs(x), sign(x), "
        f"maximum(a, b) and clip(x, low, high)"
    )


def evaluate(node: ast.AST, values: dict[str, Any], xp: Any, out: Any = None) -> Any:
    """The value of ``node`` on ``xp``; computed into ``out`` when it is given (see the rule).

    Inside, a part that is a number stays a number (``(1 - beta1)``, ``sqrt(eps)``), as in the
    Python form; only here, at the statement, is it written into ``out``.
    """
    value = node.run(values, xp, out)  # type: ignore[attr-defined]
    if out is None or value is out:
        return value
    out[...] = value
    return out


def _compile(node: ast.AST) -> Any:
    """``run(values, xp, out)`` for a checked node: the plain path's evaluation of it, made once.

    The rule's choices that depend only on the expression (which side is a
    leaf, whether both sides are the same) are made here; the ones that
    depend on the arrays (does a side read ``out``?) when it runs.
    """
    if isinstance(node, (ast.Name, ast.Constant)):
        name, constant = getattr(node, "id", None), getattr(node, "value", None)

        def leaf(values: dict[str, Any], xp: Any, out: Any) -> Any:
            return constant if name is None else values[name]  # :func:`evaluate` writes it

        return leaf
    if isinstance(node, (ast.UnaryOp, ast.Call)):
        inner, *rest = (node.operand,) if isinstance(node, ast.UnaryOp) else node.args  # type: ignore[attr-defined]
        function = "negative" if isinstance(node, ast.UnaryOp) else node.func.id  # type: ignore[attr-defined]
        computed = not is_leaf(inner)

        def call(values: dict[str, Any], xp: Any, out: Any) -> Any:
            # the first argument goes into ``out`` when it is an array computed here and no
            # other argument reads ``out``
            into = out if computed and _reads_an_array(inner, values) else None
            if rest and into is not None and any(reads(a, values, into, xp) for a in rest):
                into = None
            value = inner.run(values, xp, into)  # type: ignore[attr-defined]
            others = [argument.run(values, xp, None) for argument in rest]
            if not getattr(value, "ndim", 0):  # a number: it stays one, as in the Python form
                if function != "negative" and numbers_alone(inner, values):
                    raise ValueError(
                        f"{ast.unparse(node)}: {function}() of a Python number alone (here "
                        f"{value!r}) is computed in double by numpy but in T by C; pass it in "
                        f"computed, or as a numpy scalar of the arrays' dtype"
                    )
                return -value if function == "negative" else getattr(xp, function)(value, *others)
            if out is None and computed and all(holds(value, o) for o in others or [None]):
                out = value  # a temporary of this evaluation's own: reused
            function_of = getattr(xp, function)
            return (
                function_of(value, *others) if out is None else function_of(value, *others, out=out)
            )

        return call
    assert isinstance(node, ast.BinOp)
    return _compile_binary(node)


def _compile_binary(node: ast.BinOp) -> Any:
    """:func:`_compile` of ``a op b``: which side goes into ``out``, and which temporary is reused."""
    left, right, name = node.left, node.right, _UFUNCS[type(node.op)]
    number, same = _NUMBERS[type(node.op)], node.same_sides  # type: ignore[attr-defined]
    # ``x - (a * b)``: the right side goes into ``out``
    right_first = is_leaf(left) and not is_leaf(right)
    left_computed, right_computed = not is_leaf(left), not is_leaf(right)

    def binary(values: dict[str, Any], xp: Any, out: Any) -> Any:
        ufunc = getattr(xp, name)
        if out is not None and right_first and not reads(left, values, out, xp):
            b = right.run(values, xp, out)  # type: ignore[attr-defined]
            return ufunc(left.run(values, xp, None), b, out=out)  # type: ignore[attr-defined]
        # the left side goes into ``out`` when it is computed and the right side does not read it
        into = (
            out if left_computed and out is not None and not reads(right, values, out, xp) else None
        )
        a = left.run(values, xp, into)  # type: ignore[attr-defined]
        b = a if same else right.run(values, xp, None)  # type: ignore[attr-defined]
        if not getattr(a, "ndim", 0) and not getattr(b, "ndim", 0):  # two numbers: a number
            return number(a, b)
        if out is None:  # a temporary of this evaluation's own takes the result, where it fits
            out = a if left_computed and holds(a, b) else None
            out = b if out is None and not same and right_computed and holds(b, a) else out
        return ufunc(a, b) if out is None else ufunc(a, b, out=out)

    return binary


def holds(value: Any, other: Any) -> bool:
    """Whether ``value``, a fresh result, can hold ``op(value, other)``: a numpy or cupy float
    array of the result's shape and dtype (``other`` a number, None, or an array no larger of
    that dtype).  Not an NDArray (higher-order gradients run maps on ``mx.nd``): its
    functions take no ``out=``."""
    if type(value).__module__.partition(".")[0] not in ("numpy", "cupy"):
        return False
    shape, dtype = getattr(value, "shape", ()), getattr(value, "dtype", None)
    if not shape or dtype is None or dtype.kind != "f":  # a number or a numpy scalar
        return False
    if not hasattr(other, "dtype"):
        return True
    other_shape = tuple(other.shape)
    return other.dtype == dtype and (
        len(other_shape) <= len(shape)
        and all(o in (1, s) for o, s in zip(reversed(other_shape), reversed(shape)))
    )


def numbers_alone(node: ast.AST, values: dict[str, Any]) -> bool:
    """Whether ``node`` reads Python numbers alone (or nothing): a function of such a value is
    refused, since numpy computes it in double and C in T (see the rule)."""
    return all(type(values.get(name)) in (int, float) for name in node.reads)  # type: ignore[attr-defined]


def _reads_an_array(node: ast.AST, values: dict[str, Any]) -> bool:
    """Whether ``node`` reads an array (else it is computed as a number, in its own precision)."""
    return any(getattr(values[name], "ndim", 0) for name in node.reads)  # type: ignore[attr-defined]


def is_leaf(node: ast.AST) -> bool:
    """Whether ``node`` is a name or a literal (nothing to compute)."""
    return isinstance(node, (ast.Name, ast.Constant))


def reads(node: ast.AST, values: dict[str, Any], out: Any, xp: Any) -> bool:
    """Whether ``node`` reads memory ``out`` may share (so ``out`` cannot hold a value before it)."""
    for name in node.reads:  # type: ignore[attr-defined]
        value = values[name]
        if value is out or (getattr(value, "ndim", 0) and xp.may_share_memory(value, out)):
            return True
    return False


def python_source(name: str, inputs: Sequence[str], outputs: Sequence[str],
                   statements: Sequence[tuple[str, ast.expr]]) -> str:  # fmt: skip
    """The statements as one Python function ``name(xp, *inputs, *outputs)``: each expression as
    numpy evaluates it (``xp.sqrt`` for ``sqrt``).  An output's last operation writes into it
    (``xp.multiply(a, b, out=y)``: the same bits as ``y[...] = a * b``, without the copy); an
    output that is a name or a number is assigned with ``[...] =``."""

    class OnXp(ast.NodeTransformer):
        def visit_Call(self, node: ast.Call) -> ast.AST:  # noqa: N802 - ast's name
            self.generic_visit(node)
            node.func = ast.Attribute(ast.Name("xp", ast.Load()), node.func.id, ast.Load())  # type: ignore[attr-defined]
            return node

    lines = [f"def {name}(xp, {', '.join((*inputs, *outputs))}):"]
    for target, expression in statements:
        node = OnXp().visit(ast.parse(ast.unparse(expression), mode="eval")).body
        if target not in outputs:
            lines.append(f"    {target} = {ast.unparse(node)}")
        elif isinstance(node, ast.BinOp):
            left, right = ast.unparse(node.left), ast.unparse(node.right)
            lines.append(f"    xp.{_UFUNCS[type(node.op)]}({left}, {right}, out={target})")
        elif isinstance(node, ast.UnaryOp):
            lines.append(f"    xp.negative({ast.unparse(node.operand)}, out={target})")
        elif isinstance(node, ast.Call):
            arguments = ", ".join(ast.unparse(argument) for argument in node.args)
            lines.append(f"    {ast.unparse(node.func)}({arguments}, out={target})")
        else:
            lines.append(f"    {target}[...] = {ast.unparse(node)}")
    return "\n".join(lines)
