"""Kernel launches of one training BatchNorm (forward + backward), counted on a CPU.

On cupy every array operation is a kernel launch: each ufunc call (operators,
methods and in-place forms alike), each reduction, each numpy-API function
(``einsum``, ``clip``), each item assignment and copy.  This script counts
them with an ndarray subclass that sees all of those, over BatchNorm's own
forward and backward:

* this tree on numpy (the plain path: the fused kernels' statements one by one);
* this tree on :class:`mxnb.testing.fake_cupy.FakeCupy` (the compiled path: a
  fused kernel is one launch), on the first call (each kernel checked against
  the plain path) and after it;
* with ``--against REV``, the BatchNorm of git revision REV on numpy (before
  the fused kernels: ``--against 20b3ab7``), where every operation would be a
  launch on a GPU.

Allocations (``empty``) and memory-overlap checks (``may_share_memory``) are not launches
and are not counted.

Run: ``python benchmarks/batch_norm_launches.py [--against REV]``.
"""

from __future__ import annotations

import sys
from typing import Any

import numpy as np

import mxnb as mx
from mxnb.testing import fake_cupy

_MAKERS = ("empty", "zeros", "ones", "empty_like", "zeros_like", "ones_like")


class Counted(np.ndarray):
    """An ndarray that counts the array operations made on it (see the module docstring)."""

    count = 0
    paused = 0  # inside a fused kernel, or inside a counted numpy function

    @classmethod
    def tick(cls) -> None:
        if not cls.paused:
            cls.count += 1

    def __array_ufunc__(self, ufunc, method, *inputs, out=None, **kwargs):
        Counted.tick()
        inputs = tuple(_plain(value) for value in inputs)
        if out is not None:
            kwargs["out"] = tuple(_plain(value) for value in out)
        result = getattr(ufunc, method)(*inputs, **kwargs)
        if out is not None:
            return out[0] if len(out) == 1 else out
        return result.view(Counted) if isinstance(result, np.ndarray) else result

    def __array_function__(self, func, types, args, kwargs):
        if func.__name__ not in (*_MAKERS, "broadcast", "shape", "may_share_memory"):
            Counted.tick()
        Counted.paused += 1
        try:
            result = func(*(_plain(a) for a in args), **{k: _plain(v) for k, v in kwargs.items()})
        finally:
            Counted.paused -= 1
        return result.view(Counted) if isinstance(result, np.ndarray) else result

    def __setitem__(self, key, value):
        Counted.tick()
        np.ndarray.__setitem__(self.view(np.ndarray), key, _plain(value))

    def copy(self, *args, **kwargs):
        Counted.tick()
        return np.ndarray.copy(self.view(np.ndarray), *args, **kwargs).view(Counted)


def _plain(value: Any) -> Any:
    return value.view(np.ndarray) if isinstance(value, Counted) else value


class _CountedModule:
    """An array module whose new arrays are :class:`Counted` (numpy, or a FakeCupy)."""

    def __init__(self, base: Any) -> None:
        self._base = base

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._base, name)
        if name in _MAKERS:
            return lambda *args, **kwargs: np.asarray(value(*args, **kwargs)).view(Counted)
        return value


def _counted_fake() -> Any:
    """A FakeCupy whose kernels count one launch each and nothing inside them."""
    module = fake_cupy.FakeCupy()
    for kind in ("ElementwiseKernel", "ReductionKernel"):
        make = getattr(module, kind)

        def counted(*args: Any, _make: Any = make, **kwargs: Any) -> Any:
            kernel = _make(*args, **kwargs)
            run = kernel.__call__

            def launch(*call_args: Any, **call_kwargs: Any) -> Any:
                Counted.tick()
                Counted.paused += 1
                try:
                    return run(*call_args, **call_kwargs)
                finally:
                    Counted.paused -= 1

            return launch

        setattr(module, kind, counted)
    return module


def launches(package: Any, xp: Any, rounds: int = 2) -> list[tuple[int, int]]:
    """(forward, backward) launches of ``package``'s training BatchNorm on ``xp``, per round."""
    rng = np.random.default_rng(0)
    shape, channels = (4, 8, 5, 5), 8

    def array(values: Any) -> Counted:
        return np.asarray(values, dtype="float32").view(Counted)

    prop = package.operator.registry.get("BatchNorm").create_property(fix_gamma=False)
    operator = prop.create_operator(None)
    context = package.operator.base.OpContext(True, None, [], _CountedModule(xp))
    write = package.operator.base.OpReqType.WRITE_TO
    data, gamma, beta = (array(rng.standard_normal(s)) for s in (shape, channels, channels))
    moving = [array(np.zeros(channels)), array(np.ones(channels))]
    figures = []
    for _ in range(rounds):
        outputs = [array(np.empty(shape)), array(np.empty(channels)), array(np.empty(channels))]
        Counted.count = 0
        operator.forward(context, [data, gamma, beta], [write] * 3, outputs, moving)
        forward, Counted.count = Counted.count, 0
        grads = [array(np.empty(shape)), array(np.empty(channels)), array(np.empty(channels))]
        head = array(rng.standard_normal(shape))
        operator.backward(context, [head, None, None], [data, gamma, beta], outputs,
                          [write] * 3, grads, moving)  # fmt: skip
        figures.append((forward, Counted.count))
    return figures


def main() -> None:
    """Print the launches of each variant (see the module docstring)."""
    print("array operations (kernel launches on a GPU) of one training BatchNorm, (4, 8, 5, 5)")
    rows = [
        ("this tree, numpy (the plain path)", launches(mx, np)[-1]),
    ]
    first, steady = launches(mx, _counted_fake())
    rows += [("this tree, FakeCupy, first call (verifying)", first),
             ("this tree, FakeCupy, after it", steady)]  # fmt: skip
    if "--against" in sys.argv:
        sys.path.insert(0, __file__.rsplit("/", 1)[0])
        from engine import package_at

        revision = sys.argv[sys.argv.index("--against") + 1]
        rows.append((f"{revision}, numpy (every operation a launch)",
                     launches(package_at(revision), np)[-1]))  # fmt: skip
    for label, (forward, backward) in rows:
        print(f"  {label:<48} forward {forward:4d}  backward {backward:4d}  "
              f"total {forward + backward:4d}")  # fmt: skip


if __name__ == "__main__":
    main()
