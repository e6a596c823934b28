"""Model-zoo networks built with ``mx.sym``, for memory planning, benchmarks and notebooks.

Idea: the networks MXNet users export — MLP, LeNet, AlexNet, VGG-16,
ResNet (MXNet's pre-activation ``symbols/resnet.py``), Inception-BN, Inception-v3 and an
unrolled LSTM (MXNet's ``example/rnn/old/lstm.py``) — written once, node names as in MXNet's
examples, so the plans mxnb makes can be set beside MXNet's own for the same
graph and shapes.

Rule: every builder takes an optional ``sym`` module (default ``mxnb.sym``);
anything with MXNet's symbol API works, which is how the reference figures in
``benchmarks/mxnet_reference.json`` were produced with MXNet 1.9.1 from this
very file.  ``input_shapes(name, batch)`` gives the shapes to bind with.

Example::

    >>> import mxnb as mx
    >>> from mxnb.executor import zoo
    >>> net = zoo.lenet()
    >>> plan = mx.executor.plan_memory(net, zoo.input_shapes('lenet', 32), grad_req='null')
    >>> plan.internal_bytes < plan.naive_internal_bytes
    True
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = [
    "NETWORKS",
    "alexnet",
    "build",
    "inception_bn",
    "inception_v3",
    "input_shapes",
    "lenet",
    "lenet5_digits",
    "lstm_unrolled",
    "mlp",
    "resnet",
    "vgg16",
]


def _default(sym: Any) -> Any:
    if sym is not None:
        return sym
    from .. import symbol

    return symbol


def mlp(num_classes: int = 10, sym: Any = None) -> Any:
    """MXNet's MNIST MLP: fc1(128) relu, fc2(64) relu, fc3(classes), softmax; data (batch, 784)."""
    sym = _default(sym)
    data = sym.Variable("data")
    fc1 = sym.FullyConnected(data=data, name="fc1", num_hidden=128)
    act1 = sym.Activation(data=fc1, name="relu1", act_type="relu")
    fc2 = sym.FullyConnected(data=act1, name="fc2", num_hidden=64)
    act2 = sym.Activation(data=fc2, name="relu2", act_type="relu")
    fc3 = sym.FullyConnected(data=act2, name="fc3", num_hidden=num_classes)
    return sym.SoftmaxOutput(data=fc3, name="softmax")


def lenet(num_classes: int = 10, sym: Any = None) -> Any:
    """LeNet-5 as in MXNet's example: two conv(5x5)+tanh+maxpool, fc(500)+tanh, fc, softmax."""
    sym = _default(sym)
    data = sym.Variable("data")
    conv1 = sym.Convolution(data=data, kernel=(5, 5), num_filter=20, name="conv1")
    tanh1 = sym.Activation(data=conv1, act_type="tanh", name="tanh1")
    pool1 = sym.Pooling(data=tanh1, pool_type="max", kernel=(2, 2), stride=(2, 2), name="pool1")
    conv2 = sym.Convolution(data=pool1, kernel=(5, 5), num_filter=50, name="conv2")
    tanh2 = sym.Activation(data=conv2, act_type="tanh", name="tanh2")
    pool2 = sym.Pooling(data=tanh2, pool_type="max", kernel=(2, 2), stride=(2, 2), name="pool2")
    flatten = sym.Flatten(data=pool2, name="flatten")
    fc1 = sym.FullyConnected(data=flatten, num_hidden=500, name="fc1")
    tanh3 = sym.Activation(data=fc1, act_type="tanh", name="tanh3")
    fc2 = sym.FullyConnected(data=tanh3, num_hidden=num_classes, name="fc2")
    return sym.SoftmaxOutput(data=fc2, name="softmax")


def lenet5_digits(num_classes: int = 10, sym: Any = None) -> Any:
    """LeNet-5 with ReLU for 16x16 single-channel images (scikit-learn's digits upsampled 2x).

    conv 5x5 (6, pad 2), relu, max-pool, conv 5x5 (16), relu, max-pool, fc 120, relu,
    fc 84, relu, fc ``num_classes``, softmax: LeNet-5's widths (notebook 09, benchmarks/train.py).
    """
    sym = _default(sym)
    x = sym.Variable("data")
    x = sym.Convolution(x, kernel=(5, 5), pad=(2, 2), num_filter=6, name="conv1")
    x = sym.Activation(x, act_type="relu", name="relu1")
    x = sym.Pooling(x, pool_type="max", kernel=(2, 2), stride=(2, 2), name="pool1")
    x = sym.Convolution(x, kernel=(5, 5), num_filter=16, name="conv2")
    x = sym.Activation(x, act_type="relu", name="relu2")
    x = sym.Pooling(x, pool_type="max", kernel=(2, 2), stride=(2, 2), name="pool2")
    x = sym.Flatten(x, name="flatten")
    x = sym.FullyConnected(x, num_hidden=120, name="fc1")
    x = sym.Activation(x, act_type="relu", name="relu3")
    x = sym.FullyConnected(x, num_hidden=84, name="fc2")
    x = sym.Activation(x, act_type="relu", name="relu4")
    x = sym.FullyConnected(x, num_hidden=num_classes, name="fc3")
    return sym.SoftmaxOutput(x, name="softmax")


def alexnet(num_classes: int = 1000, lrn: bool = False, sym: Any = None) -> Any:
    """AlexNet as in MXNet's example (``lrn=True`` adds its two LRN layers); data (batch, 3, 224, 224)."""
    sym = _default(sym)
    data = sym.Variable("data")
    conv1 = sym.Convolution(data=data, kernel=(11, 11), stride=(4, 4), num_filter=96, name="conv1")
    body = sym.Activation(data=conv1, act_type="relu", name="relu1")
    if lrn:
        body = sym.LRN(data=body, alpha=0.0001, beta=0.75, knorm=2, nsize=5, name="lrn1")
    body = sym.Pooling(data=body, pool_type="max", kernel=(3, 3), stride=(2, 2), name="pool1")
    conv2 = sym.Convolution(data=body, kernel=(5, 5), pad=(2, 2), num_filter=256, name="conv2")
    body = sym.Activation(data=conv2, act_type="relu", name="relu2")
    if lrn:
        body = sym.LRN(data=body, alpha=0.0001, beta=0.75, knorm=2, nsize=5, name="lrn2")
    body = sym.Pooling(data=body, pool_type="max", kernel=(3, 3), stride=(2, 2), name="pool2")
    for index, filters in ((3, 384), (4, 384), (5, 256)):
        body = sym.Convolution(
            data=body, kernel=(3, 3), pad=(1, 1), num_filter=filters, name=f"conv{index}"
        )
        body = sym.Activation(data=body, act_type="relu", name=f"relu{index}")
    body = sym.Pooling(data=body, kernel=(3, 3), stride=(2, 2), pool_type="max", name="pool3")
    body = sym.Flatten(data=body, name="flatten")
    for index in (6, 7):
        body = sym.FullyConnected(data=body, num_hidden=4096, name=f"fc{index}")
        body = sym.Activation(data=body, act_type="relu", name=f"relu{index}")
        body = sym.Dropout(data=body, p=0.5, name=f"drop{index}")
    fc8 = sym.FullyConnected(data=body, num_hidden=num_classes, name="fc8")
    return sym.SoftmaxOutput(data=fc8, name="softmax")


def vgg16(num_classes: int = 1000, sym: Any = None) -> Any:
    """VGG-16 as in MXNet's example (3x3 convs, 5 max pools, fc 4096 x2 with dropout)."""
    sym = _default(sym)
    body = sym.Variable("data")
    layers = ((2, 64), (2, 128), (3, 256), (3, 512), (3, 512))
    for stage, (count, filters) in enumerate(layers, start=1):
        for unit in range(1, count + 1):
            body = sym.Convolution(
                data=body,
                kernel=(3, 3),
                pad=(1, 1),
                num_filter=filters,
                name=f"conv{stage}_{unit}",
            )
            body = sym.Activation(data=body, act_type="relu", name=f"relu{stage}_{unit}")
        body = sym.Pooling(
            data=body, pool_type="max", kernel=(2, 2), stride=(2, 2), name=f"pool{stage}"
        )
    body = sym.Flatten(data=body, name="flatten")
    for index in (6, 7):
        body = sym.FullyConnected(data=body, num_hidden=4096, name=f"fc{index}")
        body = sym.Activation(data=body, act_type="relu", name=f"relu{index}")
        body = sym.Dropout(data=body, p=0.5, name=f"drop{index}")
    fc8 = sym.FullyConnected(data=body, num_hidden=num_classes, name="fc8")
    return sym.SoftmaxOutput(data=fc8, name="softmax")


def _residual_unit(
    sym: Any,
    data: Any,
    num_filter: int,
    stride: tuple,
    dim_match: bool,
    name: str,
    bottle_neck: bool,
) -> Any:
    """MXNet's pre-activation residual unit (BN-ReLU-Conv, shortcut conv when shapes change)."""
    bn_mom = 0.9
    bn1 = sym.BatchNorm(data=data, fix_gamma=False, eps=2e-5, momentum=bn_mom, name=name + "_bn1")
    act1 = sym.Activation(data=bn1, act_type="relu", name=name + "_relu1")
    if bottle_neck:
        quarter = int(num_filter * 0.25)
        conv1 = sym.Convolution(
            data=act1, num_filter=quarter, kernel=(1, 1), stride=(1, 1), pad=(0, 0),
            no_bias=True, name=name + "_conv1",
        )  # fmt: skip
        bn2 = sym.BatchNorm(
            data=conv1, fix_gamma=False, eps=2e-5, momentum=bn_mom, name=name + "_bn2"
        )
        act2 = sym.Activation(data=bn2, act_type="relu", name=name + "_relu2")
        conv2 = sym.Convolution(
            data=act2, num_filter=quarter, kernel=(3, 3), stride=stride, pad=(1, 1),
            no_bias=True, name=name + "_conv2",
        )  # fmt: skip
        bn3 = sym.BatchNorm(
            data=conv2, fix_gamma=False, eps=2e-5, momentum=bn_mom, name=name + "_bn3"
        )
        act3 = sym.Activation(data=bn3, act_type="relu", name=name + "_relu3")
        body = sym.Convolution(
            data=act3, num_filter=num_filter, kernel=(1, 1), stride=(1, 1), pad=(0, 0),
            no_bias=True, name=name + "_conv3",
        )  # fmt: skip
    else:
        conv1 = sym.Convolution(
            data=act1, num_filter=num_filter, kernel=(3, 3), stride=stride, pad=(1, 1),
            no_bias=True, name=name + "_conv1",
        )  # fmt: skip
        bn2 = sym.BatchNorm(
            data=conv1, fix_gamma=False, eps=2e-5, momentum=bn_mom, name=name + "_bn2"
        )
        act2 = sym.Activation(data=bn2, act_type="relu", name=name + "_relu2")
        body = sym.Convolution(
            data=act2, num_filter=num_filter, kernel=(3, 3), stride=(1, 1), pad=(1, 1),
            no_bias=True, name=name + "_conv2",
        )  # fmt: skip
    if dim_match:
        shortcut = data
    else:
        shortcut = sym.Convolution(
            data=act1, num_filter=num_filter, kernel=(1, 1), stride=stride, no_bias=True,
            name=name + "_sc",
        )  # fmt: skip
    return body + shortcut


def resnet(num_layers: int = 18, num_classes: int = 1000, sym: Any = None) -> Any:
    """ResNet-18/34/50/101/152 for ImageNet as MXNet's ``symbols/resnet.py`` builds it (v2)."""
    sym = _default(sym)
    table = {
        18: ([2, 2, 2, 2], False),
        34: ([3, 4, 6, 3], False),
        50: ([3, 4, 6, 3], True),
        101: ([3, 4, 23, 3], True),
        152: ([3, 8, 36, 3], True),
    }
    if num_layers not in table:
        from ..base import ParamError

        raise ParamError(f"resnet: num_layers must be one of {sorted(table)}; got {num_layers}")
    units, bottle_neck = table[num_layers]
    filters = [64, 256, 512, 1024, 2048] if bottle_neck else [64, 64, 128, 256, 512]
    data = sym.Variable("data")
    data = sym.BatchNorm(data=data, fix_gamma=True, eps=2e-5, momentum=0.9, name="bn_data")
    body = sym.Convolution(
        data=data, num_filter=filters[0], kernel=(7, 7), stride=(2, 2), pad=(3, 3),
        no_bias=True, name="conv0",
    )  # fmt: skip
    body = sym.BatchNorm(data=body, fix_gamma=False, eps=2e-5, momentum=0.9, name="bn0")
    body = sym.Activation(data=body, act_type="relu", name="relu0")
    body = sym.Pooling(
        data=body, kernel=(3, 3), stride=(2, 2), pad=(1, 1), pool_type="max", name="pool0"
    )
    for stage in range(4):
        stride = (1, 1) if stage == 0 else (2, 2)
        body = _residual_unit(
            sym, body, filters[stage + 1], stride, False, f"stage{stage + 1}_unit1", bottle_neck
        )
        for unit in range(units[stage] - 1):
            body = _residual_unit(
                sym, body, filters[stage + 1], (1, 1), True,
                f"stage{stage + 1}_unit{unit + 2}", bottle_neck,
            )  # fmt: skip
    bn1 = sym.BatchNorm(data=body, fix_gamma=False, eps=2e-5, momentum=0.9, name="bn1")
    relu1 = sym.Activation(data=bn1, act_type="relu", name="relu1")
    pool1 = sym.Pooling(data=relu1, global_pool=True, kernel=(7, 7), pool_type="avg", name="pool1")
    flat = sym.Flatten(data=pool1, name="flatten")
    fc1 = sym.FullyConnected(data=flat, num_hidden=num_classes, name="fc1")
    return sym.SoftmaxOutput(data=fc1, name="softmax")


def _conv_factory(
    sym: Any,
    data: Any,
    num_filter: int,
    kernel: tuple,
    name: str,
    stride=(1, 1),
    pad=(0, 0),
    suffix="",
) -> Any:
    """Convolution + BatchNorm + ReLU, named as MXNet's Inception-BN example names them."""
    conv = sym.Convolution(
        data=data, num_filter=num_filter, kernel=kernel, stride=stride, pad=pad,
        name=f"conv_{name}{suffix}",
    )  # fmt: skip
    bn = sym.BatchNorm(data=conv, fix_gamma=True, eps=2e-5, momentum=0.9, name=f"bn_{name}{suffix}")
    return sym.Activation(data=bn, act_type="relu", name=f"relu_{name}{suffix}")


def _inception_a(sym, data, num_1x1, num_3x3red, num_3x3, num_d3x3red, num_d3x3, pool, proj, name):
    c1x1 = _conv_factory(sym, data, num_1x1, (1, 1), f"{name}_1x1")
    c3x3r = _conv_factory(sym, data, num_3x3red, (1, 1), f"{name}_3x3", suffix="_reduce")
    c3x3 = _conv_factory(sym, c3x3r, num_3x3, (3, 3), f"{name}_3x3", pad=(1, 1))
    cd3x3r = _conv_factory(sym, data, num_d3x3red, (1, 1), f"{name}_double_3x3", suffix="_reduce")
    cd3x3 = _conv_factory(sym, cd3x3r, num_d3x3, (3, 3), f"{name}_double_3x3_0", pad=(1, 1))
    cd3x3 = _conv_factory(sym, cd3x3, num_d3x3, (3, 3), f"{name}_double_3x3_1", pad=(1, 1))
    pooling = sym.Pooling(
        data=data, kernel=(3, 3), stride=(1, 1), pad=(1, 1), pool_type=pool,
        name=f"{pool}_pool_{name}_pool",
    )  # fmt: skip
    cproj = _conv_factory(sym, pooling, proj, (1, 1), f"{name}_proj")
    return sym.Concat(c1x1, c3x3, cd3x3, cproj, name=f"ch_concat_{name}_chconcat")


def _inception_b(sym, data, num_3x3red, num_3x3, num_d3x3red, num_d3x3, name):
    c3x3r = _conv_factory(sym, data, num_3x3red, (1, 1), f"{name}_3x3", suffix="_reduce")
    c3x3 = _conv_factory(sym, c3x3r, num_3x3, (3, 3), f"{name}_3x3", pad=(1, 1), stride=(2, 2))
    cd3x3r = _conv_factory(sym, data, num_d3x3red, (1, 1), f"{name}_double_3x3", suffix="_reduce")
    cd3x3 = _conv_factory(sym, cd3x3r, num_d3x3, (3, 3), f"{name}_double_3x3_0", pad=(1, 1))
    cd3x3 = _conv_factory(
        sym, cd3x3, num_d3x3, (3, 3), f"{name}_double_3x3_1", pad=(1, 1), stride=(2, 2)
    )
    pooling = sym.Pooling(
        data=data, kernel=(3, 3), stride=(2, 2), pad=(1, 1), pool_type="max",
        name=f"max_pool_{name}_pool",
    )  # fmt: skip
    return sym.Concat(c3x3, cd3x3, pooling, name=f"ch_concat_{name}_chconcat")


def inception_bn(num_classes: int = 1000, sym: Any = None) -> Any:
    """Inception-BN (GoogLeNet with BatchNorm) as MXNet's ``symbols/inception-bn.py``; data (batch, 3, 224, 224).

    Four parallel branches per module, joined by Concat: the order in which
    branches run decides how many of their outputs are alive at once.
    """
    sym = _default(sym)
    data = sym.Variable("data")
    conv1 = _conv_factory(sym, data, 64, (7, 7), "1", stride=(2, 2), pad=(3, 3))
    pool1 = sym.Pooling(data=conv1, kernel=(3, 3), stride=(2, 2), name="pool_1", pool_type="max")
    conv2red = _conv_factory(sym, pool1, 64, (1, 1), "2_red")
    conv2 = _conv_factory(sym, conv2red, 192, (3, 3), "2", pad=(1, 1))
    pool2 = sym.Pooling(data=conv2, kernel=(3, 3), stride=(2, 2), name="pool_2", pool_type="max")
    body = _inception_a(sym, pool2, 64, 64, 64, 64, 96, "avg", 32, "3a")
    body = _inception_a(sym, body, 64, 64, 96, 64, 96, "avg", 64, "3b")
    body = _inception_b(sym, body, 128, 160, 64, 96, "3c")
    body = _inception_a(sym, body, 224, 64, 96, 96, 128, "avg", 128, "4a")
    body = _inception_a(sym, body, 192, 96, 128, 96, 128, "avg", 128, "4b")
    body = _inception_a(sym, body, 160, 128, 160, 128, 160, "avg", 128, "4c")
    body = _inception_a(sym, body, 96, 128, 192, 160, 192, "avg", 128, "4d")
    body = _inception_b(sym, body, 128, 192, 192, 256, "4e")
    body = _inception_a(sym, body, 352, 192, 320, 160, 224, "avg", 128, "5a")
    body = _inception_a(sym, body, 352, 192, 320, 192, 224, "max", 128, "5b")
    pool = sym.Pooling(
        data=body, kernel=(7, 7), stride=(1, 1), global_pool=True, pool_type="avg",
        name="global_pool",
    )  # fmt: skip
    flatten = sym.Flatten(data=pool, name="flatten")
    fc1 = sym.FullyConnected(data=flatten, num_hidden=num_classes, name="fc1")
    return sym.SoftmaxOutput(data=fc1, name="softmax")


def _conv_bn(sym, data, num_filter, name, kernel=(1, 1), stride=(1, 1), pad=(0, 0), suffix=""):
    """Convolution (no bias) + BatchNorm + ReLU, named as MXNet's Inception-v3 example names them."""
    conv = sym.Convolution(
        data=data, num_filter=num_filter, kernel=kernel, stride=stride, pad=pad, no_bias=True,
        name=f"{name}{suffix}_conv2d",
    )  # fmt: skip
    bn = sym.BatchNorm(data=conv, fix_gamma=True, eps=2e-5, name=f"{name}{suffix}_batchnorm")
    return sym.Activation(data=bn, act_type="relu", name=f"{name}{suffix}_relu")


def _pool(sym, data, pool, name, stride=(1, 1), pad=(1, 1)):
    return sym.Pooling(
        data=data, kernel=(3, 3), stride=stride, pad=pad, pool_type=pool,
        name=f"{pool}_pool_{name}_pool",
    )  # fmt: skip


def _v3_block_a(sym, data, n1x1, n3x3_red, n3x3_1, n3x3_2, n5x5_red, n5x5, pool, proj, name):
    """35x35 module: 1x1, 5x5, double 3x3 and a pooled projection, concatenated."""
    t1 = _conv_bn(sym, data, n1x1, f"{name}_conv")
    t5 = _conv_bn(sym, data, n5x5_red, f"{name}_tower", suffix="_conv")
    t5 = _conv_bn(sym, t5, n5x5, f"{name}_tower", (5, 5), pad=(2, 2), suffix="_conv_1")
    t3 = _conv_bn(sym, data, n3x3_red, f"{name}_tower_1", suffix="_conv")
    t3 = _conv_bn(sym, t3, n3x3_1, f"{name}_tower_1", (3, 3), pad=(1, 1), suffix="_conv_1")
    t3 = _conv_bn(sym, t3, n3x3_2, f"{name}_tower_1", (3, 3), pad=(1, 1), suffix="_conv_2")
    tp = _conv_bn(sym, _pool(sym, data, pool, name), proj, f"{name}_tower_2", suffix="_conv")
    return sym.Concat(t1, t5, t3, tp, name=f"ch_concat_{name}_chconcat")


def _v3_reduce_a(sym, data, n3x3, nd3x3_red, nd3x3_1, nd3x3_2, name):
    """35x35 -> 17x17: a strided 3x3, a strided double 3x3 and a max pool."""
    t3 = _conv_bn(sym, data, n3x3, f"{name}_conv", (3, 3), stride=(2, 2))
    td = _conv_bn(sym, data, nd3x3_red, f"{name}_tower", suffix="_conv")
    td = _conv_bn(sym, td, nd3x3_1, f"{name}_tower", (3, 3), pad=(1, 1), suffix="_conv_1")
    td = _conv_bn(sym, td, nd3x3_2, f"{name}_tower", (3, 3), stride=(2, 2), suffix="_conv_2")
    pool = _pool(sym, data, "max", name, stride=(2, 2), pad=(0, 0))
    return sym.Concat(t3, td, pool, name=f"ch_concat_{name}_chconcat")


def _v3_block_b(sym, data, n1x1, d7, q7, pool, proj, name):
    """17x17 module: 7x7 convolutions factorised into 1x7 and 7x1 (``d7``: red, 1, 2; ``q7``: red, 1..4)."""
    t1 = _conv_bn(sym, data, n1x1, f"{name}_conv")
    td = _conv_bn(sym, data, d7[0], f"{name}_tower", suffix="_conv")
    td = _conv_bn(sym, td, d7[1], f"{name}_tower", (1, 7), pad=(0, 3), suffix="_conv_1")
    td = _conv_bn(sym, td, d7[2], f"{name}_tower", (7, 1), pad=(3, 0), suffix="_conv_2")
    tq = _conv_bn(sym, data, q7[0], f"{name}_tower_1", suffix="_conv")
    for i, (width, kernel, pad) in enumerate(
        zip(q7[1:], [(7, 1), (1, 7)] * 2, [(3, 0), (0, 3)] * 2, strict=True), start=1
    ):
        tq = _conv_bn(sym, tq, width, f"{name}_tower_1", kernel, pad=pad, suffix=f"_conv_{i}")
    tp = _conv_bn(sym, _pool(sym, data, pool, name), proj, f"{name}_tower_2", suffix="_conv")
    return sym.Concat(t1, td, tq, tp, name=f"ch_concat_{name}_chconcat")


def _v3_reduce_b(sym, data, n3x3_red, n3x3, d7_red, d7_1, d7_2, d7_3x3, name):
    """17x17 -> 8x8: a strided 3x3 after 1x1, a 1x7 / 7x1 / strided 3x3 tower, a max pool."""
    t3 = _conv_bn(sym, data, n3x3_red, f"{name}_tower", suffix="_conv")
    t3 = _conv_bn(sym, t3, n3x3, f"{name}_tower", (3, 3), stride=(2, 2), suffix="_conv_1")
    td = _conv_bn(sym, data, d7_red, f"{name}_tower_1", suffix="_conv")
    td = _conv_bn(sym, td, d7_1, f"{name}_tower_1", (1, 7), pad=(0, 3), suffix="_conv_1")
    td = _conv_bn(sym, td, d7_2, f"{name}_tower_1", (7, 1), pad=(3, 0), suffix="_conv_2")
    td = _conv_bn(sym, td, d7_3x3, f"{name}_tower_1", (3, 3), stride=(2, 2), suffix="_conv_3")
    pool = _pool(sym, data, "max", name, stride=(2, 2), pad=(0, 0))
    return sym.Concat(t3, td, pool, name=f"ch_concat_{name}_chconcat")


def _v3_block_c(sym, data, n1x1, d3, n3x3_red, n3x3, d3b, pool, proj, name):
    """8x8 module: branches split into parallel 1x3 and 3x1 convolutions (``d3``, ``d3b``: 2 widths)."""
    t1 = _conv_bn(sym, data, n1x1, f"{name}_conv")
    td = _conv_bn(sym, data, d3[0], f"{name}_tower", suffix="_conv")
    td_a = _conv_bn(sym, td, d3[1], f"{name}_tower", (1, 3), pad=(0, 1), suffix="_mixed_conv")
    td_b = _conv_bn(sym, td, d3[2], f"{name}_tower", (3, 1), pad=(1, 0), suffix="_mixed_conv_1")
    t3 = _conv_bn(sym, data, n3x3_red, f"{name}_tower_1", suffix="_conv")
    t3 = _conv_bn(sym, t3, n3x3, f"{name}_tower_1", (3, 3), pad=(1, 1), suffix="_conv_1")
    t3_a = _conv_bn(sym, t3, d3b[0], f"{name}_tower_1", (1, 3), pad=(0, 1), suffix="_mixed_conv")
    t3_b = _conv_bn(sym, t3, d3b[1], f"{name}_tower_1", (3, 1), pad=(1, 0), suffix="_mixed_conv_1")
    tp = _conv_bn(sym, _pool(sym, data, pool, name), proj, f"{name}_tower_2", suffix="_conv")
    return sym.Concat(t1, td_a, td_b, t3_a, t3_b, tp, name=f"ch_concat_{name}_chconcat")


def inception_v3(num_classes: int = 1000, global_pool: bool = False, sym: Any = None) -> Any:
    """Inception-v3 as MXNet's ``symbols/inception-v3.py``; data (batch, 3, 299, 299).

    Szegedy et al. 2015: a stem of plain convolutions, three 35x35 modules, a
    reduction, four 17x17 modules with factorised 7x7 convolutions, a
    reduction, two 8x8 modules with split 1x3 / 3x1 branches, an 8x8 average
    pool.  Every convolution is followed by BatchNorm and ReLU (about 95 of
    each), so recomputation has many cheap ops to choose from.
    ``global_pool=True`` pools whatever is left instead of 8x8, so small
    inputs (>= 75x75) fit — the tests use it; MXNet's network does not.
    """
    sym = _default(sym)
    data = sym.Variable("data")
    body = _conv_bn(sym, data, 32, "conv", (3, 3), stride=(2, 2))
    body = _conv_bn(sym, body, 32, "conv_1", (3, 3))
    body = _conv_bn(sym, body, 64, "conv_2", (3, 3), pad=(1, 1))
    body = sym.Pooling(data=body, kernel=(3, 3), stride=(2, 2), pool_type="max", name="pool")
    body = _conv_bn(sym, body, 80, "conv_3")
    body = _conv_bn(sym, body, 192, "conv_4", (3, 3))
    body = sym.Pooling(data=body, kernel=(3, 3), stride=(2, 2), pool_type="max", name="pool1")
    body = _v3_block_a(sym, body, 64, 64, 96, 96, 48, 64, "avg", 32, "mixed")
    body = _v3_block_a(sym, body, 64, 64, 96, 96, 48, 64, "avg", 64, "mixed_1")
    body = _v3_block_a(sym, body, 64, 64, 96, 96, 48, 64, "avg", 64, "mixed_2")
    body = _v3_reduce_a(sym, body, 384, 64, 96, 96, "mixed_3")
    for name, width in (("mixed_4", 128), ("mixed_5", 160), ("mixed_6", 160), ("mixed_7", 192)):
        d7 = (width, width, 192)
        q7 = (width, width, width, width, 192)
        body = _v3_block_b(sym, body, 192, d7, q7, "avg", 192, name)
    body = _v3_reduce_b(sym, body, 192, 320, 192, 192, 192, 192, "mixed_8")
    body = _v3_block_c(sym, body, 320, (384, 384, 384), 448, 384, (384, 384), "avg", 192, "mixed_9")
    body = _v3_block_c(
        sym, body, 320, (384, 384, 384), 448, 384, (384, 384), "max", 192, "mixed_10"
    )
    if global_pool:
        pool = sym.Pooling(
            data=body, kernel=(8, 8), global_pool=True, pool_type="avg", name="global_pool"
        )
    else:
        pool = sym.Pooling(
            data=body, kernel=(8, 8), stride=(1, 1), pool_type="avg", name="global_pool"
        )
    flatten = sym.Flatten(data=pool, name="flatten")
    fc1 = sym.FullyConnected(data=flatten, num_hidden=num_classes, name="fc1")
    return sym.SoftmaxOutput(data=fc1, name="softmax")


def lstm_unrolled(
    num_layers: int = 2,
    seq_len: int = 35,
    num_hidden: int = 200,
    num_embed: int = 200,
    num_classes: int = 10000,
    sym: Any = None,
) -> Any:
    """An LSTM unrolled over ``seq_len`` steps, as MXNet's ``example/rnn/old/lstm.py``.

    Inputs: ``data`` (batch, seq_len, num_embed) (the embedded words),
    ``l{i}_init_c`` / ``l{i}_init_h`` (batch, num_hidden) and ``softmax_label``
    (seq_len * batch,).  Weights are shared across time steps, so their
    gradients are sums over the steps.  Each cell is FullyConnected +
    elementwise ops: gates = i2h(x) + h2h(h); c = f*c + i*g; h = o*tanh(c).
    """
    sym = _default(sym)
    params = [
        {
            key: sym.Variable(f"l{layer}_{key}")
            for key in ("i2h_weight", "i2h_bias", "h2h_weight", "h2h_bias")
        }
        for layer in range(num_layers)
    ]
    states = [
        (sym.Variable(f"l{layer}_init_c"), sym.Variable(f"l{layer}_init_h"))
        for layer in range(num_layers)
    ]
    data = sym.Variable("data")
    words = sym.SliceChannel(
        data=data, num_outputs=seq_len, axis=1, squeeze_axis=True, name="slice"
    )
    hidden_all = []
    for step in range(seq_len):
        hidden = words[step]
        for layer in range(num_layers):
            prev_c, prev_h = states[layer]
            param = params[layer]
            prefix = f"t{step}_l{layer}"
            i2h = sym.FullyConnected(
                data=hidden, weight=param["i2h_weight"], bias=param["i2h_bias"],
                num_hidden=num_hidden * 4, name=f"{prefix}_i2h",
            )  # fmt: skip
            h2h = sym.FullyConnected(
                data=prev_h, weight=param["h2h_weight"], bias=param["h2h_bias"],
                num_hidden=num_hidden * 4, name=f"{prefix}_h2h",
            )  # fmt: skip
            gates = i2h + h2h
            parts = sym.SliceChannel(data=gates, num_outputs=4, name=f"{prefix}_slice")
            in_gate = sym.Activation(data=parts[0], act_type="sigmoid")
            in_transform = sym.Activation(data=parts[1], act_type="tanh")
            forget_gate = sym.Activation(data=parts[2], act_type="sigmoid")
            out_gate = sym.Activation(data=parts[3], act_type="sigmoid")
            next_c = (forget_gate * prev_c) + (in_gate * in_transform)
            next_h = out_gate * sym.Activation(data=next_c, act_type="tanh")
            states[layer] = (next_c, next_h)
            hidden = next_h
        hidden_all.append(hidden)
    concat = sym.Concat(*hidden_all, dim=0, name="concat")
    pred = sym.FullyConnected(data=concat, num_hidden=num_classes, name="pred")
    return sym.SoftmaxOutput(data=pred, name="softmax")


#: name -> (builder keyword arguments, per-example input shapes without the batch axis)
NETWORKS: dict[str, tuple[dict[str, Any], dict[str, tuple]]] = {
    "mlp": ({}, {"data": (784,)}),
    "lenet": ({}, {"data": (1, 28, 28)}),
    "alexnet": ({}, {"data": (3, 224, 224)}),
    "vgg16": ({}, {"data": (3, 224, 224)}),
    "resnet18": ({"num_layers": 18}, {"data": (3, 224, 224)}),
    "resnet50": ({"num_layers": 50}, {"data": (3, 224, 224)}),
    "inception_bn": ({}, {"data": (3, 224, 224)}),
    "inception_v3": ({}, {"data": (3, 299, 299)}),
    "lstm": ({"num_layers": 2, "seq_len": 35, "num_hidden": 200}, {"data": (35, 200)}),
}


def build(name: str, sym: Any = None) -> Any:
    """Build the network called ``name`` (a key of :data:`NETWORKS`)."""
    kwargs, _ = NETWORKS[name]
    if name.startswith("resnet"):
        return resnet(sym=sym, **kwargs)
    builder: dict[str, Callable[..., Any]] = {
        "mlp": mlp,
        "lenet": lenet,
        "alexnet": alexnet,
        "vgg16": vgg16,
        "inception_bn": inception_bn,
        "inception_v3": inception_v3,
        "lstm": lstm_unrolled,
    }
    return builder[name](sym=sym, **kwargs)


def input_shapes(name: str, batch: int) -> dict[str, tuple]:
    """The shapes to bind network ``name`` with at batch size ``batch`` (labels and LSTM states included)."""
    kwargs, shapes = NETWORKS[name]
    result = {key: (batch, *shape) for key, shape in shapes.items()}
    if name == "lstm":
        hidden = kwargs["num_hidden"]
        for layer in range(kwargs["num_layers"]):
            result[f"l{layer}_init_c"] = (batch, hidden)
            result[f"l{layer}_init_h"] = (batch, hidden)
        result["softmax_label"] = (batch * kwargs["seq_len"],)
    else:
        result["softmax_label"] = (batch,)
    return result
