"""Export a ``symbols/resnet.py``-style ResNet-50 training graph with MXNet 1.9.1 (run with MXNet).

Held-out test data for the recomputation planners (:mod:`mxnb.executor.milp`):
the pre-activation ResNet of MXNet's ``example/image-classification/symbols/resnet.py``
with bottleneck units, a depth and a unit nobody tuned the planners on (they
were tuned on ResNet-18's basic units).  The builder is the zoo's
(``mxnb/executor/zoo/cnn.py``, loaded by path through ``benchmarks/mxnet_zoo.py``
so that nothing of mxnb is imported) handed MXNet's ``mx.sym``: MXNet builds
the graph and writes the JSON.  How the files beside this script were produced::

    MXNET_SUBGRAPH_BACKEND=NONE MXNET_MKLDNN_ENABLED=0 \\
        /tmp/mxvenv/bin/python tests/executor/data/export_symbols_resnet.py

* ``resnet50_v2_train-symbol.json``: ``resnet(50, num_classes=1000, sym=mx.sym)``,
  ending in ``SoftmaxOutput`` (``softmax_label``), as ``tojson()`` writes it;
* ``resnet50_v2_train-mxnet.json``: MXNet's own plan of it at batch 32 (data and
  label without gradients), "Total N MB allocated" with ``MXNET_BACKWARD_DO_MIRROR``
  0 and 1, measured as :mod:`export_gluon_models` measures the Gluon models.

mxnb never imports mxnet; this script is only run by hand to refresh the data.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[2] / "benchmarks"))
NAME = "resnet50_v2"


def export() -> None:
    """Write ``resnet50_v2_train-symbol.json``."""
    import mxnet as mx
    from mxnet_zoo import load_zoo

    sym = load_zoo().resnet(50, num_classes=1000, sym=mx.sym)
    (HERE / f"{NAME}_train-symbol.json").write_text(sym.tojson())


def main() -> None:
    from export_gluon_models import BATCH, mxnet_plan_mb

    if len(sys.argv) == 3:  # a child: one figure
        print(mxnet_plan_mb(sys.argv[2]))
        return
    export()
    figures = {}
    for mirror in ("0", "1"):
        env = dict(os.environ, MXNET_BACKWARD_DO_MIRROR=mirror)
        out = subprocess.run([sys.executable, __file__, "plan", NAME], env=env,
                             capture_output=True, text=True, check=True).stdout  # fmt: skip
        figures[f"mirror_{mirror}_mb"] = int(out.strip().splitlines()[-1])
    record = {"mxnet_version": __import__("mxnet").__version__, "network": NAME,
              "batch": BATCH, "data": [BATCH, 3, 224, 224], **figures,
              "how": "symbols/resnet.py-style resnet(50) built by MXNet from mxnb's zoo builder; "
                     "simple_bind(mx.cpu()), data/label grad_req 'null', the rest 'write'; "
                     "debug_str 'Total N MB allocated'"}  # fmt: skip
    (HERE / f"{NAME}_train-mxnet.json").write_text(json.dumps(record, indent=1) + "\n")
    print(NAME, figures)


if __name__ == "__main__":
    main()
