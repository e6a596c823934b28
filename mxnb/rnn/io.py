"""Text for recurrent networks: sentences of tokens become sentences of integer ids.

Idea (MXNet: ``mx.rnn.encode_sentences`` in ``python/mxnet/rnn/io.py``): a
language model reads token ids, so a corpus (a list of sentences, each a
list of string tokens) is encoded once against a vocabulary that maps each
token to an id, growing the vocabulary while it reads unless one is given.

Rule: ids are handed out in order of first appearance from
``start_label``, skipping ``invalid_label`` (reserved for ``invalid_key``,
the end of sentence ``'\\n'`` by default).  With a given vocabulary an
unknown token is an error, unless ``unknown_token`` names the token that
stands for every unknown one.

Example::

    >>> from mxnb.rnn import encode_sentences
    >>> encode_sentences([['the', 'cat'], ['the', 'dog']], start_label=1)
    ([[1, 2], [1, 3]], {'\\n': -1, 'the': 1, 'cat': 2, 'dog': 3})
"""

from __future__ import annotations

from collections.abc import Sequence

from ..base import MXNBError

__all__ = ["encode_sentences"]


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
