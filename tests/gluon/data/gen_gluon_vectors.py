"""Write gluon_vectors.json: MXNet 1.9.1's Gluon names and values for tests/gluon.

Run with a Python that has MXNet 1.9.1 (not mxnb):
    /tmp/mxvenv/bin/python tests/gluon/data/gen_gluon_vectors.py
Every case uses fixed inputs and constant initializers, so the values are exact.
"""

import json
import os

import mxnet as mx
import numpy as np
from mxnet import autograd
from mxnet.gluon import nn

out = {}

# names: top-level prefixes count per thread's NameManager; children get the parent's prefix
with mx.name.NameManager():
    a, b = nn.Dense(2), nn.Dense(3)
    seq = nn.HybridSequential()
    with seq.name_scope():
        seq.add(nn.Dense(4, activation="relu"), nn.Dense(2))
    out["names"] = {
        "dense_a": a.prefix,
        "dense_b": b.prefix,
        "seq": seq.prefix,
        "seq_params": sorted(seq.collect_params().keys()),
    }

# forward with constant weights: Dense(flatten=True) on a 3-d input, relu, then Dense
x = np.arange(24, dtype=np.float32).reshape(2, 3, 4) / 10.0
with mx.name.NameManager():
    net = nn.HybridSequential()
    with net.name_scope():
        net.add(
            nn.Dense(
                4,
                activation="relu",
                weight_initializer=mx.init.Constant(0.1),
                bias_initializer=mx.init.Constant(-0.5),
            )
        )
        net.add(nn.Dense(2, weight_initializer=mx.init.Constant(-0.2)))
    net.initialize()
    y = net(mx.nd.array(x))
    out["forward"] = {
        "x": x.tolist(),
        "y": y.asnumpy().tolist(),
        "weight_shapes": {k: list(v.shape) for k, v in net.collect_params().items()},
    }
    # gradient of sum(y) w.r.t. the first weight
    with autograd.record():
        loss = net(mx.nd.array(x)).sum()
    loss.backward()
    first = [p for k, p in net.collect_params().items() if k.endswith("dense0_weight")][0]
    out["forward"]["grad_dense0_weight"] = first.grad().asnumpy().tolist()
    net.hybridize()
    out["forward"]["y_hybridized"] = net(mx.nd.array(x)).asnumpy().tolist()

# flatten=False keeps the leading axes
with mx.name.NameManager():
    d = nn.Dense(3, flatten=False, in_units=4, weight_initializer=mx.init.One())
    d.initialize()
    out["no_flatten"] = {"y_shape": list(d(mx.nd.array(x)).shape)}

# a Symbol input gives a Symbol with the parameters as variables
with mx.name.NameManager():
    d = nn.Dense(3, in_units=4)
    s = d(mx.sym.var("data"))
    out["symbol"] = {"arguments": s.list_arguments(), "outputs": s.list_outputs()}

path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "gluon_vectors.json")
with open(path, "w") as f:
    json.dump(out, f, indent=1, sort_keys=True)
print("wrote", path)
