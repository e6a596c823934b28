"""Text for recurrent networks: token ids, and batches of sentences bucketed by length.

Idea (MXNet: ``python/mxnet/rnn/io.py``): a language model reads token ids,
so a corpus (a list of sentences, each a list of string tokens) is encoded
once against a vocabulary (:func:`encode_sentences`).  Sentences differ in
length; unrolling for the longest wastes work on the short ones, so
:class:`BucketSentenceIter` sorts them into *buckets* of a few lengths, pads
each sentence to its bucket's length with ``invalid_label`` and hands out
batches of one bucket at a time, with ``bucket_key`` = that length (a
BucketingModule binds one unrolled network per key).  The label at each
step is the next token.

Rule: ids are handed out in order of first appearance from
``start_label``, skipping ``invalid_label`` (reserved for ``invalid_key``,
the end of sentence ``'\\n'`` by default).  With a given vocabulary an
unknown token is an error, unless ``unknown_token`` names the token that
stands for every unknown one.  A sentence longer than the largest bucket is
dropped (and counted); a bucket's last partial batch is dropped, as MXNet does.

State kept by the iterator: ``data`` (one padded id matrix per non-empty
bucket), ``buckets`` (their lengths), ``idx`` (``(bucket, first row)`` of
every batch, shuffled by ``reset``), ``curr_idx`` (the next batch).

Example::

    >>> from mxnb.rnn import encode_sentences
    >>> encode_sentences([['the', 'cat'], ['the', 'dog']], start_label=1)
    ([[1, 2], [1, 3]], {'\\n': -1, 'the': 1, 'cat': 2, 'dog': 3})
"""

from __future__ import annotations

import bisect
import logging
import random
from collections.abc import Sequence

import numpy as np

from .. import ndarray as nd
from ..base import MXNBError, ParamError
from ..io import DataBatch, DataDesc, DataIter
from ..io.base import check_batch_size

__all__ = ["BucketSentenceIter", "encode_sentences"]


def encode_sentences(
    sentences: Sequence[Sequence[str]],
    vocab: dict[str, int] | None = None,
    invalid_label: int = -1,
    invalid_key: str = "\n",
    start_label: int = 0,
    unknown_token: str | None = None,
) -> tuple[list[list[int]], dict[str, int]]:
    """Encode ``sentences`` as lists of ids; return ``(encoded, vocab)``.

    Parameters
    ----------
    sentences : list of list of str
        The tokens of each sentence.
    vocab : dict, optional
        Token -> id to use; None builds one (holding ``invalid_key: invalid_label``).
    invalid_label, invalid_key
        The reserved id and its token.
    start_label : int
        The first id handed out.
    unknown_token : str, optional
        With a given ``vocab``: the token that replaces unknown ones (added
        to the vocabulary if missing).  Without it an unknown token raises.
    """
    building = vocab is None
    vocab = {invalid_key: invalid_label} if vocab is None else vocab
    next_id = start_label
    encoded = []
    for sentence in sentences:
        ids = []
        for token in sentence:
            if token not in vocab:
                if not building and not unknown_token:
                    raise MXNBError(
                        f"encode_sentences: token {token!r} is not in the vocabulary; pass "
                        f"unknown_token=... to map unknown tokens, or vocab=None to build one"
                    )
                if unknown_token and not building:
                    token = unknown_token
                if token not in vocab:
                    if next_id == invalid_label:
                        next_id += 1
                    vocab[token] = next_id
                    next_id += 1
            ids.append(vocab[token])
        encoded.append(ids)
    return encoded, vocab


class BucketSentenceIter(DataIter):
    """Batches of encoded sentences of one bucket length; the label is the next token.

    Parameters
    ----------
    sentences : list of list of int
        Encoded sentences (:func:`encode_sentences`).
    batch_size : int
        Sentences per batch.
    buckets : list of int, optional
        The bucket lengths; default: every length that at least ``batch_size``
        sentences have.
    invalid_label : int
        Padding id (and the label after the last token).
    data_name, label_name : str
        Names in ``provide_data`` / ``provide_label``.
    dtype : str
        Dtype of the arrays.
    layout : str
        ``'NT'`` (batch, time) or ``'TN'`` (time, batch).

    Example::

        >>> import mxnb as mx
        >>> sentences = [[1, 2, 3], [4, 5, 6], [7, 8], [9, 10]]
        >>> it = mx.rnn.BucketSentenceIter(sentences, batch_size=2, buckets=[2, 3])
        >>> sorted(batch.bucket_key for batch in it)
        [2, 3]
    """

    def __init__(
        self,
        sentences: Sequence[Sequence[int]],
        batch_size: int,
        buckets: Sequence[int] | None = None,
        invalid_label: int = -1,
        data_name: str = "data",
        label_name: str = "softmax_label",
        dtype: str = "float32",
        layout: str = "NT",
    ) -> None:
        super().__init__(check_batch_size(batch_size, "BucketSentenceIter"))
        if layout not in ("NT", "TN"):
            raise ParamError(f"BucketSentenceIter: layout must be 'NT' or 'TN', got {layout!r}")
        if not buckets:
            counts = np.bincount([len(sentence) for sentence in sentences])
            buckets = [length for length, count in enumerate(counts) if count >= batch_size]
        buckets = sorted(buckets)
        if not buckets:
            raise ParamError(
                f"BucketSentenceIter: no sentence length occurs {batch_size} times; pass "
                f"buckets=[...] or a smaller batch_size"
            )
        rows: list[list[np.ndarray]] = [[] for _ in buckets]
        self.discarded = 0
        for sentence in sentences:
            bucket = bisect.bisect_left(buckets, len(sentence))
            if bucket == len(buckets):
                self.discarded += 1
                continue
            row = np.full((buckets[bucket],), invalid_label, dtype=dtype)
            row[: len(sentence)] = sentence
            rows[bucket].append(row)
        if self.discarded:
            logging.getLogger(__name__).warning(
                "discarded %d sentences longer than the largest bucket", self.discarded
            )
        kept = [index for index, bucket_rows in enumerate(rows) if bucket_rows]
        self.buckets = [buckets[index] for index in kept]
        self.data = [np.asarray(rows[index], dtype=dtype) for index in kept]
        self.data_name = data_name
        self.label_name = label_name
        self.dtype = dtype
        self.invalid_label = invalid_label
        self.layout = layout
        self.major_axis = layout.find("N")
        self.default_bucket_key = max(self.buckets)
        self.provide_data = [
            DataDesc(data_name, self._shape(self.default_bucket_key), layout=layout)
        ]
        self.provide_label = [
            DataDesc(label_name, self._shape(self.default_bucket_key), layout=layout)
        ]
        self.idx = [
            (bucket, start)
            for bucket, matrix in enumerate(self.data)
            for start in range(0, len(matrix) - batch_size + 1, batch_size)
        ]
        self.curr_idx = 0
        self.reset()

    def _shape(self, length: int) -> tuple[int, int]:
        return (self.batch_size, length) if self.major_axis == 0 else (length, self.batch_size)

    def reset(self) -> None:
        """Start an epoch: shuffle the batch order and the sentences within each bucket."""
        self.curr_idx = 0
        random.shuffle(self.idx)
        for matrix in self.data:
            np.random.shuffle(matrix)
        self.labels = []
        for matrix in self.data:
            label = np.empty_like(matrix)
            label[:, :-1] = matrix[:, 1:]
            label[:, -1] = self.invalid_label
            self.labels.append(label)

    def next(self) -> DataBatch:
        """The next batch (``bucket_key``: its length), or StopIteration."""
        if self.curr_idx == len(self.idx):
            raise StopIteration
        bucket, start = self.idx[self.curr_idx]
        self.curr_idx += 1
        data = self.data[bucket][start : start + self.batch_size]
        label = self.labels[bucket][start : start + self.batch_size]
        if self.major_axis == 1:
            data, label = data.T, label.T
        return DataBatch(
            [nd.array(data, dtype=self.dtype)],
            [nd.array(label, dtype=self.dtype)],
            pad=0,
            bucket_key=self.buckets[bucket],
            provide_data=[DataDesc(self.data_name, data.shape, layout=self.layout)],
            provide_label=[DataDesc(self.label_name, label.shape, layout=self.layout)],
        )
