"""Real layers through the executor: conv + BatchNorm + Dropout, loss heads, the zoo's plans.

Every plan is checked with ``MemoryPlan.check()``; expectations are derived
from the layers' backward dependencies, not from timings.
"""

from __future__ import annotations

import numpy as np
import pytest

import mxnb as mx
from mxnb.executor import EntryKind, zoo
from mxnb.executor.graph import build_graph
from mxnb.executor.tournament import plan_graph
from mxnb.testing import assert_almost_equal, check_numeric_gradient

RNG = np.random.default_rng(11)


def conv_body(dropout=True):
    """conv -> BatchNorm -> relu -> maxpool (-> Dropout) -> flatten -> fc."""
    data = mx.sym.Variable("data")
    net = mx.sym.Convolution(data, num_filter=3, kernel=(3, 3), pad=(1, 1), name="conv")
    net = mx.sym.BatchNorm(net, fix_gamma=False, name="bn")
    net = mx.sym.Activation(net, act_type="relu", name="relu")
    net = mx.sym.Pooling(net, kernel=(2, 2), stride=(2, 2), pool_type="max", name="pool")
    if dropout:
        net = mx.sym.Dropout(net, p=0.5, name="drop")
    net = mx.sym.Flatten(net, name="flatten")
    return mx.sym.FullyConnected(net, num_hidden=4, name="fc")


def bind(sym, grad_req="write", dtype="float32", **shapes):
    exe = sym.simple_bind(
        mx.cpu(), grad_req=grad_req, type_dict={name: dtype for name in shapes}, **shapes
    )
    exe.memory_plan.check()
    arg_shapes, _, aux_shapes = sym.infer_shape(**shapes)
    for name, shape in zip(sym.list_arguments(), arg_shapes):
        if name.endswith("label"):
            exe.arg_dict[name][:] = RNG.integers(0, 4, shape)
        elif name.endswith("gamma"):
            exe.arg_dict[name][:] = 1 + RNG.standard_normal(shape) * 0.1
        else:
            exe.arg_dict[name][:] = RNG.standard_normal(shape) * 0.5
    for name, shape in zip(sym.list_auxiliary_states(), aux_shapes):
        exe.aux_dict[name][:] = np.ones(shape) if name.endswith("var") else np.zeros(shape)
    return exe


def test_conv_bn_dropout_inference_matches_imperative():
    """is_train=False: BatchNorm uses the moving stats, Dropout passes through."""
    net = conv_body()
    exe = bind(net, grad_req="null", data=(2, 2, 6, 6))
    out = exe.forward(is_train=False)[0].asnumpy()
    a = exe.arg_dict
    x = mx.nd.Convolution(
        a["data"], a["conv_weight"], a["conv_bias"], num_filter=3, kernel=(3, 3), pad=(1, 1)
    )
    x = mx.nd.BatchNorm(
        x,
        a["bn_gamma"],
        a["bn_beta"],
        exe.aux_dict["bn_moving_mean"],
        exe.aux_dict["bn_moving_var"],
        fix_gamma=False,
    )
    x = mx.nd.Activation(x, act_type="relu")
    x = mx.nd.Pooling(x, kernel=(2, 2), stride=(2, 2), pool_type="max")
    x = mx.nd.Dropout(x, p=0.5)
    x = mx.nd.FullyConnected(mx.nd.Flatten(x), a["fc_weight"], a["fc_bias"], num_hidden=4)
    assert_almost_equal(out, x.asnumpy(), rtol=1e-5, atol=1e-6)


def test_conv_bn_training_gradients_match_numeric():
    """Training mode (batch statistics) without Dropout: gradients match central differences."""
    net = conv_body(dropout=False)
    arg_shapes, _, aux_shapes = net.infer_shape(data=(2, 2, 4, 4))
    location = {
        name: RNG.standard_normal(shape) * 0.5
        for name, shape in zip(net.list_arguments(), arg_shapes)
    }
    location["bn_gamma"] = 1 + location["bn_gamma"] * 0.2
    aux = {
        "bn_moving_mean": np.zeros(aux_shapes[0]),
        "bn_moving_var": np.ones(aux_shapes[1]),
    }
    check_numeric_gradient(net, location, aux_states=aux, numeric_eps=1e-4, rtol=2e-2, atol=1e-3)


def test_training_forward_updates_aux_states_and_inference_does_not():
    net = conv_body(dropout=False)
    exe = bind(net, data=(2, 2, 4, 4))
    exe.forward(is_train=False)
    assert np.all(exe.aux_dict["bn_moving_mean"].asnumpy() == 0)
    exe.forward(is_train=True)
    assert np.any(exe.aux_dict["bn_moving_mean"].asnumpy() != 0)


def test_dropout_backward_uses_the_mask_forward_drew():
    """y = x * mask / (1 - p): with head gradient ones, dx is 1/(1-p) exactly where y kept x."""
    data = mx.sym.Variable("data")
    net = mx.sym.Dropout(data, p=0.5, name="drop")
    exe = bind(net, data=(4, 50))
    exe.arg_dict["data"][:] = 1.0
    out = exe.forward(is_train=True)[0].asnumpy()
    exe.backward()
    grad = exe.grad_dict["data"].asnumpy()
    assert 0 < np.count_nonzero(out) < out.size
    np.testing.assert_allclose(grad, np.where(out != 0, 2.0, 0.0))
    # the mask is a hidden output kept for backward; the visible output is not needed by it
    plan = exe.memory_plan
    assert plan.entry("drop_mask").last_step == plan.steps.index("drop_backward")


def test_softmax_output_loss_needs_no_head_gradient():
    """SoftmaxOutput's backward is softmax - onehot(label); no head gradient is bound."""
    data = mx.sym.Variable("data")
    net = mx.sym.SoftmaxOutput(mx.sym.FullyConnected(data, num_hidden=4, name="fc"), name="softmax")
    exe = bind(net, dtype="float64", data=(3, 5), softmax_label=(3,))
    probs = exe.forward(is_train=True)[0].asnumpy()
    exe.backward()
    assert not [e for e in exe.memory_plan.entries if e.kind is EntryKind.HEAD_GRAD]
    label = exe.arg_dict["softmax_label"].asnumpy().astype(int)
    delta = probs - np.eye(4)[label]
    x = exe.arg_dict["data"].asnumpy()
    assert_almost_equal(exe.grad_dict["fc_weight"].asnumpy(), delta.T @ x, rtol=1e-10)
    assert_almost_equal(exe.grad_dict["fc_bias"].asnumpy(), delta.sum(axis=0), rtol=1e-10)


def test_zoo_mlp_plan_shares_as_expected():
    r"""
    fc1 -> relu1 -> fc2 -> relu2 -> fc3 -> softmax     (batch 1, inference)

    Every activation runs in place of its layer; fc3 and the softmax reuse
    fc1's 512-byte block once fc2 has read it: 768 bytes in all, the figure
    MXNet 1.9.1 plans for the same graph.
    """
    plan = mx.executor.plan_memory(zoo.mlp(), zoo.input_shapes("mlp", 1), grad_req="null")
    plan.check()
    assert plan.inplace_pairs == (
        ("fc1_output", "relu1_output"),
        ("fc2_output", "relu2_output"),
        ("fc3_output", "softmax_output"),
    )
    assert [(block.nbytes, block.entries) for block in plan.blocks] == [
        (512, ("fc1_output", "relu1_output", "fc3_output", "softmax_output")),
        (256, ("fc2_output", "relu2_output")),
    ]
    assert plan.internal_bytes == 768
    training = mx.executor.plan_memory(zoo.mlp(), zoo.input_shapes("mlp", 1), grad_req="write")
    training.check()
    # relu's backward reads its output only, so relu still runs in place of fc in training
    assert ("fc1_output", "relu1_output") in training.inplace_pairs
    assert training.internal_bytes == 1360


@pytest.mark.parametrize(
    "name",
    ["lenet", "alexnet", "vgg16", "resnet18", "resnet50", "inception_bn", "inception_v3", "lstm"],
)
def test_zoo_plans_are_legal_and_beat_naive(name):
    """Every strategy combination gives a legal plan; in-place pairs are options the ops declared."""
    sym = zoo.build(name)
    shapes = zoo.input_shapes(name, 2)
    for grad_req in ("null", "write"):
        graph = build_graph(sym, shapes, grad_req=grad_req)
        declared = {
            (graph.entries[source].name, graph.entries[target].name)
            for step in graph.steps
            for source, target in step.inplace_options
        }
        sizes = {}
        for inplace, coshare in ((False, False), (True, False), (False, True), (True, True)):
            plan = plan_graph(graph, inplace=inplace, coshare=coshare)
            plan.check()
            assert set(plan.inplace_pairs) <= declared
            sizes[inplace, coshare] = plan.internal_bytes
        assert sizes[False, False] == plan.naive_internal_bytes
        assert sizes[True, True] <= min(sizes.values())
        assert sizes[True, True] * 2 < sizes[False, False]


def test_lenet_executor_runs_and_matches_imperative_forward():
    sym = zoo.lenet()
    exe = bind(sym, grad_req="write", **zoo.input_shapes("lenet", 2))
    probs = exe.forward(is_train=True)[0].asnumpy()
    exe.backward()
    np.testing.assert_allclose(probs.sum(axis=1), 1.0, rtol=1e-5)
    a = exe.arg_dict
    x = mx.nd.Convolution(
        a["data"], a["conv1_weight"], a["conv1_bias"], kernel=(5, 5), num_filter=20
    )
    x = mx.nd.Pooling(
        mx.nd.Activation(x, act_type="tanh"), pool_type="max", kernel=(2, 2), stride=(2, 2)
    )
    x = mx.nd.Convolution(x, a["conv2_weight"], a["conv2_bias"], kernel=(5, 5), num_filter=50)
    x = mx.nd.Pooling(
        mx.nd.Activation(x, act_type="tanh"), pool_type="max", kernel=(2, 2), stride=(2, 2)
    )
    x = mx.nd.Activation(
        mx.nd.FullyConnected(mx.nd.Flatten(x), a["fc1_weight"], a["fc1_bias"], num_hidden=500),
        act_type="tanh",
    )
    x = mx.nd.FullyConnected(x, a["fc2_weight"], a["fc2_bias"], num_hidden=10)
    x = mx.nd.SoftmaxOutput(x, a["softmax_label"])
    assert_almost_equal(probs, x.asnumpy(), rtol=1e-4, atol=1e-6)
    assert np.abs(exe.grad_dict["conv1_weight"].asnumpy()).sum() > 0


def eager_reference(sym, args, aux, is_train=True):
    """Run ``sym`` node by node through ``mxnb.operator.eager`` (numpy, no engine, no planning).

    Forward in topological order; backward in reverse, summing each entry's
    gradient contributions; loss heads get no head gradient, other heads ones.
    Returns ``(outputs, gradients by argument name)``.
    """
    from mxnb.operator import eager
    from mxnb.symbol.graph import NodeEntry, topo_sort

    nodes = topo_sort(sym._outputs)
    value, states = {}, {}
    for node in nodes:
        if node.op is None:
            value[NodeEntry(node, 0)] = args[node.name] if node.name in args else aux[node.name]
            continue
        num_args = node.num_arguments()
        inputs = [value[e] for e in node.inputs[:num_args]]
        aux_in = [value[e] for e in node.inputs[num_args:]]
        outputs, _, state = eager.run_forward(
            node.op, inputs, aux=aux_in or None, is_train=is_train
        )
        states[id(node)] = state
        for index, output in enumerate(outputs):
            value[NodeEntry(node, index)] = output
    grads = {}
    for head in sym._outputs:
        grads[head] = np.ones_like(value[head])
    for node in reversed(nodes):
        if node.op is None:
            continue
        heads = [grads.get(NodeEntry(node, i)) for i in range(node.num_outputs())]
        in_grads = eager.run_backward(states[id(node)], heads)
        for entry, grad in zip(node.inputs[: node.num_arguments()], in_grads):
            grads[entry] = grads[entry] + grad if entry in grads else grad
    outputs = [value[head] for head in sym._outputs]
    named = {
        node.name: grads[NodeEntry(node, 0)]
        for node in nodes
        if node.op is None and node.name in args and NodeEntry(node, 0) in grads
    }
    return outputs, named


def test_resnet18_executor_matches_the_eager_reference():
    """The whole planned, engine-run ResNet-18 equals an unplanned numpy run, forward and backward."""
    sym = zoo.resnet(18, num_classes=5)
    shapes = {"data": (2, 3, 16, 16), "softmax_label": (2,)}
    exe = bind(sym, dtype="float64", **shapes)
    exe.arg_dict["softmax_label"][:] = np.array([1, 3])
    args = {name: array.asnumpy() for name, array in exe.arg_dict.items()}
    aux = {name: array.asnumpy() for name, array in exe.aux_dict.items()}
    outputs, grads = eager_reference(sym, args, aux)
    exe.forward(is_train=True)
    exe.backward()
    assert_almost_equal(exe.outputs[0].asnumpy(), outputs[0], rtol=1e-10, atol=1e-12)
    for name in ("data", "conv0_weight", "stage1_unit1_conv1_weight", "bn1_gamma", "fc1_weight"):
        assert_almost_equal(exe.grad_dict[name].asnumpy(), grads[name], rtol=1e-8, atol=1e-10)
    assert exe.memory_plan.internal_bytes * 2 < exe.memory_plan.naive_internal_bytes


def test_unrolled_zoo_lstm_matches_the_eager_reference():
    """SliceChannel, Concat and weights shared by every step (gradients accumulated with ADD_TO)."""
    sym = zoo.lstm_unrolled(num_layers=2, seq_len=3, num_hidden=4, num_embed=5, num_classes=6)
    shapes = zoo.lstm_shapes(2, num_layers=2, seq_len=3, num_hidden=4, num_embed=5)
    exe = bind(sym, dtype="float64", **shapes)
    exe.arg_dict["softmax_label"][:] = np.arange(6) % 6
    args = {name: array.asnumpy() for name, array in exe.arg_dict.items()}
    outputs, grads = eager_reference(sym, args, {})
    exe.forward(is_train=True)
    exe.backward()
    assert_almost_equal(exe.outputs[0].asnumpy(), outputs[0], rtol=1e-10, atol=1e-12)
    for name in (
        "data",
        "l0_i2h_weight",
        "l0_h2h_weight",
        "l1_h2h_bias",
        "pred_weight",
        "l0_init_h",
    ):
        assert_almost_equal(exe.grad_dict[name].asnumpy(), grads[name], rtol=1e-8, atol=1e-10)


def test_inception_v3_is_mxnets_network():
    """23.8 M parameters (no auxiliary head), 94 convolutions each with BatchNorm, 299 -> 8x8 -> 1."""
    sym = zoo.inception_v3()
    args, outs, _ = sym.infer_shape(**zoo.input_shapes("inception_v3", 2))
    params = {
        name: shape
        for name, shape in zip(sym.list_arguments(), args, strict=True)
        if name not in ("data", "softmax_label")
    }
    assert sum(int(np.prod(shape)) for shape in params.values()) == 23_834_568
    assert sum(name.endswith("_conv2d_weight") for name in params) == 94
    assert sum(name.endswith("_batchnorm_gamma") for name in params) == 94
    assert outs == [(2, 1000)]
    internals = sym.get_internals()
    pooled = internals["global_pool_output"].infer_shape(data=(2, 3, 299, 299))[1]
    assert pooled == [(2, 2048, 1, 1)]
    small = zoo.inception_v3(num_classes=10, global_pool=True)
    assert small.infer_shape(data=(1, 3, 75, 75))[1] == [(1, 10)]


def test_the_zoo_loads_by_path_without_mxnb_as_the_mxnet_scripts_load_it():
    """benchmarks/mxnet_reference.py builds the zoo under real MXNet: the package must not need mxnb."""
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    script = (
        "import sys; sys.path.insert(0, 'benchmarks')\n"
        "from mxnet_zoo import load_zoo\n"
        "zoo = load_zoo()\n"
        "assert 'mxnb' not in sys.modules, 'loading the zoo imported mxnb'\n"
        "print(sorted(zoo.NETWORKS))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", script], cwd=root, capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    assert "resnet18" in result.stdout and "lstm" in result.stdout
