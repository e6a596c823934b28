"""The strict array module itself: it refuses what cupy refuses, admits what cupy admits."""

from __future__ import annotations

import numpy as np
import pytest

from mxnb.testing.cupy_strict import CupyStrict, CupyStrictError, cupy_api


@pytest.fixture
def xp():
    return CupyStrict()


def test_the_snapshot_names_its_cupy_and_holds_the_submodules_kernels_use():
    api = cupy_api()
    assert api["cupy_version"].split(".")[0].isdigit()
    assert {"", "linalg", "random", "lib.stride_tricks"} <= set(api["modules"])
    assert api["modules"][""]["add"]["kind"] == "ufunc"


def test_a_keyword_cupy_lacks_is_refused_before_numpy_runs(xp):
    with pytest.raises(CupyStrictError, match=r"as_strided.*'writeable'"):
        xp.lib.stride_tricks.as_strided(np.ones(4), shape=(2,), strides=(8,), writeable=False)
    view = xp.lib.stride_tricks.as_strided(np.arange(4.0), shape=(2,), strides=(16,))
    assert view.tolist() == [0.0, 2.0]


def test_a_name_cupy_lacks_is_refused_and_the_error_is_an_attribute_error(xp):
    missing = next(
        n for n in dir(np) if not n.startswith("_") and n not in cupy_api()["modules"][""]
    )
    with pytest.raises(AttributeError, match=rf"cupy\.{missing}: cupy .* has no such name"):
        getattr(xp, missing)
    assert not hasattr(xp, missing)


def test_ufuncs_take_cupys_keywords_only(xp):
    out = np.empty(3)
    assert xp.add(np.ones(3), 2, out=out) is out and out.tolist() == [3.0] * 3
    with pytest.raises(CupyStrictError, match=r"cupy\.add.*\['where'\].*ufuncs take"):
        xp.add(np.ones(3), 2, where=np.ones(3, bool))
    assert xp.add.reduce(np.ones(4), axis=0) == 4.0
    with pytest.raises(CupyStrictError, match="reduce"):
        xp.add.reduce(np.ones(4), axis=0, initial=1.0)


def test_a_function_takes_cupys_signature(xp):
    assert xp.sum(np.ones((2, 3)), axis=1, keepdims=True).shape == (2, 1)
    with pytest.raises(CupyStrictError, match=r"cupy\.sum.*'initial'"):
        xp.sum(np.ones(3), initial=1.0)
    with pytest.raises(CupyStrictError, match=r"cupy\.clip"):
        xp.clip(np.ones(3), 0, 1, casting="unsafe", where=None)


def test_values_and_classes_pass_through(xp):
    assert xp.float32 is np.float32 and xp.pi == np.pi and xp.ndarray is np.ndarray
    assert "over numpy" in repr(xp) and "linalg" in repr(xp.linalg)


def test_the_operator_ndarray_gluon_optimizer_and_rnn_suites_run_through_cupys_api():
    """Those suites, with every context's kernels through the strict module (about 40 s).

    The strict virtual GPU runs reach the ops the GPU tests use; this reaches
    every op those suites test, on their CPU inputs (a kernel asks its context
    for ``xp``), so a numpy-only call in any of them fails here.
    """
    import os
    import pathlib
    import subprocess
    import sys

    root = pathlib.Path(__file__).resolve().parents[2]
    env = dict(os.environ, MXNB_TEST_STRICT_CUPY="1", PYTHONPATH=str(root))
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider",
         "tests/operator", "tests/ndarray", "tests/gluon", "tests/test_autograd.py",
         "tests/optimizer", "tests/rnn", "tests/gpu/strict_probe.py"],
        cwd=root, env=env, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]
    assert " passed" in run.stdout and "strict_probe" not in run.stdout.split("passed")[-1]
