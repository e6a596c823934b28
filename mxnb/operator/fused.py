"""Fused kernels: the math written once, one kernel on a GPU, the same statements on numpy.

Idea (MXNet: the hand-fused CUDA kernels of src/operator/nn/batch_norm.cu):
an op such as BatchNorm is a handful of elementwise formulas and sums.
Run as array expressions, each operator is its own pass over memory and, on a
GPU, its own kernel launch: the first GPU run measured a BatchNorm as a
string of small kernels taking 0.8-1.5 ms.  A :class:`FusedMap` is written as
statements ``name = expression`` whose text is at once valid Python and
valid CUDA C (the language of :mod:`.statements`), so the one text becomes
one ``cupy.ElementwiseKernel`` on a GPU and is evaluated statement by
statement on numpy (or any array module: the strict stand-in for cupy in
the tests, or cupy itself as the plain path).  A :class:`FusedSum` is a map
expression summed over axes: one ``cupy.ReductionKernel`` on a GPU, the map
then ``xp.sum`` elsewhere.

Rule:
    * Statements run in order; a statement names an output (assigned) or a
      local (a value later statements read).  An output may also be read:
      ``moving = moving * momentum + mean * rest`` updates in place.  An
      output may be the same memory as an input, not a shifted part of one.
    * On numpy, a call given its outputs runs one of two ways:
      - outputs of at most :data:`SMALL_BYTES` bytes: the statements
        as one Python function (:attr:`FusedMap.python_source`), the fast
        path where the plain path's bookkeeping would cost more than the
        passes over memory it saves;
      - larger ones: the plain path (:func:`.statements.evaluate`, each
        output computed into its array) one block at a time
        (:func:`.split.in_blocks`), so what an operand needs computed apart
        from the output (``g * (1 - y * y)`` when ``out`` is ``g``) takes a
        block's memory, not the array's, and the block stays in the cache.
      A sum of a product ``a * b`` is a dot (``einsum``): the product is
      never stored.
    * On a GPU the compiled kernel is the fast path and the statement-by-
      statement evaluation on cupy the plain one: the first call for each
      dtype runs both and compares (``_Guarded._verify``); a kernel that
      fails to compile or disagrees is dropped for the plain path, with a
      warning, and never used again.  No unchecked kernel computes a result.

State kept: the parsed statements and their Python form; per array module,
the compiled ``cupy`` kernel or False once dropped, and the dtypes it was
verified for.

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
import warnings
from collections.abc import Sequence
from typing import Any

from .split import in_blocks
from .statements import (
    FUNCTIONS,
    PREAMBLE,
    check,
    evaluate,
    is_leaf,
    names,
    numbers_alone,
    python_source,
    reads,
)

__all__ = ["FUNCTIONS", "PREAMBLE", "SMALL_BYTES", "FusedMap", "FusedSum", "is_cupy"]

#: Outputs of at most this many bytes are computed by :attr:`FusedMap.python_source`, the
#: statements as one Python function of array expressions: on arrays this small, the plain
#: path's choices per operator cost more time than the temporaries they spare (an SGD update
#: with momentum of 4K floats: 11 us against 23).  Its temporaries stay well under malloc's
#: mmap threshold (128 KiB): at that size each took fresh pages on every call, and an update
#: of 32K floats took 220 us instead of 40.
SMALL_BYTES = 64 << 10


#: NVRTC options of a FusedMap's kernel: each operation rounded on its own (see FusedMap.compile).
NVRTC_OPTIONS = ("--fmad=false",)


def is_cupy(xp: Any) -> bool:
    """True when ``xp`` is cupy itself (a real GPU), not numpy or a stand-in for cupy."""
    return getattr(xp, "__name__", None) == "cupy"


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
            check(expression, where)
            unknown = names(expression) - known
            if unknown:
                raise ValueError(f"{where}: reads {sorted(unknown)} before any statement sets "
                                 f"them (inputs: {list(self.inputs)})")  # fmt: skip
            known.add(target)
            self.statements.append((target, expression))
        missing = set(self.outputs) - {target for target, _ in self.statements}
        if missing:
            raise ValueError(f"FusedMap {name!r}: no statement sets outputs {sorted(missing)}")
        declared = (*self.inputs, *self.outputs)
        twice = sorted({n for n in declared if declared.count(n) > 1})
        if twice:
            raise ValueError(f"FusedMap {name!r}: {twice} given twice; an output the statements "
                             "read before setting it is an output only")  # fmt: skip
        if "xp" in known:
            raise ValueError(f"FusedMap {name!r}: 'xp' names the array module; rename it")
        self.python_source = python_source(name, self.inputs, self.outputs, self.statements)
        namespace: dict[str, Any] = {}
        exec(compile(self.python_source, f"<FusedMap {name}>", "exec"), namespace)  # noqa: S102
        self._python = namespace[name]
        # the first arguments of the function calls: one of Python numbers alone is refused
        # (statements.numbers_alone), by the plain path, before the Python form computes it
        self._called = [
            node.args[0]
            for _, expression in self.statements
            for node in ast.walk(expression)
            if isinstance(node, ast.Call)
        ]

    def __repr__(self) -> str:
        return f"FusedMap({self.name!r}, {len(self.statements)} statements)"

    def source(self) -> str:
        """The CUDA C body: ``T name = ...;`` for a local, ``name = ...;`` for an output."""
        return "\n".join(
            f"{'' if target in self.outputs else 'T '}{target} = {ast.unparse(expression)};"
            for target, expression in self.statements
        )

    def preamble(self) -> str:
        """The CUDA C the body needs before it: :data:`PREAMBLE`'s functions that it calls."""
        called = {
            node.func.id  # type: ignore[attr-defined]
            for _, expression in self.statements
            for node in ast.walk(expression)
            if isinstance(node, ast.Call)
        }
        return "\n".join(PREAMBLE[name] for name in sorted(called) if name in PREAMBLE)

    def evaluate(self, xp: Any, *args: Any, out: Sequence[Any] | None = None) -> tuple:
        """The plain path: every statement as array operations on ``xp``, outputs into ``out``."""
        values = dict(zip(self.inputs, args, strict=True))
        given = dict(zip(self.outputs, out or (), strict=False))
        values.update(given)  # an output may be read before it is set (an update in place)
        for target, expression in self.statements:
            values[target] = evaluate(expression, values, xp, given.get(target))
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
            if max(array.nbytes for array in out) <= SMALL_BYTES:  # the small-array fast path
                if self._called and any(type(a) in (int, float) for a in args):
                    values = dict(zip(self.inputs, args))
                    if any(numbers_alone(arg, values) for arg in self._called):
                        return self.evaluate(xp, *args, out=out)  # which says why it refuses
                self._python(xp, *args, *out)
                return tuple(out)
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
        """The cupy ``ElementwiseKernel`` of these statements (every input and output of type T).

        Compiled with ``--fmad=false``: NVRTC would otherwise contract ``a * b + c`` into one
        fused multiply-add, rounded once, where the same statements as separate cupy
        operations round twice.  Without it each operation rounds as the plain path's does
        (a fused run of the executor, :mod:`mxnb.executor.fusion`, is meant to give its
        steps' bits on a GPU too; not yet run on one).
        """
        return xp.ElementwiseKernel(
            ", ".join(f"T {name}" for name in self.inputs),
            ", ".join(f"T {name}" for name in self.outputs),
            self.source(),
            f"mxnb_{self.name}",
            preamble=self.preamble(),
            options=NVRTC_OPTIONS,
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
        if scratch is not None and reads(expression, values, scratch, xp):
            scratch = None  # the map reads memory the scratch shares
        if isinstance(expression, ast.BinOp) and isinstance(expression.op, ast.Mult):
            first, second = expression.left, expression.right
            if is_leaf(first):  # the scratch goes to the side that is computed
                first, second = second, first
            left = evaluate(first, values, xp, None if is_leaf(first) else scratch)
            right = left if expression.same_sides else evaluate(second, values, xp)  # type: ignore[attr-defined]
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
            inputs,
            "T total",
            self.map_expr,
            "a + b",
            "total = a",
            "0",
            f"mxnb_{self.name}",
            preamble=self._map.preamble(),
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
