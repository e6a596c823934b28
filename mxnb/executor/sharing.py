"""Sharing between executors: parameters, input buffers and the memory pool (MXNet's ``shared_exec``).

Idea (MXNet: ``GraphExecutor::Init`` with ``shared_exec`` / ``shared_buffer``,
used by ``BucketingModule``): the executors of one network unrolled to
several lengths run one after the other, never at once, so they can share
almost everything.  Three things are shared:

* **parameters** (``shared_arg_names``): the argument, its gradient and the
  auxiliary states ARE the shared executor's NDArrays, so an update through one
  executor is seen by all;
* **input buffers** (``shared_buffer``, a dict the caller keeps): every other
  argument (data, label) and its gradient is a view of the first elements of
  the buffer's array of that name when it is large enough, else a new array
  that replaces it in the buffer;
* **the memory pool**: the planned blocks (intermediate values, see
  :mod:`.memory`) are taken from the shared executor's pool, largest block
  first, each the smallest free pool block that fits (MXNet's best fit);
  blocks that nothing fits are allocated and added to the pool for the next
  executor.

Rule (engine order): a borrowed block keeps the var of the executor that
allocated it, and the borrowing executor WRITES that var on every access,
reads included.  The owner's ops read or write the var (an arena's ops read
it), so every op of the borrower is ordered after the owner's earlier ops on
that memory and before its later ones: a bucket's forward never overwrites a
value that the previous bucket's backward still has to read.

State kept: none here; the pool is a list on the owning executor
(``Executor._data_pool``) that every executor sharing it appends to.

Example::

    >>> import mxnb as mx
    >>> w, b = mx.sym.Variable('w'), mx.sym.Variable('b')
    >>> def net(steps):
    ...     x = mx.sym.Variable('x')
    ...     for i in range(steps):
    ...         x = mx.sym.tanh(mx.sym.FullyConnected(x, w, b, num_hidden=8, name=f'fc{i}'))
    ...     return x
    >>> big = net(4).simple_bind(mx.cpu(), x=(2, 8))
    >>> small = net(2).simple_bind(mx.cpu(), x=(2, 8), shared_exec=big,
    ...                            shared_arg_names=['w', 'b'])
    >>> small.arg_dict['w'] is big.arg_dict['w'], small.borrowed_bytes > 0
    (True, True)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from .. import engine as _engine_mod
from .. import storage as _storage
from ..base import ShapeError
from ..ndarray import creation as _nd
from ..ndarray.ndarray import NDArray, _Chunk

__all__ = ["bound_arrays", "name_vars", "take_blocks"]


def _reshape_or_create(
    key: str, shape: tuple, dtype: Any, ctx: Any, buffer: dict[str, NDArray] | None
) -> NDArray:
    """A view of ``buffer[key]``'s first elements if it is large enough, else a new array kept there."""
    if buffer is None:
        return _nd.zeros(shape, ctx=ctx, dtype=dtype)
    size = int(np.prod(shape, dtype=np.int64))
    held = buffer.get(key)
    if (
        held is not None
        and held.size >= size
        and held.dtype == np.dtype(dtype)
        and held.context == ctx
        and held._array.flags.c_contiguous
    ):
        return held._view(held._array.reshape(-1)[:size].reshape(shape))
    array = _nd.zeros(shape, ctx=ctx, dtype=dtype)
    buffer[key] = array
    return array


def bound_arrays(
    graph: Any,
    ctx: Any,
    shared_exec: Any,
    shared_arg_names: Sequence[str] | None,
    shared_buffer: dict[str, NDArray] | None,
) -> tuple[dict[str, NDArray], dict[str, NDArray], dict[str, NDArray]]:
    """``(args, grads, aux)`` for a simple_bind of ``graph`` sharing with ``shared_exec`` / ``shared_buffer``.

    A shared parameter whose shape differs here is a ShapeError naming it: a
    parameter must keep its shape in every executor that shares it.
    """
    shared_names = set(shared_arg_names or ())
    if shared_names and shared_exec is None:
        raise ShapeError(
            "simple_bind: shared_arg_names needs shared_exec (the executor owning them)"
        )

    def record(entry: int) -> Any:
        return graph.entries[entry]

    def shared(table: Mapping[str, NDArray], name: str, entry: int, what: str) -> NDArray:
        array = table.get(name)
        want = record(entry).shape
        if array is None:
            raise ShapeError(
                f"simple_bind: shared_arg_names lists {name!r} but the shared executor has no "
                f"{what} of that name; share only the parameters both symbols have"
            )
        if tuple(array.shape) != tuple(want):
            raise ShapeError(
                f"bind: {what} {name!r} has shape {tuple(want)} here but {tuple(array.shape)} in "
                "the shared module; a shared parameter must keep its shape in every bucket"
            )
        return array

    args: dict[str, NDArray] = {}
    grads: dict[str, NDArray] = {}
    for name, entry in graph.arg_entries.items():
        shape, dtype = record(entry).shape, record(entry).dtype
        if name in shared_names:
            args[name] = shared(shared_exec.arg_dict, name, entry, "parameter")
            if name in graph.grad_entries:
                grads[name] = shared(shared_exec.grad_dict, name, entry, "gradient of")
            continue
        args[name] = _reshape_or_create(name, shape, dtype, ctx, shared_buffer)
        if name in graph.grad_entries:
            grads[name] = _reshape_or_create(f"grad of {name}", shape, dtype, ctx, shared_buffer)
    aux: dict[str, NDArray] = {}
    for name, entry in graph.aux_entries.items():
        if shared_exec is not None and name in shared_exec.aux_dict:
            aux[name] = shared(shared_exec.aux_dict, name, entry, "auxiliary state")
        else:
            aux[name] = _nd.zeros(record(entry).shape, ctx=ctx, dtype=record(entry).dtype)
    return args, grads, aux


def _new_block(nbytes: int, ctx: Any, label: str) -> NDArray:
    handle = _storage.alloc_exact(max(nbytes, 1), ctx)  # planned bytes, no size class
    var = _engine_mod.get().new_var(label)
    raw = handle.buffer[:nbytes]
    return NDArray._make(_Chunk(handle, var, ctx), var, raw, 0, (nbytes,), raw.dtype, ctx)


def name_vars(held: Sequence[tuple[Any, str]], blocks: Sequence[tuple[Any, str]] = ()) -> None:
    """Name each var after what it holds (``Engine.name_var``), for the views.

    ``held``: (var, name) of arrays a person named (``fc1_weight``): the
    var takes that name.  ``blocks``: (var, entry name) of planned storage:
    the var keeps its block name and adds its entries, the first and how
    many more share it (``'storage0 (fc1_output +3)'``), so both the block
    a notebook talks about and the tensors it holds can be read off it.
    """
    names: dict[int, tuple[Any, list[str], bool]] = {}
    for group, is_block in ((held, False), (blocks, True)):
        for var, name in group:
            entry = names.setdefault(id(var), (var, [], is_block))
            if name not in entry[1]:
                entry[1].append(name)
    engine = _engine_mod.get()
    for var, held_names, is_block in names.values():
        more = len(held_names) - 1
        label = held_names[0] if not more else f"{held_names[0]} +{more}"
        if is_block:
            label = f"{var.name.split(' (')[0]} ({label})"
        engine.name_var(var, label)


def take_blocks(
    blocks: Sequence[Any], ctx: Any, pool: list[NDArray] | None
) -> tuple[list[NDArray], set[int]]:
    """One uint8 NDArray per planned block, and the indices of those borrowed from ``pool``.

    Without a pool every block is new.  With one, blocks are served largest
    first, each by the smallest free pool block of at least its size on
    ``ctx``; new blocks are appended to ``pool``.
    """
    result: list[NDArray | None] = [None] * len(blocks)
    borrowed: set[int] = set()
    free = (
        []
        if pool is None
        else sorted((item for item in pool if item.context == ctx), key=lambda item: item.size)
    )
    for index in sorted(range(len(blocks)), key=lambda i: -blocks[i].nbytes):
        nbytes = blocks[index].nbytes
        fit = next((k for k, item in enumerate(free) if item.size >= nbytes), None)
        if fit is not None:
            held = free.pop(fit)
            result[index] = held._view(held._array[:nbytes])
            borrowed.add(index)
            continue
        block = _new_block(nbytes, ctx, f"storage{blocks[index].id}")
        result[index] = block
        if pool is not None:
            pool.append(block)
    return result, borrowed  # type: ignore[return-value]
