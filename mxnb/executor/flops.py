"""Floating-point operations per operator: what recomputation costs, as a property of the plan.

Idea: recomputation trades memory for compute.  To state the trade as a
number that does not depend on the machine, every forward op is given a FLOP
count from its shapes and parameters (multiply and add counted separately),
and a plan reports ``recompute_flops / forward_flops``.

Rule (per op type; the rest count one FLOP per output element, so copies and
reshapes are cheap but not free):
    Convolution / Deconvolution   2 * output elements * (input channels / groups) * kernel area
    FullyConnected                2 * batch * inputs * hidden (+ batch * hidden with bias)
    BatchNorm                     8 per element (statistics, then scale and shift)
    Pooling                       kernel area per output element
    Activation, LeakyReLU         1 per element (relu); 4 (sigmoid, tanh, softrelu)
    SoftmaxOutput, softmax        3 per element

State kept: none (pure functions of a step and the graph's entries).

Example::

    >>> import mxnb as mx
    >>> from mxnb.executor.graph import build_graph
    >>> net = mx.sym.FullyConnected(mx.sym.Variable('x'), num_hidden=3, name='fc')
    >>> graph = build_graph(net, {'x': (2, 4)}, grad_req='null')
    >>> step_flops(graph.steps[0], graph.entries)   # 2*2*4*3 multiply-adds + 2*3 bias adds
    54
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

__all__ = ["step_flops"]

_ACTIVATION_COST = {"relu": 1, "sigmoid": 4, "tanh": 4, "softrelu": 4, "softsign": 3}


def _size(shape: Sequence[int]) -> int:
    return math.prod(int(dim) for dim in shape)


def step_flops(step: Any, entries: Sequence[Any]) -> int:
    """FLOPs of one forward (or recompute) step of an ExecGraph; 0 for other steps."""
    if step.prop is None:
        return 0
    prop = step.prop
    inputs = [entries[e].shape for e in step.in_data if e is not None]
    outputs = [entries[e].shape for e in step.out_data if e is not None]
    out_elements = _size(outputs[0]) if outputs else 0
    name = prop.op_name
    if name in ("Convolution", "Deconvolution"):
        kernel = _size(prop.kernel)
        groups = int(getattr(prop, "num_group", 1) or 1)
        if name == "Convolution":
            return 2 * out_elements * (inputs[0][1] // groups) * kernel
        return 2 * _size(inputs[0]) * (outputs[0][1] // groups) * kernel
    if name == "FullyConnected":
        batch = inputs[0][0]
        features = _size(inputs[0][1:]) if getattr(prop, "flatten", True) else inputs[0][-1]
        hidden = int(prop.num_hidden)
        rows = batch if getattr(prop, "flatten", True) else _size(inputs[0][:-1])
        bias = 0 if getattr(prop, "no_bias", False) else rows * hidden
        return 2 * rows * features * hidden + bias
    if name == "BatchNorm":
        return 8 * out_elements
    if name == "Pooling":
        if getattr(prop, "global_pool", False):
            return _size(inputs[0])
        return out_elements * _size(prop.kernel)
    if name in ("Activation", "LeakyReLU"):
        return _ACTIVATION_COST.get(getattr(prop, "act_type", "relu"), 1) * out_elements
    if name in ("SoftmaxOutput", "softmax", "log_softmax", "SoftmaxActivation"):
        return 3 * out_elements
    return out_elements
