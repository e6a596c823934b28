"""Hostile and careless files for every reader added since the first hardening pass (issue 20).

Specification: RecordIO (``.rec`` / ``.idx``), image lists (``.lst``), images,
CSV files, optimizer state files and Module checkpoints either load or raise
:class:`FormatError` naming the file and the field / line / record; none of
them hangs, unpickles, or allocates more than a small multiple of the file.
Careless arguments of the iterators (a float batch size or shape) are
errors, never truncated.
"""

from __future__ import annotations

import io
import json
import os
import struct
import zipfile

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from PIL import Image

import mxnb as mx
from mxnb.base import FormatError, MXNBError, ParamError, ShapeError
from mxnb.optimizer import state_file
from mxnb.recordio import MAGIC


def _rec_file(tmp_path, payloads=(b"x" * 20, b"y" * 7, b"z")):
    """A valid indexed record file of image records with scalar labels."""
    rec, idx = str(tmp_path / "r.rec"), str(tmp_path / "r.idx")
    writer = mx.recordio.MXIndexedRecordIO(idx, rec, "w")
    for key, payload in enumerate(payloads):
        writer.write_idx(
            key, mx.recordio.pack(mx.recordio.IRHeader(0, float(key), key, 0), payload)
        )
    writer.close()
    return rec, idx


# -- RecordIO -------------------------------------------------------------------------------------


def test_a_record_longer_than_the_file_is_refused_before_reading(tmp_path, traced_peak):
    path = tmp_path / "h.rec"
    path.write_bytes(struct.pack("<II", MAGIC, (1 << 29) - 1) + b"abc")
    reader = mx.recordio.MXRecordIO(str(path), "r")
    with pytest.raises(FormatError, match=r"h\.rec.*byte 0 declares 536870911 bytes.* only 3 follow"):
        traced_peak(reader.read)
    reader.reset()
    _, peak = traced_peak(lambda: _safe_read(reader))
    assert peak < 1 << 20  # the 512 MiB the header claims is never allocated


def _safe_read(reader):
    try:
        reader.read()
    except FormatError:
        pass


@pytest.mark.parametrize(
    ("flags", "found"),
    [((1, 0), "flag 0"), ((2,), "flag 2"), ((3,), "flag 3"), ((1, 1), "flag 1"), ((4,), "flag 4")],
)
def test_continuation_flags_out_of_order_are_format_errors(tmp_path, flags, found):
    path = tmp_path / "c.rec"
    path.write_bytes(
        b"".join(struct.pack("<II", MAGIC, flag << 29 | 4) + b"abcd" for flag in flags)
    )
    with pytest.raises(FormatError, match=f"c\\.rec.*continuation {found} out of order"):
        mx.recordio.MXRecordIO(str(path), "r").read()


@pytest.mark.parametrize(
    ("content", "line"),
    [(b"0\t0\n\xff\xfe\t4\n", "line 2"), (b"0\t0\t9\n", "line 1"), (b"x\t0\n", "line 1")],
)
def test_a_malformed_index_names_its_line(tmp_path, content, line):
    rec, idx = _rec_file(tmp_path)
    with open(idx, "wb") as f:
        f.write(content)
    with pytest.raises(FormatError, match=f"r\\.idx.* {line} is not 'key<TAB>offset'"):
        mx.recordio.MXIndexedRecordIO(idx, rec, "r")


@pytest.mark.parametrize("flag", [3, 2**32 - 1])
def test_a_label_count_past_the_record_is_a_format_error(flag):
    record = struct.pack("IfQQ", flag, 0, 0, 0) + b"ab"
    with pytest.raises(FormatError, match=f"says {flag} float32 labels .* holds 2 bytes"):
        mx.recordio.unpack(record)


def test_image_record_iter_names_the_record_with_a_bad_header(tmp_path):
    path = str(tmp_path / "i.rec")
    writer = mx.recordio.MXRecordIO(path, "w")
    writer.write(struct.pack("IfQQ", 50, 0, 0, 0) + b"xx")
    writer.close()
    it = mx.io.ImageRecordIter(path_imgrec=path, data_shape=(3, 4, 4), batch_size=1)
    try:
        with pytest.raises(
            FormatError, match=r"record 0 \(byte 0\) of .*i\.rec.*50 float32 labels"
        ):
            it.next()
    finally:
        it.close()


@settings(
    max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=st.data())
def test_fuzzed_record_files_read_or_raise_format_errors(tmp_path, data):
    """Random byte edits of a valid file: each record reads, or FormatError; never anything else."""
    rec, _ = _rec_file(tmp_path, payloads=(b"x" * 20, struct.pack("<I", MAGIC) * 3, b"z"))
    with open(rec, "rb") as f:
        content = bytearray(f.read())
    for _ in range(data.draw(st.integers(1, 4))):
        position = data.draw(st.integers(0, len(content) - 1))
        content[position] = data.draw(st.integers(0, 255))
    content = content[: data.draw(st.integers(0, len(content)))]
    fuzzed = tmp_path / "f.rec"
    fuzzed.write_bytes(bytes(content))
    total = 0
    try:
        with mx.recordio.MXRecordIO(str(fuzzed), "r") as reader:
            while (record := reader.read()) is not None:
                total += len(record)
                if len(record) >= 24:
                    mx.recordio.unpack(record)
    except FormatError:
        pass
    assert total <= len(content)


# -- image lists, images, CSV ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"0\t1\t\xff.jpg\n", "line 1 is not UTF-8"),
        (b"0\t1\ta.jpg\n1\tcat\tb.jpg\n", "line 2 is not 'index<TAB>label"),
        (b"x\t1\ta.jpg\n", "line 1 is not 'index<TAB>label"),
        (b"0\ta.jpg\n", "line 1 is not 'index<TAB>label"),
    ],
)
def test_malformed_image_lists_name_the_line_for_image_iter_and_im2rec(tmp_path, content, message):
    from mxnb.tools import im2rec

    path = tmp_path / "a.lst"
    path.write_bytes(content)
    with pytest.raises(FormatError, match=f"a\\.lst.*{message}"):
        mx.image.ImageIter(batch_size=1, data_shape=(3, 4, 4), path_imglist=str(path))
    with pytest.raises(FormatError, match=f"a\\.lst.*{message}"):
        list(im2rec.read_list(str(path)))


def test_a_listed_image_that_is_missing_is_a_format_error(tmp_path):
    path = tmp_path / "c.lst"
    path.write_text("0\t1\tnope.jpg\n")
    it = mx.image.ImageIter(
        batch_size=1, data_shape=(3, 4, 4), path_imglist=str(path), path_root=str(tmp_path)
    )
    with pytest.raises(FormatError, match="image 'nope.jpg' of the list cannot be read"):
        it.next()


def test_an_image_claiming_too_many_pixels_is_refused_before_decoding(monkeypatch, traced_peak):
    buffer = io.BytesIO()
    Image.new("1", (4000, 4000)).save(buffer, "PNG")  # 16 M pixels in a few KB
    monkeypatch.setattr(Image, "MAX_IMAGE_PIXELS", 10_000_000)  # Pillow itself refuses 2x
    with pytest.raises(
        FormatError, match=r"4000x4000 = 16000000 pixels, more than .*MAX_IMAGE_PIXELS"
    ):
        traced_peak(lambda: mx.image.imdecode(buffer.getvalue()))
    _, peak = traced_peak(lambda: _decode_or_none(buffer.getvalue()))
    assert peak < 4 << 20  # the 48 MB RGB decode never happens


def _decode_or_none(buf):
    try:
        return mx.image.imdecode(buf)
    except FormatError:
        return None


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"data_shape": (2.0,)}, ShapeError, "data_shape .* 2.0 is not an int"),
        ({"data_shape": (0,)}, ParamError, r"data_shape \(0,\) must have dimensions >= 1"),
        ({"data_shape": (-2,)}, ShapeError, "negative dimension"),
        ({"data_shape": None}, ShapeError, "data_shape None is not a shape"),
        (
            {"data_shape": (2,), "batch_size": 2.5},
            ParamError,
            "batch_size must be an int >= 1, got 2.5",
        ),
        ({"data_shape": (2,), "batch_size": 0}, ParamError, "batch_size must be >= 1, got 0"),
        ({"data_shape": (2,), "label_shape": (1.5,)}, ShapeError, "label_shape"),
    ],
)
def test_csv_iter_arguments_are_checked_not_truncated(tmp_path, kwargs, error, message):
    path = tmp_path / "b.csv"
    path.write_text("1,2\n3,4\n")
    with pytest.raises(error, match=message):
        mx.io.CSVIter(data_csv=str(path), **kwargs)


def test_a_csv_file_that_is_not_utf8_names_the_line(tmp_path):
    path = tmp_path / "a.csv"
    path.write_bytes(b"1,2\n1,\xff\n")
    with pytest.raises(FormatError, match=r"a\.csv' line 2 is not UTF-8"):
        mx.io.CSVIter(data_csv=str(path), data_shape=(2,))


@pytest.mark.parametrize("batch_size", [2.5, True, "4", 0])
def test_every_iterator_refuses_a_batch_size_that_is_not_a_positive_int(tmp_path, batch_size):
    rec, _ = _rec_file(tmp_path)
    makers = [
        lambda: mx.io.NDArrayIter(np.zeros((4, 2)), batch_size=batch_size),
        lambda: mx.io.ImageRecordIter(path_imgrec=rec, data_shape=(3, 4, 4), batch_size=batch_size),
        lambda: mx.image.ImageIter(batch_size=batch_size, data_shape=(3, 4, 4), path_imgrec=rec),
        lambda: mx.rnn.BucketSentenceIter([[1, 2]] * 4, batch_size=batch_size, buckets=[2]),
    ]
    for make in makers:
        with pytest.raises(ParamError, match="batch_size"):
            make()
    with pytest.raises(ShapeError, match="data_shape"):
        mx.io.ImageRecordIter(path_imgrec=rec, data_shape=(3, 4.5, 4), batch_size=1)
    with pytest.raises(ParamError, match="ResizeIter: size"):
        mx.io.ResizeIter(mx.io.NDArrayIter(np.zeros((4, 2)), batch_size=2), batch_size)


# -- optimizer state files --------------------------------------------------------------------------


def _npy(array):
    buffer = io.BytesIO()
    np.save(buffer, array)
    return buffer.getvalue()


def _layout_npy(layout):
    return _npy(np.frombuffer(json.dumps(layout).encode(), np.uint8))


_ONE_STATE = {"states": [[["int", 0], {"array": "a0", "ctx": "cpu(0)"}]], "optimizer": None}


def _zip(entries, compression=zipfile.ZIP_STORED):
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression) as archive:
        for name, payload in entries.items():
            archive.writestr(name, payload)
    return buffer.getvalue()


def _set_states(blob, source="x.states"):
    updater = mx.optimizer.get_updater(mx.optimizer.create("sgd", momentum=0.9))
    updater.set_states(blob, source=source)
    return updater.states


def test_a_deflated_states_archive_is_refused_before_inflating(traced_peak):
    """A 20 KB zip of 20 MB of zeros (was: loaded; at 200 MB a 195 KB file peaked at 400 MB)."""
    bomb = _zip(
        {
            "__layout__.npy": _layout_npy(_ONE_STATE),
            "a0.npy": _npy(np.zeros(5_000_000, np.float32)),
        },
        zipfile.ZIP_DEFLATED,
    )
    with pytest.raises(FormatError, match=r"'x.states'.*is compressed"):
        _set_states(bomb)
    _, peak = traced_peak(lambda: pytest.raises(FormatError, _set_states, bomb))
    assert peak < 64 * len(bomb)


def test_an_npy_header_claiming_more_than_its_entry_is_refused(traced_peak):
    fake = _npy(np.zeros(4, np.float32)).replace(b"(4,)", b"(10000000000,)")
    blob = _zip({"__layout__.npy": _layout_npy(_ONE_STATE), "a0.npy": fake})
    with pytest.raises(FormatError, match=r"a0.npy.*\(10000000000,\) of float32 does not take"):
        _set_states(blob)
    _, peak = traced_peak(lambda: pytest.raises(FormatError, _set_states, blob))
    assert peak < 1 << 20  # was: 37 GiB allocated


@pytest.mark.parametrize(
    ("layout", "field"),
    [
        ([1, 2], "'states'"),
        ({"states": [[["int", 0], {"array": "a9"}]]}, r"states\[0\]\[1\]"),
        ({"states": [[["int", 0], 5]]}, r"states\[0\]\[1\]"),
        ({"states": [[["int", "x"], None]]}, r"states\[0\]\[0\]"),
        (
            {"states": [[["int", 0], {"seq": [{"array": "a0"}, {"array": "a0"}], "tuple": False}]]},
            r"states\[0\]\[1\].seq\[1\].array: array 'a0' is used twice",
        ),
        ({"states": [[["int", 0], {"seq": [], "tuple": 1}]]}, r"states\[0\]\[1\].tuple"),
        ({"states": [], "optimizer": {"num_update": "x", "counts": []}}, "'optimizer'"),
        ({"states": [], "optimizer": {"num_update": 1, "counts": 5}}, "optimizer.counts"),
        (
            {"states": [], "optimizer": {"num_update": 1, "counts": [[["int", 0], -1]]}},
            r"optimizer.counts\[0\]",
        ),
    ],
)
def test_malformed_state_layouts_are_format_errors_naming_the_field(layout, field):
    blob = _zip({"__layout__.npy": _layout_npy(layout), "a0.npy": _npy(np.ones(3, np.float32))})
    with pytest.raises(FormatError, match=f"'x.states': field {field}"):
        _set_states(blob)


@pytest.mark.parametrize(
    ("entries", "message"),
    [
        ({"a0.npy": _npy(np.array([{"x": 1}], dtype=object))}, "holds Python objects"),
        ({"__layout__.npy": b"\x93NUMPY garbage"}, "no valid .npy header"),
        ({"a0.txt": b"abc"}, "is not a new '<name>.npy'"),
        ({"a0.npy": _npy(np.ones(2))}, "'__layout__' .* is missing"),
    ],
)
def test_malformed_state_archives_are_format_errors(entries, message):
    with pytest.raises(FormatError, match=message):
        _set_states(_zip(entries))


def test_a_pickled_states_file_is_never_unpickled(tmp_path, pickle_bomb):
    """MXNet's own .states files are pickles: refused, naming the file, without running them."""
    payload, marker = pickle_bomb
    path = tmp_path / "mxnet.states"
    path.write_bytes(payload)
    kv = mx.kv.create("local")
    kv.set_optimizer(mx.optimizer.create("sgd"))
    with pytest.raises(FormatError, match=r"mxnet\.states.*not an .npz archive"):
        kv.load_optimizer_states(str(path))
    assert not marker.exists()


def test_states_round_trip_and_saved_files_get_the_usual_mode(tmp_path):
    kv = mx.kv.create("local")
    kv.set_optimizer(mx.optimizer.create("sgd", momentum=0.9))
    kv.init(3, mx.nd.ones((2,)))
    kv.push(3, mx.nd.ones((2,)))
    path = tmp_path / "kv.states"
    kv.save_optimizer_states(str(path))
    mask = os.umask(0o022)
    os.umask(mask)
    assert os.stat(path).st_mode & 0o777 == 0o666 & ~mask  # was: 0600 (mkstemp's)
    assert sorted(os.listdir(tmp_path)) == ["kv.states"]
    kv.load_optimizer_states(str(path))
    layout, arrays = state_file.loads(path.read_bytes(), str(path))
    assert [pair[0] for pair in layout["states"]] == [["int", 3]] and len(arrays) == 1


# -- Module checkpoints -----------------------------------------------------------------------------


def _module():
    net = mx.sym.FullyConnected(mx.sym.Variable("data"), num_hidden=2, name="fc")
    module = mx.mod.Module(net, label_names=None)
    module.bind(data_shapes=[("data", (1, 3))])
    module.init_params()
    return module


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ({"foo": mx.nd.ones((2,))}, "array name 'foo' has neither the 'arg:' nor the 'aux:'"),
        ([mx.nd.ones((2,))], "holds named arrays, this file holds a list"),
    ],
)
def test_module_load_params_gives_format_errors_naming_the_file(tmp_path, content, message):
    path = str(tmp_path / "p.params")
    mx.nd.save(path, content)
    with pytest.raises(FormatError, match=f"p\\.params.*{message}"):
        _module().load_params(path)


def test_module_load_optimizer_states_names_the_file(tmp_path):
    module = _module()
    module.init_optimizer()
    path = tmp_path / "m-0001.states"
    path.write_bytes(b"\x80\x04garbage")
    with pytest.raises(FormatError, match=r"m-0001\.states"):
        module.load_optimizer_states(str(path))


def test_a_shape_no_buffer_can_hold_is_refused_at_once_and_not_counted():
    before = mx.storage.stats(mx.cpu()).bytes_in_use
    with pytest.raises(MXNBError, match="more than any buffer can hold"):
        mx.nd.zeros((10**20, 3))
    net = mx.sym.FullyConnected(mx.sym.Variable("data", shape=(10**20, 3)), num_hidden=2)
    with pytest.raises(MXNBError, match="more than any buffer can hold"):
        net.simple_bind(mx.cpu())
    assert mx.storage.stats(mx.cpu()).bytes_in_use == before  # was: inflated by 10**21 bytes


def test_a_loaded_state_of_the_wrong_form_is_refused_at_its_first_update():
    """States from another optimizer or other parameters (was: TypeError, or an op's ShapeError)."""
    saved = mx.optimizer.get_updater(mx.optimizer.create("sgd", momentum=0.9))
    saved(0, mx.nd.ones((5,)), mx.nd.ones((5,)))
    updater = mx.optimizer.get_updater(mx.optimizer.create("adam"))
    updater.set_states(saved.get_states(), source="sgd.states")
    with pytest.raises(FormatError, match=r"'sgd.states': key 0 .* Adam needs .* shape \(2, 3\)"):
        updater(0, mx.nd.ones((2, 3)), mx.nd.ones((2, 3)))
    same = mx.optimizer.get_updater(mx.optimizer.create("sgd", momentum=0.9))
    same.set_states(saved.get_states())
    weight = mx.nd.ones((5,))
    same(0, mx.nd.ones((5,)), weight)
    assert weight.asnumpy().shape == (5,)


# -- issue 37: indexes, dimensions, names ------------------------------------------------------------


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda lines: lines + [lines[0].split("\t")[0] + "\t" + lines[2].split("\t")[1]], "repeats key 0 of line 1"),
        (lambda lines: lines[:2] + ["2\t" + lines[1].split("\t")[1]], "like line 2: two keys for one record"),
    ],
    ids=["repeated key", "two keys at one offset"],
)
def test_an_inconsistent_index_is_refused(tmp_path, edit, message):
    """Before: a repeated key made ImageRecordIter read one record twice and never another."""
    rec, idx = _rec_file(tmp_path)
    index = tmp_path / "r.idx"
    index.write_text("\n".join(edit(index.read_text().splitlines())) + "\n")
    with pytest.raises(FormatError, match=message):
        mx.recordio.MXIndexedRecordIO(idx, rec, "r")
    with pytest.raises(FormatError, match=r"r\.idx"):
        mx.io.ImageRecordIter(path_imgrec=rec, path_imgidx=idx, data_shape=(3, 4, 4), batch_size=1)


def test_a_record_cut_inside_its_padding_says_so(tmp_path):
    path = tmp_path / "t.rec"
    path.write_bytes(struct.pack("<II", MAGIC, 5) + b"abcde")
    with pytest.raises(FormatError, match="declares 5 bytes, 8 with the padding to 4, but only 5 follow"):
        mx.recordio.MXRecordIO(str(path), "r").read()


def test_an_absurd_params_dimension_is_refused_before_allocating(tmp_path):
    """(0, 2**61): empty, yet numpy refuses it; before, its 'array is too big' escaped."""
    from mxnb.ndarray import mxnet_format

    path = tmp_path / "x.params"
    mxnet_format.save(str(path), {"arg:w": mx.nd.ones((2, 3))})
    data = path.read_bytes()
    path.write_bytes(data.replace(struct.pack("<2q", 2, 3), struct.pack("<2q", 0, 2**61)))
    with pytest.raises(FormatError, match=r"x\.params.*too big for any array"):
        mx.nd.load(str(path))


def test_a_symbol_node_without_a_name_is_refused():
    doc = json.loads(mx.sym.FullyConnected(mx.sym.Variable("data"), num_hidden=2).tojson())
    del doc["nodes"][0]["name"]
    with pytest.raises(FormatError, match=r"nodes\[0\]: a node needs a 'name'"):
        mx.sym.load_json(json.dumps(doc))
