"""Run MXNet 1.x's own unit-test files against mxnb and tally pass / fail by cause.

The procedure (docs/mxnet_unittests.md says more):

1. Put MXNet 1.x test files (``tests/python/unittest/test_*.py`` of apache/mxnet)
   in a directory OUTSIDE this repository (they may not be committed), with
   ``import mxnet as mx`` / ``from mxnet`` changed to ``mxnb`` and nothing else,
   beside the test directory's own ``common.py`` (and ``tests/python/common/models.py``,
   which it imports), imports changed the same way.  This tool fetches nothing.
2. ``python tools/mxnet_unittests/run.py DIR`` runs each file with pytest (a
   timeout per file).  The test directory comes first on the path, then
   ``shims/``: a stand-in for ``nose`` (``nose.tools`` on top of pytest) and, for
   files that have no ``common.py`` beside them, a stand-in for it.  Nothing else
   is replaced: a test that needs Gluon runs against ``mxnb.gluon`` as it is.
3. With ``--oracle-python /tmp/mxvenv/bin/python`` the same files (and
   shims) are first run under real MXNet 1.9.1, with ``mxnb`` written back to
   ``mxnet`` in a scratch copy: only the tests that pass there are counted
   (the files in the index come from several MXNet versions, so some of
   their tests use names 1.9.1 does not have).
4. It prints one line per test, a table per file and a tally by cause;
   ``--json`` writes every result.
5. ``manifest.json`` beside this tool names the files of the published
   measurement with their SHA-256 (after the import change): the tool says
   for each file whether it is that exact text, so a count can be reproduced.
   Its ``out_of_scope`` lists (test -> reason) take tests out of the count;
   they hold only tests that need sparse storage or ``mx.np`` / ``mx.npx``.
6. ``--test-timeout S`` (pytest-timeout, in both pythons) fails one slow test
   instead of losing the whole file to the per-file ``--timeout``.

Causes are read from the failure message (Gluon, sparse storage, ``mx.np``, a
missing attribute, the error type); only the manifest takes a test out.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path
from xml.etree import ElementTree

SHIMS = Path(__file__).resolve().parent / "shims"
MANIFEST = Path(__file__).resolve().parent / "manifest.json"

_CAUSES = [
    (r"gluon|Gluon", "Gluon"),
    (r"NameError: name '(\w+)' is not defined", "missing name: {0}"),
    (r"tostype|stype|row_sparse|csr", "sparse storage"),
    (r"mxnb' has no attribute 'np'|mx\.np\b|_NumpyArrayScope|use_np\b", "mx.np"),
    (r"has no attribute '(\w+)'", "missing API: {0}"),
    (r"cannot import name '(\w+)'", "missing API: {0}"),
    (r"No module named '([\w.]+)'", "missing module: {0}"),
    (r"got an unexpected keyword argument '(\w+)'", "unsupported argument: {0}"),
    (r"Timeout \(|Failed: Timeout", "timeout (one test)"),
    (r"NotSupportedError", "not supported"),
    (r"ShapeError|infer_shape", "shape inference"),
    (r"AssertionError|ToleranceError|assert ", "wrong result / behaviour differs"),
]


def classify(message: str) -> str:
    """The cause of a failure, from its message."""
    for pattern, cause in _CAUSES:
        found = re.search(pattern, message)
        if found:
            return cause.format(*found.groups())
    first = message.strip().splitlines()[0] if message.strip() else "unknown"
    return "error: " + first[:80]


def _exception_lines(message: str, traceback: str) -> str:
    """The exception text of a failure: pytest's message and the ``E`` lines of the traceback.

    The source lines of a traceback are left out: a test that merely mentions
    ``stype`` or ``gluon`` in its code must not be classified by that.
    """
    raised = [line[1:].strip() for line in traceback.splitlines() if line.startswith("E ")]
    return "\n".join([message, *raised])


def run_file(
    path: Path,
    timeout: float,
    python: str = sys.executable,
    shims: Path = SHIMS,
    test_timeout: float = 0.0,
) -> list[dict]:
    """Run one test file; a result per test (a file that does not import: one per test in it).

    ``test_timeout`` (seconds, needs pytest-timeout in ``python``) fails one slow test
    and goes on with the next, instead of losing the whole file to ``timeout``."""
    with tempfile.TemporaryDirectory() as scratch:
        report = Path(scratch) / "report.xml"
        # the test directory first: MXNet's own common.py (and models.py) beside the
        # files win over the stand-in in shims/, kept for files without one
        paths = [str(path.parent), str(shims), os.environ.get("PYTHONPATH", "")]
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in paths if p))
        command = [
            python, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-c", os.devnull,
            "--rootdir", str(path.parent), f"--junitxml={report}", str(path),
        ]  # fmt: skip
        if test_timeout:
            command[3:3] = [f"--timeout={test_timeout:g}"]
        try:
            subprocess.run(command, check=False, env=env, cwd=path.parent, timeout=timeout,
                           capture_output=True, text=True)  # fmt: skip
        except subprocess.TimeoutExpired:
            return [{"file": path.name, "test": "*", "status": "failed", "cause": "timeout"}]
        if not report.exists():
            return [{"file": path.name, "test": "*", "status": "failed", "cause": "no report"}]
        results = []
        for case in ElementTree.parse(report).iter("testcase"):
            name = case.get("name", "?")
            problem = case.find("failure")
            if problem is None:
                problem = case.find("error")
            if case.find("skipped") is not None:
                results.append({"file": path.name, "test": name, "status": "skipped",
                                "cause": "skipped (also skipped under MXNet)"})  # fmt: skip
            elif problem is not None:
                message = _exception_lines(problem.get("message") or "", problem.text or "")
                results.append({"file": path.name, "test": name, "status": "failed",
                                "cause": classify(message)})  # fmt: skip
            else:
                results.append({"file": path.name, "test": name, "status": "passed", "cause": ""})
        if len(results) == 1 and results[0]["test"] in ("", path.stem) or not results:
            return _import_failure(path, results)
        return results


def _import_failure(path: Path, results: list[dict]) -> list[dict]:
    """A file that failed at import: count each test function it defines as failed."""
    cause = results[0]["cause"] if results else "collection error"
    names = re.findall(r"^def (test_\w+)", path.read_text(), flags=re.MULTILINE)
    return [{"file": path.name, "test": n, "status": "failed", "cause": cause} for n in names]


def oracle_passes(
    directory: Path, python: str, timeout: float, test_timeout: float = 0.0
) -> set[tuple[str, str]]:
    """(file, test) pairs that pass under real MXNet: the files and shims with mxnb -> mxnet."""
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        for source, target in ((directory, root / "tests"), (SHIMS, root / "shims")):
            for path in source.rglob("*.py"):
                copy = target / path.relative_to(source)
                copy.parent.mkdir(parents=True, exist_ok=True)
                copy.write_text(re.sub(r"\bmxnb\b", "mxnet", path.read_text()))
        passed, lost = set(), []
        for path in sorted((root / "tests").glob("test_*.py")):
            for result in run_file(path, timeout, python, root / "shims", test_timeout):
                if result["status"] == "passed":
                    passed.add((result["file"], result["test"]))
                elif result["test"] == "*":
                    lost.append(result["file"])
        if lost:  # none of their tests would be counted: the count would shrink unsaid
            raise SystemExit(
                f"the oracle ran past --timeout {timeout:g} s on {', '.join(lost)}: none of "
                f"their tests could be counted; run again with a larger --timeout (e.g. 1800)"
            )
        return passed


def whole_file_failures(results: list[dict], passing: set[tuple[str, str]]) -> list[dict]:
    """A file mxnb ran past ``--timeout`` fails each of its tests that passes under MXNet.

    Its one ``'*'`` result is not a test the oracle knows, so without this the file's
    tests would leave the count instead of failing in it.
    """
    timed_out = {r["file"] for r in results if r["test"] == "*"}
    kept = [r for r in results if r["test"] != "*"]
    for file, test in sorted(pair for pair in passing if pair[0] in timed_out):
        kept.append({"file": file, "test": test, "status": "failed", "cause": "timeout (file)"})
    return kept


def check_manifest(directory: Path, manifest: Path = MANIFEST) -> list[str]:
    """One line per file: does it match the text the published measurement used?"""
    known = json.loads(manifest.read_text()) if manifest.exists() else {}
    lines = []
    for path in sorted(directory.glob("test_*.py")):
        digest = hashlib.sha256(path.read_bytes()).hexdigest()
        entry = known.get(path.name)
        if entry is None:
            lines.append(f"{path.name}: not in the manifest (not part of the published count)")
        elif entry["sha256"] != digest:
            lines.append(f"{path.name}: DIFFERS from the manifest's text ({entry['source']})")
        else:
            lines.append(f"{path.name}: matches the manifest")
    lines += [f"{name}: in the manifest but missing here" for name in sorted(known)
              if not (directory / name).exists()]  # fmt: skip
    return lines


def out_of_scope(results: list[dict], manifest: Path = MANIFEST) -> list[dict]:
    """Mark the tests the manifest lists under ``out_of_scope`` (with the reason) for a file."""
    known = json.loads(manifest.read_text()) if manifest.exists() else {}
    for result in results:
        reason = known.get(result["file"], {}).get("out_of_scope", {}).get(result["test"])
        if reason:
            result["status"], result["cause"] = "out of scope", f"out of scope: {reason}"
    return results


def per_file(results: list[dict]) -> list[str]:
    """A table: counted / passed / failed per file."""
    files = sorted({result["file"] for result in results})
    rows = [f"{'file':28s} {'counted':>7s} {'passed':>6s} {'failed':>6s}"]
    for name in files:
        mine = [r for r in results if r["file"] == name]
        passed = sum(r["status"] == "passed" for r in mine)
        failed = sum(r["status"] == "failed" for r in mine)
        rows.append(f"{name:28s} {len(mine):7d} {passed:6d} {failed:6d}")
    return rows


def _oracle(args: argparse.Namespace) -> set[tuple[str, str]]:
    """The (file, test) pairs passing under MXNet: from ``--oracle-cache``, or run and cached."""
    if args.oracle_cache and args.oracle_cache.exists():
        return {tuple(pair) for pair in json.loads(args.oracle_cache.read_text())}
    if not args.oracle_python:
        raise SystemExit("--oracle-cache does not exist yet: give --oracle-python to make it")
    passing = oracle_passes(args.directory, args.oracle_python, args.timeout, args.test_timeout)
    if args.oracle_cache:
        args.oracle_cache.write_text(json.dumps(sorted(passing), indent=1))
    return passing


def main() -> None:
    """Command line: ``run.py DIR [--timeout S] [--json OUT]``."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("directory", type=Path)
    parser.add_argument("--timeout", type=float, default=1800.0, help="seconds per file")
    parser.add_argument("--test-timeout", type=float, default=0.0,
                        help="seconds per test (pytest-timeout); 0: none")  # fmt: skip
    parser.add_argument("--json", type=Path, help="write every result to this file")
    parser.add_argument("--oracle-python", help="count only tests passing under this MXNet python")
    parser.add_argument(
        "--oracle-cache",
        type=Path,
        help="file keeping the oracle's passing tests: read if present, else written",
    )
    args = parser.parse_args()
    for line in check_manifest(args.directory):
        print(line)
    results = []
    for path in sorted(args.directory.glob("test_*.py")):
        results += run_file(path, args.timeout, test_timeout=args.test_timeout)
    if args.oracle_python or args.oracle_cache:
        passing = _oracle(args)
        results = whole_file_failures(results, passing)
        excluded = [r for r in results if (r["file"], r["test"]) not in passing]
        results = [r for r in results if (r["file"], r["test"]) in passing]
        print(f"{len(excluded)} tests do not pass under MXNet itself; counted: {len(results)}")
    results = out_of_scope(results)
    scoped = [r for r in results if r["status"] == "out of scope"]
    results = [r for r in results if r["status"] != "out of scope"]
    print(f"{len(scoped)} more are out of scope (manifest.json lists them with the reason)")
    for result in results:
        print(f"{result['status']:8s} {result['file']}::{result['test']}  {result['cause']}")
    print()
    for row in per_file(results):
        print(row)
    status = Counter(result["status"] for result in results)
    causes = Counter(result["cause"] for result in results if result["status"] == "failed")
    print(f"\n{status['passed']} passed, {status['failed']} failed, "
          f"{status['skipped']} skipped of {len(results)}")  # fmt: skip
    for cause, count in causes.most_common():
        print(f"  {count:4d}  {cause}")
    if args.json:
        args.json.write_text(json.dumps(results + scoped, indent=1))


if __name__ == "__main__":
    main()
