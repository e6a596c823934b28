"""BucketingModule: one Module per sequence length, all sharing one set of parameters.

Idea (MXNet: python/mxnet/module/bucketing_module.py): a recurrent network
unrolled over T steps is a different graph for every T.  ``sym_gen(key)``
builds the graph of bucket ``key`` (returning ``(symbol, data_names,
label_names)``); the default bucket (the largest) is bound first and owns the
parameters.  Every other bucket's Module is bound with
``shared_module=default`` the first time a batch of that key arrives: its
parameter, gradient and auxiliary arrays ARE the default module's NDArrays
(:meth:`Module.bind`), and it borrows the default module's optimizer, kvstore
and updater, so momentum and the update count carry across buckets.  Memory
is shared as MXNet shares it (:mod:`mxnb.executor.sharing`): a bucket's data
and label arrays are views of the default bucket's (when they fit) and its
intermediate blocks are taken from the default bucket's memory pool, so a
shorter bucket allocates nothing new.

Rules (MXNet 1.9.1's):
    * ``forward`` switches to ``data_batch.bucket_key`` (binding it with the
      batch's ``provide_data`` / ``provide_label`` on first sight), then runs it;
      ``backward`` / ``update`` / ``get_outputs`` act on the current bucket;
    * ``init_params`` / ``init_optimizer`` run on the current module; later
      buckets share the result;
    * ``get_params`` / ``set_params`` go through the current module (the
      parameters are the same arrays in every bucket);
    * ``sym_gen`` runs under a fresh ``NameManager``; a ``sym_gen`` that
      raises or returns something else than ``(symbol, data_names,
      label_names)``, and a bucket that does not bind on the default bucket's
      parameters, are errors naming the bucket key;
    * ``save_checkpoint(prefix, epoch)`` writes MXNet's files:
      ``prefix-%04d.params``, ``prefix-KEY-symbol.json`` per bucket and
      ``prefix.buckets`` (the integer keys); ``BucketingModule.load`` reads them.

State kept:
    _buckets                  key -> Module (bound)
    _default_bucket_key       the key of the module that owns the parameters
    _curr_module, _curr_bucket_key
    _preloaded                (arg_params, aux_params) read by ``load``, set at ``bind``

Example::

    >>> import mxnb as mx
    >>> def sym_gen(key):
    ...     net = mx.sym.FullyConnected(mx.sym.Variable('data'), num_hidden=2, name='fc')
    ...     return mx.sym.SoftmaxOutput(net, name='softmax'), ('data',), ('softmax_label',)
    >>> mod = mx.mod.BucketingModule(sym_gen, default_bucket_key=4)
    >>> mod.bind(data_shapes=[('data', (4, 3))], label_shapes=[('softmax_label', (4,))])
    >>> mod.init_params()
    >>> mod.switch_bucket(2, [('data', (4, 3))], [('softmax_label', (4,))])
    >>> mod.get_params()[0]['fc_weight'] is mod._buckets[4].get_params()[0]['fc_weight']
    True
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Any

from ..base import MXNBError
from ..context import Context, cpu
from ..model import load_bucket_keys, load_params, save_bucket_keys
from ..ndarray import NDArray
from ..symbol import NameManager, Symbol
from ..symbol import load as _load_symbol
from .base_module import BaseModule
from .module import Module

__all__ = ["BucketingModule"]


class BucketingModule(BaseModule):
    """Modules for several bucket keys (``sym_gen(key)``) sharing the default bucket's parameters."""

    def __init__(
        self,
        sym_gen: Callable[[Any], tuple[Any, Sequence[str], Sequence[str]]],
        default_bucket_key: Any = None,
        logger: Any = logging,
        context: Context | Sequence[Context] | None = None,
        work_load_list: Sequence[float] | None = None,
        fixed_param_names: Sequence[str] | None = None,
        state_names: Sequence[str] | None = None,
        group2ctxs: Any = None,
        compression_params: Any = None,
    ) -> None:
        super().__init__(logger=logger)
        if default_bucket_key is None:
            raise MXNBError("BucketingModule: give default_bucket_key (usually the largest bucket)")
        if group2ctxs is not None or compression_params is not None:
            raise MXNBError("BucketingModule: group2ctxs and compression_params are not supported")
        self._sym_gen = sym_gen
        self._default_bucket_key = default_bucket_key
        self._context = cpu() if context is None else context
        self._work_load_list = work_load_list
        self._fixed_param_names = list(fixed_param_names or [])
        self._state_names = list(state_names or [])
        self._preloaded: tuple[dict, dict] | None = None  # parameters read by load()
        symbol, data_names, label_names = self._call_sym_gen(default_bucket_key)
        self._symbol = symbol
        self._data_names = list(data_names or [])
        self._label_names = list(label_names or [])
        self._buckets: dict[Any, Module] = {}
        self._curr_module: Module | None = None
        self._curr_bucket_key: Any = None
        self._params_dirty = False

    def _call_sym_gen(self, key: Any) -> tuple[Any, list[str], list[str]]:
        """``sym_gen(key)`` under a fresh NameManager (MXNet's), its answer checked."""
        try:
            with NameManager():
                answer = self._sym_gen(key)
        except Exception as err:
            raise MXNBError(
                f"BucketingModule: sym_gen({key!r}) raised {type(err).__name__}: {err}; fix "
                "sym_gen, or keep that bucket key out of the data iterator's buckets"
            ) from err
        if not (isinstance(answer, tuple | list) and len(answer) == 3):
            raise MXNBError(
                f"BucketingModule: sym_gen({key!r}) returned {type(answer).__name__}; it must "
                "return (symbol, data_names, label_names)"
            )
        symbol, data_names, label_names = answer
        if not isinstance(symbol, Symbol):
            raise MXNBError(
                f"BucketingModule: sym_gen({key!r}) returned {type(symbol).__name__} as its "
                "symbol; the first of (symbol, data_names, label_names) must be a Symbol"
            )
        return symbol, list(data_names or []), list(label_names or [])

    def _new_module(self, key: Any, symbol: Any = None) -> Module:
        generated, data_names, label_names = self._call_sym_gen(key)
        return Module(
            generated if symbol is None else symbol,
            data_names,
            label_names,
            logger=self.logger,
            context=self._context,
            work_load_list=self._work_load_list,
            fixed_param_names=self._fixed_param_names,
            state_names=self._state_names,
        )

    def _current(self, what: str) -> Module:
        if self._curr_module is None:
            raise MXNBError(f"{what}: call bind() first")
        return self._curr_module

    # -- names and shapes ---------------------------------------------------------------------
    @property
    def default_bucket_key(self) -> Any:
        """The key whose module owns the parameters."""
        return self._default_bucket_key

    @property
    def data_names(self) -> list[str]:
        """Names of the data inputs (of the default bucket)."""
        return self._data_names

    @property
    def label_names(self) -> list[str]:
        """Names of the labels (of the default bucket)."""
        return self._label_names

    @property
    def output_names(self) -> list[str]:
        """Names of the current bucket's outputs."""
        if self._curr_module is None:
            return self._symbol.list_outputs()
        return self._curr_module.output_names

    @property
    def data_shapes(self) -> list:
        """``[(name, shape)]`` of the current bucket."""
        return self._current("data_shapes").data_shapes

    @property
    def label_shapes(self) -> list:
        """``[(name, shape)]`` of the current bucket's labels."""
        return self._current("label_shapes").label_shapes

    @property
    def output_shapes(self) -> list:
        """``[(name, shape)]`` of the current bucket's outputs."""
        return self._current("output_shapes").output_shapes

    @property
    def symbol(self) -> Any:
        """The current bucket's symbol (the default one before ``bind``)."""
        return self._symbol if self._curr_module is None else self._curr_module.symbol

    # -- binding and buckets --------------------------------------------------------------------
    def bind(
        self,
        data_shapes: Sequence[Any],
        label_shapes: Sequence[Any] | None = None,
        for_training: bool = True,
        inputs_need_grad: bool = False,
        force_rebind: bool = False,
        shared_module: Any = None,
        grad_req: str = "write",
    ) -> None:
        """Bind the default bucket for ``data_shapes`` / ``label_shapes``."""
        if self.params_initialized:
            arg_params, aux_params = self.get_params()
        if force_rebind:
            self._buckets = {}
            self._curr_module = None
            self.binded = False
        if self.binded:
            self.logger.warning("Already bound, ignoring bind()")
            return
        if shared_module is not None:
            raise MXNBError("BucketingModule.bind: shared_module is not supported (as in MXNet)")
        self.for_training = for_training
        self.inputs_need_grad = inputs_need_grad
        self._grad_req = grad_req
        module = self._buckets.get(self._default_bucket_key) or self._new_module(
            self._default_bucket_key
        )
        module.bind(data_shapes, label_shapes, for_training, inputs_need_grad, grad_req=grad_req)
        self._curr_module = module
        self._curr_bucket_key = self._default_bucket_key
        self._buckets[self._default_bucket_key] = module
        self.binded = True
        if self.params_initialized:
            self.set_params(arg_params, aux_params)
            self._preloaded = None

    def switch_bucket(
        self, bucket_key: Any, data_shapes: Sequence[Any], label_shapes: Sequence[Any] | None = None
    ) -> None:
        """Make ``bucket_key`` current, binding its module (sharing the default's) on first sight."""
        if not self.binded:
            raise MXNBError("switch_bucket: call bind() first")
        module = self._buckets.get(bucket_key)
        if module is None or not module.binded:
            default = self._buckets[self._default_bucket_key]
            if not default.params_initialized:
                raise MXNBError(
                    f"switch_bucket {bucket_key!r}: initialize the parameters (init_params) before "
                    "binding other buckets; they share the default bucket's arrays"
                )
            module = module or self._new_module(bucket_key)
            try:
                module.bind(
                    data_shapes,
                    label_shapes,
                    self.for_training,
                    self.inputs_need_grad,
                    shared_module=default,
                    grad_req=self._grad_req,
                )
            except MXNBError as err:
                raise type(err)(
                    f"BucketingModule: bucket {bucket_key!r} (data {list(data_shapes)}, label "
                    f"{list(label_shapes or [])}) does not bind on the default bucket "
                    f"{self._default_bucket_key!r}'s parameters: {err}"
                ) from err
            if self.optimizer_initialized:
                module.borrow_optimizer(default)
            self._buckets[bucket_key] = module
        self._curr_module = self._buckets[bucket_key]
        self._curr_bucket_key = bucket_key

    # -- parameters -----------------------------------------------------------------------------
    def init_params(
        self,
        initializer: Any = None,
        arg_params: dict | None = None,
        aux_params: dict | None = None,
        allow_missing: bool = False,
        force_init: bool = False,
        allow_extra: bool = False,
    ) -> None:
        """Initialize the parameters (on the current module; every bucket shares them)."""
        if self.params_initialized and not force_init:
            return
        if not self.binded:
            raise MXNBError("init_params: call bind() before initializing the parameters")
        self._curr_module.init_params(
            initializer, arg_params, aux_params, allow_missing, force_init, allow_extra
        )
        self._params_dirty = False
        self.params_initialized = True

    def get_params(self) -> tuple[dict[str, NDArray], dict[str, NDArray]]:
        """``(arg_params, aux_params)``: the same arrays whichever bucket is current."""
        if self._preloaded is not None and not self.binded:
            return self._preloaded
        module = self._current("get_params")
        module._params_dirty = self._params_dirty or module._params_dirty
        params = module.get_params()
        self._params_dirty = False
        return params

    def set_params(
        self,
        arg_params: dict,
        aux_params: dict,
        allow_missing: bool = False,
        force_init: bool = True,
        allow_extra: bool = False,
    ) -> None:
        """Copy given parameters into the (shared) arrays."""
        if not force_init and self.params_initialized:
            self.logger.warning("Parameters already initialized and force_init=False. Ignored.")
            return
        self._current("set_params").set_params(
            arg_params, aux_params, allow_missing, force_init=True, allow_extra=allow_extra
        )
        self._params_dirty = True
        self.params_initialized = True

    def init_optimizer(
        self,
        kvstore: Any = "local",
        optimizer: Any = "sgd",
        optimizer_params: Any = (("learning_rate", 0.01),),
        force_init: bool = False,
    ) -> None:
        """Create the optimizer on the current module; every other bucket borrows it."""
        self._check_ready("init_optimizer")
        if self.optimizer_initialized and not force_init:
            self.logger.warning("optimizer already initialized, ignoring.")
            return
        self._curr_module.init_optimizer(
            kvstore, optimizer, optimizer_params, force_init=force_init
        )
        for module in self._buckets.values():
            if module is not self._curr_module:
                module.borrow_optimizer(self._curr_module)
        self.optimizer_initialized = True

    # -- computation -----------------------------------------------------------------------------
    def prepare(self, data_batch: Any, sparse_row_id_fn: Any = None) -> None:
        """Switch to the batch's bucket, keeping the current one (MXNet binds ahead here)."""
        previous = self._curr_bucket_key
        self.switch_bucket(data_batch.bucket_key, data_batch.provide_data, data_batch.provide_label)
        self.switch_bucket(previous, None, None)

    def forward(self, data_batch: Any, is_train: bool | None = None) -> None:
        """Switch to ``data_batch.bucket_key`` (binding it if new), then run forward."""
        self._check_ready("forward")
        key = getattr(data_batch, "bucket_key", None)
        if key is None:
            key = self._default_bucket_key
        data_shapes = getattr(data_batch, "provide_data", None) or [
            (name, tuple(array.shape)) for name, array in zip(self._data_names, data_batch.data)
        ]
        label_shapes = getattr(data_batch, "provide_label", None)
        if label_shapes is None and getattr(data_batch, "label", None):
            label_shapes = [
                (name, tuple(array.shape))
                for name, array in zip(self._label_names, data_batch.label)
            ]
        self.switch_bucket(key, data_shapes, label_shapes)
        self._curr_module.forward(data_batch, is_train=is_train)

    def backward(self, out_grads: Sequence[NDArray] | None = None) -> None:
        """Backward on the current bucket."""
        self._current("backward").backward(out_grads)

    def update(self) -> None:
        """Update the shared parameters from the current bucket's gradients."""
        if not self.optimizer_initialized:
            raise MXNBError("update: call init_optimizer() first")
        self._params_dirty = True
        self._curr_module.update()

    def get_outputs(self, merge_multi_context: bool = True) -> list:
        """The current bucket's outputs."""
        return self._current("get_outputs").get_outputs(merge_multi_context)

    def get_input_grads(self, merge_multi_context: bool = True) -> list:
        """The current bucket's input gradients."""
        return self._current("get_input_grads").get_input_grads(merge_multi_context)

    def update_metric(
        self, eval_metric: Any, labels: Sequence[NDArray], pre_sliced: bool = False
    ) -> None:
        """Feed the current bucket's outputs and ``labels`` to ``eval_metric``."""
        self._current("update_metric").update_metric(eval_metric, labels, pre_sliced)

    # -- checkpoints (MXNet 1.9.1's files) ---------------------------------------------------------
    def save_params(self, fname: str) -> None:
        """Write the shared parameters in MXNet's .params format (``arg:`` / ``aux:`` names)."""
        self._current("save_params").save_params(fname)

    def save_checkpoint(self, prefix: str, epoch: int, remove_amp_cast: bool = False) -> None:
        """Write ``prefix-%04d.params``, ``prefix-KEY-symbol.json`` per bucket and ``prefix.buckets``.

        ``prefix.buckets`` holds the bucket keys as an int32 NDArray, so keys
        must be integers (as in MXNet, which cannot save other keys either).
        """
        if not self._buckets:
            raise MXNBError("save_checkpoint: an empty BucketingModule cannot be saved; bind() it")
        save_bucket_keys(prefix, list(self._buckets))  # first: it checks the keys
        self.save_params(f"{prefix}-{epoch:04d}.params")
        for key, module in self._buckets.items():
            module.symbol.save(f"{prefix}-{key}-symbol.json", remove_amp_cast=remove_amp_cast)

    @staticmethod
    def load(
        prefix: str,
        epoch: int,
        sym_gen: Callable[[Any], tuple[Any, Sequence[str], Sequence[str]]] | None = None,
        default_bucket_key: Any = None,
        **kwargs: Any,
    ) -> BucketingModule:
        """A BucketingModule from :meth:`save_checkpoint`'s files (bind it to use it).

        Every saved bucket gets its saved symbol (names from ``sym_gen``); the
        parameters are set when :meth:`bind` binds the default bucket.
        """
        if sym_gen is None or default_bucket_key is None:
            raise MXNBError("BucketingModule.load: give sym_gen and default_bucket_key")
        keys = load_bucket_keys(prefix)
        module = BucketingModule(sym_gen, default_bucket_key, **kwargs)
        for key in keys:
            symbol = _load_symbol(f"{prefix}-{key}-symbol.json")
            module._buckets[key] = module._new_module(key, symbol)
        module._preloaded = load_params(prefix, epoch)
        module.params_initialized = True
        return module
