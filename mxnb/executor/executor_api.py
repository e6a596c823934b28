"""The MXNet Executor API around the bound graph: array lists, parameters, monitor, debug_str, reshape.

Idea (MXNet: python/mxnet/executor.py): what an MXNet user calls on an
executor beyond ``forward`` / ``backward`` — ``arg_arrays``, ``output_dict``,
``copy_params_from``, ``set_monitor_callback``, ``debug_str`` and
``reshape`` — reads the bound arrays and the plan and touches nothing of the
run.  It is mixed into :class:`~.executor.Executor`, whose state it reads.

Rule: these methods never push an op; ``reshape`` makes a new executor that
shares this one's arrays where the shapes allow (MXNet's rule).

State kept: none of its own (the executor's ``arg_dict``, ``grad_dict``,
``aux_dict``, ``outputs``, ``memory_plan`` and graph).

Example::

    >>> import mxnb as mx
    >>> exe = mx.sym.FullyConnected(mx.sym.Variable('x'), num_hidden=2, name='fc').simple_bind(
    ...     mx.cpu(), x=(1, 3))
    >>> sorted(exe.output_dict), exe.debug_str().splitlines()[-2].startswith('Total')
    (['fc_output'], True)
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from ..base import ParamError, ShapeError
from ..context import Context
from ..ndarray.ndarray import NDArray
from .plan import MemoryPlan
from .sharing import _reshape_or_create
from .steps import ExecGraph
from .tournament import plan_best

if TYPE_CHECKING:
    from .executor import Executor

__all__ = ["ExecutorAPI"]


class ExecutorAPI:
    """MXNet's Executor methods over the bound state (mixed into :class:`~.executor.Executor`)."""

    # Set by Executor.__init__; declared here for readers and type checkers.
    _symbol: Any
    _ctx: Context
    _graph: ExecGraph
    _output_names: list[str]
    _monitor: Callable[[str, NDArray], None] | None
    _monitor_all: bool
    memory_plan: MemoryPlan
    arg_dict: dict[str, NDArray]
    grad_dict: dict[str, NDArray]
    aux_dict: dict[str, NDArray]
    outputs: list[NDArray]

    @property
    def arg_arrays(self) -> list[NDArray]:
        """Argument arrays in ``list_arguments`` order."""
        return list(self.arg_dict.values())

    @property
    def grad_arrays(self) -> list[NDArray | None]:
        """Gradient arrays in argument order (None where grad_req is 'null')."""
        return [self.grad_dict.get(name) for name in self._graph.arg_names]

    @property
    def aux_arrays(self) -> list[NDArray]:
        """Auxiliary state arrays in ``list_auxiliary_states`` order."""
        return list(self.aux_dict.values())

    @property
    def output_dict(self) -> dict[str, NDArray]:
        """Outputs by name (``softmax_output``)."""
        return dict(zip(self._output_names, self.outputs))

    def copy_params_from(
        self,
        arg_params: Mapping[str, Any],
        aux_params: Mapping[str, Any] | None = None,
        allow_extra_params: bool = False,
    ) -> None:
        """Copy parameters into the bound arrays (MXNet: ``Executor.copy_params_from``)."""
        for table, params, what in (
            (self.arg_dict, arg_params, "argument"),
            (self.aux_dict, aux_params or {}, "auxiliary state"),
        ):
            for name, value in params.items():
                if name not in table:
                    if allow_extra_params:
                        continue
                    raise ParamError(
                        f"copy_params_from: {name!r} is not an {what} of the symbol; pass "
                        f"allow_extra_params=True to skip it"
                    )
                target = table[name]
                if isinstance(value, NDArray):
                    value.copyto(target)
                else:
                    target[:] = np.asarray(value)

    def set_monitor_callback(
        self, callback: Callable[[str, NDArray], None], monitor_all: bool = False
    ) -> None:
        """Call ``callback(name, array)`` for every internal output as its step is pushed.

        The array is a view of the output's storage block: read it (``asnumpy``)
        inside the callback or copy it, since later steps may reuse the block.
        With ``monitor_all`` the step's inputs are reported first, named
        ``'<step>:<entry>'`` (``'fc2:relu1_output'``).
        """
        self._monitor = callback
        self._monitor_all = monitor_all

    def debug_str(self) -> str:
        """Describe the steps and the memory plan, ending with MXNet's "Total N MB allocated"."""
        graph = self._graph
        lines = ["Symbol Outputs:"]
        lines += [f"\toutput[{i}]={name}" for i, name in enumerate(self._output_names)]
        plan = self.memory_plan
        for step in graph.steps:
            lines.append("--------------------")
            lines.append(f"Op:{step.op_type}, Name={step.name}")
            lines.append("Inputs:")
            for position, entry in enumerate(step.inputs):
                planned = plan.entries[entry]
                lines.append(f"\targ[{position}]={planned.name} storage={_sid(planned.storage_id)}")
            lines.append("Outputs:")
            for position, entry in enumerate(step.outputs):
                planned = plan.entries[entry]
                extra = f" inplace from {planned.inplace_source}" if planned.inplace_source else ""
                lines.append(
                    f"\tout[{position}]={planned.name} {planned.shape} "
                    f"storage={_sid(planned.storage_id)}{extra}"
                )
        lines.append(f"Total {plan.internal_bytes >> 20} MB allocated")
        lines.append(
            f"({plan.internal_bytes:,} bytes in {len(plan.blocks)} blocks; naive "
            f"{plan.naive_internal_bytes:,} bytes; {len(plan.inplace_pairs)} in-place)"
        )
        return "\n".join(lines) + "\n"

    def reshape(
        self, partial_shaping: bool = False, allow_up_sizing: bool = False, **kwargs: Any
    ) -> Executor:
        """Return an executor for new input shapes sharing this one's parameters.

        Arguments whose shape is unchanged share their arrays (and gradients);
        changed ones that do not grow are views of the old arrays' first
        elements, and the new executor takes its memory from this one's pool
        (MXNet: the outputs share memory too); only a grown argument gets a new
        array.  Without ``allow_up_sizing`` an argument may not grow.
        """
        graph = self._graph
        shapes = {name: tuple(self.arg_dict[name].shape) for name in graph.arg_names}
        for name, shape in kwargs.items():
            if name not in shapes:
                raise ParamError(f"reshape: {name!r} is not an argument of the symbol")
            shapes[name] = tuple(shape)
        mode = graph.recompute if graph.recompute in ("mirror", "sqrt") else None
        new_graph, plan = plan_best(
            self._symbol, dict(kwargs), grad_req=graph.grad_req, recompute=mode
        )
        args: dict[str, NDArray] = {}
        grads: dict[str, NDArray] = {}
        for name in new_graph.arg_names:
            want = new_graph.entries[new_graph.arg_entries[name]].shape
            old = self.arg_dict[name]
            if tuple(old.shape) == want:
                args[name] = old
                if name in self.grad_dict:
                    grads[name] = self.grad_dict[name]
                continue
            if name not in kwargs and not partial_shaping:
                raise ShapeError(
                    f"reshape: the shape of {name!r} changes from {old.shape} to {want}; pass "
                    f"partial_shaping=True to allow arguments you did not name to change"
                )
            if int(np.prod(want)) > old.size and not allow_up_sizing:
                raise ShapeError(
                    f"reshape: {name!r} grows from {old.shape} to {want}; pass allow_up_sizing=True"
                )
            # MXNet: an array that does not grow is a view of the old one's first elements
            args[name] = _reshape_or_create(name, want, old.dtype, self._ctx, {name: old})
            if name in self.grad_dict:
                old_grad = {name: self.grad_dict[name]}
                grads[name] = _reshape_or_create(name, want, old.dtype, self._ctx, old_grad)
        executor_class: Any = type(self)  # Executor, which this class is mixed into
        return executor_class(
            self._symbol, self._ctx, new_graph, plan, args, grads, dict(self.aux_dict),
            shared_exec=self,
        )  # fmt: skip


def _sid(storage_id: int) -> str:
    return "external" if storage_id < 0 else str(storage_id)
