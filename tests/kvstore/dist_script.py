"""A worker of the launcher tests: ``python dist_script.py train|die`` (run by mxnb.launch)."""

import os
import sys

import mxnb as mx

kv = mx.kv.create("dist_sync")
kv.init("w", mx.nd.zeros(2))
out = mx.nd.zeros(2)
for step in range(3):
    if sys.argv[1] == "die" and kv.rank == 1 and step == 1:
        os._exit(3)
    kv.push("w", mx.nd.ones(2) * (kv.rank + 1))
    kv.pull("w", out=out)
    out.wait_to_read()
print(f"rank {kv.rank} of {kv.num_workers}: w = {out.asnumpy().tolist()}", flush=True)
