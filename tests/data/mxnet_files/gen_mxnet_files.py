"""Write small files with REAL MXNet 1.9.1 (run by hand, not by the tests).

cd tests/data/mxnet_files && /work/mxnet-venv/bin/python gen_mxnet_files.py

mlp-symbol.json, mlp-0002.params   a checkpoint of a small MLP with BatchNorm (mx.model.save_checkpoint)
mlp-expected.json                  its parameter values, as lists, for the test to compare
list.params                        mx.nd.save of a list (no names), several dtypes
Also checks, when mxnb_ckpt-0001.params exists (written by mxnb), that MXNet loads it.
"""

import json
import os

import mxnet as mx
import numpy as np

rng = np.random.RandomState(5)
data = mx.sym.Variable("data")
net = mx.sym.FullyConnected(data, num_hidden=4, name="fc1")
net = mx.sym.BatchNorm(net, name="bn1")
net = mx.sym.Activation(net, act_type="relu", name="relu1")
net = mx.sym.FullyConnected(net, num_hidden=3, name="fc2")
net = mx.sym.SoftmaxOutput(net, name="softmax")
arg_shapes, _, aux_shapes = net.infer_shape(data=(2, 5))
args = {
    n: mx.nd.array(rng.uniform(-1, 1, s))
    for n, s in zip(net.list_arguments(), arg_shapes)
    if n not in ("data", "softmax_label")
}
auxs = {
    n: mx.nd.array(rng.uniform(0.5, 1, s)) for n, s in zip(net.list_auxiliary_states(), aux_shapes)
}
mx.model.save_checkpoint("mlp", 2, net, args, auxs)
with open("mlp-expected.json", "w") as f:
    json.dump(
        {
            "arg": {k: v.asnumpy().tolist() for k, v in args.items()},
            "aux": {k: v.asnumpy().tolist() for k, v in auxs.items()},
        },
        f,
    )
mx.nd.save(
    "list.params",
    [
        mx.nd.array([1.5, -2], dtype="float64"),
        mx.nd.array([[1, 2]], dtype="int32"),
        mx.nd.array([3], dtype="float16"),
        mx.nd.array([[[7]]], dtype="uint8"),
    ],
)
if os.path.exists("/tmp/mxnb_ckpt-0001.params"):
    sym, a, x = mx.model.load_checkpoint("/tmp/mxnb_ckpt", 1)
    print(
        "MXNet loaded mxnb's checkpoint:",
        sym.list_arguments(),
        {k: v.asnumpy().tolist() for k, v in a.items()},
        {k: v.asnumpy().tolist() for k, v in x.items()},
    )
print("wrote mlp checkpoint and list.params")
