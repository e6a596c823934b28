"""fit's epoch end: the parameters are read back and the auxiliary states synced across devices.

MXNet reads every parameter as the mean of the devices' copies and writes it
back to every device.  When the devices' arguments are known to be equal
(one device, or updates on the kvstore), mxnb reads one copy and writes back
only the auxiliary states: these tests check that the values are the ones
MXNet's full sync gives, that the copies it skips are really not pushed, and
that devices that do differ (no kvstore) are still averaged.
"""

import numpy as np
import pytest

import mxnb as mx
from mxnb.engine.tracing import OpPush
from mxnb.module.base_module import BaseModule

pytestmark = pytest.mark.timeout(300)


def batchnorm_net():
    """fc -> BatchNorm -> relu -> fc -> softmax: has auxiliary states each device updates."""
    data = mx.sym.Variable("data")
    net = mx.sym.FullyConnected(data, num_hidden=6, name="fc1")
    net = mx.sym.BatchNorm(net, name="bn1")
    net = mx.sym.Activation(net, act_type="relu", name="relu1")
    net = mx.sym.FullyConnected(net, num_hidden=3, name="fc2")
    return mx.sym.SoftmaxOutput(net, name="softmax")


def data(seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((40, 5)).astype(np.float32)
    y = rng.integers(0, 3, 40).astype(np.float32)
    return mx.io.NDArrayIter(x, y, batch_size=10)


def fit(net, context, kvstore, epochs=2, full_sync=False):
    """A fitted module; ``full_sync``: MXNet's epoch end (read the mean, write everything back)."""
    mx.random.seed(0)
    module = mx.mod.Module(net, context=context)
    if full_sync:
        module._sync_params_after_epoch = lambda: BaseModule._sync_params_after_epoch(module)
    module.fit(
        data(),
        num_epoch=epochs,
        kvstore=kvstore,
        optimizer="sgd",
        optimizer_params={"learning_rate": 0.1, "momentum": 0.9},
        initializer=mx.init.Xavier(),
        progress=False,
    )
    mx.nd.waitall()
    return module


def device_copies(module, name):
    group = module._exec_group
    names = group.param_names + group.aux_names
    blocks = group.param_arrays + group.aux_arrays
    return [array.asnumpy() for array in blocks[names.index(name)]]


@pytest.mark.parametrize("net", [batchnorm_net, None], ids=["batchnorm", "mlp"])
def test_epoch_end_equals_mxnets_full_sync(two_virtual_gpus, mlp, net):
    net = mlp if net is None else net()
    ours = fit(net, two_virtual_gpus, "device")
    theirs = fit(net, two_virtual_gpus, "device", full_sync=True)
    for mine, full in zip(ours.get_params(), theirs.get_params()):
        assert sorted(mine) == sorted(full)
        for name in mine:
            np.testing.assert_array_equal(mine[name].asnumpy(), full[name].asnumpy(), err_msg=name)
            for a, b in zip(device_copies(ours, name), device_copies(theirs, name)):
                np.testing.assert_array_equal(a, b, err_msg=name)


def test_in_sync_devices_get_only_their_auxiliary_states_back(two_virtual_gpus):
    module = fit(batchnorm_net(), two_virtual_gpus, "device", epochs=1)
    module._params_dirty = True  # as after a training step
    with mx.engine.trace() as trace:
        arg_params, aux_params = module._sync_params_after_epoch()
        mx.nd.waitall()
    names = [event.name for event in trace.events_of(OpPush)]
    readers = [event for event in trace.events_of(OpPush) if event.mutate_vars]
    for name, array in arg_params.items():  # one op writes each argument read back: a copy
        writers = [event for event in readers if array._var.id in event.mutate_vars]
        assert [event.name for event in writers] == ["_copyto"], name
    # reading: one copy per argument (no mean), a mean per auxiliary state
    assert names.count("elemwise_add") == len(aux_params) == 2
    # writing back: each auxiliary state to each device, no argument
    group = module._exec_group
    targets = {array._var.id for block in group.aux_arrays for array in block}
    written = {var for event in trace.events_of(OpPush) for var in event.mutate_vars}
    weights = {array._var.id for block in group.param_arrays for array in block}
    assert not written & weights
    assert len(targets) == 4 and targets <= written
    for name in aux_params:
        first, second = device_copies(module, name)
        np.testing.assert_array_equal(first, second)
        np.testing.assert_array_equal(first, aux_params[name].asnumpy())


def test_devices_without_a_kvstore_are_still_averaged(two_virtual_gpus, mlp):
    module = mx.mod.Module(mlp, context=two_virtual_gpus)
    module.bind([("data", (10, 5))], [("softmax_label", (10,))])
    module.init_params(initializer=mx.init.Xavier())
    module.init_optimizer(kvstore=None, optimizer="sgd")
    assert not module._args_in_sync()
    # the two devices train on different data: their copies part
    group = module._exec_group
    for k, block in enumerate(group.param_arrays):
        block[1][:] = block[1].asnumpy() + 1.0 + k
    module._params_dirty = True
    expected = {
        name: (block[0].asnumpy() + block[1].asnumpy()) / 2
        for name, block in zip(group.param_names, group.param_arrays)
    }
    arg_params, _ = module._sync_params_after_epoch()
    for name, value in expected.items():
        np.testing.assert_allclose(arg_params[name].asnumpy(), value, rtol=1e-6)
        for copy in device_copies(module, name):
            np.testing.assert_allclose(copy, value, rtol=1e-6)


def test_one_device_and_kvstore_updates_count_as_in_sync(two_virtual_gpus, mlp):
    one = mx.mod.Module(mlp, context=mx.cpu())
    one.bind([("data", (10, 5))], [("softmax_label", (10,))])
    one.init_params()
    one.init_optimizer(kvstore="local")
    assert one._args_in_sync()
    two = mx.mod.Module(mlp, context=two_virtual_gpus)
    two.bind([("data", (10, 5))], [("softmax_label", (10,))])
    two.init_params()
    two.init_optimizer(kvstore="device")
    assert two._args_in_sync()
