"""The Optimizer base class, the optimizer registry and the Updater.

Idea (MXNet: python/mxnet/optimizer/optimizer.py): an optimizer turns
``(index, weight, grad, state)`` into a new weight, in place.  It keeps the
hyper-parameters (learning rate or a schedule, weight decay, gradient
rescaling and clipping, per-parameter lr / wd multipliers) and counts the
updates of each parameter.  An :class:`Updater` owns one optimizer and the
states of every key; it is the function a KVStore (locally or on a server)
calls as ``updater(key, grad, weight)``.

Rules (MXNet 1.9.1's):
    * the update count of a parameter starts at ``begin_num_update`` and is
      increased BEFORE its learning rate is read; ``num_update`` is the largest
      count, the argument of the lr schedule;
    * parameters whose names do not end in ``_weight`` or ``_gamma`` get
      ``wd_mult = 0`` (no weight decay on biases, betas, moving stats);
    * ``clip_gradient=None`` or ``0`` means no clipping.

State kept:
    lr, wd, rescale_grad, clip_gradient, lr_scheduler   hyper-parameters
    idx2name, lr_mult, wd_mult                            per-parameter names and multipliers
    _index_update_count, num_update                       update counts
    Updater.states                                        index -> optimizer state (NDArrays)

Example::

    >>> import mxnb as mx
    >>> updater = mx.optimizer.get_updater(mx.optimizer.create('sgd', learning_rate=0.5))
    >>> weight = mx.nd.ones(2)
    >>> updater(0, mx.nd.ones(2), weight)
    >>> weight.asnumpy().tolist()
    [0.5, 0.5]
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import numpy as np

from ..base import FormatError, MXNBError
from ..validate import check_number
from . import state_file
from .lr_scheduler import LRScheduler

_LOG = logging.getLogger(__name__)

__all__ = ["Optimizer", "Updater", "create", "get_updater", "op_label", "register"]

_REGISTRY: dict[str, type[Optimizer]] = {}


def register(cls: type[Optimizer]) -> type[Optimizer]:
    """Class decorator: make ``cls`` available to :func:`create` by its lower-case name."""
    name = cls.__name__.lower()
    if name in _REGISTRY and _REGISTRY[name] is not cls:
        _LOG.warning(
            "optimizer %s.%s replaces the optimizer registered as %r",
            cls.__module__,
            cls.__name__,
            name,
        )
    _REGISTRY[name] = cls
    return cls


def create(name: str | Optimizer, **kwargs: Any) -> Optimizer:
    """Return the optimizer registered as ``name`` (case-insensitive) built with ``kwargs``."""
    if isinstance(name, Optimizer):
        return name
    cls = _REGISTRY.get(str(name).lower())
    if cls is None:
        known = ", ".join(sorted(_REGISTRY))
        raise MXNBError(f"optimizer {name!r} is not registered; known optimizers: {known}")
    return cls(**kwargs)


class Optimizer:
    """Base of every optimizer: hyper-parameters, lr / wd per parameter, update counts."""

    register = staticmethod(register)
    create_optimizer = staticmethod(create)

    def __init__(
        self,
        rescale_grad: float = 1.0,
        param_idx2name: dict[int, str] | None = None,
        wd: float = 0.0,
        clip_gradient: float | None = None,
        learning_rate: float | None = None,
        lr_scheduler: LRScheduler | None = None,
        sym: Any = None,
        begin_num_update: int = 0,
        multi_precision: bool = False,
        param_dict: dict | None = None,
    ) -> None:
        self.rescale_grad = self._number("rescale_grad", rescale_grad)
        self.lr_scheduler = lr_scheduler
        if lr_scheduler is None and learning_rate is None:
            learning_rate = 0.01
        learning_rate = self._number("learning_rate", learning_rate, low=0, optional=True)
        self.lr = learning_rate
        overridden = lr_scheduler is not None and learning_rate is not None
        if overridden and lr_scheduler.base_lr != learning_rate:
            # MXNet prints this and lets learning_rate win; so do we.
            _LOG.warning(
                "learning rate from ``lr_scheduler`` has been overwritten by "
                "``learning_rate`` in optimizer."
            )
            lr_scheduler.base_lr = learning_rate
        self.wd = self._number("wd", wd)
        self.lr_mult: dict[Any, float] = {}
        self.wd_mult: dict[Any, float] = {}
        self.begin_num_update = begin_num_update
        self.num_update = begin_num_update
        self._index_update_count: dict[Any, int] = {}
        self.clip_gradient = self._number("clip_gradient", clip_gradient, optional=True)
        self.multi_precision = multi_precision
        if param_idx2name is None:
            param_idx2name = {}
        if not isinstance(param_idx2name, dict):
            raise MXNBError("param_idx2name must be a dict mapping parameter index to name")
        self.idx2name = param_idx2name.copy()
        self.sym_info = (sym.attr_dict(), sym.list_arguments()) if sym is not None else ()
        self.param_dict = param_dict if param_dict else {}
        self.set_lr_mult({})
        self.set_wd_mult({})

    def _number(self, name: str, value: Any, **bounds: Any) -> Any:
        """``value`` checked (finite, in ``bounds``: see :func:`mxnb.validate.check_number`).

        Every hyper-parameter of every optimizer passes here once, where it is
        given: a NaN learning rate is refused at construction, not found as
        NaN weights many updates later.
        """
        return check_number(value, name, type(self).__name__, **bounds)

    # -- states ------------------------------------------------------------------
    def create_state(self, index: Any, weight: Any) -> Any:
        """Return the state of one parameter (None, an NDArray or a tuple of them)."""
        return None

    def create_state_multi_precision(self, index: Any, weight: Any) -> Any:
        """Like :meth:`create_state`, plus a float32 master copy for float16 weights."""
        if self.multi_precision and weight.dtype == np.float16:
            master = weight.astype(np.float32)
            return (self.create_state(index, master), master)
        if weight.dtype == np.float16 and not self.multi_precision:
            _LOG.warning(
                "Accumulating with float16 in optimizer can lead to poor accuracy or slow "
                "convergence. Consider using multi_precision=True option of the optimizer"
            )
        return self.create_state(index, weight)

    def update(self, index: Any, weight: Any, grad: Any, state: Any) -> None:
        """Update ``weight`` in place from ``grad`` and ``state``."""
        raise NotImplementedError(type(self).__name__)

    def update_multi_precision(self, index: Any, weight: Any, grad: Any, state: Any) -> None:
        """:meth:`update`, on the float32 master copy when the weight is float16."""
        if self.multi_precision and weight.dtype == np.float16:
            inner, master = state
            self.update(index, master, grad.astype(np.float32), inner)
            master.copyto(weight)  # a Cast op back to float16
        else:
            self.update(index, weight, grad, state)

    # -- hyper-parameters per parameter ------------------------------------------------
    def set_learning_rate(self, lr: float) -> None:
        """Set the learning rate (refused when a scheduler drives it)."""
        if self.lr_scheduler is not None:
            raise MXNBError(
                "set_learning_rate: this optimizer's rate comes from its lr_scheduler; "
                "change the scheduler instead"
            )
        self.lr = self._number("learning_rate", lr, low=0)

    @property
    def learning_rate(self) -> float:
        """The current learning rate (of the scheduler, when there is one)."""
        if self.lr_scheduler is not None:
            return self.lr_scheduler(self.num_update)
        return self.lr

    def set_lr_mult(self, args_lr_mult: dict) -> None:
        """Set per-parameter lr multipliers (also read from symbol attrs ``__lr_mult__``)."""
        self.lr_mult = {}
        self._read_sym_mult("__lr_mult__", self.lr_mult)
        self.lr_mult.update(args_lr_mult)

    def set_wd_mult(self, args_wd_mult: dict) -> None:
        """Set per-parameter wd multipliers; names not ending in _weight / _gamma get 0."""
        self.wd_mult = {}
        for name in self.idx2name.values():
            if not name.endswith(("_weight", "_gamma")):
                self.wd_mult[name] = 0.0
        self._read_sym_mult("__wd_mult__", self.wd_mult)
        self.wd_mult.update(args_wd_mult)

    def _read_sym_mult(self, key: str, into: dict) -> None:
        if self.sym_info:
            attr, arg_names = self.sym_info
            for name in arg_names:
                if name in attr and key in attr[name]:
                    into[name] = float(attr[name][key])

    def _update_count(self, index: Any) -> None:
        """Count one more update of ``index`` (or of each index of a list)."""
        for idx in index if isinstance(index, (list, tuple)) else [index]:
            if idx not in self._index_update_count:
                self._index_update_count[idx] = self.begin_num_update
            self._index_update_count[idx] += 1
            self.num_update = max(self._index_update_count[idx], self.num_update)

    def _multiplier(self, index: Any, table: dict, attribute: str) -> float:
        if index in self.param_dict:
            return getattr(self.param_dict[index], attribute)
        if index in table:
            return table[index]
        if index in self.idx2name:
            return table.get(self.idx2name[index], 1.0)
        return 1.0

    def _get_lr(self, index: Any) -> float:
        """The learning rate of parameter ``index`` (schedule times lr_mult)."""
        lr = self.lr_scheduler(self.num_update) if self.lr_scheduler is not None else self.lr
        return lr * self._multiplier(index, self.lr_mult, "lr_mult")

    def _get_wd(self, index: Any) -> float:
        """The weight decay of parameter ``index`` (wd times wd_mult)."""
        return self.wd * self._multiplier(index, self.wd_mult, "wd_mult")

    def _common_kwargs(self) -> dict[str, float]:
        """``rescale_grad`` and, when set and non-zero, ``clip_gradient`` for the update ops."""
        kwargs = {"rescale_grad": self.rescale_grad}
        if self.clip_gradient:
            kwargs["clip_gradient"] = self.clip_gradient
        return kwargs

    def _fused_update(
        self,
        op: str,
        index: Any,
        weight: Any,
        grad: Any,
        states: Any = (),
        lr_scale: Any = None,
        **params: Any,
    ) -> None:
        """Count the update, then push ONE fused update op ``op`` writing ``weight`` and ``states``.

        The op gets lr and wd for ``index``, ``rescale_grad`` / ``clip_gradient`` and
        ``params``; ``lr_scale(t)`` (t: the parameter's update count) scales the rate
        (Adam's bias correction).  The engine op is named ``<op>:<index>``.
        """
        from .. import ndarray as nd

        self._update_count(index)
        lr = self._get_lr(index)
        if lr_scale is not None:
            lr *= lr_scale(self._index_update_count[index])
        kwargs = self._common_kwargs()
        kwargs.update(lr=lr, wd=self._get_wd(index), **params)
        getattr(nd, op)(weight, grad, *states, out=weight, name=op_label(op, index), **kwargs)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(learning_rate={self.lr}, wd={self.wd})"


class Updater:
    """Apply an optimizer to ``(index, grad, weight)``, creating each index's state on first use.

    The same callable runs inside a local KVStore and on a parameter server.
    """

    def __init__(self, optimizer: Optimizer) -> None:
        self.optimizer = optimizer
        self.states: dict[Any, Any] = {}
        self.states_synced: dict[Any, bool] = {}
        self._states_source = "<bytes>"  # where loaded states came from, for errors

    def __call__(self, index: Any, grad: Any, weight: Any) -> None:
        """Update ``weight`` (one NDArray, or lists of indices / grads / weights) in place."""
        if isinstance(index, (list, tuple)):
            for idx, one_grad, one_weight in zip(index, grad, weight):
                self(idx, one_grad, one_weight)
            return
        if index not in self.states:
            self.states[index] = self.optimizer.create_state_multi_precision(index, weight)
            self.states_synced[index] = True
        elif not self.states_synced[index]:
            self._check_loaded_state(index, weight)
            self.states[index] = _to_context(self.states[index], weight.context)
            self.states_synced[index] = True
        self.optimizer.update_multi_precision(index, weight, grad, self.states[index])

    def get_states(self, dump_optimizer: bool = False) -> bytes:
        """Serialize the states (and with ``dump_optimizer`` the update counts) to bytes.

        The format is a pickle-free ``.npz`` archive (:mod:`.state_file`): a
        JSON layout plus one array per state NDArray, so loading never runs code.
        """
        arrays: dict[str, np.ndarray] = {}
        layout = {
            "states": [
                [_key_json(key), _flatten(state, arrays)] for key, state in self.states.items()
            ],
            "optimizer": None,
        }
        if dump_optimizer:
            opt = self.optimizer
            layout["optimizer"] = {
                "type": type(opt).__name__.lower(),
                "num_update": opt.num_update,
                "counts": [[_key_json(k), v] for k, v in opt._index_update_count.items()],
            }
        return state_file.dumps(layout, arrays)

    def set_states(self, states: bytes, source: str = "<bytes>") -> None:
        """Restore states written by :meth:`get_states`.

        A file that is not one raises ``FormatError`` naming ``source`` (the
        file name, when the caller read one) and the bad field.
        """
        from ..ndarray import array as nd_array

        layout, arrays = state_file.loads(states, source)
        self._states_source = source
        self.states = {
            _key_from_json(key): _unflatten(item, arrays, nd_array)
            for key, item in layout["states"]
        }
        self.states_synced = dict.fromkeys(self.states, False)
        dumped = layout.get("optimizer")
        if dumped:
            self.optimizer.num_update = dumped["num_update"]
            self.optimizer._index_update_count = {_key_from_json(k): v for k, v in dumped["counts"]}

    def _check_loaded_state(self, index: Any, weight: Any) -> None:
        """A loaded state must have the form this optimizer makes for ``weight``: the same
        nesting, shapes and dtypes (else the update would fail, or worse, broadcast)."""
        wanted = _state_form(self.optimizer.create_state_multi_precision(index, weight))
        found = _state_form(self.states[index])
        if found != wanted:
            raise FormatError(
                f"optimizer states {self._states_source!r}: key {index!r} holds a state of form "
                f"{found} but {type(self.optimizer).__name__} needs {wanted} for a weight of "
                f"shape {weight.shape}; load states saved by the same optimizer for the same "
                "parameters"
            )


def _state_form(state: Any) -> Any:
    """The nesting, shapes and dtypes of a state: None, [forms...] or (shape, dtype name)."""
    if state is None:
        return None
    if isinstance(state, (list, tuple)):
        return [_state_form(item) for item in state]
    return (tuple(state.shape), np.dtype(state.dtype).name)


def op_label(op: str, index: Any) -> str:
    """The engine op name of an update: ``sgd_mom_update:fc1_weight`` (the op and the key).

    The timeline and the DAG then show which parameter each update wrote.
    """
    return f"{op}:{index}"


def get_updater(optimizer: Optimizer) -> Updater:
    """Return an :class:`Updater` for ``optimizer``."""
    return Updater(optimizer)


def _key_json(key: Any) -> list:
    return ["int", key] if isinstance(key, int) else ["str", str(key)]


def _key_from_json(item: list) -> Any:
    kind, value = item
    return int(value) if kind == "int" else value


def _flatten(state: Any, arrays: dict) -> Any:
    """Describe ``state`` as JSON; NDArrays go into ``arrays`` by a generated name."""
    if state is None:
        return None
    if isinstance(state, (list, tuple)):
        return {
            "seq": [_flatten(item, arrays) for item in state],
            "tuple": isinstance(state, tuple),
        }
    name = f"a{len(arrays)}"
    arrays[name] = state.asnumpy()
    return {"array": name, "ctx": str(state.context)}


def _unflatten(item: Any, arrays: dict, nd_array: Callable) -> Any:
    if item is None:
        return None
    if "seq" in item:
        values = [_unflatten(sub, arrays, nd_array) for sub in item["seq"]]
        return tuple(values) if item["tuple"] else values
    value = arrays[item["array"]]
    return nd_array(value, dtype=value.dtype)


def _to_context(state: Any, context: Any) -> Any:
    if state is None:
        return None
    if isinstance(state, (list, tuple)):
        moved = [_to_context(item, context) for item in state]
        return tuple(moved) if isinstance(state, tuple) else moved
    return state.as_in_context(context)
