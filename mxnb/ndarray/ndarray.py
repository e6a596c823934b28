"""The asynchronous NDArray: a view of a storage chunk, ordered by the chunk's engine var.

Idea (MXNet: ``NDArray`` and ``NDArray::Chunk`` in include/mxnet/ndarray.h):
an NDArray is *not* its data.  It is a chunk of memory from the context's
storage manager, plus where in the chunk it looks (offset, shape, dtype),
plus the chunk's engine var.  Every operation is pushed to the engine with
the arrays it reads as const vars and the arrays it writes as mutate vars,
and returns at once; only ``asnumpy()``, ``wait_to_read()`` and
``mx.nd.waitall()`` wait.

Rule: views (``a[1:3]``, ``a[i]``, ``a.reshape(...)``) share the chunk *and
its var*, so a write through a view is ordered with every other read and
write of the array (indexing lives in :mod:`mxnb.ndarray.indexing`, creation
in :mod:`mxnb.ndarray.creation`).  When the last NDArray on a chunk is
garbage-collected the memory goes back to the storage pool only after the
ops still using it have run (:mod:`mxnb.ndarray.chunk`).

State kept (per NDArray):
    _chunk     the chunk (storage handle + engine var + context, :mod:`mxnb.ndarray.chunk`)
    _var       the chunk's engine var (the same object as ``_chunk.var``)
    _array     the raw array view (numpy / cupy) over the chunk; valid to touch
               only inside an engine op that declared ``_var``
    _offset    byte offset of the view in the chunk
    shape, dtype, context

Arithmetic and comparisons go through registered operators (``elemwise_add``,
``broadcast_add``, ``_plus_scalar`` …) by :func:`mxnb.ndarray.invoke`, so
autograd records them like any other op.

Example::

    >>> import mxnb as mx
    >>> a = mx.nd.ones((2, 3))
    >>> b = a[1:2]                      # a view: same chunk, same var
    >>> b[:] = 5                        # pushed; ordered before the read below
    >>> a.asnumpy()
    array([[1., 1., 1.],
           [5., 5., 5.]], dtype=float32)
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Sequence
from typing import Any

import numpy as np

from .. import engine as _engine_mod
from .. import storage
from ..base import ContextError, DTypeError, MXNBError, ShapeError, as_shape, np_dtype
from ..context import Context, current_context
from .chunk import _Chunk, _deferred_deletes, _flush_deferred_deletes
from .reshaping import reshape_target


__all__ = ["NDArray", "py_slice"]

py_slice = slice  # MXNet: python/mxnet/ndarray/ndarray.py keeps the builtin under this name

_NUMBER_TYPES = (numbers.Number, np.generic)


def _engine() -> Any:
    return _engine_mod.get()


def _to_shape(shape: Any, what: str = "shape") -> tuple[int, ...]:
    return as_shape(shape, what)


def _new_var(name: str = "") -> Any:
    return _engine().new_var(name)


def _alloc(
    shape: tuple[int, ...],
    ctx: Context,
    dtype: np.dtype,
    nbytes: int = -1,
    handle: Any = None,
    var: Any = None,
) -> NDArray:
    """A fresh, uninitialised NDArray on a new chunk (no engine op pushed).

    ``shape`` is trusted (checked by :func:`empty` or produced by shape
    inference); ``nbytes``, when given, is its size in bytes (an invoke plan
    knows it); ``handle`` and ``var``, when given, are a dead array's block
    and the var that still orders the ops on it (from :func:`_take_parked`:
    the caller's first op on the array writes it).  The allocation of every
    op output: written out.
    """
    if _deferred_deletes:
        _flush_deferred_deletes()
    if handle is None:
        if nbytes < 0:
            nbytes = math.prod(shape) * dtype.itemsize
        handle = _get_manager(ctx).alloc(nbytes)
    if var is None:
        var = _engine_mod.get().new_var(f"nd{handle.handle_id}")
    buffer = handle.buffer
    if type(buffer) is np.ndarray:
        raw = np.ndarray(shape, dtype, buffer)
    else:  # cupy (not run on real hardware)
        raw = buffer[: handle.nbytes].view(dtype).reshape(shape)
    chunk = _new_object(_Chunk)  # _Chunk(handle, var, ctx), without a call
    chunk.handle = handle
    chunk.var = var
    chunk.ctx = ctx
    array = _new_object(NDArray)
    array._chunk = chunk
    array._var = var
    array._array = raw
    array._offset = 0
    array.shape = shape
    array.dtype = dtype
    array.context = ctx
    return array


_get_manager = storage.get_manager
_new_object = object.__new__


_CANONICAL: dict[Context, Context] = {}


def _ctx_of(ctx: Any) -> Context:
    """The interned Context for ``ctx`` (None: the current context).

    Arrays share one Context object per device, so the invoke path can key
    its caches by identity and compare contexts with ``is``.
    """
    if ctx is None:
        ctx = current_context()
    elif not isinstance(ctx, Context):
        if isinstance(ctx, str):
            name, _, rest = ctx.partition("(")
            ctx = Context(name, int(rest.rstrip(")") or 0))
        else:
            raise ContextError(f"ctx must be a Context such as mx.cpu() or mx.gpu(0), got {ctx!r}")
    canonical = _CANONICAL.get(ctx)
    if canonical is None:
        canonical = _CANONICAL.setdefault(ctx, ctx)
    return canonical


def _push(fn: Any, ctx: Context, const: Sequence[Any], mutate: Sequence[Any], name: str) -> None:
    _engine().push_sync(fn, ctx, const, mutate, 0, name)


_invoke_visible: Any = None  # mxnb.ndarray.invoke.invoke_visible, bound on first use


def _bind_invoke() -> Any:
    """Bind :func:`~mxnb.ndarray.invoke.invoke_visible` (late: invoke.py imports this module)."""
    global _invoke_visible
    from .invoke import invoke_visible

    _invoke_visible = invoke_visible
    return invoke_visible


def _invoke(op: str, inputs: list[NDArray], params: dict[str, Any], out: Any = None) -> Any:
    """Run a registered op and return what a user sees (``invoke_visible``)."""
    return (_invoke_visible or _bind_invoke())(op, inputs, params, out)


def _registered(*names: str) -> str:
    from ..operator import registry

    for name in names:
        if registry.find(name) is not None:
            return name
    return names[0]


def _broadcast_shape(op: str, lhs: tuple, rhs: tuple) -> tuple:
    try:
        return tuple(np.broadcast_shapes(lhs, rhs))
    except ValueError:
        raise ShapeError(
            f"{op}: shapes {lhs} and {rhs} cannot be broadcast together; each dimension must "
            f"match or be 1 (align trailing dimensions; reshape or expand_dims one operand)"
        ) from None


def _check_same_context(op: str, first: NDArray, second: NDArray) -> None:
    if first.context != second.context:
        raise ContextError(
            f"{op}: operands are on different contexts, {first.context!r} and "
            f"{second.context!r}; move one with .as_in_context(ctx) or .copyto(ctx)"
        )


class NDArray:
    """An n-dimensional array whose operations run asynchronously on the engine.

    Create arrays with :func:`array`, :func:`zeros`, :func:`empty` …; not by
    calling the class.  See the module docstring for the model.
    """

    __slots__ = (
        "__dict__",
        "__weakref__",
        "_array",
        "_chunk",
        "_offset",
        "_var",
        "context",
        "dtype",
        "shape",
    )
    # the slots' types (annotations only: a slot cannot also be a class attribute)
    _array: Any  # the numpy / cupy array (a view of the chunk's buffer)
    _chunk: _Chunk  # the storage the array lives in, and its engine var
    _offset: int  # bytes into the chunk's buffer
    _var: Any  # the engine var ops on this array depend on
    context: Context
    dtype: np.dtype
    shape: tuple[int, ...]
    __array_priority__ = 1000.0  # numpy defers ``np_array + nd`` to NDArray.__radd__

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        raise MXNBError("create NDArrays with mx.nd.array / zeros / empty / ..., not NDArray(...)")

    @classmethod
    def _make(
        cls,
        chunk: _Chunk,
        var: Any,
        raw: Any,
        offset: int,
        shape: tuple[int, ...],
        dtype: np.dtype,
        ctx: Context,
    ) -> NDArray:
        self = object.__new__(cls)
        self._chunk = chunk
        self._var = var
        self._array = raw
        self._offset = offset
        self.shape = shape
        self.dtype = dtype
        self.context = ctx
        return self

    @classmethod
    def _wrap_raw(cls, array: Any, ctx: Context | None = None) -> NDArray:
        """Return an NDArray over an existing raw array (shares memory, fresh var, not pooled).

        Custom operators wrap the buffers the system hands them with this; the
        caller guarantees the memory outlives the NDArray's use.
        """
        ctx = _ctx_of(ctx)
        var = _new_var("wrapped")
        return cls._make(
            _Chunk(None, var, ctx), var, array, 0, tuple(array.shape), np.dtype(array.dtype), ctx
        )

    def _view(self, raw: Any) -> NDArray:
        """A view sharing this array's chunk and var."""
        base = self._array
        offset = self._offset
        if raw.size and base.size:
            offset += _byte_offset(raw, base)
        return NDArray._make(
            self._chunk, self._var, raw, offset, tuple(raw.shape), self.dtype, self.context
        )

    def _raw(self) -> Any:
        """The raw array view (numpy / cupy); touch it only inside an op that declared ``_var``."""
        return self._array

    # -- properties -------------------------------------------------------------
    @property
    def ctx(self) -> Context:
        """The context of the array (alias of ``context``)."""
        return self.context

    @property
    def size(self) -> int:
        """Number of elements."""
        return int(self._array.size)

    @property
    def ndim(self) -> int:
        """Number of dimensions."""
        return len(self.shape)

    @property
    def nbytes(self) -> int:
        """Bytes of the elements this array views."""
        return self.size * self.dtype.itemsize

    @property
    def handle(self) -> storage.Handle | None:
        """The storage handle of the chunk (None for wrapped memory)."""
        return self._chunk.handle

    @property
    def T(self) -> NDArray:
        """The transpose (reverses the axes; through the ``transpose`` op)."""
        return _invoke("transpose", [self], {})

    @property
    def stype(self) -> str:
        """Storage type; mxnb has dense arrays only (``'default'``)."""
        return "default"

    def __repr__(self) -> str:
        body = str(self.asnumpy())
        shape = "x".join(str(dim) for dim in self.shape)
        return f"\n{body}\n<NDArray {shape} @{self.context!r}>"

    def __hash__(self) -> int:
        return id(self)

    def __reduce__(self) -> tuple:
        """Pickle the values, dtype and context (MXNet pickles an NDArray the same way)."""
        ctx = self.context
        return (_unpickle, (self.asnumpy(), ctx.device_type, ctx.device_id))

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of a 0-d NDArray")
        return self.shape[0]

    def __bool__(self) -> bool:
        if self.size == 0:
            return False  # MXNet 1.x: an empty array is false
        if self.size != 1:
            raise ValueError(
                f"the truth value of an NDArray with {self.size} elements is ambiguous; "
                "use (a != 0).sum() or a.asscalar()"
            )
        return bool(self.asscalar())

    def __iter__(self) -> Any:
        for index in range(len(self)):
            yield self[index]

    # -- synchronisation -----------------------------------------------------------
    def wait_to_read(self, timeout: float | None = None) -> None:
        """Block until every pending write to this array has run (re-raises its error).

        ``timeout``: seconds to wait at most; :class:`~mxnb.base.EngineError` after that.
        """
        _engine().wait_for_var(self._var, timeout)

    def wait_to_write(self) -> None:
        """Block until every pending read and write of this array has run."""
        _engine().wait_for_var(self._var)

    def asnumpy(self) -> np.ndarray:
        """Return a numpy copy of the data, waiting for pending writes."""
        self.wait_to_read()
        raw = self._array
        if isinstance(raw, np.ndarray):
            return np.array(raw)
        return raw.get()  # cupy (not run on real hardware)

    def to_dlpack_for_read(self) -> Any:
        """A DLPack capsule of this array's memory, after its pending writes (MXNet's name)."""
        from .dlpack import to_dlpack_for_read

        return to_dlpack_for_read(self)

    def to_dlpack_for_write(self) -> Any:
        """A DLPack capsule of this array's memory, after its pending reads and writes."""
        from .dlpack import to_dlpack_for_write

        return to_dlpack_for_write(self)

    def asscalar(self) -> Any:
        """Return the value of a one-element array as a numpy scalar."""
        if self.size != 1:
            raise ShapeError(
                f"asscalar: the array has shape {self.shape}; it needs exactly one element"
            )
        return self.asnumpy().reshape(())[()]

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        result = self.asnumpy()
        return result if dtype is None else result.astype(dtype)

    def __float__(self) -> float:
        return float(self.asscalar())

    def __int__(self) -> int:
        return int(self.asscalar())

    def __index__(self) -> int:
        return int(self.asscalar())

    # -- copies and contexts ------------------------------------------------------------
    def copy(self) -> NDArray:
        """Return a copy on the same context (the ``_copy`` op)."""
        return _invoke("_copy", [self], {})

    def copyto(self, other: NDArray | Context) -> NDArray:
        """Copy into ``other`` (an NDArray of the same shape) or to a new array on a context."""
        if isinstance(other, NDArray):
            if other._var is self._var and other._offset == self._offset:
                return other
            if other.shape != self.shape:
                raise ShapeError(
                    f"copyto: source shape {self.shape} does not match target shape {other.shape}"
                )
            if other.context == self.context:
                if other.dtype == self.dtype:
                    _invoke("_copy", [self], {}, out=other)
                else:
                    _invoke("Cast", [self], {"dtype": other.dtype.name}, out=other)
                return other
            _indexing.copy_across(self, other)
            return other
        ctx = _ctx_of(other)
        target = _alloc(self.shape, ctx, self.dtype)
        return self.copyto(target)

    def as_in_context(self, context: Context) -> NDArray:
        """Return this array if it is on ``context``, else a copy there."""
        context = _ctx_of(context)
        if context == self.context:
            return self
        return self.copyto(context)

    def astype(self, dtype: Any, copy: bool = True) -> NDArray:
        """Return the array cast to ``dtype`` (the ``Cast`` op); no copy if same dtype and copy=False."""
        dtype = np_dtype(dtype)
        if not copy and dtype == self.dtype:
            return self
        return _invoke("Cast", [self], {"dtype": dtype.name})

    def as_np_ndarray(self) -> np.ndarray:
        """Return a numpy copy (alias of :meth:`asnumpy`)."""
        return self.asnumpy()

    # -- shapes and views --------------------------------------------------------------
    def reshape(self, *shape: Any, **kwargs: Any) -> NDArray:
        """Return a view with a new shape; ``0`` keeps a dimension, ``-1`` infers one.

        While autograd records, the ``Reshape`` op is used so the gradient flows.
        """
        target = reshape_target(self.shape, shape, kwargs)
        if _recording():
            return _invoke("Reshape", [self], {"shape": target})
        raw = self._array
        if not _is_contiguous(raw):
            return _invoke("Reshape", [self], {"shape": target})
        return self._view(raw.reshape(target))

    def reshape_like(self, other: NDArray) -> NDArray:
        """Return a view with ``other``'s shape."""
        return self.reshape(other.shape)

    def flatten(self, inplace: bool = False) -> NDArray:
        """Collapse all but the first axis: ``(n, a, b) -> (n, a*b)``.

        The result is always a view; ``inplace`` is MXNet's flag for asking one.
        """
        first = self.shape[0] if self.shape else 1
        return self.reshape((first, -1))

    def expand_dims(self, axis: int, inplace: bool = False) -> NDArray:
        """Insert an axis of length 1 at ``axis`` (a view; ``inplace``: MXNet's flag for one)."""
        ndim = self.ndim + 1
        if not -ndim <= axis < ndim:
            raise ShapeError(
                f"expand_dims: axis {axis} is out of range for a result of {ndim} dimensions"
            )
        axis = axis % ndim
        return self.reshape(self.shape[:axis] + (1,) + self.shape[axis:])

    def squeeze(self, axis: int | Sequence[int] | None = None, inplace: bool = False) -> NDArray:
        """Remove axes of length 1 (all of them, or ``axis``) (a view; ``inplace``: MXNet's flag)."""
        if axis is None:
            axes = {index for index, dim in enumerate(self.shape) if dim == 1}
        else:
            axes = {a % self.ndim for a in ((axis,) if isinstance(axis, int) else axis)}
            for a in axes:
                if self.shape[a] != 1:
                    raise ShapeError(
                        f"squeeze: axis {a} of shape {self.shape} has length {self.shape[a]}, not 1"
                    )
        return self.reshape(tuple(dim for index, dim in enumerate(self.shape) if index not in axes))

    def transpose(self, axes: Sequence[int] | None = None, *more: int) -> NDArray:
        """Permute the axes (the ``transpose`` op); no axes reverses them."""
        if more:
            axes = (axes, *more)  # type: ignore[assignment]
        params = {} if axes is None else {"axes": tuple(axes)}
        return _invoke("transpose", [self], params)

    def broadcast_to(self, shape: Sequence[int]) -> NDArray:
        """Broadcast to ``shape`` (the ``broadcast_to`` op)."""
        _broadcast_shape("broadcast_to", self.shape, tuple(shape))
        return _invoke("broadcast_to", [self], {"shape": tuple(shape)})

    def __getitem__(self, key: Any) -> NDArray:
        view = _indexing.view_key(self, key)
        if view is not None:
            return view
        return _indexing.copy_index(self, key)

    def __setitem__(self, key: Any, value: Any) -> None:
        _indexing.set_item(self, key, value)

    # -- autograd (thin delegations to mxnb.autograd) -----------------------------------
    def attach_grad(self, grad_req: str = "write", stype: Any = None) -> None:
        """Allocate a gradient buffer for this array and mark it for autograd."""
        from .. import autograd

        autograd.attach_grad(self, grad_req)

    @property
    def grad(self) -> NDArray | None:
        """The gradient buffer attached by :meth:`attach_grad` (None if none)."""
        from .. import autograd

        return autograd.get_grad(self)

    def backward(
        self, out_grad: NDArray | None = None, retain_graph: bool = False, train_mode: bool = True
    ) -> None:
        """Compute the gradients of this array with respect to the marked arrays."""
        from .. import autograd

        autograd.backward([self], [out_grad], retain_graph, train_mode)

    def detach(self) -> NDArray:
        """Return a view that autograd does not track."""
        from .. import autograd

        detach = getattr(autograd, "detach", None)
        if detach is not None:
            return detach(self)
        return self._view(self._array)

    # -- arithmetic ---------------------------------------------------------------------------
    def __neg__(self) -> NDArray:
        return _invoke("negative", [self], {})

    def __pos__(self) -> NDArray:
        return self

    def __abs__(self) -> NDArray:
        return _invoke("abs", [self], {})

    def __add__(self, other: Any) -> NDArray:
        return _arith(self, other, "add")

    def __radd__(self, other: Any) -> NDArray:
        return _arith(self, other, "add")

    def __iadd__(self, other: Any) -> NDArray:  # noqa: PYI034
        return _arith(self, other, "add", out=self)

    def __sub__(self, other: Any) -> NDArray:
        return _arith(self, other, "sub")

    def __rsub__(self, other: Any) -> NDArray:
        return _arith(self, other, "sub", reverse=True)

    def __isub__(self, other: Any) -> NDArray:  # noqa: PYI034
        return _arith(self, other, "sub", out=self)

    def __mul__(self, other: Any) -> NDArray:
        return _arith(self, other, "mul")

    def __rmul__(self, other: Any) -> NDArray:
        return _arith(self, other, "mul")

    def __imul__(self, other: Any) -> NDArray:  # noqa: PYI034
        return _arith(self, other, "mul", out=self)

    def __truediv__(self, other: Any) -> NDArray:
        return _arith(self, other, "div")

    def __rtruediv__(self, other: Any) -> NDArray:
        return _arith(self, other, "div", reverse=True)

    def __itruediv__(self, other: Any) -> NDArray:  # noqa: PYI034
        return _arith(self, other, "div", out=self)

    def __mod__(self, other: Any) -> NDArray:
        return _arith(self, other, "mod")

    def __rmod__(self, other: Any) -> NDArray:
        return _arith(self, other, "mod", reverse=True)

    def __imod__(self, other: Any) -> NDArray:  # noqa: PYI034
        return _arith(self, other, "mod", out=self)

    def __pow__(self, other: Any) -> NDArray:
        return _arith(self, other, "power")

    def __rpow__(self, other: Any) -> NDArray:
        return _arith(self, other, "power", reverse=True)

    def __ipow__(self, other: Any) -> NDArray:  # noqa: PYI034
        return _arith(self, other, "power", out=self)

    # -- comparisons (results are 0/1 in the array's dtype, as MXNet) ---------------------
    def __eq__(self, other: object) -> NDArray:  # type: ignore[override]
        return _compare(self, other, "equal")

    def __ne__(self, other: object) -> NDArray:  # type: ignore[override]
        return _compare(self, other, "not_equal")

    def __gt__(self, other: Any) -> NDArray:
        return _compare(self, other, "greater")

    def __ge__(self, other: Any) -> NDArray:
        return _compare(self, other, "greater_equal")

    def __lt__(self, other: Any) -> NDArray:
        return _compare(self, other, "lesser")

    def __le__(self, other: Any) -> NDArray:
        return _compare(self, other, "lesser_equal")

    # -- reductions ----------------------------------------------------------------------------
    def sum(self, axis: Any = None, keepdims: bool = False, exclude: bool = False) -> NDArray:
        """Sum over ``axis`` (all axes by default) (the ``sum`` op)."""
        return _invoke("sum", [self], _reduce_params(axis, keepdims, exclude))

    def mean(self, axis: Any = None, keepdims: bool = False, exclude: bool = False) -> NDArray:
        """Mean over ``axis`` (the ``mean`` op)."""
        return _invoke("mean", [self], _reduce_params(axis, keepdims, exclude))

    def max(self, axis: Any = None, keepdims: bool = False, exclude: bool = False) -> NDArray:
        """Maximum over ``axis`` (the ``max`` op)."""
        return _invoke("max", [self], _reduce_params(axis, keepdims, exclude))

    def min(self, axis: Any = None, keepdims: bool = False, exclude: bool = False) -> NDArray:
        """Minimum over ``axis`` (the ``min`` op)."""
        return _invoke("min", [self], _reduce_params(axis, keepdims, exclude))

    def prod(self, axis: Any = None, keepdims: bool = False, exclude: bool = False) -> NDArray:
        """Product over ``axis`` (the ``prod`` op)."""
        return _invoke("prod", [self], _reduce_params(axis, keepdims, exclude))

    def argmax(self, axis: int | None = None, keepdims: bool = False) -> NDArray:
        """Index of the maximum along ``axis`` (the ``argmax`` op)."""
        return _invoke("argmax", [self], _reduce_params(axis, keepdims, False, tuple_axis=False))

    def argmin(self, axis: int | None = None, keepdims: bool = False) -> NDArray:
        """Index of the minimum along ``axis`` (the ``argmin`` op)."""
        return _invoke("argmin", [self], _reduce_params(axis, keepdims, False, tuple_axis=False))

    def norm(self, ord: int = 2, axis: Any = None, keepdims: bool = False) -> NDArray:
        """The L2 (or L1) norm (the ``norm`` op)."""
        params = _reduce_params(axis, keepdims, False)
        if ord != 2:
            params["ord"] = ord
        return _invoke("norm", [self], params)

    def clip(self, a_min: float, a_max: float) -> NDArray:
        """Clip values into ``[a_min, a_max]`` (the ``clip`` op)."""
        return _invoke("clip", [self], {"a_min": a_min, "a_max": a_max})

    def zeros_like(self) -> NDArray:
        """A new array of zeros with this shape, dtype and context."""
        return _creation.zeros_like(self)

    def ones_like(self) -> NDArray:
        """A new array of ones with this shape, dtype and context."""
        return _creation.ones_like(self)

    def tostype(self, stype: str) -> NDArray:
        """Only ``'default'`` (dense) storage exists in mxnb."""
        if stype != "default":
            from ..base import NotSupportedError

            raise NotSupportedError(f"tostype({stype!r}): mxnb has dense ('default') arrays only")
        return self


#: Operators reachable as NDArray methods (``x.exp()``), as MXNet's NDArray has them.
_METHOD_OPS = frozenset(
    [
        "abs",
        "sign",
        "round",
        "rint",
        "ceil",
        "floor",
        "fix",
        "trunc",
        "sqrt",
        "rsqrt",
        "cbrt",
        "rcbrt",
        "square",
        "reciprocal",
        "exp",
        "expm1",
        "log",
        "log10",
        "log2",
        "log1p",
        "sin",
        "cos",
        "tan",
        "arcsin",
        "arccos",
        "arctan",
        "sinh",
        "cosh",
        "tanh",
        "arcsinh",
        "arccosh",
        "arctanh",
        "degrees",
        "radians",
        "relu",
        "sigmoid",
        "softmax",
        "log_softmax",
        "softmin",
        "tile",
        "repeat",
        "flip",
        "pad",
        "slice",
        "slice_axis",
        "slice_like",
        "take",
        "pick",
        "one_hot",
        "topk",
        "sort",
        "argsort",
        "argmax_channel",
        "nansum",
        "nanprod",
        "sum_axis",
        "split",
        "swapaxes",
        "diag",
        "dot",
        "batch_dot",
        "broadcast_like",
        "broadcast_axes",
        "depth_to_space",
        "space_to_depth",
        "shape_array",
        "size_array",
    ]
)


class _OpMethod:
    """``x.exp()``: a registered operator reached as a method (a non-data descriptor).

    One per name of :data:`_METHOD_OPS`, set on the class below.  The op is
    looked up when the method is read, so one registered later (or again)
    is found; reading a method whose op is not registered raises
    AttributeError.  (A class ``__getattr__`` would do the same but slow down
    every attribute read of every NDArray: Python then takes its generic
    lookup path for ``x.shape`` and ``x._var`` too.)
    """

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __get__(self, array: NDArray | None, owner: type | None = None) -> Any:
        name = self.name
        from ..operator import registry

        if registry.find(name) is None:
            raise AttributeError(
                f"'NDArray' object has no attribute {name!r} (no operator {name!r} is registered)"
            )
        from .register import make_op_function

        function = make_op_function(name)
        if array is None:  # read on the class: the op function itself
            return function

        def method(*args: Any, **kwargs: Any) -> Any:
            return function(array, *args, **kwargs)

        method.__doc__ = function.__doc__
        return method


for _name in _METHOD_OPS:
    if _name not in NDArray.__dict__:
        setattr(NDArray, _name, _OpMethod(_name))
del _name


# ---------------------------------------------------------------------------
# helpers of the methods above
# ---------------------------------------------------------------------------


def _recording() -> bool:
    from .invoke import _autograd_state

    return _autograd_state()[0]


def _byte_offset(raw: Any, base: Any) -> int:
    try:
        return int(raw.__array_interface__["data"][0] - base.__array_interface__["data"][0])
    except (AttributeError, KeyError, TypeError):  # cupy: data.ptr
        return int(raw.data.ptr - base.data.ptr)


def _is_contiguous(raw: Any) -> bool:
    return bool(raw.flags.c_contiguous)


def _unpickle(values: np.ndarray, device_type: str, device_id: int) -> NDArray:
    from ..context import Context
    from .creation import array

    return array(values, ctx=Context(device_type, device_id), dtype=values.dtype)


def _reduce_params(
    axis: Any, keepdims: bool, exclude: bool, tuple_axis: bool = True
) -> dict[str, Any]:
    params: dict[str, Any] = {}
    if axis is not None:
        if tuple_axis:
            params["axis"] = (int(axis),) if isinstance(axis, (int, np.integer)) else tuple(axis)
        else:
            params["axis"] = int(axis)
    if keepdims:
        params["keepdims"] = True
    if exclude:
        params["exclude"] = True
    return params


_ARITH = {
    # kind: (same-shape op, broadcast op, scalar op, reversed scalar op)
    "add": ("elemwise_add", "broadcast_add", "_plus_scalar", "_plus_scalar"),
    "sub": ("elemwise_sub", "broadcast_sub", "_minus_scalar", "_rminus_scalar"),
    "mul": ("elemwise_mul", "broadcast_mul", "_mul_scalar", "_mul_scalar"),
    "div": ("elemwise_div", "broadcast_div", "_div_scalar", "_rdiv_scalar"),
    "mod": ("_mod", "broadcast_mod", "_mod_scalar", "_rmod_scalar"),
    "power": ("_power", "broadcast_power", "_power_scalar", "_rpower_scalar"),
    "maximum": ("_maximum", "broadcast_maximum", "_maximum_scalar", "_maximum_scalar"),
    "minimum": ("_minimum", "broadcast_minimum", "_minimum_scalar", "_minimum_scalar"),
    "equal": ("_equal", "broadcast_equal", "_equal_scalar", "_equal_scalar"),
    "not_equal": ("_not_equal", "broadcast_not_equal", "_not_equal_scalar", "_not_equal_scalar"),
    "greater": ("_greater", "broadcast_greater", "_greater_scalar", "_lesser_scalar"),
    "greater_equal": (
        "_greater_equal",
        "broadcast_greater_equal",
        "_greater_equal_scalar",
        "_lesser_equal_scalar",
    ),
    "lesser": ("_lesser", "broadcast_lesser", "_lesser_scalar", "_greater_scalar"),
    "lesser_equal": (
        "_lesser_equal",
        "broadcast_lesser_equal",
        "_lesser_equal_scalar",
        "_greater_equal_scalar",
    ),
}


def _arith(
    lhs: NDArray, rhs: Any, kind: str, reverse: bool = False, out: NDArray | None = None
) -> Any:
    invoke = _invoke_visible or _bind_invoke()
    if type(rhs) is not NDArray:
        if type(rhs) is float or type(rhs) is int or isinstance(rhs, _NUMBER_TYPES):
            if isinstance(rhs, (complex, np.complexfloating)):
                raise DTypeError(
                    f"{kind}: the scalar {rhs!r} is complex, which mxnb does not store; pass "
                    f"its .real, .imag or abs() explicitly"
                )
            ops = _ARITH[kind]
            op = ops[3] if reverse else ops[2]
            return invoke(op, [lhs], {"scalar": float(rhs)}, out)
        if isinstance(rhs, np.ndarray):
            rhs = _creation.array(rhs, ctx=lhs.context, dtype=lhs.dtype)
        elif not isinstance(rhs, NDArray):
            return NotImplemented
    if reverse:
        lhs, rhs = rhs, lhs
    if lhs.shape == rhs.shape:
        op = _SAME_SHAPE_OPS.get(kind) or _same_shape_op(kind)
        if lhs.context is not rhs.context:
            _check_same_context(op, lhs, rhs)
        return invoke(op, [lhs, rhs], {}, out)
    broadcast_op = _ARITH[kind][1]
    _check_same_context(broadcast_op, lhs, rhs)
    shape = _broadcast_shape(broadcast_op, lhs.shape, rhs.shape)
    if out is not None and shape != out.shape:
        raise ShapeError(
            f"{broadcast_op}: the result of shapes {lhs.shape} and {rhs.shape} has shape {shape}, "
            f"which cannot be written in place into an array of shape {out.shape}"
        )
    return invoke(broadcast_op, [lhs, rhs], {}, out)


#: kind -> the op for operands of one shape, once it is known to be registered.
_SAME_SHAPE_OPS: dict[str, str] = {}


def _same_shape_op(kind: str) -> str:
    """The elementwise op of ``kind`` (``elemwise_add``), else its broadcast op."""
    same_op, broadcast_op = _ARITH[kind][:2]
    if not _has_op(same_op):
        return broadcast_op
    _SAME_SHAPE_OPS[kind] = same_op
    return same_op


def _compare(lhs: NDArray, rhs: Any, kind: str) -> Any:
    if rhs is None:
        return kind == "not_equal"
    if not isinstance(rhs, (NDArray, np.ndarray) + _NUMBER_TYPES):
        return NotImplemented
    return _arith(lhs, rhs, kind)


_op_cache: dict[str, bool] = {}


def _has_op(name: str) -> bool:
    found = _op_cache.get(name)
    if found is None:
        from ..operator import registry

        found = registry.find(name) is not None
        if found:
            _op_cache[name] = True
    return found


# The chapters that build on NDArray; its methods call into them.
from . import creation as _creation  # noqa: E402 -- the chapters that build on NDArray import it first
from . import indexing as _indexing  # noqa: E402 -- the chapters that build on NDArray import it first
