"""NDArrayIter against MXNet 1.9.1's batches (vectors from tests/io/data/make_vectors.py)."""

import json
import sys
from pathlib import Path

import numpy as np
import pytest

import mxnb as mx
from mxnb.base import ParamError, ShapeError

DATA = Path(__file__).parent / "data"
VECTORS = json.loads((DATA / "ndarray_iter.json").read_text())
sys.path.insert(0, str(DATA))
from iter_inputs import ndarray_iter_inputs as _inputs


def _case_id(case):
    return f"{case['kind']}-n{case['n']}-b{case['batch_size']}-{case['mode']}" + (
        f"-shuffle{case['seed']}" if case["shuffle"] else ""
    )


def _descs(descs):
    return [[d.name, list(d.shape), np.dtype(d.dtype).name, d.layout] for d in descs]


@pytest.mark.parametrize("case", VECTORS["cases"], ids=_case_id)
def test_batches_pads_and_roll_over_match_mxnet(case):
    """Three epochs with reset between them: every batch's data, label and pad as MXNet's."""
    data, label = _inputs(case["kind"], case["n"])
    if case["seed"] is not None:
        np.random.seed(case["seed"])
    it = mx.io.NDArrayIter(
        data,
        label,
        batch_size=case["batch_size"],
        shuffle=case["shuffle"],
        last_batch_handle=case["mode"],
    )
    assert _descs(it.provide_data) == case["provide_data"]
    assert _descs(it.provide_label) == case["provide_label"]
    for epoch, expected in enumerate(case["epochs"]):
        if epoch:
            it.reset()
        got = list(it)
        assert len(got) == len(expected), f"epoch {epoch}"
        for batch, want in zip(got, expected):
            assert batch.pad == want["pad"]
            assert [d.asnumpy().tolist() for d in batch.data] == want["data"]
            assert [x.asnumpy().tolist() for x in batch.label] == want["label"]


def test_vectors_cover_every_mode_and_input_kind():
    cases = VECTORS["cases"]
    assert VECTORS["mxnet"] == "1.9.1"
    assert {c["mode"] for c in cases} == {"pad", "discard", "roll_over"}
    assert {c["kind"] for c in cases} == {"array", "list", "dict", "nolabel"}
    assert any(c["mode"] == "roll_over" and c["shuffle"] for c in cases)


def test_ndarray_input_keeps_dtype_and_context():
    x = mx.nd.array(np.arange(6).reshape(3, 2), dtype="int32")
    it = mx.io.NDArrayIter(x, batch_size=2, last_batch_handle="discard")
    (batch,) = list(it)
    assert batch.data[0].dtype == np.int32
    assert batch.data[0].context == x.context
    assert it.provide_data[0].dtype == np.int32
    assert it.provide_label == []


def test_iterator_protocol_and_batch_str():
    it = mx.io.NDArrayIter(np.zeros((4, 3)), np.zeros(4), batch_size=2)
    assert iter(it) is it
    batch = it.next()
    assert str(batch) == "DataBatch: data shapes: [(2, 3)] label shapes: [(2,)]"
    assert it.batch_size == 2


def test_bad_arguments_say_what_to_do():
    with pytest.raises(ParamError, match="last_batch_handle"):
        mx.io.NDArrayIter(np.zeros(4), batch_size=2, last_batch_handle="wrap")
    with pytest.raises(ShapeError, match="'softmax_label' has 3 rows"):
        mx.io.NDArrayIter(np.zeros(4), np.zeros(3), batch_size=2)
    with pytest.raises(ParamError, match="roll_over"):
        mx.io.NDArrayIter(np.zeros(3), batch_size=8, last_batch_handle="roll_over")
    with pytest.raises(TypeError, match="dict of name"):
        mx.io.NDArrayIter("text", batch_size=2)


def test_hard_reset_drops_rolled_over_rows():
    it = mx.io.NDArrayIter(np.arange(7), batch_size=3, last_batch_handle="roll_over")
    assert len(list(it)) == 2
    it.hard_reset()
    first = it.next()
    assert first.pad == 0
    assert first.data[0].asnumpy().tolist() == [0.0, 1.0, 2.0]
