r"""The lab extension and the cell widgets in a real JupyterLab, driven by Galata in Chromium.

A JupyterLab server (this venv's, with the extension ``make labextension`` built and
Galata's helper extension) starts on a free port of 127.0.0.1 with a temporary root
holding copies of every notebook in ``notebooks/``, a panel notebook, an MXNet symbol
JSON and a trace written by ``mx.engine.trace``.  ``lab/lab.spec.mjs`` (Galata,
``@jupyterlab/galata`` on ``@playwright/test``, with Debian's chromium: see
``playwright.config.mjs``) then checks, as a user would see it:

    notebooks    each opens, runs all cells; no "Error displaying widget", no
                 traceback; every visible canvas drew an SVG with nodes; no figure
                 shown as "<Figure size ...>" text, notebook 10's pictures are images
    panels       the sidebar opens DAG and Timeline; a cell pushes ops; nodes and
                 bars appear; a click on a node shows it in Inspect; Memory and Stats
                 draw; another notebook made active switches the panels to its kernel
                 (the status names it) and back (its ops shown again); the Timeline's
                 Clear empties it, Fit starts the axis at the first op, "since last
                 cell" shows one cell's ops; the palette lists the panels and a reload
                 brings docked ones back;
                 in Notebook 7 the DAG panel (right side) draws a cell's ops too
    monitor      an EngineMonitor in a cell: a click on a DAG node, before any
                 other tab was opened, shows the op in its Inspect tab
    streaming    3,000 ops streamed with the Timeline panel open, then 3,000 more
                 with an EngineMonitor on its Timeline tab: both draw every op (they
                 get deltas); a zoom after the deltas shows the bars a fresh drawing
                 zoomed the same way shows
    viewers      a -symbol.json (MXNet's, and mxnb's own with a shape), a
                 .trace.json and a .diff.json opened from the file browser show the
                 graph (shapes, hover attributes), the timeline (dependency arrows)
                 and two runs' timelines with the slowed op outlined; the tooltip has
                 canvas.css's style on a fresh page; the 969-node LSTM opens grouped
                 within 5 s, the page responsive; notebook 10's job trace shows its 3
                 processes as bands, its kvstore slices and their arrows
    console      no test's page logged "widget model not found"

Screenshots, Playwright's results and failure traces go to ``tests/lab/artifacts/``
(gitignored).  ``MXNB_LAB_GREP=regex`` runs only the Galata tests whose titles match (while
working on them; the whole file runs otherwise).
"""

from __future__ import annotations

import json
import os
import pathlib
import shutil
import subprocess
import sys
import time

import nbformat
import pytest

from mxnb.kvstore.dist_trace import ClusterTrace

from .server import free_port, jupyter_server, server_options

HERE = pathlib.Path(__file__).parent
ROOT = HERE.parents[1]
ARTIFACTS = HERE / "artifacts"
SYMBOL = ROOT / "tests" / "symbol" / "data" / "mxnet191_lenet-symbol.json"  # written by real MXNet
LSTM = ROOT / "tests" / "rnn" / "data" / "lstm_lm-symbol.json"  # notebook 11's 969 nodes
JOB = HERE / "data" / "dist_sync-cluster.json"  # notebook 10's job, traced (data/make_job.py)
JOB_TRACE = "job.trace.json"
# the least images each notebook shows (its matplotlib pictures)
IMAGES = {"10_distributed_kvstore.ipynb": 3, "11_partial_shapes_and_rnn.ipynb": 1}
OWN_SYMBOL = "mlp-symbol.json"  # written by mxnb, with the data's shape

PANEL_CELLS = [
    "import mxnb as mx\nengine = mx.engine.get()",
    # pushed after the panels opened: a chain of writes and a reader after each write
    (
        "a = engine.new_var(name='a')\n"
        "for i in range(6):\n"
        "    engine.push_sync(lambda rctx: None, mx.cpu(), mutate_vars=[a], name=f'write{i}')\n"
        "    engine.push_sync(lambda rctx: None, mx.cpu(), const_vars=[a], name=f'read{i}')\n"
        "engine.wait_for_all()\n"
        "x = mx.nd.ones((256, 256))\n"
        "for _ in range(3):\n"
        "    x = x * 0.5 + 1\n"
        "x.wait_to_read()"
    ),
]


OTHER_CELLS = [
    "import mxnb as mx\nengine = mx.engine.get()\nb = engine.new_var(name='b')",
    (
        "for i in range(3):\n"
        "    engine.push_sync(lambda rctx: None, mx.cpu(), mutate_vars=[b], name=f'other{i}')\n"
        "engine.wait_for_all()"
    ),
]


# a few thousand ops streamed (a pause every 300 pushes: the views get deltas while it runs);
# the Timeline panel and an EngineMonitor's Timeline tab must show every one
STREAM_OPS = 3000
STREAM_CELLS = [
    "import time\nimport mxnb as mx\nfrom mxnb import widgets\nengine = mx.engine.get()",
    (
        "def stream(name):\n"
        "    var = engine.new_var(name=name)\n"
        "    ids = []\n"
        f"    for i in range({STREAM_OPS}):\n"
        "        ids.append(engine.push_sync(lambda rctx: None, mx.cpu(), mutate_vars=[var], name=f'{name}{i % 7}'))\n"
        "        if i % 300 == 0:\n"
        "            time.sleep(0.05)\n"
        "    engine.wait_for_all()\n"
        "    print(f'streamed {len(ids)} ops, last #{ids[-1]}')\n"
        "stream('s')"
    ),
    "monitor = widgets.EngineMonitor()\nmonitor.tabs.selected_index = 1\nmonitor",
    "stream('t')",
]


# an EngineMonitor in a cell: a click on a DAG node before any other tab was opened inspects it
MONITOR_CELLS = [
    (
        "import mxnb as mx\nfrom mxnb import widgets\nengine = mx.engine.get()\n"
        "monitor = widgets.EngineMonitor()\nmonitor"
    ),
    (
        "m = engine.new_var(name='m')\n"
        "for i in range(3):\n"
        "    engine.push_sync(lambda rctx: None, mx.cpu(), mutate_vars=[m], name=f'mon{i}')\n"
        "engine.wait_for_all()\n"
        "monitor.refresh()"
    ),
]


def write_trace(path: pathlib.Path) -> None:
    """A chrome trace of a small diamond program, as ``mx.engine.trace`` writes it."""
    import mxnb as mx
    from mxnb.engine.tracing import Trace

    engine = mx.engine.get()
    with Trace() as trace:
        a = engine.new_var(name="a")
        engine.push_sync(lambda rctx: time.sleep(0.002), mx.cpu(), mutate_vars=[a], name="write")
        for name in ("read1", "read2"):
            engine.push_sync(lambda rctx: time.sleep(0.002), mx.cpu(), const_vars=[a], name=name)
        engine.push_sync(lambda rctx: time.sleep(0.002), mx.cpu(), mutate_vars=[a], name="write2")
        engine.wait_for_all()
    trace.to_chrome_trace(path)


def write_diff(path: pathlib.Path) -> None:
    """Two runs of a small program, the second with ``slow`` 30 ms slower, as TraceDiffView saves them."""
    import mxnb as mx
    from mxnb.engine.tracing import Trace
    from mxnb.widgets import TraceDiffView

    engine = mx.engine.get()
    runs = []
    for extra in (0.0, 0.03):  # far above what a loaded machine adds to a 2 ms sleep
        with Trace() as trace:
            a, b = engine.new_var(name="a"), engine.new_var(name="b")
            engine.push_sync(lambda rctx: time.sleep(0.002), mx.cpu(), mutate_vars=[a], name="fast")
            engine.push_sync(
                lambda rctx, extra=extra: time.sleep(0.002 + extra), mx.cpu(), [a], [b], name="slow"
            )
            engine.wait_for_all()
        runs.append(trace)
    TraceDiffView(*runs, top=1).save(path)


def write_own_symbol(path: pathlib.Path) -> None:
    """mxnb's own symbol JSON of a small MLP whose input has a shape (``__shape__``)."""
    import mxnb as mx

    data = mx.sym.Variable("data", shape=(1, 784))
    hidden = mx.sym.Activation(
        mx.sym.FullyConnected(data, num_hidden=16, name="fc1"), act_type="relu"
    )
    net = mx.sym.SoftmaxOutput(mx.sym.FullyConnected(hidden, num_hidden=10, name="fc2"))
    net.save(str(path))


def lab_root(tmp_path: pathlib.Path) -> pathlib.Path:
    root = tmp_path / "root"
    root.mkdir()
    for notebook in sorted((ROOT / "notebooks").glob("*.ipynb")):
        shutil.copy(notebook, root / notebook.name)
    notebooks = (
        ("panels.ipynb", PANEL_CELLS),
        ("other.ipynb", OTHER_CELLS),
        ("monitor.ipynb", MONITOR_CELLS),
        ("stream.ipynb", STREAM_CELLS),
    )
    for name, cells in notebooks:
        notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells])
        notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3"}
        nbformat.write(notebook, root / name)
    shutil.copy(SYMBOL, root / SYMBOL.name)
    shutil.copy(LSTM, root / LSTM.name)
    ClusterTrace.load(JOB).to_chrome_trace(root / JOB_TRACE)
    write_own_symbol(root / OWN_SYMBOL)
    write_trace(root / "diamond.trace.json")
    write_diff(root / "runs.diff.json")
    return root


def job_counts(path: pathlib.Path) -> dict:
    """What the trace viewer must show of a job's chrome trace: processes, ops, kvstore slices, arrows."""
    events = json.loads(path.read_text())["traceEvents"]
    names = {e["pid"]: e["args"]["name"] for e in events if e.get("name") == "process_name"}
    return {
        "job": path.name,
        "job_processes": [names[pid] for pid in sorted(names)],
        "job_ops": sum(1 for e in events if e.get("ph") == "X" and e.get("cat") == "op"),
        "job_kvstore": sum(1 for e in events if e.get("ph") == "X" and e.get("cat") == "kvstore"),
        "job_kv_flows": sum(1 for e in events if e.get("ph") == "s" and e.get("cat") == "kvstore"),
    }


def galata_extension() -> str:
    """The folder of Galata's in-page helper extension, shipped with this venv's JupyterLab."""
    import jupyterlab.galata

    return str(pathlib.Path(jupyterlab.galata.__file__).parent)


@pytest.fixture
def jupyterlab(tmp_path):
    """A JupyterLab server for Galata on 127.0.0.1 (free port); yields (url, root).

    As Galata's ``configure_jupyter_server``: its helper extension, the app exposed in the
    browser, no token and no XSRF check (Galata's API requests carry neither): a test server
    on the loopback only.
    """
    root = lab_root(tmp_path)
    port = free_port()
    command = [
        sys.executable, "-m", "jupyterlab", "--allow-root", *server_options(port, token=""),
        f"--ServerApp.root_dir={root}", "--ServerApp.disable_check_xsrf=True",
        f"--LabServerApp.extra_labextensions_path={galata_extension()}",
        "--LabApp.expose_app_in_browser=True", "--JupyterNotebookApp.expose_app_in_browser=True",
    ]  # fmt: skip
    with jupyter_server(command, root, tmp_path, port, wait=90) as (url, _token):
        yield url, root


@pytest.mark.slow
@pytest.mark.timeout(1200)
def test_extension_panels_viewers_and_notebooks_in_jupyterlab(jupyterlab, tmp_path):
    """Every Galata test of lab.spec.mjs passes in JupyterLab with Chromium, none skipped."""
    url, root = jupyterlab
    notebooks = sorted(p.name for p in (ROOT / "notebooks").glob("*.ipynb"))
    assert notebooks
    ARTIFACTS.mkdir(exist_ok=True)
    config = {
        "notebooks": notebooks,
        "panels": "panels.ipynb",
        "other": "other.ipynb",
        "monitor": "monitor.ipynb",
        "stream": "stream.ipynb",
        "stream_ops": STREAM_OPS,
        "symbol": SYMBOL.name,
        "symbol_nodes": len(json.loads(SYMBOL.read_text())["nodes"]),
        "own_symbol": OWN_SYMBOL,
        "own_symbol_nodes": len(json.loads((root / OWN_SYMBOL).read_text())["nodes"]),
        "own_symbol_shape": "(1, 784)",
        "trace": "diamond.trace.json",
        "lstm": LSTM.name,
        "lstm_nodes": len(json.loads(LSTM.read_text())["nodes"]),
        **job_counts(root / JOB_TRACE),
        "images": IMAGES,
        "kernelspec": nbformat.read(ROOT / "notebooks" / notebooks[0], as_version=4).metadata.kernelspec,
        "diff": "runs.diff.json",
        "artifacts": str(ARTIFACTS),
    }
    path = tmp_path / "lab_config.json"
    path.write_text(json.dumps(config), encoding="utf-8")
    results = ARTIFACTS / "results.json"
    results.unlink(missing_ok=True)
    env = dict(os.environ, MXNB_LAB_URL=url, MXNB_LAB_CONFIG=str(path))
    env["MXNB_LAB_ARTIFACTS"] = str(ARTIFACTS)
    env.pop("CI", None)  # Galata's config reads it; our reporters are fixed in playwright.config
    command = [str(HERE / "node_modules" / ".bin" / "playwright"), "test"]
    command += ["--config", "playwright.config.mjs"]
    grep = os.environ.get("MXNB_LAB_GREP")  # only the tests whose title matches (while working)
    if grep:
        command += ["--grep", grep]
    try:
        run = subprocess.run(
            command, cwd=HERE, env=env, capture_output=True, text=True, timeout=1100, check=False
        )
    except subprocess.TimeoutExpired as exc:
        pytest.fail(f"playwright did not finish in {exc.timeout} s\n{exc.stdout}\n{exc.stderr}")
    output = f"playwright exited with {run.returncode}\n{run.stdout}\n{run.stderr}"
    assert run.returncode == 0, output
    stats = json.loads(results.read_text())["stats"]
    assert (stats["unexpected"], stats["flaky"], stats["skipped"]) == (0, 0, 0), output
    # 7 viewers (the timeline zoom among them), the panels, where documents open, the palette,
    # Notebook 7, the monitor, the streamed timeline, one per notebook
    if grep:
        assert stats["expected"] > 0, output
    else:
        assert stats["expected"] == len(notebooks) + 13, output
