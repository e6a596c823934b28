"""The hostile cases: each one a careless or hostile use, and the behaviour it must get.

Each case is a function registered with :func:`case`; it returns when mxnb
behaves (a clear error, or the right result) and raises ``AssertionError``
saying what went wrong otherwise.  ``run.py`` runs every case in its own
process.  The classes (``kind``) are issue 37's: names, numbers, keys,
atomic, index, images, iterators, traces, launcher, dist, and the cases where
MXNet 1.9.1 itself is no better (``mxnet-same``).
"""

from __future__ import annotations

import json
import math
import os
import signal
import struct
import subprocess
import sys
import tempfile
import warnings
import zlib
from collections.abc import Callable
from dataclasses import dataclass

CASES: dict[str, Case] = {}


@dataclass
class Case:
    name: str
    kind: str
    function: Callable[[], None]
    bomb: bool = False  # run under an address-space limit
    slow: bool = False  # needs Ray: not in make test's fast run
    timeout: float = 60.0


def case(kind: str, bomb: bool = False, slow: bool = False, timeout: float = 60.0):
    """Register the decorated function as a case of class ``kind``."""

    def register(function: Callable[[], None]) -> Callable[[], None]:
        CASES[function.__name__] = Case(function.__name__, kind, function, bomb, slow, timeout)
        return function

    return register


def raises(call: Callable[[], object], *types: type, match: str = "") -> BaseException:
    """Run ``call``; assert it raises one of ``types`` (mxnb's errors) whose message holds ``match``."""
    try:
        result = call()
    except types as exc:
        assert match.lower() in str(exc).lower(), f"{type(exc).__name__} without {match!r}: {exc}"
        return exc
    raise AssertionError(f"no error; returned {result!r}")


def tmpdir() -> str:
    return tempfile.mkdtemp(prefix="mxnb-hostile-")


def mxnb_errors() -> tuple[type, ...]:
    from mxnb.base import MXNBError

    return (MXNBError,)


# -- a small net and data -----------------------------------------------------------------------


def _net(label: str = "softmax_label"):
    import mxnb as mx

    data = mx.sym.Variable("data")
    fc = mx.sym.FullyConnected(data, num_hidden=3, name="fc")
    return mx.sym.SoftmaxOutput(fc, mx.sym.Variable(label), name="softmax")


def _data():
    import numpy as np

    rng = np.random.RandomState(0)
    x = rng.rand(12, 4).astype("float32")
    y = (x.sum(axis=1) > 2).astype("float32") + 1  # classes 1 and 2, never 0
    return x, y


# -- names checked against the symbol -----------------------------------------------------------


@case("names")
def label_name_not_in_the_module():
    """An iterator whose label is 'lbl' trains a module expecting 'softmax_label'."""
    import mxnb as mx

    x, y = _data()
    it = mx.io.NDArrayIter(x, y, batch_size=4, label_name="lbl")
    mod = mx.mod.Module(_net(), context=mx.cpu())
    raises(lambda: mod.fit(it, num_epoch=1), *mxnb_errors(), match="lbl")


@case("names")
def bind_label_shapes_naming_an_unknown_input():
    import mxnb as mx

    mod = mx.mod.Module(_net(), context=mx.cpu())
    raises(lambda: mod.bind([("data", (4, 4))], [("lbl", (4,))]), *mxnb_errors(), match="lbl")


@case("names")
def training_bind_without_the_label():
    """for_training with no label: the loss would train on a zero label."""
    import mxnb as mx

    mod = mx.mod.Module(_net(), context=mx.cpu())
    raises(
        lambda: mod.bind([("data", (4, 4))], [], for_training=True), *mxnb_errors(), match="label"
    )


@case("names")
def module_load_of_a_checkpoint_missing_a_weight():
    import mxnb as mx

    folder = tmpdir()
    prefix = os.path.join(folder, "m")
    x, y = _data()
    it = mx.io.NDArrayIter(x, y, batch_size=4)
    mod = mx.mod.Module(_net(), context=mx.cpu())
    mod.fit(it, num_epoch=1)
    mod.save_checkpoint(prefix, 1)
    params = mx.nd.load(prefix + "-0001.params")
    del params["arg:fc_weight"]
    mx.nd.save(prefix + "-0001.params", params)
    loaded = mx.mod.Module.load(prefix, 1, context=mx.cpu())

    def bind_and_predict():
        loaded.bind(it.provide_data, it.provide_label, for_training=False)
        return loaded.predict(it)

    raises(bind_and_predict, *mxnb_errors(), match="fc_weight")


@case("mxnet-same")
def set_params_with_an_extra_key():
    """MXNet 1.9.1 accepts the extra key silently; mxnb refuses it (allow_extra=False)."""
    import mxnb as mx

    mod = mx.mod.Module(_net(), context=mx.cpu())
    mod.bind([("data", (4, 4))], [("softmax_label", (4,))])
    mod.init_params()
    args, auxs = mod.get_params()
    extra = dict(args, fc2_weight=mx.nd.ones((2, 2)))
    raises(
        lambda: mod.set_params(extra, auxs, allow_extra=False), *mxnb_errors(), match="fc2_weight"
    )


@case("mxnet-same")
def fit_over_an_empty_iterator():
    """MXNet 1.9.1 lets a bare StopIteration escape fit; mxnb names the problem."""
    import mxnb as mx

    x, y = _data()
    it = mx.io.NDArrayIter(x, y, batch_size=4)
    for _ in it:
        pass  # used up, never reset
    mod = mx.mod.Module(_net(), context=mx.cpu())
    raises(lambda: mod.fit(it, num_epoch=1), *mxnb_errors(), match="no batch")


# -- numbers validated once ---------------------------------------------------------------------


def _optimizer_refuses(name: str, **kwargs) -> None:
    import mxnb as mx

    key = next(iter(kwargs))
    raises(lambda: mx.optimizer.create(name, **kwargs), *mxnb_errors(), match=key)


@case("numbers")
def sgd_learning_rate_nan():
    _optimizer_refuses("sgd", learning_rate=float("nan"))


@case("numbers")
def sgd_learning_rate_inf():
    _optimizer_refuses("sgd", learning_rate=float("inf"))


@case("numbers")
def sgd_wd_nan():
    _optimizer_refuses("sgd", wd=float("nan"))


@case("numbers")
def sgd_rescale_grad_inf():
    _optimizer_refuses("sgd", rescale_grad=float("inf"))


@case("numbers")
def sgd_clip_gradient_nan():
    _optimizer_refuses("sgd", clip_gradient=float("nan"))


@case("numbers")
def sgd_momentum_nan():
    _optimizer_refuses("sgd", momentum=float("nan"))


@case("numbers")
def adam_epsilon_nan():
    _optimizer_refuses("adam", epsilon=float("nan"))


@case("mxnet-same")
def adam_beta1_one():
    """MXNet 1.9.1: ZeroDivisionError at the first update; mxnb refuses beta1 = 1 at once."""
    _optimizer_refuses("adam", beta1=1.0)


@case("numbers")
def adam_beta2_above_one():
    _optimizer_refuses("adam", beta2=1.5)


@case("numbers")
def set_learning_rate_nan():
    import mxnb as mx

    opt = mx.optimizer.create("sgd")
    raises(lambda: opt.set_learning_rate(float("nan")), *mxnb_errors(), match="learning_rate")


@case("numbers")
def fit_with_a_nan_learning_rate():
    import mxnb as mx

    x, y = _data()
    it = mx.io.NDArrayIter(x, y, batch_size=4)
    mod = mx.mod.Module(_net(), context=mx.cpu())
    raises(
        lambda: mod.fit(it, num_epoch=1, optimizer_params={"learning_rate": float("nan")}),
        *mxnb_errors(),
        match="learning_rate",
    )


@case("numbers")
def init_normal_nan():
    import mxnb as mx

    raises(lambda: mx.init.Normal(float("nan")), *mxnb_errors(), match="sigma")


@case("numbers")
def init_uniform_inf():
    import mxnb as mx

    raises(lambda: mx.init.Uniform(float("inf")), *mxnb_errors(), match="scale")


@case("numbers")
def init_xavier_magnitude_nan():
    import mxnb as mx

    raises(lambda: mx.init.Xavier(magnitude=float("nan")), *mxnb_errors(), match="magnitude")


@case("numbers")
def init_constant_nan():
    import mxnb as mx

    raises(lambda: mx.init.Constant(float("nan")), *mxnb_errors(), match="value")


def _plan(recompute):
    import mxnb as mx
    from mxnb.executor import zoo

    return mx.executor.plan_memory(zoo.mlp(), {"data": (8, 784)}, recompute=recompute)


@case("numbers")
def recompute_inf():
    raises(lambda: _plan(float("inf")), *mxnb_errors(), match="recompute")


@case("numbers")
def recompute_nan():
    raises(lambda: _plan(float("nan")), *mxnb_errors(), match="recompute")


@case("numbers")
def recompute_fractional_budget():
    raises(lambda: _plan(1e6 + 0.5), *mxnb_errors(), match="recompute")


@case("numbers")
def recompute_true():
    raises(lambda: _plan(True), *mxnb_errors(), match="recompute")


def _launch(*argv: str, timeout: float = 30) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "mxnb.launch", *argv],
        check=False,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


@case("numbers")
def launcher_timeout_nan():
    done = _launch("-n", "1", "--timeout", "nan", "true")
    assert done.returncode == 2, f"exit {done.returncode}: {done.stderr[-300:]}"
    assert "--timeout" in done.stderr and "too big" not in done.stderr, done.stderr[-300:]


@case("numbers")
def launcher_timeout_negative():
    done = _launch("-n", "1", "--timeout", "-5", "true")
    assert done.returncode == 2 and "--timeout" in done.stderr, done.stderr[-300:]


@case("numbers")
def launcher_num_cpus_zero():
    done = _launch("-n", "1", "--num-cpus", "0", "true")
    assert done.returncode == 2 and "--num-cpus" in done.stderr, done.stderr[-300:]


@case("numbers")
def launcher_timeout_env_garbage():
    env = {**os.environ, "MXNB_DIST_TIMEOUT": "soon"}
    done = subprocess.run(
        [sys.executable, "-m", "mxnb.launch", "-n", "1", "true"],
        capture_output=True,
        text=True,
        timeout=30,
        env=env,
    )
    assert done.returncode == 2 and "MXNB_DIST_TIMEOUT" in done.stderr, done.stderr[-300:]


# -- keys normalised ------------------------------------------------------------------------------


@case("keys")
def kvstore_int_then_str_key():
    import mxnb as mx

    kv = mx.kv.create("local")
    kv.init(3, mx.nd.ones(2))
    raises(lambda: kv.init("3", mx.nd.zeros(2)), *mxnb_errors(), match="key")


@case("keys")
def kvstore_mixed_keys_in_one_list():
    import mxnb as mx

    kv = mx.kv.create("local")
    raises(lambda: kv.init([3, "a"], [mx.nd.ones(2), mx.nd.ones(2)]), *mxnb_errors(), match="key")


@case("keys")
def kvstore_bool_key():
    import mxnb as mx

    kv = mx.kv.create("local")
    raises(lambda: kv.init(True, mx.nd.ones(2)), *mxnb_errors(), match="key")


@case("keys")
def kvstore_pull_with_the_other_key_type():
    import mxnb as mx

    kv = mx.kv.create("local")
    kv.init("w", mx.nd.ones(2))
    raises(lambda: kv.pull(0, out=mx.nd.zeros(2)), *mxnb_errors(), match="key")


# -- atomic writes: a process killed mid-write leaves the old file ---------------------------------


def _big_symbol_code() -> str:
    return (
        "net = mx.sym.Variable('data')\n"
        "for i in range(40):\n"
        "    net = mx.sym.FullyConnected(net, num_hidden=4, name=f'fc{i}')\n"
    )


@case("atomic")
def killed_during_symbol_save():
    folder = tmpdir()
    target = os.path.join(folder, "net-symbol.json")
    script = (
        _big_symbol_code()
        + "import resource\nresource.setrlimit(resource.RLIMIT_FSIZE, (600, 600))\n"
        + "net.save(TARGET)\n"
    )
    _killed_mid_write_script(target, b'{"old": true}', script)


@case("atomic")
def killed_during_save_checkpoint():
    folder = tmpdir()
    prefix = os.path.join(folder, "ck")
    script = (
        _big_symbol_code()
        + "args = {'fc0_weight': mx.nd.ones((4, 4))}\n"
        + "import resource\nresource.setrlimit(resource.RLIMIT_FSIZE, (600, 600))\n"
        + f"mx.model.save_checkpoint({prefix!r}, 1, net, args, {{}})\n"
    )
    _killed_mid_write_script(prefix + "-symbol.json", b'{"old": true}', script)


@case("atomic")
def killed_during_chrome_trace():
    folder = tmpdir()
    target = os.path.join(folder, "run.json")
    script = (
        "with mx.engine.trace() as tr:\n"
        "    a = mx.nd.ones((4,))\n"
        "    for _ in range(50):\n"
        "        a = a + 1\n"
        "    a.wait_to_read()\n"
        "import resource\nresource.setrlimit(resource.RLIMIT_FSIZE, (2000, 2000))\n"
        "tr.to_chrome_trace(TARGET)\n"
    )
    _killed_mid_write_script(target, b'{"traceEvents": []}', script)


@case("atomic")
def killed_during_recordio_write():
    folder = tmpdir()
    rec, idx = os.path.join(folder, "d.rec"), os.path.join(folder, "d.idx")
    with open(idx, "w") as handle:
        handle.write("0\t0\n")
    script = (
        f"w = mx.recordio.MXIndexedRecordIO({idx!r}, TARGET, 'w')\n"
        "import resource\nresource.setrlimit(resource.RLIMIT_FSIZE, (3000, 3000))\n"
        "for i in range(100):\n"
        "    w.write_idx(i, b'x' * 100)\n"
        "w.close()\n"
    )
    _killed_mid_write_script(rec, b"old records", script)
    with open(idx) as handle:
        assert handle.read() == "0\t0\n", "the old index was destroyed"


@case("atomic")
def killed_during_image_list_write():
    folder = tmpdir()
    images = os.path.join(folder, "img")
    os.makedirs(images)
    for i in range(200):
        open(os.path.join(images, f"image_with_a_long_name_{i:04d}.jpg"), "wb").close()
    prefix = os.path.join(folder, "data")
    script = (
        "from mxnb.tools import im2rec\n"
        "import resource\nresource.setrlimit(resource.RLIMIT_FSIZE, (2000, 2000))\n"
        f"im2rec.make_list({prefix!r}, {images!r})\n"
    )
    _killed_mid_write_script(prefix + ".lst", b"0\t0.000000\told.jpg\n", script)


@case("atomic")
def killed_during_optimizer_states_save():
    folder = tmpdir()
    target = os.path.join(folder, "m.states")
    script = (
        "kv = mx.kv.create('local')\n"
        "kv.set_optimizer(mx.optimizer.create('adam'))\n"
        "kv.init(0, mx.nd.ones((64, 64)))\n"
        "kv.push(0, mx.nd.ones((64, 64)))\n"
        "mx.nd.waitall()\n"
        "import resource\nresource.setrlimit(resource.RLIMIT_FSIZE, (4000, 4000))\n"
        "kv.save_optimizer_states(TARGET)\n"
    )
    _killed_mid_write_script(target, b"old states", script)


def _killed_mid_write_script(target: str, old: bytes, script: str) -> None:
    with open(target, "wb") as handle:
        handle.write(old)
    program = (
        "import signal\nimport mxnb as mx\n"
        "signal.signal(signal.SIGXFSZ, signal.SIG_DFL)  # Python ignores it; a real kill here\n"
        f"TARGET = {target!r}\n" + script
    )
    child = subprocess.run(
        [sys.executable, "-c", program], capture_output=True, text=True, timeout=60
    )
    assert child.returncode == -signal.SIGXFSZ, (
        f"the writer was not killed mid-write (exit {child.returncode}): {child.stderr[-300:]}"
    )
    with open(target, "rb") as handle:
        now = handle.read()
    assert now == old, f"the old file was destroyed: {len(old)} bytes became {len(now)}"


# -- readers refuse bad indexes ---------------------------------------------------------------------


def _records(folder: str, count: int = 3) -> tuple[str, str]:
    import mxnb as mx

    rec, idx = os.path.join(folder, "r.rec"), os.path.join(folder, "r.idx")
    writer = mx.recordio.MXIndexedRecordIO(idx, rec, "w")
    for key in range(count):
        writer.write_idx(
            key, mx.recordio.pack(mx.recordio.IRHeader(0, float(key), key, 0), b"p" * 8)
        )
    writer.close()
    return rec, idx


@case("index")
def index_with_a_repeated_key():
    import mxnb as mx
    from mxnb.base import FormatError

    rec, idx = _records(tmpdir())
    lines = open(idx).read().splitlines()
    with open(idx, "w") as handle:
        handle.write(
            "\n".join(
                [lines[0], lines[1], lines[0].split("\t")[0] + "\t" + lines[2].split("\t")[1]]
            )
            + "\n"
        )
    raises(lambda: mx.recordio.MXIndexedRecordIO(idx, rec, "r"), FormatError, match="line 3")


@case("index")
def index_with_two_keys_at_one_offset():
    import mxnb as mx
    from mxnb.base import FormatError

    rec, idx = _records(tmpdir())
    lines = open(idx).read().splitlines()
    with open(idx, "w") as handle:
        handle.write("\n".join([lines[0], lines[1], "2\t" + lines[1].split("\t")[1]]) + "\n")
    raises(lambda: mx.recordio.MXIndexedRecordIO(idx, rec, "r"), FormatError, match="line 3")


@case("index")
def image_record_iter_over_a_repeated_key():
    import mxnb as mx
    from mxnb.base import FormatError

    rec, idx = _records(tmpdir())
    lines = open(idx).read().splitlines()
    with open(idx, "w") as handle:
        handle.write("\n".join([lines[0], lines[1], "0\t" + lines[2].split("\t")[1]]) + "\n")
    raises(
        lambda: mx.io.ImageRecordIter(
            path_imgrec=rec, path_imgidx=idx, data_shape=(3, 4, 4), batch_size=1
        ),
        FormatError,
        match="r.idx",
    )


@case("index")
def record_truncated_inside_its_padding():
    """A 5-byte record needs 8 bytes with padding; the message must not say '5 ... only 5'."""
    import mxnb as mx
    from mxnb.base import FormatError
    from mxnb.recordio import MAGIC

    path = os.path.join(tmpdir(), "t.rec")
    with open(path, "wb") as handle:
        handle.write(struct.pack("<II", MAGIC, 5) + b"abcde")
    exc = raises(lambda: mx.recordio.MXRecordIO(path, "r").read(), FormatError, match="t.rec")
    assert "declares 5 bytes, only 5 follow" not in str(exc), str(exc)


@case("index")
def params_with_an_absurd_dimension():
    import mxnb as mx
    from mxnb.base import FormatError

    path = os.path.join(tmpdir(), "x.params")
    from mxnb.ndarray import mxnet_format

    mxnet_format.save(path, {"arg:w": mx.nd.ones((2, 3))})  # MXNet's own .params format
    # MXNet's format: rewrite the shape (2, 3) as (0, 2**61)
    data = open(path, "rb").read()
    shape = struct.pack("<2q", 2, 3)
    assert shape in data, "the shape is not where MXNet's format puts it"
    with open(path, "wb") as handle:
        handle.write(data.replace(shape, struct.pack("<2q", 0, 2**61)))
    raises(lambda: mx.nd.load(path), FormatError, match="x.params")


@case("index")
def symbol_json_node_without_a_name():
    import mxnb as mx
    from mxnb.base import FormatError

    doc = json.loads(_net().tojson())
    del doc["nodes"][0]["name"]
    raises(lambda: mx.sym.load_json(json.dumps(doc)), FormatError, match="name")


# -- images and im2rec ----------------------------------------------------------------------------


@case("images")
def imresize_of_a_float_image_saturates():
    import numpy as np

    import mxnb as mx

    img = np.full((4, 4, 3), 300.7, dtype="float32")
    img[0, 0, 0] = -1.0
    out = mx.image.imresize(mx.nd.array(img), 4, 4).asnumpy()
    assert out.dtype == np.uint8
    assert out[1, 1, 0] == 255, f"300.7 became {out[1, 1, 0]}"
    assert out[0, 0, 0] == 0, f"-1 became {out[0, 0, 0]}"


def _png(width: int, height: int, rows: bytes | None = None) -> bytes:
    """A grey 8-bit PNG; ``rows`` None: all-zero rows (compresses about 1000:1)."""

    def chunk(kind: bytes, body: bytes) -> bytes:
        return (
            struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))
        )

    raw = rows if rows is not None else b"\0" * ((width + 1) * height)
    header = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(raw, 9))
        + chunk(b"IEND", b"")
    )


def _im2rec_with(bad_name: str, bad_bytes: bytes) -> tuple[int, str]:
    """Pack [good, bad, good]; return (records written, stderr + warnings)."""
    import io
    from contextlib import redirect_stderr

    import numpy as np
    from PIL import Image

    import mxnb as mx
    from mxnb.tools import im2rec

    folder = tmpdir()
    for name in ("a.png", "c.png"):
        Image.fromarray(np.full((8, 8, 3), 100, np.uint8)).save(os.path.join(folder, name))
    with open(os.path.join(folder, bad_name), "wb") as handle:
        handle.write(bad_bytes)
    lst = os.path.join(folder, "data.lst")
    with open(lst, "w") as handle:
        handle.write(f"0\t0.0\ta.png\n1\t1.0\t{bad_name}\n2\t0.0\tc.png\n")
    errors = io.StringIO()
    with warnings.catch_warnings(record=True) as caught, redirect_stderr(errors):
        warnings.simplefilter("always")
        rec, idx = im2rec.make_record(lst, folder)
    said = errors.getvalue() + " ".join(str(w.message) for w in caught)
    reader = mx.recordio.MXIndexedRecordIO(idx, rec, "r")
    return len(reader.keys), said


@case("images", bomb=True)
def im2rec_skips_a_decompression_bomb():
    # 900 M pixels claimed; Pillow refuses it at open (over twice its limit), so a few
    # bytes of image data are enough
    count, said = _im2rec_with("bomb.png", _png(30000, 30000, b"\0" * 64))
    assert count == 2, f"{count} records packed; the images after the bomb were lost"
    assert "bomb.png" in said, f"the bomb is not named: {said[-300:]}"


@case("images", bomb=True, timeout=90)
def im2rec_refuses_an_image_over_the_pixel_limit():
    """Between 1x and 2x Pillow's limit: imdecode refuses it, im2rec must too (not decode 1 GiB)."""
    from PIL import Image

    side = math.isqrt(Image.MAX_IMAGE_PIXELS) + 200
    count, said = _im2rec_with("huge.png", _png(side, side))
    assert count == 2, f"{count} records packed"
    assert "huge.png" in said, f"the image over the limit is not named: {said[-300:]}"


@case("images")
def im2rec_skips_a_file_that_is_not_an_image():
    count, said = _im2rec_with("junk.png", b"this is not a png")
    assert count == 2 and "junk.png" in said, (count, said[-300:])


@case("images")
def im2rec_skips_a_truncated_image():
    count, said = _im2rec_with("cut.png", _png(16, 16, bytes(range(256)) + b"\0" * 16)[:60])
    assert count == 2 and "cut.png" in said, (count, said[-300:])


# -- iterators ------------------------------------------------------------------------------------


@case("iterators")
def image_record_iter_num_parts_float():
    import mxnb as mx

    rec, _ = _records(tmpdir())
    raises(
        lambda: mx.io.ImageRecordIter(
            path_imgrec=rec, data_shape=(3, 4, 4), batch_size=1, num_parts=2.5
        ),
        *mxnb_errors(),
        match="num_parts",
    )


@case("iterators")
def image_record_iter_part_index_float():
    import mxnb as mx

    rec, _ = _records(tmpdir())
    raises(
        lambda: mx.io.ImageRecordIter(
            path_imgrec=rec, data_shape=(3, 4, 4), batch_size=1, num_parts=2, part_index=0.5
        ),
        *mxnb_errors(),
        match="part_index",
    )


@case("iterators")
def image_iter_num_parts_zero():
    import mxnb as mx

    rec, idx = _records(tmpdir())
    raises(
        lambda: mx.image.ImageIter(
            batch_size=1, data_shape=(3, 4, 4), path_imgrec=rec, path_imgidx=idx, num_parts=0
        ),
        *mxnb_errors(),
        match="num_parts",
    )


def _batches(it, count: int) -> list:
    out = []
    for _ in range(count):
        try:
            batch = it.next()
        except StopIteration:
            out.append("end")
            continue
        out.append((batch.data[0].asnumpy().tolist(), batch.pad))
    return out


def _compare_with_prefetching(make, script: list[str]) -> None:
    import mxnb as mx

    plain, prefetched = make(), mx.io.PrefetchingIter(make())
    for step, what in enumerate(script):
        if what == "reset":
            plain.reset()
            prefetched.reset()
            continue
        want, got = _batches(plain, int(what)), _batches(prefetched, int(what))
        assert want == got, f"step {step}: the wrapped iterator gives {want}, PrefetchingIter {got}"


@case("iterators")
def prefetching_roll_over_reset_mid_epoch():
    import numpy as np

    import mxnb as mx

    def make():
        return mx.io.NDArrayIter(np.arange(10), batch_size=4, last_batch_handle="roll_over")

    _compare_with_prefetching(make, ["1", "reset", "3", "reset", "3", "reset", "4"])


@case("iterators")
def prefetching_reset_in_every_position():
    import numpy as np

    import mxnb as mx

    for mode in ("pad", "discard", "roll_over"):
        for taken in range(5):

            def make(mode=mode):
                return mx.io.NDArrayIter(np.arange(10), batch_size=3, last_batch_handle=mode)

            _compare_with_prefetching(make, [str(taken), "reset", "5", "reset", "5"])


class _Flaky:
    """An iterator whose second batch raises ``error`` once."""

    def __init__(self, error: BaseException) -> None:
        import numpy as np

        import mxnb as mx

        self.inner = mx.io.NDArrayIter(np.arange(8), batch_size=2)
        self.error = error
        self.calls = 0

    def make(self):
        import mxnb as mx

        outer = self

        class Flaky(mx.io.DataIter):
            def __init__(self):
                super().__init__(2)

            @property
            def provide_data(self):
                return outer.inner.provide_data

            @property
            def provide_label(self):
                return outer.inner.provide_label

            def reset(self):
                outer.inner.reset()

            def next(self):
                outer.calls += 1
                if outer.calls == 2 and outer.error is not None:
                    error, outer.error = outer.error, None
                    raise error
                return outer.inner.next()

        return Flaky()


def _prefetching_recovers(error: BaseException) -> None:
    import mxnb as mx

    it = mx.io.PrefetchingIter(_Flaky(error).make())
    it.next()
    try:
        it.next()
    except type(error):
        pass
    else:
        raise AssertionError(f"the {type(error).__name__} of the loader was lost")
    it.reset()
    got = [b.data[0].asnumpy().tolist() for b in it]
    assert got == [[0.0, 1.0], [2.0, 3.0], [4.0, 5.0], [6.0, 7.0]], f"after reset: {got}"


@case("iterators")
def prefetching_recovers_after_system_exit():
    _prefetching_recovers(SystemExit(3))


@case("iterators")
def prefetching_recovers_after_keyboard_interrupt():
    _prefetching_recovers(KeyboardInterrupt())


@case("iterators")
def prefetching_recovers_after_an_error():
    _prefetching_recovers(ValueError("bad record"))


# -- trace files ----------------------------------------------------------------------------------


def _valid_trace() -> dict:
    import mxnb as mx

    with mx.engine.trace() as tr:
        (mx.nd.ones((2,)) + 1).wait_to_read()
    return tr.to_chrome_trace()


def _trace_shapes() -> dict[str, Callable[[], bytes]]:
    def doc(change: Callable[[dict], object]) -> Callable[[], bytes]:
        def make() -> bytes:
            document = _valid_trace()
            result = change(document)
            return json.dumps(document if result is None else result).encode()

        return make

    def events(document):
        return document["mxnb"]["events"]

    def first_event_kind(document, fn):
        for item in events(document):
            if item[0] == "OpPush":
                fn(item)
                return

    return {
        "not_json": lambda: b"{this is not json",
        "binary": lambda: bytes(range(256)),
        "a_list": lambda: b"[1, 2, 3]",
        "a_number": lambda: b"42",
        "no_trace_events": doc(lambda d: {"other": 1}),
        "trace_events_not_a_list": doc(lambda d: {"traceEvents": 5}),
        "mxnb_not_an_object": doc(lambda d: d.update(mxnb=[1])),
        "mxnb_events_not_a_list": doc(lambda d: d["mxnb"].update(events={"a": 1})),
        "event_not_a_list": doc(lambda d: events(d).append(7)),
        "event_of_unknown_kind": doc(lambda d: events(d).append(["Nope", 1.0])),
        "event_missing_fields": doc(lambda d: events(d).append(["OpEnd"])),
        "event_with_extra_fields": doc(
            lambda d: events(d).append(["OpEnd", 1.0, 1, None, False, 9, 9])
        ),
        "event_time_a_string": doc(
            lambda d: first_event_kind(d, lambda e: e.__setitem__(1, "soon"))
        ),
        "event_bad_dependency": doc(
            lambda d: first_event_kind(d, lambda e: e.__setitem__(8, [[1, 2]]))
        ),
        "op_end_without_push": doc(lambda d: events(d).append(["OpEnd", 1.0, 999, None, False])),
        "foreign_event_without_ts": doc(
            lambda d: {"traceEvents": [{"ph": "X", "cat": "op", "name": "a", "dur": 1}]}
        ),
        "foreign_event_not_an_object": doc(lambda d: {"traceEvents": [[1, 2]]}),
        "deep_nesting": lambda: b'{"traceEvents": ' + b"[" * 100000 + b"]" * 100000 + b"}",
    }


def _trace_case(shape: str) -> Callable[[], None]:
    def run() -> None:
        import mxnb as mx
        from mxnb.base import FormatError

        path = os.path.join(tmpdir(), f"trace_{shape}.json")
        with open(path, "wb") as handle:
            handle.write(_trace_shapes()[shape]())

        def load_and_use():
            trace = mx.engine.Trace.from_chrome_trace(path)
            trace.ops()
            trace.stats()
            return trace

        raises(load_and_use, FormatError, match=os.path.basename(path))

    run.__name__ = f"trace_file_{shape}"
    return run


for _shape in [
    "not_json",
    "binary",
    "a_list",
    "a_number",
    "no_trace_events",
    "trace_events_not_a_list",
    "mxnb_not_an_object",
    "mxnb_events_not_a_list",
    "event_not_a_list",
    "event_of_unknown_kind",
    "event_missing_fields",
    "event_with_extra_fields",
    "event_time_a_string",
    "event_bad_dependency",
    "op_end_without_push",
    "foreign_event_without_ts",
    "foreign_event_not_an_object",
    "deep_nesting",
]:
    case("traces")(_trace_case(_shape))


# -- the launcher and dist (need Ray: slow) ---------------------------------------------------------


def _marked_processes(marker: str) -> list[int]:
    pids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/environ", "rb") as handle:
                if marker.encode() in handle.read():
                    pids.append(int(entry))
        except OSError:
            continue
    return pids


@case("launcher", slow=True, timeout=180)
def ctrl_c_while_the_launcher_starts_ray():
    import time
    import uuid

    marker = uuid.uuid4().hex
    env = dict(os.environ, MXNB_HOSTILE_MARK=marker)
    launcher = subprocess.Popen(
        [sys.executable, "-m", "mxnb.launch", "-n", "1", "sleep", "30"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),  # noqa: PLW1509
    )
    try:
        deadline = time.monotonic() + 60
        while len(_marked_processes(marker)) < 6 and time.monotonic() < deadline:
            time.sleep(0.05)  # the launcher, Ray's GCS, raylet and their first helpers
        assert len(_marked_processes(marker)) >= 6, "Ray never started"
        launcher.send_signal(signal.SIGINT)
        try:
            launcher.wait(60)
        except subprocess.TimeoutExpired:
            raise AssertionError("the launcher did not stop on Ctrl-C") from None
        time.sleep(2.0)
        left = _marked_processes(marker)
        assert not left, f"{len(left)} processes left running after Ctrl-C"
    finally:
        launcher.kill()
        launcher.wait()
        for pid in _marked_processes(marker):  # whatever the verdict, nothing of it stays
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


@case("dist", slow=True, timeout=240)
def dist_init_with_different_shapes():
    import ray

    import mxnb as mx
    from mxnb.launch import run_tasks, start_ray

    def job(kv):
        import numpy as np

        shape = (2,) if kv.rank == 0 else (3,)
        kv.init(7, mx.nd.ones(shape) * (kv.rank + 1))
        kv.push(7, mx.nd.ones(shape))
        out = mx.nd.zeros(shape)
        kv.pull(7, out=out)
        return np.asarray(out.asnumpy()).tolist()

    start_ray(num_cpus=2, object_store_mb=128)
    try:
        results = run_tasks(job, num_workers=2, num_servers=1, timeout=20)
    finally:
        ray.shutdown()
    silent = [r for r in results if not isinstance(r, BaseException)]
    assert not silent, f"workers returned values although their shapes differ: {results}"
    assert any("shape" in str(r) for r in results), f"no error names the shapes: {results}"
