"""The NDArray contract: creation, views that share a var, in-place forms, copies, errors, GC."""

from __future__ import annotations

import gc
import importlib

import numpy as np
import pytest

import mxnb as mx
from mxnb import storage
from mxnb.base import ContextError, DTypeError, MXNBError, OpError, ShapeError
from mxnb.engine.tracing import OpPush, Trace

DTYPES = ["float32", "float64", "float16", "int32", "int64", "uint8"]


# -- creation --------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", DTYPES)
def test_creation_functions_give_shape_dtype_and_values(dtype):
    assert mx.nd.zeros((2, 3), dtype=dtype).asnumpy().tolist() == [[0] * 3] * 2
    ones = mx.nd.ones((2,), dtype=dtype)
    assert ones.dtype == np.dtype(dtype) and ones.asnumpy().tolist() == [1, 1]
    assert mx.nd.full((2, 2), 7, dtype=dtype).asnumpy().tolist() == [[7, 7], [7, 7]]
    empty = mx.nd.empty((3, 1), dtype=dtype)
    assert (empty.shape, empty.dtype, empty.size, empty.ndim) == ((3, 1), np.dtype(dtype), 3, 2)
    source = np.arange(6).reshape(2, 3).astype(dtype)
    assert np.array_equal(mx.nd.array(source, dtype=dtype).asnumpy(), source)
    assert mx.nd.array(source, dtype=dtype).dtype == np.dtype(dtype)
    assert mx.nd.array(mx.nd.array(source, dtype=dtype)).dtype == np.dtype(
        dtype
    )  # NDArray keeps it


def test_numpy_sources_become_float32_unless_dtype_is_given():
    """As MXNet 1.x: ``mx.nd.array(np.zeros(3))`` is float32, not the source's float64."""
    assert mx.nd.array(np.zeros(3)).dtype == np.float32
    assert mx.nd.array(np.arange(3)).dtype == np.float32
    assert mx.nd.array(np.arange(3), dtype="int64").dtype == np.int64


def test_defaults_are_float32_on_the_current_context():
    assert mx.nd.zeros(3).dtype == np.float32
    assert mx.nd.array([1, 2, 3]).dtype == np.float32  # a list has no dtype: MXNet's default
    assert mx.nd.zeros(3).context == mx.cpu(0)
    with mx.cpu(2):
        assert mx.nd.ones(2).context == mx.cpu(2)


def test_arange_like_functions_and_unsupported_dtype():
    assert mx.nd.arange(0, 5, 2).asnumpy().tolist() == [0, 2, 4]
    assert mx.nd.arange(3, repeat=2).asnumpy().tolist() == [0, 0, 1, 1, 2, 2]
    base = mx.nd.ones((2, 2), dtype="int32")
    assert mx.nd.zeros_like(base).dtype == np.int32
    assert mx.nd.ones_like(base).asnumpy().sum() == 4
    assert mx.nd.full_like(base, 3).asnumpy().tolist() == [[3, 3], [3, 3]]
    with pytest.raises(DTypeError, match="float32"):
        mx.nd.zeros(2, dtype="complex64")


def test_ndarray_is_not_constructed_directly():
    with pytest.raises(MXNBError, match="mx.nd.array"):
        mx.nd.NDArray((2, 2))


# -- views share chunk and var ------------------------------------------------------------


def test_views_share_the_chunk_and_the_var(engine):
    a = mx.nd.array(np.arange(12, dtype=np.float32).reshape(3, 4))
    row = a[1]
    rows = a[1:3]
    flat = a.reshape(-1)
    for view in (row, rows, flat):
        assert view._var is a._var and view._chunk is a._chunk
    assert row.shape == (4,) and rows.shape == (2, 4) and flat.shape == (12,)
    assert rows._offset == 4 * 4  # one row of float32 in


def test_writes_through_views_are_ordered_with_reads(engine):
    r"""
    a[:] = 1  ->  a[1:2] = 5 (view)  ->  b = a * 2  ->  a[0] = 9 (view)   all on a's var:
    b must see the write before it and not the one after it.
    """
    a = mx.nd.zeros((2, 3))
    a[:] = 1
    view = a[1:2]
    view[:] = 5
    b = a * 2
    first = a[0]
    first[:] = 9
    assert b.asnumpy().tolist() == [[2, 2, 2], [10, 10, 10]]
    assert a.asnumpy().tolist() == [[9, 9, 9], [5, 5, 5]]


def test_reshape_codes_and_errors():
    a = mx.nd.zeros((2, 3, 4))
    assert a.reshape((0, -1)).shape == (2, 12)
    assert a.reshape(4, 0, 2).shape == (4, 3, 2)
    assert a.reshape(shape=(-1,)).shape == (24,)
    assert a.expand_dims(1).shape == (2, 1, 3, 4)
    assert a.reshape(1, 24).squeeze().shape == (24,)
    assert a.flatten().shape == (2, 12)
    with pytest.raises(ShapeError, match=r"\(2, 3, 4\)"):
        a.reshape(5, 5)


def test_first_axis_indexing_returns_views_and_other_keys_copies():
    a = mx.nd.array(np.arange(6).reshape(2, 3))
    assert a[-1].asnumpy().tolist() == [3, 4, 5]
    assert mx.nd.array([1, 2, 3])[1].shape == (1,)  # MXNet: a 1-d index keeps one axis
    column = a[:, 1]
    assert column._var is not a._var  # a copy, made by a pushed op
    assert column.asnumpy().tolist() == [1, 4]
    assert a[mx.nd.array([1, 0], dtype="int32")].asnumpy().tolist() == [[3, 4, 5], [0, 1, 2]]
    with pytest.raises(IndexError, match="out of bounds"):
        a[2]


# -- __setitem__ ---------------------------------------------------------------------------


def test_setitem_with_scalars_arrays_and_numpy(engine):
    a = mx.nd.zeros((3, 3))
    a[:] = 1
    a[0] = 2
    a[1:3, 2] = 7
    a[2] = mx.nd.array([4, 5, 6])
    a[:, 0] = np.array([8, 8, 8])
    assert a.asnumpy().tolist() == [[8, 2, 2], [8, 1, 7], [8, 5, 6]]
    with pytest.raises(ShapeError, match=r"\(2,\).*\(3,\)"):
        a[0] = np.array([1, 2])


def test_setitem_from_another_context_copies_across():
    a = mx.nd.zeros((2,), ctx=mx.cpu(1))
    a[:] = mx.nd.array([3, 4], ctx=mx.cpu(0))
    assert a.asnumpy().tolist() == [3, 4]


# -- arithmetic through registered ops ----------------------------------------------------------


def test_arithmetic_with_scalars_arrays_and_broadcasting(engine):
    x = np.array([[1.0, 2.0], [3.0, 4.0]], dtype=np.float32)
    y = np.array([10.0, 20.0], dtype=np.float32)
    a, b = mx.nd.array(x), mx.nd.array(y)
    cases = {
        "a + 1": (a + 1, x + 1),
        "2 - a": (2 - a, 2 - x),
        "a * a": (a * a, x * x),
        "a / 2": (a / 2, x / 2),
        "3 / a": (3 / a, 3 / x),
        "a ** 2": (a**2, x**2),
        "2 ** a": (2**a, 2**x),
        "a % 3": (a % 3, x % 3),
        "-a": (-a, -x),
        "abs(-a)": (abs(-a), x),
        "a + b": (a + b, x + y),
        "b - a": (b - a, y - x),
        "a * b": (a * b, x * y),
        "a / b": (a / b, x / y),
        "a + numpy": (a + x, x + x),
    }
    for label, (got, want) in cases.items():
        np.testing.assert_allclose(got.asnumpy(), want, rtol=1e-6, err_msg=label)


def test_comparisons_give_zero_one_arrays(engine):
    a = mx.nd.array([1, 2, 3])
    b = mx.nd.array([3, 2, 1])
    assert (a == 2).asnumpy().tolist() == [0, 1, 0]
    assert (a != b).asnumpy().tolist() == [1, 0, 1]
    assert (a > b).asnumpy().tolist() == [0, 0, 1]
    assert (a >= 2).asnumpy().tolist() == [0, 1, 1]
    assert (a < b).asnumpy().tolist() == [1, 0, 0]
    assert (a <= 1).asnumpy().tolist() == [1, 0, 0]
    assert (1 < a).asnumpy().tolist() == [0, 1, 1]
    grid = mx.nd.array([[1], [2]]) == mx.nd.array([1, 2, 3])
    assert grid.asnumpy().tolist() == [[1, 0, 0], [0, 1, 0]]


def test_in_place_forms_mutate_without_new_storage(engine):
    a = mx.nd.ones((4,))
    chunk, var = a._chunk, a._var
    a.wait_to_read()
    before = storage.stats(a.context).allocs
    b = mx.nd.array([1, 2, 3, 4])
    after_b = storage.stats(a.context).allocs
    a += b
    a -= 1
    a *= 3
    a /= 2
    a += mx.nd.array([1])  # broadcast into a
    assert a._chunk is chunk and a._var is var
    assert a.asnumpy().tolist() == [2.5, 4, 5.5, 7]
    # only b and the broadcast operand were allocated: in-place ops allocate nothing
    assert storage.stats(a.context).allocs - after_b == 1 and after_b - before == 1
    with pytest.raises(ShapeError, match=r"\(4,\).*\(2, 4\)"):
        a += mx.nd.ones((2, 4))


def test_in_place_op_is_one_engine_op_writing_the_array():
    a = mx.nd.ones((2,))
    with Trace() as tr:
        a += 1
        mx.nd.waitall()
    [push] = [e for e in tr.events_of(OpPush) if e.name == "_plus_scalar"]
    assert push.mutate_vars == (a._var.id,)
    assert push.const_vars == ()  # the input is also the output: counted once, as a write


def test_broadcast_shape_mismatch_names_both_shapes():
    with pytest.raises(ShapeError, match=r"\(2, 3\).*\(4,\)"):
        mx.nd.ones((2, 3)) + mx.nd.ones((4,))


def test_mixing_contexts_names_both_contexts():
    with pytest.raises(ContextError, match=r"cpu\(0\).*cpu\(1\)"):
        mx.nd.ones(2, ctx=mx.cpu(0)) + mx.nd.ones(2, ctx=mx.cpu(1))
    with pytest.raises(ContextError, match=r"cpu\(0\).*cpu\(1\)"):
        mx.nd.elemwise_add(mx.nd.ones(2, ctx=mx.cpu(0)), mx.nd.ones(2, ctx=mx.cpu(1)))


# -- casts, copies, contexts, reductions ------------------------------------------------------


def test_astype_copy_copyto_and_as_in_context(engine):
    a = mx.nd.array([1.5, 2.5])
    as_int = a.astype("int32")
    assert as_int.dtype == np.int32 and as_int.asnumpy().tolist() == [1, 2]
    assert a.astype("float32", copy=False) is a
    copy = a.copy()
    copy[:] = 0
    assert a.asnumpy().tolist() == [1.5, 2.5]
    target = mx.nd.zeros((2,), dtype="float64")
    assert a.copyto(target) is target
    assert target.asnumpy().tolist() == [1.5, 2.5]
    other = a.copyto(mx.cpu(3))
    assert other.context == mx.cpu(3) and other.asnumpy().tolist() == [1.5, 2.5]
    assert a.as_in_context(mx.cpu(0)) is a
    assert a.as_in_context(mx.cpu(3)).context == mx.cpu(3)
    with pytest.raises(ShapeError, match=r"\(2,\).*\(3,\)"):
        a.copyto(mx.nd.zeros(3))


def test_virtual_gpu_arrays_live_in_their_own_storage():
    mx.context.set_virtual_gpus(1)
    try:
        before = storage.stats(mx.gpu(0)).bytes_in_use
        g = mx.nd.ones((4, 4), ctx=mx.gpu(0))
        assert storage.stats(mx.gpu(0)).bytes_in_use == before + 64
        assert repr(g.context) == "gpu(0) [virtual]"
        assert (g.copyto(mx.cpu()) * 2).asnumpy().sum() == 32
        with pytest.raises(ContextError, match=r"cpu\(0\).*gpu\(0\)"):
            mx.nd.ones((4, 4)) + g
    finally:
        mx.context.set_virtual_gpus(0)


def test_a_real_gpu_without_cupy_is_a_clear_context_error():
    with pytest.raises(ContextError, match="cupy|GPU"):
        mx.nd.zeros(2, ctx=mx.gpu(5))


def test_transpose_and_reductions(engine):
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    a = mx.nd.array(x)
    assert np.array_equal(a.T.asnumpy(), x.T)
    assert a.sum().asnumpy().tolist() == [15]
    assert a.sum(axis=1).asnumpy().tolist() == [3, 12]
    assert a.mean(axis=0, keepdims=True).asnumpy().tolist() == [[1.5, 2.5, 3.5]]
    assert a.max().asscalar() == 5 and a.min(axis=1).asnumpy().tolist() == [0, 3]
    assert a.prod(axis=0).asnumpy().tolist() == [0, 4, 10]
    assert a.argmax(axis=1).asnumpy().tolist() == [2, 2]
    assert mx.nd.sum(a, axis=(0, 1)).asscalar() == 15
    assert a.exp().shape == (2, 3)  # unary ops as methods, as MXNet's NDArray has them
    assert float(a[0].sum()) == 3.0


# -- async and lifetime -------------------------------------------------------------------


def test_gc_of_the_last_array_returns_memory_to_the_pool(engine):
    ctx = mx.cpu(4)
    mx.nd.waitall()
    before = storage.stats(ctx)
    a = mx.nd.ones((1000,), ctx=ctx)
    view = a[10:20]
    del a
    gc.collect()
    mx.nd.waitall()
    assert storage.stats(ctx).bytes_in_use == before.bytes_in_use + 4096  # the view keeps the chunk
    del view
    gc.collect()
    mx.nd.waitall()
    after = storage.stats(ctx)
    assert after.bytes_in_use == before.bytes_in_use
    assert after.pooled_bytes >= 4096
    again = mx.nd.zeros((1000,), ctx=ctx)
    assert again.handle.pool_hit


def test_a_failing_op_surfaces_at_asnumpy_with_the_op_name(engine):
    a = mx.nd.ones((2,))

    @mx.operator.register("_test_nd_fails")
    class FailsProp(mx.operator.OperatorProperty):
        def create_operator(self, ctx):
            class Fails(mx.operator.Operator):
                def forward(self, ctx, in_data, req, out_data, aux):
                    raise RuntimeError("kernel exploded")

            return Fails()

    out = mx.nd._test_nd_fails(a)
    with pytest.raises(OpError, match="_test_nd_fails") as info:
        out.asnumpy()
    assert "kernel exploded" in repr(info.value.__cause__) or "kernel exploded" in str(info.value)
    assert (a + 1).asnumpy().tolist() == [2, 2]  # the engine stays usable


def test_scalar_conversions_and_len():
    a = mx.nd.array([3.0])
    assert float(a) == 3.0 and int(a) == 3 and bool(a)
    assert len(mx.nd.zeros((4, 2))) == 4
    assert np.asarray(mx.nd.ones(2)).tolist() == [1, 1]
    with pytest.raises(ShapeError):
        mx.nd.zeros(2).asscalar()
    assert "NDArray 2x2 @cpu(0)" in repr(mx.nd.zeros((2, 2)))


def test_chunks_dying_without_an_engine_are_freed_later(monkeypatch):
    """A chunk may die inside set_engine (engine lock held) or in the cycle collector:
    its delete is deferred, never blocking, and pushed at the next allocation or waitall."""
    chunk_module = importlib.import_module("mxnb.ndarray.chunk")
    ctx = mx.cpu(6)
    mx.nd.waitall()
    before = storage.stats(ctx).bytes_in_use
    a = mx.nd.ones((256,), ctx=ctx)
    with monkeypatch.context() as patch:
        patch.setattr(mx.engine, "_engine", None)
        del a
        assert len(chunk_module._deferred_deletes) == 1
    assert storage.stats(ctx).bytes_in_use == before + 1024
    mx.nd.waitall()
    assert storage.stats(ctx).bytes_in_use == before
    cycle = [mx.nd.ones((256,), ctx=ctx)]
    cycle.append(cycle)
    del cycle
    gc.collect()  # freed by the cycle collector: deferred, then flushed
    mx.nd.waitall()
    assert storage.stats(ctx).bytes_in_use == before


def test_views_taken_while_recording_are_recorded_ops():
    """Under autograd.record, a[i], a[i:j] and reshape go through slice_axis / Reshape so the
    gradient reaches the base array (MXNet's SliceWithRecord / ReshapeWithRecord)."""
    x = mx.nd.array([[1.0, 2.0], [3.0, 4.0]])
    x.attach_grad()
    with mx.autograd.record():
        total = (x[1] * 3).sum() + (x[0:1] * 2).sum() + x.reshape(4).sum()
    total.backward()
    assert x.grad.asnumpy().tolist() == [[3, 3], [4, 4]]


def test_more_methods_through_the_registry(engine):
    a = mx.nd.array([[1.0, -2.0], [3.0, 5.0]])
    assert a.clip(-1, 2).asnumpy().tolist() == [[1, -1], [2, 2]]
    assert (7 % mx.nd.array([2.0, 4.0])).asnumpy().tolist() == [1, 3]
    joined = mx.nd.concatenate([a, a], axis=1)
    assert joined.shape == (2, 4) and joined.asnumpy()[1].tolist() == [3, 5, 3, 5]
    assert a.detach().asnumpy().tolist() == a.asnumpy().tolist()


def test_mixed_dtypes_name_the_op_the_argument_and_both_dtypes():
    """As MXNet: an op whose inputs must share a dtype refuses a mismatch instead of casting."""
    a, b = mx.nd.ones(2), mx.nd.ones(2, dtype="int32")
    with pytest.raises(DTypeError, match=r"elemwise_add: input rhs has dtype int32.*float32"):
        a + b
    with pytest.raises(DTypeError, match="out= has dtype float64"):
        mx.nd.elemwise_add(a, a, out=mx.nd.zeros(2, dtype="float64"))
    assert (a + b.astype("float32")).asnumpy().tolist() == [2, 2]
    assert (
        mx.nd.array(np.ones(2)).dtype == np.float32
    )  # MXNet 1.9.1: float32 unless dtype= is given
