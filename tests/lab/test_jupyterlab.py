r"""The lab extension and the cell widgets in a real JupyterLab, driven in Chromium.

A JupyterLab server (this venv's, with the extension ``make labextension`` built)
starts on a free port of 127.0.0.1 with a temporary root holding copies of every
notebook in ``notebooks/``, a panel notebook, an MXNet symbol JSON and a trace
written by ``mx.engine.trace``.  ``lab/lab.test.mjs`` (node's test runner,
playwright-core on Debian's chromium) then checks, as a user would see it:

    notebooks    each opens, runs all cells; no "Error displaying widget", no
                 traceback; every visible canvas drew an SVG with nodes
    panels       the sidebar opens DAG and Timeline; a cell pushes ops; nodes and
                 bars appear; a click on a node shows it in Inspect; Memory and Stats
                 draw; another notebook made active switches the panels to its kernel;
                 in Notebook 7 the DAG panel (right side) draws a cell's ops too
    monitor      an EngineMonitor in a cell: a click on a DAG node, before any
                 other tab was opened, shows the op in its Inspect tab
    viewers      a -symbol.json (MXNet's, and mxnb's own with a shape) and a
                 .trace.json opened from the file browser show the graph (shapes,
                 hover attributes) and the timeline (dependency arrows)

Screenshots go to ``tests/lab/artifacts/`` (gitignored).
"""

from __future__ import annotations

import json
import pathlib
import shutil
import sys
import time

import nbformat
import pytest

from .server import free_port, jupyter_server, server_options

HERE = pathlib.Path(__file__).parent
ROOT = HERE.parents[1]
ARTIFACTS = HERE / "artifacts"
SYMBOL = ROOT / "tests" / "symbol" / "data" / "mxnet191_lenet-symbol.json"  # written by real MXNet
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
    from mxnb.engine.trace import Trace

    engine = mx.engine.get()
    with Trace() as trace:
        a = engine.new_var(name="a")
        engine.push_sync(lambda rctx: time.sleep(0.002), mx.cpu(), mutate_vars=[a], name="write")
        for name in ("read1", "read2"):
            engine.push_sync(lambda rctx: time.sleep(0.002), mx.cpu(), const_vars=[a], name=name)
        engine.push_sync(lambda rctx: time.sleep(0.002), mx.cpu(), mutate_vars=[a], name="write2")
        engine.wait_for_all()
    trace.to_chrome_trace(path)


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
    )
    for name, cells in notebooks:
        notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells])
        notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3"}
        nbformat.write(notebook, root / name)
    shutil.copy(SYMBOL, root / SYMBOL.name)
    write_own_symbol(root / OWN_SYMBOL)
    write_trace(root / "diamond.trace.json")
    return root


@pytest.fixture
def jupyterlab(tmp_path):
    """A JupyterLab server on 127.0.0.1 (free port); yields (url, token, root)."""
    root = lab_root(tmp_path)
    port = free_port()
    command = [
        sys.executable, "-m", "jupyterlab", "--allow-root", *server_options(port),
        f"--ServerApp.root_dir={root}", "--LabApp.expose_app_in_browser=True",
        "--JupyterNotebookApp.expose_app_in_browser=True",
    ]  # fmt: skip
    with jupyter_server(command, root, tmp_path, port, wait=90) as (url, token):
        yield url, token, root


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_extension_panels_viewers_and_notebooks_in_jupyterlab(jupyterlab, tmp_path, node_tests):
    """Every test in lab/lab.test.mjs passes in JupyterLab with Chromium, none skipped."""
    url, token, root = jupyterlab
    notebooks = sorted(p.name for p in (ROOT / "notebooks").glob("*.ipynb"))
    assert notebooks
    ARTIFACTS.mkdir(exist_ok=True)
    config = {
        "url": url,
        "token": token,
        "notebooks": notebooks,
        "panels": "panels.ipynb",
        "other": "other.ipynb",
        "monitor": "monitor.ipynb",
        "symbol": SYMBOL.name,
        "symbol_nodes": len(json.loads(SYMBOL.read_text())["nodes"]),
        "own_symbol": OWN_SYMBOL,
        "own_symbol_nodes": len(json.loads((root / OWN_SYMBOL).read_text())["nodes"]),
        "own_symbol_shape": "(1, 784)",
        "trace": "diamond.trace.json",
        "artifacts": str(ARTIFACTS),
    }
    path = tmp_path / "lab_config.json"
    path.write_text(json.dumps(config), encoding="utf-8")
    counts = node_tests(HERE / "lab.test.mjs", path, timeout=840)
    assert int(counts["tests"]) >= len(notebooks) + 8, counts["output"]
