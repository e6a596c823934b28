"""Module: a Symbol bound over a list of devices, with parameters, an optimizer and a KVStore.

Idea (MXNet: python/mxnet/module/module.py): ``Module(symbol, data_names,
label_names, context)`` separates the symbol's arguments into inputs (data,
labels) and parameters.  ``bind`` builds a :class:`DataParallelExecutorGroup`;
``init_params`` fills the parameters by name (:mod:`mxnb.initializer`);
``init_optimizer`` decides where updates run; ``update`` runs them.

Rules (MXNet 1.9.1's):
    * with one device and a non-distributed kvstore name, no KVStore is used:
      the Module's own Updater updates each device's weights (keys ``index``);
    * with several devices (``kvstore='local'`` or ``'device'``) the optimizer
      runs ON the kvstore (``update_on_kvstore``): each parameter's gradients
      are pushed (summed over devices), updated on the store and pulled back to
      every device — one ``pushpull`` per parameter, with priority ``-index``;
    * ``rescale_grad`` defaults to ``1 / batch_size``;
    * mxnb, with a ``local`` / ``device`` store it creates and updates on: each
      key's weight on its reduce device IS the stored value (``adopt``), so the
      update writes it in place and only the other devices pull a copy;
      ``set_params`` then writes the store too (MXNet's keeps a stale copy);
    * mxnb issues the pushes in backward order (last parameter first): the
      executor's backward ops are already queued on the engine, so each push
      starts as soon as its gradient is written, while the rest of backward runs.

State kept:
    _arg_params, _aux_params   the CPU copies (``get_params``); ``_params_dirty`` when devices are newer
    _exec_group                the executors, one per device
    _optimizer, _kvstore, _update_on_kvstore, _updater

Example::

    >>> import mxnb as mx
    >>> net = mx.sym.SoftmaxOutput(mx.sym.FullyConnected(mx.sym.Variable('data'), num_hidden=2, name='fc'), name='softmax')
    >>> mod = mx.mod.Module(net)
    >>> mod.bind(data_shapes=[('data', (4, 3))], label_shapes=[('softmax_label', (4,))])
    >>> mod.init_params(mx.init.One())
    >>> sorted(mod.get_params()[0])
    ['fc_bias', 'fc_weight']
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from ..base import MXNBError
from ..context import Context, cpu
from ..initializer import InitDesc, Uniform
from ..kvstore import KVStore
from ..model import load_checkpoint, split_params
from ..ndarray import NDArray, load, mxnet_format, zeros
from .base_module import BaseModule
from .executor_group import DataParallelExecutorGroup, desc_name_shape
from .optimizing import ModuleOptimizer

__all__ = ["Module"]


def _check_input_names(symbol: Any, names: Sequence[str], typename: str, throw: bool) -> None:
    arguments = symbol.list_arguments()
    for name in names:
        if name in arguments:
            continue
        candidates = [
            arg for arg in arguments if not arg.endswith(("_weight", "_bias", "_gamma", "_beta"))
        ]
        message = (
            f"Module: you created a Module with {typename}_names containing {name!r}, which is not "
            f"an input of the symbol; inputs that look like {typename}: {candidates}"
        )
        if throw:
            raise MXNBError(message)
        logging.getLogger(__name__).warning(message)


class Module(ModuleOptimizer, BaseModule):
    """A symbol over one or more devices (``context``: a Context or a list), trained with ``fit``."""

    def __init__(
        self,
        symbol: Any,
        data_names: Sequence[str] = ("data",),
        label_names: Sequence[str] | None = ("softmax_label",),
        logger: Any = logging,
        context: Context | Sequence[Context] | None = None,
        work_load_list: Sequence[float] | None = None,
        fixed_param_names: Sequence[str] | None = None,
        state_names: Sequence[str] | None = None,
    ) -> None:
        super().__init__(logger=logger)
        if context is None:
            context = cpu()
        self._context = [context] if isinstance(context, Context) else list(context)
        self._work_load_list = list(work_load_list or [1] * len(self._context))
        if len(self._work_load_list) != len(self._context):
            raise MXNBError("Module: work_load_list needs one entry per context")
        self._symbol = symbol
        self._data_names = list(data_names or [])
        self._label_names = list(label_names or [])
        self._state_names = list(state_names or [])
        self._fixed_param_names = list(fixed_param_names or [])
        inputs = self._data_names + self._label_names + self._state_names
        self._param_names = [name for name in symbol.list_arguments() if name not in inputs]
        self._aux_names = symbol.list_auxiliary_states()
        self._output_names = symbol.list_outputs()
        _check_input_names(symbol, self._data_names, "data", True)
        _check_input_names(symbol, self._label_names, "label", False)
        _check_input_names(symbol, self._fixed_param_names, "fixed_param", True)
        self._arg_params: dict[str, NDArray] | None = None
        self._aux_params: dict[str, NDArray] | None = None
        self._params_dirty = False
        self._optimizer: Any = None
        self._kvstore: KVStore | None = None
        self._update_on_kvstore = False
        self._owns_kvstore = False  # the store was made here from a name: weights may be adopted
        self._updater: Any = None
        self._preload_opt_states: str | None = None
        self._exec_group: DataParallelExecutorGroup | None = None
        self._data_shapes: list = []
        self._label_shapes: list = []

    # -- names and shapes ----------------------------------------------------------------------
    @property
    def data_names(self) -> list[str]:
        """Names of the data inputs."""
        return self._data_names

    @property
    def label_names(self) -> list[str]:
        """Names of the label inputs."""
        return self._label_names

    @property
    def output_names(self) -> list[str]:
        """Names of the outputs."""
        return self._output_names

    @property
    def data_shapes(self) -> list:
        """``[(name, shape)]`` of the data the module is bound for."""
        return self._data_shapes

    @property
    def label_shapes(self) -> list:
        """``[(name, shape)]`` of the labels the module is bound for."""
        return self._label_shapes

    @property
    def output_shapes(self) -> list[tuple[str, tuple]]:
        """``[(name, shape)]`` of the merged outputs."""
        outputs = self._group("output_shapes").get_outputs()
        return [(name, out.shape) for name, out in zip(self._output_names, outputs)]

    def _group(self, what: str) -> DataParallelExecutorGroup:
        if self._exec_group is None:
            raise MXNBError(f"{what}: call bind() first")
        return self._exec_group

    # -- binding and parameters -------------------------------------------------------------------
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
        """Bind an executor per device for ``data_shapes`` / ``label_shapes`` (the whole batch).

        ``shared_module`` (bound, parameters initialised): this module's
        parameters, gradients and aux states ARE that module's arrays (MXNet's
        rule, used by :class:`~mxnb.module.BucketingModule`).
        """
        if shared_module is not None and not (
            shared_module.binded and shared_module.params_initialized
        ):
            raise MXNBError("bind: shared_module must be bound and have its parameters initialized")
        if force_rebind:
            self._exec_group = None
            self.binded = False
        if self.binded:
            self.logger.warning("Already bound, ignoring bind()")
            return
        if inputs_need_grad and not for_training:
            raise MXNBError("bind: inputs_need_grad=True needs for_training=True")
        self.for_training = for_training
        self.inputs_need_grad = inputs_need_grad
        self._data_shapes = [desc_name_shape(d) for d in data_shapes]
        self._label_shapes = [desc_name_shape(d) for d in label_shapes or []]
        given = [name for name, _ in self._data_shapes]
        if sorted(given) != sorted(self._data_names):
            raise MXNBError(
                f"bind: data_shapes name {given} but the module's data_names are {self._data_names}"
            )
        self._check_label_names([name for name, _ in self._label_shapes], for_training)
        if shared_module is None and self.params_initialized:
            self._check_params_complete("bind")
        self._exec_group = DataParallelExecutorGroup(
            self._symbol,
            self._context,
            self._work_load_list,
            self._data_shapes,
            self._label_shapes,
            self._param_names,
            for_training,
            inputs_need_grad,
            self._fixed_param_names,
            grad_req,
            shared_group=None if shared_module is None else shared_module._exec_group,
        )
        self.binded = True
        self._params_after_bind(shared_module)

    def _params_after_bind(self, shared_module: Any) -> None:
        """The parameters: the shared module's, the ones set before bind, or zeros of each shape."""
        if shared_module is not None:
            self.params_initialized = True
            self._arg_params = shared_module._arg_params
            self._aux_params = shared_module._aux_params
        elif self.params_initialized:
            self._exec_group.set_params(self._arg_params, self._aux_params)
        else:
            group = self._exec_group
            self._arg_params = {
                name: zeros(block[0].shape, dtype=block[0].dtype)
                for name, block in zip(self._param_names, group.param_arrays)
            }
            self._aux_params = {
                name: zeros(block[0].shape, dtype=block[0].dtype)
                for name, block in zip(self._aux_names, group.aux_arrays)
            }

    def _check_label_names(self, given: list[str], for_training: bool) -> None:
        """The labels bound are the module's ``label_names``, and are inputs of the symbol.

        MXNet warns and binds anyway; a label under another name then stays
        all zeros, and training fits every example to class 0.  So a mismatch
        is an error here, and so is binding for training without the labels
        the symbol reads.
        """
        arguments = set(self._symbol.list_arguments())
        expected = [name for name in self._label_names if name in arguments]
        if given:
            unknown = [name for name in given if name not in self._label_names]
            if unknown or sorted(given) != sorted(self._label_names):
                raise MXNBError(
                    f"bind: the labels given (label_shapes, i.e. the iterator's provide_label) are "
                    f"named {given} but the module's label_names are {self._label_names}; create "
                    f"the Module with label_names={given}, or name the iterator's label "
                    f"{self._label_names[0] if self._label_names else 'as the symbol does'!r}"
                )
            missing = [name for name in given if name not in arguments]
            if missing:
                raise MXNBError(
                    f"bind: label {missing[0]!r} is not an input of the symbol; its inputs are "
                    f"{sorted(arguments)}"
                )
        elif for_training and expected:
            raise MXNBError(
                f"bind: for_training=True but no label shapes were given for the symbol's labels "
                f"{expected}; pass label_shapes (the iterator's provide_label), or bind with "
                "for_training=False to predict"
            )

    def _check_params_complete(self, what: str) -> None:
        """Every parameter and auxiliary state has a value (a checkpoint may lack one)."""
        missing = [name for name in self._param_names if name not in self._arg_params]
        missing += [name for name in self._aux_names if name not in self._aux_params]
        if missing:
            raise MXNBError(
                f"{what}: no value for {missing} (missing from the loaded parameters or "
                "checkpoint); pass them to set_params, or call init_params(initializer, "
                "allow_missing=True, force_init=True) to initialise what is missing"
            )

    def init_params(
        self,
        initializer: Any = None,
        arg_params: dict | None = None,
        aux_params: dict | None = None,
        allow_missing: bool = False,
        force_init: bool = False,
        allow_extra: bool = False,
    ) -> None:
        """Fill the parameters: from ``arg_params`` / ``aux_params`` by name, else by ``initializer``."""
        if self.params_initialized and not force_init:
            self.logger.warning(
                "Parameters already initialized and force_init=False. init_params call ignored."
            )
            return
        if not self.binded:
            raise MXNBError("init_params: call bind() before initializing the parameters")
        if initializer is None and arg_params is None and aux_params is None:
            initializer = Uniform(0.01)
        if not allow_extra:
            extra = [
                name
                for given, known in ((arg_params, self._arg_params), (aux_params, self._aux_params))
                for name in given or {}
                if name not in known
            ]
            if extra:
                # MXNet 1.9.1 ignores them silently; a misspelt or foreign parameter is a mistake
                raise MXNBError(
                    f"init_params: {sorted(extra)} are not parameters of this module; pass "
                    "allow_extra=True to ignore them"
                )
        attrs = self._symbol.attr_dict()

        def fill(name: str, array: NDArray, cache: dict | None) -> None:
            desc = InitDesc(name, attrs.get(name))
            if cache is not None and name in cache:
                if cache[name] is not array:
                    cache[name].copyto(array)
                return
            if cache is not None and not allow_missing:
                raise MXNBError(
                    f"init_params: {name!r} is not in the given parameters (pass allow_missing=True)"
                )
            if initializer is None:
                raise MXNBError(f"init_params: {name!r} has no value and no initializer was given")
            initializer(desc, array)

        for name, array in sorted(self._arg_params.items()):
            fill(name, array, arg_params)
        for name, array in sorted(self._aux_params.items()):
            fill(name, array, aux_params)
        self.params_initialized = True
        self._params_dirty = False
        self._exec_group.set_params(self._arg_params, self._aux_params, allow_extra=allow_extra)

    def set_params(
        self,
        arg_params: dict,
        aux_params: dict,
        allow_missing: bool = False,
        force_init: bool = True,
        allow_extra: bool = False,
    ) -> None:
        """Copy given parameters to the module (and every device)."""
        self.init_params(None, arg_params, aux_params, allow_missing, force_init, allow_extra)

    def get_params(self) -> tuple[dict[str, NDArray], dict[str, NDArray]]:
        """``(arg_params, aux_params)`` on the CPU, synchronised from the devices."""
        self._check_ready("get_params")
        if self._params_dirty:
            self._exec_group.get_params(self._arg_params, self._aux_params, self._args_in_sync())
            self._params_dirty = False
        return self._arg_params, self._aux_params

    def _args_in_sync(self) -> bool:
        """True when every device holds the same arguments: one device, or updates on the kvstore.

        With ``update_on_kvstore`` a device's weights are written only by pulls
        of the one stored value (weights it does not update stay as set).
        Without it, each device runs its own updater, and without a kvstore the
        devices do not even see the same gradients: their copies are averaged.
        """
        return len(self._context) == 1 or self._update_on_kvstore

    def _sync_params_after_epoch(self) -> tuple[dict, dict]:
        """MXNet's epoch end (see :class:`BaseModule`) without the copies that change nothing.

        When the devices' arguments are in sync (:meth:`_args_in_sync`), the
        values read back are the ones each device holds: only the auxiliary
        states, which every device updates on its own, are written back.
        Two devices: ``(w + w) / 2 == w`` bit for bit, so the weights are
        MXNet's; the saving is 6 ops per parameter to read and one per device
        to write, at the barrier between two epochs.
        """
        if not self._args_in_sync():
            return super()._sync_params_after_epoch()
        arg_params, aux_params = self.get_params()
        if len(self._context) > 1 and aux_params:
            self._exec_group.set_params({}, aux_params)  # the auxiliary states only
        return arg_params, aux_params

    # -- computation ----------------------------------------------------------------------------------
    def forward(self, data_batch: Any, is_train: bool | None = None) -> None:
        """Run forward on every device for its slice of ``data_batch`` (rebinds on a new batch shape)."""
        self._check_ready("forward")
        new_shapes = [tuple(array.shape) for array in data_batch.data]
        if new_shapes != [shape for _, shape in self._data_shapes]:
            self._rebind_for(data_batch)
        self._exec_group.forward(data_batch, is_train)

    def _rebind_for(self, data_batch: Any) -> None:
        """MXNet's reshape: executors for the batch's shapes on the SAME parameter arrays.

        The new executor group shares the old one's parameters, gradients, aux
        states, input buffers and memory pool (:mod:`mxnb.executor.sharing`),
        so the optimizer, the kvstore and any module sharing this one's arrays
        (a BucketingModule's other buckets) keep working on the same arrays.
        """
        data = [(name, tuple(a.shape)) for name, a in zip(self._data_names, data_batch.data)]
        labels = getattr(data_batch, "label", None) or []
        label = [
            (name, tuple(a.shape)) for name, a in zip(self._label_names, labels)
        ] or self._label_shapes
        old = self._exec_group
        self._data_shapes, self._label_shapes = data, label
        self._exec_group = DataParallelExecutorGroup(
            self._symbol,
            self._context,
            self._work_load_list,
            data,
            label,
            self._param_names,
            self.for_training,
            self.inputs_need_grad,
            self._fixed_param_names,
            old.grad_req_given,
            shared_group=old,
        )

    def backward(self, out_grads: Sequence[NDArray] | None = None) -> None:
        """Run backward on every device."""
        self._check_ready("backward")
        self._exec_group.backward(out_grads)

    def get_outputs(self, merge_multi_context: bool = True) -> list:
        """The outputs of the last forward (merged over devices)."""
        self._check_ready("get_outputs")
        return self._exec_group.get_outputs(merge_multi_context)

    def get_input_grads(self, merge_multi_context: bool = True) -> list:
        """Gradients of the data inputs (bind with ``inputs_need_grad=True``)."""
        return self._group("get_input_grads").get_input_grads(merge_multi_context)

    def update_metric(
        self, eval_metric: Any, labels: Sequence[NDArray], pre_sliced: bool = False
    ) -> None:
        """Feed the last outputs and ``labels`` to ``eval_metric``."""
        self._group("update_metric").update_metric(eval_metric, labels, pre_sliced)

    # -- checkpoints -----------------------------------------------------------------------------------
    def save_params(self, fname: str) -> None:
        """Write the parameters in MXNet's .params format (``arg:`` / ``aux:`` names)."""
        arg_params, aux_params = self.get_params()
        save_dict = {f"arg:{k}": v.as_in_context(cpu()) for k, v in arg_params.items()}
        save_dict.update({f"aux:{k}": v.as_in_context(cpu()) for k, v in aux_params.items()})
        mxnet_format.save(fname, save_dict)

    def load_params(self, fname: str) -> None:
        """Read parameters written by :meth:`save_params` (or by MXNet)."""
        arg_params, aux_params = split_params(fname, load(fname))
        self.set_params(arg_params, aux_params)

    def save_checkpoint(
        self,
        prefix: str,
        epoch: int,
        save_optimizer_states: bool = False,
        remove_amp_cast: bool = True,
    ) -> None:
        """Write ``prefix-symbol.json``, ``prefix-%04d.params`` (and ``.states``)."""
        self._symbol.save(f"{prefix}-symbol.json", remove_amp_cast=remove_amp_cast)
        param_name = f"{prefix}-{epoch:04d}.params"
        self.save_params(param_name)
        self.logger.info('Saved checkpoint to "%s"', param_name)
        if save_optimizer_states:
            self.save_optimizer_states(f"{prefix}-{epoch:04d}.states")

    @staticmethod
    def load(prefix: str, epoch: int, load_optimizer_states: bool = False, **kwargs: Any) -> Module:
        """A Module from a checkpoint (bind it, then ``init_optimizer`` loads the states)."""
        sym, args, auxs = load_checkpoint(prefix, epoch)
        module = Module(symbol=sym, **kwargs)
        module._arg_params = args
        module._aux_params = auxs
        module.params_initialized = True
        if load_optimizer_states:
            module._preload_opt_states = f"{prefix}-{epoch:04d}.states"
        return module
