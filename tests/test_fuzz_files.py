"""Fuzzing the two file readers with random mutations of valid files.

Specification: whatever the bytes, ``mx.nd.load`` and ``mx.sym.load_json``
either load or raise :class:`FormatError`; nothing else escapes.  What
``mx.nd.load`` returns never outweighs the file it read, and the memory a load
takes (traced peak) stays within a small multiple of the file.  A symbol that loads
can be shape-inferred without a Python error of another kind.
"""

from __future__ import annotations

import copy
import json
import math
import struct
import zlib

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import mxnb as mx
from mxnb.base import FormatError, MXNBError
from mxnb.ndarray.fileformat import MAGIC

FUZZ = settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)

# any JSON value, small
json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=False)
    | st.text(max_size=8),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=6), children, max_size=4)
    ),
    max_leaves=8,
)


def _paths(value, prefix=()):
    """Every path (tuple of keys / indices) into a JSON document."""
    yield prefix
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _paths(item, (*prefix, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _paths(item, (*prefix, index))


def _replace(document, path, value):
    if not path:
        return value
    document = copy.deepcopy(document)
    target = document
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    return document


def _params_file(tmp_path_factory) -> tuple[dict, bytes]:
    path = tmp_path_factory.mktemp("fuzz") / "valid.mxnb"
    mx.nd.save(path, {"w": mx.nd.array(np.arange(6).reshape(2, 3)), "b": mx.nd.ones((3,))})
    content = path.read_bytes()
    (length,) = struct.unpack("<Q", content[8:16])
    return json.loads(content[16 : 16 + length]), content[16 + length :]


def _check_nd_load(path, content: bytes, traced_peak) -> None:
    path.write_bytes(content)
    try:
        loaded, peak = traced_peak(lambda: mx.nd.load(path))
    except FormatError:
        return
    # memory stays bounded: a small multiple of the file, plus a fixed allowance
    assert peak <= 64 * len(content) + (1 << 20)
    arrays = loaded.values() if isinstance(loaded, dict) else loaded
    assert sum(array.size * array.dtype.itemsize for array in arrays) <= len(content)


@FUZZ
@given(data=st.data())
def test_nd_load_of_mutated_headers_only_raises_format_error(tmp_path_factory, traced_peak, data):
    header, payload = _params_file(tmp_path_factory)
    path = data.draw(st.sampled_from(list(_paths(header))))
    mutated = _replace(header, path, data.draw(json_values))
    raw = json.dumps(mutated).encode()
    content = MAGIC + struct.pack("<Q", len(raw)) + raw + payload
    _check_nd_load(tmp_path_factory.mktemp("case") / "f.mxnb", content, traced_peak)


@FUZZ
@given(data=st.data())
def test_nd_load_of_mutated_bytes_only_raises_format_error(tmp_path_factory, traced_peak, data):
    header, payload = _params_file(tmp_path_factory)
    raw = json.dumps(header).encode()
    content = bytearray(MAGIC + struct.pack("<Q", len(raw)) + raw + payload)
    for _ in range(data.draw(st.integers(1, 4))):
        position = data.draw(st.integers(0, len(content) - 1))
        content[position] = data.draw(st.integers(0, 255))
    cut = data.draw(st.integers(0, len(content)))
    _check_nd_load(tmp_path_factory.mktemp("case") / "f.mxnb", bytes(content[:cut]), traced_peak)


@FUZZ
@given(
    shape=st.lists(st.integers(0, 2**70) | st.sampled_from([0, 1, 2]), max_size=70),
    dtype=st.sampled_from(["float32", "int8", "float64"]),
)
def test_nd_load_of_any_shape_with_a_consistent_nbytes_only_raises_format_error(
    tmp_path_factory, traced_peak, shape, dtype
):
    # nbytes agrees with the shape, so only the shape itself can be wrong (too many
    # dimensions, too big for numpy although empty, ...)
    nbytes = math.prod(shape) * np.dtype(dtype).itemsize
    payload = bytes(nbytes) if nbytes <= 4096 else b""
    entry = {"dtype": dtype, "shape": shape, "offset": 0, "nbytes": nbytes}
    entry["crc32"] = zlib.crc32(payload)
    raw = json.dumps({"format": "mxnb.ndarray", "version": 1, "names": None, "arrays": [entry]})
    content = MAGIC + struct.pack("<Q", len(raw)) + raw.encode() + payload
    _check_nd_load(tmp_path_factory.mktemp("case") / "f.mxnb", content, traced_peak)


def _symbol_document() -> dict:
    data = mx.sym.Variable("data")
    fc = mx.sym.FullyConnected(data, num_hidden=4, name="fc")
    act = mx.sym.Activation(fc, act_type="relu", name="relu")
    out = mx.sym.Concat(act, fc, dim=1, name="cat")
    return json.loads(out.tojson())


def _check_load_json(text) -> None:
    try:
        net = mx.sym.load_json(text)
    except FormatError:
        return
    try:  # a loaded graph's inference may reject shapes, but only with mxnb's own errors
        net.infer_shape_partial(data=(2, 3))
    except MXNBError:
        pass


@FUZZ
@given(data=st.data())
def test_load_json_of_mutated_documents_only_raises_format_error(data):
    document = _symbol_document()
    path = data.draw(st.sampled_from(list(_paths(document))))
    _check_load_json(json.dumps(_replace(document, path, data.draw(json_values))))


@FUZZ
@given(data=st.data())
def test_load_json_of_mutated_bytes_only_raises_format_error(data):
    content = bytearray(json.dumps(_symbol_document()).encode())
    for _ in range(data.draw(st.integers(1, 4))):
        position = data.draw(st.integers(0, len(content) - 1))
        content[position] = data.draw(st.integers(0, 255))
    _check_load_json(bytes(content))


def _states_file() -> tuple[dict, dict]:
    """The layout and arrays of a real optimizer state file (momentum per key, update counts)."""
    from mxnb.optimizer import state_file

    updater = mx.optimizer.get_updater(mx.optimizer.create("adam"))
    for key in (0, "w"):
        updater(key, mx.nd.ones((2, 3)), mx.nd.ones((2, 3)))
    return state_file.loads(updater.get_states(dump_optimizer=True))


def _check_set_states(blob: bytes, traced_peak) -> None:
    """Loading gives FormatError or states that the next updates use (or refuse, FormatError)."""
    updater = mx.optimizer.get_updater(mx.optimizer.create("adam"))
    try:
        _, peak = traced_peak(lambda: updater.set_states(blob, source="fuzz.states"))
    except FormatError:
        return
    assert peak <= 64 * len(blob) + (1 << 20)
    for key in (0, "w"):
        weight = mx.nd.ones((2, 3))
        try:
            updater(key, mx.nd.ones((2, 3)), weight)
        except FormatError:
            continue
        weight.wait_to_read()


@FUZZ
@given(data=st.data())
def test_set_states_of_mutated_layouts_only_raises_format_error(traced_peak, data):
    from mxnb.optimizer import state_file

    layout, arrays = _states_file()
    path = data.draw(st.sampled_from(list(_paths(layout))))
    mutated = _replace(layout, path, data.draw(json_values))
    _check_set_states(state_file.dumps(mutated, arrays), traced_peak)


@FUZZ
@given(data=st.data())
def test_set_states_of_mutated_bytes_only_raises_format_error(traced_peak, data):
    from mxnb.optimizer import state_file

    content = bytearray(state_file.dumps(*_states_file()))
    for _ in range(data.draw(st.integers(1, 4))):
        position = data.draw(st.integers(0, len(content) - 1))
        content[position] = data.draw(st.integers(0, 255))
    cut = data.draw(st.integers(0, len(content)))
    _check_set_states(bytes(content[:cut]), traced_peak)
