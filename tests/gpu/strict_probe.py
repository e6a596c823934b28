"""Collected only when named (``tests/gpu/test_cupy_strict.py`` runs it beside the operator suite
under ``MXNB_TEST_STRICT_CUPY=1``): proof that the run really went through the strict module."""

from __future__ import annotations

import numpy as np
import pytest

import mxnb as mx
from mxnb.testing.cupy_strict import CupyStrict, CupyStrictError


def test_every_context_is_strict_and_a_numpy_only_call_is_refused():
    xp = mx.cpu().array_module
    assert isinstance(xp, CupyStrict)
    with pytest.raises(CupyStrictError, match="writeable"):
        xp.lib.stride_tricks.as_strided(np.ones(4), shape=(2,), strides=(8,), writeable=False)
