"""Fused kernels: the math written once, one kernel on a GPU, the same statements on numpy.

Idea (MXNet: the hand-fused CUDA kernels of src/operator/nn/batch_norm.cu):
an op such as BatchNorm is a handful of elementwise formulas and sums.
Run as array expressions, each operator is its own pass over memory and, on a
GPU, its own kernel launch: the first GPU run measured a BatchNorm as a
string of small kernels taking 0.8-1.5 ms.  A :class:`FusedMap` is written as
statements ``name = expression`` whose text is at once valid Python and
valid CUDA C (names, integer literals, ``+ - * /``, unary minus, parentheses
and the functions in :data:`FUNCTIONS`), so the one text becomes one
``cupy.ElementwiseKernel`` on a GPU and is evaluated statement by statement
on numpy (or any array module: the strict stand-in for cupy in the tests, or
cupy itself as the plain path).  A :class:`FusedSum` is a map expression
summed over axes: one ``cupy.ReductionKernel`` on a GPU, the map then
``xp.sum`` elsewhere.

Rule:
    * Statements run in order; a statement names an output (assigned) or a
      local (a value later statements read).  An output may also be read:
      ``moving = moving * momentum + mean * rest`` updates in place.
    * On numpy an output is computed *into* its array: an operand that is
      itself an expression is evaluated into the output (the left one when
      both are), the other applied with ``out=``, so no
      temporary of the output's size is made (unless the other side reads
      memory the output shares: ``out=weight`` is safe).  An output may be
      the same memory as an input, not a shifted part of one.  A temporary
      the evaluation made itself takes the next result that fits it, so
      ``1 - y * y`` makes one temporary, not two.
      A sum of a product ``a * b`` is a dot (``einsum``): the product is
      never stored.
    * On numpy, a call given its outputs runs one block at a time
      (:func:`.split.in_blocks`): what an operand needs computed apart from
      the output (``g * (1 - y * y)`` when ``out`` is ``g``) takes a block's
      memory, not the array's, and the block stays in the cache.
    * On a GPU the compiled kernel is the fast path and the statement-by-
      statement evaluation on cupy the plain one: the first call for each
      dtype runs both and compares (``_Guarded._verify``); a kernel that
      fails to compile or disagrees is dropped for the plain path, with a
      warning, and never used again.  No unchecked kernel computes a result.

State kept: the parsed statements (each node noting the names it reads);
per array module, the compiled ``cupy`` kernel or False once dropped, and
the dtypes it was verified for.

Example::

    >>> import numpy as np
    >>> shift = FusedMap("shift", inputs=("x", "scale", "beta"), outputs=("y",),
    ...                  statements="y = x * scale + beta")
    >>> shift(np, np.arange(3.0), 2.0, 1.0)[0].tolist()
    [1.0, 3.0, 5.0]
    >>> total = FusedSum("centered_square", inputs=("x", "mean"), map_expr="(x - mean) * (x - mean)")
    >>> total(np, np.array([[1.0, 3.0]]), 2.0, axis=(1,)).tolist()
    [2.0]
"""

from __future__ import annotations

import ast
import functools
import operator
import warnings
from collections.abc import Sequence
from typing import Any

from .split import in_blocks

__all__ = ["FUNCTIONS", "FusedMap", "FusedSum", "is_cupy"]

#: Functions a statement may call: the same name in CUDA's math library and on ``xp``.
FUNCTIONS = ("sqrt", "exp", "log", "tanh")

_UFUNCS = {ast.Add: "add", ast.Sub: "subtract", ast.Mult: "multiply", ast.Div: "true_divide"}
_NUMBERS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
            ast.Div: operator.truediv}  # fmt: skip


def is_cupy(xp: Any) -> bool:
    """True when ``xp`` is cupy itself (a real GPU), not numpy or a stand-in for cupy."""
    return getattr(xp, "__name__", None) == "cupy"


def _names(node: ast.AST) -> set[str]:
    """The names an expression reads (the functions it calls are not names: they are reserved)."""
    return {
        child.id
        for child in ast.walk(node)
        if isinstance(child, ast.Name) and child.id not in FUNCTIONS
    }


def _check(node: ast.AST, where: str) -> None:
    """Refuse anything that is not the same expression in Python and in CUDA C.

    Notes on each node the names it reads (``reads``) and its plain path (``run``).
    """
    _check_node(node, where)
    for child in ast.walk(node):
        if isinstance(child, (ast.Name, ast.Constant, ast.UnaryOp, ast.Call, ast.BinOp)):
            child.run = _compile(child)  # type: ignore[attr-defined]


def _check_node(node: ast.AST, where: str) -> None:
    """:func:`_check` of one node and its operands (``reads`` noted on each)."""
    node.reads = frozenset(_names(node))  # type: ignore[attr-defined]
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
        and len(node.args) == 1
        and not node.keywords
    ):
        _check_node(node.args[0], where)
        return
    raise ValueError(
        f"{where}: {ast.unparse(node)!r} is not both Python and CUDA C; use names, integer "
        f"literals, + - * /, unary minus and {', '.join(FUNCTIONS)}(x)"
    )


def _evaluate(node: ast.AST, values: dict[str, Any], xp: Any, out: Any = None) -> Any:
    """The value of ``node`` on ``xp``; computed into ``out`` when it is given (see the rule)."""
    return node.run(values, xp, out)  # type: ignore[attr-defined]


def _compile(node: ast.AST) -> Any:
    """``run(values, xp, out)`` for a checked node: the plain path's evaluation of it, made once.

    The rule's choices that depend only on the expression (which side is a
    leaf, whether both sides are the same) are made here; the ones that
    depend on the arrays (does a side read ``out``?) when it runs.
    """
    if isinstance(node, (ast.Name, ast.Constant)):
        name, constant = getattr(node, "id", None), getattr(node, "value", None)

        def leaf(values: dict[str, Any], xp: Any, out: Any) -> Any:
            value = constant if name is None else values[name]
            if out is None:
                return value
            out[...] = value
            return out

        return leaf
    if isinstance(node, (ast.UnaryOp, ast.Call)):
        inner = node.operand if isinstance(node, ast.UnaryOp) else node.args[0]
        function = "negative" if isinstance(node, ast.UnaryOp) else node.func.id  # type: ignore[attr-defined]
        computed = not _leaf(inner)

        def unary(values: dict[str, Any], xp: Any, out: Any) -> Any:
            value = inner.run(values, xp, out if computed else None)  # type: ignore[attr-defined]
            ufunc = getattr(xp, function)
            if out is None and computed and _holds(value, None):
                out = value  # a temporary of this evaluation's own: reused
            return ufunc(value) if out is None else ufunc(value, out=out)

        return unary
    assert isinstance(node, ast.BinOp)
    return _compile_binary(node)


def _compile_binary(node: ast.BinOp) -> Any:
    """:func:`_compile` of ``a op b``: which side goes into ``out``, and which temporary is reused."""
    left, right, name = node.left, node.right, _UFUNCS[type(node.op)]
    number, same = _NUMBERS[type(node.op)], node.same_sides  # type: ignore[attr-defined]
    right_first = _leaf(left) and not _leaf(right)  # ``x - (a * b)``: the right side into ``out``
    left_computed, right_computed = not _leaf(left), not _leaf(right)

    def binary(values: dict[str, Any], xp: Any, out: Any) -> Any:
        ufunc = getattr(xp, name)
        if out is not None and right_first and not _reads(left, values, out, xp):
            b = right.run(values, xp, out)  # type: ignore[attr-defined]
            return ufunc(left.run(values, xp, None), b, out=out)  # type: ignore[attr-defined]
        # the left side goes into ``out`` when it is computed and the right side does not read it
        into = (
            out
            if left_computed and out is not None and not _reads(right, values, out, xp)
            else None
        )
        a = left.run(values, xp, into)  # type: ignore[attr-defined]
        b = a if same else right.run(values, xp, None)  # type: ignore[attr-defined]
        if not hasattr(a, "dtype") and not hasattr(b, "dtype"):  # two numbers: as C would
            value = number(a, b)
            if out is None:
                return value
            out[...] = value
            return out
        if out is None:  # a temporary of this evaluation's own takes the result, where it fits
            out = a if left_computed and _holds(a, b) else None
            out = b if out is None and not same and right_computed and _holds(b, a) else out
        return ufunc(a, b) if out is None else ufunc(a, b, out=out)

    return binary


def _holds(value: Any, other: Any) -> bool:
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


def _leaf(node: ast.AST) -> bool:
    return isinstance(node, (ast.Name, ast.Constant))


def _reads(node: ast.AST, values: dict[str, Any], out: Any, xp: Any) -> bool:
    """Whether ``node`` reads memory ``out`` may share (so ``out`` cannot hold a value before it)."""
    for name in node.reads:  # type: ignore[attr-defined]
        value = values[name]
        if value is out or (hasattr(value, "shape") and xp.may_share_memory(value, out)):
            return True
    return False


class _Guarded:
    """The fast path's guard, shared by both kernels: compile once per cupy, verify once per dtype.

    ``_compiled`` maps ``id(xp)`` to the compiled kernel, or to False once it
    was dropped; ``_verified`` holds ``(id(xp), dtype)`` pairs.
    """

    name: str

    def __init__(self) -> None:
        self._compiled: dict[int, Any] = {}
        self._verified: set[tuple[int, str]] = set()

    def _kernel(self, xp: Any, args: Sequence[Any]) -> tuple[Any, bool]:
        """(the kernel to run or None for the plain path, whether this call must verify it)."""
        if not is_cupy(xp) or self._compiled.get(id(xp)) is False:
            return None, False
        dtype = next(str(a.dtype) for a in args if hasattr(a, "dtype"))
        kernel = self._compiled.get(id(xp))
        return kernel, kernel is None or (id(xp), dtype) not in self._verified

    def _verify(
        self, xp: Any, args: Sequence[Any], run: Any, expected: Sequence[Any], slack: Any = 0
    ) -> bool:
        """Compile if needed, ``run(kernel)`` and compare with ``expected``; drop it on any failure."""
        try:
            kernel = self._compiled.get(id(xp)) or self.compile(xp)
            self._compiled[id(xp)] = kernel
            why = _disagreement(run(kernel), expected, slack)
        except Exception as exc:  # noqa: BLE001 - any failure drops the kernel for the plain path
            why = f"{type(exc).__name__}: {exc}"
        if why:
            warnings.warn(f"fused kernel {self.name!r} dropped for the plain path: {why}",
                          RuntimeWarning, stacklevel=3)  # fmt: skip
            self._compiled[id(xp)] = False
            return False
        dtype = next(str(a.dtype) for a in args if hasattr(a, "dtype"))
        self._verified.add((id(xp), dtype))
        return True

    def compile(self, xp: Any) -> Any:
        """The cupy kernel object (made once per array module)."""
        raise NotImplementedError


class FusedMap(_Guarded):
    """An elementwise kernel written once: statements in Python-and-C (see the module docstring)."""

    def __init__(
        self,
        name: str,
        inputs: Sequence[str],
        outputs: Sequence[str],
        statements: str,
    ) -> None:
        super().__init__()
        self.name = name
        self.inputs = tuple(inputs)
        self.outputs = tuple(outputs)
        self.statements: list[tuple[str, ast.expr]] = []
        known = set(self.inputs) | set(self.outputs)
        for line in filter(None, (part.strip() for part in statements.splitlines())):
            target, _, text = line.partition("=")
            target, where = target.strip(), f"FusedMap {name!r}: {line!r}"
            if not target.isidentifier() or target in FUNCTIONS or not text:
                raise ValueError(f"{where}: write one 'name = expression' per line")
            expression = ast.parse(text.strip(), mode="eval").body
            _check(expression, where)
            unknown = _names(expression) - known
            if unknown:
                raise ValueError(f"{where}: reads {sorted(unknown)} before any statement sets "
                                 f"them (inputs: {list(self.inputs)})")  # fmt: skip
            known.add(target)
            self.statements.append((target, expression))
        missing = set(self.outputs) - {target for target, _ in self.statements}
        if missing:
            raise ValueError(f"FusedMap {name!r}: no statement sets outputs {sorted(missing)}")

    def __repr__(self) -> str:
        return f"FusedMap({self.name!r}, {len(self.statements)} statements)"

    def source(self) -> str:
        """The CUDA C body: ``T name = ...;`` for a local, ``name = ...;`` for an output."""
        return "\n".join(
            f"{'' if target in self.outputs else 'T '}{target} = {ast.unparse(expression)};"
            for target, expression in self.statements
        )

    def evaluate(self, xp: Any, *args: Any, out: Sequence[Any] | None = None) -> tuple:
        """The plain path: every statement as array operations on ``xp``, outputs into ``out``."""
        values = dict(zip(self.inputs, args, strict=True))
        given = dict(zip(self.outputs, out or (), strict=False))
        values.update(given)  # an output may be read before it is set (an update in place)
        for target, expression in self.statements:
            values[target] = _evaluate(expression, values, xp, given.get(target))
        return tuple(values[name] for name in self.outputs)

    def __call__(self, xp: Any, *args: Any, out: Sequence[Any] | None = None) -> tuple:
        """The outputs for ``args`` (arrays or numbers), computed into ``out`` where given.

        On cupy: one compiled kernel, verified against the plain path on its
        first call for the inputs' dtype.  Elsewhere: the plain path.
        """
        if len(args) != len(self.inputs):
            raise TypeError(f"FusedMap {self.name!r} takes {len(self.inputs)} inputs "
                            f"{list(self.inputs)}, got {len(args)}")  # fmt: skip
        kernel, verify = self._kernel(xp, args)
        if kernel is None and not verify:
            if not out:
                return self.evaluate(xp, *args)
            block = functools.partial(self._evaluate_block, xp)
            in_blocks(xp, block, args, out)  # on numpy, a block at a time
            return tuple(out)
        outs = list(out) if out else self.empty_outputs(xp, args)
        if not verify:
            kernel(*args, *outs)
            return tuple(outs)
        expected = self.evaluate(xp, *args, out=[o.copy() for o in outs])

        def run(compiled: Any) -> list:
            compiled(*args, *outs)
            return outs

        if not self._verify(xp, args, run, expected):
            for target, value in zip(outs, expected):
                target[...] = value
        return tuple(outs)

    def _evaluate_block(self, xp: Any, *arrays: Any) -> None:
        """:meth:`evaluate` of one block: the inputs' parts, then the outputs' (``in_blocks``)."""
        count = len(self.inputs)
        self.evaluate(xp, *arrays[:count], out=arrays[count:])

    def empty_outputs(self, xp: Any, args: Sequence[Any]) -> list:
        """An empty array per output: the inputs' broadcast shape, the first array's dtype."""
        arrays = [a for a in args if hasattr(a, "shape")]
        shape = xp.broadcast(*arrays).shape if len(arrays) > 1 else arrays[0].shape
        return [xp.empty(shape, dtype=arrays[0].dtype) for _ in self.outputs]

    def compile(self, xp: Any) -> Any:
        """The cupy ``ElementwiseKernel`` of these statements (every input and output of type T)."""
        return xp.ElementwiseKernel(
            ", ".join(f"T {name}" for name in self.inputs),
            ", ".join(f"T {name}" for name in self.outputs),
            self.source(),
            f"mxnb_{self.name}",
        )


class FusedSum(_Guarded):
    """``sum(map_expr)`` over ``axis``, written once: one reduction kernel on a GPU."""

    def __init__(self, name: str, inputs: Sequence[str], map_expr: str) -> None:
        super().__init__()
        self.name = name
        self.inputs = tuple(inputs)
        # the map as one statement of a FusedMap: the same checks and the same evaluation
        self._map = FusedMap(name, inputs, ("mapped",), f"mapped = {map_expr}")
        self.map_expr = ast.unparse(self._map.statements[0][1])

    def __repr__(self) -> str:
        return f"FusedSum({self.name!r}, {self.map_expr!r})"

    def evaluate(self, xp: Any, *args: Any, axis: tuple[int, ...], scratch: Any = None) -> Any:
        """The plain path: the map (into ``scratch`` when given), then ``xp.sum`` over ``axis``.

        A map that is a product ``a * b`` is summed as a dot (``xp.einsum``): its
        sides are computed (the first into ``scratch``), their product never stored.
        """
        expression = self._map.statements[0][1]
        values = dict(zip(self.inputs, args, strict=True))
        if scratch is not None and _reads(expression, values, scratch, xp):
            scratch = None  # the map reads memory the scratch shares
        if isinstance(expression, ast.BinOp) and isinstance(expression.op, ast.Mult):
            first, second = expression.left, expression.right
            if _leaf(first):  # the scratch goes to the side that is computed
                first, second = second, first
            left = _evaluate(first, values, xp, None if _leaf(first) else scratch)
            right = left if expression.same_sides else _evaluate(second, values, xp)  # type: ignore[attr-defined]
            if getattr(left, "shape", None) == getattr(right, "shape", ()) and left.ndim <= 8:
                letters = "abcdefgh"[: left.ndim]
                kept = "".join(letter for i, letter in enumerate(letters) if i not in axis)
                return xp.einsum(f"{letters},{letters}->{kept}", left, right)
            return xp.sum(left * right, axis=axis)
        (mapped,) = self._map.evaluate(xp, *args, out=None if scratch is None else (scratch,))
        return xp.sum(mapped, axis=axis)

    def __call__(self, xp: Any, *args: Any, axis: tuple[int, ...], scratch: Any = None) -> Any:
        """The sums; ``scratch`` (the map's shape) spares the plain path a temporary."""
        kernel, verify = self._kernel(xp, args)
        if kernel is None and not verify:
            return self.evaluate(xp, *args, axis=axis, scratch=scratch)
        if not verify:
            return kernel(*args, axis=axis)
        (mapped,) = self._map.evaluate(xp, *args)
        expected = xp.sum(mapped, axis=axis)
        slack = 1e-5 * xp.sum(abs(mapped), axis=axis)  # a sum's rounding grows with its terms
        result: list = []

        def run(compiled: Any) -> list:
            result.append(compiled(*args, axis=axis))
            return result

        return result[0] if self._verify(xp, args, run, [expected], slack) else expected

    def compile(self, xp: Any) -> Any:
        """The cupy ``ReductionKernel``: the map, summed from 0."""
        inputs = ", ".join(f"T {name}" for name in self.inputs)
        return xp.ReductionKernel(
            inputs, "T total", self.map_expr, "a + b", "total = a", "0", f"mxnb_{self.name}"
        )


def _disagreement(got: Sequence[Any], expected: Sequence[Any], slack: Any = 0) -> str:
    """Why the kernel's results are not the plain path's, or ''.

    Allowed: float32 rounding (a compiler's fused multiply-adds) relative to each
    value and to the largest, plus ``slack``, the summation order's share for sums.
    """
    for index, (mine, theirs) in enumerate(zip(got, expected)):
        shape = tuple(getattr(theirs, "shape", ()))
        if tuple(mine.shape) != shape:
            return f"output {index} has shape {tuple(mine.shape)}, the plain path's {shape}"
        difference = abs(mine - theirs)
        size = abs(theirs)
        largest = float(size.max()) if size.size else 0.0
        tolerance = 1e-4 * size + 1e-5 * (1 + largest) + slack
        if bool((difference > tolerance).any()):
            worst = float(difference.max())
            return f"output {index} differs from the plain path by up to {worst:.3g}"
    return ""
