"""The Module's optimizer: where updates run (the kvstore or the Module's own updater), and running them.

Idea (MXNet: ``Module.init_optimizer`` / ``update`` and ``model._create_kvstore``):
``init_optimizer`` creates the optimizer (``rescale_grad = 1 / batch``) and
decides, as MXNet 1.9.1 does, whether a KVStore is used and whether the
optimizer runs ON it; ``update`` then pushes each parameter's gradients and
pulls the updated weights, or updates each device's weights here.  The
rules are in :mod:`.module`'s docstring.

State kept (on the Module it is mixed into):
    _optimizer, _kvstore, _owns_kvstore, _update_on_kvstore, _updater

Example::

    >>> import mxnb as mx
    >>> store, on_store = create_kvstore('local', 1, {})
    >>> store, on_store                      # one device: no store, the module updates
    (None, False)
"""

from __future__ import annotations

import os
from typing import Any

from .. import optimizer as _opt
from ..atomic_file import write_atomically
from ..base import MXNBError
from ..kvstore import KVStore, LocalKVStore
from ..kvstore import create as _create_kv

__all__ = ["ModuleOptimizer", "create_kvstore"]


def create_kvstore(kvstore: Any, num_device: int, arg_params: dict) -> tuple[KVStore | None, bool]:
    """MXNet's ``_create_kvstore``: which store (None for one device) and whether it updates."""
    update_on_kvstore = bool(int(os.getenv("MXNET_UPDATE_ON_KVSTORE", "1")))
    if kvstore is None:
        store = None
    elif isinstance(kvstore, KVStore):
        store = kvstore
    elif isinstance(kvstore, str):
        if num_device == 1 and "dist" not in kvstore:
            store = None
        else:
            store = _create_kv(kvstore)
            if kvstore == "local":
                biggest = max((param.size for param in arg_params.values()), default=0)
                if biggest > 1024 * 1024 * 16:
                    update_on_kvstore = False
    else:
        raise MXNBError(f"kvstore must be a KVStore, a str or None, got {kvstore!r}")
    return store, (update_on_kvstore and store is not None)


class ModuleOptimizer:
    """The optimizer half of :class:`~.module.Module` (a mixin over the Module's state)."""

    # Set by Module; declared here for readers and type checkers.
    _optimizer: Any
    _kvstore: Any
    _owns_kvstore: bool
    _update_on_kvstore: bool
    _updater: Any
    _preload_opt_states: Any
    optimizer_initialized: bool
    _arg_params: dict[str, Any]
    _context: list[Any]
    _exec_group: Any
    _param_names: list[str]
    _params_dirty: bool
    _symbol: Any
    logger: Any
    _check_ready: Any  # BaseModule's: raise unless bound and initialised
    get_params: Any  # Module's: the parameters, copied from the devices

    def init_optimizer(
        self,
        kvstore: Any = "local",
        optimizer: Any = "sgd",
        optimizer_params: Any = (("learning_rate", 0.01),),
        force_init: bool = False,
    ) -> None:
        """Create the optimizer (``rescale_grad = 1/batch``) and the kvstore, MXNet's way."""
        self._check_ready("init_optimizer")
        if self.optimizer_initialized and not force_init:
            self.logger.warning("optimizer already initialized, ignoring...")
            return
        if self._params_dirty:
            self.get_params()
        store, update_on_kvstore = create_kvstore(kvstore, len(self._context), self._arg_params)
        group = self._exec_group
        batch_size = group.batch_size
        if store is not None and "dist" in store.type and "_sync" in store.type:
            batch_size *= store.num_workers
        rescale_grad = 1.0 / batch_size
        count = len(self._context)
        if update_on_kvstore:
            idx2name = dict(enumerate(group.param_names))
        else:
            idx2name = {
                i * count + k: name
                for k in range(count)
                for i, name in enumerate(group.param_names)
            }
        if isinstance(optimizer, str):
            params = dict(optimizer_params)
            params.setdefault("rescale_grad", rescale_grad)
            optimizer = _opt.create(optimizer, sym=self._symbol, param_idx2name=idx2name, **params)
        elif not isinstance(optimizer, _opt.Optimizer):
            raise MXNBError(
                f"init_optimizer: optimizer must be a name or an Optimizer, got {optimizer!r}"
            )
        elif not optimizer.idx2name:
            optimizer.idx2name = idx2name.copy()
        self._optimizer = optimizer
        self._kvstore = store
        self._owns_kvstore = store is not None and not isinstance(kvstore, KVStore)
        self._update_on_kvstore = update_on_kvstore
        self._updater = None
        if store is not None:
            if update_on_kvstore:
                store.set_optimizer(optimizer)
            for name, on_devices in zip(self._param_names, group.param_arrays):
                if update_on_kvstore:
                    store.broadcast(name, self._arg_params[name], out=on_devices)
                else:
                    store.init(name, self._arg_params[name])
            self._adopt_weights()
        if not update_on_kvstore:
            self._updater = _opt.get_updater(optimizer)
        self.optimizer_initialized = True
        if self._preload_opt_states is not None:
            self.load_optimizer_states(self._preload_opt_states)
            self._preload_opt_states = None

    def borrow_optimizer(self, shared_module: Any) -> None:
        """Use ``shared_module``'s optimizer, kvstore and updater (their states are shared too)."""
        if not shared_module.optimizer_initialized:
            raise MXNBError("borrow_optimizer: the shared module has no optimizer yet")
        self._optimizer = shared_module._optimizer
        self._kvstore = shared_module._kvstore
        self._update_on_kvstore = shared_module._update_on_kvstore
        self._updater = shared_module._updater
        self.optimizer_initialized = True

    def save_optimizer_states(self, fname: str) -> None:
        """Write the optimizer states (of the kvstore or of the module's updater)."""
        if not self.optimizer_initialized:
            raise MXNBError("save_optimizer_states: call init_optimizer() first")
        if self._update_on_kvstore:
            self._kvstore.save_optimizer_states(fname)
        else:
            write_atomically(fname, self._updater.get_states())

    def load_optimizer_states(self, fname: str) -> None:
        """Read states written by :meth:`save_optimizer_states`."""
        if not self.optimizer_initialized:
            raise MXNBError("load_optimizer_states: call init_optimizer() first")
        if self._update_on_kvstore:
            self._kvstore.load_optimizer_states(fname)
        else:
            with open(fname, "rb") as stream:
                self._updater.set_states(stream.read(), source=fname)

    def _adopt_weights(self) -> None:
        """Let a store made here keep each key's value in that key's device weight (see above).

        In backward order, the order of the first pushes, so each key gets the
        reduce device its first push would have chosen.
        """
        store = self._kvstore
        if not (self._update_on_kvstore and self._owns_kvstore and isinstance(store, LocalKVStore)):
            return
        group = self._exec_group
        for name, on_devices in reversed(list(zip(self._param_names, group.param_arrays))):
            store.adopt(name, on_devices)

    def update(self) -> None:
        """Update the parameters from the gradients (see the module docstring for where)."""
        if not self.optimizer_initialized:
            raise MXNBError("update: call init_optimizer() first")
        self._params_dirty = True
        group = self._exec_group
        count = len(self._context)
        # Backward order: the last parameters' gradients are written first.
        for index in reversed(range(len(group.param_names))):
            params, grads = group.param_arrays[index], group.grad_arrays[index]
            if grads[0] is None:
                continue
            name = group.param_names[index]
            if self._update_on_kvstore:
                self._kvstore.pushpull(name, grads, out=params, priority=-index)
                continue
            if self._kvstore is not None:
                self._kvstore.pushpull(name, grads, priority=-index)
            for k, (weight, grad) in enumerate(zip(params, grads)):
                self._updater(index * count + k, grad, weight)
