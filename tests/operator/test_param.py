"""Typed operator parameters."""

import pytest

from mxnb.base import ParamError
from mxnb.operator import OperatorProperty, Param, Shape


class _ConvLike(OperatorProperty):
    type_string = "ConvLike"
    kernel = Param(Shape, doc="kernel size")
    num_filter = Param(int, low=1, doc="number of filters")
    no_bias = Param(bool, default=False)
    layout = Param(str, default=None, optional=True, choices=("NCHW", "NHWC"))
    pool_type = Param(str, default="max", choices=("max", "avg", "sum"))


def test_values_and_mxnet_strings_parse_alike():
    from_values = _ConvLike(kernel=(3, 3), num_filter=8, no_bias=True)
    from_strings = _ConvLike(kernel="(3,3)", num_filter="8", no_bias="True", layout="None")
    assert from_values.get_params() == from_strings.get_params()
    assert from_strings.get_params_str()["kernel"] == "(3, 3)"


def test_errors_name_the_op_the_field_and_what_is_allowed():
    with pytest.raises(
        ParamError, match="ConvLike parameter 'num_filter': 0 is below the minimum 1"
    ):
        _ConvLike(kernel=(3, 3), num_filter=0)
    with pytest.raises(ParamError, match="'pool_type': 'median' is not one of 'max', 'avg', 'sum'"):
        _ConvLike(kernel=(3, 3), num_filter=1, pool_type="median")
    with pytest.raises(ParamError, match="required parameter 'kernel' is missing"):
        _ConvLike(num_filter=1)
    with pytest.raises(ParamError, match="unknown parameter 'kernal'"):
        _ConvLike(kernal=(3, 3), num_filter=1)
    with pytest.raises(ParamError, match="cannot read 'yes please'"):
        _ConvLike(kernel=(3, 3), num_filter=1, no_bias="yes please")
