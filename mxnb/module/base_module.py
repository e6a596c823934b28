"""BaseModule: the training loop (``fit``) and evaluation (``score``, ``predict``) over a DataIter.

Idea (MXNet: python/mxnet/module/base_module.py): a module is a computation
that can ``bind`` to input shapes, hold parameters, run ``forward`` /
``backward`` / ``update`` and feed a metric.  The loops here only use those
calls, so any module (``Module``, or one written later) gets ``fit``,
``score`` and ``predict``.

Rules (MXNet 1.9.1's loop):
    * ``fit`` binds, initialises parameters, creates the optimizer, then for
      each epoch: reset the metric, and for each batch ``forward_backward``,
      ``update``, ``update_metric`` and the batch-end callbacks; at the end of
      an epoch it logs ``Train-<metric>``, syncs parameters, calls the
      epoch-end callbacks, scores ``eval_data`` and resets the iterator;
    * the metric an epoch reports is the global one (batch callbacks such as
      ``Speedometer`` may reset the local sums);
    * ``predict`` drops the padding of the last batch; ``score`` does not (as MXNet).

State kept: ``binded``, ``for_training``, ``params_initialized``,
``optimizer_initialized``; ``epoch_metrics`` (``fit``'s per-epoch
``[(name, value), ...]`` of training and validation, an mxnb addition for
notebooks and tests).

Example::

    >>> from mxnb.module.base_module import BatchEndParam
    >>> BatchEndParam(epoch=0, nbatch=3, eval_metric=None, locals=None).nbatch
    3
"""

from __future__ import annotations

import logging
import time
from collections import namedtuple
from collections.abc import Iterator
from typing import Any

from .. import metric as _metric
from ..base import MXNBError
from ..initializer import Uniform
from ..ndarray import NDArray, concatenate

__all__ = ["BaseModule", "BatchEndParam"]

BatchEndParam = namedtuple("BatchEndParam", ["epoch", "nbatch", "eval_metric", "locals"])


def _as_list(value: Any) -> list:
    if value is None:
        return []
    return list(value) if isinstance(value, (list, tuple)) else [value]


class BaseModule:
    """The loops shared by every module; subclasses provide bind / forward / backward / update."""

    def __init__(self, logger: Any = logging) -> None:
        self.logger = logger
        self.binded = False
        self.for_training = False
        self.inputs_need_grad = False
        self.params_initialized = False
        self.optimizer_initialized = False
        self._symbol: Any = None
        self.epoch_metrics: list[dict[str, Any]] = []

    # -- the steps -------------------------------------------------------------------------
    def forward_backward(self, data_batch: Any) -> None:
        """``forward(is_train=True)`` then ``backward()``."""
        self.forward(data_batch, is_train=True)
        self.backward()

    def prepare(self, data_batch: Any, sparse_row_id_fn: Any = None) -> None:
        """Prepare for a batch (nothing to do for dense parameters)."""

    # -- evaluation ---------------------------------------------------------------------------
    def score(
        self,
        eval_data: Any,
        eval_metric: Any,
        num_batch: int | None = None,
        batch_end_callback: Any = None,
        score_end_callback: Any = None,
        reset: bool = True,
        epoch: int = 0,
        sparse_row_id_fn: Any = None,
    ) -> list[tuple[str, float]]:
        """Run the model over ``eval_data`` and return ``[(metric name, value), ...]``."""
        self._check_ready("score")
        if reset:
            eval_data.reset()
        if not isinstance(eval_metric, _metric.EvalMetric):
            eval_metric = _metric.create(eval_metric)
        eval_metric.reset()
        for nbatch, eval_batch in enumerate(eval_data):
            if num_batch is not None and nbatch == num_batch:
                break
            self.forward(eval_batch, is_train=False)
            self.update_metric(eval_metric, eval_batch.label)
            for callback in _as_list(batch_end_callback):
                callback(BatchEndParam(epoch, nbatch, eval_metric, locals()))
        for callback in _as_list(score_end_callback):
            callback(BatchEndParam(epoch, nbatch, eval_metric, locals()))
        return eval_metric.get_global_name_value()

    def iter_predict(
        self,
        eval_data: Any,
        num_batch: int | None = None,
        reset: bool = True,
        sparse_row_id_fn: Any = None,
    ) -> Iterator[tuple[list[NDArray], int, Any]]:
        """Yield ``(outputs without padding, batch index, batch)`` for each batch."""
        self._check_ready("iter_predict")
        if reset:
            eval_data.reset()
        for nbatch, eval_batch in enumerate(eval_data):
            if num_batch is not None and nbatch == num_batch:
                break
            self.forward(eval_batch, is_train=False)
            pad = eval_batch.pad or 0
            outputs = [out[0 : out.shape[0] - pad] for out in self.get_outputs()]
            yield outputs, nbatch, eval_batch

    def predict(
        self,
        eval_data: Any,
        num_batch: int | None = None,
        merge_batches: bool = True,
        reset: bool = True,
        always_output_list: bool = False,
        sparse_row_id_fn: Any = None,
    ) -> Any:
        """Outputs over ``eval_data`` (padding dropped), concatenated over batches when ``merge_batches``."""
        output_list = [
            [out.copy() for out in outputs]
            for outputs, _, _ in self.iter_predict(eval_data, num_batch, reset)
        ]
        if not output_list:
            return output_list
        if not merge_batches:
            return output_list
        num_outputs = len(output_list[0])
        merged = [concatenate([batch[i] for batch in output_list]) for i in range(num_outputs)]
        if num_outputs == 1 and not always_output_list:
            return merged[0]
        return merged

    # -- training ------------------------------------------------------------------------------
    def _sync_params_after_epoch(self) -> tuple[dict, dict]:
        """MXNet's epoch end in ``fit``: read the parameters back, then write them to every device.

        Writing them back is what syncs the auxiliary states (BatchNorm's
        moving statistics), which each device updates on its own.  Returns
        ``(arg_params, aux_params)`` for the epoch-end callbacks.
        """
        arg_params, aux_params = self.get_params()
        self.set_params(arg_params, aux_params)
        return arg_params, aux_params

    def fit(  # noqa: C901 -- MXNet's fit loop, step for step: bind, init, optimizer, epochs, callbacks
        self,
        train_data: Any,
        eval_data: Any = None,
        eval_metric: Any = "acc",
        epoch_end_callback: Any = None,
        batch_end_callback: Any = None,
        kvstore: Any = "local",
        optimizer: Any = "sgd",
        optimizer_params: Any = (("learning_rate", 0.01),),
        eval_end_callback: Any = None,
        eval_batch_end_callback: Any = None,
        initializer: Any = None,
        arg_params: dict | None = None,
        aux_params: dict | None = None,
        allow_missing: bool = False,
        force_rebind: bool = False,
        force_init: bool = False,
        begin_epoch: int = 0,
        num_epoch: int | None = None,
        validation_metric: Any = None,
        monitor: Any = None,
        sparse_row_id_fn: Any = None,
        progress: bool | None = None,
        live_plot: bool = False,
    ) -> None:
        """Train for ``num_epoch`` epochs (MXNet's ``fit``; see the module docstring).

        mxnb additions: ``progress`` shows a progress bar per epoch (None: only in
        a notebook), ``live_plot`` draws the per-epoch metrics as they come
        (:mod:`mxnb.callback`).  Per-epoch metrics are kept in ``epoch_metrics``.
        """
        from .. import callback as _callback

        if num_epoch is None:
            raise MXNBError("fit: give num_epoch (how many epochs to train)")
        if initializer is None:
            initializer = Uniform(0.01)
        self.bind(
            data_shapes=train_data.provide_data,
            label_shapes=train_data.provide_label,
            for_training=True,
            force_rebind=force_rebind,
        )
        if monitor is not None:
            self.install_monitor(monitor)
        self.init_params(
            initializer=initializer,
            arg_params=arg_params,
            aux_params=aux_params,
            allow_missing=allow_missing,
            force_init=force_init,
        )
        self.init_optimizer(kvstore=kvstore, optimizer=optimizer, optimizer_params=optimizer_params)
        if validation_metric is None:
            validation_metric = eval_metric
        if not isinstance(eval_metric, _metric.EvalMetric):
            eval_metric = _metric.create(eval_metric)
        batch_callbacks = _as_list(batch_end_callback)
        epoch_callbacks = _as_list(epoch_end_callback)
        view = _callback.fit_view(
            progress, live_plot, num_epoch - begin_epoch, _callback.batches_hint(train_data)
        )
        if view is not None:
            batch_callbacks.append(view.batch_end)
        self.epoch_metrics = []
        for epoch in range(begin_epoch, num_epoch):
            tic = time.time()
            eval_metric.reset()
            nbatch = 0
            data_iter = iter(train_data)
            end_of_batch = False
            try:
                next_data_batch = next(data_iter)
            except StopIteration:
                # MXNet 1.9.1 lets this StopIteration escape fit
                raise MXNBError(
                    f"fit: the training iterator gave no batch in epoch {epoch}: it is empty, or "
                    "used up by an earlier loop; call train_data.reset() before fit"
                ) from None
            eval_name_vals: list = []
            while not end_of_batch:
                data_batch = next_data_batch
                if monitor is not None:
                    monitor.tic()
                self.forward_backward(data_batch)
                self.update()
                self.update_metric(eval_metric, data_batch.label)
                try:
                    next_data_batch = next(data_iter)
                    self.prepare(next_data_batch, sparse_row_id_fn=sparse_row_id_fn)
                except StopIteration:
                    end_of_batch = True
                if monitor is not None:
                    monitor.toc_print()
                if end_of_batch:
                    eval_name_vals = eval_metric.get_global_name_value()
                for callback in batch_callbacks:
                    callback(BatchEndParam(epoch, nbatch, eval_metric, locals()))
                nbatch += 1
            record: dict[str, Any] = {"epoch": epoch, "train": list(eval_name_vals)}
            for name, value in eval_name_vals:
                self.logger.info("Epoch[%d] Train-%s=%f", epoch, name, value)
            self.logger.info("Epoch[%d] Time cost=%.3f", epoch, time.time() - tic)
            arg_params_now, aux_params_now = self._sync_params_after_epoch()
            for callback in epoch_callbacks:
                callback(epoch, self.symbol, arg_params_now, aux_params_now)
            if eval_data is not None:
                result = self.score(
                    eval_data,
                    validation_metric,
                    score_end_callback=eval_end_callback,
                    batch_end_callback=eval_batch_end_callback,
                    epoch=epoch,
                )
                record["validation"] = list(result)
                for name, value in result:
                    self.logger.info("Epoch[%d] Validation-%s=%f", epoch, name, value)
            self.epoch_metrics.append(record)
            if view is not None:
                view.epoch_end(record)
            train_data.reset()

    # -- helpers ----------------------------------------------------------------------------------
    def _check_ready(self, what: str) -> None:
        if not (self.binded and self.params_initialized):
            raise MXNBError(f"{what}: call bind() and init_params() first (or fit())")

    @property
    def symbol(self) -> Any:
        """The symbol of this module."""
        return self._symbol

    def install_monitor(self, monitor: Any) -> None:
        """Install a monitor on the executors (not supported in mxnb yet)."""
        raise MXNBError("install_monitor is not supported by mxnb's Module yet")
