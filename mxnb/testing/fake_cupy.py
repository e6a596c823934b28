"""cupy's kernel classes on numpy: run the fused kernels' compiled path on a CPU, and count launches.

Idea: on a GPU a :class:`~mxnb.operator.fused.FusedMap` hands its statements
to ``cupy.ElementwiseKernel`` as CUDA C, and a ``FusedSum`` its map to
``cupy.ReductionKernel``.  That path (the C text, the order of inputs and
outputs, the check against the plain path on first use) would otherwise run
only on a GPU.  :class:`FakeCupy` is :class:`~mxnb.testing.cupy_strict.CupyStrict`
named ``cupy``, with the two kernel classes: each reads the C text it is given
back as Python (so it must be the subset both languages share) and runs it
with numpy.  It counts what a GPU would launch: each kernel call, and each
call of a function of the module (array methods are not counted).

Rule: a kernel is built only from what the real classes take (parameter
lists ``T name, ...``, one statement per line, ``a + b`` reductions from 0);
anything else raises, as a compile error would.  What is not checked: CUDA
C's own arithmetic (float32 throughout, the fused multiply-adds a compiler
may choose).

State kept: ``launches`` (kernel calls) and ``calls`` (module function calls).

Example::

    >>> import numpy as np
    >>> from mxnb.operator.fused import FusedMap
    >>> xp = FakeCupy()
    >>> double = FusedMap("double", ("x",), ("y",), "y = x + x")
    >>> double(xp, np.arange(3.0))[0].tolist(), xp.launches   # verified: the kernel and the plain path
    ([0.0, 2.0, 4.0], 1)
    >>> double(xp, np.arange(3.0))[0].tolist(), xp.launches   # then the kernel alone
    ([0.0, 2.0, 4.0], 2)
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import numpy as np

from .cupy_strict import CupyStrict

__all__ = ["FakeCupy", "fake_virtual_gpus"]


def _params(text: str, what: str) -> tuple[str, ...]:
    """``'T a, T b'`` -> ``('a', 'b')``; every parameter of the type placeholder T."""
    names = []
    for part in text.split(","):
        kind, _, name = part.strip().partition(" ")
        if kind != "T" or not name.isidentifier():
            raise ValueError(f"{what}: parameter {part.strip()!r} is not 'T name'")
        names.append(name)
    return tuple(names)


def _check_preamble(kernel: Any, preamble: str) -> None:
    """Refuse, as nvrtc would, a call of a function that neither CUDA nor ``preamble`` defines."""
    from ..operator.fused import PREAMBLE

    for name in PREAMBLE:
        if f"{name}(" in kernel.source() and PREAMBLE[name] not in preamble:
            raise ValueError(f"{kernel.name}: {name}() is called but not defined in the preamble")


class _ElementwiseKernel:
    """``cupy.ElementwiseKernel`` on numpy: the C statements read back as Python."""

    def __init__(self, module: FakeCupy, in_params: str, out_params: str, operation: str,
                 name: str = "kernel", preamble: str = "", options: tuple = ()) -> None:  # fmt: skip
        from ..operator.fused import FusedMap

        if not isinstance(options, tuple) or not all(
            isinstance(option, str) and option.startswith("--") for option in options
        ):
            raise ValueError(f"{name}: options must be a tuple of NVRTC flags, got {options!r}")
        self.options = options
        self.module = module
        self.inputs = _params(in_params, name)
        self.outputs = _params(out_params, name)
        if len(set(self.inputs + self.outputs)) < len(self.inputs + self.outputs):
            raise ValueError(f"{name}: a parameter is declared twice: {in_params}; {out_params}")
        lines = []
        for line in filter(None, (part.strip() for part in operation.splitlines())):
            if not line.endswith(";"):
                raise ValueError(f"{name}: {line!r} does not end with ';'")
            lines.append(line[:-1].removeprefix("T "))
        self.map = FusedMap(name, self.inputs, self.outputs, "\n".join(lines))
        _check_preamble(self.map, preamble)

    def __call__(self, *args: Any) -> Any:
        inputs, outputs = args[: len(self.inputs)], list(args[len(self.inputs) :])
        if not outputs:
            outputs = self.map.empty_outputs(np, inputs)
        elif len(outputs) != len(self.outputs):
            raise ValueError(f"{self.map.name}: {len(outputs)} outputs given, "
                             f"{len(self.outputs)} declared")  # fmt: skip
        self.module.launches += 1
        self.map.evaluate(np, *inputs, out=outputs)
        return outputs[0] if len(outputs) == 1 else tuple(outputs)


class _ReductionKernel:
    """``cupy.ReductionKernel`` on numpy, for sums: ``a + b`` from ``0``, ``out = a``."""

    def __init__(self, module: FakeCupy, in_params: str, out_params: str, map_expr: str,
                 reduce_expr: str, post_map_expr: str, identity: str,
                 name: str = "reduce_kernel", preamble: str = "") -> None:  # fmt: skip
        from ..operator.fused import FusedMap

        (out,) = _params(out_params, name)
        if (reduce_expr, identity, post_map_expr) != ("a + b", "0", f"{out} = a"):
            raise ValueError(f"{name}: only sums are emulated, got reduce {reduce_expr!r}, "
                             f"identity {identity!r}, post-map {post_map_expr!r}")  # fmt: skip
        self.module = module
        self.map = FusedMap(name, _params(in_params, name), ("mapped",), f"mapped = {map_expr}")
        _check_preamble(self.map, preamble)

    def __call__(self, *args: Any, axis: Any = None) -> Any:
        self.module.launches += 1
        (mapped,) = self.map.evaluate(np, *args)
        return np.sum(mapped, axis=axis)


class FakeCupy(CupyStrict):
    """The strict module, named ``cupy``, with its kernel classes emulated and launches counted."""

    __name__ = "cupy"

    def __init__(self) -> None:
        super().__init__()
        self.launches = 0
        self.calls = 0

    def ElementwiseKernel(self, *args: Any, **kwargs: Any) -> _ElementwiseKernel:  # noqa: N802 - cupy's name
        """A kernel from C statements, run by numpy (see the module docstring)."""
        return _ElementwiseKernel(self, *args, **kwargs)

    def ReductionKernel(self, *args: Any, **kwargs: Any) -> _ReductionKernel:  # noqa: N802 - cupy's name
        """A sum kernel from a C map expression, run by numpy."""
        return _ReductionKernel(self, *args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        value = super().__getattr__(name)
        if not callable(value) or isinstance(value, (type, CupyStrict)):
            return value
        counted = self._made.get(("counted", name))
        if counted is None:

            def counted(*args: Any, **kwargs: Any) -> Any:
                self.calls += 1
                return value(*args, **kwargs)

            self._made[("counted", name)] = counted
        return counted


@contextlib.contextmanager
def fake_virtual_gpus(count: int = 1) -> Iterator[FakeCupy]:
    """Within the block, ``count`` virtual GPUs whose array module is a :class:`FakeCupy`."""
    from .cupy_strict import strict_virtual_gpus

    with strict_virtual_gpus(count, module=FakeCupy()) as module:
        yield module  # type: ignore[misc]
