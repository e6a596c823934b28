"""Write ``mxnb/testing/cupy_api.json``: the names and call signatures cupy admits.

Run it with a Python that has cupy installed; no GPU is needed (the
signatures are read, nothing is launched)::

    python3 -m venv /tmp/cupyvenv && /tmp/cupyvenv/bin/pip install cupy-cuda12x numpy
    /tmp/cupyvenv/bin/python tools/cupy_api/snapshot.py

What is recorded, per module (``cupy`` and the submodules kernels use):
every public name, with its kind (``module``, ``function``, ``ufunc``,
``class``, ``value``); for a function, its parameters as ``inspect`` reads
them (None where cupy's compiled code gives no signature); for a ufunc, its
``nin`` / ``nout``, the keywords its call accepts (probed: cupy checks them
before it touches a device) and its methods' parameters.
:mod:`mxnb.testing.cupy_strict` reads the file.
"""

from __future__ import annotations

import inspect
import json
import os
import re
import sys

import cupy

HERE = os.path.dirname(os.path.abspath(__file__))
TARGET = os.path.join(HERE, "..", "..", "mxnb", "testing", "cupy_api.json")
SUBMODULES = ("linalg", "random", "fft", "lib", "lib.stride_tricks", "testing")
#: numpy's ufunc keywords; each is probed on cupy.add
UFUNC_KEYWORDS = ("out", "dtype", "casting", "where", "order", "subok", "signature", "axes")


def parameters(function) -> list | None:
    """[(name, kind, has_default), ...] of ``function``, or None without a signature.

    Compiled methods without one (cupy's ufunc methods) give it on their
    docstring's first line, ``ufunc.reduce(self, array, axis=0, ...)``: that is read.
    """
    try:
        signature = inspect.signature(function)
    except (TypeError, ValueError):
        signature = _from_docstring(function)
        if signature is None:
            return None
    return [
        [p.name, p.kind.name, p.default is not inspect.Parameter.empty]
        for p in signature.parameters.values()
    ]


def _from_docstring(function) -> inspect.Signature | None:
    first = (getattr(function, "__doc__", None) or "").strip().splitlines()[:1]
    match = re.match(r"^[\w.]+\((.*)\)\s*$", first[0]) if first else None
    if match is None:
        return None
    namespace: dict = {}
    try:
        exec(f"def f({match.group(1)}): pass", {}, namespace)  # noqa: S102 - cupy's own text
    except SyntaxError:
        return None
    return inspect.signature(namespace["f"])


def ufunc_keywords() -> list[str]:
    """The keywords cupy's ufunc call accepts (a refused one raises TypeError before any launch)."""
    accepted = []
    for keyword in UFUNC_KEYWORDS:
        try:
            cupy.add(1, 2, **{keyword: None})
        except TypeError as exc:
            if "Wrong arguments" in str(exc):
                continue
        except Exception:  # noqa: BLE001 - no GPU here: it got past the keyword check
            pass
        accepted.append(keyword)
    return accepted


def describe(module, keywords: list[str]) -> dict:
    names = {}
    for name in sorted(dir(module)):
        if name.startswith("_"):
            continue
        value = getattr(module, name)
        if isinstance(value, cupy.ufunc):
            methods = {
                m: parameters(getattr(value, m)) for m in ("reduce", "accumulate", "outer", "at")
            }
            names[name] = {
                "kind": "ufunc",
                "nin": value.nin,
                "nout": value.nout,
                "keywords": keywords,
                "methods": methods,
            }
        elif inspect.ismodule(value):
            names[name] = {"kind": "module"}
        elif inspect.isclass(value):
            names[name] = {"kind": "class"}
        elif callable(value):
            names[name] = {"kind": "function", "params": parameters(value)}
        else:
            names[name] = {"kind": "value"}
    return names


def main() -> int:
    keywords = ufunc_keywords()
    api = {"cupy_version": cupy.__version__, "modules": {"": describe(cupy, keywords)}}
    for path in SUBMODULES:
        module = cupy
        for part in path.split("."):
            module = getattr(module, part)
        api["modules"][path] = describe(module, keywords)
    text = json.dumps(api, indent=0, sort_keys=True)
    tmp = TARGET + ".tmp"
    with open(tmp, "w", encoding="utf-8") as handle:
        handle.write(text + "\n")
    os.replace(tmp, TARGET)
    print(f"cupy {cupy.__version__}: {sum(map(len, api['modules'].values()))} names -> {TARGET}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
