"""Data parallelism: one executor per device, the batch sliced across them.

Idea (MXNet: python/mxnet/module/executor_group.py, DataParallelExecutorGroup):
a batch of size B over devices with work loads w_i is cut into contiguous
slices of about ``B * w_i / sum(w)`` rows; each device binds the same symbol
for its slice.  Forward copies each slice to its device (copy ops), runs every
executor (they push asynchronously, so devices run at once), and outputs are
concatenated back along the batch axis.  Parameters live on every device;
the Module reduces their gradients through a KVStore and broadcasts the
weights back.

Rule: the slices are MXNet's (``_split_input_slice``); reading parameters
averages the copies of every device (they are equal after a synchronised
update); writing them copies to every device.

State kept:
    contexts, slices            device list and each one's batch rows
    execs                       one Executor per device
    grad_req_given              the grad_req bound with (``grad_req`` is per argument)
    shared_data_arrays          per device: name -> input array that groups sharing this one reuse
    param_arrays, grad_arrays   per parameter: its array on each device (grad None when fixed)
    aux_arrays                  per auxiliary state: its array on each device
    data_arrays, label_arrays   per input: (slice, array on the device) pairs

Example::

    >>> from mxnb.module.executor_group import split_input_slice
    >>> split_input_slice(10, [1, 1, 1])
    [slice(0, 3, None), slice(3, 6, None), slice(6, 10, None)]
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

from ..base import MXNBError, ShapeError
from ..context import Context, cpu
from ..ndarray import NDArray, concatenate

__all__ = ["DataParallelExecutorGroup", "desc_name_shape", "split_input_slice"]


def split_input_slice(batch_size: int, work_load_list: Sequence[float]) -> list[slice]:
    """Cut ``batch_size`` rows into one contiguous slice per device, by work load (MXNet's rule)."""
    total = sum(work_load_list)
    counts = [round(load * batch_size / total) for load in work_load_list]
    if sum(counts) < batch_size:
        counts[-1] += batch_size - sum(counts)
    slices = []
    end = 0
    for count in counts:
        begin = int(min(end, batch_size))
        end = int(min(begin + count, batch_size))
        if begin >= end:
            raise ShapeError(
                f"a batch of {batch_size} cannot be split over {len(work_load_list)} devices "
                "without empty slices; use a larger batch or fewer devices"
            )
        slices.append(slice(begin, end))
    return slices


def desc_name_shape(desc: Any) -> tuple[str, tuple]:
    """``(name, shape)`` of a DataDesc or of a ``(name, shape)`` pair."""
    if hasattr(desc, "name") and hasattr(desc, "shape"):
        return str(desc.name), tuple(desc.shape)
    name, shape = desc[0], desc[1]
    return str(name), tuple(shape)


class DataParallelExecutorGroup:
    """Executors of one symbol on several devices, each bound for its slice of the batch."""

    def __init__(
        self,
        symbol: Any,
        contexts: Sequence[Context],
        work_load_list: Sequence[float],
        data_shapes: Sequence[Any],
        label_shapes: Sequence[Any] | None,
        param_names: Sequence[str],
        for_training: bool,
        inputs_need_grad: bool,
        fixed_param_names: Sequence[str] = (),
        grad_req: str = "write",
        shared_group: DataParallelExecutorGroup | None = None,
    ) -> None:
        self.symbol = symbol
        self.contexts = list(contexts)
        self.param_names = list(param_names)
        self.for_training = for_training
        self.inputs_need_grad = inputs_need_grad
        self.fixed_param_names = list(fixed_param_names)
        self.aux_names = symbol.list_auxiliary_states()
        self.output_names = symbol.list_outputs()
        self.data_shapes = [desc_name_shape(d) for d in data_shapes]
        self.label_shapes = [desc_name_shape(d) for d in label_shapes or []]
        self.data_names = [name for name, _ in self.data_shapes]
        self.label_names = [name for name, _ in self.label_shapes]
        self.batch_size = self.data_shapes[0][1][0]
        self.slices = split_input_slice(self.batch_size, work_load_list)
        self.grad_req_given = grad_req
        self.grad_req = self._grad_req_dict(grad_req)
        shared = [None] * len(self.contexts) if shared_group is None else shared_group.execs
        if len(shared) != len(self.contexts):
            raise MXNBError(
                f"bind: the shared module runs on {len(shared)} devices, this one on "
                f"{len(self.contexts)}; give both the same context list"
            )
        self.shared_data_arrays: list[dict[str, NDArray]] = (
            [{} for _ in self.contexts] if shared_group is None else shared_group.shared_data_arrays
        )
        self.execs = [
            self._bind(ctx, part, other, buffer)
            for ctx, part, other, buffer in zip(
                self.contexts, self.slices, shared, self.shared_data_arrays
            )
        ]
        self._collect_arrays()

    def _collect_arrays(self) -> None:
        """The bound arrays by name, one per device (MXNet's ``param_arrays``, ``data_arrays`` ...)."""
        execs, slices = self.execs, self.slices
        self.param_arrays = [[e.arg_dict[name] for e in execs] for name in self.param_names]
        if self.for_training:
            self.grad_arrays = [[e.grad_dict.get(name) for e in execs] for name in self.param_names]
        else:
            self.grad_arrays = [[None] * len(execs) for _ in self.param_names]
        self.aux_arrays = [[e.aux_dict[name] for e in execs] for name in self.aux_names]
        self.data_arrays = [
            [(part, e.arg_dict[name]) for part, e in zip(slices, execs)] for name in self.data_names
        ]
        self.label_arrays = [
            [(part, e.arg_dict[name]) for part, e in zip(slices, execs)]
            for name in self.label_names
            if name in execs[0].arg_dict
        ]

    def _grad_req_dict(self, grad_req: str) -> dict[str, str]:
        requests = {}
        for name in self.symbol.list_arguments():
            if name in self.param_names:
                trainable = self.for_training and name not in self.fixed_param_names
                requests[name] = grad_req if trainable else "null"
            elif name in self.data_names:
                requests[name] = grad_req if self.inputs_need_grad else "null"
            else:
                requests[name] = "null"
        return requests

    def _bind(self, ctx: Context, part: slice, shared_exec: Any, buffer: dict) -> Any:
        """Bind one device's executor, sharing with ``shared_exec`` (MXNet's ``shared_module`` rule).

        With a shared executor, the parameters, their gradients and the aux
        states ARE its NDArrays (a mismatch names the parameter) and the
        intermediate blocks come from its memory pool; data and labels are
        views of the device's ``buffer`` arrays when those are large enough
        (:mod:`mxnb.executor.sharing`).
        """
        rows = part.stop - part.start
        shapes = {name: (rows, *shape[1:]) for name, shape in self.data_shapes + self.label_shapes}
        unknown = [name for name in shapes if name not in self.symbol.list_arguments()]
        for name in unknown:
            shapes.pop(name)  # a label the symbol does not take (MXNet ignores it too)
        return self.symbol.simple_bind(
            ctx,
            grad_req=self.grad_req,
            shared_arg_names=None if shared_exec is None else self.param_names,
            shared_exec=shared_exec,
            shared_buffer=buffer,
            **shapes,
        )

    # -- parameters ----------------------------------------------------------------
    def set_params(
        self,
        arg_params: dict[str, NDArray],
        aux_params: dict[str, NDArray],
        allow_extra: bool = False,
    ) -> None:
        """Copy the parameters to every device."""
        for executor in self.execs:
            executor.copy_params_from(arg_params, aux_params, allow_extra_params=allow_extra)

    def get_params(
        self,
        arg_params: dict[str, NDArray],
        aux_params: dict[str, NDArray],
        args_in_sync: bool = False,
    ) -> None:
        """Write the devices' mean of each parameter into ``arg_params`` / ``aux_params``.

        ``args_in_sync``: every device holds the same value of each argument
        (pulled from one kvstore), so the first device's copy is that value
        and no mean is taken (MXNet takes it anyway; for two devices the mean
        of equal values is the value, bit for bit).
        """
        for names, blocks, target, same in (
            (self.param_names, self.param_arrays, arg_params, args_in_sync),
            (self.aux_names, self.aux_arrays, aux_params, False),
        ):
            for name, block in zip(names, blocks):
                if len(block) == 1 or same:
                    block[0].copyto(target[name])
                    continue
                total = block[0].copyto(cpu())
                for other in block[1:]:
                    total += other.copyto(cpu())
                (total / len(block)).astype(target[name].dtype).copyto(target[name])

    # -- computation ------------------------------------------------------------------
    def _load(self, sources: Sequence[NDArray], targets: list, what: str) -> None:
        if len(sources) != len(targets):
            raise MXNBError(
                f"the batch has {len(sources)} {what} arrays, the module expects {len(targets)}"
            )
        for source, pairs in zip(sources, targets):
            for part, target in pairs:
                piece = source if len(pairs) == 1 and source.shape == target.shape else source[part]
                if piece.shape != target.shape:
                    raise ShapeError(
                        f"a {what} slice has shape {piece.shape} but the module was bound for "
                        f"{target.shape}; bind again with the iterator's provide_{what}"
                    )
                piece.copyto(target)

    def forward(self, data_batch: Any, is_train: bool | None = None) -> None:
        """Copy each device's slice of the batch, then run every executor's forward."""
        self._load(data_batch.data, self.data_arrays, "data")
        if is_train is None:
            is_train = self.for_training
        label = getattr(data_batch, "label", None)
        if self.label_arrays and label:
            self._load(label, self.label_arrays, "label")
        for executor in self.execs:
            executor.forward(is_train=is_train)

    def backward(self, out_grads: Sequence[NDArray] | None = None) -> None:
        """Run every executor's backward (``out_grads`` sliced along the batch axis)."""
        if not self.for_training:
            raise MXNBError("backward: the module was bound with for_training=False")
        for executor, part in zip(self.execs, self.slices):
            sliced = None if out_grads is None else [grad[part] for grad in out_grads]
            executor.backward(out_grads=sliced)

    def get_outputs(self, merge_multi_context: bool = True) -> list:
        """Each output, concatenated over devices (on the first device), or per device lists."""
        outputs = [[e.outputs[i] for e in self.execs] for i in range(len(self.execs[0].outputs))]
        if not merge_multi_context:
            return outputs
        return [_merge(parts) for parts in outputs]

    def get_input_grads(self, merge_multi_context: bool = True) -> list:
        """Gradients of the data inputs (bind with ``inputs_need_grad=True``).

        None for an input without one (bound with ``grad_req='null'``), as MXNet."""
        if not self.inputs_need_grad:
            raise MXNBError("get_input_grads: bind with inputs_need_grad=True")
        grads = [[e.grad_dict.get(name) for e in self.execs] for name in self.data_names]
        if not merge_multi_context:
            return grads
        return [None if None in parts else _merge(parts) for parts in grads]

    def update_metric(
        self, eval_metric: Any, labels: Sequence[NDArray], pre_sliced: bool = False
    ) -> None:
        """Update ``eval_metric`` with each device's outputs and its slice of the labels."""
        for index, (executor, part) in enumerate(zip(self.execs, self.slices)):
            if pre_sliced:
                labels_slice = labels[index]
            elif len(self.execs) == 1:
                labels_slice = list(labels)
            else:
                labels_slice = [label[part] for label in labels]
            label_dict = OrderedDict(zip(self.label_names, labels_slice))
            pred_dict = OrderedDict(zip(self.output_names, executor.outputs))
            eval_metric.update_dict(label_dict, pred_dict)


def _merge(parts: list[NDArray]) -> NDArray:
    if len(parts) == 1:
        return parts[0]
    target = parts[0].context
    return concatenate([part.as_in_context(target) for part in parts], axis=0)
