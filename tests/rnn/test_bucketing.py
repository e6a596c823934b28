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


def test_buckets_share_memory_as_mxnet_does(trained):
    """A shorter bucket's inputs are views of the default bucket's; its blocks come from its pool."""
    module, _, _ = trained
    long_exec = module._buckets[8]._exec_group.execs[0]
    short_exec = module._buckets[4]._exec_group.execs[0]
    for name in ("data", "softmax_label"):
        assert short_exec.arg_dict[name]._chunk is long_exec.arg_dict[name]._chunk, name
    assert short_exec._data_pool is long_exec._data_pool
    # every intermediate block of bucket 4 fits in bucket 8's: the short bucket allocates nothing
    assert short_exec.borrowed_bytes == short_exec.memory_plan.internal_bytes > 0
    assert {id(b._chunk) for b in short_exec._blocks} <= {id(b._chunk) for b in long_exec._blocks}


def test_a_failing_sym_gen_names_the_bucket_key():
    working = lm.sym_gen_factory(mx)

    def sym_gen(seq_len):
        if seq_len == 5:
            raise ValueError("no cell for 5 steps")
        return working(seq_len)

    module = mx.mod.BucketingModule(sym_gen, default_bucket_key=8)
    module.bind([("data", (2, 8))], [("softmax_label", (2, 8))])
    module.init_params()
    with pytest.raises(MXNBError, match=r"sym_gen\(5\) raised ValueError: no cell for 5 steps"):
        module.switch_bucket(5, [("data", (2, 5))], [("softmax_label", (2, 5))])
    with pytest.raises(MXNBError, match=r"sym_gen\(8\) returned Symbol; it must return"):
        mx.mod.BucketingModule(lambda key: working(key)[0], default_bucket_key=8)


def test_a_bucket_whose_shapes_do_not_fit_names_the_key_and_the_parameter():
    sym_gen = lm.sym_gen_factory(mx)

    def wider(seq_len):
        if seq_len != 3:
            return sym_gen(seq_len)
        data = mx.sym.Variable("data")
        embed = mx.sym.Embedding(data, input_dim=lm.VOCAB + 1, output_dim=lm.EMBED, name="embed")
        return mx.sym.MakeLoss(mx.sym.sum(embed), name="loss"), ("data",), ()

    module = mx.mod.BucketingModule(wider, default_bucket_key=8)
    module.bind([("data", (2, 8))], [("softmax_label", (2, 8))])
    module.init_params()
    with pytest.raises(ShapeError, match=r"bucket 3 .*'embed_weight' has shape \(13, 6\)"):
        module.switch_bucket(3, [("data", (2, 3))], None)
    with pytest.raises(ShapeError, match=r"bucket 4 .*label has shape \(10,\)"):
        module.switch_bucket(4, [("data", (2, 4))], [("softmax_label", (2, 5))])
    assert sorted(module._buckets) == [8]


def test_checkpoint_round_trip(trained, tmp_path):
    module, _, score = trained
    prefix = str(tmp_path / "lm")
    module.save_checkpoint(prefix, 3)
    names = sorted(path.name for path in tmp_path.iterdir())
    assert names == ["lm-0003.params", "lm-4-symbol.json", "lm-8-symbol.json", "lm.buckets"]
    assert (tmp_path / "lm.buckets").read_bytes() == (DATA / "bucketing_lm.buckets").read_bytes()
    loaded = mx.mod.BucketingModule.load(prefix, 3, lm.sym_gen_factory(mx), default_bucket_key=8)
    assert sorted(loaded._buckets) == [4, 8]
    with lm.no_shuffle():
        data = lm.make_iter(mx)
        loaded.bind(data.provide_data, data.provide_label, for_training=False)
        again = loaded.score(data, mx.metric.Perplexity(0))[0][1]
    np.testing.assert_allclose(again, score, rtol=1e-6)
    want, _ = module.get_params()
    got, _ = loaded.get_params()
    for name, value in want.items():
        np.testing.assert_array_equal(got[name].asnumpy(), value.asnumpy(), err_msg=name)


def test_loads_mxnets_bucketing_checkpoint(reference):
    """The files MXNet 1.9.1's BucketingModule.save_checkpoint wrote, scored by mxnb."""
    loaded = mx.mod.BucketingModule.load(
        str(DATA / "bucketing_lm"), lm.EPOCHS, lm.sym_gen_factory(mx), default_bucket_key=8
    )
    arg_params, _ = loaded.get_params()
    for name in lm.initial_params():
        np.testing.assert_array_equal(arg_params[name].asnumpy(), reference[f"final:{name}"])
    with lm.no_shuffle():
        data = lm.make_iter(mx)
        loaded.bind(data.provide_data, data.provide_label, for_training=False)
        score = loaded.score(data, mx.metric.Perplexity(0))[0][1]
    np.testing.assert_allclose(score, reference["score_perplexity"], rtol=1e-5)


def test_save_checkpoint_refuses_keys_mxnet_cannot_store(tmp_path):
    sym_gen = lm.sym_gen_factory(mx)
    module = mx.mod.BucketingModule(lambda key: sym_gen(int(key)), default_bucket_key="8")
    with pytest.raises(MXNBError, match="empty BucketingModule"):
        module.save_checkpoint(str(tmp_path / "x"), 0)
    module.bind([("data", (2, 8))], [("softmax_label", (2, 8))])
    module.init_params()
    with pytest.raises(mx.base.FormatError, match="not all integers"):
        module.save_checkpoint(str(tmp_path / "x"), 0)


def test_a_batch_of_another_size_rebinds_a_bucket_on_the_same_parameters():
    """MXNet reshapes the bucket's executors; the parameters stay the default bucket's arrays."""
    module = mx.mod.BucketingModule(lm.sym_gen_factory(mx), default_bucket_key=8)
    module.bind([("data", (4, 8))], [("softmax_label", (4, 8))])
    module.init_params(mx.init.Xavier())
    module.init_optimizer(optimizer="sgd", optimizer_params={"learning_rate": 1.0})
    default = module._buckets[8]._exec_group.execs[0]
    for rows, key in ((4, 4), (3, 4), (2, 8)):
        tokens = (np.arange(rows * key).reshape(rows, key) % (lm.VOCAB - 1) + 1).astype(np.float32)
        batch = mx.io.DataBatch(
            [mx.nd.array(tokens)],
            [mx.nd.array(np.roll(tokens, -1, axis=1))],
            bucket_key=key,
            provide_data=[mx.io.DataDesc("data", (rows, key))],
            provide_label=[mx.io.DataDesc("softmax_label", (rows, key))],
        )
        before = default.arg_dict["pred_weight"].asnumpy()
        module.forward_backward(batch)
        module.update()
        assert module.get_outputs()[0].shape == (rows * key, lm.VOCAB)
        assert not np.allclose(default.arg_dict["pred_weight"].asnumpy(), before)
        current = module._curr_module._exec_group.execs[0]
        for name in lm.initial_params():
            assert current.arg_dict[name] is default.arg_dict[name], (rows, key, name)
    np.testing.assert_array_equal(
        module.get_params()[0]["pred_weight"].asnumpy(), default.arg_dict["pred_weight"].asnumpy()
    )


@pytest.mark.parametrize(
    "content",
    [
        {"keys": np.array([4, 8])},
        [np.array([4, 8]), np.array([1])],
        [np.ones((2, 2))],
        [np.array([4.5])],
    ],
    ids=["a dict", "two arrays", "a matrix", "fractions"],
)
def test_a_malformed_buckets_file_is_a_format_error(tmp_path, content):
    prefix = str(tmp_path / "lm")
    if isinstance(content, dict):
        mx.nd.save(f"{prefix}.buckets", {k: mx.nd.array(v) for k, v in content.items()})
    else:
        mx.nd.save(f"{prefix}.buckets", [mx.nd.array(v) for v in content])
    with pytest.raises(mx.base.FormatError, match="lm.buckets"):
        mx.mod.BucketingModule.load(prefix, 0, lm.sym_gen_factory(mx), default_bucket_key=8)
