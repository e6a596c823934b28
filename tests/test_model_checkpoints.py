"""Checkpoints in MXNet's files: MXNet-written files load; ours load back; bad files are FormatErrors."""

import json
import os
import struct

import numpy as np
import pytest

import mxnb as mx
from mxnb.base import FormatError

FILES = os.path.join(os.path.dirname(__file__), "data", "mxnet_files")


def test_load_checkpoint_written_by_mxnet():
    """MXNet 1.9.1's save_checkpoint output gives its symbol and exact parameter values."""
    sym, args, auxs = mx.model.load_checkpoint(os.path.join(FILES, "mlp"), 2)
    with open(os.path.join(FILES, "mlp-expected.json")) as handle:
        expected = json.load(handle)
    assert sym.list_arguments() == [
        "data",
        "fc1_weight",
        "fc1_bias",
        "bn1_gamma",
        "bn1_beta",
        "fc2_weight",
        "fc2_bias",
        "softmax_label",
    ]
    assert sorted(auxs) == ["bn1_moving_mean", "bn1_moving_var"]
    for name, value in expected["arg"].items():
        np.testing.assert_array_equal(args[name].asnumpy(), np.array(value, dtype="float32"))
    for name, value in expected["aux"].items():
        np.testing.assert_array_equal(auxs[name].asnumpy(), np.array(value, dtype="float32"))


def test_nd_load_reads_mxnet_list_with_dtypes():
    arrays = mx.nd.load(os.path.join(FILES, "list.params"))
    assert [a.dtype.name for a in arrays] == ["float64", "int32", "float16", "uint8"]
    assert arrays[0].asnumpy().tolist() == [1.5, -2.0]
    assert arrays[1].asnumpy().tolist() == [[1, 2]]
    assert arrays[3].shape == (1, 1, 1)


def test_round_trip_is_byte_identical(tmp_path):
    """Our writer produces exactly the bytes MXNet wrote for the same arrays and names."""
    source = os.path.join(FILES, "mlp-0002.params")
    loaded = mx.nd.load(source)
    target = str(tmp_path / "copy.params")
    mx.ndarray.mxnet_format.save(target, loaded)
    with open(source, "rb") as a, open(target, "rb") as b:
        assert a.read() == b.read()


def test_save_checkpoint_then_load(tmp_path):
    prefix = str(tmp_path / "net")
    net = mx.sym.FullyConnected(mx.sym.Variable("data"), num_hidden=2, name="fc")
    args = {"fc_weight": mx.nd.array(np.arange(8).reshape(2, 4)), "fc_bias": mx.nd.array([1, 2])}
    mx.model.save_checkpoint(prefix, 7, net, args, {"m": mx.nd.ones(1)})
    assert os.path.exists(prefix + "-symbol.json") and os.path.exists(prefix + "-0007.params")
    sym, loaded_args, loaded_aux = mx.model.load_checkpoint(prefix, 7)
    assert sym.tojson() == net.tojson()
    np.testing.assert_array_equal(loaded_args["fc_weight"].asnumpy(), args["fc_weight"].asnumpy())
    assert loaded_aux["m"].asnumpy().tolist() == [1.0]


def _mxnet_bytes(shape=(2,), count=1, flag=0, data=b"\x00" * 8, names=0):
    body = struct.pack("<QQQ", 0x112, 0, count)
    body += struct.pack("<IiI", 0xF993FAC9, 0, len(shape)) + struct.pack(f"<{len(shape)}q", *shape)
    body += struct.pack("<iii", 1, 0, flag) + data + struct.pack("<Q", names)
    return body


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (_mxnet_bytes(shape=(1 << 40, 1 << 20)), "larger than the rest of the file"),
        (_mxnet_bytes(count=1 << 60), "more than its size can hold"),
        (_mxnet_bytes(flag=99), "type flag 99"),
        (_mxnet_bytes(data=b"\x00" * 4), "only 4 remain"),
        (_mxnet_bytes(names=5), "1 arrays but 5 names"),
        (_mxnet_bytes(shape=(-1,)), "negative dimension"),
        (_mxnet_bytes()[:30], "more than its size can hold"),
        (_mxnet_bytes()[:50], "remain"),
        (_mxnet_bytes() + b"junk", "unexpected bytes"),
    ],
    ids=[
        "huge-shape",
        "huge-count",
        "dtype",
        "short-data",
        "names",
        "negative",
        "truncated",
        "truncated-shape",
        "trailing",
    ],
)
def test_bad_mxnet_files_are_format_errors_naming_the_file(tmp_path, content, message):
    """Every count and size is checked against the file before allocation."""
    path = tmp_path / "bad.params"
    path.write_bytes(content)
    with pytest.raises(FormatError, match=message) as info:
        mx.nd.load(str(path))
    assert "bad.params" in str(info.value)


def test_checkpoint_name_without_prefix_is_refused(tmp_path):
    mx.ndarray.mxnet_format.save(str(tmp_path / "x-0000.params"), {"weird": mx.nd.ones(1)})
    with pytest.raises(FormatError, match="'weird'.*arg:"):
        mx.model.load_params(str(tmp_path / "x"), 0)
