"""The fast paths of small ops and elementwise kernels keep the slow paths' outcomes.

* A temporary whose var has no pending op is freed at once, without an engine
  op, and its var is deleted exactly as ``push_delete`` would leave it.
* On threaded engines a small temporary that dies while its op is still
  queued joins a batch; one engine op frees a whole batch after the ops on
  every var in it; ``mx.nd.waitall()`` pushes partial batches.
* Elementwise kernels that are one ufunc compute straight into the output
  (``out=``) and store the same values as the general path.
"""

from __future__ import annotations

import gc
import importlib
import threading
import time

import numpy as np
import pytest

import mxnb as mx
from mxnb import storage
from mxnb.base import VarDeletedError
from mxnb.engine.tracing import OpPush, Trace
from mxnb.operator import registry
from mxnb.operator.base import OpReqType
from mxnb.operator.ops import binary, elemwise, scalar
from mxnb.operator.ops._common import ufunc_into

nd_module = importlib.import_module("mxnb.ndarray.ndarray")
chunk_module = importlib.import_module("mxnb.ndarray.chunk")


def _count_push_delete(monkeypatch: pytest.MonkeyPatch) -> list:
    """Record every push_delete on the current engine (the slow delete path)."""
    eng = mx.engine.get()
    calls: list = []
    original = eng.push_delete

    def counting(var, ctx=None, fn=None):
        calls.append(var)
        return original(var, ctx, fn)

    monkeypatch.setattr(eng, "push_delete", counting)
    return calls


# -- idle temporaries ------------------------------------------------------------------


def test_an_idle_temporary_is_freed_without_an_engine_op(naive, monkeypatch):
    """``c = a + b`` on the naive engine: c's op has run, so dropping c frees it at once."""
    ctx = mx.cpu(7)
    a, b = mx.nd.ones((64,), ctx=ctx), mx.nd.ones((64,), ctx=ctx)
    mx.nd.waitall()
    calls = _count_push_delete(monkeypatch)
    before = storage.stats(ctx).bytes_in_use
    c = a + b
    var = c._var
    assert storage.stats(ctx).bytes_in_use == before + 256
    del c
    assert calls == []
    assert var.deleted
    assert storage.stats(ctx).bytes_in_use == before  # no wait needed: nothing was pending
    with pytest.raises(VarDeletedError):
        mx.engine.get().push_sync(lambda rctx: None, ctx, [var], [], 0, "late read")


@pytest.mark.timeout(30)
def test_a_busy_chunk_is_never_freed_early(engine):
    """A chunk whose var still has an op pending is freed only after that op ran.

    blocker (writes x) -> read of x (queued) ; del x -> memory back only after both
    """
    ctx = mx.cpu(8)
    mx.nd.waitall()
    before = storage.stats(ctx).bytes_in_use
    x = mx.nd.zeros((16,), ctx=ctx)
    release = threading.Event()
    seen: list = []
    eng = mx.engine.get()
    raw = x._array
    if mx.engine.engine_type() in ("threaded", "threaded_per_device"):
        eng.push_sync(lambda rctx: release.wait(10), ctx, [], [x._var], 0, "blocker")
    eng.push_sync(lambda rctx: seen.append(raw.sum()), ctx, [x._var], [], 0, "reader")
    var = x._var
    del x
    gc.collect()
    release.set()
    mx.nd.waitall()
    assert seen == [0.0]
    assert var.deleted
    assert storage.stats(ctx).bytes_in_use == before


def test_tracing_shows_every_delete_as_an_op(naive):
    """While a trace records, a dropped temporary is deleted by a ``delete:`` op."""
    a = mx.nd.ones((4,))
    mx.nd.waitall()
    with mx.engine.trace() as tr:
        c = a + 1
        name = c._var.name
        del c
        mx.nd.waitall()
    assert f"delete:{name}" in [event.name for event in tr.events_of(OpPush)]


# -- batched deletes on threaded engines -----------------------------------------------


@pytest.mark.timeout(30)
def test_small_busy_temporaries_are_deleted_in_batches(threaded, monkeypatch):
    """Beyond the parked ones, BATCH_SIZE dead chunks make ONE delete op, run after the blocker.

    blocker (writes t1..tN) ; del t1..tN -> PARK_MAX parked, delete:batch (writes the rest)
    """
    ctx = mx.cpu(9)
    mx.nd.waitall()
    before = storage.stats(ctx).bytes_in_use
    size = chunk_module.BATCH_SIZE + chunk_module.PARK_MAX
    temps = [mx.nd.zeros((8,), ctx=ctx) for _ in range(size)]
    mx.nd.waitall()
    with_temps = storage.stats(ctx).bytes_in_use
    vars_ = [t._var for t in temps]
    release = threading.Event()
    eng = mx.engine.get()
    eng.push_sync(lambda rctx: release.wait(10), ctx, [], vars_, 0, "blocker")
    calls = _count_push_delete(monkeypatch)
    del temps
    assert calls == []  # no delete op per chunk
    assert storage.stats(ctx).bytes_in_use == with_temps  # not freed while blocked
    assert not any(var.deleted for var in vars_)
    release.set()
    eng.wait_for_all()  # the batch op was pushed when the batch filled up
    assert sum(var.deleted for var in vars_) == chunk_module.BATCH_SIZE
    mx.nd.waitall()  # and the parked ones are deleted now
    assert all(var.deleted for var in vars_)
    assert storage.stats(ctx).bytes_in_use == before


@pytest.mark.timeout(30)
def test_waitall_pushes_a_partial_batch(threaded):
    ctx = mx.cpu(10)
    mx.nd.waitall()
    before = storage.stats(ctx).bytes_in_use
    t = mx.nd.zeros((8,), ctx=ctx)
    release = threading.Event()
    mx.engine.get().push_sync(lambda rctx: release.wait(10), ctx, [], [t._var], 0, "blocker")
    var = t._var
    del t
    release.set()
    mx.nd.waitall()
    assert var.deleted
    assert storage.stats(ctx).bytes_in_use == before


@pytest.mark.timeout(30)
def test_a_large_busy_temporary_is_deleted_on_its_own(threaded, monkeypatch):
    """Blocks above BATCH_MAX_BYTES go back to the pool as soon as their last op ran."""
    ctx = mx.cpu(11)
    mx.nd.waitall()
    big = mx.nd.zeros((chunk_module.BATCH_MAX_BYTES // 4 + 1,), ctx=ctx)
    release = threading.Event()
    mx.engine.get().push_sync(lambda rctx: release.wait(10), ctx, [], [big._var], 0, "blocker")
    calls = _count_push_delete(monkeypatch)
    var = big._var
    del big
    release.set()
    mx.nd.waitall()
    assert calls == [var] and var.deleted


@pytest.mark.timeout(60)
def test_a_loop_of_temporaries_returns_all_memory(engine):
    """``c = a + b`` a few hundred times, then waitall: every temporary's block is back."""
    ctx = mx.cpu(12)
    a, b = mx.nd.ones((100,), ctx=ctx), mx.nd.ones((100,), ctx=ctx)
    mx.nd.waitall()
    before = storage.stats(ctx).bytes_in_use
    for _ in range(300):
        c = a + b
    assert c.asnumpy().tolist() == [2.0] * 100
    del c
    mx.nd.waitall()
    assert storage.stats(ctx).bytes_in_use == before


# -- kernels computing with out= ------------------------------------------------------

_FLOATS = ["float16", "float32", "float64"]


def _same(got: np.ndarray, want: np.ndarray) -> bool:
    return got.dtype == want.dtype and np.array_equal(got, want, equal_nan=True)


@pytest.mark.parametrize("dtype", _FLOATS)
@pytest.mark.parametrize("name", [n for n, r in elemwise.UNARY.items() if r.ufunc])
def test_unary_ufunc_kernels_store_what_the_rule_computes(name, dtype):
    x = np.linspace(0.05, 0.95, 11).astype(dtype)  # in every domain (warnings are errors)
    with np.errstate(all="raise"):
        want = elemwise.UNARY[name].forward(np, x).astype(dtype)
        got = getattr(mx.nd, name)(mx.nd.array(x, dtype=dtype)).asnumpy()
    assert _same(got, want)


@pytest.mark.parametrize("dtype", _FLOATS)
@pytest.mark.parametrize("name", [n for n, r in binary.BINARY.items() if r.ufunc])
def test_binary_ufunc_kernels_store_what_the_rule_computes(name, dtype):
    a = np.linspace(0.5, 2.5, 12).astype(dtype).reshape(3, 4)
    b = np.linspace(0.5, 3.0, 4).astype(dtype)
    rule = binary.BINARY[name]
    with np.errstate(all="raise"):
        want = rule.forward(np, a, b).astype(dtype)
        got = getattr(mx.nd, f"broadcast_{name}")(
            mx.nd.array(a, dtype=dtype), mx.nd.array(b, dtype=dtype)
        ).asnumpy()
        same = rule.forward(np, a, a[::-1]).astype(dtype)
        got_same = getattr(mx.nd, binary._ELEMWISE_NAMES.get(name, f"_{name}"))(
            mx.nd.array(a, dtype=dtype), mx.nd.array(a[::-1], dtype=dtype)
        ).asnumpy()
    assert _same(got, want) and _same(got_same, same)


@pytest.mark.parametrize("dtype", [*_FLOATS, "int32"])
@pytest.mark.parametrize("name", [n for n, r in scalar.SCALAR.items() if r.ufunc])
def test_scalar_ufunc_kernels_store_what_the_rule_computes(name, dtype):
    x = np.linspace(1.0, 5.0, 9).astype(dtype)
    with np.errstate(all="raise"):
        want = scalar.SCALAR[name].forward(np, x, 1.5).astype(dtype)
        got = getattr(mx.nd, name)(mx.nd.array(x, dtype=dtype), scalar=1.5).asnumpy()
    assert _same(got, want)


def test_in_place_arithmetic_writes_over_its_operand():
    a = mx.nd.array(np.arange(6, dtype=np.float32))
    b = mx.nd.ones((6,))
    a += b
    a *= 2
    a -= a
    assert a.asnumpy().tolist() == [0.0] * 6
    x = mx.nd.array(np.arange(4, dtype=np.float32))
    mx.nd.elemwise_add(x, x, out=x)
    assert x.asnumpy().tolist() == [0.0, 2.0, 4.0, 6.0]


def test_ufunc_into_only_takes_direct_float_writes():
    """ADD_TO, integer outputs and mixed dtypes go through the general write."""
    out = np.zeros(3, np.float32)
    a = np.ones(3, np.float32)
    assert ufunc_into(np, "add", out, OpReqType.WRITE_TO, a, a) and out.tolist() == [2.0] * 3
    assert ufunc_into(np, "add", out, OpReqType.WRITE_INPLACE, out, 1.0)
    assert out.tolist() == [3.0] * 3
    assert not ufunc_into(np, "add", out, OpReqType.ADD_TO, a, a)
    assert not ufunc_into(np, "add", out, OpReqType.NULL, a, a)
    assert not ufunc_into(np, "add", out, OpReqType.WRITE_TO, a, np.ones(3, np.float64))
    assert not ufunc_into(np, "divide", np.zeros(3, np.int32), OpReqType.WRITE_TO, a, a)
    assert out.tolist() == [3.0] * 3


# -- direct kernels: an op whose forward is one ufunc call runs as that call ------------

invoke_module = importlib.import_module("mxnb.ndarray.invoke")


def _plan_of(op: str, inputs: list, params: dict) -> object:
    """The plan invoke_visible cached for ``op`` on ``inputs`` (an earlier test's plan for the
    same op and shapes, on another context or under another key, is forgotten first)."""

    def matching() -> list:
        return [
            key
            for key in invoke_module._plans
            if key[0] == op and key[2] == inputs[0].shape and key[3] == inputs[0].dtype
        ]

    for key in matching():
        del invoke_module._plans[key]
    nd_module._invoke(op, inputs, params).wait_to_read()
    [key] = matching()
    return invoke_module._plans[key]


def _general_forward(plan, inputs: list[np.ndarray]) -> np.ndarray:
    """What the operator's own forward stores (the path without a direct kernel)."""
    from mxnb.operator.base import OpContext

    out = np.zeros(plan.out_shapes[0], plan.out_types[0])
    operator = plan.prop.create_operator(mx.cpu())
    operator.forward(OpContext(False, None, [], np), inputs, [OpReqType.WRITE_TO], [out], [])
    return out


@pytest.mark.parametrize("dtype", [*_FLOATS, "int32"])
@pytest.mark.parametrize(
    ("op", "params", "arity"),
    [
        ("elemwise_add", {}, 2),
        ("elemwise_div", {}, 2),
        ("broadcast_maximum", {}, 2),
        ("_minus_scalar", {"scalar": 1.5}, 1),
        ("_rdiv_scalar", {"scalar": 2.0}, 1),
        ("exp", {}, 1),
        ("negative", {}, 1),
    ],
)
def test_direct_kernels_store_what_the_operator_computes(op, params, arity, dtype):
    """Float ops with one dtype run as one ufunc call; ints and the rest take forward."""
    raw = [np.linspace(1.0, 3.5, 6).astype(dtype).reshape(2, 3) + k for k in range(arity)]
    inputs = [mx.nd.array(x, dtype=dtype) for x in raw]
    plan = _plan_of(op, inputs, params)
    assert (plan.direct is not None) == (dtype != "int32")
    got = nd_module._invoke(op, inputs, params).asnumpy()
    assert _same(got, _general_forward(plan, raw))


def test_mixed_dtypes_take_the_general_forward():
    """An input whose dtype differs from the output's is cast on write: no direct kernel."""
    from mxnb.operator.ops._common import ufunc_types_direct

    assert ufunc_types_direct([np.dtype("float32")] * 2, [np.dtype("float32")])
    assert not ufunc_types_direct([np.dtype("float32"), np.dtype("float64")], [np.dtype("float32")])
    assert not ufunc_types_direct([np.dtype("int32")], [np.dtype("int32")])
    assert not ufunc_types_direct([np.dtype("float32")], [np.dtype("float32")] * 2)


def test_a_property_that_overrides_forward_keeps_its_forward():
    """A subclass of a ufunc op with its own forward is never short-circuited."""
    from mxnb.operator import register

    base = type(registry.get("_plus_scalar").create_property(scalar=1.0))

    @register("_test_plus_scalar_doubled")
    class Doubled(base):
        def forward(self, ctx, in_data, req, out_data, aux):
            out_data[0][...] = 2 * (in_data[0] + self.scalar)

    x = mx.nd.ones((3,))
    plan = _plan_of("_test_plus_scalar_doubled", [x], {"scalar": 1.0})
    assert plan.direct is None
    assert (
        nd_module._invoke("_test_plus_scalar_doubled", [x], {"scalar": 1.0}).asnumpy().tolist()
        == [4.0] * 3
    )


def test_registering_an_op_again_replaces_the_cached_plan():
    """A notebook cell that redefines an op: the next call runs the new definition."""
    from mxnb.operator import register

    base = type(registry.get("_plus_scalar").create_property(scalar=1.0))
    register("_test_redefined")(type("First", (base,), {}))
    x = mx.nd.ones((2,))
    assert (
        nd_module._invoke("_test_redefined", [x], {"scalar": 1.0}).asnumpy().tolist() == [2.0] * 2
    )

    class Second(base):
        def forward(self, ctx, in_data, req, out_data, aux):
            out_data[0][...] = -1

    register("_test_redefined")(Second)
    assert (
        nd_module._invoke("_test_redefined", [x], {"scalar": 1.0}).asnumpy().tolist() == [-1.0] * 2
    )


def test_in_place_scalar_ops_are_pushed_as_one_write(naive):
    """``a += 1`` reads and writes a's var: the push names it once, as a write."""
    a = mx.nd.ones((4,))
    b = mx.nd.ones((4,))
    with Trace() as tr:
        a += 1
        a *= b
        mx.nd.waitall()
    first, second = [e for e in tr.events_of(OpPush) if not e.name.startswith("delete")]
    assert (first.const_vars, first.mutate_vars) == ((), (a._var.id,))
    assert (second.const_vars, second.mutate_vars) == ((b._var.id,), (a._var.id,))
    assert a.asnumpy().tolist() == [2.0] * 4


def test_direct_kernels_are_recorded_and_differentiated():
    x = mx.nd.array([1.0, 2.0, 3.0])
    x.attach_grad()
    with mx.autograd.record():
        y = (x * 3 + x) * x - 1
    y.backward()
    assert x.grad.asnumpy().tolist() == [8.0, 16.0, 24.0]  # d/dx 4x^2 - 1


def test_debug_mode_still_guards_inputs_of_direct_kernels(engine):
    """In debug mode the general path runs (read-only inputs); results are unchanged."""
    previous = mx.engine.is_debug()
    mx.engine.set_debug(True)
    try:
        a, b = mx.nd.ones((3,)), mx.nd.ones((3,))
        assert (a + b).asnumpy().tolist() == [2.0] * 3
        a += 2
        assert a.asnumpy().tolist() == [3.0] * 3
    finally:
        mx.engine.set_debug(previous)


# -- operators as methods --------------------------------------------------------------


def test_operator_methods_are_found_without_a_class_getattr():
    """``x.exp()`` is a descriptor per op: plain attribute reads never reach __getattr__."""
    assert "__getattr__" not in vars(mx.nd.NDArray)
    x = mx.nd.array([0.0, 1.0])
    assert np.allclose(x.exp().asnumpy(), np.exp([0.0, 1.0]))
    assert x.exp.__doc__ == mx.nd.exp.__doc__
    with pytest.raises(AttributeError, match="no attribute 'not_an_op'"):
        x.not_an_op  # noqa: B018
    assert not hasattr(x, "_private_thing")


# -- parked large blocks on threaded engines ------------------------------------------------


def _gate(var) -> threading.Event:
    """Push an op writing ``var`` that waits for the returned event (so later ops queue)."""
    release = threading.Event()
    mx.engine.get().push_sync(lambda rctx: release.wait(10), mx.cpu(), [], [var], 0, "gate")
    return release


@pytest.mark.timeout(30)
@pytest.mark.parametrize("debug", [False, True], ids=["direct", "general"])
def test_a_chain_of_large_temporaries_reuses_a_few_blocks(threaded, debug):
    r"""The pusher runs ahead; dead temporaries' blocks go to the next outputs of their size.

    gate (writes a) -> x1 = a*2 -> x2 = x1*2 -> ... -> x12   (all queued behind the gate)

    Debug mode takes the general push path (read-only inputs); it reuses blocks too.
    """
    previous = mx.engine.is_debug()
    mx.engine.set_debug(debug)
    try:
        _chain_of_large_temporaries()
    finally:
        mx.engine.set_debug(previous)


def _chain_of_large_temporaries() -> None:
    ctx = mx.cpu()
    n = chunk_module.BATCH_MAX_BYTES // 4 * 2  # large: not batched
    a = mx.nd.ones((n,), ctx=ctx)
    mx.nd.waitall()
    block = storage.size_class(4 * n)
    before = storage.stats(ctx).bytes_in_use
    release = _gate(a._var)
    x = a * 2
    for _ in range(11):
        x = x * 2
    held = storage.stats(ctx).bytes_in_use - before
    assert held <= (chunk_module.PARK_MAX + 2) * block  # not twelve blocks
    release.set()
    assert x.asnumpy()[:3].tolist() == [2.0**12] * 3
    del x
    mx.nd.waitall()
    assert storage.stats(ctx).bytes_in_use == before


@pytest.mark.timeout(30)
def test_a_parked_block_is_written_only_after_the_ops_that_read_it(threaded):
    r"""The new owner of a block waits for every op still using it.

    gate (writes x) -> reader (reads x) ; del x ; y = z + 1 takes x's block: runs after reader
    """
    ctx = mx.cpu()
    n = chunk_module.BATCH_MAX_BYTES // 4 * 2
    x = mx.nd.full((n,), 3.0, ctx=ctx)
    z = mx.nd.zeros((n,), ctx=ctx)
    mx.nd.waitall()
    release = _gate(x._var)
    raw = x._array
    seen: list = []
    mx.engine.get().push_sync(
        lambda rctx, raw=raw: seen.append(float(raw.sum())), ctx, [x._var], [], 0, "reader"
    )
    var = x._var
    del x, raw
    y = z + 1  # takes x's parked block
    assert y._var is var and not var.deleted  # adopted with the block: it orders y after reader
    release.set()
    assert y.asnumpy().sum() == n
    assert seen == [3.0 * n]  # the reader saw x, not y's values
    mx.nd.waitall()


@pytest.mark.timeout(30)
def test_waitall_deletes_parked_blocks(threaded):
    ctx = mx.cpu(13)
    n = chunk_module.BATCH_MAX_BYTES // 4 * 2
    mx.nd.waitall()
    before = storage.stats(ctx).bytes_in_use
    x = mx.nd.zeros((n,), ctx=ctx)
    release = _gate(x._var)
    var = x._var
    del x
    assert chunk_module._parked  # kept for the next output of its size
    release.set()
    mx.nd.waitall()
    assert var.deleted and not any(chunk_module._parked.values())
    assert storage.stats(ctx).bytes_in_use == before


@pytest.mark.timeout(30)
def test_a_loop_of_small_temporaries_hands_blocks_on_without_delete_ops(threaded, monkeypatch):
    """``c = a + b`` in a loop: each output takes a dead temporary's block; nothing is deleted."""
    ctx = mx.cpu(14)
    a, b = mx.nd.ones((100,), ctx=ctx), mx.nd.ones((100,), ctx=ctx)
    mx.nd.waitall()
    before = storage.stats(ctx)
    batches: list = []
    monkeypatch.setattr(chunk_module, "_push_batch", lambda *args: batches.append(args))
    calls = _count_push_delete(monkeypatch)
    for _ in range(500):
        c = a + b
    assert c.asnumpy().tolist() == [2.0] * 100
    after = storage.stats(ctx)
    assert calls == [] and batches == []
    assert after.pool_misses - before.pool_misses <= chunk_module.PARK_MAX + 1
    del c
    monkeypatch.undo()
    mx.nd.waitall()
    assert storage.stats(ctx).bytes_in_use == before.bytes_in_use


@pytest.mark.timeout(30)
def test_a_block_whose_var_holds_an_error_is_not_parked(threaded):
    """Its next owner's first op would be skipped for an error it has nothing to do with."""
    ctx = mx.cpu(18)
    x = mx.nd.zeros((64,), ctx=ctx)
    eng = mx.engine.get()
    eng.push_sync(lambda rctx: 1 / 0, ctx, [], [x._var], 0, "fails")
    release = _gate(x._var)  # keeps the var busy after the failure
    var = x._var
    deadline = time.monotonic() + 10
    while var.error is None and time.monotonic() < deadline:
        time.sleep(0.001)
    assert var.error is not None
    del x
    assert not any(item[1] is var for parked in chunk_module._parked.values() for item in parked)
    release.set()
    with pytest.raises(mx.base.OpError, match="fails"):
        mx.nd.waitall()
    y = mx.nd.zeros((64,), ctx=ctx) + 1
    assert y.asnumpy().tolist() == [1.0] * 64


@pytest.mark.timeout(30)
def test_blocks_above_park_max_bytes_are_deleted_on_their_own(threaded, monkeypatch):
    ctx = mx.cpu(15)
    monkeypatch.setattr(chunk_module, "PARK_MAX_BYTES", 1024)
    x = mx.nd.zeros((512,), ctx=ctx)  # 2048 bytes
    release = _gate(x._var)
    var = x._var
    del x
    assert not any(item[1] is var for parked in chunk_module._parked.values() for item in parked)
    release.set()
    mx.nd.waitall()
    assert var.deleted


@pytest.mark.timeout(30)
def test_a_trace_shows_the_delete_of_a_block_parked_before_it(threaded):
    ctx = mx.cpu(16)
    x = mx.nd.zeros((64,), ctx=ctx)
    release = _gate(x._var)
    name = x._var.name
    del x  # parked
    with mx.engine.trace() as tr:
        y = mx.nd.zeros((64,), ctx=ctx) + 1  # same size: not handed the parked block
        release.set()
        mx.nd.waitall()
    assert f"delete:{name}" in [event.name for event in tr.events_of(OpPush)]
    assert y.asnumpy().tolist() == [1.0] * 64


@mx.operator.register("_test_nested_double")
class _NestedDoubleProp(mx.operator.CustomOpProp):
    """A custom op whose forward runs an mx.nd op of its input's size and waits for it."""

    def create_operator(self, ctx, shapes, dtypes):
        class NestedDouble(mx.operator.CustomOp):
            def forward(self, is_train, req, in_data, out_data, aux):
                doubled = in_data[0] * 2  # same size as the parked block of the dead input
                self.assign(out_data[0], req[0], mx.nd.array(doubled.asnumpy()))

            def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
                self.assign(in_grad[0], req[0], out_grad[0] * 2)

        return NestedDouble()


@pytest.mark.timeout(30)
def test_an_op_invoked_inside_a_running_op_never_takes_a_parked_block(threaded):
    r"""No deadlock: the parked block's var has the running custom op pending on it.

    gate (writes x) -> Custom(x) reads x ; del x (parked) ; release ->
    Custom runs ``x' * 2`` inside and waits for it: that op must not wait for Custom
    """
    x = mx.nd.ones((64,))
    release = _gate(x._var)
    y = mx.nd.Custom(x, op_type="_test_nested_double")
    del x
    assert chunk_module._parked
    release.set()
    assert y.asnumpy().tolist() == [2.0] * 64


def test_the_pushing_thread_is_not_inside_an_op():
    assert not chunk_module._inside_an_op()
    seen = []
    mx.engine.get().push_sync(
        lambda rctx: seen.append(chunk_module._inside_an_op()), mx.cpu(), [], []
    )
    mx.nd.waitall()
    assert seen == [True]


@pytest.mark.timeout(30)
def test_a_push_interrupted_after_adopting_a_parked_block_loses_nothing(threaded, monkeypatch):
    """Ctrl-C in the push: the block, still guarded by its var, is reused only after its reader."""
    ctx = mx.cpu(17)
    mx.nd.waitall()
    before = storage.stats(ctx).bytes_in_use
    x = mx.nd.full((64,), 3.0, ctx=ctx)
    z = mx.nd.zeros((64,), ctx=ctx)
    mx.nd.waitall()
    release = _gate(x._var)
    seen: list = []
    raw = x._array
    eng = mx.engine.get()
    eng.push_sync(
        lambda rctx, raw=raw: seen.append(float(raw.sum())), ctx, [x._var], [], 0, "reader"
    )
    var = x._var
    del x, raw  # parked with its var
    real_push = eng.push_prepared  # the direct kernels' push

    def interrupted(fn, ctx_, const, mutate, *args, **kwargs):
        if mutate == (var,):  # the op of the array that adopted the parked block
            raise KeyboardInterrupt
        return real_push(fn, ctx_, const, mutate, *args, **kwargs)

    monkeypatch.setattr(eng, "push_prepared", interrupted)
    with pytest.raises(KeyboardInterrupt):
        z + 1
    monkeypatch.undo()
    gc.collect()
    # The unpushed array died; the block is parked again under the same var, the reader pending.
    assert any(item[1] is var for parked in chunk_module._parked.values() for item in parked)
    assert not var.deleted
    w = mx.nd.zeros((64,), ctx=ctx) + 5  # must not get the block while the reader waits
    release.set()
    assert w.asnumpy().tolist() == [5.0] * 64
    mx.nd.waitall()
    assert seen == [3.0 * 64]
    del w, z
    mx.nd.waitall()
    assert storage.stats(ctx).bytes_in_use == before


@pytest.mark.timeout(30)
def test_direct_kernels_push_each_var_once_whatever_the_aliasing(engine):
    """The direct path normalises its own vars: an array read twice, a view, ``out=`` an input.

    A var pushed both read and written would make the op wait on itself (the
    timeout would catch the hang); the values show each op ran in order.
    """
    a = mx.nd.array(np.arange(4, dtype=np.float32))
    b = mx.nd.ones((4,))
    doubled = a + a  # the same var twice
    halves = a[0:2] * a[2:4]  # two views of one chunk: one var
    a += a  # the output is both inputs
    mx.nd.elemwise_add(b, a, out=b)  # the output is the first input
    mx.nd.elemwise_sub(a, b, out=b)  # the output is the second input
    assert doubled.asnumpy().tolist() == [0.0, 2.0, 4.0, 6.0]
    assert halves.asnumpy().tolist() == [0.0, 3.0]
    assert a.asnumpy().tolist() == [0.0, 2.0, 4.0, 6.0]
    assert b.asnumpy().tolist() == [-1.0, -1.0, -1.0, -1.0]
