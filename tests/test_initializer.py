"""mx.init: MXNet's name rules, the distributions' scales, Mixed, Load and the __init__ attribute."""

import json

import numpy as np
import pytest

import mxnb as mx
from mxnb.initializer import InitError


def _init(initializer, name, shape, attrs=None):
    arr = mx.nd.full(shape, 7.0)
    initializer(mx.init.InitDesc(name, attrs), arr)
    return arr.asnumpy()


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("fc_bias", 0.0),
        ("bn_gamma", 1.0),
        ("bn_beta", 0.0),
        ("bn_moving_mean", 0.0),
        ("bn_moving_var", 1.0),
    ],
)
def test_name_rules(name, value):
    """Biases, betas and moving means are 0; gammas and moving variances 1."""
    assert (_init(mx.init.Xavier(), name, (4,)) == value).all()


def test_unknown_name_explains_how_to_choose():
    with pytest.raises(InitError, match="'data'.*init="):
        _init(mx.init.Uniform(), "data", (2,))


@pytest.mark.parametrize("rnd_type", ["uniform", "gaussian"])
@pytest.mark.parametrize("factor_type", ["avg", "in", "out"])
def test_xavier_scale(rnd_type, factor_type):
    """Xavier's spread follows sqrt(magnitude / factor) with fans counting the kernel."""
    shape = (64, 32, 3, 3)
    fan_in, fan_out = 32 * 9, 64 * 9
    factor = {"avg": (fan_in + fan_out) / 2, "in": fan_in, "out": fan_out}[factor_type]
    scale = np.sqrt(3.0 / factor)
    values = _init(mx.init.Xavier(rnd_type, factor_type, 3), "conv_weight", shape)
    if rnd_type == "uniform":
        assert np.abs(values).max() <= scale + 1e-6
        assert values.std() == pytest.approx(scale / np.sqrt(3), rel=0.05)
    else:
        assert values.std() == pytest.approx(scale, rel=0.05)


def test_xavier_refuses_vectors():
    with pytest.raises(mx.base.ShapeError, match="fc_weight"):
        _init(mx.init.Xavier(), "fc_weight", (5,))


def test_msra_uniform_normal_constant_orthogonal():
    values = _init(mx.init.MSRAPrelu(slope=0.0), "w_weight", (200, 100))
    assert values.std() == pytest.approx(np.sqrt(2.0 / 150), rel=0.05)
    assert np.abs(_init(mx.init.Uniform(0.5), "w_weight", (100, 10))).max() <= 0.5
    assert _init(mx.init.Normal(2.0), "w_weight", (200, 50)).std() == pytest.approx(2.0, rel=0.05)
    assert (_init(mx.init.Constant(3.0), "w_weight", (2, 2)) == 3.0).all()
    assert (_init(mx.init.One(), "w_weight", (2, 2)) == 1.0).all()
    assert (_init(mx.init.Zero(), "w_weight", (2, 2)) == 0.0).all()
    ortho = _init(mx.init.Orthogonal(scale=1.0), "w_weight", (4, 6))
    np.testing.assert_allclose(ortho @ ortho.T, np.eye(4), atol=1e-5)


def test_init_attribute_overrides():
    """The variable attribute __init__ (MXNet's JSON form) wins over the global initializer."""
    attrs = {"__init__": mx.init.Constant(2.5).dumps()}
    assert json.loads(attrs["__init__"]) == ["constant", {"value": 2.5}]
    assert (_init(mx.init.Zero(), "anything", (3,), attrs) == 2.5).all()


def test_mixed_and_load(tmp_path):
    mixed = mx.init.Mixed(["fc1.*", ".*"], [mx.init.One(), mx.init.Zero()])
    assert (_init(mixed, "fc1_weight", (2, 2)) == 1).all()
    assert (_init(mixed, "fc2_weight", (2, 2)) == 0).all()
    load = mx.init.Load({"arg:fc_weight": mx.nd.full((2, 2), 4.0)}, default_init=mx.init.One())
    assert (_init(load, "fc_weight", (2, 2)) == 4).all()
    assert (_init(load, "other_weight", (2, 2)) == 1).all()
    with pytest.raises(mx.base.ShapeError, match="fc_weight"):
        _init(load, "fc_weight", (3, 2))
    with pytest.raises(InitError, match="no default_init"):
        _init(mx.init.Load({}), "x_weight", (1,))


def test_lstm_bias_of_an_lstm_cell_sets_only_the_forget_gate():
    """mx.rnn.LSTMCell's i2h_bias carries LSTMBias: zeros but forget_bias on the forget quarter."""
    cell = mx.rnn.LSTMCell(3, prefix="l_", forget_bias=2.5)
    outputs, _ = cell.unroll(2, inputs=mx.sym.Variable("data"), merge_outputs=True)
    attrs = outputs.attr_dict()["l_i2h_bias"]
    bias = _init(mx.init.Xavier(), "l_i2h_bias", (12,), attrs)
    np.testing.assert_array_equal(bias, [0, 0, 0, 2.5, 2.5, 2.5, 0, 0, 0, 0, 0, 0])
    assert json.loads(mx.init.LSTMBias(0.5).dumps()) == ["lstmbias", {"forget_bias": 0.5}]
    with pytest.raises(mx.base.ShapeError, match="4 \\* num_hidden"):
        _init(mx.init.Xavier(), "l_i2h_bias", (6,), attrs)
