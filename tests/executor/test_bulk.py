"""Bulk execution: segments give the same bits as one op per step, and the trace still names every step."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest

import mxnb as mx
from mxnb.engine.tracing import OpPush
from mxnb.executor import zoo
from mxnb.executor.bulk import cut, max_nodes, step_names


def test_cut_keeps_order_caps_size_and_ends_where_asked():
    steps = list("abcdefg")
    ends = [False, True, False, False, False, False, False]
    assert cut(steps, 3, ends) == [range(2), range(2, 5), range(5, 7)]
    assert cut(steps, 1, [False] * 7) == [range(i, i + 1) for i in range(7)]
    assert cut(steps, 15, [False] * 7) == [range(7)]
    assert cut([], 15, []) == []


def test_step_names_reads_a_segment_name_back():
    assert step_names("bulk[conv1, relu1, pool1]") == ["conv1", "relu1", "pool1"]
    assert step_names("fc1_backward") == ["fc1_backward"]
    assert max_nodes(15, "forward") == 15


def test_the_per_pass_caps_are_read_when_a_pass_is_cut(monkeypatch):
    monkeypatch.setenv("MXNB_EXEC_BULK_EXEC_MAX_NODE_TRAIN_BWD", "4")
    assert max_nodes(15, "backward") == 4
    assert max_nodes(15, "forward") == 15
    assert max_nodes(2, "backward") == 2
    monkeypatch.setenv("MXNB_EXEC_BULK_EXEC_MAX_NODE_TRAIN_FWD", "many")
    with pytest.raises(mx.base.EngineError, match="MXNB_EXEC_BULK_EXEC_MAX_NODE_TRAIN_FWD"):
        max_nodes(15, "forward")


def _lenet_with_bn_and_dropout():
    data = mx.sym.Variable("data")
    net = mx.sym.Convolution(data, kernel=(3, 3), num_filter=4, pad=(1, 1), name="conv1")
    net = mx.sym.BatchNorm(net, name="bn1")
    net = mx.sym.Activation(net, act_type="relu", name="relu1")
    net = mx.sym.Pooling(net, kernel=(2, 2), stride=(2, 2), pool_type="max", name="pool1")
    net = mx.sym.Flatten(net, name="flat")
    net = mx.sym.Dropout(net, p=0.3, name="drop")
    branch = mx.sym.FullyConnected(net, num_hidden=6, name="fc_a")
    net = mx.sym.FullyConnected(net, num_hidden=6, name="fc_b") + branch  # a gradient sum
    return mx.sym.SoftmaxOutput(net, name="softmax")


NETWORKS = {
    "mlp": (lambda: zoo.mlp(num_classes=4), (6, 20)),
    "lenet5": (zoo.lenet5_digits, (6, 1, 16, 16)),
    "bn_dropout_sum": (_lenet_with_bn_and_dropout, (6, 1, 8, 8)),
}


def _train_executor(make, shape, size, recompute=None, grad_req="write"):
    """Three forward/backward rounds of one executor at bulk ``size``: outputs, grads, aux."""
    mx.random.seed(3)
    rng = np.random.default_rng(0)
    with mx.engine.bulk(size):
        exe = make().simple_bind(mx.cpu(), data=shape, grad_req=grad_req, recompute=recompute)
        for name, array in sorted(exe.arg_dict.items()):
            array[:] = rng.standard_normal(array.shape).astype(np.float32) * 0.3
        exe.arg_dict["softmax_label"][:] = rng.integers(0, 4, shape[0]).astype(np.float32)
        results = []
        for _ in range(3):
            exe.forward(is_train=True)
            exe.backward()
            results += [out.asnumpy() for out in exe.outputs]
            results += [exe.grad_dict[name].asnumpy() for name in sorted(exe.grad_dict)]
            results += [exe.aux_dict[name].asnumpy() for name in sorted(exe.aux_dict)]
        results += [out.asnumpy() for out in exe.forward(is_train=False)]
    return results


@pytest.mark.parametrize("network", sorted(NETWORKS))
@pytest.mark.parametrize("mode", [{}, {"recompute": "mirror"}, {"grad_req": "add"}])
def test_executor_bulked_equals_one_op_per_step_bit_for_bit(network, mode):
    make, shape = NETWORKS[network]
    alone = _train_executor(make, shape, 0, **mode)
    for size in (2, 15):
        bulked = _train_executor(make, shape, size, **mode)
        assert len(bulked) == len(alone)
        for a, b in zip(alone, bulked):
            assert a.tobytes() == b.tobytes()


def _fit(make, shape, contexts, size):
    mx.random.seed(5)
    rng = np.random.default_rng(1)
    x = rng.standard_normal((24, *shape[1:])).astype(np.float32)
    y = rng.integers(0, 4, 24).astype(np.float32)
    with mx.engine.bulk(size):
        module = mx.mod.Module(make(), context=contexts)
        module.fit(
            mx.io.NDArrayIter(x, y, batch_size=shape[0]),
            num_epoch=2,
            kvstore="device",
            optimizer="sgd",
            optimizer_params={"learning_rate": 0.1, "momentum": 0.9},
            initializer=mx.init.Xavier(),
            progress=False,
        )
        args, aux = module.get_params()
    return {name: array.asnumpy() for name, array in {**args, **aux}.items()}


@pytest.mark.parametrize("network", ["mlp", "bn_dropout_sum"])
@pytest.mark.parametrize("devices", [1, 2])
def test_module_fit_bulked_equals_one_op_per_step_bit_for_bit(network, devices, two_virtual_gpus):
    make, shape = NETWORKS[network]
    contexts = two_virtual_gpus[:devices]
    alone = _fit(make, shape, contexts, 0)
    bulked = _fit(make, shape, contexts, 15)
    assert sorted(alone) == sorted(bulked)
    for name in alone:
        assert alone[name].tobytes() == bulked[name].tobytes(), name


def _traced_pass(size):
    exe = zoo.lenet5_digits().simple_bind(mx.cpu(), data=(4, 1, 16, 16))
    with mx.engine.bulk(size):
        exe.forward(is_train=True)
        exe.backward()
        mx.nd.waitall()
        with mx.engine.trace() as recorder:
            exe.forward(is_train=True)
            exe.backward()
            mx.nd.waitall()
    return exe, [event.name for event in recorder.events_of(OpPush)]


def test_trace_names_every_step_in_order_and_segments_end_at_gradients():
    exe, alone = _traced_pass(0)
    _, bulked = _traced_pass(15)
    assert alone == [step.name for step in exe._graph.steps]
    assert [name for op in bulked for name in step_names(op)] == alone
    assert len(bulked) < len(alone) / 2
    # the kvstore can take a gradient as soon as its step ran: a segment ends at every step
    # writing one, and nowhere else in backward (but for the size cap)
    graph = exe._graph
    writes_grad = {
        step.name
        for step in graph.steps
        if any(entry in graph.grad_entries.values() for entry in step.outputs)
    }
    backward = bulked[1:]
    assert bulked[0].startswith("bulk[")
    assert [step_names(op)[-1] in writes_grad for op in backward] == [True] * len(backward)


def test_bulk_zero_and_a_monitor_push_every_step_alone():
    exe, alone = _traced_pass(0)
    seen = []
    exe.set_monitor_callback(lambda name, array: seen.append(name))
    with mx.engine.trace() as recorder:
        exe.forward(is_train=True)
        exe.backward()
        mx.nd.waitall()
    assert [event.name for event in recorder.events_of(OpPush)] == alone
    assert seen


def test_an_error_inside_a_segment_names_its_step():
    class Boom(mx.operator.CustomOp):
        def forward(self, is_train, req, in_data, out_data, aux):
            raise ValueError("boom")

        def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
            pass

    @mx.operator.register("bulk_test_boom")
    class BoomProp(mx.operator.CustomOpProp):
        def create_operator(self, ctx, shapes, dtypes):
            return Boom()

    x = mx.sym.Variable("x")
    net = mx.sym.Custom(mx.sym.relu(x, name="r1"), op_type="bulk_test_boom", name="boom")
    net = mx.sym.relu(net, name="r2")
    exe = net.simple_bind(mx.cpu(), x=(2, 3), grad_req="null")
    with mx.engine.bulk(15), pytest.raises(Exception) as info:
        exe.forward()
        exe.outputs[0].asnumpy()
    text = str(info.value) + "".join(getattr(info.value, "__notes__", []))
    cause = info.value.__cause__
    while cause is not None:
        text += str(cause) + "".join(getattr(cause, "__notes__", []))
        cause = cause.__cause__
    assert "boom" in text


def _bucketing_lm():
    """The bucketed LSTM language model of ``tests/rnn`` (executors sharing one memory pool)."""
    path = Path(__file__).resolve().parents[1] / "rnn" / "data" / "make_bucketing_lm.py"
    spec = importlib.util.spec_from_file_location("make_bucketing_lm_bulk", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_bucketing_module_with_shared_memory_bulked_equals_one_op_per_step():
    lm = _bucketing_lm()
    runs = []
    for size in (0, 15):
        with mx.engine.bulk(size):
            module, perplexities, score = lm.train(mx)
            args, _ = module.get_params()
        runs.append(({name: array.asnumpy() for name, array in args.items()}, perplexities, score))
    (alone, alone_ppl, alone_score), (bulked, bulked_ppl, bulked_score) = runs
    assert list(alone_ppl) == list(bulked_ppl) and alone_score == bulked_score
    for name in alone:
        assert alone[name].tobytes() == bulked[name].tobytes(), name


@pytest.mark.parametrize("engine", ["naive", "step"])
def test_segments_run_on_every_engine(engine):
    previous = mx.engine.engine_type()
    try:
        mx.engine.set_engine(engine)
        make, shape = NETWORKS["lenet5"]
        alone = _train_executor(make, shape, 0)
        bulked = _train_executor(make, shape, 15)
        if engine == "step":
            mx.engine.get().run()
    finally:
        mx.engine.set_engine(previous)
    for a, b in zip(alone, bulked):
        assert a.tobytes() == b.tobytes()


def test_bulk_size_from_the_environment(monkeypatch):
    from mxnb.engine import _default_bulk_size

    monkeypatch.delenv("MXNB_EXEC_BULK_EXEC_TRAIN", raising=False)
    monkeypatch.delenv("MXNB_EXEC_BULK_EXEC_MAX_NODE_TRAIN", raising=False)
    assert _default_bulk_size() == 15  # MXNet's MXNET_EXEC_BULK_EXEC_MAX_NODE_TRAIN
    monkeypatch.setenv("MXNB_EXEC_BULK_EXEC_MAX_NODE_TRAIN", "4")
    assert _default_bulk_size() == 4
    monkeypatch.setenv("MXNB_EXEC_BULK_EXEC_TRAIN", "0")
    assert _default_bulk_size() == 0
    monkeypatch.setenv("MXNB_EXEC_BULK_EXEC_TRAIN", "1")
    monkeypatch.setenv("MXNB_EXEC_BULK_EXEC_MAX_NODE_TRAIN", "many")
    with pytest.raises(mx.base.EngineError, match="MXNB_EXEC_BULK_EXEC_MAX_NODE_TRAIN"):
        _default_bulk_size()
    previous = mx.engine.set_bulk_size(3)
    try:
        assert mx.engine.bulk_size() == 3
        with mx.engine.bulk(0):
            assert mx.engine.bulk_size() == 0
        assert mx.engine.bulk_size() == 3
    finally:
        mx.engine.set_bulk_size(previous)
