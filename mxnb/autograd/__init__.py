"""Imperative autograd: record ``mx.nd`` ops, then push their backward through the engine.

Idea (MXNet: ``Imperative::RecordOp`` / ``Imperative::Backward`` in
src/imperative/imperative.cc): inside ``with autograd.record():`` every
operator the imperative invoke pushes is also *recorded*: each output NDArray
gets an entry pointing at a node holding the operator, its property and the
arrays its backward declared it needs (``declare_backward_dependency``; the
rest is not kept, exactly as the executor's planner frees it).  Arrays marked
with ``attach_grad`` are the leaves.  ``backward(heads)`` walks the nodes
reachable from the heads in reverse topological order and pushes **one engine
op per node** that calls ``operator.backward`` on the raw arrays — the same
operator definitions (library ops, SimpleOps, Custom ops) the forward used.

Rules:
    * a backward op reads (const vars) the saved inputs / outputs / aux
      states and the gradient buffers flowing into it, and writes (mutate
      vars) the input-gradient buffers and its resources' vars; the engine
      orders everything else;
    * an entry used more than once gets one buffer per use; the consumer sums
      them inside its own backward op (a leaf: one final accumulate op);
    * a leaf used once is written directly with its ``grad_req``:
      ``'write'`` → WRITE_TO, ``'add'`` → ADD_TO; ``'null'`` leaves are skipped;
    * loss ops (``SoftmaxOutput``, ``MakeLoss`` …) do not declare out_grad, so
      the head gradient is never handed to them;
    * without ``retain_graph`` the nodes are freed after backward is pushed:
      a second backward through them raises, naming the op;
    * in engine debug mode the arrays a backward kernel only reads are handed
      over read-only, so a kernel scribbling on its inputs fails by name.

:class:`Function` records NDArray-coded functions (Python forward / backward)
as one node, like MXNet's ``autograd.Function``; :func:`get_symbol` turns a
recorded history into a Symbol (to draw, inspect or bind it).

The chapter in four parts: :mod:`.recording` (the thread's flags),
:mod:`.tape` (what a recorded op keeps, the marked variables),
:mod:`.backward` (the pass that pushes one op per node) and :mod:`.function`
(user-defined functions).

State kept:
    _state.recording / _state.training   thread-local flags (MXNet: thread-local too)
    NDArray._ag                          the array's entry: a leaf (_Leaf) or (node, index)
    _Node                                prop, operator, inputs' entries, saved arrays, metadata

Example::

    >>> import mxnb as mx
    >>> x = mx.nd.array([1.0, 2.0, 3.0]); x.attach_grad()
    >>> with mx.autograd.record():
    ...     y = x * x + x
    >>> y.backward()
    >>> x.grad.asnumpy()
    array([3., 5., 7.], dtype=float32)
"""

from __future__ import annotations

from .backward import _Backward as _Backward
from .backward import _free as _free
from .backward import backward, get_symbol, grad
from .function import Function
from .recording import (
    AutogradError,
    is_recording,
    is_training,
    pause,
    predict_mode,
    record,
    set_recording,
    set_training,
    train_mode,
)
from .tape import _entry_of as _entry_of
from .tape import _record_op as _record_op
from .tape import attach_grad as attach_grad
from .tape import detach, get_grad, mark_variables

__all__ = [
    "AutogradError",
    "Function",
    "backward",
    "detach",
    "get_grad",
    "get_symbol",
    "grad",
    "is_recording",
    "is_training",
    "mark_variables",
    "pause",
    "predict_mode",
    "record",
    "set_recording",
    "set_training",
    "train_mode",
]
