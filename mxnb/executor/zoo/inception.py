"""The Inception networks: Inception-BN and Inception-v3, block by block as MXNet's examples.

Example::

    >>> from mxnb.executor.zoo import inception
    >>> inception.inception_bn(num_classes=10).list_outputs()
    ['softmax_output']
"""

from __future__ import annotations

from typing import Any

from .symbols import default_symbol as _default

__all__ = ["inception_bn", "inception_v3"]


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
