"""Export Gluon's ``resnet18_v1`` and ``vgg16`` training graphs with MXNet 1.9.1 (run with MXNet).

Held-out test data for the recomputation planners (:mod:`mxnb.executor.milp`):
graphs MXNet itself wrote, which nobody tuned the planners on.  How the files
beside this script were produced::

    python3 -m venv /tmp/mxvenv && /tmp/mxvenv/bin/pip install mxnet==1.9.1 'numpy<1.24'
    MXNET_SUBGRAPH_BACKEND=NONE MXNET_MKLDNN_ENABLED=0 \\
        /tmp/mxvenv/bin/python tests/executor/data/export_gluon_models.py

* ``mx.gluon.model_zoo.vision.get_model(name, pretrained=False)`` (no download),
  initialised, hybridised, run once on a (1, 3, 224, 224) batch and exported:
  ``<name>-symbol.json`` (the ``.params`` file is not kept).
* The training graph wraps the exported output in ``SoftmaxOutput`` with a
  ``softmax_label`` variable, as MXNet's Module trains it:
  ``<name>_train-symbol.json``.  Data and label take no gradient.
* ``<name>_train-mxnet.json`` records MXNet's own plan of the training graph at
  batch 32: ``simple_bind(mx.cpu(), grad_req={params: 'write', data/label: 'null'})``,
  "Total N MB allocated" from ``debug_str()``, with ``MXNET_BACKWARD_DO_MIRROR`` 0 and 1
  (one process per setting: MXNet reads the variable once).

mxnb never imports mxnet; this script is only run by hand to refresh the data.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
MODELS = ("resnet18_v1", "vgg16")
BATCH = 32


def export(name: str) -> None:
    """Write ``<name>_train-symbol.json`` (and the inference ``<name>-symbol.json``)."""
    import mxnet as mx

    net = mx.gluon.model_zoo.vision.get_model(name, pretrained=False)
    net.initialize(mx.init.Xavier())
    net.hybridize()
    net(mx.nd.zeros((1, 3, 224, 224)))
    with tempfile.TemporaryDirectory() as tmp:
        net.export(os.path.join(tmp, name))
        (HERE / f"{name}-symbol.json").write_text(Path(tmp, f"{name}-symbol.json").read_text())
    sym = mx.sym.load(str(HERE / f"{name}-symbol.json"))
    train = mx.sym.SoftmaxOutput(sym, mx.sym.Variable("softmax_label"), name="softmax")
    (HERE / f"{name}_train-symbol.json").write_text(train.tojson())


def mxnet_plan_mb(name: str) -> int:
    """MXNet's "Total N MB allocated" for the training graph at batch 32 (this process's mirror)."""
    import mxnet as mx

    sym = mx.sym.load(str(HERE / f"{name}_train-symbol.json"))
    req = {arg: "write" for arg in sym.list_arguments()}
    req["data"] = req["softmax_label"] = "null"
    exe = sym.simple_bind(mx.cpu(), grad_req=req, data=(BATCH, 3, 224, 224),
                          softmax_label=(BATCH,))  # fmt: skip
    return int(re.search(r"Total (\d+) MB allocated", exe.debug_str()).group(1))


def main() -> None:
    if len(sys.argv) == 3:  # a child: one figure
        print(mxnet_plan_mb(sys.argv[2]))
        return
    for name in MODELS:
        export(name)
        figures = {}
        for mirror in ("0", "1"):
            env = dict(os.environ, MXNET_BACKWARD_DO_MIRROR=mirror)
            out = subprocess.run([sys.executable, __file__, "plan", name], env=env,
                                 capture_output=True, text=True, check=True).stdout  # fmt: skip
            figures[f"mirror_{mirror}_mb"] = int(out.strip().splitlines()[-1])
        record = {"mxnet_version": __import__("mxnet").__version__, "network": name,
                  "batch": BATCH, "data": [BATCH, 3, 224, 224], **figures,
                  "how": "simple_bind(mx.cpu()), data/label grad_req 'null', the rest 'write'; "
                         "debug_str 'Total N MB allocated'"}  # fmt: skip
        (HERE / f"{name}_train-mxnet.json").write_text(json.dumps(record, indent=1) + "\n")
        print(name, figures)


if __name__ == "__main__":
    main()
