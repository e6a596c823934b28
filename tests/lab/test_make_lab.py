"""``make lab`` starts a JupyterLab that has the extension, also as root (issue 22).

Jupyter refuses to run as root unless given ``--allow-root``; the Makefile adds
it when ``id -u`` is 0 (containers, CI machines).  The test runs the real
target with ``LAB_ARGS`` for a free port and no browser, waits for the server
and reads the page JupyterLab serves: the ``mxnb`` prebuilt extension must be
among its federated extensions.  Run as root (as in CI) it is the root case.
"""

from __future__ import annotations

import json
import os
import pathlib
import re
import shlex
import subprocess
import urllib.request

import pytest

from .server import free_port, jupyter_server, server_options

ROOT = pathlib.Path(__file__).parents[2]


def test_make_lab_passes_allow_root_exactly_when_run_as_root(tmp_path):
    plan = subprocess.run(
        ["make", "-s", "-n", "-C", str(ROOT), "lab"], capture_output=True, text=True, check=True
    ).stdout
    line = next(line for line in plan.splitlines() if "jupyter lab" in line)
    fake = tmp_path / "bin"
    fake.mkdir()
    for uid in ("0", "1000"):  # the shell line as root and as a user (a stand-in `id -u`)
        (fake / "id").write_text(f"#!/bin/sh\necho {uid}\n")
        (fake / "id").chmod(0o755)
        env = dict(os.environ, PATH=f"{fake}:{os.environ['PATH']}")
        words = subprocess.run(
            ["sh", "-c", f"echo {line}"], capture_output=True, text=True, check=True, env=env
        ).stdout.split()
        assert ("--allow-root" in words) == (uid == "0"), (uid, words)
        assert words[-1] == "notebooks/"


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_make_lab_serves_jupyterlab_with_the_extension(tmp_path):
    port = free_port()
    command = ["make", "-s", "-C", str(ROOT), "lab", f"LAB_ARGS={shlex.join(server_options(port))}"]
    with (
        jupyter_server(command, ROOT, tmp_path, port) as (url, token),
        urllib.request.urlopen(f"{url}/lab?token={token}", timeout=30) as response,
    ):
        page = response.read().decode()
    config = json.loads(
        re.search(r'<script id="jupyter-config-data" type="application/json">(.*?)</script>',
                  page, re.DOTALL).group(1)
    )  # fmt: skip
    names = [extension["name"] for extension in config["federated_extensions"]]
    assert "mxnb" in names, names
    if os.getuid() == 0:
        assert "Running as root is not recommended" not in (tmp_path / "jupyterlab.log").read_text()
