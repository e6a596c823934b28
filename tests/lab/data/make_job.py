"""Write ``dist_sync-cluster.json``: notebook 10's 2-worker, 1-server ``dist_sync`` job, traced.

The worker script is notebook 10's own (cut out of ``notebooks/src/10_distributed_kvstore.py``);
it runs under ``python -m mxnb.launch -n 2 -s 1`` (a private Ray instance, about 30 s) and
rank 0 saves the merged ``ClusterTrace``.  The lab test turns it into the job's chrome trace
(``ClusterTrace.to_chrome_trace``: 3 processes, kvstore push / update / pull slices and their
flow arrows) for the trace viewer.  Run from the repository root::

    python tests/lab/data/make_job.py
"""

from __future__ import annotations

import pathlib
import re
import shutil
import subprocess
import sys
import tempfile
import textwrap

HERE = pathlib.Path(__file__).parent
ROOT = HERE.parents[2]


def main() -> None:
    source = (ROOT / "notebooks" / "src" / "10_distributed_kvstore.py").read_text()
    worker = re.search(r'WORKER = textwrap.dedent\(\n    """(.*?)"""', source, re.S)
    assert worker, "notebook 10 has no WORKER script"
    with tempfile.TemporaryDirectory(prefix="mxnb-dist-") as folder:
        script = pathlib.Path(folder) / "worker.py"
        script.write_text(textwrap.dedent(worker.group(1)))
        command = [sys.executable, "-m", "mxnb.launch", "-n", "2", "-s", "1", "--timeout", "60"]
        subprocess.run([*command, sys.executable, str(script), folder], check=True, timeout=240)
        shutil.copy(pathlib.Path(folder) / "dist_sync.json", HERE / "dist_sync-cluster.json")


if __name__ == "__main__":
    main()
