"""Run a notebook's text source as a script and lint every trace it records.

Usage: ``python notebook_traces.py notebooks/src/NN_name.py`` prints one JSON
line: per trace the notebook made (in order), the rules of its findings.
Used by ``test_lint.py`` (in a subprocess per notebook: a fresh engine each).
"""

from __future__ import annotations

import json
import os
import pathlib
import runpy
import sys
import tempfile

os.environ.setdefault("MPLBACKEND", "Agg")

import mxnb as mx
from mxnb import engine

traces: list[mx.engine.Trace] = []


def _recording_trace() -> mx.engine.Trace:
    trace = mx.engine.Trace()
    traces.append(trace)
    return trace


def main(source: str) -> None:
    engine.trace = _recording_trace  # every `mx.engine.trace()` the notebook makes
    path = pathlib.Path(source).resolve()
    with tempfile.TemporaryDirectory(prefix="mxnb-lint-") as folder:
        os.chdir(folder)
        runpy.run_path(str(path), run_name="__main__")
    findings = [mx.engine.lint(trace) for trace in traces]
    for index, found in enumerate(findings):
        for finding in found:
            print(f"trace {index}: {finding.rule}: {finding.message}", file=sys.stderr)
    report = [[f.rule for f in found] for found in findings]
    print(json.dumps(report))


if __name__ == "__main__":
    main(sys.argv[1])
