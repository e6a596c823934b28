"""Every file writer is atomic (issue 37): a process killed mid-write leaves the old file.

Specification: each writer (symbol JSON, checkpoints, Chrome traces, RecordIO
``.rec`` / ``.idx``, image lists, ``.params``, ``nd.save`` files, optimizer
states) writes a partial file and renames it over the target.  A child
process is killed two ways while it saves over an existing file: by SIGKILL
just before the data reaches the disk (``os.fsync``), and by SIGXFSZ in the
middle of the data (a file size limit); either way the old file is intact and
byte for byte the same.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap

import pytest

#: (name, target file relative to the folder, code that writes it with ``D`` the folder)
WRITERS = [
    ("symbol.save", "net-symbol.json", "NET.save(os.path.join(D, 'net-symbol.json'))"),
    (
        "model.save_checkpoint",
        "ck-symbol.json",
        "mx.model.save_checkpoint(os.path.join(D, 'ck'), 1, NET, {'fc0_weight': mx.nd.ones((4, 4))}, {})",
    ),
    ("Trace.to_chrome_trace", "run.json", "TRACE.to_chrome_trace(os.path.join(D, 'run.json'))"),
    (
        "MXIndexedRecordIO",
        "d.rec",
        "w = mx.recordio.MXIndexedRecordIO(os.path.join(D, 'd.idx'), os.path.join(D, 'd.rec'), 'w')\n"
        "for i in range(200):\n"
        "    w.write_idx(i, b'x' * 100)\n"
        "w.close()",
    ),
    (
        "MXIndexedRecordIO (its .idx)",
        "d.idx",
        "w = mx.recordio.MXIndexedRecordIO(os.path.join(D, 'd.idx'), os.path.join(D, 'd.rec'), 'w')\n"
        "for i in range(200):\n"
        "    w.write_idx(i, b'x' * 100)\n"
        "w.close()",
    ),
    (
        "im2rec list",
        "data.lst",
        "from mxnb.tools import im2rec\n"
        "im2rec._write_list(os.path.join(D, 'data.lst'), [(i, f'image_{i:05d}.jpg', 1.0) for i in range(300)])",
    ),
    (
        "mxnet_format.save (.params)",
        "x.params",
        "from mxnb.ndarray import mxnet_format\n"
        "mxnet_format.save(os.path.join(D, 'x.params'), {'arg:w': mx.nd.ones((64, 64))})",
    ),
    ("nd.save", "x.nd", "mx.nd.save(os.path.join(D, 'x.nd'), {'w': mx.nd.ones((64, 64))})"),
    (
        "kvstore.save_optimizer_states",
        "m.states",
        "kv = mx.kv.create('local')\n"
        "kv.set_optimizer(mx.optimizer.create('adam'))\n"
        "kv.init(0, mx.nd.ones((64, 64)))\n"
        "kv.push(0, mx.nd.ones((64, 64)))\n"
        "mx.nd.waitall()\n"
        "kv.save_optimizer_states(os.path.join(D, 'm.states'))",
    ),
]

PRELUDE = """
import os, resource, signal, sys
import mxnb as mx
D = sys.argv[1]
NET = mx.sym.Variable('data')
for i in range(40):
    NET = mx.sym.FullyConnected(NET, num_hidden=4, name=f'fc{i}')
with mx.engine.trace() as TRACE:
    a = mx.nd.ones((4,))
    for _ in range(50):
        a = a + 1
    a.wait_to_read()
"""

KILLS = {
    # SIGKILL when the data is about to reach the disk: nothing of the new file may be visible
    "sigkill": "os.fsync = lambda fd: os.kill(os.getpid(), signal.SIGKILL)\n",
    # a real kill in the middle of the data: the file size limit ends the process (SIGXFSZ)
    "sigxfsz": (
        "signal.signal(signal.SIGXFSZ, signal.SIG_DFL)\n"
        "resource.setrlimit(resource.RLIMIT_FSIZE, (1500, 1500))\n"
    ),
}


@pytest.mark.timeout(120)
@pytest.mark.parametrize("kill", sorted(KILLS))
@pytest.mark.parametrize(("name", "target", "code"), WRITERS, ids=[w[0] for w in WRITERS])
def test_a_writer_killed_mid_write_leaves_the_old_file(tmp_path, name, target, code, kill):
    old = f"the old {target}, which must survive\n".encode()
    for existing in {target, "d.rec", "d.idx"}:
        (tmp_path / existing).write_bytes(old)
    script = PRELUDE + KILLS[kill] + textwrap.dedent(code) + "\n"
    child = subprocess.run(
        [sys.executable, "-c", script, str(tmp_path)],
        check=False,
        capture_output=True,
        text=True,
        timeout=100,
    )
    expected = -signal.SIGKILL if kill == "sigkill" else -signal.SIGXFSZ
    assert child.returncode == expected, f"{name} was not killed mid-write: {child.stderr[-2000:]}"
    assert (tmp_path / target).read_bytes() == old
    if kill == "sigkill":
        # the next save removes the partial file a dead writer left (atomic_file's rule)
        debris = [p.name for p in tmp_path.iterdir() if p.name.endswith(".partial")]
        assert debris, "a writer killed before its rename leaves its partial file"


def test_a_recordio_writer_reset_forgets_what_it_wrote(tmp_path):
    """'w' then reset(): the records before the reset are gone, as MXNet's truncation makes them."""
    import mxnb as mx

    path = str(tmp_path / "r.rec")
    writer = mx.recordio.MXRecordIO(path, "w")
    writer.write(b"first")
    writer.reset()
    writer.write(b"second")
    writer.close()
    reader = mx.recordio.MXRecordIO(path, "r")
    assert reader.read() == b"second" and reader.read() is None
    assert not [p for p in os.listdir(tmp_path) if p.endswith(".partial")]
