"""mx.gluon at the depth MXNet's core tests use: Block / HybridBlock / Dense / Parameter.

Specification (issue 36): ``gluon.Block``, ``HybridBlock`` with ``hybridize``,
``nn.Dense`` and ``Parameter`` are real (on mxnb's autograd and symbol): names,
outputs, gradients and symbolic calls equal MXNet 1.9.1's, whose values are in
``data/gluon_vectors.json`` (written by ``data/gen_gluon_vectors.py`` beside it).
"""

from __future__ import annotations

import json
import threading
from pathlib import Path

import numpy as np
import pytest

import mxnb as mx
from mxnb.gluon import block, nn

VECTORS = json.loads((Path(__file__).parent / "data" / "gluon_vectors.json").read_text())


def _net() -> nn.HybridSequential:
    net = nn.HybridSequential()
    with net.name_scope():
        net.add(nn.Dense(4, activation="relu", weight_initializer=mx.init.Constant(0.1),
                         bias_initializer=mx.init.Constant(-0.5)))  # fmt: skip
        net.add(nn.Dense(2, weight_initializer=mx.init.Constant(-0.2)))
    net.initialize()
    return net


def test_prefixes_and_parameter_names_are_mxnets():
    want = VECTORS["names"]
    with mx.name.NameManager():
        a, b = nn.Dense(2), nn.Dense(3)
        seq = nn.HybridSequential()
        with seq.name_scope():
            seq.add(nn.Dense(4, activation="relu"), nn.Dense(2))
        got = {"dense_a": a.prefix, "dense_b": b.prefix, "seq": seq.prefix,
               "seq_params": sorted(seq.collect_params().keys())}  # fmt: skip
    assert got == want


def test_forward_gradient_and_hybridized_forward_equal_mxnet():
    want = VECTORS["forward"]
    x = mx.nd.array(np.array(want["x"], dtype=np.float32))
    with mx.name.NameManager():
        net = _net()
        np.testing.assert_allclose(net(x).asnumpy(), want["y"], rtol=1e-5, atol=1e-6)
        shapes = {k: list(v.shape) for k, v in net.collect_params().items()}
        assert shapes == want["weight_shapes"]  # in_units inferred on the first call
        with mx.autograd.record():
            loss = net(x).sum()
        loss.backward()
        first = net.collect_params()["hybridsequential0_dense0_weight"]
        np.testing.assert_allclose(first.grad().asnumpy(), want["grad_dense0_weight"], rtol=1e-5)
        net.hybridize()
        np.testing.assert_allclose(net(x).asnumpy(), want["y_hybridized"], rtol=1e-5, atol=1e-6)
        assert net._cached  # the hybridized call ran through one traced CachedOp


def test_dense_without_flatten_and_on_a_symbol():
    x = mx.nd.array(np.array(VECTORS["forward"]["x"], dtype=np.float32))
    with mx.name.NameManager():
        d = nn.Dense(3, flatten=False, in_units=4, weight_initializer=mx.init.One())
        d.initialize()
        assert list(d(x).shape) == VECTORS["no_flatten"]["y_shape"]
    with mx.name.NameManager():
        s = nn.Dense(3, in_units=4)(mx.sym.var("data"))
        assert s.list_arguments() == VECTORS["symbol"]["arguments"]


def test_deferred_parameter_names_itself_when_read_too_early():
    d = nn.Dense(2)
    d.initialize()
    with pytest.raises(mx.gluon.DeferredInitializationError, match="first forward"):
        d.weight.data()
    with pytest.raises(mx.MXNetError, match="only axes declared 0"):
        d.weight.shape = (3, 5)


def test_block_scope_is_per_thread():
    class Dummy:
        prefix, _empty_prefix = "spawned_", False

    seen = []

    def spawned() -> None:
        keep = Dummy()
        with block._BlockScope(keep):
            seen.append(mx.name.NameManager.current.get(None, "hello"))

    thread = threading.Thread(target=spawned)
    thread.start()
    thread.join()
    assert seen == ["spawned_hello0"]
    assert mx.name.NameManager.current.get(None, "hello").startswith("hello")


def test_sequential_dropout_is_identity_outside_training():
    net = nn.Sequential()
    net.add(nn.Dense(3, in_units=2, weight_initializer=mx.init.One()), nn.Dropout(0.5))
    net.initialize()
    out = net(mx.nd.ones((4, 2)))
    np.testing.assert_array_equal(out.asnumpy(), np.full((4, 3), 2.0, np.float32))
