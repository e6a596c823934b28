"""The wheel carries the prebuilt lab extension once, where JupyterLab finds it.

``make labextension`` builds the bundle into ``mxnb/labextension/``; the wheel
ships it as data files in ``share/jupyter/labextensions/mxnb`` and, since
``pyproject.toml`` excludes it from the package data, not a second time as
``mxnb/labextension`` inside the package.
"""

from __future__ import annotations

import pathlib
import shutil
import subprocess
import sys
import zipfile

import pytest

ROOT = pathlib.Path(__file__).parents[2]
BUNDLE = ROOT / "mxnb" / "labextension"
DATA = "share/jupyter/labextensions/mxnb/"


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_the_wheel_carries_the_extension_bundle_once(tmp_path):
    built = sorted(p.relative_to(BUNDLE).as_posix() for p in BUNDLE.rglob("*") if p.is_file())
    built = [name for name in built if name != ".built"]  # make's stamp, not part of the bundle
    assert "package.json" in built, f"no extension built in {BUNDLE}: run `make labextension`"
    command = [
        sys.executable,
        "-m",
        "pip",
        "wheel",
        str(ROOT),
        "--no-deps",
        "-q",
        "-w",
        str(tmp_path),
    ]
    leftover = ROOT / "build"  # setuptools builds in the tree: leave it as it was
    existed = leftover.exists()
    try:
        run = subprocess.run(command, capture_output=True, text=True, timeout=540, check=False)
    finally:
        if not existed:
            shutil.rmtree(leftover, ignore_errors=True)
    assert run.returncode == 0, run.stdout + run.stderr
    (wheel,) = tmp_path.glob("mxnb-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    shipped = sorted(n.split(DATA, 1)[1] for n in names if DATA in n)
    assert shipped == built
    assert [n for n in names if n.startswith("mxnb/labextension")] == []
    assert "mxnb/widgets/static/canvas.js" in names  # the cell widgets' front end stays
