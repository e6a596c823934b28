"""The Executor: a bound graph run through the engine, one engine op per step or segment.

Idea (MXNet: ``GraphExecutor`` in src/executor/graph_executor.cc): binding
infers shapes, builds the forward+backward steps (:mod:`.graph`), plans
memory (:mod:`.memory`) and allocates ONE storage chunk per planned block,
each with its own engine var.  Every internal entry is a view into its
block.  ``forward`` / ``backward`` then push one engine op per step, whose
const vars are the vars of what it reads and whose mutate vars are the vars
of what it writes (plus aux states and resources), and whose function
(:mod:`.runners`) calls the operator on the step's arrays.  Because a reused block
keeps its var, a step writing into a block waits for the earlier steps that
still read it: memory reuse becomes real ordering, visible in the DAG view.
With bulk execution (:mod:`.bulk`, on by default) consecutive steps of a
pass are pushed as one engine op, a segment, with the union of their vars.
Recompute steps (:mod:`.recompute`) are engine ops like the others: a node's
forward run again in backward into planned storage.  An *arena* block
(:mod:`.arena`, entries at byte offsets) gets one var per byte segment, and an
entry uses the vars of the segments it covers.

Rule: the arrays the user sees (``arg_dict``, ``grad_dict``, ``aux_dict``,
``outputs``) are NDArrays; ``outputs`` are views of their blocks and stay
valid until the next ``forward``.  ``grad_req='add'`` accumulates
(``ADD_TO``), ``'null'`` skips.  Loss heads get no head gradient; other heads
get ``out_grads`` or ones.

State kept:
    _graph        the ExecGraph (steps, entries)
    memory_plan   the MemoryPlan used
    _blocks       one NDArray (uint8) per storage block: its chunk and var
    _arrays       entry id -> NDArray bound to it (argument, grad, aux, head grad or block view)
    _prepared     per step: operator, resources, raw arrays, const / mutate vars
    _data_pool    the blocks executors sharing memory with this one take from (:mod:`.sharing`)
    borrowed_bytes  bytes of this executor's blocks taken from a shared executor's pool

Example::

    >>> import mxnb as mx
    >>> import numpy as np
    >>> x = mx.sym.Variable('x')
    >>> net = mx.sym.FullyConnected(x, num_hidden=2, no_bias=True, name='fc')
    >>> exe = net.simple_bind(mx.cpu(), x=(1, 3))
    >>> exe.arg_dict['fc_weight'][:] = 1
    >>> exe.forward(x=np.array([[1, 2, 3]], 'float32'))[0].asnumpy()
    array([[6., 6.]], dtype=float32)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .. import engine as _engine_mod
from .. import resource as _resource
from ..base import ContextError, ParamError, ShapeError
from ..context import Context
from ..ndarray import creation as _nd
from ..ndarray.ndarray import NDArray
from . import fusion
from .bulk import Segment, build_segments, max_nodes
from .executor_api import ExecutorAPI
from .plan import MemoryPlan
from .recompute import REPLAYED_OPS
from .runners import _Prepared, make_runner
from .sharing import name_vars, take_blocks
from .steps import ExecGraph, Step, StepKind, without_gc_pauses

__all__ = ["Executor"]


class Executor(ExecutorAPI):
    """A symbol bound to arrays on one context; create with ``sym.simple_bind`` / ``sym.bind``."""

    def __init__(
        self,
        sym: Any,
        ctx: Context,
        graph: ExecGraph,
        plan: MemoryPlan,
        args: dict[str, NDArray],
        grads: dict[str, NDArray],
        aux: dict[str, NDArray],
        shared_exec: Executor | None = None,
    ) -> None:
        self._symbol = sym
        self._ctx = ctx
        self._graph = graph
        self.memory_plan = plan
        self._monitor: Callable[[str, NDArray], None] | None = None
        self._monitor_all = False
        self._forward_is_train = True
        self.arg_dict: dict[str, NDArray] = {name: args[name] for name in graph.arg_names}
        self.grad_dict: dict[str, NDArray] = {
            name: grads[name] for name in graph.arg_names if name in grads
        }
        self.aux_dict: dict[str, NDArray] = {name: aux[name] for name in graph.aux_names}
        self._check_bound_shapes()
        self._arrays: dict[int, NDArray] = {}
        for name, entry in graph.arg_entries.items():
            self._arrays[entry] = self.arg_dict[name]
        for name, entry in graph.aux_entries.items():
            self._arrays[entry] = self.aux_dict[name]
        for name, entry in graph.grad_entries.items():
            self._arrays[entry] = self.grad_dict[name]
        self._head_grads: dict[int, NDArray] = {}
        for output, entry in graph.head_grad_entries.items():
            record = graph.entries[entry]
            self._head_grads[output] = _nd.zeros(record.shape, ctx=ctx, dtype=record.dtype)
            self._arrays[entry] = self._head_grads[output]
        self._entry_vars: dict[int, list[Any]] = {}  # arena entries: the vars of their segments
        self._arena_reads: dict[int, Any] = {}  # arena entries: the arena chunk's var
        self._borrowed_vars: set[int] = set()  # ids of vars of blocks borrowed from shared_exec
        self._data_pool: list[NDArray] = [] if shared_exec is None else shared_exec._data_pool
        self._blocks = self._allocate_blocks(shared_exec is not None)
        self._forward_steps = {
            id(step.node): step for step in graph.steps[: graph.num_forward_steps]
        }
        self._prepared = [self._prepare(step) for step in graph.steps]
        self._made: set[tuple] = set()  # passes whose engine functions are made (_push_pass)
        self._segments: dict[tuple, list[Segment]] = {}  # (pass start, mode, size) -> segments
        self.outputs: list[NDArray] = [self._arrays[entry] for entry in graph.output_entries]
        self._output_names = [graph.entries[entry].name for entry in graph.output_entries]
        name_vars(self._held_names(), self._block_names())

    def _held_names(self) -> list[tuple[Any, str]]:
        """(var, name) for the arrays bound by name: what a person calls them.

        Arguments and auxiliary states by their names (``fc1_weight``),
        gradients as ``fc1_weight.grad``, head gradients as
        ``softmax_output.head_grad``.  The views show these names instead of
        the arrays' ``nd28874``.
        """
        graph = self._graph
        held = [(array._var, name) for name, array in self.arg_dict.items()]
        held += [(array._var, f"{name}.grad") for name, array in self.grad_dict.items()]
        held += [(array._var, name) for name, array in self.aux_dict.items()]
        for output, array in self._head_grads.items():
            held.append((array._var, f"{graph.entries[output].name}.head_grad"))
        return held

    def _block_names(self) -> list[tuple[Any, str]]:
        """(var, entry name) for every planned entry: the block or arena segments holding it."""
        held = []
        for entry, planned in zip(self._graph.entries, self.memory_plan.entries):
            if not planned.external:
                for var in self._entry_vars.get(entry.id, (self._arrays[entry.id]._var,)):
                    held.append((var, entry.name))
        return held

    # -- binding ------------------------------------------------------------------------
    @property
    def symbol(self) -> Any:
        """The Symbol this executor was bound from (views re-plan it to compare strategies)."""
        return self._symbol

    def _check_bound_shapes(self) -> None:
        graph = self._graph
        for what, table in (
            ("argument", self.arg_dict),
            ("gradient of", self.grad_dict),
            ("auxiliary state", self.aux_dict),
        ):
            for name, array in table.items():
                if array.context != self._ctx:
                    raise ContextError(
                        f"bind: {what} '{name}' is on {array.context!r} but the executor runs "
                        f"on {self._ctx!r}; pass arrays on {self._ctx!r} "
                        f"(array.as_in_context(ctx))"
                    )
        for table, entries, what in (
            (self.arg_dict, graph.arg_entries, "argument"),
            (self.aux_dict, graph.aux_entries, "auxiliary state"),
        ):
            for name, entry in entries.items():
                want = graph.entries[entry].shape
                if tuple(table[name].shape) != want:
                    raise ShapeError(
                        f"bind: {what} '{name}' has shape {tuple(table[name].shape)} but the "
                        f"symbol infers {want}; pass an array of shape {want}"
                    )
        for name, array in self.grad_dict.items():
            want = graph.entries[graph.arg_entries[name]].shape
            if tuple(array.shape) != want:
                raise ShapeError(
                    f"bind: gradient of '{name}' has shape {tuple(array.shape)}; expected {want}"
                )

    def _allocate_blocks(self, sharing: bool) -> list[NDArray]:
        """One chunk + engine var per storage block; every planned entry a view into its block.

        ``sharing``: blocks come from the shared executor's pool where they fit
        (:mod:`.sharing`); a borrowed block is never cut into arena segments.
        """
        ctx = self._ctx
        blocks, borrowed = take_blocks(
            self.memory_plan.blocks, ctx, self._data_pool if sharing else None
        )
        if not sharing:
            self._data_pool.extend(blocks)
        self._borrowed_vars = {id(blocks[index]._var) for index in borrowed}
        self.borrowed_bytes = sum(self.memory_plan.blocks[index].nbytes for index in borrowed)
        arenas = {
            block.id: _segment_vars(block, self.memory_plan)
            for index, block in enumerate(self.memory_plan.blocks)
            if index not in borrowed
            and any(self.memory_plan.entry(name).offset for name in block.entries)
        }
        for entry, planned in zip(self._graph.entries, self.memory_plan.entries):
            if planned.external:
                continue
            block = blocks[planned.storage_id]
            start, stop = planned.offset, planned.offset + entry.nbytes
            raw = block._array[start:stop].view(entry.dtype).reshape(entry.shape)
            var = block._var
            if planned.storage_id in arenas:
                # an arena holds several entries at once: an entry's vars are those of the byte
                # segments it covers, plus a read of the arena's own var (freed after every use)
                bounds, segment_vars = arenas[planned.storage_id]
                covered = segment_vars[bounds.index(start) : bounds.index(stop)]
                self._entry_vars[entry.id] = covered
                self._arena_reads[entry.id] = block._var
                var = covered[0]
            self._arrays[entry.id] = NDArray._make(
                block._chunk, var, raw, 0, entry.shape, entry.dtype, ctx
            )
        return blocks

    def _prepare(self, step: Step) -> _Prepared:
        prepared = _Prepared(step, xp=self._ctx.array_module)
        arrays = self._arrays

        def raw(entry: int | None) -> Any:
            return None if entry is None else arrays[entry]._array

        const: list[Any] = []
        mutate: list[Any] = []
        for entry in [*step.inputs, *step.outputs]:
            if entry in self._arena_reads:
                const.append(self._arena_reads[entry])
        for entry in step.inputs:
            const.extend(self._entry_vars.get(entry) or [arrays[entry]._var])
        for entry in step.outputs:
            mutate.extend(self._entry_vars.get(entry) or [arrays[entry]._var])
        if step.kind is StepKind.FORWARD:
            # forward updates aux states in training (BatchNorm's moving stats); backward reads them
            mutate.extend(arrays[entry]._var for entry in step.aux)
        replay = step.kind is StepKind.RECOMPUTE and step.op_type in REPLAYED_OPS
        if step.kind is StepKind.RECOMPUTE and not replay:
            # a recompute step runs the forward again: its own operator, its own resources
            prop = step.prop
            assert prop is not None
            in_shapes = [self._graph.entries[e].shape for e in self._forward_inputs(step)]
            in_types = [self._graph.entries[e].dtype for e in self._forward_inputs(step)]
            prepared.operator = prop.create_operator_ex(self._ctx, in_shapes, in_types)
            requests = prop.forward_resource(in_shapes)
            if requests:
                prepared.resources = _resource.manager.request_all(self._ctx, requests)
                mutate.extend(resource.var for resource in prepared.resources)
        if step.kind in (StepKind.FORWARD, StepKind.BACKWARD):
            prop = step.prop
            assert prop is not None
            in_shapes = [self._graph.entries[e].shape for e in self._forward_inputs(step)]
            in_types = [self._graph.entries[e].dtype for e in self._forward_inputs(step)]
            if step.kind is StepKind.FORWARD:
                prepared.operator = prop.create_operator_ex(self._ctx, in_shapes, in_types)
                requests = prop.forward_resource(in_shapes)
            else:
                prepared.operator = None  # bound lazily to the forward step's operator
                requests = prop.backward_resource(in_shapes)
            if requests:
                prepared.resources = _resource.manager.request_all(self._ctx, requests)
                mutate.extend(resource.var for resource in prepared.resources)
        if self._borrowed_vars:  # a borrowed block's var is written on every access (.sharing)
            mutate.extend(var for var in const if id(var) in self._borrowed_vars)
            const = [var for var in const if id(var) not in self._borrowed_vars]
        prepared.const_vars = tuple(_unique(const))
        prepared.mutate_vars = tuple(_unique(mutate))
        # tuples, as the step's ids: tuples of arrays leave the garbage collector's lists
        prepared.raw = {
            "in_data": tuple(raw(e) for e in step.in_data),
            "out_data": tuple(raw(e) for e in step.out_data),
            "aux": tuple(raw(e) for e in step.aux),
            "out_grad": tuple(raw(e) for e in step.out_grad),
            "in_grad": tuple(raw(e) for e in step.in_grad),
        }
        return prepared

    def _forward_inputs(self, step: Step) -> list[int]:
        """Entry ids of the forward node's arguments (for operator creation and resources)."""
        forward = self._forward_step_of(step.node)
        return [entry for entry in forward.in_data if entry is not None]

    def _forward_step_of(self, node: Any) -> Step:
        """The forward step of ``node`` (a backward step shares its operator)."""
        return self._forward_steps[id(node)]

    # -- running ------------------------------------------------------------------------
    def forward(self, is_train: bool = False, **kwargs: Any) -> list[NDArray]:
        """Run the forward steps; ``kwargs`` are copied into the arguments first.

        Returns ``self.outputs`` (views valid until the next forward).
        """
        for name, value in kwargs.items():
            if name not in self.arg_dict:
                raise ParamError(
                    f"forward: unknown input {name!r}; the arguments are: "
                    f"{', '.join(self.arg_dict)}"
                )
            target = self.arg_dict[name]
            if isinstance(value, NDArray):
                if value.shape != target.shape:
                    raise ShapeError(
                        f"forward: input {name!r} has shape {value.shape} but the executor was "
                        f"bound with {target.shape}; use exe.reshape(...) or bind again"
                    )
                value.copyto(target)
            else:
                target[:] = np.asarray(value)
        self._forward_is_train = is_train  # recompute steps run forward the same way
        self._push_pass(0, self._graph.num_forward_steps, is_train)
        return self.outputs

    def backward(
        self, out_grads: NDArray | Sequence[NDArray] | None = None, is_train: bool = True
    ) -> None:
        """Run the backward steps: gradients go into ``grad_dict`` (as ``grad_req`` says).

        ``out_grads`` are the gradients of the outputs that need one (not of
        loss outputs), in output order; default ones.  Bound with
        ``grad_req='null'`` for every argument there is nothing to compute, and
        (as in MXNet) this does nothing.
        """
        graph = self._graph
        if len(self._prepared) == graph.num_forward_steps:
            return
        heads = [entry for entry in graph.output_entries if entry in self._head_grads]
        if out_grads is None:
            for entry in heads:
                self._head_grads[entry][:] = 1
        else:
            given = [out_grads] if isinstance(out_grads, NDArray) else list(out_grads)
            if len(given) == len(graph.output_entries) and len(heads) != len(given):
                given = [g for g, e in zip(given, graph.output_entries) if e in self._head_grads]
            if len(given) != len(heads):
                names = [graph.entries[e].name for e in heads]
                raise ParamError(
                    f"backward: {len(given)} out_grads given but the outputs needing a head "
                    f"gradient are {names}"
                )
            for entry, value in zip(heads, given):
                target = self._head_grads[entry]
                if isinstance(value, NDArray):
                    value.copyto(target)
                else:
                    target[:] = np.asarray(value)
        self._push_pass(graph.num_forward_steps, len(self._prepared), is_train)

    def _push_pass(self, start: int, stop: int, is_train: bool) -> None:
        """Push steps ``start:stop``: one engine op per bulk segment (:mod:`.bulk`), or per step.

        The first time a pass runs in a mode, its steps' engine functions (and
        its segments) are all made first, in one go, as bind makes its objects:
        with the collector paused, then moved to its oldest generation
        (:func:`.steps.without_gc_pauses`).  Made one per push instead, the
        80,000 functions of a 20,000-op chain's first run counted as objects
        surviving the young collections, and the collector walked every
        object of the graph once more in the middle of the forward pass
        (a third of the 20k run's forward time, none of the 2k run's).
        """
        size = _engine_mod.bulk_size()
        if size <= 1 or self._monitor is not None or stop - start <= 1:
            mode = (start, is_train, self._forward_is_train, _engine_mod.is_debug())
            if mode not in self._made:
                with without_gc_pauses():
                    for prepared in self._prepared[start:stop]:
                        self._runner_of(prepared, self._is_train_of(prepared, is_train))
                self._made.add(mode)
            for prepared in self._prepared[start:stop]:
                self._push(prepared, self._is_train_of(prepared, is_train))
            return
        debug, fused = _engine_mod.is_debug(), fusion.enabled(self._ctx)
        key = (start, is_train, self._forward_is_train, debug, size, fused)
        segments = self._segments.get(key)
        if segments is None:
            with without_gc_pauses():
                segments = self._build_segments(start, stop, is_train, size, fused and not debug)
            self._segments[key] = segments
        push = _engine_mod.get().push_prepared  # the engine at push time (set_engine)
        ctx = self._ctx
        for segment in segments:
            push(segment.run, ctx, segment.const_vars, segment.mutate_vars, segment.name)

    def _build_segments(
        self, start: int, stop: int, is_train: bool, size: int, fused: bool
    ) -> list[Segment]:
        """One pass's segments; with ``fused``, each segment's pointwise runs as one kernel."""
        steps = self._prepared[start:stop]
        grads = set(self._graph.grad_entries.values())  # the kvstore waits for these
        runs = [
            self._runner_of(prepared, self._is_train_of(prepared, is_train)) for prepared in steps
        ]
        xp = self._ctx.array_module

        def fuse(span: range) -> Any:  # .fusion: a segment's pointwise runs, one kernel each
            return fusion.fuse_span(steps[span.start : span.stop], runs[span.start : span.stop], xp)

        return build_segments(
            [prepared.step.name for prepared in steps],
            runs,
            [(prepared.const_vars, prepared.mutate_vars) for prepared in steps],
            [any(entry in grads for entry in prepared.step.outputs) for prepared in steps],
            max_nodes(size, "forward" if start == 0 else "backward"),
            fuse if fused else None,
        )

    def _is_train_of(self, prepared: _Prepared, is_train: bool) -> bool:
        """A recompute step runs forward as the last ``forward`` did; the others as asked."""
        return self._forward_is_train if prepared.step.kind is StepKind.RECOMPUTE else is_train

    def _runner_of(self, prepared: _Prepared, is_train: bool) -> Callable[[Any], None]:
        """The step's engine function in this mode, made once and kept."""
        key = (is_train, _engine_mod.is_debug())
        run = prepared.runners.get(key)
        if run is None:
            run = prepared.runners[key] = make_runner(prepared, is_train, self._operator_for)
        return run

    def _push(self, prepared: _Prepared, is_train: bool) -> None:
        step = prepared.step
        run = self._runner_of(prepared, is_train)
        # the process-wide engine at push time: set_engine may have switched it since bind
        _engine_mod.get().push_sync(
            run, self._ctx, prepared.const_vars, prepared.mutate_vars, 0, step.name
        )
        if self._monitor is not None:
            entries = self._graph.entries
            if self._monitor_all:
                for entry in dict.fromkeys(step.inputs):
                    self._monitor(f"{step.name}:{entries[entry].name}", self._arrays[entry])
            for entry in step.outputs:
                self._monitor(entries[entry].name, self._arrays[entry])

    def _operator_for(self, step: Step) -> Any:
        """The operator object of the forward step of ``step.node`` (forward and backward share it)."""
        forward = self._forward_step_of(step.node)
        return self._prepared[forward.index].operator

    def __repr__(self) -> str:
        plan = self.memory_plan
        return (
            f"<Executor {len(self._graph.steps)} steps on {self._ctx!r}, "
            f"{plan.internal_bytes:,} B planned in {len(plan.blocks)} blocks>"
        )


def _segment_vars(block: Any, plan: MemoryPlan) -> tuple[list[int], list[Any]]:
    """An arena block cut at every entry's first and last byte: the cut points and a var each.

    Two entries overlapping in bytes share the vars of their common segments,
    so a write into reused bytes waits for the earlier readers of exactly those.
    """
    bounds = sorted(
        {plan.entry(name).offset for name in block.entries}
        | {plan.entry(name).offset + plan.entry(name).nbytes for name in block.entries}
    )
    engine = _engine_mod.get()
    segment_vars = [engine.new_var(f"storage{block.id}@{start}") for start in bounds[:-1]]
    return bounds, segment_vars


def _unique(items: list[Any]) -> list[Any]:
    seen: set[int] = set()
    result = []
    for item in items:
        if id(item) not in seen:
            seen.add(id(item))
            result.append(item)
    return result
