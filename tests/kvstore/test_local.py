"""KVStore local / device: MXNet's semantics, engine ops named by key, and every bad use."""

import numpy as np
import pytest

import mxnb as mx
from mxnb.engine.tracing import OpPush
from mxnb.kvstore import KVStoreError

pytestmark = pytest.mark.timeout(120)


@pytest.fixture(params=["local", "device"])
def kv(request):
    return mx.kv.create(request.param)


def test_identity(kv):
    assert kv.rank == 0 and kv.num_workers == 1
    assert kv.type in ("local", "device")
    kv.barrier()


def test_push_sums_and_replaces_without_updater(kv):
    """Several values are summed; without an updater the sum replaces the stored value."""
    kv.init("w", mx.nd.full((2, 3), 5.0))
    kv.push("w", [mx.nd.ones((2, 3)), mx.nd.full((2, 3), 2.0), mx.nd.full((2, 3), 3.0)])
    outs = [mx.nd.zeros((2, 3)), mx.nd.zeros((2, 3))]
    kv.pull("w", out=outs)
    for out in outs:  # a pull writes every output
        assert (out.asnumpy() == 6.0).all()


def test_push_with_updater_updates_stored(kv):
    """With an updater the summed push updates the stored value, in push order."""
    calls = []

    def updater(key, merged, stored):
        calls.append(key)
        stored += merged * 2

    kv._set_updater(updater)
    kv.init([1, 2], [mx.nd.ones(3), mx.nd.zeros(3)])
    kv.push([1, 2], [[mx.nd.ones(3), mx.nd.ones(3)], mx.nd.ones(3)])
    kv.push(1, mx.nd.ones(3))
    out1, out2 = mx.nd.zeros(3), mx.nd.zeros(3)
    kv.pull([1, 2], out=[out1, out2])
    assert out1.asnumpy().tolist() == [7.0] * 3  # 1 + 2*2 + 2*1
    assert out2.asnumpy().tolist() == [2.0] * 3
    assert calls == [1, 2, 1]


def test_pull_after_push_sees_it_and_init_copies(kv):
    """A pull pushed after a push on the same key reads its result; init copies its value."""
    value = mx.nd.zeros(4)
    kv.init(0, value)
    value += 100  # must not leak into the store
    out = mx.nd.zeros(4)
    for step in range(1, 6):
        kv.push(0, mx.nd.full(4, float(step)))
        kv.pull(0, out=out)
        assert out.asnumpy().tolist() == [float(step)] * 4


def test_pushpull_and_broadcast(kv):
    kv.broadcast("b", mx.nd.full(2, 3.0), out=[mx.nd.zeros(2), mx.nd.zeros(2)])
    grads = [mx.nd.ones(2), mx.nd.full(2, 4.0)]
    kv.pushpull("b", grads)
    for grad in grads:
        assert grad.asnumpy().tolist() == [5.0, 5.0]


def test_set_optimizer_and_states_round_trip(kv, tmp_path):
    """An optimizer on the store updates the weight; its states save and load."""
    kv.set_optimizer(mx.optimizer.SGD(learning_rate=0.1, momentum=0.9))
    kv.init("fc_weight", mx.nd.ones(2))
    for _ in range(2):
        kv.push("fc_weight", [mx.nd.ones(2), mx.nd.ones(2)])
    out = mx.nd.zeros(2)
    kv.pull("fc_weight", out=out)
    # mom1 = -0.2, w1 = 0.8; mom2 = 0.9*-0.2 - 0.2 = -0.38, w2 = 0.42
    np.testing.assert_allclose(out.asnumpy(), [0.42, 0.42], rtol=1e-6)
    path = str(tmp_path / "states")
    kv.save_optimizer_states(path, dump_optimizer=True)
    other = mx.kv.create(kv.type)
    other.set_optimizer(mx.optimizer.SGD(learning_rate=0.1, momentum=0.9))
    other.load_optimizer_states(path)
    np.testing.assert_allclose(
        other._updater.states["fc_weight"].asnumpy(), [-0.38, -0.38], rtol=1e-6
    )


def test_bad_use_names_the_key(kv):
    kv.init("w", mx.nd.ones((2, 2)))
    with pytest.raises(KVStoreError, match="'w' is already initialised"):
        kv.init("w", mx.nd.ones((2, 2)))
    with pytest.raises(KVStoreError, match="key 'nope' is not initialised"):
        kv.push("nope", mx.nd.ones(1))
    with pytest.raises(KVStoreError, match="key 'other' is not initialised"):
        kv.pull("other", out=mx.nd.ones(1))
    with pytest.raises(KVStoreError, match="key 7 is of type int but this store's keys are of type str"):
        kv.pull(7, out=mx.nd.ones(1))  # MXNet: mixed key types are not allowed
    with pytest.raises(mx.base.ShapeError, match=r"key 'w' holds shape \(2, 2\).*\(3,\)"):
        kv.push("w", mx.nd.ones(3))
    with pytest.raises(mx.base.ShapeError, match="key 'w'"):
        kv.pull("w", out=mx.nd.ones((2, 3)))
    with pytest.raises(mx.base.DTypeError, match="key 'w' holds dtype float32.*float64"):
        kv.push("w", mx.nd.ones((2, 2), dtype="float64"))
    with pytest.raises(KVStoreError, match="set_optimizer first"):
        kv.save_optimizer_states("unused")
    with pytest.raises(KVStoreError, match="2 keys need a list of 2"):
        kv.push(["w", "v"], mx.nd.ones(1))


def test_create_unknown_and_dist(monkeypatch):
    with pytest.raises(KVStoreError, match="unknown kvstore type 'nccl2'.*local"):
        mx.kv.create("nccl2")
    monkeypatch.delenv("MXNB_DIST_JOB", raising=False)
    # Outside a job a dist store says how to start one (before touching Ray).
    with pytest.raises(KVStoreError, match="not a worker of a job.*mxnb.launch"):
        mx.kv.create("dist_sync")


def test_ops_are_engine_ops_named_by_key():
    """Reduce, assign and pull are engine ops on the arrays' vars, named by key, with the priority."""
    kv = mx.kv.create("local")
    kv.init("fc_weight", mx.nd.zeros(3))
    grads = [mx.nd.ones(3), mx.nd.ones(3)]
    out = mx.nd.zeros(3)
    mx.nd.waitall()
    with mx.engine.trace() as trace:
        kv.push("fc_weight", grads, priority=-2)
        kv.pull("fc_weight", out=out, priority=-2)
        mx.nd.waitall()
    pushes = [event for event in trace.events_of(OpPush) if event.name.startswith("kvstore.")]
    assert [event.name for event in pushes] == [
        "kvstore.reduce:fc_weight",
        "kvstore.assign:fc_weight",
        "kvstore.pull:fc_weight",
    ]
    assert all(event.priority == -2 for event in pushes)
    reduce_op = pushes[0]
    assert set(reduce_op.const_vars) == {grads[0]._var.id, grads[1]._var.id}
    assert out._var.id in pushes[2].mutate_vars


def test_device_reduces_on_the_devices_with_copy_ops(two_virtual_gpus):
    """'device' sums on one GPU (the other's value arrives by a copy op); 'local' sums on the CPU."""
    gpus = two_virtual_gpus
    for kvtype, reduce_ctx in (("device", "gpu"), ("local", "cpu")):
        kv = mx.kv.create(kvtype)
        kv.init("w", mx.nd.zeros(4))
        grads = [mx.nd.full(4, 1.0, ctx=gpus[0]), mx.nd.full(4, 2.0, ctx=gpus[1])]
        outs = [mx.nd.zeros(4, ctx=gpus[0]), mx.nd.zeros(4, ctx=gpus[1])]
        mx.nd.waitall()
        with mx.engine.trace() as trace:
            kv.pushpull("w", grads, out=outs)
            mx.nd.waitall()
        for out in outs:
            assert out.asnumpy().tolist() == [3.0] * 4
        names = {
            event.name: event
            for event in trace.events_of(OpPush)
            if event.name.startswith("kvstore.")
        }
        assert names["kvstore.reduce:w"].ctx.startswith(reduce_ctx)
        assert "kvstore.copy:w" in names


def test_device_with_updater_matches_local(two_virtual_gpus):
    """An optimizer on a 'device' store gives what it gives on a 'local' store."""
    results = []
    for kvtype in ("local", "device"):
        kv = mx.kv.create(kvtype)
        kv.set_optimizer(mx.optimizer.Adam(learning_rate=0.01))
        kv.init("w_weight", mx.nd.ones((3, 2)))
        outs = [mx.nd.zeros((3, 2), ctx=ctx) for ctx in two_virtual_gpus]
        for step in range(3):
            grads = [
                mx.nd.full((3, 2), float(step + k), ctx=ctx)
                for k, ctx in enumerate(two_virtual_gpus)
            ]
            kv.push("w_weight", grads)
            kv.pull("w_weight", out=outs)
        results.append([out.asnumpy() for out in outs])
    for local, device in zip(*results):
        np.testing.assert_allclose(local, device, rtol=1e-6)


def test_adopt_makes_the_reduce_device_array_the_stored_value(two_virtual_gpus):
    """After ``adopt``, a push updates the array on the reduce device in place and a pull copies
    only into the other device's array; a 'local' store (sums on the CPU) adopts nothing."""
    gpus = two_virtual_gpus
    kv = mx.kv.create("device")
    kv.set_optimizer(mx.optimizer.SGD(learning_rate=0.5))
    kv.init("w_weight", mx.nd.ones(4))
    weights = [mx.nd.zeros(4, ctx=ctx) for ctx in gpus]
    kv.pull("w_weight", out=weights)
    adopted = kv.adopt("w_weight", weights)
    assert adopted is not None and any(adopted is weight for weight in weights)
    other = next(weight for weight in weights if weight is not adopted)
    grads = [mx.nd.full(4, 1.0, ctx=gpus[0]), mx.nd.full(4, 3.0, ctx=gpus[1])]
    mx.nd.waitall()
    with mx.engine.trace() as trace:
        kv.push("w_weight", grads)
        kv.pull("w_weight", out=weights)
        mx.nd.waitall()
    for weight in weights:  # 1 - 0.5 * (1 + 3)
        assert weight.asnumpy().tolist() == [-1.0] * 4
    pulls = [e for e in trace.events_of(OpPush) if e.name == "kvstore.pull:w_weight"]
    assert len(pulls) == 1 and pulls[0].mutate_vars == (other._var.id,)
    local = mx.kv.create("local")
    local.init("w", mx.nd.ones(4))
    assert local.adopt("w", [mx.nd.zeros(4, ctx=ctx) for ctx in gpus]) is None
    with pytest.raises(mx.base.ShapeError, match="'w'"):
        local.adopt("w", [mx.nd.zeros(3, ctx=gpus[0])])


def test_keys_are_normalised_one_type_per_store(kv):
    """MXNet refuses mixed key types: ``3`` and ``'3'`` would be two keys, a pull reading the other."""
    kv.init(np.int64(3), mx.nd.ones(2))  # a numpy int is the int 3
    out = mx.nd.zeros(2)
    kv.pull(3, out=out)
    assert out.asnumpy().tolist() == [1.0, 1.0]
    with pytest.raises(KVStoreError, match="key '3' is of type str but this store's keys are of type int"):
        kv.init("3", mx.nd.zeros(2))
    with pytest.raises(KVStoreError, match="mix ints and strs"):
        kv.init([4, "a"], [mx.nd.ones(2), mx.nd.ones(2)])
    with pytest.raises(KVStoreError, match="the bool True"):
        kv.init(True, mx.nd.ones(2))
    assert sorted(kv._store) == [3]  # nothing refused was stored
