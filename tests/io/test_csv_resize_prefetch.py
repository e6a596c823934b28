"""CSVIter against MXNet 1.9.1 (round_batch on and off), ResizeIter, PrefetchingIter on the engine."""

import json
import time
from pathlib import Path

import numpy as np
import pytest

import mxnb as mx
from mxnb.base import FormatError

DATA = Path(__file__).parent / "data"
CSV_VECTORS = json.loads((DATA / "csv_iter.json").read_text())


def _csv_id(case):
    a = case["args"]
    return f"{a['data_csv']}-b{a['batch_size']}-round{a['round_batch']}-label{'label_csv' in a}"


@pytest.mark.parametrize("case", CSV_VECTORS["cases"], ids=_csv_id)
def test_csv_iter_matches_mxnet(case):
    """Three epochs: MXNet's rows, pads, and where round_batch starts the next epoch."""
    args = dict(case["args"])
    args["data_csv"] = str(DATA / args["data_csv"])
    if "label_csv" in args:
        args["label_csv"] = str(DATA / args["label_csv"])
    it = mx.io.CSVIter(**args)
    assert [[d.name, list(d.shape)] for d in it.provide_data] == [
        x[:2] for x in case["provide_data"]
    ]
    assert [[d.name, list(d.shape)] for d in it.provide_label] == [
        x[:2] for x in case["provide_label"]
    ]
    for epoch, expected in enumerate(case["epochs"]):
        if epoch:
            it.reset()
        got = list(it)
        assert [b.pad for b in got] == [b["pad"] for b in expected], f"epoch {epoch}"
        for batch, want in zip(got, expected):
            assert [d.asnumpy().tolist() for d in batch.data] == want["data"]
            assert [x.asnumpy().tolist() for x in batch.label] == want["label"]


def test_csv_row_of_wrong_width_names_the_line(tmp_path):
    path = tmp_path / "bad.csv"
    path.write_text("1,2,3\n4,5,6\n7,8\n")
    with pytest.raises(FormatError, match=r"bad.csv' line 3 has 2 values .* needs 3"):
        mx.io.CSVIter(data_csv=str(path), data_shape=(3,), batch_size=2)


def test_resize_iter_wraps_and_cuts():
    inner = mx.io.NDArrayIter(np.arange(6), batch_size=2)
    it = mx.io.ResizeIter(inner, 5)
    firsts = [b.data[0].asnumpy()[0] for b in it]
    assert firsts == [0, 2, 4, 0, 2]
    it.reset()
    assert [b.data[0].asnumpy()[0] for b in it] == [0, 2, 4, 0, 2]
    keep = mx.io.ResizeIter(mx.io.NDArrayIter(np.arange(6), batch_size=2), 2, reset_internal=False)
    assert [b.data[0].asnumpy()[0] for b in keep] == [0, 2]
    keep.reset()
    assert [b.data[0].asnumpy()[0] for b in keep] == [4, 0]


@pytest.mark.timeout(60)
def test_prefetching_iter_joins_renames_and_resets():
    a = mx.io.NDArrayIter({"data": np.arange(8)}, np.arange(8), batch_size=4)
    b = mx.io.NDArrayIter({"data": np.arange(8) + 100}, batch_size=4)
    it = mx.io.PrefetchingIter([a, b], rename_data=[{"data": "d1"}, {"data": "d2"}])
    assert [d.name for d in it.provide_data] == ["d1", "d2"]
    assert it.batch_size == 4
    for _ in range(2):
        batches = list(it)
        assert [x.data[1].asnumpy().tolist() for x in batches] == [
            [100, 101, 102, 103],
            [104, 105, 106, 107],
        ]
        assert [x.label[0].asnumpy().tolist() for x in batches] == [[0, 1, 2, 3], [4, 5, 6, 7]]
        it.reset()


class _SlowIter(mx.io.DataIter):
    """Batches of one number; each takes ``delay`` seconds; batch ``fail_at`` raises."""

    def __init__(self, count, delay, fail_at=None):
        super().__init__(1)
        self.count, self.delay, self.fail_at = count, delay, fail_at
        self.k = 0
        self.provide_data = [mx.io.DataDesc("data", (1,))]
        self.provide_label = []

    def reset(self):
        self.k = 0

    def next(self):
        if self.k >= self.count:
            raise StopIteration
        self.k += 1
        time.sleep(self.delay)
        if self.k - 1 == self.fail_at:
            raise FormatError(f"record {self.k - 1} failed to decode")
        return mx.io.DataBatch([mx.nd.array([self.k - 1])], [], pad=0)


@pytest.mark.timeout(60)
def test_prefetch_loads_in_order_on_their_own_lane_and_overlap_compute():
    r"""
    load 0 -> load 1 -> load 2 ...     copy lane (serialised by the cursor var)
              train 0 -> train 1 ...   cpu lane; train k overlaps load k+1
    """
    eng = mx.engine.get()
    it = mx.io.PrefetchingIter(_SlowIter(5, delay=0.03))
    with mx.engine.trace() as tr:
        it.reset()
        seen = []
        for batch in it:
            seen.append(int(batch.data[0].asnumpy()[0]))
            v = eng.new_var(name="w")
            eng.push_sync(lambda rctx: time.sleep(0.03), mx.cpu(), mutate_vars=[v], name="train")
            eng.wait_for_var(v)
    assert seen == [0, 1, 2, 3, 4]
    ops = tr.ops().values()
    loads = sorted(
        (op for op in ops if op.name.startswith("PrefetchingIter load batch")),
        key=lambda op: int(op.name.rsplit(" ", 1)[1]),
    )
    trains = [op for op in ops if op.name == "train"]
    assert len(trains) == 5
    assert [op.start for op in loads] == sorted(op.start for op in loads)
    if eng.kind == "threaded_per_device":
        assert all(op.worker.startswith("copy") for op in loads)
        assert not any(op.worker.startswith("copy") for op in trains)
    if eng.kind != "naive":
        overlapping = [
            (load.name, train.name)
            for load in loads
            for train in trains
            if load.start < train.end and train.start < load.end
        ]
        assert overlapping, "no load ran while a training op ran"
    lanes = {lane.worker: lane for lane in mx.widgets.Timeline(tr).lanes()}
    load_lanes = {
        worker
        for worker, lane in lanes.items()
        if any(iv.name.startswith("PrefetchingIter load") for iv in lane.intervals)
    }
    train_lanes = {
        w for w, lane in lanes.items() if any(iv.name == "train" for iv in lane.intervals)
    }
    if eng.kind == "threaded_per_device":
        assert load_lanes and not load_lanes & train_lanes  # the timeline draws loading apart


@pytest.mark.timeout(60)
def test_failed_load_surfaces_at_its_batch_and_later_batches_still_come():
    it = mx.io.PrefetchingIter(_SlowIter(4, delay=0.0, fail_at=2))
    assert it.next().data[0].asnumpy().tolist() == [0]
    assert it.next().data[0].asnumpy().tolist() == [1]
    with pytest.raises(FormatError, match="record 2"):
        it.next()
    assert it.next().data[0].asnumpy().tolist() == [3]
    with pytest.raises(StopIteration):
        it.next()
