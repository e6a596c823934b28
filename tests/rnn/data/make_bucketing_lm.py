"""Train a tiny bucketed LSTM language model with MXNet 1.9.1's BucketingModule (run by hand).

    MXNET_SUBGRAPH_BACKEND=NONE MXNET_MKLDNN_ENABLED=0 \
        /work/mxnet-venv/bin/python tests/rnn/data/make_bucketing_lm.py

A synthetic corpus (:func:`corpus`: sentences of 2 to 8 token ids from a
vocabulary of 12, id 0 is padding), ``BucketSentenceIter`` with buckets
``[4, 8]``, batch 4, and NO shuffling (``random.shuffle`` and
``np.random.shuffle`` replaced by no-ops while the iterator resets), the
network of MXNet's bucketing example (:func:`sym_gen`: Embedding, one
``LSTMCell``, FullyConnected, SoftmaxOutput), fixed initial parameters
(:func:`initial_params`), SGD with momentum for 3 epochs.

Writes ``bucketing_lm.npz``: ``init:NAME`` (the initial parameters),
``final:NAME`` (after ``fit``), ``train_perplexity`` (one per epoch) and
``score_perplexity`` (``score`` after training).  The tests run the same
with mxnb (this module's functions take ``mx`` so both sides share them).
Also writes MXNet's bucketing checkpoint of the trained module
(``save_checkpoint('bucketing_lm', 3)``: ``bucketing_lm-0003.params``,
``bucketing_lm-4-symbol.json``, ``bucketing_lm-8-symbol.json``,
``bucketing_lm.buckets``), which the tests load with mxnb.
"""

import random
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
VOCAB, EMBED, HIDDEN, BATCH, BUCKETS, EPOCHS = 12, 6, 8, 4, [4, 8], 3
OPTIMIZER_PARAMS = {"learning_rate": 0.5, "momentum": 0.9, "wd": 0.0}


def corpus():
    """40 sentences: runs of an arithmetic pattern (learnable), lengths 2 to 8."""
    rng = np.random.RandomState(7)
    sentences = []
    for _ in range(40):
        length = int(rng.randint(2, 9))
        start, step = int(rng.randint(1, VOCAB)), int(rng.randint(1, 3))
        sentences.append([1 + (start + step * k) % (VOCAB - 1) for k in range(length)])
    return sentences


def sym_gen_factory(mx):
    """MXNet's bucketing example: ``sym_gen(seq_len) -> (symbol, data_names, label_names)``."""
    cell = mx.rnn.LSTMCell(HIDDEN, prefix="lstm_")

    def sym_gen(seq_len):
        data = mx.sym.Variable("data")
        label = mx.sym.Variable("softmax_label")
        embed = mx.sym.Embedding(data=data, input_dim=VOCAB, output_dim=EMBED, name="embed")
        cell.reset()
        outputs, _ = cell.unroll(seq_len, inputs=embed, merge_outputs=True)
        pred = mx.sym.Reshape(outputs, shape=(-1, HIDDEN))
        pred = mx.sym.FullyConnected(data=pred, num_hidden=VOCAB, name="pred")
        label = mx.sym.Reshape(label, shape=(-1,))
        pred = mx.sym.SoftmaxOutput(data=pred, label=label, name="softmax")
        return pred, ("data",), ("softmax_label",)

    return sym_gen


def initial_params():
    """Fixed initial parameters, by name."""
    rng = np.random.RandomState(3)
    shapes = {
        "embed_weight": (VOCAB, EMBED),
        "lstm_i2h_weight": (4 * HIDDEN, EMBED),
        "lstm_i2h_bias": (4 * HIDDEN,),
        "lstm_h2h_weight": (4 * HIDDEN, HIDDEN),
        "lstm_h2h_bias": (4 * HIDDEN,),
        "pred_weight": (VOCAB, HIDDEN),
        "pred_bias": (VOCAB,),
    }
    return {name: rng.uniform(-0.3, 0.3, shape).astype(np.float32) for name, shape in shapes.items()}


def make_iter(mx):
    """The BucketSentenceIter over :func:`corpus` (call under :func:`no_shuffle`)."""
    return mx.rnn.BucketSentenceIter(corpus(), BATCH, buckets=BUCKETS, invalid_label=0)


class no_shuffle:
    """Replace ``random.shuffle`` and ``np.random.shuffle`` by no-ops inside the block."""

    def __enter__(self):
        self._saved = random.shuffle, np.random.shuffle
        random.shuffle = np.random.shuffle = lambda seq: None
        return self

    def __exit__(self, *exc):
        random.shuffle, np.random.shuffle = self._saved
        return False


def train(mx):
    """Fit the BucketingModule; return ``(module, train perplexities, score perplexity)``."""
    with no_shuffle():
        data = make_iter(mx)
        module = mx.mod.BucketingModule(
            sym_gen_factory(mx), default_bucket_key=data.default_bucket_key, context=mx.cpu()
        )
        perplexities = []

        def record(epoch, symbol, arg_params, aux_params):
            perplexities.append(metric.get_global()[1])

        metric = mx.metric.Perplexity(0)
        init = {name: mx.nd.array(value) for name, value in initial_params().items()}
        module.fit(
            data,
            eval_metric=metric,
            optimizer="sgd",
            optimizer_params=OPTIMIZER_PARAMS,
            arg_params=init,
            num_epoch=EPOCHS,
            epoch_end_callback=record,
        )
        score = module.score(data, mx.metric.Perplexity(0))[0][1]
    return module, perplexities, score


def main():
    import mxnet as mx

    module, perplexities, score = train(mx)
    arg_params, _ = module.get_params()
    out = {f"init:{name}": value for name, value in initial_params().items()}
    out.update({f"final:{name}": value.asnumpy() for name, value in arg_params.items()})
    out["train_perplexity"] = np.array(perplexities)
    out["score_perplexity"] = np.array(score)
    np.savez(HERE / "bucketing_lm.npz", **out)
    module.save_checkpoint(str(HERE / "bucketing_lm"), EPOCHS)
    print(perplexities, score)


if __name__ == "__main__":
    main()
