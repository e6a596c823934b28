"""Small operator properties registered for the symbol tests.

They are independent of the operator library, so the symbol layer is specified
on its own: a dense layer (weight and bias filled by backward shape inference),
a normalisation with aux states and hidden outputs, an activation with an enum
parameter, and a variable-arity concat.
"""

from __future__ import annotations

import numpy as np
import pytest

from mxnb.operator import OperatorProperty, Param, Shape, register
from mxnb.symbol.scope import NameManager


@register("TestDense")
class TestDenseProp(OperatorProperty):
    """y = flatten(x) W^T + b."""

    num_hidden = Param(int, low=1, doc="units")
    no_bias = Param(bool, default=False, doc="no bias")

    def list_arguments(self):
        return ["data", "weight"] if self.no_bias else ["data", "weight", "bias"]

    def infer_shape(self, in_shape):
        data = in_shape[0]
        if data is None:
            return None
        weight = (self.num_hidden, int(np.prod(data[1:])))
        if in_shape[1] is not None and tuple(in_shape[1]) != weight:
            raise self.shape_error(
                f"weight has shape {tuple(in_shape[1])} but data {tuple(data)} gives "
                f"{weight[1]} input features; pass weight of shape {weight}"
            )
        shapes = [tuple(data), weight] + ([] if self.no_bias else [(self.num_hidden,)])
        return shapes, [(data[0], self.num_hidden)], []


@register("TestNorm")
class TestNormProp(OperatorProperty):
    """Batch-norm-like: aux moving stats, two hidden outputs."""

    eps = Param(float, default=1e-3, doc="epsilon")

    def list_arguments(self):
        return ["data", "gamma", "beta"]

    def list_outputs(self):
        return ["output", "mean", "var"]

    def list_auxiliary_states(self):
        return ["moving_mean", "moving_var"]

    def num_visible_outputs(self):
        return 1

    def infer_shape(self, in_shape):
        if in_shape[0] is None:
            return None
        data = tuple(in_shape[0])
        channel = (data[1],)
        return [data, channel, channel], [data, channel, channel], [channel, channel]


@register("TestAct")
class TestActProp(OperatorProperty):
    """Elementwise activation."""

    act_type = Param(str, choices=("relu", "tanh", "sigmoid"), doc="activation")


@register("TestConcat")
class TestConcatProp(OperatorProperty):
    """Concatenate ``num_args`` inputs along ``dim``."""

    key_var_num_args = "num_args"
    num_args = Param(int, low=1, doc="number of inputs")
    dim = Param(int, default=1, doc="axis")

    def list_arguments(self):
        return [f"arg{i}" for i in range(self.num_args)]

    def infer_shape(self, in_shape):
        if any(shape is None for shape in in_shape):
            return None
        out = list(in_shape[0])
        out[self.dim] = sum(shape[self.dim] for shape in in_shape)
        return [tuple(s) for s in in_shape], [tuple(out)], []


@register("TestConv")
class TestConvProp(OperatorProperty):
    """2-D convolution (NCHW) shapes only."""

    kernel = Param(Shape, doc="kernel")
    num_filter = Param(int, low=1, doc="filters")
    stride = Param(Shape, default=Shape((1, 1)), doc="stride")
    pad = Param(Shape, default=Shape((0, 0)), doc="pad")

    def list_arguments(self):
        return ["data", "weight", "bias"]

    def infer_shape(self, in_shape):
        data = in_shape[0]
        if data is None:
            return None
        n, c, h, w = data
        kh, kw = self.kernel
        oh = (h + 2 * self.pad[0] - kh) // self.stride[0] + 1
        ow = (w + 2 * self.pad[1] - kw) // self.stride[1] + 1
        weight = (self.num_filter, c, kh, kw)
        return [tuple(data), weight, (self.num_filter,)], [(n, self.num_filter, oh, ow)], []


@pytest.fixture(autouse=True)
def fresh_names():
    """Every test starts with fresh automatic-name counters."""
    with NameManager():
        yield
