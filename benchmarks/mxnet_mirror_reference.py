"""Record MXNet 1.9.1's plan sizes with and without its backward mirroring (run with MXNet, not mxnb).

How ``mxnet_mirror_reference.json`` was produced (one network per process: MXNet
keeps freed memory pooled)::

    for n in resnet18 vgg16 inception_bn lstm; do
        MXNET_SUBGRAPH_BACKEND=NONE MXNET_MKLDNN_ENABLED=0 \\
            /work/mxnet-venv/bin/python benchmarks/mxnet_mirror_reference.py $n
    done

* The networks come from ``mxnb/executor/zoo/``, handed MXNet's ``mx.sym``.
* ``simple_bind(mx.cpu(), grad_req='write', **shapes)`` at batch 32, once with
  ``MXNET_BACKWARD_DO_MIRROR=0`` and once with ``1`` (MXNet's mirror: recompute
  cheap ops, never Dropout nor BatchNorm).
* ``mb`` is ``exe.debug_str()``'s "Total N MB allocated" (N = bytes >> 20).

mxnb never imports mxnet; this script is only run by hand to refresh the data.
"""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path

import mxnet as mx
from mxnet_zoo import load_zoo

HERE = Path(__file__).resolve().parent
OUT = HERE / "mxnet_mirror_reference.json"
BATCH = 32


def main() -> None:
    zoo = load_zoo()
    previous = json.loads(OUT.read_text()) if OUT.exists() else {"runs": []}
    runs = {(r["network"], r["mirror"]): r for r in previous["runs"]}
    for name in sys.argv[1:]:
        for mirror in (0, 1):
            os.environ["MXNET_BACKWARD_DO_MIRROR"] = str(mirror)
            net = zoo.build(name, sym=mx.sym)
            exe = net.simple_bind(mx.cpu(), grad_req="write", **zoo.input_shapes(name, BATCH))
            mb = int(re.search(r"Total (\d+) MB allocated", exe.debug_str()).group(1))
            runs[name, mirror] = {"network": name, "batch": BATCH, "mirror": mirror, "mb": mb}
            print(name, "mirror" if mirror else "plain", mb, "MB", flush=True)
            del exe
            mx.nd.waitall()
    OUT.write_text(
        json.dumps(
            {
                "mxnet_version": mx.__version__,
                "how": "simple_bind(mx.cpu(), grad_req='write'), batch 32, MXNET_BACKWARD_DO_MIRROR "
                "0 / 1; mb from debug_str 'Total N MB allocated'. See "
                "benchmarks/mxnet_mirror_reference.py.",
                "runs": sorted(runs.values(), key=lambda r: (r["network"], r["mirror"])),
            },
            indent=1,
        )
        + "\n"
    )


if __name__ == "__main__":
    main()
