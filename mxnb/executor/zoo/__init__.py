"""Model-zoo networks built with ``mx.sym``, for memory planning, benchmarks and notebooks.

Idea: the networks MXNet users export — MLP, LeNet, AlexNet, VGG-16,
ResNet (MXNet's pre-activation ``symbols/resnet.py``), Inception-BN, Inception-v3 and an
unrolled LSTM (MXNet's ``example/rnn/old/lstm.py``) — written once, node names as in MXNet's
examples, so the plans mxnb makes can be set beside MXNet's own for the same
graph and shapes.

Chapters: :mod:`.cnn` (MLP, LeNet, AlexNet, VGG-16, ResNet), :mod:`.inception`
(Inception-BN, Inception-v3), :mod:`.lstm` (the unrolled LSTM); :mod:`.symbols`
says which symbol module they write with.

Rule: every builder takes an optional ``sym`` module (default ``mxnb.sym``);
anything with MXNet's symbol API works, which is how the reference figures in
``benchmarks/mxnet_reference.json`` were produced with MXNet 1.9.1 from this
very package.  ``input_shapes(name, batch)`` gives the shapes to bind with.

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

from .cnn import alexnet, deep_mlp, lenet, lenet5_digits, mlp, resnet, vgg16
from .inception import inception_bn, inception_v3
from .lstm import lstm_shapes, lstm_unrolled

__all__ = [
    "NETWORKS",
    "alexnet",
    "build",
    "deep_mlp",
    "inception_bn",
    "inception_v3",
    "input_shapes",
    "lenet",
    "lenet5_digits",
    "lstm_shapes",
    "lstm_unrolled",
    "mlp",
    "resnet",
    "vgg16",
]


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
    if name == "lstm":
        return lstm_shapes(batch, **kwargs)
    return {**{key: (batch, *shape) for key, shape in shapes.items()}, "softmax_label": (batch,)}
