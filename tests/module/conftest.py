"""Shared by the Module tests: the small MLP and MXNet's fit vectors."""

import json
import os

import numpy as np
import pytest

import mxnb as mx

with open(os.path.join(os.path.dirname(__file__), "data", "fit_vectors.json")) as handle:
    VECTORS = json.load(handle)


def network():
    """fc1 (8) -> relu -> fc2 (3) -> SoftmaxOutput, as in gen_fit_vectors.py."""
    data = mx.sym.Variable("data")
    net = mx.sym.FullyConnected(data, num_hidden=8, name="fc1")
    net = mx.sym.Activation(net, act_type="relu", name="relu1")
    net = mx.sym.FullyConnected(net, num_hidden=3, name="fc2")
    return mx.sym.SoftmaxOutput(net, name="softmax")


@pytest.fixture
def mlp():
    """The network of the fit vectors."""
    return network()


@pytest.fixture
def fit_data():
    """(x, y, initial_params(), VECTORS)."""
    x = np.array(VECTORS["x"], dtype="float32")
    y = np.array(VECTORS["y"], dtype="float32")
    params = {k: mx.nd.array(np.array(v, dtype="float32")) for k, v in VECTORS["init"].items()}
    return x, y, params, VECTORS
