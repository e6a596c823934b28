"""What MXNet 1.9.1's test_operator.py / test_random.py need, checked our own way.

Deterministic ops with MXNet vectors are in test_compat_ops.py; here: samplers
(statistics, seeding, shapes), the chi-square helpers, multi-output ops against
numpy, and the behaviour changes (backward with nothing to compute).
"""

import numpy as np
import pytest

import mxnb as mx
from mxnb import test_utils
from mxnb.operator.ops.tensor_compat import digamma

SAMPLERS = [
    # (nd function, kwargs, mean, std)
    ("gamma", {"alpha": 9.0, "beta": 0.5}, 4.5, 1.5),
    ("exponential", {"scale": 0.25}, 0.25, 0.25),
    ("poisson", {"lam": 4.0}, 4.0, 2.0),
    ("negative_binomial", {"k": 3, "p": 0.4}, 4.5, np.sqrt(3 * 0.6) / 0.4),
    ("generalized_negative_binomial", {"mu": 2.0, "alpha": 0.3}, 2.0, np.sqrt(2 + 0.3 * 4)),
]


@pytest.mark.parametrize("name, kwargs, mean, std", SAMPLERS)
def test_sampler_moments_and_seed(name, kwargs, mean, std):
    sampler = getattr(mx.nd.random, name)
    mx.random.seed(11)
    first = sampler(shape=(200, 200), **kwargs).asnumpy()
    mx.random.seed(11)
    second = sampler(shape=(200, 200), **kwargs).asnumpy()
    assert first.dtype == np.float32 and first.shape == (200, 200)
    assert (first == second).all()
    assert abs(first.mean() - mean) < 0.05 * std + 0.02
    assert abs(first.std() - std) < 0.05 * std + 0.02


def test_array_parameters_draw_per_element():
    mx.random.seed(5)
    lam = mx.nd.array([[1.0, 8.0], [20.0, 0.5]])
    draws = mx.nd.random.poisson(lam=lam, shape=(4000,)).asnumpy()
    assert draws.shape == (2, 2, 4000)
    np.testing.assert_allclose(draws.mean(axis=-1), lam.asnumpy(), rtol=0.1)
    loc, scale = mx.nd.array([0.0, 10.0]), mx.nd.array([1.0, 0.1])
    normal = mx.nd.random.normal(loc=loc, scale=scale, shape=(3000,)).asnumpy()
    np.testing.assert_allclose(normal.mean(axis=1), [0.0, 10.0], atol=0.1)
    with pytest.raises(mx.base.ParamError, match="all numbers or all NDArrays"):
        mx.nd.random.gamma(alpha=lam, beta=1.0)


def test_symbol_samplers_with_and_without_array_parameters():
    alpha, beta = mx.sym.Variable("alpha"), mx.sym.Variable("beta")
    multi = mx.sym.random.gamma(alpha, beta, shape=(5000,))
    exe = multi.bind(mx.cpu(), {"alpha": mx.nd.array([2.0, 9.0]), "beta": mx.nd.array([1.0, 0.5])})
    draws = exe.forward()[0].asnumpy()
    assert draws.shape == (2, 5000)
    np.testing.assert_allclose(draws.mean(axis=1), [2.0, 4.5], rtol=0.1)
    single = mx.sym.random.exponential(scale=2.0, shape=(4000,)) + mx.sym.Variable("x")
    out = single.bind(mx.cpu(), {"x": mx.nd.zeros((4000,))}).forward()[0].asnumpy()
    assert abs(out.mean() - 2.0) < 0.2


def test_shuffle_permutes_the_first_axis_only():
    data = mx.nd.arange(0, 12).reshape((4, 3))
    seen = set()
    for _ in range(40):
        out = mx.nd.random.shuffle(data).asnumpy()
        assert sorted(out[:, 0].tolist()) == [0, 3, 6, 9]
        np.testing.assert_array_equal(out - out[:, :1], np.tile([0, 1, 2], (4, 1)))
        seen.add(tuple(out[:, 0]))
    assert len(seen) > 10
    sym = mx.sym.random.shuffle(mx.sym.Variable("a"))
    assert sym.bind(mx.cpu(), {"a": data}).forward()[0].shape == (4, 3)


def test_chi_square_helpers():
    from scipy import stats

    buckets, probs = test_utils.gen_buckets_probs_with_ppf(stats.norm.ppf, 4)
    assert probs == [0.25] * 4 and buckets[0][0] == -np.inf and buckets[-1][1] == np.inf
    mx.random.seed(3)
    good = test_utils.verify_generator(
        lambda n: mx.nd.random.normal(shape=(n,)), buckets, probs, nsamples=20000, nrepeat=4
    )
    assert len(good) == 4
    with pytest.raises(AssertionError, match="chi-square tests passed"):
        test_utils.verify_generator(
            lambda n: mx.nd.random.normal(1.0, shape=(n,)), buckets, probs, nsamples=20000
        )
    p, observed, _ = test_utils.chi_square_check(
        lambda n: np.arange(n) % 3, [0, 1, 2], [1 / 3] * 3, nsamples=300
    )
    assert observed.tolist() == [100, 100, 100] and p > 0.99


def test_retry_and_ignore_nan_helpers():
    calls = []

    @test_utils.retry(3)
    def flaky():
        calls.append(1)
        assert len(calls) == 2

    flaky()
    assert len(calls) == 2
    a, b = np.array([1.0, np.nan, 3.0]), np.array([1.0, 5.0, np.nan])
    assert test_utils.almost_equal_ignore_nan(a, b)
    assert not test_utils.almost_equal_ignore_nan(a, b + 1)


def test_moments_split_v2_and_cross_entropy_against_numpy():
    x = np.random.RandomState(0).uniform(-1, 1, (3, 4, 5)).astype(np.float32)
    mean, var = mx.nd.moments(mx.nd.array(x), axes=(0, 2), keepdims=True)
    np.testing.assert_allclose(mean.asnumpy(), x.mean(axis=(0, 2), keepdims=True), rtol=1e-5)
    np.testing.assert_allclose(var.asnumpy(), x.var(axis=(0, 2), keepdims=True), rtol=1e-5)
    data = mx.sym.Variable("data")
    moments = mx.sym.moments(data, axes=(1,))
    test_utils.check_numeric_gradient(moments[0] + moments[1], [x.astype(np.float64)],
                                      numeric_eps=1e-3, rtol=1e-2, atol=1e-3)  # fmt: skip
    parts = mx.nd.split_v2(mx.nd.array(x), (1, 3), axis=1)
    for got, want in zip(parts, np.split(x, (1, 3), axis=1)):
        np.testing.assert_array_equal(got.asnumpy(), want)
    scores, labels = x[0], np.array([0, 4, 2, 1])
    prob = np.exp(scores) / np.exp(scores).sum(axis=1, keepdims=True)
    loss = mx.nd.softmax_cross_entropy(mx.nd.array(scores), mx.nd.array(labels))
    np.testing.assert_allclose(loss.asnumpy(), [-np.log(prob[range(4), labels]).sum()], rtol=1e-5)


def test_shape_size_and_finite_checks():
    x = mx.nd.zeros((2, 3, 4))
    assert mx.nd.shape_array(x).asnumpy().tolist() == [2, 3, 4]
    assert mx.nd.size_array(x).dtype == np.int64 and mx.nd.size_array(x).asscalar() == 24
    assert mx.nd.all_finite(x).asnumpy().tolist() == [1.0]
    bad = mx.nd.array([1.0, np.inf])
    assert mx.nd.multi_all_finite(x, bad, num_arrays=2).asnumpy().tolist() == [0.0]


def test_softmax_activation_3d_gradient_matches_central_differences():
    """MXNet 1.9.1 gets this gradient wrong for 3-d inputs; mxnb's is the true one."""
    x = np.random.RandomState(1).uniform(-2, 2, (2, 3, 4))
    test_utils.check_numeric_gradient(mx.sym.SoftmaxActivation(mx.sym.Variable("x")), [x],
                                      numeric_eps=1e-4, rtol=1e-3, atol=1e-5)  # fmt: skip


def test_digamma_series():
    x = np.array([0.01, 0.5, 1.0, 3.0, 20.0])
    euler = 0.5772156649015329
    np.testing.assert_allclose(digamma(x)[2], -euler, rtol=1e-9)
    np.testing.assert_allclose(digamma(x + 1) - digamma(x), 1 / x, rtol=1e-9)


def test_backward_with_nothing_to_compute_does_nothing():
    x = mx.sym.Variable("x")
    exe = (x * 2).bind(mx.cpu(), {"x": mx.nd.ones((2,))})
    exe.forward(is_train=True)
    exe.backward(mx.nd.ones((2,)))  # MXNet: a no-op, not an error
    assert exe.grad_arrays == [None]


def test_np_shape_names_at_top_level():
    assert mx.np_shape is mx.util.np_shape and mx.use_np_shape is mx.util.use_np_shape
    with mx.np_shape(True):
        assert mx.is_np_shape()
    assert not mx.is_np_shape()


def test_broadcasting_arithmetic_functions():
    a, b = mx.nd.array([[1.0, 2.0, 3.0]]), mx.nd.array([[1.0], [2.0]])
    np.testing.assert_array_equal(mx.nd.add(a, b).asnumpy(), [[2, 3, 4], [3, 4, 5]])
    np.testing.assert_array_equal(mx.nd.lesser_equal(2, a).asnumpy(), [[0, 1, 1]])
    np.testing.assert_array_equal(mx.nd.modulo(a, 2).asnumpy(), [[1, 0, 1]])
    assert mx.nd.multiply(2, 3) == 6
    assert mx.sym.pow is mx.sym.power and mx.nd.pow is mx.nd.power


def _padded_batch():
    rng = np.random.RandomState(2)
    return rng.uniform(-1, 1, (4, 3, 2)), np.array([1, 4, 2])


def test_sequence_ops_against_numpy_and_their_gradients():
    x, lengths = _padded_batch()
    args = {"use_sequence_length": True}
    masked = mx.nd.SequenceMask(mx.nd.array(x), mx.nd.array(lengths), value=-2.0, **args)
    want = x.copy()
    for b, n in enumerate(lengths):
        want[n:, b] = -2.0
    np.testing.assert_allclose(masked.asnumpy(), want, rtol=1e-6)
    reversed_ = mx.nd.SequenceReverse(mx.nd.array(x), mx.nd.array(lengths), **args).asnumpy()
    last = mx.nd.SequenceLast(mx.nd.array(x), mx.nd.array(lengths), **args).asnumpy()
    for b, n in enumerate(lengths):
        np.testing.assert_allclose(reversed_[:n, b], x[:n, b][::-1], rtol=1e-6)
        np.testing.assert_allclose(reversed_[n:, b], x[n:, b], rtol=1e-6)
        np.testing.assert_allclose(last[b], x[n - 1, b], rtol=1e-6)
    batch_major = mx.nd.SequenceMask(mx.nd.array(x.swapaxes(0, 1)), mx.nd.array(lengths),
                                     axis=1, **args)  # fmt: skip
    np.testing.assert_allclose(batch_major.asnumpy().swapaxes(0, 1), np.where(
        want == -2.0, 0.0, want), rtol=1e-6)  # fmt: skip
    data, length = mx.sym.Variable("data"), mx.sym.Variable("length")
    for op in (mx.sym.SequenceMask, mx.sym.SequenceReverse, mx.sym.SequenceLast):
        sym = op(data=data, sequence_length=length, **args)
        test_utils.check_numeric_gradient(sym, {"data": x, "length": lengths},
                                          grad_nodes=["data"], numeric_eps=1e-3, rtol=1e-2)  # fmt: skip


def test_svm_output_gradient_is_the_hinge_loss():
    rng = np.random.RandomState(3)
    x, label = rng.uniform(-2, 2, (5, 4)).astype(np.float32), np.array([0, 3, 1, 1, 2])
    y = np.where(np.arange(4)[None, :] == label[:, None], 1.0, -1.0)
    for use_linear, want in (
        (True, -y * (1 - y * x > 0)),
        (False, -2 * y * np.maximum(1 - y * x, 0)),
    ):
        data = mx.nd.array(x)
        data.attach_grad()
        with mx.autograd.record():
            out = mx.nd.SVMOutput(data, mx.nd.array(label), use_linear=use_linear)
        out.backward()
        np.testing.assert_allclose(out.asnumpy(), x)
        np.testing.assert_allclose(data.grad.asnumpy(), want, rtol=1e-6)


def test_none_inputs_are_inputs_not_given():
    sym = mx.sym.Convolution(mx.sym.Variable("x"), mx.sym.Variable("w"), None,
                             num_filter=2, kernel=(3,), no_bias=True)  # fmt: skip
    assert sym.list_arguments() == ["x", "w"]
    assert mx.nd.one_hot(mx.nd.array([1, 2]), depth=0).shape == (2, 0)


def test_mxnet_call_conventions_of_the_operator_tests():
    """Keywords MXNet ignores or accepts that its tests rely on."""
    x, w = mx.sym.Variable("x"), mx.sym.Variable("w")
    fc = mx.sym.FullyConnected(x, w, num_hidden=3, no_bias=True, name="fc")
    exe = fc.simple_bind(mx.cpu(), x=(2, 4), num_hidden=3)  # non-tuple keywords: not shapes
    assert exe.arg_dict["w"].shape == (3, 4)
    args = {"x": mx.nd.ones((2, 4)), "w": mx.nd.ones((3, 4)), "b": None}  # None: not given
    out = fc.bind(mx.cpu(), args).forward()[0]
    data = np.ones((2, 4), dtype=np.float32)
    test_utils.check_symbolic_forward(
        fc, [data, np.ones((3, 4))], {"fc_output": data @ np.ones((4, 3))}
    )
    np.testing.assert_allclose(out.asnumpy(), 4.0)
    with pytest.raises(mx.base.ParamError, match="'reps'"):
        mx.nd.tile(mx.nd.ones((2, 2)), (1, 0))
    with mx.np_shape():
        assert mx.nd.tile(mx.nd.ones((2, 2)), (1, 0)).shape == (2, 0)


def test_softmax_output_soft_labels_and_multi_output_normalization():
    rng = np.random.RandomState(4)
    x = rng.uniform(-1, 1, (3, 4)).astype(np.float32)
    soft = rng.dirichlet(np.ones(4), 3).astype(np.float32)
    data = mx.nd.array(x)
    data.attach_grad()
    with mx.autograd.record():
        out = mx.nd.SoftmaxOutput(data, mx.nd.array(soft), preserve_shape=True)
    out.backward()
    np.testing.assert_allclose(data.grad.asnumpy(), out.asnumpy() - soft, rtol=1e-5, atol=1e-6)
    maps = mx.nd.array(rng.uniform(-1, 1, (2, 3, 2, 2)))
    maps.attach_grad()
    labels = mx.nd.array(rng.randint(0, 3, (2, 2, 2)))
    with mx.autograd.record():
        out = mx.nd.SoftmaxOutput(maps, labels, multi_output=True, normalization="null")
    out.backward()
    one_hot = np.eye(3)[labels.asnumpy().astype(int)].transpose(0, 3, 1, 2)
    np.testing.assert_allclose(maps.grad.asnumpy(), (out.asnumpy() - one_hot) / 4, rtol=1e-5)


def test_fused_and_stacked_lstm_agree_for_every_grad_req():
    """MXNet's check_rnn_consistency, small: grad_req 'null' gives no input gradient."""
    T, N, I, H = 3, 2, 4, 5
    fused = mx.rnn.FusedRNNCell(H, num_layers=2, mode="lstm", get_next_state=True, prefix="")
    stack = mx.rnn.SequentialRNNCell()
    stack.add(mx.rnn.LSTMCell(H, prefix="l0_"))
    stack.add(mx.rnn.LSTMCell(H, prefix="l1_"))
    for grad_req in ("write", "null"):
        mods = []
        for cell in (fused, stack):
            out, _ = cell.unroll(T, mx.sym.Variable("data"), layout="NTC", merge_outputs=True)
            mod = mx.mod.Module(out, label_names=None, context=mx.cpu())
            mod.bind(data_shapes=[("data", (N, T, I))], inputs_need_grad=True, grad_req=grad_req)
            mods.append(mod)
        mods[0].init_params()
        args, auxs = mods[0].get_params()
        mods[1].set_params(stack.pack_weights(fused.unpack_weights(args)), auxs)
        batch = mx.io.DataBatch(data=[mx.random.uniform(shape=(N, T, I))])
        dy = mx.random.uniform(shape=(N, T, H))
        for mod in mods:
            mod.forward(batch, is_train=True)
            mod.backward(out_grads=[dy])
        outs = [mod.get_outputs()[0].asnumpy() for mod in mods]
        np.testing.assert_allclose(outs[0], outs[1], rtol=1e-4, atol=1e-5)
        grads = [mod.get_input_grads()[0] for mod in mods]
        if grad_req == "null":
            assert grads == [None, None]
        else:
            np.testing.assert_allclose(grads[0].asnumpy(), grads[1].asnumpy(), rtol=1e-4, atol=1e-5)


def test_integer_mod_by_zero_gives_zero_value_and_gradient():
    """MXNet 1.9.1 defines mod's gradients for floating-point types only: integers get 0."""
    a = mx.nd.array([5, 7, -3], dtype="int32")
    b = mx.nd.array([2, 0, 4], dtype="int32")
    a.attach_grad()
    b.attach_grad()
    with mx.autograd.record():
        out = mx.nd.broadcast_mod(a, b)
    out.backward(mx.nd.ones(3, dtype="int32"))
    assert out.asnumpy().tolist() == [1, 0, 1]
    assert a.grad.asnumpy().tolist() == [0, 0, 0]
    assert b.grad.asnumpy().tolist() == [0, 0, 0]
    for record in (lambda: a % 3, lambda: 11 % b):
        with mx.autograd.record():
            out = record()
        out.backward(mx.nd.ones(3, dtype="int32"))
    assert a.grad.asnumpy().tolist() == [0, 0, 0] and b.grad.asnumpy().tolist() == [0, 0, 0]
    x, y = mx.nd.array([5.5, -3.0]), mx.nd.array([2.0, 4.0])
    y.attach_grad()
    with mx.autograd.record():
        out = mx.nd.broadcast_mod(x, y)
    out.backward()
    assert y.grad.asnumpy().tolist() == [-2.0, 1.0]


def test_logical_xor_takes_arrays_or_numbers():
    lhs, rhs = mx.nd.array([0, 1, 2]), mx.nd.array([[1], [0]])
    assert mx.nd.logical_xor(lhs, rhs).asnumpy().tolist() == [[1, 0, 0], [0, 1, 1]]
    assert mx.nd.logical_xor(lhs, 1).asnumpy().tolist() == [1, 0, 0]
    assert mx.nd.logical_xor(0, 3) == 1.0
