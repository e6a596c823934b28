"""``mx.nd``: the asynchronous NDArray and every registered operator as a function.

Chapters of this package:
    ndarray.py     the NDArray: a storage chunk + a view + the chunk's engine var
    creation.py    empty / zeros / ones / full / array / arange ...
    indexing.py    views that share the var, copies, assignment
    invoke.py      the imperative invoke: any registered op, pushed as one engine op
    cached_op.py   CachedOp: a Symbol called like an operator, node by node
    register.py    the generated functions mx.nd.<Name>
    debug.py       read-only views for const inputs in debug mode
    fileformat.py  ``save`` / ``load`` in a safe, atomic, documented format
    random.py      ``mx.nd.random.uniform / normal / randint``

``mx.nd.<Name>`` exists for every operator in the registry (module-level
``__getattr__``), with the docstring generated from the op's Params, so an
operator registered later — even in a notebook cell — appears at once.

Example::

    >>> import mxnb as mx
    >>> a = mx.nd.array([[1, 2], [3, 4]])
    >>> (a * 2 + 1).asnumpy().tolist()
    [[3.0, 5.0], [7.0, 9.0]]
    >>> mx.nd.sum(a, axis=1).asnumpy().tolist()
    [3.0, 7.0]
"""

from __future__ import annotations

from typing import Any

from . import (
    _internal,  # noqa: F401 - mx.nd._internal
    contrib,
    linalg,
    random,
)
from .cached_op import CachedOp
from .compat import eye, from_numpy, hypot, maximum, minimum, moveaxis, onehot_encode, power
from .compat import ARITHMETIC as _ARITHMETIC
from .compat import split_v2  # noqa: F401  (MXNet: mx.nd.split_v2)
from .compat import histogram  # noqa: F401  (MXNet: mx.nd.histogram)
from . import image  # noqa: F401  (MXNet: mx.nd.image)
from .creation import (
    arange,
    array,
    concatenate,
    empty,
    empty_like,
    full,
    full_like,
    ones,
    ones_like,
    waitall,
    zeros,
    zeros_like,
)
from .debug import readonly_view
from .dlpack import from_dlpack, to_dlpack_for_read, to_dlpack_for_write
from .fileformat import load, load_frombuffer, save
from .invoke import clear_cache, invoke
from .ndarray import NDArray
from .register import make_op_function

__all__ = [
    "CachedOp",
    "NDArray",
    "arange",
    "array",
    "clear_cache",
    "concatenate",
    "contrib",
    "empty",
    "empty_like",
    "eye",
    "from_dlpack",
    "from_numpy",
    "full",
    "full_like",
    "hypot",
    "invoke",
    "linalg",
    "load",
    "load_frombuffer",
    "make_op_function",
    "maximum",
    "minimum",
    "moveaxis",
    "onehot_encode",
    "ones",
    "ones_like",
    "power",
    "random",
    "readonly_view",
    "save",
    "to_dlpack_for_read",
    "to_dlpack_for_write",
    "waitall",
    "zeros",
    "zeros_like",
]


def __getattr__(name: str) -> Any:
    """``mx.nd.<Name>`` for every registered operator."""
    if name.startswith("__"):
        raise AttributeError(name)
    from ..operator import registry

    if registry.find(name) is None:
        raise AttributeError(
            f"module 'mxnb.ndarray' has no attribute {name!r} (no operator of that name)"
        )
    return make_op_function(name)


def __dir__() -> list[str]:
    from ..operator import registry

    return sorted(set(globals()) | set(registry.list_ops()))


globals().update(_ARITHMETIC)  # add, subtract, ..., equal, logical_and: MXNet's nd functions
pow = power  # MXNet: mx.nd.pow is power
