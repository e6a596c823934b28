"""Module: the step API, data parallelism over devices (vs one device), the engine schedule, checkpoints."""

import json
import logging
import os
from collections import namedtuple

import numpy as np
import pytest

import mxnb as mx
from mxnb.engine.tracing import OpPush, WaitBegin
from mxnb.executor.bulk import step_names

pytestmark = pytest.mark.timeout(300)

Batch = namedtuple("Batch", "data label pad")
with open(os.path.join(os.path.dirname(__file__), "data", "fit_vectors.json")) as handle:
    VECTORS = json.load(handle)
X = np.array(VECTORS["x"], dtype="float32")
Y = np.array(VECTORS["y"], dtype="float32")


def initial_params():
    return {k: mx.nd.array(np.array(v, dtype="float32")) for k, v in VECTORS["init"].items()}


def batches(size=10):
    for start in range(0, len(X), size):
        yield Batch(
            [mx.nd.array(X[start : start + size])], [mx.nd.array(Y[start : start + size])], 0
        )


def train(net, context, kvstore, optimizer="sgd", params=None, epochs=2):
    module = mx.mod.Module(net, context=context)
    module.bind([("data", (10, 5))], [("softmax_label", (10,))])
    module.init_params(arg_params=initial_params())
    module.init_optimizer(
        kvstore=kvstore, optimizer=optimizer, optimizer_params=params or {"learning_rate": 0.1}
    )
    metric = mx.metric.create("acc")
    for _ in range(epochs):
        for batch in batches():
            module.forward_backward(batch)
            module.update()
            module.update_metric(metric, batch.label)
    return module, metric


def traced_step(module):
    """The trace of one forward_backward + update on the first batch (earlier work finished)."""
    mx.nd.waitall()
    with mx.engine.trace() as trace:
        module.forward_backward(next(batches()))
        module.update()
        mx.nd.waitall()
    return trace


def test_step_api_matches_mxnet_fit(mlp):
    """forward_backward / update / update_metric over the batches reproduce MXNet's fit (3 epochs)."""
    case = VECTORS["cases"][1]  # sgd with momentum and wd
    module, _ = train(mlp, mx.cpu(), "local", case["optimizer"], case["params"], epochs=3)
    args, _ = module.get_params()
    for name, expected in case["final"].items():
        np.testing.assert_allclose(args[name].asnumpy(), expected, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("kvstore", ["device", "local"])
@pytest.mark.parametrize(
    ("optimizer", "params"),
    [("sgd", {"learning_rate": 0.1, "momentum": 0.9}), ("adam", {"learning_rate": 0.01})],
)
def test_two_devices_equal_one(two_virtual_gpus, kvstore, optimizer, params, mlp):
    """Batch sliced over two devices, gradients summed in the kvstore: same result as one device."""
    single, single_metric = train(mlp, mx.cpu(), "local", optimizer, params)
    double, double_metric = train(mlp, two_virtual_gpus, kvstore, optimizer, params)
    assert double._update_on_kvstore and double._kvstore.type == kvstore
    one, _ = single.get_params()
    two, _ = double.get_params()
    for name in one:
        np.testing.assert_allclose(two[name].asnumpy(), one[name].asnumpy(), rtol=1e-5, atol=1e-6)
    assert single_metric.get() == double_metric.get()
    # every device holds the same weights (broadcast after each update)
    for block in double._exec_group.param_arrays:
        np.testing.assert_array_equal(block[0].asnumpy(), block[1].asnumpy())


def test_data_parallel_step_schedule(two_virtual_gpus, mlp):
    """One step on two devices: forward/backward in each device's lanes, pushpulls named by key
    with MXNet's priorities, issued in backward order; the first sync starts before backward ends."""
    module, _ = train(mlp, two_virtual_gpus, "device", epochs=1)
    trace = traced_step(module)
    pushes = trace.events_of(OpPush)
    reduces = [event for event in pushes if event.name.startswith("kvstore.reduce:")]
    assert [event.name for event in reduces] == [
        "kvstore.reduce:fc2_bias",
        "kvstore.reduce:fc2_weight",
        "kvstore.reduce:fc1_bias",
        "kvstore.reduce:fc1_weight",
    ]
    assert [event.priority for event in reduces] == [-3, -2, -1, 0]
    devices = {event.ctx.split(" ")[0] for event in pushes if "backward" in event.name}
    assert devices == {"gpu(0)", "gpu(1)"}
    assert any(event.name.startswith("kvstore.copy:") for event in pushes)
    assert any(event.name.startswith("kvstore.pull:") for event in pushes)
    updates = [event.name for event in pushes if event.name.startswith("sgd_update:")]
    assert updates == [
        "sgd_update:fc2_bias",
        "sgd_update:fc2_weight",
        "sgd_update:fc1_bias",
        "sgd_update:fc1_weight",
    ]


def test_two_device_step_pushes_four_kvstore_ops_per_key(two_virtual_gpus, mlp):
    """Per key and step on a 'device' store made by the Module: a copy of the other device's
    gradient, a reduce, an update of the weight on the reduce device in place (the store adopted
    it) and one pull, into the other device's weight; nothing waits in the calling thread."""
    module, _ = train(mlp, two_virtual_gpus, "device", epochs=1)
    trace = traced_step(module)
    pushes = trace.events_of(OpPush)
    for name, on_devices in zip(module._param_names, module._exec_group.param_arrays):
        ops = [event for event in pushes if event.name.endswith(f":{name}")]
        kinds = sorted(event.name.split(":")[0] for event in ops)
        assert kinds == ["kvstore.copy", "kvstore.pull", "kvstore.reduce", "sgd_update"], name
        reduce_ctx = next(e.ctx for e in ops if e.name.startswith("kvstore.reduce"))
        update = next(e for e in ops if e.name.startswith("sgd_update"))
        pull = next(e for e in ops if e.name.startswith("kvstore.pull"))
        weight_here, weight_there = sorted(
            on_devices, key=lambda w: str(w.context) not in reduce_ctx
        )
        assert weight_here._var.id in update.mutate_vars
        assert pull.mutate_vars == (weight_there._var.id,)
    waits = trace.events_of(WaitBegin)
    assert [wait.var_id for wait in waits] == [None]  # the test's own waitall, nothing else


def test_set_params_after_init_optimizer_reaches_every_device(two_virtual_gpus, mlp):
    """With the weights adopted by the store, set_params on two devices takes effect at the next
    update (MXNet's Module would pull its stale stored copy back): training on from the initial
    parameters repeats the first epoch exactly."""
    module, _ = train(mlp, two_virtual_gpus, "device", epochs=1)
    first = {name: value.asnumpy() for name, value in module.get_params()[0].items()}
    module.set_params(initial_params(), {})
    for batch in batches():
        module.forward_backward(batch)
        module.update()
    again, _ = module.get_params()
    for name, value in first.items():
        np.testing.assert_allclose(again[name].asnumpy(), value, rtol=1e-6, atol=1e-7)


def test_two_devices_equal_one_across_rebinds(two_virtual_gpus, mlp):
    """Batches of 10 and 6 rows make the module bind again at each change of size; the store
    adopts the new executors' weights and the result still equals one device's."""
    results = []
    for context, kvstore in ((mx.cpu(), "local"), (two_virtual_gpus, "device")):
        module = mx.mod.Module(mlp, context=context)
        module.bind([("data", (10, 5))], [("softmax_label", (10,))])
        module.init_params(arg_params=initial_params())
        module.init_optimizer(
            kvstore=kvstore, optimizer_params={"learning_rate": 0.1, "momentum": 0.9}
        )
        for start, stop in ((0, 10), (10, 16), (16, 26), (26, 32), (32, 42)):
            module.forward_backward(
                Batch([mx.nd.array(X[start:stop])], [mx.nd.array(Y[start:stop])], 0)
            )
            module.update()
        results.append(module.get_params()[0])
    one, two = results
    for name in one:
        np.testing.assert_allclose(two[name].asnumpy(), one[name].asnumpy(), rtol=1e-5, atol=1e-6)


def test_outputs_predict_shapes_and_bind_errors(mlp):
    module, _ = train(mlp, mx.cpu(), "local", epochs=1)
    assert module.output_shapes == [("softmax_output", (10, 3))]
    assert module.get_outputs()[0].shape == (10, 3)
    with pytest.raises(mx.MXNBError, match="data_names"):
        mx.mod.Module(mlp, data_names=["nope"])
    fresh = mx.mod.Module(mlp)
    with pytest.raises(mx.MXNBError, match="bind"):
        fresh.init_params()


def test_fixed_params_do_not_change(mlp):
    module = mx.mod.Module(mlp, fixed_param_names=["fc1_weight"])
    module.bind([("data", (10, 5))], [("softmax_label", (10,))])
    module.init_params(arg_params=initial_params())
    module.init_optimizer(optimizer="sgd", optimizer_params={"learning_rate": 0.5})
    for batch in batches():
        module.forward_backward(batch)
        module.update()
    args, _ = module.get_params()
    np.testing.assert_array_equal(
        args["fc1_weight"].asnumpy(), initial_params()["fc1_weight"].asnumpy()
    )
    assert not np.array_equal(
        args["fc2_weight"].asnumpy(), initial_params()["fc2_weight"].asnumpy()
    )


def test_checkpoint_save_and_load_with_states(tmp_path, caplog, mlp):
    caplog.set_level(logging.ERROR)
    module, _ = train(
        mlp, mx.cpu(), "local", "sgd", {"learning_rate": 0.1, "momentum": 0.9}, epochs=1
    )
    prefix = str(tmp_path / "mlp")
    module.save_checkpoint(prefix, 1, save_optimizer_states=True)
    assert sorted(os.listdir(tmp_path)) == ["mlp-0001.params", "mlp-0001.states", "mlp-symbol.json"]
    loaded = mx.mod.Module.load(prefix, 1, load_optimizer_states=True)
    loaded.bind([("data", (10, 5))], [("softmax_label", (10,))])
    loaded.init_optimizer(optimizer="sgd", optimizer_params={"learning_rate": 0.1, "momentum": 0.9})
    for one in (module, loaded):
        for batch in batches():
            one.forward_backward(batch)
            one.update()
    for name, value in module.get_params()[0].items():
        np.testing.assert_array_equal(loaded.get_params()[0][name].asnumpy(), value.asnumpy())


def test_gradient_sync_can_overlap_backward(two_virtual_gpus, mlp):
    r"""On the step engine (nothing runs until told), the DAG of one step lets fc2's gradient sync
    run while fc1's backward is still pending: neither waits on the other, directly or not.

        fc2 backward --> kvstore.reduce:fc2_weight --> update --> pull
        fc1 backward   (independent of the fc2 sync)
    """
    module, _ = train(mlp, two_virtual_gpus, "device", epochs=1)
    batch = next(batches())
    mx.nd.waitall()
    previous = mx.engine.engine_type()
    try:
        mx.engine.set_engine("step")
        with mx.engine.trace() as trace:
            module.forward_backward(batch)
            module.update()
            mx.engine.get().run()
        pushes = trace.events_of(OpPush)
    finally:
        mx.engine.set_engine(previous)
    by_id = {event.op_id: event for event in pushes}

    def ancestors(op_id):
        seen, stack = set(), [op_id]
        while stack:
            for dep in by_id[stack.pop()].waits_on:
                if dep.op_id in by_id and dep.op_id not in seen:
                    seen.add(dep.op_id)
                    stack.append(dep.op_id)
        return seen

    sync = next(e for e in pushes if e.name == "kvstore.reduce:fc2_weight")

    def runs(event, layer):  # the op runs the layer's backward step, alone or in a bulk segment
        return any(n.startswith(layer) and "backward" in n for n in step_names(event.name))

    fc1_backward = [e for e in pushes if runs(e, "fc1")]
    assert len(fc1_backward) == 2  # one per device
    for event in fc1_backward:
        assert event.op_id not in ancestors(sync.op_id)
        assert sync.op_id not in ancestors(event.op_id)
    fc2_backward = {e.op_id for e in pushes if runs(e, "fc2")}
    assert len(fc2_backward) == 2
    assert fc2_backward <= ancestors(sync.op_id)


@pytest.mark.parametrize("devices", [1, 2])
def test_a_batch_of_another_size_trains_on_the_same_parameter_arrays(
    devices, two_virtual_gpus, mlp
):
    """forward on a new batch shape rebinds (MXNet's reshape) keeping the parameter arrays."""
    context = two_virtual_gpus if devices == 2 else mx.cpu()
    kvstore = "device" if devices == 2 else "local"

    def run(bound_rows):
        module = mx.mod.Module(mlp, context=context)
        module.bind([("data", (bound_rows, 5))], [("softmax_label", (bound_rows,))])
        module.init_params(arg_params=initial_params())
        params = {"learning_rate": 0.1, "rescale_grad": 1 / 8}  # not 1 / the bound batch
        module.init_optimizer(kvstore=kvstore, optimizer_params=params)
        arrays = [list(block) for block in module._exec_group.param_arrays]
        for batch in batches(size=8):  # 8, ..., 8, then the remaining 4 rows
            module.forward_backward(batch)
            module.update()
        now = module._exec_group.param_arrays
        assert all(a is b for old, new in zip(arrays, now) for a, b in zip(old, new))
        return module.get_params()[0]

    rebound, bound_at_8 = run(10), run(8)
    for name, value in bound_at_8.items():
        np.testing.assert_allclose(rebound[name].asnumpy(), value.asnumpy(), rtol=1e-6, atol=1e-7)
