"""The imperative invoke: every registered op as mx.nd.<Name>, one engine op per call."""

from __future__ import annotations

import importlib
import sys
import threading
import types

import numpy as np
import pytest

import mxnb as mx
from mxnb.base import MXNBError, OpError, ShapeError
from mxnb.engine.tracing import OpPush, Trace
from mxnb.operator import (
    Operator,
    OperatorProperty,
    OpReqType,
    Param,
    ResourceRequest,
    assign,
    register,
    registry,
)

# ``mxnb.ndarray.invoke`` is the function; the module that holds it:
invoke_module = importlib.import_module("mxnb.ndarray.invoke")


def test_every_registered_op_is_an_nd_function_with_a_generated_doc():
    names = registry.list_ops()
    assert names
    listed = set(dir(mx.nd))
    for name in names:
        function = getattr(mx.nd, name)
        assert callable(function) and name in listed
        assert function.__doc__
    assert "Parameters" in mx.nd.sum.__doc__
    with pytest.raises(AttributeError, match="no operator"):
        mx.nd.NoSuchOperator  # noqa: B018


# -- test operators --------------------------------------------------------------------------


@register("_test_split_two")
class SplitTwoProp(OperatorProperty):
    """Two visible outputs: the first and second halves of axis 0."""

    def list_outputs(self):
        return ["first", "second"]

    def infer_shape(self, in_shape):
        (shape,) = in_shape
        if shape[0] % 2:
            raise self.shape_error(f"data has shape {shape}; axis 0 must be even")
        half = (shape[0] // 2, *shape[1:])
        return [shape], [half, half], []

    def create_operator(self, ctx):
        class Split(Operator):
            def forward(self, ctx, in_data, req, out_data, aux):
                half = in_data[0].shape[0] // 2
                assign(out_data[0], req[0], in_data[0][:half])
                assign(out_data[1], req[1], in_data[0][half:])

        return Split()


@register("_test_running_mean")
class RunningMeanProp(OperatorProperty):
    """Identity that updates an auxiliary running mean in training (like BatchNorm's moving_mean)."""

    momentum = Param(float, default=0.5)

    def list_auxiliary_states(self):
        return ["moving_mean"]

    def infer_shape(self, in_shape):
        (shape,) = in_shape
        return [shape], [shape], [(shape[-1],)]

    def create_operator(self, ctx):
        prop = self

        class RunningMean(Operator):
            def forward(self, ctx, in_data, req, out_data, aux):
                assign(out_data[0], req[0], in_data[0])
                if ctx.is_train:
                    mean = in_data[0].reshape(-1, in_data[0].shape[-1]).mean(axis=0)
                    aux[0][...] = prop.momentum * aux[0] + (1 - prop.momentum) * mean

        return RunningMean()


@register("_test_concat_n")
class ConcatNProp(OperatorProperty):
    """Concatenate num_args arrays along axis 0 (a key_var_num_args op)."""

    key_var_num_args = "num_args"
    num_args = Param(int, low=1)

    def list_arguments(self):
        return [f"arg{i}" for i in range(self.num_args)]

    def infer_shape(self, in_shape):
        total = sum(shape[0] for shape in in_shape)
        return list(in_shape), [(total, *in_shape[0][1:])], []

    def create_operator(self, ctx):
        class ConcatN(Operator):
            def forward(self, ctx, in_data, req, out_data, aux):
                assign(out_data[0], req[0], ctx.xp.concatenate(in_data, axis=0))

        return ConcatN()


INFER_CALLS = []


@register("_test_scratch_scale")
class ScratchScaleProp(OperatorProperty):
    """out = data * scale, computed through the temp space; counts infer_shape calls."""

    scale = Param(float, default=2.0)

    def infer_shape(self, in_shape):
        INFER_CALLS.append(tuple(in_shape[0]))
        return super().infer_shape(in_shape)

    def forward_resource(self, in_shape):
        return [ResourceRequest.TEMP_SPACE]

    def create_operator(self, ctx):
        scale = self.scale

        class ScratchScale(Operator):
            def forward(self, ctx, in_data, req, out_data, aux):
                scratch = ctx.requested[0].get_space(in_data[0].shape, in_data[0].dtype)
                ctx.xp.multiply(in_data[0], scale, out=scratch)
                assign(out_data[0], req[0], scratch)

        return ScratchScale()


@register("_test_writes_input")
class WritesInputProp(OperatorProperty):
    """A buggy op: it writes into its const input."""

    def list_arguments(self):
        return ["lhs", "rhs"]

    def create_operator(self, ctx):
        class WritesInput(Operator):
            def forward(self, ctx, in_data, req, out_data, aux):
                in_data[1][...] = 0
                assign(out_data[0], req[0], in_data[0])

        return WritesInput()


@register("_test_inplace_ufunc_on_input")
class UfuncOnInputProp(OperatorProperty):
    """A buggy op: it updates its input with an in-place ufunc."""

    def create_operator(self, ctx):
        class UfuncOnInput(Operator):
            def forward(self, ctx, in_data, req, out_data, aux):
                data = in_data[0]
                data += 1
                assign(out_data[0], req[0], data)

        return UfuncOnInput()


# -- the contract --------------------------------------------------------------------------


def test_multi_output_ops_return_a_list(engine):
    first, second = mx.nd._test_split_two(mx.nd.array(np.arange(8, dtype=np.float32).reshape(4, 2)))
    assert first.asnumpy().tolist() == [[0, 1], [2, 3]]
    assert second.asnumpy().tolist() == [[4, 5], [6, 7]]
    with pytest.raises(ShapeError, match=r"_test_split_two.*\(3,\)"):
        mx.nd._test_split_two(mx.nd.ones(3))


def test_out_writes_into_existing_arrays(engine):
    a = mx.nd.array([1, 2, 3])
    target = mx.nd.zeros(3)
    assert mx.nd.elemwise_add(a, a, out=target) is target
    assert target.asnumpy().tolist() == [2, 4, 6]
    halves = [mx.nd.zeros(1), mx.nd.zeros(1)]
    mx.nd._test_split_two(mx.nd.array([5, 6]), out=halves)
    assert [h.asscalar() for h in halves] == [5, 6]
    total = mx.nd.zeros(1)
    mx.nd.sum(a, out=total)
    assert total.asscalar() == 6
    with pytest.raises(ShapeError, match=r"\(3,\).*\(2,\)"):
        mx.nd.elemwise_add(a, a, out=mx.nd.zeros(2))


def test_num_args_is_set_from_the_number_of_arrays(engine):
    parts = [mx.nd.ones((1, 2)) * i for i in range(3)]
    joined = mx.nd._test_concat_n(*parts)
    assert joined.asnumpy().tolist() == [[0, 0], [1, 1], [2, 2]]
    assert mx.nd._test_concat_n(parts).shape == (3, 2)  # a list of arrays works too
    assert mx.nd.add_n(*parts).asnumpy().tolist() == [[3, 3]]


def test_auxiliary_states_are_trailing_arrays_and_are_mutated(engine, monkeypatch):
    data = mx.nd.array([[1.0, 3.0], [3.0, 5.0]])
    moving = mx.nd.zeros(2)
    fake = types.SimpleNamespace(is_recording=lambda: False, is_training=lambda: True)
    monkeypatch.setattr(invoke_module, "_autograd", fake)
    out = mx.nd._test_running_mean(data, moving, momentum=0.5)
    assert out.asnumpy().tolist() == data.asnumpy().tolist()
    assert moving.asnumpy().tolist() == [1.0, 2.0]
    mx.nd._test_running_mean(data=data, moving_mean=moving)  # by name
    assert moving.asnumpy().tolist() == [1.5, 3.0]


def test_the_pushed_op_declares_inputs_outputs_aux_and_resources():
    data = mx.nd.array([[1.0, 2.0]])
    moving = mx.nd.zeros(2)
    temp = mx.resource.request(mx.cpu(), ResourceRequest.TEMP_SPACE)
    with Trace() as tr:
        out = mx.nd._test_running_mean(data, moving)
        scaled = mx.nd._test_scratch_scale(data, scale=3)
        mx.nd.waitall()
    pushes = {e.name: e for e in tr.events_of(OpPush)}
    running = pushes["_test_running_mean"]
    assert running.const_vars == (data._var.id,)
    assert running.mutate_vars == (out._var.id, moving._var.id)
    scratch = pushes["_test_scratch_scale"]
    assert scratch.const_vars == (data._var.id,)
    assert scratch.mutate_vars == (scaled._var.id, temp.var.id)
    assert scaled.asnumpy().tolist() == [[3.0, 6.0]]


def test_plans_are_cached_per_params_and_shapes():
    a = mx.nd.ones((2, 5))
    INFER_CALLS.clear()
    for _ in range(3):
        mx.nd._test_scratch_scale(a, scale=2.0)
    mx.nd._test_scratch_scale(mx.nd.ones((3,)), scale=2.0)
    mx.nd._test_scratch_scale(a, scale=4.0)
    assert INFER_CALLS == [(2, 5), (3,), (2, 5)]
    assert mx.nd._test_scratch_scale(a, scale=4.0).asnumpy().sum() == 40


def test_invoke_returns_all_outputs_and_accepts_a_property():
    a = mx.nd.array([1.0, 2.0, 3.0, 4.0])
    _first, second = mx.nd.invoke("_test_split_two", [a], {})
    assert second.asnumpy().tolist() == [3, 4]
    prop = registry.get("_plus_scalar").create_property(scalar=1)
    [out] = mx.nd.invoke(prop, [a], {})
    assert out.asnumpy().tolist() == [2, 3, 4, 5]


def test_bad_calls_name_the_op():
    a = mx.nd.ones(2)
    with pytest.raises(MXNBError, match="elemwise_add.*missing.*rhs"):
        mx.nd.elemwise_add(a)
    with pytest.raises(MXNBError, match="_plus_scalar.*unknown parameter"):
        mx.nd._plus_scalar(a, scalar=1, bogus=2)
    with pytest.raises(MXNBError, match="_test_running_mean.*unknown input 'nope'"):
        mx.nd._test_running_mean(a, nope=a)


def test_positional_parameters_follow_the_arrays():
    a = mx.nd.array([-2.0, 0.5, 3.0])
    assert mx.nd._plus_scalar(a, 1).asnumpy().tolist() == [-1, 1.5, 4]


def test_ops_without_inputs_take_ctx():
    out = mx.nd._random_uniform(shape=(2, 2), ctx=mx.cpu(2))
    assert out.context == mx.cpu(2) and out.shape == (2, 2)


# -- autograd hook ------------------------------------------------------------------------------


def test_recording_hands_the_op_to_autograd(monkeypatch):
    recorded = []
    fake = types.SimpleNamespace(
        is_recording=lambda: True,
        is_training=lambda: False,
        _record_op=lambda *args: recorded.append(args),
    )
    monkeypatch.setattr(invoke_module, "_autograd", fake)
    a = mx.nd.ones(2)
    b = a * 2
    [(prop, operator, inputs, outputs, aux, is_train)] = recorded
    assert prop.op_name == "_mul_scalar" and prop.scalar == 2
    assert inputs == [a] and outputs == [b] and aux == [] and is_train is False
    assert hasattr(operator, "forward")


def test_autograd_module_hooks_are_found_without_the_fake():
    module = sys.modules["mxnb.autograd"]
    recording, training = invoke_module._autograd_state()
    if hasattr(module, "is_recording"):
        assert recording == module.is_recording() and training == module.is_training()
    else:
        assert (recording, training) == (False, False)


# -- debug mode: const inputs are read-only -----------------------------------------------------


@pytest.fixture
def debug_mode():
    with mx.engine.debug():
        yield


def test_debug_mode_names_the_op_and_argument_a_kernel_wrote_into(debug_mode, engine):
    a, b = mx.nd.ones(2), mx.nd.ones(2)
    out = mx.nd._test_writes_input(a, b)
    with pytest.raises(OpError, match="_test_writes_input.*'rhs'"):
        out.asnumpy()
    assert b.asnumpy().tolist() == [1, 1]  # the write never happened


def test_debug_mode_catches_in_place_ufuncs_on_inputs(debug_mode):
    a = mx.nd.ones(2)
    with pytest.raises(OpError, match="_test_inplace_ufunc_on_input.*'data'"):
        mx.nd._test_inplace_ufunc_on_input(a).asnumpy()
    assert a.asnumpy().tolist() == [1, 1]


def test_debug_mode_leaves_correct_ops_alone(debug_mode):
    a = mx.nd.array([1.0, 2.0])
    assert (a * 2 + a).asnumpy().tolist() == [3, 6]
    assert mx.nd.sum(a).asscalar() == 3


@pytest.fixture
def no_debug_mode():
    previous = mx.engine.is_debug()  # whatever earlier tests left behind
    mx.engine.set_debug(False)
    yield
    mx.engine.set_debug(previous)


def test_without_debug_mode_inputs_are_plain_arrays(no_debug_mode):
    seen = []

    @register("_test_sees_input_type")
    class SeesProp(OperatorProperty):
        def create_operator(self, ctx):
            class Sees(Operator):
                def forward(self, ctx, in_data, req, out_data, aux):
                    seen.append(type(in_data[0]))
                    assign(out_data[0], OpReqType.WRITE_TO, in_data[0])

            return Sees()

    mx.nd._test_sees_input_type(mx.nd.ones(1)).wait_to_read()
    assert seen == [np.ndarray]


# -- asynchrony ------------------------------------------------------------------------------------


@register("_test_gate")
class GateProp(OperatorProperty):
    """Copies its input once the module-level GATE is set (blocks a worker until then)."""

    def create_operator(self, ctx):
        class Gate(Operator):
            def forward(self, ctx, in_data, req, out_data, aux):
                assert GATE.wait(timeout=30)
                assign(out_data[0], req[0], in_data[0])

        return Gate()


GATE = threading.Event()


@pytest.mark.timeout(60)
def test_ops_return_before_they_run_and_reads_wait(threaded):
    r"""
    gate(a) -> b      blocks until GATE is set; the push returns at once
       |
     b + 1 -> c       pushed behind it; c.asnumpy() waits for both
    """
    GATE.clear()
    a = mx.nd.array([1.0, 2.0])
    b = mx.nd._test_gate(a)
    c = b + 1
    assert not GATE.is_set()  # we got here although the gate op cannot have finished
    GATE.set()
    assert c.asnumpy().tolist() == [2, 3]


@register("_test_copyto_input")
class CopytoInputProp(OperatorProperty):
    """A buggy op that writes into its input with np.copyto (only numpy's read-only flag stops it)."""

    def create_operator(self, ctx):
        class CopytoInput(Operator):
            def forward(self, ctx, in_data, req, out_data, aux):
                np.copyto(in_data[0].view(np.ndarray), 0)
                assign(out_data[0], req[0], in_data[0])

        return CopytoInput()


def test_debug_mode_backstop_reports_the_op_and_its_const_arguments(debug_mode):
    a = mx.nd.ones(2)
    with pytest.raises(OpError, match="_test_copyto_input.*const input.*'data'"):
        mx.nd._test_copyto_input(a).asnumpy()
    assert a.asnumpy().tolist() == [1, 1]


def test_readonly_view_is_a_plain_array_for_everything_but_writes():
    base = np.arange(6.0).reshape(2, 3)
    view = mx.nd.readonly_view(base, "op", "x")
    assert type(view + 1) is np.ndarray and type(np.exp(view)) is np.ndarray
    assert float(view.sum()) == 15.0 and view[1].tolist() == [3.0, 4.0, 5.0]
    scratch = (view * 2).copy()
    scratch[0] = 0  # arrays computed from the view are writable
    with pytest.raises(OpError, match="op: kernel wrote into its const input 'x'"):
        view[1][0] = 5
    with pytest.raises(OpError, match="'x'"):
        np.add(view, 1, out=view)
    assert base[1, 0] == 3.0


def test_wrap_raw_shares_memory_with_a_fresh_var():
    buffer = np.zeros(4, np.float32)
    wrapped = mx.nd.NDArray._wrap_raw(buffer, mx.cpu())
    assert wrapped.handle is None and wrapped._raw() is buffer
    wrapped += 2
    wrapped.wait_to_read()
    assert buffer.tolist() == [2, 2, 2, 2]
    other = mx.nd.NDArray._wrap_raw(buffer, mx.cpu())
    assert other._var is not wrapped._var
