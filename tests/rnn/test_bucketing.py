"""BucketingModule: a bucketed LSTM language model, trained as MXNet 1.9.1 trains it.

``data/bucketing_lm.npz`` was written by ``data/make_bucketing_lm.py`` under
real MXNet; the same script's functions (corpus, sym_gen, initial parameters,
the no-shuffle iterator) build the mxnb side, so only the library differs.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest

import mxnb as mx
from mxnb.base import MXNBError, ShapeError

DATA = Path(__file__).resolve().parent / "data"
_spec = importlib.util.spec_from_file_location("make_bucketing_lm", DATA / "make_bucketing_lm.py")
lm = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(lm)


@pytest.fixture(scope="module")
def trained():
    """``(module, train perplexities, score perplexity)`` of mxnb's run."""
    return lm.train(mx)


@pytest.fixture(scope="module")
def reference():
    """MXNet 1.9.1's run."""
    with np.load(DATA / "bucketing_lm.npz") as ref:
        return {key: ref[key] for key in ref.files}


def test_every_bucket_was_bound_and_shares_the_default_buckets_arrays(trained):
    module, _, _ = trained
    assert sorted(module._buckets) == [4, 8]
    default, short = module._buckets[8], module._buckets[4]
    assert short.symbol.list_arguments() != default.symbol.list_arguments() or (
        short.symbol.tojson() != default.symbol.tojson()
    )
    for name in lm.initial_params():
        long_exec, short_exec = default._exec_group.execs[0], short._exec_group.execs[0]
        assert short_exec.arg_dict[name] is long_exec.arg_dict[name], name
        assert short_exec.grad_dict[name] is long_exec.grad_dict[name], name
    assert short._updater is default._updater
    assert short.get_params()[0] is default.get_params()[0]
    # the inputs are each bucket's own, of its length
    assert short._exec_group.execs[0].arg_dict["data"].shape == (lm.BATCH, 4)
    assert default._exec_group.execs[0].arg_dict["data"].shape == (lm.BATCH, 8)


def test_loss_decreases(trained):
    _, perplexities, score = trained
    assert perplexities[0] > perplexities[1] > perplexities[2]
    assert score < perplexities[0]


def test_training_equals_mxnet_bucketing_module(trained, reference):
    module, perplexities, score = trained
    np.testing.assert_allclose(perplexities, reference["train_perplexity"], rtol=1e-5)
    np.testing.assert_allclose(score, reference["score_perplexity"], rtol=1e-5)
    arg_params, _ = module.get_params()
    assert sorted(arg_params) == sorted(lm.initial_params())
    for name, value in arg_params.items():
        final = reference[f"final:{name}"]
        assert not np.allclose(final, reference[f"init:{name}"]), name
        np.testing.assert_allclose(value.asnumpy(), final, rtol=1e-4, atol=1e-5, err_msg=name)


def test_an_update_through_one_bucket_is_seen_by_the_other():
    sym_gen = lm.sym_gen_factory(mx)
    module = mx.mod.BucketingModule(sym_gen, default_bucket_key=8)
    module.bind([("data", (2, 8))], [("softmax_label", (2, 8))])
    module.init_params(mx.init.Xavier())
    module.init_optimizer(optimizer="sgd", optimizer_params={"learning_rate": 1.0})
    tokens = np.arange(1, 9, dtype=np.float32).reshape(2, 4) % lm.VOCAB
    batch = mx.io.DataBatch(
        [mx.nd.array(tokens)],
        [mx.nd.array(np.roll(tokens, -1, axis=1))],
        bucket_key=4,
        provide_data=[mx.io.DataDesc("data", (2, 4))],
        provide_label=[mx.io.DataDesc("softmax_label", (2, 4))],
    )
    before = module._buckets[8]._exec_group.execs[0].arg_dict["pred_weight"].asnumpy()
    module.forward_backward(batch)
    module.update()
    assert module._curr_bucket_key == 4
    after = module._buckets[8]._exec_group.execs[0].arg_dict["pred_weight"].asnumpy()
    assert not np.allclose(before, after)
    np.testing.assert_array_equal(module.get_params()[0]["pred_weight"].asnumpy(), after)
    assert module.get_outputs()[0].shape == (8, lm.VOCAB)


def test_shared_module_shape_mismatch_names_the_parameter():
    def net(hidden):
        fc = mx.sym.FullyConnected(mx.sym.Variable("data"), num_hidden=hidden, name="fc")
        return mx.sym.SoftmaxOutput(fc, name="softmax")

    owner = mx.mod.Module(net(3))
    owner.bind([("data", (2, 5))], [("softmax_label", (2,))])
    owner.init_params()
    other = mx.mod.Module(net(4))
    with pytest.raises(ShapeError, match="fc_weight"):
        other.bind([("data", (2, 5))], [("softmax_label", (2,))], shared_module=owner)
    unready = mx.mod.Module(net(3))
    unready.bind([("data", (2, 5))], [("softmax_label", (2,))])
    with pytest.raises(MXNBError, match="shared_module"):
        mx.mod.Module(net(3)).bind([("data", (2, 5))], shared_module=unready)


def test_new_bucket_before_init_params_is_an_error():
    module = mx.mod.BucketingModule(lm.sym_gen_factory(mx), default_bucket_key=8)
    module.bind([("data", (2, 8))], [("softmax_label", (2, 8))])
    with pytest.raises(MXNBError, match="init_params"):
        module.switch_bucket(4, [("data", (2, 4))], [("softmax_label", (2, 4))])
