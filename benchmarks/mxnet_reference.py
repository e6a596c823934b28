"""Record MXNet 1.9.1's own memory plan sizes for the zoo networks (run with MXNet, not mxnb).

How the reference figures in ``mxnet_reference.json`` were produced::

    python3 -m venv /tmp/mxvenv
    /tmp/mxvenv/bin/pip install mxnet==1.9.1 'numpy<1.24'
    MXNET_SUBGRAPH_BACKEND=NONE MXNET_MKLDNN_ENABLED=0 \
        /tmp/mxvenv/bin/python benchmarks/mxnet_reference.py

* The networks come from ``mxnb/executor/zoo/`` itself, loaded by path and
  handed MXNet's ``mx.sym`` — the same graph, node for node.  ``lstm_lm`` is
  the language model MXNet's ``mx.rnn`` exported (two LSTMCell(200), 35 steps,
  zero begin states of shape (0, 200)): ``tests/rnn/data/lstm_lm-symbol.json``,
  written by ``tests/rnn/data/make_lstm_lm.py``.
* ``simple_bind(mx.cpu(), grad_req='null' | 'write', **shapes)``: MXNet's
  GraphExecutor plans memory (nnvm PlanMemory, default match range 16).
  Subgraph fusion and MKLDNN are switched off so the graph is the plain one.
* ``mb`` is what ``exe.debug_str()`` prints: "Total N MB allocated", N the
  floor of the bytes of its data pool over 2**20.
* ``bytes`` is exact: a monitor callback (``monitor_all=True``) sees every
  node's inputs and outputs during one forward (+ backward) pass; entries
  whose data pointer is the same live in the same pool block, and the
  block's size is the largest entry in it; external arrays (arguments,
  gradients, aux states) are left out.  Recorded where running the network
  is cheap; elsewhere ``bytes`` is None and ``mb`` is the figure.  The
  LSTM's exact inference figures were taken the same way by hand
  (running its backward under the monitor grew past 3 GB in MXNet and was
  stopped).

mxnb never imports mxnet; this script is only run by hand to refresh the data.
"""

from __future__ import annotations

import ctypes
import json
import os
import re
import sys
from pathlib import Path

import mxnet as mx
import numpy as np
from mxnet_zoo import load_zoo

HERE = Path(__file__).resolve().parent
OUT = HERE / "mxnet_reference.json"

NETWORKS = (
    "mlp", "lenet", "alexnet", "vgg16", "resnet18", "resnet50", "inception_bn", "inception_v3",
    "lstm", "lstm_lm",
)  # fmt: skip
LSTM_LM = HERE.parent / "tests" / "rnn" / "data" / "lstm_lm-symbol.json"
BATCHES = (1, 32, 64)
CHEAP = {"mlp", "lenet"}  # run fully at every batch for exact bytes


def data_pointer(array) -> tuple[int, int]:
    pointer = ctypes.c_void_p()
    mx.base._LIB.MXNDArrayGetData(array.handle, ctypes.byref(pointer))
    return pointer.value or 0, int(np.prod(array.shape)) * np.dtype(array.dtype).itemsize


def exact_bytes(exe, shapes, training) -> int:
    external = set()
    for group in (exe.arg_arrays, exe.grad_arrays, exe.aux_arrays):
        for array in group:
            if array is not None:
                external.add(data_pointer(array)[0])
    blocks: dict[int, int] = {}

    def callback(name, handle):
        array = mx.nd.NDArray(ctypes.cast(handle, mx.base.NDArrayHandle), writable=False)
        pointer, nbytes = data_pointer(array)
        if pointer and pointer not in external:
            blocks[pointer] = max(blocks.get(pointer, 0), nbytes)

    exe.set_monitor_callback(callback, monitor_all=True)
    for name, array in exe.arg_dict.items():
        if name.endswith("label"):
            array[:] = 0
        else:
            array[:] = np.random.uniform(-0.1, 0.1, array.shape)
    exe.forward(is_train=training)
    if training:
        exe.backward()
    mx.nd.waitall()
    # head gradients are handed in by the user; they are external too
    return sum(blocks.values())


def exact_lm(name: str, mode: str) -> bool:
    """Whether to measure exactly: the exported LM's inference pass, at every batch.

    Its backward under the monitor grows past gigabytes, as the zoo LSTM's does.
    """
    return name == "lstm_lm" and mode == "inference"


def save(runs: dict) -> None:
    results = {
        "mxnet_version": mx.__version__,
        "how": (
            "MXNET_SUBGRAPH_BACKEND=NONE MXNET_MKLDNN_ENABLED=0; simple_bind(mx.cpu(), "
            "grad_req='null' (inference) or 'write' (training)); mb from debug_str 'Total N MB "
            "allocated'; bytes exact from data pointers seen by a monitor_all callback "
            "(None where not measured). See benchmarks/mxnet_reference.py."
        ),
        "environment": {
            key: os.environ.get(key) for key in ("MXNET_SUBGRAPH_BACKEND", "MXNET_MKLDNN_ENABLED")
        },
        "runs": sorted(
            runs.values(), key=lambda r: (NETWORKS.index(r["network"]), r["batch"], r["mode"])
        ),
    }
    OUT.write_text(json.dumps(results, indent=1) + "\n")


def main() -> None:
    """Measure the networks named on the command line (default all), one bind at a time.

    Run one network per process (``for n in mlp lenet ...; do python ... $n; done``):
    MXNet keeps freed memory pooled, and the large networks bind gigabytes.
    """
    zoo = load_zoo()
    only = sys.argv[1:] or list(NETWORKS)
    previous = json.loads(OUT.read_text()) if OUT.exists() else {"runs": []}
    runs = {(r["network"], r["batch"], r["mode"]): r for r in previous["runs"]}
    for name in only:
        for batch in BATCHES:
            for mode in ("inference", "training"):
                training = mode == "training"
                if name == "lstm_lm":
                    net = mx.sym.load(str(LSTM_LM))
                    shapes = {"data": (batch, 35), "softmax_label": (batch, 35)}
                else:
                    net = zoo.build(name, sym=mx.sym)
                    shapes = zoo.input_shapes(name, batch)
                req = "write" if training else "null"
                exe = net.simple_bind(mx.cpu(), grad_req=req, **shapes)
                text = exe.debug_str()
                mb = int(re.search(r"Total (\d+) MB allocated", text).group(1))
                exact = None
                if name in CHEAP or (batch == 1 and "lstm" not in name) or exact_lm(name, mode):
                    exact = exact_bytes(exe, shapes, training)
                del exe
                mx.nd.waitall()
                runs[name, batch, mode] = {
                    "network": name,
                    "batch": batch,
                    "mode": mode,
                    "mb": mb,
                    "bytes": exact,
                }
                print(name, batch, mode, mb, exact, flush=True)
                save(runs)


if __name__ == "__main__":
    main()
