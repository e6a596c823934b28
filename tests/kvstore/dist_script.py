"""A worker of the launcher tests, run by mxnb.launch.

``python dist_script.py train``: 3 sync steps, then print the pulled value.
``python dist_script.py die PIDFILE``: rank 0 writes its pid to PIDFILE and
sleeps for 10 minutes (the launcher must stop it); rank 1 then exits with code 3.
"""

import os
import sys
import time

import mxnb as mx

kv = mx.kv.create("dist_sync")
kv.init("w", mx.nd.zeros(2))
if sys.argv[1] == "die":
    if kv.rank == 1:
        for _ in range(600):  # die once rank 0 is surely running
            if os.path.exists(sys.argv[2]):
                os._exit(3)
            time.sleep(0.1)
        os._exit(4)
    with open(sys.argv[2] + ".tmp", "w") as stream:
        stream.write(str(os.getpid()))
    os.replace(sys.argv[2] + ".tmp", sys.argv[2])
    time.sleep(600)
out = mx.nd.zeros(2)
for _ in range(3):
    kv.push("w", mx.nd.ones(2) * (kv.rank + 1))
    kv.pull("w", out=out)
    out.wait_to_read()
print(f"rank {kv.rank} of {kv.num_workers}: w = {out.asnumpy().tolist()}", flush=True)
