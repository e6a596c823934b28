"""Run the hostile-case suite: every case in its own process, bounded in memory and time.

Idea: a hostile input must end in a clear error (or the right result), never
in a hang, a memory bomb, a crash of the interpreter or a silent wrong
result.  Each case of :mod:`cases` runs in a fresh ``python`` process, so one
case cannot poison the next; a case marked ``bomb`` gets an address-space
limit (``resource.setrlimit(RLIMIT_AS)`` in the child), and every case a
wall-clock limit: a case still running at its limit counts as a failure
("hang").

Rule: a case passes when its function returns; it fails when it raises
(``AssertionError``: the behaviour is wrong; anything else: an unexpected
error), exits by a signal or runs out of memory or time.

Usage::

    python tools/hostile/run.py                   # every case, a table, exit 1 if any fails
    python tools/hostile/run.py --fast            # the cases not marked slow (what make test runs)
    python tools/hostile/run.py --json out.json   # also write the results
    PYTHONPATH=/path/to/other/tree python tools/hostile/run.py   # test another mxnb checkout
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)

import cases as _cases  # noqa: E402 -- the cases module lives beside this script

BOMB_LIMIT_BYTES = 3 << 30  # address space of a bomb case: generous for numpy, far below a bomb


@dataclass
class Result:
    """One case's outcome."""

    name: str
    kind: str  # the class of hostile input
    passed: bool
    detail: str  # why it failed ('' when it passed)
    seconds: float


def _limit_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (BOMB_LIMIT_BYTES, BOMB_LIMIT_BYTES))


def run_case(name: str) -> Result:
    """Run case ``name`` in a child process and judge it."""
    spec = _cases.CASES[name]
    # the mxnb under test: PYTHONPATH when given (another checkout), else this repository's
    # the child's cwd (no `mxnb` there shadows the one under test) and its TMPDIR, so that
    # every scratch file a case makes goes where it is removed afterwards
    workdir = tempfile.mkdtemp(prefix="mxnb-hostile-")
    env = {**os.environ, "PYTHONPATH": os.environ.get("PYTHONPATH") or REPO, "TMPDIR": workdir}
    try:
        return _judge(name, spec, env, workdir)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def _judge(name: str, spec: _cases.Case, env: dict[str, str], workdir: str) -> Result:
    """Run case ``name``'s child in ``workdir`` and read its verdict."""
    start = time.monotonic()
    try:
        child = subprocess.run(
            [sys.executable, os.path.join(HERE, "run.py"), "--child", name],
            env=env,
            cwd=workdir,
            check=False,
            capture_output=True,
            text=True,
            timeout=spec.timeout,
            start_new_session=True,
        )
    except subprocess.TimeoutExpired:
        return Result(
            name, spec.kind, False, f"hang: still running after {spec.timeout} s", spec.timeout
        )
    seconds = round(time.monotonic() - start, 2)
    lines = [line for line in child.stdout.splitlines() if line.startswith("HOSTILE ")]
    if child.returncode == 0 and lines and lines[-1] == "HOSTILE PASS":
        return Result(name, spec.kind, True, "", seconds)
    if lines and lines[-1].startswith("HOSTILE FAIL "):
        return Result(name, spec.kind, False, lines[-1][len("HOSTILE FAIL ") :], seconds)
    tail = (child.stderr.strip().splitlines() or ["(no output)"])[-1]
    return Result(name, spec.kind, False, f"exit {child.returncode}: {tail[:300]}", seconds)


def _child(name: str) -> int:
    """Inside the child: run one case and print its verdict on stdout."""
    spec = _cases.CASES[name]
    if spec.bomb:
        _limit_memory()
    try:
        spec.function()
    except AssertionError as exc:
        print(f"HOSTILE FAIL wrong behaviour: {exc}"[:600].replace("\n", " "), flush=True)
        return 1
    except BaseException as exc:  # noqa: BLE001 - every escape is a verdict
        message = f"HOSTILE FAIL unexpected {type(exc).__name__}: {exc}"
        print(message[:600].replace("\n", " "), flush=True)
        return 1
    print("HOSTILE PASS", flush=True)
    return 0


def run_all(names: list[str], workers: int = 2) -> list[Result]:
    """Run ``names`` with ``workers`` cases at a time; results in the order of ``names``."""
    with concurrent.futures.ThreadPoolExecutor(workers) as pool:
        return list(pool.map(run_case, names))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--fast", action="store_true", help="skip the cases marked slow")
    parser.add_argument("--json", help="write the results to this file")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("names", nargs="*", help="cases to run (default: all)")
    args = parser.parse_args(argv)
    if args.child:
        return _child(args.child)
    names = args.names or [n for n, s in _cases.CASES.items() if not (args.fast and s.slow)]
    results = run_all(names, args.workers)
    width = max(len(r.name) for r in results)
    for r in results:
        verdict = "pass" if r.passed else "FAIL"
        print(f"{r.name:<{width}}  {verdict}  {r.seconds:6.2f}s  {r.detail}")
    failed = sum(not r.passed for r in results)
    print(f"{len(results) - failed} passed, {failed} failed")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as handle:
            json.dump([asdict(r) for r in results], handle, indent=1)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
