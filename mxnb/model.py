"""``mx.model``: checkpoints in MXNet's own files, so they move both ways between MXNet and mxnb.

Idea (MXNet: python/mxnet/model.py): a checkpoint is two files,
``prefix-symbol.json`` (the network, MXNet 1.x symbol JSON) and
``prefix-%04d.params`` (the parameters of one epoch, in MXNet's binary
NDArray-list format, :mod:`mxnb.ndarray.mxnet_format`) with the names
prefixed ``arg:`` (arguments) or ``aux:`` (auxiliary states).

A BucketingModule's checkpoint adds ``prefix-KEY-symbol.json`` per bucket and
``prefix.buckets``, the integer bucket keys as one int32 vector
(:func:`save_bucket_keys`, :func:`load_bucket_keys`).

Rule: arrays are saved from the CPU; loading splits the names back by prefix
and refuses other names, naming the file; reading is bounds-checked and never
unpickles (see :mod:`mxnb.ndarray.mxnet_format`).

State kept: none.

Example::

    >>> import os, tempfile, mxnb as mx
    >>> prefix = os.path.join(tempfile.mkdtemp(), 'net')
    >>> net = mx.sym.FullyConnected(mx.sym.Variable('data'), num_hidden=2, name='fc')
    >>> mx.model.save_checkpoint(prefix, 3, net, {'fc_weight': mx.nd.ones((2, 4)), 'fc_bias': mx.nd.zeros(2)}, {})
    >>> sym, args, auxs = mx.model.load_checkpoint(prefix, 3)
    >>> sorted(args), sym.list_arguments()
    (['fc_bias', 'fc_weight'], ['data', 'fc_weight', 'fc_bias'])
"""

from __future__ import annotations

import logging
from typing import Any

import numpy as np

from .base import FormatError
from .context import cpu
from .ndarray import NDArray, array, load, mxnet_format

__all__ = [
    "load_bucket_keys",
    "load_checkpoint",
    "load_params",
    "save_bucket_keys",
    "save_checkpoint",
]

_LOG = logging.getLogger(__name__)


def save_checkpoint(
    prefix: str,
    epoch: int,
    symbol: Any,
    arg_params: dict[str, NDArray],
    aux_params: dict[str, NDArray],
    remove_amp_cast: bool = True,
) -> None:
    """Write ``prefix-symbol.json`` (when ``symbol`` is given) and ``prefix-%04d.params``."""
    if symbol is not None:
        symbol.save(f"{prefix}-symbol.json", remove_amp_cast=remove_amp_cast)
    save_dict = {f"arg:{name}": value.as_in_context(cpu()) for name, value in arg_params.items()}
    save_dict.update(
        {f"aux:{name}": value.as_in_context(cpu()) for name, value in aux_params.items()}
    )
    param_name = f"{prefix}-{epoch:04d}.params"
    mxnet_format.save(param_name, save_dict)
    _LOG.info('Saved checkpoint to "%s"', param_name)


def load_params(prefix: str, epoch: int) -> tuple[dict[str, NDArray], dict[str, NDArray]]:
    """Read ``prefix-%04d.params`` into ``(arg_params, aux_params)``."""
    fname = f"{prefix}-{epoch:04d}.params"
    return split_params(fname, load(fname))


def split_params(fname: str, save_dict: Any) -> tuple[dict[str, NDArray], dict[str, NDArray]]:
    """Split what ``mx.nd.load(fname)`` gave into ``(arg_params, aux_params)`` by name prefix.

    Anything but a dict of ``arg:name`` / ``aux:name`` arrays is a ``FormatError`` naming
    ``fname`` and the bad name.
    """
    if not isinstance(save_dict, dict):
        raise FormatError(
            f"load {fname!r}: a checkpoint holds named arrays, this file holds a list"
        )
    arg_params: dict[str, NDArray] = {}
    aux_params: dict[str, NDArray] = {}
    if not save_dict:
        _LOG.warning("Params file '%s' is empty", fname)
    for key, value in save_dict.items():
        kind, _, name = key.partition(":")
        if kind == "arg" and name:
            arg_params[name] = value
        elif kind == "aux" and name:
            aux_params[name] = value
        else:
            raise FormatError(
                f"load {fname!r}: array name {key!r} has neither the 'arg:' nor the 'aux:' prefix "
                "of a checkpoint"
            )
    return arg_params, aux_params


def load_checkpoint(prefix: str, epoch: int) -> tuple[Any, dict[str, NDArray], dict[str, NDArray]]:
    """Read a checkpoint: ``(symbol, arg_params, aux_params)``."""
    from . import symbol as sym

    symbol = sym.load(f"{prefix}-symbol.json")
    arg_params, aux_params = load_params(prefix, epoch)
    return symbol, arg_params, aux_params


def save_bucket_keys(prefix: str, keys: list[Any]) -> None:
    """Write ``prefix.buckets``: the bucket keys as one int32 vector (MXNet's file; integers only)."""
    if not all(isinstance(key, int | np.integer) and not isinstance(key, bool) for key in keys):
        raise FormatError(
            f"save_checkpoint: bucket keys {keys} are not all integers; MXNet's prefix.buckets "
            "file stores them as int32"
        )
    mxnet_format.save(f"{prefix}.buckets", [array(np.array(keys, dtype=np.int32), dtype=np.int32)])


def load_bucket_keys(prefix: str) -> list[int]:
    """Read the integer keys of ``prefix.buckets`` (a list holding one vector)."""
    path = f"{prefix}.buckets"
    saved = load(path)
    vector = saved[0] if isinstance(saved, list) and len(saved) == 1 else None
    if vector is None or len(vector.shape) != 1 or vector.dtype.kind not in "iuf":
        found = type(saved).__name__ if vector is None else f"shape {vector.shape} {vector.dtype}"
        raise FormatError(
            f"BucketingModule.load: {path!r} must hold one vector of bucket keys (the "
            f"prefix.buckets file save_checkpoint writes); found {found}"
        )
    values = vector.asnumpy()
    if not np.array_equal(values, np.round(values)):
        raise FormatError(f"BucketingModule.load: {path!r} holds bucket keys that are not integers")
    return [int(key) for key in values]
