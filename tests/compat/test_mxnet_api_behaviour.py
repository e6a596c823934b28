"""MXNet 1.x API behaviour that MXNet's own unit tests rely on (issue 21, third pass).

Each test states the MXNet 1.9.1 behaviour it checks; the values were confirmed
with MXNet 1.9.1 itself.
"""

from __future__ import annotations

import numpy as np
import pytest

import mxnb as mx
from mxnb import test_utils as tu


@pytest.mark.parametrize("req", ["write", "add", "null"])
def test_check_symbolic_backward_grad_req_on_automatic_data_name(req):
    # mx.sym.softmin(axis=0) has no data given: its input is the variable 'softmin0_data'.
    # 'write' gives the gradient, 'add' adds it to the start value, 'null' leaves the start value.
    with mx.name.NameManager():
        sym = mx.sym.square()
    assert sym.list_arguments() == ["square0_data"]
    data = np.array([[1.0, -2.0]])
    grads = tu.check_symbolic_backward(sym, [data], [np.ones_like(data)], [2 * data], grad_req=req)
    assert grads["square0_data"].shape == (1, 2)
    if req == "write":
        assert grads["square0_data"].tolist() == [[2.0, -4.0]]


def test_check_symbolic_backward_grad_req_per_argument_and_wrong_values():
    a, b = mx.sym.Variable("a"), mx.sym.Variable("b")
    ones = np.ones((2,))
    grads = tu.check_symbolic_backward(
        a * b, [ones * 2, ones * 3], [ones], [ones * 3, ones * 2], grad_req={"a": "write"}
    )
    assert grads["a"].tolist() == [3.0, 3.0]
    with pytest.raises(AssertionError):  # 'write' must give b's gradient, 2, not 4
        tu.check_symbolic_backward(
            a * b, [ones * 2, ones * 3], [ones], {"b": ones * 4}, grad_req="write"
        )
    with pytest.raises(mx.MXNetError, match="grad_req"):
        tu.check_symbolic_backward(a * b, [ones, ones], [ones], [ones, ones], grad_req="sum")


def test_positional_values_after_the_inputs_are_parameters_in_declaration_order():
    # MXNet 1.9.1: mx.nd.depth_to_space(x, 2) and mx.sym.Activation(x, 'relu').
    x = mx.nd.array(np.arange(8.0).reshape(1, 4, 1, 2))
    assert mx.nd.depth_to_space(x, 2).shape == (1, 1, 2, 4)
    assert mx.nd.space_to_depth(mx.nd.depth_to_space(x, 2), 2).asnumpy().tolist() == (
        x.asnumpy().tolist()
    )
    data = mx.sym.Variable("data")
    assert mx.sym.Activation(data, "relu").attr("act_type") == "relu"
    block = mx.sym.depth_to_space(data, 2)
    assert block.list_arguments() == ["data"]
    assert block.infer_shape(data=(1, 4, 1, 2))[1] == [(1, 1, 2, 4)]
    # None before the parameters is an input not given, as in MXNet
    fc = mx.sym.FullyConnected(data, None, None, 3, True)
    assert fc.list_arguments() == ["data", fc.name + "_weight"]


def test_positional_parameters_too_many_or_twice_are_type_errors():
    # MXNet: "depth_to_space() got multiple values for argument 'block_size'" (a TypeError).
    data = mx.sym.Variable("data")
    x = mx.nd.ones((1, 4, 1, 1))
    with pytest.raises(TypeError, match="'block_size' given both by position and by keyword"):
        mx.nd.depth_to_space(x, 2, block_size=2)
    with pytest.raises(TypeError, match="'block_size' given both"):
        mx.sym.depth_to_space(data, 2, block_size=2)
    with pytest.raises(mx.MXNetError, match=r"2 positional parameter value.*\(block_size\)"):
        mx.sym.depth_to_space(data, 2, 3)
    with pytest.raises(mx.MXNetError, match="NDArray arguments must come before parameters"):
        mx.nd.depth_to_space(x, 2, x)


def test_an_input_given_as_none_by_keyword_is_not_given():
    # MXNet 1.9.1: SequenceReverse(data=..., sequence_length=None, use_sequence_length=False).
    seq = mx.sym.Variable("seq")
    rev = mx.sym.SequenceReverse(data=seq, sequence_length=None, use_sequence_length=False)
    assert rev.list_arguments() == ["seq"]
    out = rev.bind(mx.cpu(), {"seq": mx.nd.array([[1.0], [2.0], [3.0]])}).forward()[0]
    assert out.asnumpy().ravel().tolist() == [3.0, 2.0, 1.0]
    x = mx.nd.array([[1.0], [2.0], [3.0]])
    out = mx.nd.SequenceReverse(x, sequence_length=None, use_sequence_length=False)
    assert out.asnumpy().ravel().tolist() == [3.0, 2.0, 1.0]
    # a None for a key that is not an input of this configuration changes nothing;
    # a real value for an unknown parameter is still refused
    with pytest.raises(mx.MXNetError, match="unknown parameter 'sequence_lenght'"):
        mx.nd.SequenceReverse(x, sequence_lenght=2)


@pytest.mark.parametrize(
    ("config", "dtype", "mxnet_first_and_last"),
    [  # MXNet 1.9.1's output: start and step are cast to the dtype first
        ((1.3, 456.6, 1.3), "int32", (351, [1, 2, 3], [349, 350, 351])),
        ((1.3, 456.6, 1.3), "uint8", (351, [1, 2, 3], [93, 94, 95])),
        ((50, -50, -2), "uint8", (50, [50, 48, 46], [212, 210, 208])),
        ((-100, 100, 1), "uint8", (200, [156, 157, 158], [97, 98, 99])),
        ((0.5, 5.5, 0.7), "int32", (8, [0, 0, 0], [0, 0, 0])),
        ((2.7,), "int32", (3, [0, 1, 2], [0, 1, 2])),
    ],
)
def test_integer_arange_casts_start_and_step_first(config, dtype, mxnet_first_and_last):
    length, first, last = mxnet_first_and_last
    for out in (
        mx.nd.arange(*config, dtype=dtype),
        mx.sym.arange(*config, dtype=dtype).bind(mx.cpu(), {}).forward()[0],
    ):
        values = out.asnumpy()
        assert values.dtype == np.dtype(dtype)
        assert (len(values), values[:3].tolist(), values[-3:].tolist()) == (length, first, last)


def test_float_arange_adds_in_the_dtype():
    values = mx.nd.arange(1.3, 456.6, 1.3).asnumpy()
    assert values.dtype == np.float32
    mxnet_last = np.array([453.69998, 454.99997, 456.29996], dtype=np.float32)
    np.testing.assert_array_equal(values[-3:], mxnet_last)


def test_arange_infer_range_takes_its_length_from_the_graph():
    # MXNet 1.9.1: arange(start=3, step=2, repeat=2, infer_range=True) + zeros(4) -> 3 3 5 5
    ranged = mx.sym.arange(start=3, stop=None, step=2, repeat=2, infer_range=True)
    out = mx.sym.elemwise_add(ranged, mx.sym.zeros(shape=[4])).bind(mx.cpu(), {}).forward()[0]
    assert out.asnumpy().tolist() == [3.0, 3.0, 5.0, 5.0]
    counted = mx.sym.arange(start=0, stop=None, infer_range=True) + mx.sym.zeros(shape=[5])
    assert counted.bind(mx.cpu(), {}).forward()[0].asnumpy().tolist() == [0, 1, 2, 3, 4]
    # with stop given the length is the usual one; alone, the length stays unknown
    assert mx.sym.arange(3, 10, 2, infer_range=True).infer_shape_partial()[1] == [(4,)]
    alone = mx.sym.arange(start=3, stop=None, infer_range=True)
    assert alone.infer_shape_partial()[1] == [()]
    with pytest.raises(mx.MXNetError, match="_arange"):
        alone.bind(mx.cpu(), {})


def test_cpu_shared_is_a_host_context():
    # MXNet: Context('cpu_shared', 0) is the shared-memory CPU context (device type 5).
    ctx = mx.Context("cpu_shared", 0)
    made = mx.nd.zeros((1, 2, 3), ctx=ctx)
    assert made.context == ctx and ctx.device_typeid == 5
    assert (made + 1).copyto(mx.cpu()).asnumpy().sum() == 6.0
    assert mx.nd.random.uniform(shape=(2,), ctx=ctx).context == ctx


@pytest.mark.parametrize("dtype", ["float32", "int32", "float64"])
def test_dlpack_round_trip_read_and_write(dtype):
    a = mx.nd.array(np.arange(12).reshape(3, 4), dtype=dtype)
    for pack in (a.to_dlpack_for_read(), a.to_dlpack_for_write(), mx.nd.to_dlpack_for_read(a)):
        back = mx.nd.from_dlpack(pack)
        assert back.dtype == np.dtype(dtype)
        assert back.asnumpy().tolist() == a.asnumpy().tolist()
    assert mx.nd.from_dlpack(np.arange(3.0)).asnumpy().tolist() == [0.0, 1.0, 2.0]


def test_dlpack_capsule_keeps_the_array_and_waits_for_its_writes():
    import gc

    source = mx.nd.zeros((1000,))
    source += 5  # a pending write: for_read waits for it
    pack = mx.nd.to_dlpack_for_write(source)
    del source
    gc.collect()
    others = [mx.nd.ones((1000,)) * 9 for _ in range(4)]  # storage may be reused, not this one
    mx.nd.waitall()
    assert mx.nd.from_dlpack(pack).asnumpy().tolist() == [5.0] * 1000
    assert len(others) == 4
    with pytest.raises(mx.MXNetError, match="only once"):
        mx.nd.from_dlpack(pack)
    with pytest.raises(mx.MXNetError, match="DLPack capsule"):
        mx.nd.from_dlpack([1, 2])


def test_diag_refuses_an_offset_outside_the_matrix():
    # MXNet 1.9.1 on a 3 x 4 matrix: k=4 and k=-3 give an empty diagonal, k=5 / k=-4 raise.
    a = mx.nd.ones((3, 4))
    assert mx.nd.diag(a, k=4).shape == (0,) and mx.nd.diag(a, k=-3).shape == (0,)
    for k in (5, -4):
        with pytest.raises(mx.MXNetError, match="Diagonal does not exist"):
            mx.nd.diag(a, k=k)


def test_slice_keeps_an_unknown_axis_unknown():
    # MXNet 1.9.1: data (0, 20) sliced (2:, 3:10) infers (0, 7); under np_shape -1 is unknown.
    data = mx.sym.var("data", shape=(0, 20))
    out = mx.sym.slice(data, begin=(2, 3), end=(None, 10), step=(None, 2))
    assert out.infer_shape_partial()[1] == [(0, 4)]
    assert mx.sym.slice_axis(mx.sym.var("d", shape=(10, 0)), axis=0, begin=0, end=5
                             ).infer_shape_partial()[1] == [(5, 0)]  # fmt: skip
    with mx.np_shape():
        data = mx.sym.var("data", shape=(-1, 20))
        out = mx.sym.slice(data, begin=(None, 3), end=(None, 10))
        assert out.infer_shape_partial()[1] == [(-1, 7)]
    assert out.infer_shape(data=(4, 20))[1] == [(4, 7)]


def test_under_np_shape_zero_is_an_empty_axis():
    with mx.np_shape():
        joined = mx.nd.Concat(mx.nd.ones((0, 8)), mx.nd.ones((3, 8)), mx.nd.ones((0, 8)), dim=0)
        assert joined.shape == (3, 8)
        assert mx.nd.Concat(mx.nd.ones((0, 3)), mx.nd.ones((0, 4)), dim=1).shape == (0, 7)
        empty = mx.nd.zeros((5, 0))
        assert empty.sum().asnumpy().tolist() == [0.0]
        for reduce in (empty.min, empty.max):  # MXNet: "Reduction input's size should > 0"
            with pytest.raises(mx.MXNetError, match="holds no element"):
                reduce()


def test_a_sampler_parameter_out_of_range_fails_when_the_op_runs():
    # MXNet 1.9.1 checks a sampler's distribution parameters in the kernel: the call
    # returns, the read raises ("scale parameter in gaussian has to be positive").
    bad = mx.nd.random.normal(0, -1, (2, 2))
    product = mx.nd.dot(bad, bad)
    for read in (product.asnumpy, bad.asnumpy, bad.asnumpy):  # every read, as issue 20 asks
        with pytest.raises(mx.MXNetError, match="scale=-1 is negative"):
            read()
    flipped = mx.nd.random.uniform(2, 1, (2,))
    with pytest.raises(mx.MXNetError, match="low must be less or equal to high"):
        mx.nd.waitall()
    with pytest.raises(mx.MXNetError, match="low must be less or equal to high"):
        flipped.wait_to_read()
    mx.nd.waitall()  # waitall reports a failure once


def test_sampler_positional_values_follow_mxnets_order():
    # MXNet: random_normal(loc, scale, shape, ctx, dtype)
    mx.random.seed(3)
    drawn = mx.nd.random_normal(5, 0, (2, 3))
    assert drawn.shape == (2, 3) and drawn.asnumpy().tolist() == [[5.0] * 3] * 2
    assert mx.nd.random_uniform(5, 6, (4,)).asnumpy().min() >= 5


def _plan_mib(executor) -> int:
    return int(executor.debug_str().rsplit("Total ", 1)[1].split(" MB")[0])


def test_zero_gradients_behind_stop_gradient_are_pruned():
    # MXNet: nothing behind stop_gradient runs backward, so the plan equals grad_req='null'
    data = mx.sym.Variable("data")
    net = data
    for _ in range(6):
        net = net * net
    full = net.simple_bind(mx.cpu(), data=(4, 3, 64, 64))
    null = net.simple_bind(mx.cpu(), data=(4, 3, 64, 64), grad_req="null")
    blocked = mx.sym.stop_gradient(net).simple_bind(mx.cpu(), data=(4, 3, 64, 64))
    assert _plan_mib(full) > _plan_mib(blocked) == _plan_mib(null)
    assert not any("_backward" in line for line in blocked.debug_str().splitlines())
    blocked.arg_dict["data"][:] = 0.5
    blocked.grad_dict["data"][:] = 7.0
    blocked.forward(is_train=True)
    blocked.backward()
    assert blocked.grad_dict["data"].asnumpy().max() == 0.0  # 'write' of a zero gradient


def test_zero_gradient_pruning_keeps_the_other_paths():
    x, w = mx.sym.Variable("x"), mx.sym.Variable("w")
    out = mx.sym.stop_gradient(x * w) + x * x * w  # only the second term has a gradient
    exe = out.simple_bind(mx.cpu(), x=(2,), w=(2,), grad_req={"x": "write", "w": "add"})
    exe.arg_dict["x"][:] = 3.0
    exe.arg_dict["w"][:] = 2.0
    exe.grad_dict["w"][:] = 1.0
    exe.forward(is_train=True)
    exe.backward(mx.nd.ones((2,)))
    assert exe.grad_dict["x"].asnumpy().tolist() == [12.0, 12.0]  # d(x*x*w)/dx = 2xw
    assert exe.grad_dict["w"].asnumpy().tolist() == [10.0, 10.0]  # 1 + x*x


def test_an_op_without_gradient_binds_only_behind_stop_gradient():
    # MXNet 1.9.1: batch_take has no gradient; stop_gradient after it prunes the need
    x, idx = mx.sym.Variable("x"), mx.sym.Variable("idx")
    taken = mx.sym.batch_take(x, idx)
    types = {"x": np.float32, "idx": np.int32}
    exe = mx.sym.stop_gradient(taken).simple_bind(mx.cpu(), x=(4, 3), idx=(4,), type_dict=types)
    exe.forward(is_train=True)
    exe.backward()
    with pytest.raises(mx.MXNetError, match="batch_take .* has no gradient"):
        taken.simple_bind(mx.cpu(), x=(4, 3), idx=(4,), type_dict=types)
    taken.simple_bind(mx.cpu(), x=(4, 3), idx=(4,), type_dict=types, grad_req="null")


def test_executor_reshape_shares_memory_unless_it_grows():
    # MXNet 1.9.1: a smaller reshape views the old arrays and the old memory pool
    x = mx.sym.Variable("x")
    y = mx.sym.FullyConnected(x, num_hidden=4, name="fc")
    exe = y.simple_bind(mx.cpu(), x=(5, 4), grad_req="null")
    exe.arg_dict["x"][:] = 1
    exe.arg_dict["fc_weight"][:] = 1
    exe.arg_dict["fc_bias"][:] = 0
    exe.outputs[0][:] = -1
    small = exe.reshape(x=(3, 4))
    assert small.arg_dict["fc_weight"] is exe.arg_dict["fc_weight"]
    small.arg_dict["x"][:] = 2
    assert exe.arg_dict["x"].asnumpy()[:3].tolist() == [[2.0] * 4] * 3  # a view
    small.forward(is_train=False)
    assert small.outputs[0].asnumpy().tolist() == [[8.0] * 4] * 3
    assert exe.outputs[0].asnumpy()[:3].tolist() == [[8.0] * 4] * 3  # the output's memory too
    grown = exe.reshape(allow_up_sizing=True, x=(6, 4))
    grown.arg_dict["x"][:] = 0
    assert exe.arg_dict["x"].asnumpy()[3:].tolist() == [[1.0] * 4] * 2  # not shared
    with pytest.raises(mx.MXNetError, match="allow_up_sizing"):
        exe.reshape(x=(7, 4))


def test_zeros_and_ones_need_np_shape_for_scalar_and_zero_size_shapes():
    # MXNet 1.x: outside np_shape a 0 is an unknown dimension and () an unknown shape
    for make in (mx.nd.zeros, mx.nd.ones):
        for shape in ((), (0, 1, 3, 0), (5, 0)):
            with pytest.raises(mx.MXNetError, match="mx.np_shape"):
                make(shape=shape)
        with mx.np_shape():
            assert make(shape=()).shape == ()
            assert make(shape=(0, 1, 0, 4)).asnumpy().shape == (0, 1, 0, 4)
    # what MXNet allows outside np_shape too: empty, full, array, and arrays like others
    assert mx.nd.empty((0, 3)).shape == (0, 3) and mx.nd.full((0, 3), 1).shape == (0, 3)
    assert mx.nd.array(np.zeros((0, 3))).shape == (0, 3)
    with mx.np_shape():
        scalar = mx.nd.ones(())
    assert mx.nd.zeros_like(scalar).shape == () and mx.nd.ones_like(scalar).asscalar() == 1


@mx.use_np_shape
def _made_under_the_decorator():
    return mx.nd.ones(shape=())


def test_use_np_shape_decorator_turns_the_rule_off_inside():
    assert _made_under_the_decorator().shape == ()
    assert not mx.is_np_shape()
