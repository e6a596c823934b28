"""``mx.rnn.BucketSentenceIter``: MXNet 1.9.1's bucketing (its answers for these sentences)."""

from __future__ import annotations

import logging

import numpy as np
import pytest

import mxnb as mx

SENTENCES = [
    [1, 2, 3], [4, 5, 6], [7, 8], [9, 10], [11], [12, 13, 14, 15, 16], [17, 18, 19],
    [20, 21, 22, 23],
]  # fmt: skip


def rows_of(it, layout="NT"):
    rows = []
    for batch in it:
        data, label = batch.data[0].asnumpy(), batch.label[0].asnumpy()
        assert batch.provide_data[0].shape == data.shape
        if layout == "TN":
            data, label = data.T, label.T
        assert data.shape[1] == batch.bucket_key
        rows += [
            (batch.bucket_key, tuple(map(int, d)), tuple(map(int, lab)))
            for d, lab in zip(data, label)
        ]
    return sorted(rows)


def test_buckets_padding_labels_and_time_major_layout():
    it = mx.rnn.BucketSentenceIter(
        SENTENCES, batch_size=2, buckets=[3, 5], invalid_label=0, layout="TN"
    )
    assert it.buckets == [3, 5] and it.default_bucket_key == 5
    assert it.provide_data[0].shape == (5, 2) and it.provide_label[0].shape == (5, 2)
    expected = [
        (3, (1, 2, 3), (2, 3, 0)), (3, (4, 5, 6), (5, 6, 0)), (3, (7, 8, 0), (8, 0, 0)),
        (3, (9, 10, 0), (10, 0, 0)), (3, (11, 0, 0), (0, 0, 0)), (3, (17, 18, 19), (18, 19, 0)),
        (5, (12, 13, 14, 15, 16), (13, 14, 15, 16, 0)), (5, (20, 21, 22, 23, 0), (21, 22, 23, 0, 0)),
    ]  # fmt: skip
    assert rows_of(it, "TN") == expected
    it.reset()
    assert rows_of(it, "TN") == expected  # a new epoch, reshuffled, the same sentences


def test_default_buckets_are_lengths_with_a_full_batch_and_long_sentences_are_dropped(caplog):
    with caplog.at_level(logging.WARNING):
        it = mx.rnn.BucketSentenceIter(SENTENCES, batch_size=2, invalid_label=0)
    assert it.buckets == [2, 3] and it.discarded == 2
    assert "discarded 2 sentences" in caplog.text
    rows = rows_of(it)
    assert [key for key, _, _ in rows] == [2, 2, 3, 3]  # one batch per bucket; leftovers dropped
    for key, data, label in rows:
        assert label == data[1:] + (0,)


def test_batches_bind_a_bucketed_unroll():
    """Each batch's bucket_key is the length to unroll: the LSTM binds and runs it."""
    it = mx.rnn.BucketSentenceIter(SENTENCES, batch_size=2, buckets=[3, 5], invalid_label=0)
    cell = mx.rnn.LSTMCell(4, prefix="lstm_")
    for batch in it:
        embed = mx.sym.Embedding(mx.sym.Variable("data"), input_dim=30, output_dim=3, name="e")
        cell.reset()
        outputs, _ = cell.unroll(batch.bucket_key, embed, merge_outputs=True)
        exe = outputs.simple_bind(mx.cpu(), data=batch.data[0].shape, grad_req="null")
        exe.forward(data=batch.data[0])
        assert exe.outputs[0].shape == (2, batch.bucket_key, 4)
        assert np.isfinite(exe.outputs[0].asnumpy()).all()


def test_refuses_bad_layout_and_no_bucket():
    with pytest.raises(mx.MXNBError, match="layout"):
        mx.rnn.BucketSentenceIter(SENTENCES, batch_size=2, layout="NTC")
    with pytest.raises(mx.MXNBError, match="batch_size"):
        mx.rnn.BucketSentenceIter(SENTENCES, batch_size=50)
