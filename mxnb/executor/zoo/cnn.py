"""The plain and residual convolutional networks: MLP, LeNet, AlexNet, VGG-16, ResNet.

Idea: the networks as MXNet's examples write them (node names included), so
plans made here sit beside MXNet's for the same graph; ResNet is MXNet's
pre-activation ``symbols/resnet.py``.

Example::

    >>> from mxnb.executor.zoo import cnn
    >>> cnn.lenet().list_arguments()[:3]
    ['data', 'conv1_weight', 'conv1_bias']
"""

from __future__ import annotations

from typing import Any

from .symbols import default_symbol as _default

__all__ = ["alexnet", "lenet", "lenet5_digits", "mlp", "resnet", "vgg16"]


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


def deep_mlp(layers: int = 6, hidden: int = 128, num_classes: int = 10, sym: Any = None) -> Any:
    """``layers`` FullyConnected(``hidden``) + ReLU, then fc ``out`` and softmax; every activation
    is an equal block held for backward, so recomputation trades one at a time (``fc{i}``,
    ``relu{i}``; data (batch, features))."""
    sym = _default(sym)
    net = sym.Variable("data")
    for i in range(layers):
        net = sym.FullyConnected(net, num_hidden=hidden, name=f"fc{i}")
        net = sym.Activation(net, act_type="relu", name=f"relu{i}")
    net = sym.FullyConnected(net, num_hidden=num_classes, name="out")
    return sym.SoftmaxOutput(net, name="softmax")


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
