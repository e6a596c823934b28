"""numpy that admits only what cupy admits: catch a GPU-only failure on a CPU.

Idea: mxnb's kernels are written once against an array module ``xp``: numpy
on the CPU and on virtual GPUs, cupy on a real GPU.  A kernel that calls
numpy with something cupy lacks (a name, or a keyword such as
``as_strided(..., writeable=False)``) passes every CPU test and fails on the
first real GPU, which is how mxnb's first GPU run lost every convolution.
:class:`CupyStrict` stands in for cupy on a machine without one: it hands out
numpy's functions, but only under names cupy has, and checks each call's
arguments against cupy's own signature first.  :func:`strict_virtual_gpus`
makes it the array module of virtual GPUs, so that the operators, the
executor and storage all run through it.

Rule: what is checked comes from ``cupy_api.json`` beside this module, read
from cupy itself (``tools/cupy_api/snapshot.py``; no GPU is needed to write
it): a name cupy's module lacks raises :class:`CupyStrictError` (an
AttributeError); a call that cupy's signature would refuse raises it (a
TypeError) before numpy runs.  A ufunc admits the keywords cupy's ufunc
call admits.  Functions cupy compiles without a signature are admitted as
they are called.  Not checked: methods of the arrays themselves, and what
cupy accepts but computes differently.

State kept: the snapshot, read once; checked functions, made once per name.

Example::

    >>> import numpy as np
    >>> xp = CupyStrict()
    >>> xp.add(np.ones(2), 1, out=np.empty(2)).tolist()
    [2.0, 2.0]
    >>> xp.lib.stride_tricks.as_strided(np.ones(4), (2,), (8,), writeable=False)
    ... # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    mxnb.testing.cupy_strict.CupyStrictError: cupy.lib.stride_tricks.as_strided(...) refuses these arguments on a GPU: got an unexpected keyword argument 'writeable' ...
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import json
import os
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

__all__ = ["CupyStrict", "CupyStrictError", "cupy_api", "strict_virtual_gpus"]

_SNAPSHOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "cupy_api.json")


class CupyStrictError(AttributeError, TypeError):
    """A name or a call numpy admits and cupy does not: it would fail on a real GPU."""


@functools.lru_cache(maxsize=1)
def cupy_api() -> dict[str, Any]:
    """The snapshot of cupy's names and signatures (``cupy_version``, ``modules``)."""
    with open(_SNAPSHOT, encoding="utf-8") as handle:
        return json.load(handle)


def _signature(params: list[list[Any]]) -> inspect.Signature:
    """An ``inspect.Signature`` from the snapshot's ``[name, kind, has_default]`` triples."""
    return inspect.Signature(
        [
            inspect.Parameter(
                name,
                getattr(inspect.Parameter, kind),
                default=None if has_default else inspect.Parameter.empty,
            )
            for name, kind, has_default in params
        ]
    )


def _checked(function: Callable[..., Any], where: str, signature: inspect.Signature) -> Any:
    """``function``, called only with arguments ``signature`` (cupy's) binds."""

    def call(*args: Any, **kwargs: Any) -> Any:
        try:
            signature.bind(*args, **kwargs)
        except TypeError as exc:
            raise _refused(where, str(exc), f"takes {signature}") from None
        return function(*args, **kwargs)

    call.__name__ = getattr(function, "__name__", where)
    call.__doc__ = f"{where}, checked against cupy's signature {signature}."
    return call


def _refused(where: str, why: str, what: str) -> CupyStrictError:
    version = cupy_api()["cupy_version"]
    return CupyStrictError(
        f"{where}(...) refuses these arguments on a GPU: {why} (cupy {version} {what}); "
        "make the call take only what cupy takes, or branch on the array module"
    )


class _StrictUfunc:
    """A numpy ufunc called with only the keywords cupy's ufunc call admits."""

    def __init__(self, ufunc: np.ufunc, where: str, spec: dict[str, Any]) -> None:
        self._ufunc = ufunc
        self._where = where
        self._keywords = frozenset(spec["keywords"])
        self._methods = spec["methods"]
        self.nin, self.nout = spec["nin"], spec["nout"]
        self.__name__ = ufunc.__name__

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        refused = sorted(set(kwargs) - self._keywords)
        if refused:
            raise _refused(
                self._where, f"keyword(s) {refused}", f"ufuncs take {sorted(self._keywords)}"
            )
        return self._ufunc(*args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        params = self._methods.get(name, False)
        if params is False:
            raise CupyStrictError(f"{self._where}.{name}: cupy's ufuncs have no {name!r}")
        method = getattr(self._ufunc, name)
        if params is None:
            return method
        return _checked(method, f"{self._where}.{name}", _signature(params[1:]))  # no self


class CupyStrict:
    """numpy (``base``) under cupy's names and signatures (see the module docstring)."""

    def __init__(self, base: Any = np, path: str = "") -> None:
        modules = cupy_api()["modules"]
        if path not in modules:
            raise CupyStrictError(f"cupy.{path}: not in the snapshot ({sorted(modules)})")
        self._base = base
        self._path = path
        self._names = modules[path]
        self._made: dict[str, Any] = {}

    def __repr__(self) -> str:
        return (
            f"<CupyStrict cupy{'.' if self._path else ''}{self._path} over {self._base.__name__}>"
        )

    def __getattr__(self, name: str) -> Any:
        made = self._made.get(name)
        if made is not None:
            return made
        where = f"cupy.{self._path}.{name}" if self._path else f"cupy.{name}"
        spec = self._names.get(name)
        if spec is None:
            raise CupyStrictError(
                f"{where}: cupy {cupy_api()['cupy_version']} has no such name, so a kernel "
                f"calling xp.{name} fails on a GPU; use a name both numpy and cupy have"
            )
        value = getattr(self._base, name)
        made = self._made[name] = self._wrap(value, name, where, spec)
        return made

    def _wrap(self, value: Any, name: str, where: str, spec: dict[str, Any]) -> Any:
        kind = spec["kind"]
        if kind == "module":
            sub = f"{self._path}.{name}" if self._path else name
            return CupyStrict(value, sub) if sub in cupy_api()["modules"] else value
        if kind == "ufunc" and isinstance(value, np.ufunc):
            return _StrictUfunc(value, where, spec)
        if kind == "function" and spec["params"] is not None and callable(value):
            return _checked(value, where, _signature(spec["params"]))
        return value


@contextlib.contextmanager
def strict_virtual_gpus(count: int = 1, module: CupyStrict | None = None) -> Iterator[CupyStrict]:
    """Within the block, ``count`` virtual GPUs whose array module is :class:`CupyStrict`.

    ``module``: the strict module to use (a :class:`~mxnb.testing.fake_cupy.FakeCupy`,
    say); a new one by default.

    Everything that asks a virtual GPU context for its array module (the
    operators' ``ctx.xp``, NDArray invoke, the executor, storage) gets the
    strict module; the previous virtual GPU count and module come back after.
    """
    from .. import context

    strict = CupyStrict() if module is None else module
    before_count = context.virtual_gpus()
    before_module = context.array_module

    def array_module(device_type: str) -> Any:
        return strict if device_type == "virtual_gpu" else before_module(device_type)

    context.set_virtual_gpus(count)
    context.array_module = array_module  # type: ignore[assignment]
    try:
        yield strict
    finally:
        context.array_module = before_module  # type: ignore[assignment]
        context.set_virtual_gpus(before_count)
