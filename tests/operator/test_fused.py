"""Fused kernels (mxnb.operator.fused): the math once, the plain path, the compiled path and its guard."""

from __future__ import annotations

import re

import numpy as np
import pytest

import mxnb as mx
from mxnb.operator.fused import FusedMap, FusedSum
from mxnb.testing.fake_cupy import FakeCupy, fake_virtual_gpus

RNG = np.random.default_rng(7)


def test_statements_computed_into_the_outputs_without_a_temporary():
    update = FusedMap(
        "update", ("mean", "momentum", "rest"), ("moving", "twice"),
        "moving = moving * momentum + mean * rest\ntwice = moving + moving",
    )  # fmt: skip
    mean = RNG.standard_normal(5).astype("float32")
    moving = RNG.standard_normal(5).astype("float32")
    start = moving.copy()
    twice = np.empty(5, dtype="float32")
    result = update(np, mean, 0.9, 0.1, out=(moving, twice))
    assert result[0] is moving and result[1] is twice  # written in place, the arrays given back
    np.testing.assert_array_equal(moving, start * np.float32(0.9) + mean * np.float32(0.1))
    np.testing.assert_array_equal(twice, moving + moving)


def test_a_right_side_that_reads_the_output_goes_through_a_temporary():
    shift = FusedMap("shift", ("x",), ("y",), "y = x - y")
    y = np.array([1.0, 2.0])
    shift(np, np.array([10.0, 10.0]), out=(y,))
    assert y.tolist() == [9.0, 8.0]


def test_locals_broadcasting_and_functions():
    normalize = FusedMap(
        "normalize", ("x", "var", "eps"), ("y",), "invstd = 1 / sqrt(var + eps)\ny = x * invstd"
    )
    x = RNG.standard_normal((2, 3, 4)).astype("float32")
    var = np.abs(RNG.standard_normal((1, 3, 1))).astype("float32")
    (y,) = normalize(np, x, var, 1e-3)
    np.testing.assert_allclose(y, x / np.sqrt(var + np.float32(1e-3)), rtol=1e-6)
    assert y.dtype == np.float32
    assert "T invstd = 1 / sqrt(var + eps);" in normalize.source()
    assert "y = x * invstd;" in normalize.source().splitlines()


def test_clip_is_numpys_with_its_c_in_the_preamble():
    """``clip(x, low, high)`` is numpy's clip on the plain path (a NaN stays NaN) and a function
    of the kernel's preamble in C; the kernel is refused without it, as nvrtc would."""
    bounded = FusedMap("bounded", ("x", "c"), ("y",), "y = clip(x * 2, -c, c)")
    x = np.array([np.nan, -np.inf, -3.0, -0.25, 0.0, 0.25, 3.0, np.inf], dtype="float32")
    expected = np.clip(x * 2, np.float32(-1.5), np.float32(1.5))
    (y,) = bounded(np, x, np.float32(1.5))
    np.testing.assert_array_equal(y, expected)  # NaN at the same place, the rest equal
    assert bounded.source() == "y = clip(x * 2, -c, c);"
    assert "__device__ T clip(T x, T low, T high)" in bounded.preamble()
    assert FusedMap("plain", ("x",), ("y",), "y = sqrt(x)").preamble() == ""
    xp = FakeCupy()
    (z,) = bounded(xp, x, np.float32(1.5), out=[np.empty_like(x)])
    np.testing.assert_array_equal(z, expected)
    assert xp.launches == 1  # compiled (with the preamble) and verified against the plain path
    with pytest.raises(ValueError, match="clip"):
        xp.ElementwiseKernel("T x", "T y", "y = clip(x, x, x);", "no_preamble")


def test_a_sum_with_scratch_spares_the_temporary():
    squares = FusedSum("squares", ("x", "mean"), "(x - mean) * (x - mean)")
    x = RNG.standard_normal((4, 3, 5)).astype("float32")
    mean = x.mean(axis=(0, 2), keepdims=True)
    scratch = np.empty_like(x)
    total = squares(np, x, mean, axis=(0, 2), scratch=scratch)
    np.testing.assert_allclose(total, ((x - mean) ** 2).sum(axis=(0, 2)), rtol=1e-5)
    np.testing.assert_allclose(scratch, x - mean, rtol=1e-6)  # the side the dot reads twice


@pytest.mark.parametrize(
    "statements, says",
    [
        ("y = x ** 2", "not both Python and CUDA C"),
        ("y = x * 0.5", "not both Python and CUDA C"),  # a double literal in C
        ("y = 1 / 2 * x", "literal on both sides"),  # 0 in C, 0.5 in Python
        ("y = (x > x) * x", "not both Python and CUDA C"),  # a bool in Python, an int in C
        ("y = fabs(x)", "not both Python and CUDA C"),  # C's alone: write abs(x)
        ("y = clip(x, x)", "clip(x, low, high)"),  # clip takes its two bounds
        ("y = sqrt(x, x)", "not both Python and CUDA C"),
        ("y = x + z", "reads ['z'] before any statement sets them"),
        ("z = x", "no statement sets outputs ['y']"),
        ("y x", "one 'name = expression' per line"),
    ],
)
def test_refuses_what_is_not_the_same_in_python_and_c(statements, says):
    with pytest.raises(ValueError, match=re.escape(says)):
        FusedMap("bad", ("x",), ("y",), statements)


def test_a_name_given_as_input_and_output_is_refused():
    """An output the statements read before setting it is an output only: CUDA C would not
    compile a parameter declared twice (FakeCupy refuses it too)."""
    with pytest.raises(ValueError, match=re.escape("['mom'] given twice")):
        FusedMap("bad", ("grad", "mom"), ("mom",), "mom = mom * 2 + grad")
    with pytest.raises(ValueError, match="declared twice"):
        FakeCupy().ElementwiseKernel("T mom, T grad", "T mom", "mom = mom + grad;", "bad")


def test_the_compiled_path_runs_the_c_text_and_is_verified_once():
    xp = FakeCupy()
    normalize = FusedMap("normalize", ("x", "mean", "scale"), ("y",), "y = (x - mean) * scale")
    x = RNG.standard_normal((3, 4)).astype("float32")
    (first,) = normalize(xp, x, np.float32(0.5), np.float32(2.0))
    assert xp.launches == 1 and (id(xp), "float32") in normalize._verified
    calls = xp.calls
    (second,) = normalize(xp, x, np.float32(0.5), np.float32(2.0), out=(np.empty_like(x),))
    assert xp.launches == 2 and xp.calls == calls  # no plain path any more: one launch
    np.testing.assert_allclose(second, (x - 0.5) * 2.0, rtol=1e-6)
    np.testing.assert_array_equal(first, second)


class _WrongCupy(FakeCupy):
    """Kernels that compute the wrong thing, or do not compile."""

    def __init__(self, fault: str) -> None:
        super().__init__()
        self.fault = fault

    def ElementwiseKernel(self, in_params, out_params, operation, name="kernel"):  # noqa: N802
        if self.fault == "compile":
            raise RuntimeError("nvrtc: error: identifier 'sqrt' is undefined")
        return super().ElementwiseKernel(in_params, out_params, operation.replace("-", "+"), name)

    def ReductionKernel(self, *args, **kwargs):  # noqa: N802
        if self.fault == "compile":
            raise RuntimeError("nvrtc: compilation failed")
        args = (args[0], args[1], args[2] + " + 1", *args[3:])
        return super().ReductionKernel(*args, **kwargs)


@pytest.mark.parametrize("fault", ["compile", "wrong"])
def test_a_kernel_that_fails_or_disagrees_is_dropped_for_the_plain_path(fault):
    xp = _WrongCupy(fault)
    centered = FusedMap("centered", ("x", "mean"), ("y",), "y = x - mean")
    squares = FusedSum("squares", ("x",), "x * x")
    x = RNG.standard_normal((3, 4)).astype("float32")
    with pytest.warns(RuntimeWarning, match="dropped for the plain path"):
        (y,) = centered(xp, x, np.float32(1.0))
    with pytest.warns(RuntimeWarning, match="dropped for the plain path"):
        total = squares(xp, x, axis=(1,))
    np.testing.assert_array_equal(y, x - np.float32(1.0))  # the plain path's result, right
    np.testing.assert_allclose(total, (x * x).sum(axis=1), rtol=1e-6)
    launches = xp.launches
    centered(xp, x, np.float32(1.0))
    squares(xp, x, axis=(1,))
    assert xp.launches == launches
    assert centered._compiled[id(xp)] is False and squares._compiled[id(xp)] is False


def _batch_norm_step(ctx, fix_gamma: bool, shape=(4, 3, 5, 5)):
    """A training BatchNorm forward + backward on ``ctx``: outputs, gradients, moving stats."""
    rng = np.random.default_rng(3)
    data = mx.nd.array(rng.standard_normal(shape).astype("float32") * 2 + 1, ctx=ctx)
    gamma = mx.nd.array(rng.standard_normal(shape[1]).astype("float32"), ctx=ctx)
    beta = mx.nd.array(rng.standard_normal(shape[1]).astype("float32"), ctx=ctx)
    moving_mean = mx.nd.zeros(shape[1], ctx=ctx)
    moving_var = mx.nd.ones(shape[1], ctx=ctx)
    head = mx.nd.array(rng.standard_normal(shape).astype("float32"), ctx=ctx)
    for array in (data, gamma, beta):
        array.attach_grad()
    with mx.autograd.record():
        out = mx.nd.BatchNorm(data, gamma, beta, moving_mean, moving_var, fix_gamma=fix_gamma)
    out.backward(head)
    return [a.asnumpy() for a in (out, data.grad, gamma.grad, beta.grad, moving_mean, moving_var)]


@pytest.mark.parametrize("fix_gamma", [True, False])
def test_batch_norm_launches_six_kernels_on_a_gpu_and_agrees_with_the_cpu(fix_gamma):
    expected = _batch_norm_step(mx.cpu(), fix_gamma)
    with fake_virtual_gpus() as xp:
        got = _batch_norm_step(mx.gpu(0), fix_gamma)  # the first call verifies each kernel
        launches = xp.launches
        again = _batch_norm_step(mx.gpu(0), fix_gamma)
        launches = xp.launches - launches
    for mine, theirs, name in zip(got, expected, ("out", "dx", "dgamma", "dbeta", "mm", "mv")):
        np.testing.assert_allclose(mine, theirs, rtol=1e-5, atol=1e-5, err_msg=name)
    for mine, theirs in zip(again, got):
        np.testing.assert_array_equal(mine, theirs)
    # forward: the squares, the statistics, the normalisation; backward: the same three
    assert launches == 6


def test_an_output_that_is_an_inputs_memory_is_written_after_it_is_read():
    """``out=weight`` (another array object over the same memory), as optimizers call updates."""
    step = FusedMap(
        "adam_like", ("weight", "mean", "var", "lr", "eps"), ("out",),
        "out = weight - lr * mean / (sqrt(var) + eps)",
    )  # fmt: skip
    weight = RNG.standard_normal(6).astype("float32")
    mean, var = RNG.standard_normal(6).astype("float32"), RNG.random(6).astype("float32")
    expected = weight - np.float32(0.1) * mean / (np.sqrt(var) + np.float32(1e-8))
    step(np, weight, mean, var, np.float32(0.1), np.float32(1e-8), out=(weight[...],))
    np.testing.assert_allclose(weight, expected, rtol=1e-6)
    squares = FusedSum("squares", ("x",), "(x + x) * (x + x)")
    x = np.arange(4.0)
    assert squares(np, x, axis=(0,), scratch=x[...]) == 4 * (x * x).sum()  # scratch refused
    assert x.tolist() == [0.0, 1.0, 2.0, 3.0]


@pytest.mark.parametrize("act_type", ["tanh", "sigmoid"])
@pytest.mark.parametrize("through", ["Activation", "unary op"])
def test_activation_gradients_are_one_fused_kernel_in_mxnets_order(act_type, through):
    """``dy * tanh_grad(y)`` / ``dy * sigmoid_grad(y)`` as MXNet orders them, bit for bit, on the
    CPU (into the gradient, no temporary, aliasing the head gradient too) and one launch on a
    GPU; sigmoid's forward is a fused kernel too (tanh's is cupy's own ufunc)."""
    from mxnb.operator.ops.elemwise import SIGMOID_GRAD, TANH_GRAD

    g = RNG.standard_normal((6, 5, 7)).astype("float32")
    y = np.tanh(RNG.standard_normal(g.shape)).astype("float32")
    expected = g * (1 - y * y) if act_type == "tanh" else g * (y * (1 - y))
    fused = TANH_GRAD if act_type == "tanh" else SIGMOID_GRAD
    out, alias = np.empty_like(g), g.copy()
    fused(np, g, y, out=[out])
    fused(np, alias, y, out=[alias])
    np.testing.assert_array_equal(out, expected)
    np.testing.assert_array_equal(alias, expected)

    def step(ctx):
        x = mx.nd.array(np.random.default_rng(5).standard_normal((4, 6)).astype("float32"), ctx=ctx)
        head = mx.nd.array(np.linspace(-1, 1, 24, dtype="float32").reshape(4, 6), ctx=ctx)
        x.attach_grad()
        with mx.autograd.record():
            if through == "Activation":
                y = mx.nd.Activation(x, act_type=act_type)
            else:
                y = getattr(mx.nd, act_type)(x)
        y.backward(head)
        return x.grad.asnumpy()

    want = step(mx.cpu())
    with fake_virtual_gpus() as xp:
        step(mx.gpu(0))  # the first call verifies the kernel
        launches = xp.launches
        got = step(mx.gpu(0))
        launches = xp.launches - launches
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7)
    assert launches == (2 if act_type == "sigmoid" else 1)


def _every_fused_map():
    """The library's fused maps: BatchNorm's, the activations', and each update op's."""
    from mxnb.operator.ops import elemwise, norm
    from mxnb.operator.registry import get

    maps = [
        m for module in (norm, elemwise) for m in vars(module).values() if isinstance(m, FusedMap)
    ]
    for op in ("sgd_update", "sgd_mom_update", "adam_update", "rmsprop_update",
               "rmspropalex_update", "signsgd_update", "signum_update", "ftrl_update"):  # fmt: skip
        for clip in (-1.0, 0.5):
            extra = {"clip_weights": clip} if op.startswith("rms") else {}
            prop = get(op).create_property(lr=0.1, clip_gradient=clip, **extra)
            maps.append(prop.fused_map())
    nag = get("nag_mom_update").create_property(lr=0.1, momentum=0.9)
    maps += [nag.fused_map(False), nag.fused_map(True)]  # the momentum reads weight, or out
    return maps


@pytest.mark.parametrize("fused", _every_fused_map(), ids=repr)
@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_the_small_array_path_is_the_plain_path_bit_for_bit(fused, dtype):
    """Small outputs run ``python_source`` (the statements as numpy expressions): the same
    values, bit for bit and NaN for NaN, as ``evaluate``, for every fused map of the library,
    with arrays, numpy scalars and Python numbers as inputs, and an output over an input."""
    shape = (3, 5)
    args = []
    for index, _ in enumerate(fused.inputs):
        if index % 3 == 2:
            args.append(0.25 + index)  # a Python number
        elif index % 3 == 1:
            args.append(np.asarray(0.5 + index / 7, dtype=dtype)[()])  # a numpy scalar
        else:
            args.append((RNG.standard_normal(shape) * 2).astype(dtype))
    starts = [RNG.standard_normal(shape).astype(dtype) for _ in fused.outputs]
    with np.errstate(all="ignore"):
        expected = fused.evaluate(np, *args, out=[start.copy() for start in starts])
        got = [start.copy() for start in starts]
        fused(np, *args, out=got)
        for mine, theirs in zip(got, expected):
            np.testing.assert_array_equal(mine, theirs)
        if hasattr(args[0], "shape"):  # the last output over the first input, as out=weight is
            runs = []
            for run in (fused, fused.evaluate):
                outs = [start.copy() for start in starts[:-1]] + [args[0].copy()]
                run(np, outs[-1], *args[1:], out=outs)
                runs.append(outs)
            for mine, theirs in zip(*runs):
                np.testing.assert_array_equal(mine, theirs)
