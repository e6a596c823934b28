"""``mx.rnn`` cells against MXNet 1.9.1: the same networks, arguments and head gradients.

The networks are written once in ``rnn_cases.py`` (for ``mxnet`` and for
``mxnb``); ``data/make_rnn_vectors.py`` ran them under MXNet 1.9.1 and
saved ``data/rnn_cells.npz``.  Each case here must give the same argument
names (so parameter files carry over), outputs and gradients.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import mxnb as mx

from .rnn_cases import CASES, run

REFERENCE = np.load(Path(__file__).resolve().parent / "data" / "rnn_cells.npz")


@pytest.mark.parametrize("name", sorted(CASES))
def test_cell_matches_mxnet(name):
    ours = run(mx, name)
    theirs = {
        key.split("/", 1)[1]: REFERENCE[key] for key in REFERENCE if key.startswith(f"{name}/")
    }
    assert sorted(ours) == sorted(theirs)
    assert list(ours.pop("arguments")) == list(theirs.pop("arguments"))
    for key, value in theirs.items():
        np.testing.assert_allclose(ours[key], value, rtol=1e-4, atol=1e-5, err_msg=f"{name} {key}")
