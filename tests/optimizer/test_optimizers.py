"""mx.optimizer: each optimizer, the Updater and the schedules equal MXNet 1.9.1's (real MXNet's vectors)."""

import json
import logging
import os

import numpy as np
import pytest

import mxnb as mx

DATA = os.path.join(os.path.dirname(__file__), "data", "optimizer_vectors.json")
with open(DATA) as handle:
    VECTORS = json.load(handle)

SCHEDULERS = {
    "factor": mx.lr_scheduler.FactorScheduler,
    "multifactor": mx.lr_scheduler.MultiFactorScheduler,
    "poly": mx.lr_scheduler.PolyScheduler,
    "cosine": mx.lr_scheduler.CosineScheduler,
}


def _make(case):
    kwargs = dict(case["params"])
    if "lr_scheduler" in kwargs:
        kind, params = kwargs.pop("lr_scheduler")
        kwargs["lr_scheduler"] = SCHEDULERS[kind](**params)
    return mx.optimizer.create(
        case["name"], param_idx2name={0: "fc_weight", 1: "fc_bias"}, **kwargs
    )


@pytest.mark.parametrize(
    "case", VECTORS["optimizers"], ids=lambda c: f"{c['name']}-{'-'.join(sorted(c['params']))}"
)
def test_optimizer_matches_mxnet(case, caplog):
    """Four updater steps on a weight and a bias give MXNet's weights after every step."""
    caplog.set_level(logging.ERROR)
    updater = mx.optimizer.get_updater(_make(case))
    weights = {
        int(k): mx.nd.array(np.array(v, dtype="float32")) for k, v in case["weights"].items()
    }
    for step, expected in zip(case["grads"], case["history"]):
        for key in (0, 1):
            updater(key, mx.nd.array(np.array(step[str(key)], dtype="float32")), weights[key])
        for key in (0, 1):
            np.testing.assert_allclose(
                weights[key].asnumpy(), expected[str(key)], rtol=1e-5, atol=1e-6
            )


@pytest.mark.parametrize("case", VECTORS["schedulers"], ids=lambda c: c["kind"])
def test_scheduler_matches_mxnet(case):
    """The rate at num_update 0..40 equals MXNet's."""
    schedule = SCHEDULERS[case["kind"]](**case["params"])
    np.testing.assert_allclose([schedule(n) for n in range(41)], case["lr"], rtol=1e-12)


def test_create_unknown_names_the_known():
    with pytest.raises(mx.MXNBError, match="known optimizers: .*adam"):
        mx.optimizer.create("nosuch")


def test_wd_mult_rule_and_lr_mult():
    """Biases get no weight decay; lr_mult scales a parameter's rate."""
    opt = mx.optimizer.SGD(
        learning_rate=0.1, wd=0.5, param_idx2name={0: "a_weight", 1: "a_bias", 2: "bn_gamma"}
    )
    assert opt._get_wd(0) == 0.5 and opt._get_wd(1) == 0.0 and opt._get_wd(2) == 0.5
    opt.set_lr_mult({"a_weight": 2.0})
    assert opt._get_lr(0) == pytest.approx(0.2)


def test_updater_states_round_trip_without_pickle():
    """get_states / set_states restore momentum and update counts; garbage is a FormatError."""
    opt = mx.optimizer.Adam(learning_rate=0.1)
    updater = mx.optimizer.get_updater(opt)
    weight = mx.nd.ones(3)
    updater("w", mx.nd.ones(3), weight)
    blob = updater.get_states(dump_optimizer=True)
    other = mx.optimizer.get_updater(mx.optimizer.Adam(learning_rate=0.1))
    other.set_states(blob)
    assert other.optimizer._index_update_count == {"w": 1}
    for mine, theirs in zip(updater.states["w"], other.states["w"]):
        np.testing.assert_array_equal(mine.asnumpy(), theirs.asnumpy())
    weight2 = weight.copy()
    updater("w", mx.nd.ones(3), weight)
    other("w", mx.nd.ones(3), weight2)
    np.testing.assert_array_equal(weight.asnumpy(), weight2.asnumpy())
    with pytest.raises(mx.base.FormatError):
        other.set_states(b"\x80\x04not a states file")


def test_multi_precision_keeps_float32_master():
    """float16 weights update a float32 master copy, then are cast back."""
    opt = mx.optimizer.SGD(learning_rate=0.1, momentum=0.9, multi_precision=True)
    weight = mx.nd.ones(4, dtype="float16")
    state = opt.create_state_multi_precision(0, weight)
    assert state[1].dtype == np.float32
    for _ in range(3):
        opt.update_multi_precision(0, weight, mx.nd.full(4, 1e-3, dtype="float16"), state)
    master = state[1].asnumpy()
    assert weight.dtype == np.float16
    np.testing.assert_array_equal(weight.asnumpy(), master.astype(np.float16))
    assert master[0] != np.float32(np.float16(master[0]))  # the master keeps bits fp16 loses
