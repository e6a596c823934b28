"""PrefetchingIter behaves exactly as the iterator it wraps (issue 37), across reset() and errors.

Specification: whatever the interleaving of ``next()`` and ``reset()``, a
``PrefetchingIter`` gives the batches (data and pad) and ends that its
iterator alone gives; the loads it makes ahead are invisible (a reset puts
the iterator back where the batches taken left it: 'roll_over' and
``round_batch`` depend on that).  A loader that raises anything, SystemExit
and KeyboardInterrupt included, fails exactly the batch that needed it, and a
``reset()`` makes the iterator usable again.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import mxnb as mx


def _take(it, count):
    out = []
    for _ in range(count):
        try:
            batch = it.next()
        except StopIteration:
            out.append("end")
            continue
        out.append((batch.data[0].asnumpy().tolist(), batch.pad))
    return out


def _same_as_plain(make, script):
    plain, prefetched = make(), mx.io.PrefetchingIter(make())
    for step, what in enumerate(script):
        if what == "reset":
            plain.reset()
            prefetched.reset()
        else:
            assert _take(prefetched, what) == _take(plain, what), f"at step {step} of {script}"


SCRIPTS = [[taken, "reset", 5, "reset", 2, "reset", 6] for taken in range(6)]


@pytest.mark.parametrize("mode", ["pad", "discard", "roll_over"])
@pytest.mark.parametrize("script", SCRIPTS, ids=lambda s: f"take{s[0]}")
def test_ndarray_iter_across_resets(mode, script):
    _same_as_plain(
        lambda: mx.io.NDArrayIter(np.arange(10), batch_size=4, last_batch_handle=mode), script
    )


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda s: f"take{s[0]}")
def test_csv_iter_with_round_batch_across_resets(tmp_path, script):
    path = tmp_path / "d.csv"
    path.write_text("".join(f"{i}\n" for i in range(7)))
    _same_as_plain(
        lambda: mx.io.CSVIter(data_csv=str(path), data_shape=(1,), batch_size=3, round_batch=True),
        script,
    )


@pytest.mark.parametrize("depth", [1, 2, 4])
def test_every_depth_and_asking_past_the_end(depth):
    def make():
        return mx.io.NDArrayIter(np.arange(10), batch_size=4, last_batch_handle="roll_over")

    plain = make()
    prefetched = mx.io.PrefetchingIter(make(), depth=depth)
    for what in itertools.chain([5, "reset", 1, "reset"], [7, "reset", 3]):
        if what == "reset":
            plain.reset()
            prefetched.reset()
        else:
            assert _take(prefetched, what) == _take(plain, what)


class _Flaky(mx.io.DataIter):
    """Batches [0, 1], [2, 3], ...; the second ``next()`` ever raises ``error``."""

    def __init__(self, error):
        super().__init__(2)
        self.inner = mx.io.NDArrayIter(np.arange(8), batch_size=2)
        self.error = error
        self.calls = 0

    @property
    def provide_data(self):
        return self.inner.provide_data

    @property
    def provide_label(self):
        return self.inner.provide_label

    def reset(self):
        self.inner.reset()

    def next(self):
        self.calls += 1
        if self.calls == 2:
            raise self.error
        return self.inner.next()


@pytest.mark.parametrize("error", [ValueError("bad record"), SystemExit(3), KeyboardInterrupt()])
def test_a_loader_error_fails_its_batch_and_reset_recovers(error):
    it = mx.io.PrefetchingIter(_Flaky(error))
    assert it.next().data[0].asnumpy().tolist() == [0.0, 1.0]
    with pytest.raises(type(error)):
        it.next()
    assert it.next().data[0].asnumpy().tolist() == [2.0, 3.0]  # the plain iterator's next batch
    it.reset()
    assert [b.data[0].asnumpy().tolist() for b in it] == [
        [0.0, 1.0],
        [2.0, 3.0],
        [4.0, 5.0],
        [6.0, 7.0],
    ]


def test_image_record_iter_reset_mid_epoch_starts_where_its_batches_left_it(tmp_path):
    """ImageRecordIter prefetches too: a reset after one batch must not keep the loads' carry."""
    rec, idx = str(tmp_path / "r.rec"), str(tmp_path / "r.idx")
    writer = mx.recordio.MXIndexedRecordIO(idx, rec, "w")
    for key in range(5):
        img = np.full((4, 4, 3), key * 40, np.uint8)
        writer.write_idx(
            key,
            mx.recordio.pack_img(mx.recordio.IRHeader(0, float(key), key, 0), img, img_fmt=".png"),
        )
    writer.close()

    def labels(it, count):
        return [it.next().label[0].asnumpy().tolist() for _ in range(count)]

    it = mx.io.ImageRecordIter(
        path_imgrec=rec, path_imgidx=idx, data_shape=(3, 4, 4), batch_size=2, round_batch=True
    )
    first = labels(it, 1)
    it.reset()  # after one batch: the prefetched rounded last batch must not carry over
    assert labels(it, 1) == first


def test_a_duck_typed_iterator_is_prefetched_too():
    """An iterator that is not a DataIter (no position to record) still loads and resets."""
    inner = mx.io.NDArrayIter(np.arange(6), batch_size=2)

    class Duck:
        provide_data = inner.provide_data
        provide_label = inner.provide_label

        def next(self):
            return inner.next()

        def reset(self):
            inner.reset()

    it = mx.io.PrefetchingIter(Duck())
    assert [b.data[0].asnumpy().tolist() for b in it] == [[0.0, 1.0], [2.0, 3.0], [4.0, 5.0]]
    it.reset()
    assert it.next().data[0].asnumpy().tolist() == [0.0, 1.0]


@pytest.mark.parametrize(
    ("num_parts", "part_index", "message"),
    [
        (2.5, 0, "num_parts must be an int"),
        (0, 0, r"num_parts must be in \[1, inf\)"),
        (2, 0.5, "part_index must be an int"),
        (2, 2, r"part_index must be in \[0, num_parts=2\)"),
    ],
)
def test_sharding_numbers_are_checked_by_both_image_iterators(
    tmp_path, num_parts, part_index, message
):
    """Before: a slice TypeError (2.5) and a ZeroDivisionError (0)."""
    rec, idx = str(tmp_path / "r.rec"), str(tmp_path / "r.idx")
    writer = mx.recordio.MXIndexedRecordIO(idx, rec, "w")
    writer.write_idx(0, mx.recordio.pack(mx.recordio.IRHeader(0, 0.0, 0, 0), b"x"))
    writer.close()
    with pytest.raises(mx.base.ParamError, match="ImageRecordIter: " + message):
        mx.io.ImageRecordIter(
            path_imgrec=rec,
            data_shape=(3, 4, 4),
            batch_size=1,
            num_parts=num_parts,
            part_index=part_index,
        )
    with pytest.raises(mx.base.ParamError, match="ImageIter: " + message):
        mx.image.ImageIter(
            batch_size=1,
            data_shape=(3, 4, 4),
            path_imgrec=rec,
            path_imgidx=idx,
            num_parts=num_parts,
            part_index=part_index,
        )
