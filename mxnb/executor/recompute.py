"""Recomputation: drop forward values after the forward pass and compute them again in backward.

Idea (Chen, Xu, Zhang, Guestrin 2016, "Training Deep Nets with Sublinear
Memory Cost"; MXNet: the ``mirror`` function of ``nnvm::pass::Gradient`` and
``MXNET_BACKWARD_DO_MIRROR``): a forward value that backward reads must stay
alive from the forward pass to its backward reader, and those values are most
of a training plan.  A *recomputed* node's outputs are freed after their last
forward reader; when backward first needs one, a ``RECOMPUTE`` step runs the
node's forward again from its inputs — recomputed in turn when their own
nodes are recomputed, kept otherwise (the *checkpoints*).  A chain of
recomputed nodes between checkpoints is a *segment*: it is recomputed as a
whole when backward reaches it.

Rule — which nodes are recomputed (:func:`choose`):

* never a node producing a graph output, nor one drawing random numbers,
  except ``Dropout``, which is *replayed*: its kept mask is multiplied in
  again (``out = x * mask``), never redrawn;
* ``'mirror'`` (MXNet's rule): cheap ops — everything but Convolution,
  Deconvolution, FullyConnected, Concat, RNN, Embedding and dot products.
  MXNet never mirrors BatchNorm (its aux states would update twice) nor
  Dropout (its mask would be redrawn); here both are safe: a recomputed op
  updates scratch copies of its aux states, Dropout is replayed.  One more
  difference: a cheap op read by several nodes (ResNet's sums, an LSTM's
  cell state) is kept, since recomputing it would chain every earlier one;
* ``'sqrt'``: the mirror set, then the paper's greedy segmentation of the
  remaining nodes in topological order: a node is kept once the bytes of the
  nodes recomputed since the last checkpoint exceed ``total / sqrt(n)``
  (about ``sqrt(n)`` checkpoints); with ``threshold=B`` the same walk with
  ``B`` (how :mod:`.tradeoff` searches a byte budget);
* node attributes, as MXNet: ``__force_mirroring__='True'`` recomputes a node
  even with ``recompute=None`` (``'False'`` keeps it); when some nodes carry
  ``__mirror_stage__`` (MXNet's memonger), only those are checkpoint
  candidates and the other nodes are recomputed.

State kept (one ``RecomputePass`` per graph build):
    recompute    names of the forward steps chosen
    mirrors      forward step index -> the entries its recompute step wrote

Example::

    >>> import mxnb as mx
    >>> from mxnb.executor import zoo
    >>> plan = mx.executor.plan_memory(zoo.mlp(), {'data': (8, 784)}, recompute='mirror')
    >>> plan.recomputed_nodes, plan.recompute_steps
    (('relu1', 'relu2'), ('relu2_recompute', 'relu1_recompute'))
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterable
from typing import Any

from ..base import ParamError
from ..operator.base import OpReqType, ResourceRequest
from .gradient import GradientPass
from .plan_entries import RECOMPUTE_SUFFIX, EntryKind
from .steps import ExecGraph, Step, StepKind

__all__ = ["EXPENSIVE_OPS", "REPLAYED_OPS", "RecomputePass", "candidates", "choose", "node_flag"]

#: Ops 'mirror' keeps: recomputing them costs about as much as the layer itself.
EXPENSIVE_OPS = frozenset(
    {
        "Convolution",
        "Deconvolution",
        "FullyConnected",
        "Concat",
        "RNN",
        "Embedding",
        "dot",
        "batch_dot",
    }
)
#: Random ops recomputed by replaying what their forward kept: op -> the kept output.
REPLAYED_OPS = {"Dropout": 1}


class RecomputePass(GradientPass):
    """The gradient pass, reading recomputed copies of the values of the chosen nodes."""

    def __init__(
        self,
        builder: Any,
        nodes: list[Any],
        heads: list[Any],
        entry_id: dict[Any, int],
        arg_entries: dict[str, int],
        req: dict[str, str],
        recompute: frozenset[str],
    ) -> None:
        super().__init__(builder, nodes, heads, entry_id, arg_entries, req)
        self.recompute = recompute
        self.mirrors: dict[int, list[int]] = {}

    def recomputed_nodes(self) -> list[str]:
        """Names of the forward steps recomputed, in forward order."""
        return [self.builder.steps[index].name for index in sorted(self.mirrors)]

    def forward_value(self, entry: int) -> int:
        """The recomputed copy of ``entry`` when its node is recomputed (made on first use)."""
        step = self._recomputed_writer(entry)
        if step is None:
            return entry
        if step.index not in self.mirrors:
            self._mirror_segment(step)
        return self.mirrors[step.index][self.builder.entries[entry].output_index]

    def _recomputed_writer(self, entry: int) -> Step | None:
        record = self.builder.entries[entry]
        if record.kind is not EntryKind.FORWARD:
            return None
        step = self.builder.steps[record.writer]
        return step if step.name in self.recompute else None

    def _mirror_segment(self, last: Step) -> None:
        """Recompute ``last`` and every recomputed node it needs, producers first (iterative)."""
        stack: list[tuple[Step, bool]] = [(last, False)]
        while stack:
            step, inputs_ready = stack.pop()
            if step.index in self.mirrors:
                continue
            if inputs_ready:
                self._add_recompute_step(step)
                continue
            stack.append((step, True))
            for entry in step.in_data:
                producer = self._recomputed_writer(entry) if entry is not None else None
                if producer is not None and producer.index not in self.mirrors:
                    stack.append((producer, False))

    def _add_recompute_step(self, forward: Step) -> None:
        builder = self.builder
        prop = forward.prop
        assert prop is not None
        kept = REPLAYED_OPS.get(prop.op_name)
        in_data = [self.forward_value(entry) for entry in forward.in_data if entry is not None]
        outputs: list[int] = []
        for index, original in enumerate(forward.out_data):
            assert original is not None
            if index == kept:
                outputs.append(original)  # the mask is kept, never drawn again
                continue
            record = builder.entries[original]
            outputs.append(
                builder.new_entry(
                    f"{record.name}{RECOMPUTE_SUFFIX}",
                    EntryKind.RECOMPUTED,
                    record.node,
                    record.op,
                    record.output_index,
                    record.shape,
                    record.dtype,
                    recompute_of=original,
                )
            )
        step = Step(0, builder.step_name(f"{forward.name}{RECOMPUTE_SUFFIX}"), StepKind.RECOMPUTE,
                    prop.op_name, prop, forward.node)  # fmt: skip
        step.in_data = list(in_data)
        step.out_data = list(outputs)
        step.aux = list(forward.aux)
        step.req = [
            OpReqType.NULL if i == kept else OpReqType.WRITE_TO for i in range(len(outputs))
        ]
        step.inputs = [*in_data, *forward.aux] + ([outputs[kept]] if kept is not None else [])
        step.outputs = [entry for i, entry in enumerate(outputs) if i != kept]
        positions = {entry: i for i, entry in enumerate(forward.in_data)}
        step.inplace_options = [
            (in_data[positions[source]], outputs[forward.out_data.index(target)])
            for source, target in forward.inplace_options
            if forward.out_data.index(target) != kept
        ]
        builder.add_step(step)
        self.mirrors[forward.index] = outputs


# -- choosing what to recompute ------------------------------------------------------------


def node_flag(node: Any, key: str) -> bool | None:
    """A node's ``True`` / ``False`` attribute ``key`` (``__force_mirroring__``), or None when unset."""
    value = node.attrs.get(key) if node is not None else None
    if value is None:
        return None
    return str(value).strip().lower() in ("true", "1", "yes")


def candidates(graph: ExecGraph) -> list[Step]:
    """Forward steps that may be recomputed, in forward order (see the module's rule)."""
    entries = graph.entries
    result = []
    for step in graph.steps[: graph.num_forward_steps]:
        prop = step.prop
        if prop is None or any(entries[e].is_output for e in step.outputs):
            continue
        shapes = [entries[e].shape for e in step.in_data if e is not None]
        random = ResourceRequest.RANDOM in (prop.forward_resource(shapes) or [])
        if random and prop.op_name not in REPLAYED_OPS:
            continue
        result.append(step)
    return result


def _forward_consumers(graph: ExecGraph, step: Step) -> int:
    readers: set[int] = set()
    for entry in step.outputs:
        readers.update(r for r in graph.entries[entry].readers if r < graph.num_forward_steps)
    return len(readers)


def _segment_walk(steps: Iterable[Step], graph: ExecGraph, threshold: float) -> set[str]:
    """The paper's greedy walk: recompute until the bytes since the last checkpoint exceed it."""
    chosen = set()
    since_checkpoint = 0
    for step in steps:
        since_checkpoint += sum(graph.entries[e].nbytes for e in step.outputs)
        if since_checkpoint > threshold:
            since_checkpoint = 0  # a checkpoint: kept
        else:
            chosen.add(step.name)
    return chosen


def choose(graph: ExecGraph, recompute: Any, threshold: float | None = None) -> frozenset[str]:
    """The forward step names to recompute for ``recompute`` (None, 'mirror', 'sqrt').

    ``threshold`` (bytes) replaces sqrt's segment size.  Returns an empty set
    for inference graphs.  The environment variable ``MXNB_BACKWARD_DO_MIRROR=1``
    (MXNet: ``MXNET_BACKWARD_DO_MIRROR``) makes ``None`` mean ``'mirror'``.
    """
    if recompute is None and os.environ.get("MXNB_BACKWARD_DO_MIRROR", "0") not in ("", "0"):
        recompute = "mirror"
    if recompute not in (None, "mirror", "sqrt"):
        raise ParamError(
            f"recompute must be None, 'mirror', 'sqrt' or a byte budget (int); got {recompute!r}"
        )
    if len(graph.steps) == graph.num_forward_steps:
        return frozenset()
    allowed = candidates(graph)
    forced = {s.name: node_flag(s.node, "__force_mirroring__") for s in allowed}
    chosen = {name for name, value in forced.items() if value}
    if recompute is None:
        return frozenset(chosen)
    free = [s for s in allowed if forced[s.name] is None]
    staged = [s for s in free if node_flag(s.node, "__mirror_stage__") is not None]
    if staged and recompute == "sqrt":
        chain = staged  # memonger: only stage nodes may be checkpoints
        chosen.update(s.name for s in free if s not in staged)
    else:
        cheap = [
            s
            for s in free
            if s.prop is not None
            and s.prop.op_name not in EXPENSIVE_OPS
            and _forward_consumers(graph, s) <= 1
        ]
        chosen.update(s.name for s in cheap)
        chain = [s for s in free if s.name not in chosen]
    if recompute == "sqrt" and chain:
        if threshold is None:
            total = sum(graph.entries[e].nbytes for s in chain for e in s.outputs)
            threshold = total / math.sqrt(len(chain))
        chosen |= _segment_walk(chain, graph, threshold)
    return frozenset(chosen)
