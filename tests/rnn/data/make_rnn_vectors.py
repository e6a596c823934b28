"""Run the ``mx.rnn`` cases of ``tests/rnn/rnn_cases.py`` under MXNet 1.9.1 and save the results.

    /work/mxnet-venv/bin/python tests/rnn/data/make_rnn_vectors.py

(with the default oneDNN build: under ``MXNET_MKLDNN_ENABLED=0`` MXNet 1.9.1's
own ``RNN`` operator fails its input / output count checks.)

Writes ``rnn_cells.npz``: for each case, its outputs (``CASE/out0`` ...),
its argument names (``CASE/arguments``) and, for training cases, the
gradient of every argument (``CASE/grad:NAME``).  Run by hand; the tests
only read the file.
"""

import sys
from pathlib import Path

import mxnet as mx
import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from rnn_cases import CASES, run

if __name__ == "__main__":
    record = {}
    for name in CASES:
        for key, value in run(mx, name).items():
            record[f"{name}/{key}"] = value
        print(name, "done")
    np.savez_compressed(HERE / "rnn_cells.npz", **record)
    print("wrote", HERE / "rnn_cells.npz")
