"""Start a JupyterLab server for the tests in this folder: free port, private config, clean stop.

``jupyter_server(command, cwd, tmp_path)`` starts ``command`` (a JupyterLab, or
``make lab`` that runs one) in its own process group with Jupyter's config,
runtime, settings and workspace folders under ``tmp_path``, waits until
``/api/status`` answers, yields ``(url, token)`` and stops the whole group.
The command gets the port and token from :func:`server_options`.
"""

from __future__ import annotations

import contextlib
import os
import pathlib
import signal
import socket
import subprocess
import time
import urllib.request
from collections.abc import Iterator

import pytest

TOKEN = "mxnb-lab-test"


def free_port() -> int:
    """A TCP port of 127.0.0.1 nobody listens on now."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def server_options(port: int) -> list[str]:
    """jupyter lab options: no browser, 127.0.0.1:``port`` only, the test token, no news."""
    return [
        "--no-browser", "--ip=127.0.0.1", f"--port={port}", f"--ServerApp.token={TOKEN}",
        "--ServerApp.port_retries=0", "--LabApp.news_url=",
        "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
    ]  # fmt: skip


def _environment(tmp_path: pathlib.Path) -> dict[str, str]:
    env = dict(os.environ, MPLBACKEND="Agg", JUPYTER_CONFIG_DIR=str(tmp_path / "config"))
    env["JUPYTER_RUNTIME_DIR"] = str(tmp_path / "runtime")
    env["JUPYTERLAB_SETTINGS_DIR"] = str(tmp_path / "settings")
    env["JUPYTERLAB_WORKSPACES_DIR"] = str(tmp_path / "workspaces")
    news = tmp_path / "settings" / "@jupyterlab" / "apputils-extension"
    news.mkdir(parents=True, exist_ok=True)  # no "get notified about Jupyter news?" toast
    (news / "notification.jupyterlab-settings").write_text('{"fetchNews": "false"}')
    return env


@contextlib.contextmanager
def jupyter_server(
    command: list[str], cwd: pathlib.Path, tmp_path: pathlib.Path, port: int, wait: float = 120
) -> Iterator[tuple[str, str]]:
    """Run ``command`` until the server on ``port`` answers; yield (url, token); stop it."""
    log_path = tmp_path / "jupyterlab.log"
    log = open(log_path, "w")  # noqa: SIM115 - closed below
    server = subprocess.Popen(
        command, cwd=cwd, env=_environment(tmp_path), stdout=log, stderr=subprocess.STDOUT,
        start_new_session=True,  # its own process group: make and the jupyter it starts
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + wait
        while True:
            try:
                with urllib.request.urlopen(f"{url}/api/status?token={TOKEN}", timeout=5):
                    break
            except OSError:
                if server.poll() is not None or time.monotonic() > deadline:
                    pytest.fail(f"JupyterLab did not start: {command}\n{log_path.read_text()}")
                time.sleep(0.5)
        yield url, TOKEN
    finally:
        _stop(server)
        log.close()


def _stop(server: subprocess.Popen) -> None:
    for sig, grace in ((signal.SIGTERM, 20), (signal.SIGKILL, 10)):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(server.pid, sig)
        try:
            server.wait(timeout=grace)
            return
        except subprocess.TimeoutExpired:
            continue
