"""No silently wrong result from careless parameters, shapes, sources and custom ops.

Specification:
* every operator parameter with a meaningful range declares it, and a value
  outside it is a :class:`ParamError` naming the op, the parameter, the value
  and the range (a negative pad, a zero kernel, stride or dilation);
* every shape is a tuple of non-negative ints: ``2.5`` is never truncated to 2;
* ``nd.array`` refuses ``None``, complex, string and ragged sources;
* a CustomOp whose forward leaves an output unwritten, or rebinds
  ``out_data[i]`` instead of writing into it, is an error telling the user to
  use ``self.assign``; ``infer_shape`` answering ``None`` or the wrong number
  of shapes is an error naming the op type;
* an operator given too many inputs names the inputs it takes.
"""

from __future__ import annotations

import numpy as np
import pytest

import mxnb as mx
from mxnb.base import DTypeError, MXNBError, OpError, ParamError, ShapeError

DATA = mx.nd.ones((1, 1, 5, 5))
WEIGHT = mx.nd.ones((1, 1, 3, 3))


@pytest.mark.parametrize(
    ("param", "value", "message"),
    [
        ("pad", (-1, 0), r"Convolution parameter 'pad': \(-1, 0\) is below the minimum 0"),
        ("dilate", (0, 0), r"Convolution parameter 'dilate': \(0, 0\) is below the minimum 1"),
        ("stride", (0, 0), r"Convolution parameter 'stride': \(0, 0\) is below the minimum 1"),
        ("kernel", (0, 0), r"Convolution parameter 'kernel': \(0, 0\) is below the minimum 1"),
        ("kernel", (2.5, 3), r"Convolution parameter 'kernel': cannot read \(2.5, 3\)"),
    ],
)
def test_convolution_parameters_out_of_range_are_param_errors(param, value, message):
    settings = {"kernel": (3, 3), "num_filter": 1, "no_bias": True, param: value}
    with pytest.raises(ParamError, match=message):
        mx.nd.Convolution(DATA, WEIGHT, **settings)


@pytest.mark.parametrize(
    ("param", "value"), [("pad", (-1, -1)), ("stride", (0, 0)), ("kernel", (0, 2))]
)
def test_pooling_parameters_out_of_range_are_param_errors(param, value):
    settings = {"kernel": (2, 2), "pool_type": "max", param: value}
    with pytest.raises(ParamError, match=f"Pooling parameter '{param}'"):
        mx.nd.Pooling(DATA, **settings)


def test_symbolic_parameters_are_checked_when_the_symbol_is_made():
    with pytest.raises(ParamError, match="'stride'"):
        mx.sym.Convolution(mx.sym.var("x"), kernel=(3, 3), num_filter=2, stride=(0, 1))


def test_a_nan_parameter_with_a_range_is_refused():
    with pytest.raises(ParamError, match="'p'"):
        mx.nd.Dropout(mx.nd.ones((2,)), p=float("nan"))


@pytest.mark.parametrize(
    "shape", [(2.5, 3), (2, -1), ("2", 3), (True, 2), 2.0, None, "big", ([2], 3)]
)
def test_creation_shapes_must_be_non_negative_ints(shape):
    with pytest.raises(ShapeError, match="shape"):
        mx.nd.zeros(shape)


def test_numpy_ints_are_shapes():
    assert mx.nd.zeros((np.int64(2), np.int32(3))).shape == (2, 3)


@pytest.mark.parametrize("shape", [(4, 2.5), (4, -2), "x"])
def test_infer_shape_arguments_must_be_shapes(shape):
    net = mx.sym.FullyConnected(mx.sym.var("x"), num_hidden=3)
    with pytest.raises(ShapeError, match="infer_shape: x"):
        net.infer_shape(x=shape)


@pytest.mark.parametrize(
    ("source", "message"),
    [
        (None, "None"),
        ([1 + 2j, 3], "complex"),
        (np.ones(3, dtype=np.complex64), "complex"),
        (["1", "2"], "not numbers"),
        ([[1, 2], [3]], "not rectangular"),
    ],
)
def test_array_refuses_sources_numpy_would_misread(source, message):
    with pytest.raises(DTypeError, match=message):
        mx.nd.array(source)


class _Forgetful(mx.operator.CustomOp):
    def forward(self, is_train, req, in_data, out_data, aux):
        pass  # never writes out_data[0]


class _Rebinding(mx.operator.CustomOp):
    def forward(self, is_train, req, in_data, out_data, aux):
        out_data[0] = in_data[0] * 2  # rebinds the list element; the buffer stays stale


class _Honest(mx.operator.CustomOp):
    def forward(self, is_train, req, in_data, out_data, aux):
        self.assign(out_data[0], req[0], in_data[0] * 2)

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        pass  # leaves in_grad[0] unwritten: it becomes zeros, not stale memory


NOT_WRITING = [
    (_Forgetful, r"never wrote out_data\[0\].*self.assign"),
    (_Rebinding, r"replaced out_data\[0\].*self.assign"),
]


def _prop(op_class, shape_answer=None):
    class Prop(mx.operator.CustomOpProp):
        def list_arguments(self):
            return ["data"]

        def infer_shape(self, in_shape):
            if shape_answer is not None:
                return shape_answer(in_shape)
            return in_shape, [in_shape[0]], []

        def create_operator(self, ctx, shapes, dtypes):
            return op_class()

    return Prop


@pytest.mark.parametrize(("op_class", "message"), NOT_WRITING)
def test_custom_forward_that_does_not_write_its_output_is_an_error(op_class, message):
    mx.operator.register(f"careless_{op_class.__name__}")(_prop(op_class))
    with pytest.raises(OpError, match=message):
        mx.nd.Custom(mx.nd.ones((3,)), op_type=f"careless_{op_class.__name__}").asnumpy()


def test_custom_backward_leaving_a_gradient_unwritten_gives_zeros():
    mx.operator.register("careless_honest")(_prop(_Honest))
    x = mx.nd.ones((3,))
    pool_dirt = mx.nd.full((3,), 7.0)  # make stale pool memory likely
    del pool_dirt
    x.attach_grad()
    with mx.autograd.record():
        y = mx.nd.Custom(x, op_type="careless_honest")
    y.backward()
    assert x.grad.asnumpy().tolist() == [0.0, 0.0, 0.0]


@pytest.mark.parametrize(
    ("answer", "message"),
    [
        (lambda in_shape: None, "must return"),
        (lambda in_shape: (in_shape, [in_shape[0], in_shape[0]], []), "2 output shapes for 1"),
        (lambda in_shape: ([], [in_shape[0]], []), "0 input shapes for 1"),
        (lambda in_shape: (in_shape, [[3.5]], []), "not an int"),
    ],
)
def test_custom_infer_shape_answers_are_checked(answer, message):
    mx.operator.register("careless_shape")(_prop(_Honest, answer))
    with pytest.raises(MXNBError, match=f"Custom\\(careless_shape\\).*{message}"):
        mx.nd.Custom(mx.nd.ones((3,)), op_type="careless_shape")


def test_too_many_inputs_names_the_inputs_the_op_takes():
    a, w, b = mx.nd.ones((2, 3)), mx.nd.ones((4, 3)), mx.nd.ones((4,))
    with pytest.raises(MXNBError, match=r"takes 3 input array\(s\) \(data, weight, bias\), got 4"):
        mx.nd.FullyConnected(a, w, b, b, num_hidden=4)


@pytest.mark.parametrize(("op_class", "message"), NOT_WRITING)
def test_custom_forward_that_does_not_write_is_an_error_in_an_executor_too(op_class, message):
    mx.operator.register(f"careless_sym_{op_class.__name__}")(_prop(op_class))
    net = mx.sym.Custom(mx.sym.var("data"), op_type=f"careless_sym_{op_class.__name__}")
    exe = net.simple_bind(mx.cpu(), data=(3,))
    exe.forward(data=mx.nd.ones((3,)))
    with pytest.raises(OpError, match=message):
        exe.outputs[0].asnumpy()


# -- shapes are never truncated, wherever they come from --------------------------------------


@pytest.mark.parametrize("shape", [(4, 2.5), (4, -2), ("4",)])
def test_bind_shapes_must_be_shapes(shape):
    net = mx.sym.var("x") + 1
    with pytest.raises(ShapeError, match="shape passed for 'x'"):
        net.simple_bind(mx.cpu(), x=shape)


@pytest.mark.parametrize("shape", [(2.5,), (-1, 3), "ab"])
def test_a_variables_declared_shape_must_be_a_shape(shape):
    with pytest.raises(ShapeError, match="Variable 'x': shape"):
        mx.sym.Variable("x", shape=shape)


@pytest.mark.parametrize("shape", [(2.5, 10), (np.float32(25),), (True, 25)])
def test_reshape_refuses_dimensions_that_are_not_ints(shape):
    with pytest.raises(ShapeError, match="not an int"):
        mx.nd.ones((5, 5)).reshape(shape)


def test_reshape_codes_still_work():
    assert mx.nd.ones((2, 3, 4)).reshape((0, -1)).shape == (2, 12)
    assert mx.nd.ones((2, 3)).reshape(np.int64(6)).shape == (6,)


def test_an_operator_answering_a_float_shape_is_an_error_naming_it():
    def copy(src, env, ret, req, run_ctx):
        mx.operator.assign(ret, req, src)

    builder = mx.operator.simple_op("careless_half_shape").set_function(copy)
    builder.set_shape_function(lambda shape, env: tuple(dim / 2 for dim in shape))
    net = mx.sym.careless_half_shape(mx.sym.var("x"), name="halve")
    with pytest.raises(ShapeError, match=r"careless_half_shape.*answer \(2.0,\).*not an int"):
        net.infer_shape(x=(4,))
    with pytest.raises(ShapeError, match=r"careless_half_shape.*answer \(2.0,\).*not an int"):
        mx.nd.careless_half_shape(mx.nd.ones((4,)))


# -- values numpy would quietly turn into something else -------------------------------------


@pytest.mark.parametrize(
    ("value", "message"), [(None, "None"), (1j, "complex"), ("ab", "not numbers"), ([1, [2]], "")]
)
def test_assigned_and_filled_values_must_be_real_numbers(value, message):
    target = mx.nd.zeros((2,))
    with pytest.raises(DTypeError, match=f"__setitem__: value.*{message}"):
        target[:] = value
    with pytest.raises(DTypeError, match=f"full: val.*{message}"):
        mx.nd.full((2,), value)
    assert target.asnumpy().tolist() == [0.0, 0.0]


def test_arithmetic_with_a_complex_scalar_is_an_error():
    with pytest.raises(DTypeError, match="complex"):
        mx.nd.ones((2,)) + 1j
    with pytest.raises(DTypeError, match="complex"):
        np.complex64(1j) * mx.nd.ones((2,))


# -- parameters whose bad values used to compute something ------------------------------------


@pytest.mark.parametrize("op", ["softmax", "log_softmax"])
def test_a_zero_temperature_is_refused_not_taken_as_one(op):
    with pytest.raises(ParamError, match=f"{op} parameter 'temperature': 0"):
        getattr(mx.nd, op)(mx.nd.ones((2, 3)), temperature=0)
    twice = getattr(mx.nd, op)(mx.nd.array([[0.0, 2.0]]), temperature=2.0).asnumpy()
    plain = getattr(mx.nd, op)(mx.nd.array([[0.0, 1.0]])).asnumpy()
    np.testing.assert_allclose(twice, plain, rtol=1e-6)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ((0, 5, 0), "step must not be 0"),
        ((0, float("inf")), "stop must be a finite"),
        ((float("nan"), 3), "start must be a finite"),
    ],
)
def test_arange_refuses_ranges_that_never_end(args, message):
    with pytest.raises(ParamError, match=message):
        mx.nd.arange(*args)


def test_dropout_axes_are_axes_of_the_input():
    with pytest.raises(ParamError, match="Dropout: axes=5 is out of range"):
        mx.nd.Dropout(mx.nd.ones((2, 3)), p=0.5, axes=(5,), mode="always")
    with pytest.raises(ParamError, match="Dropout: axes=5"):
        mx.sym.Dropout(mx.sym.var("x"), p=0.5, axes=(5,)).infer_shape(x=(2, 3))


@pytest.mark.parametrize(("param", "value"), [("eps", -1.0), ("momentum", 2.0)])
def test_batchnorm_statistics_parameters_have_ranges(param, value):
    x, c = mx.nd.ones((1, 2, 3, 3)), mx.nd.ones((2,))
    with pytest.raises(ParamError, match=f"BatchNorm parameter '{param}'"):
        mx.nd.BatchNorm(x, c, c, c, c, **{param: value})
