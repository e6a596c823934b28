"""Engine benchmark: microseconds per tiny op, two-chain matmul speedup, tracing cost.

Figures, not tests.  Every figure is printed beside a peer measured in the
same run: ``concurrent.futures.ThreadPoolExecutor(2)`` (submit + run + wait,
no dependency tracking at all) and a plain Python loop calling the function.

Workloads (N tiny no-op functions each, timed from the first push to the end
of ``wait_for_all``):
    independent   every op writes its own var
    chain         every op writes the same var (each waits for the previous)
    fan           one writer, N-2 readers of its var, one writer after them

Targets (issue 2): threaded engines <= 0.3x TPE per op, naive <= 0.15x,
two independent chains of 1500x1500 float64 matmuls >= 1.8x faster than in
sequence (BLAS pinned to one thread, run in a subprocess), tracing adds <=
0.6 us per op (measured on a chain, with the engine's threads on one core and
on all cores: see ``tracing_cost``).

Issue 15 adds the reference engine (``reference_engine.py``: the rule, a
lock, a ready queue, two workers, in plain Python) as the yardstick: naive
<= 1.3x its naive form, threaded engines <= 1.5x its threaded form, as
medians of interleaved rounds (:func:`versus_reference`).

The reference tables are in CPU time of all threads (``time.process_time``,
the figure to trust on a shared machine) and in wall time.

Issue 15's last two targets (engine4, load 11-20 on the 2 shared cores; CPU
time, medians of interleaved rounds, ``--against main`` in the same run):

* naive vs the reference's naive form, independent / chain / fan: 1.05x /
  1.11x / 1.09x, before 1.33x / 1.56x / 1.54x (after/before 0.81x / 0.72x /
  0.74x; the worst workload's median in four more runs: 1.08-1.18x).  ``push_sync`` on one var
  takes ``IdleFastPath.push_sync_one_var`` (checks, booking and release
  in one function; the run shared with the other form, ``_run_booked``,
  which measured +0.00-0.06x in the same rounds: 1.09-1.19x after).
  Target 1.3x: met.
* tracing adds, chain, threaded_per_device: 0.74 us/op on one core and 0.62 on
  all cores, before 0.87 / 0.75; naive 0.60 / 0.63, before 0.60 / 0.61.  A
  worker no longer calls ``record_start`` for an op its predecessor's end
  started, and ``record_end`` tests a chain's link first.  Target 0.6 us:
  naive at it, threaded_per_device still 0.1 over (the two records an op
  writes cost the same on both engines; the rest is the two threads
  sharing one core).  As a ratio to ThreadPoolExecutor(2), 0.008-0.017x
  (target 0.05x).

Issue 15's tracing target (trace5; load average 0.7-1.9; CPU time, medians
of 9 rounds, ``--tracing --against main``'s table, eight runs for
threaded_per_device, three for naive):

* naive: tracing adds 0.44-0.48 us/op on one core, 0.42-0.44 on all, before
  0.57-0.62 / 0.59-0.62: the named fast path (``push_sync_one_var``) writes
  its RAW_PUSH_START and RAW_DONE in place, as it writes out everything
  else.  Target 0.6 us: met.
* threaded_per_device: unchanged, 0.67-1.01 us/op on one core and 0.64-1.90
  on all (medians of the runs 0.70 / 0.96).  Target 0.6: missed.  Writing a
  chain link's two records in place inside ``Engine._push_opr`` and
  ``Engine._complete`` measured 0.54 (0.44-0.66) on one core and 0.66
  (0.26-0.97) on all, lower in 7 of 8 runs, and was not kept: it puts the
  log's format back into the rule's two methods, the hand-written records
  issue 15 took out, and the all-core row still missed.  (Branch ``trace5``
  has it, commits 2a3d352 and dbf4f88.)
* Why: a Python call costs 0.05-0.08 us/op where it runs (twice its cost in
  a loop of its own); with the hook calls kept, writers that test nothing
  at all (the floor of that design) still added 0.49-0.56 us/op, the real
  ones 0.60-0.70.
* The engine lock is never contended in the traced chain (a counter on
  ``_acquire_contended``: 0 in 200,000 ops, one core and all cores): a
  longer hold costs no hand-offs.  On one core the pusher and the worker
  take turns every 128 ops (the run-ahead bound's ``sleep(0)``).
* Tried and dropped (A/B in the same rounds, 15 rounds, several runs): a
  dedicated 8-item record for a one-var write (RAW_PUSH_WRITE): within
  +-0.03 us/op of the general record (its tests are as long); the var
  tuples themselves in the log (no id conversion): 0.03-0.06 worse, the
  tuples kept alive feed the cycle collector.  ``get_ident`` costs
  0.02-0.08 us/op where it runs, but Python has no cheaper per-thread
  identity (``threading.local`` 35 ns against 30 ns), and writing the
  ident only when it changes needs it to compare.

Issue 15 closed on the chapter (stop 30, idle, three runs of ``--tracing``):
threaded_per_device adds 0.59 / 0.64 / 0.68 us/op on one core and
0.70-0.72 on all, 0.039-0.045x of ThreadPoolExecutor(2) on one core (the
table's form of the target, <= 0.050x: met) and 0.037-0.057x on all; naive
0.38-0.45 / 0.37-0.43 (0.028-0.032x).  The in-place records of branch
``trace5`` stay out of the rule's methods.

Issue 38 (stop 50, ``--tracing --against 8ffe910``, idle machine, CPU time,
the same rounds; the idle fast path as helpers, records through
``record_push`` / ``record_done``):

* naive vs the reference's naive form, independent / chain / fan: 1.26x /
  1.28x / 1.26x, before 1.44x / 1.47x / 1.46x (after/before 0.86-0.88x; wall
  time the same); the worst median of four runs 1.28-1.31x.  A var list is
  tested before its loop (an empty loop cost more than the test) and
  ``RunContextCache.last`` is tested before the dict.  Target 1.3x: at it.
* tracing adds, chain: naive 0.56 us/op on one core and 0.51 on all, before
  0.60 / 0.55; threaded_per_device 0.66 / 0.68, before 0.89 / 0.82.  Over
  three runs: naive 0.54-0.64 / 0.51-0.57, threaded_per_device 0.58-0.74 /
  0.56-0.68 (target 0.6: at it, not under it).  The records' two short forms
  ``RAW_PUSH_ONE`` (a one-var push without a new one-id tuple) and
  ``RAW_LINK`` (a chain link's end) paid for that; reordering
  ``record_end`` and ``record_push`` further (-10 to -20 ns each alone)
  measured nothing in the chain and was not kept.
* the threaded engines' chains stay the noisy workload: 1.29-1.59x of the
  reference's threaded form across three runs (rounds from 0.84x to 2.44x),
  after/before 1.02-1.03x in the same rounds.

Issue 38 closed (stop 52, idle machine, CPU time): ``--tracing --against
9ff111c``, the engines from before issue 38 in the same rounds:

* naive vs the reference's naive form, independent / chain / fan: 1.22x /
  1.25x / 1.20x, before issue 38 1.02x / 1.03x / 0.99x (after/before
  1.19-1.23x: the textbook's helpers, checks and generic records cost
  0.2 us an op against the fused form they replaced).  The idle release
  looks at its vars only when another op is pending (0.97-0.98x of itself
  in the same rounds).  The worst median over the stop's six runs: 1.27x,
  1.30x, 1.36x before that change, 1.24x, 1.25x, 1.26x after it.  Target
  1.3x.
* tracing adds, chain: naive 0.54 / 0.52 us/op (one core / all cores),
  before 0.38 / 0.37; threaded_per_device 0.60 / 0.59, before 0.57 / 0.58.
  Over the stop's runs: naive 0.49-0.59, threaded_per_device 0.51-0.60.
  Target 0.6.
* the threaded chains swing with the machine: 1.25-2.08x of the
  reference's threaded form across the runs, the engines from before issue
  38 the same in the same rounds (after/before 0.96-1.04x).

Run: ``python benchmarks/engine.py`` (``--quick`` for a smaller N,
``--reference`` for the reference tables alone, ``--tracing`` for those and
the tracing table, ``--against REV`` to run the engines of git revision
``REV`` in the same rounds, an A/B of a change, in the reference and the
tracing tables).
"""

from __future__ import annotations

import atexit
import contextlib
import gc
import importlib
import io
import json
import os
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Iterator
from typing import Any, NamedTuple

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from _util import ExecutorPeer, best_of, ratio, table
from reference_engine import ReferenceNaive, ReferenceThreaded

import mxnb as mx

N = 20_000
ENGINES = ("naive", "threaded", "threaded_per_device", "step")


def noop(rctx: object) -> None:
    """The tiny op."""


class Timing(NamedTuple):
    """One timed run: wall seconds, and CPU seconds of the whole process (every thread).

    CPU time (``time.process_time``: all threads, user and system) counts the
    work done, not the waits for a core another process holds: on a shared
    machine it is the steadier figure.  For a threaded engine it also counts
    what its workers did.
    """

    wall: float
    cpu: float


def _clocks() -> tuple[float, float]:
    return time.perf_counter(), time.process_time()


def _since(start: tuple[float, float]) -> Timing:
    wall, cpu = _clocks()
    return Timing(wall - start[0], cpu - start[1])


def engine_workload(eng: mx.engine.Engine, kind: str, n: int, ctx: Any = None) -> Timing:
    """Time n tiny ops of ``kind`` on ``eng``, from the first push to the end of wait_for_all.

    ``ctx``: the context to push with (default ``mx.cpu()``; an older mxnb's own, see
    :func:`package_at`).
    """
    ctx = ctx or mx.cpu()
    push = eng.push_sync
    if kind == "independent":
        variables = [eng.new_var() for _ in range(n)]
        start = _clocks()
        for var in variables:
            push(noop, ctx, (), (var,))
    elif kind == "chain":
        var = eng.new_var()
        start = _clocks()
        for _ in range(n):
            push(noop, ctx, (), (var,))
    else:
        var = eng.new_var()
        start = _clocks()
        push(noop, ctx, (), (var,))
        for _ in range(n - 2):
            push(noop, ctx, (var,), ())
        push(noop, ctx, (), (var,))
    eng.wait_for_all()
    return _since(start)


def _ref_noop() -> None:
    """The reference engine's tiny op (it passes no RunContext)."""


def reference_workload(eng: ReferenceNaive, kind: str, n: int) -> Timing:
    """:func:`engine_workload` on a reference engine (``benchmarks/reference_engine.py``)."""
    push = eng.push
    if kind == "independent":
        variables = [eng.new_var() for _ in range(n)]
        start = _clocks()
        for var in variables:
            push(_ref_noop, (), (var,))
    elif kind == "chain":
        var = eng.new_var()
        start = _clocks()
        for _ in range(n):
            push(_ref_noop, (), (var,))
    else:
        var = eng.new_var()
        start = _clocks()
        push(_ref_noop, (), (var,))
        for _ in range(n - 2):
            push(_ref_noop, (var,), ())
        push(_ref_noop, (), (var,))
    eng.wait_for_all()
    return _since(start)


#: mxnb engine -> the reference form it is held to, and the target ratio (issue 15).
REFERENCE_PAIRS = {
    "naive": ("ref naive", 1.3),
    "threaded": ("ref threaded", 1.5),
    "threaded_per_device": ("ref threaded", 1.5),
}


def _ratio_cell(mine: list[float], peer: list[float], n: int) -> tuple[str, float]:
    """``us/op (median ratio, min-max)`` of paired rounds, and the median ratio."""
    ratios = [e / r for e, r in zip(mine, peer)]
    median = statistics.median(ratios)
    us = statistics.median(mine) / n * 1e6
    return f"{us:.2f} ({median:.2f}x, {min(ratios):.2f}-{max(ratios):.2f})", median


def package_at(revision: str) -> Any:
    """mxnb as committed at git ``revision``, imported as the package ``mxnb_before``.

    For A/B runs (``--against REV``): the old engine runs in the same process,
    interleaved with the new one.  mxnb imports itself relatively, so a renamed
    copy is a separate package (an older revision's ``import_module("mxnb.…")``
    is pointed at the copy).
    """
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    archive = subprocess.run(
        ["git", "-C", root, "archive", revision, "mxnb"], capture_output=True, check=True
    ).stdout
    target = tempfile.mkdtemp(prefix="mxnb-bench-")
    atexit.register(shutil.rmtree, target, ignore_errors=True)
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(target, filter="data")
    package = os.path.join(target, "mxnb_before")
    os.rename(os.path.join(target, "mxnb"), package)
    for folder, _, files in os.walk(package):  # revisions before issue 38 named their trace
        for file in files:  # module by its absolute name: point that name at the copy
            if file.endswith(".py"):
                path = os.path.join(folder, file)
                with open(path, encoding="utf-8") as f:
                    text = f.read()
                if 'import_module("mxnb.' in text:
                    with open(path, "w", encoding="utf-8") as f:
                        f.write(text.replace('import_module("mxnb.', 'import_module("mxnb_before.'))
    sys.path.insert(0, target)
    return importlib.import_module("mxnb_before")


def versus_reference(n: int, rounds: int = 7, before: Any = None) -> dict[str, dict[str, float]]:
    """Each engine against the plain reference engine: median ratios of interleaved rounds.

    A round times, per workload, both reference forms and every mxnb engine
    back to back (within a second or so, sharing the machine's speed of the
    moment); the ratio is taken within the round, and the tables show the
    median of the rounds and their spread (min-max): one table in CPU time
    (the figure to trust on a shared machine), one in wall time.  ``before``:
    an older mxnb (:func:`package_at`) whose engines run in the same rounds,
    as rows ``<engine> (before)``, with a table of after / before.  Returns
    ``{'cpu' | 'wall': {engine/kind: median ratio}}``.
    """
    packages = [("", mx)] + ([(" (before)", before)] if before is not None else [])
    engines = {
        name + suffix: (package.engine.create(name), package.cpu())
        for name in REFERENCE_PAIRS
        for suffix, package in packages
    }
    refs = {"ref naive": ReferenceNaive(), "ref threaded": ReferenceThreaded()}
    times: dict[tuple[str, str], list[Timing]] = {}
    try:
        for eng, ctx in engines.values():
            engine_workload(eng, "independent", 2000, ctx)  # warm up
        for ref in refs.values():
            reference_workload(ref, "independent", 2000)
        for _ in range(rounds):
            for kind in KINDS:
                for label, ref in refs.items():
                    got = reference_workload(ref, kind, n)
                    times.setdefault((label, kind), []).append(got)
                for name, (eng, ctx) in engines.items():
                    got = engine_workload(eng, kind, n, ctx)
                    times.setdefault((name, kind), []).append(got)
    finally:
        for eng, _ in engines.values():
            eng.shutdown()
        for ref in refs.values():
            ref.shutdown()
    medians: dict[str, dict[str, float]] = {}
    for field in ("cpu", "wall"):
        series = {key: [getattr(t, field) for t in value] for key, value in times.items()}
        rows = []
        for label in refs:
            us = (statistics.median(series[label, k]) / n * 1e6 for k in KINDS)
            rows.append([label, *(f"{u:.2f}" for u in us), "", ""])
        found = medians[field] = {}
        for name in engines:
            label, target = REFERENCE_PAIRS[name.removesuffix(" (before)")]
            cells = []
            for kind in KINDS:
                cell, found[f"{name}/{kind}"] = _ratio_cell(
                    series[name, kind], series[label, kind], n
                )
                cells.append(cell)
            worst = max(found[f"{name}/{kind}"] for kind in KINDS)
            rows.append([name, *cells, label, f"{worst:.2f}x <= {target}x"])
        what = "CPU time of all threads" if field == "cpu" else "wall time"
        print(
            table(
                ["engine", *(f"{k} us/op (ratio, spread)" for k in KINDS), "vs", "worst median"],
                rows,
                title=(
                    f"Tiny ops against the reference engine (benchmarks/reference_engine.py), "
                    f"{what}, N={n}, medians of {rounds} interleaved rounds; ratio = engine / its "
                    "reference form in the same round (spread: min-max of the rounds)"
                ),
            )
        )
        print()
    if before is not None:
        rows = []
        for name in REFERENCE_PAIRS:
            cells = [
                _ratio_cell(
                    [t.cpu for t in times[name, kind]],
                    [t.cpu for t in times[f"{name} (before)", kind]],
                    n,
                )[0]
                for kind in KINDS
            ]
            rows.append([name, *cells])
        print(
            table(
                ["engine", *(f"{k} us/op (after/before, spread)" for k in KINDS)],
                rows,
                title=f"After / before, CPU time, medians of the {rounds} rounds' ratios",
            )
        )
        print()
    return medians


def loop_cost(n: int) -> float:
    """Seconds for calling the no-op n times in a plain loop."""

    def run() -> None:
        for _ in range(n):
            noop(None)

    return best_of(run, 3)


KINDS = ("independent", "chain", "fan")
ROUNDS = 5


def tiny_ops(n: int) -> None:
    """Per engine: ROUNDS rounds, each timing the peer and then every workload; best of each.

    The machine's speed drifts by tens of percent over seconds (shared VM),
    so each engine's figures are compared with the peer timed in the same
    rounds, interleaved, not with one figure taken at the start.
    """
    peer = ExecutorPeer()
    loop = loop_cost(n) / n * 1e6
    rows = []
    all_peers = []
    try:
        for name in ENGINES:
            engine = mx.engine.create(name)
            best = dict.fromkeys(("tpe", *KINDS), float("inf"))
            try:
                engine_workload(engine, "independent", 2000)  # warm up
                for _ in range(ROUNDS):
                    best["tpe"] = min(best["tpe"], peer.seconds(n))
                    for kind in KINDS:
                        best[kind] = min(best[kind], engine_workload(engine, kind, n).wall)
            finally:
                engine.shutdown()
            tpe = best["tpe"] / n * 1e6
            all_peers.append(tpe)
            us = [best[kind] / n * 1e6 for kind in KINDS]
            worst = max(u / tpe for u in us)
            rows.append([name, *(f"{u:.2f}" for u in us), f"{tpe:.2f}", f"{worst:.2f}x"])
    finally:
        peer.close()
    tpe_all = min(all_peers)
    rows.insert(0, ["plain loop", *(f"{loop:.2f}",) * 3, f"{tpe_all:.2f}", ratio(loop, tpe_all)])
    print(
        table(
            [
                "engine",
                "independent us/op",
                "chain us/op",
                "fan us/op",
                "TPE(2) us/task",
                "worst vs TPE",
            ],
            rows,
            title=(
                f"Tiny ops (N={n}, best of {ROUNDS} rounds, the ThreadPoolExecutor(2) peer timed in "
                "the same rounds); targets: threaded <= 0.30x TPE, naive <= 0.15x"
            ),
        )
    )


REFERENCE_TPE_US = (
    12.0  # ThreadPoolExecutor(2) per task on the machine the targets were set on
)
TRACING_TARGET_US = 0.6  # tracing's added cost per op there


CAN_PIN = hasattr(os, "sched_setaffinity")
ALL_CORES = os.sched_getaffinity(0) if CAN_PIN else set()  # the cores the run started with


@contextlib.contextmanager
def on_cores(cores: set[int]) -> Iterator[None]:
    """Run the block with this thread on ``cores`` (a no-op where the platform cannot pin).

    ``sched_setaffinity(0, ...)`` sets the calling thread's cores only, and
    threads inherit the affinity of the thread that starts them.
    """
    if not CAN_PIN:
        yield
        return
    before = os.sched_getaffinity(0)
    os.sched_setaffinity(0, cores)
    try:
        yield
    finally:
        os.sched_setaffinity(0, before)


@contextlib.contextmanager
def one_core() -> Iterator[str]:
    """Run the block (and the threads it starts) on one core; yields a label for the table.

    An engine created inside the block has its workers on the same core.
    Where the platform cannot pin, the block runs unpinned and says so.
    """
    with on_cores({min(ALL_CORES)} if CAN_PIN else set()):
        yield "one core" if CAN_PIN else "all cores (cannot pin here)"


def peer_seconds(peer: ExecutorPeer, n: int) -> float:
    """Time the peer with this thread free to run on every core (as its threads are).

    An engine's workers pinned by :func:`one_core` stay where they are.
    """
    with on_cores(ALL_CORES):
        return peer.seconds(n)


class TracingRounds(NamedTuple):
    """One engine's tracing figures, per op: medians over paired rounds (see tracing_rounds)."""

    plain: float  # CPU seconds per op, untraced
    traced: float  # CPU seconds per op, traced
    adds: float  # median of the rounds' (traced - plain)
    adds_vs_tpe: float  # median of the rounds' (traced - plain) / peer
    tpe: float  # the peer's wall seconds per task
    build: float  # CPU seconds per op to build the events afterwards
    events: int


def tracing_rounds(
    name: str, n: int, peer: ExecutorPeer, rounds: int = 9, packages: tuple = (mx,)
) -> list[TracingRounds]:
    """Time a chain untraced, then traced, then the peer, ``rounds`` times; medians of the pairs.

    Each round's three figures are taken within a second, so they share the
    machine's speed of the moment; the next round's may be half again slower
    (a shared VM).  Tracing's cost is therefore taken round by round, as the
    difference of a round's pair (and as that difference over the round's
    peer), and the median of the rounds is reported.  The best of each
    series, taken apart, can pair a fast moment of one with a slow moment of
    the other.  Building the events (lazily, when the trace is first read)
    is timed apart, with the garbage collection its events cost: it happens
    off the hot path.  ``packages``: mxnb, then older revisions
    (:func:`package_at`) whose engine runs its pair in the same rounds; one
    result per package.
    """
    engines = [(package, package.engine.create(name)) for package in packages]
    figures: list[tuple[list[float], ...]] = [([], [], [], []) for _ in packages]
    try:
        for package, engine in engines:
            engine_workload(engine, "chain", 2000, package.cpu())
        for _ in range(rounds):
            tpe = peer_seconds(peer, n)
            for (package, engine), (plain, traced, build, peers) in zip(engines, figures):
                start = time.process_time()
                engine_workload(engine, "chain", n, package.cpu())
                plain.append(time.process_time() - start)
                recorder = package.engine.trace().attach()
                start = time.process_time()
                engine_workload(engine, "chain", n, package.cpu())
                traced.append(time.process_time() - start)
                peers.append(tpe)
                start = time.process_time()
                recorder.detach()  # builds the events
                events = len(recorder)
                del recorder
                gc.collect()  # the collections the built events cost are the build's, not the next run's
                build.append(time.process_time() - start)
    finally:
        for _, engine in engines:
            engine.shutdown()
    return [
        TracingRounds(
            plain=statistics.median(plain) / n,
            traced=statistics.median(traced) / n,
            adds=statistics.median(t - p for p, t in zip(plain, traced)) / n,
            adds_vs_tpe=statistics.median((t - p) / q for p, t, q in zip(plain, traced, tpe)),
            tpe=statistics.median(tpe) / n,
            build=statistics.median(build) / n,
            events=events,
        )
        for plain, traced, build, tpe in figures
    ]


def tracing_cost(n: int, before: Any = None) -> None:
    """What tracing adds per op of a chain: CPU time of all threads, on one core and on all.

    CPU time, not wall time: on a shared machine it is the steadier measure of
    the work tracing adds.  On one core the figure is that work alone.  With
    the workers free to run on every core, the pushing thread and the workers
    fall into faster or slower rhythms from round to round (the untraced
    chain itself swings by a third), which tracing shifts either way: that
    row is shown for what a user sees, not as the measure of tracing's work.
    The target is a ratio to the ``ThreadPoolExecutor(2)`` peer (wall time
    per task, as the issue's anchor was taken), timed in the same rounds.
    ``before``: an older mxnb (:func:`package_at`) measured in the same
    rounds, as rows ``<engine> (before)``.
    """
    rows = []
    peer = ExecutorPeer()
    packages = (mx,) if before is None else (mx, before)
    try:
        for name in ("naive", "threaded_per_device"):
            for pinned in (True, False):
                with one_core() if pinned else contextlib.nullcontext("all cores") as where:
                    results = tracing_rounds(name, n, peer, packages=packages)
                for suffix, got in zip(("", " (before)"), results):
                    rows.append(
                        [
                            name + suffix,
                            where,
                            f"{got.plain * 1e6:.2f}",
                            f"{got.traced * 1e6:.2f}",
                            f"{got.adds * 1e6:.2f}",
                            f"{got.tpe * 1e6:.2f}",
                            f"{got.adds_vs_tpe:.3f}x",
                            f"{got.build * 1e6:.2f}",
                            str(got.events),
                        ]
                    )
    finally:
        peer.close()
    print(
        table(
            [
                "engine (chain)",
                "threads on",
                "CPU us/op",
                "traced",
                "tracing adds",
                "TPE(2) us/task",
                "adds / TPE",
                "building events",
                "events",
            ],
            rows,
            title=(
                f"Tracing cost, CPU us per op, medians of 9 rounds (each: untraced, traced, the peer) "
                f"(target: adds <= {TRACING_TARGET_US} us/op where ThreadPoolExecutor(2) costs "
                f"{REFERENCE_TPE_US:.0f} us/task, i.e. <= {TRACING_TARGET_US / REFERENCE_TPE_US:.3f}x "
                "TPE; the one-core rows measure tracing's work)"
            ),
        )
    )


MATMUL_CHILD = r"""
import json, sys, time
import numpy as np
import mxnb as mx
size, length = int(sys.argv[1]), int(sys.argv[2])
rng = np.random.default_rng(0)
inputs = [rng.random((size, size)) for _ in range(2)]
state = [x.copy() for x in inputs]
def step(i):
    def fn(rctx):
        state[i] = (state[i] @ inputs[i]) / size
    return fn
def sequential():
    for i in (0, 1):
        for _ in range(length):
            step(i)(None)
def on_engine(eng):
    variables = [eng.new_var(name=f"chain{i}") for i in (0, 1)]
    for _ in range(length):
        for i in (0, 1):
            eng.push_sync(step(i), mx.cpu(), mutate_vars=[variables[i]], name=f"matmul{i}")
    eng.wait_for_all()
step(0)(None)
engines = {name: mx.engine.create(name) for name in ("threaded", "threaded_per_device")}
import threading
def two_threads():
    workers = [threading.Thread(target=lambda i=i: [step(i)(None) for _ in range(length)]) for i in (0, 1)]
    for w in workers: w.start()
    for w in workers: w.join()
best = dict.fromkeys(["sequential", "two plain threads", "threaded", "threaded_per_device"], float("inf"))
for _ in range(3):  # interleaved rounds, best of each: other load on the machine comes and goes
    t = time.perf_counter(); sequential(); best["sequential"] = min(best["sequential"], time.perf_counter() - t)
    t = time.perf_counter(); two_threads(); best["two plain threads"] = min(best["two plain threads"], time.perf_counter() - t)
    for name, eng in engines.items():
        t = time.perf_counter(); on_engine(eng); best[name] = min(best[name], time.perf_counter() - t)
for eng in engines.values():
    eng.shutdown()
print(json.dumps(best))
"""


def matmul_speedup(size: int = 1500, length: int = 4) -> None:
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
    result = subprocess.run(
        [sys.executable, "-c", MATMUL_CHILD, str(size), str(length)],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    best = json.loads(result.stdout.strip().splitlines()[-1])
    sequential = best["sequential"]
    rows = [["sequential (one thread)", f"{sequential:.2f}", "1.00x"]]
    for name in ("two plain threads", "threaded", "threaded_per_device"):
        rows.append([name, f"{best[name]:.2f}", f"{sequential / best[name]:.2f}x"])
    print(
        table(
            ["two chains", "seconds", "speedup"],
            rows,
            title=f"Two independent chains of {length} {size}x{size} float64 matmuls, BLAS pinned to 1 thread (target >= 1.8x)",
        )
    )


def main() -> None:
    n = 5_000 if "--quick" in sys.argv else N
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    print(
        f"mxnb engine benchmark on {os.cpu_count()} cores, Python {sys.version.split()[0]}, "
        f"load average {load} (other work on the machine skews the figures)\n"
    )
    before = None
    if "--against" in sys.argv:
        revision = sys.argv[sys.argv.index("--against") + 1]
        before = package_at(revision)
        print(f"(before) = the engines at {revision}\n")
    versus_reference(n, before=before)
    if "--reference" in sys.argv:
        return
    if "--tracing" not in sys.argv:
        tiny_ops(n)
        print()
    tracing_cost(n, before)
    if "--tracing" in sys.argv:
        return
    print()
    matmul_speedup(length=2 if "--quick" in sys.argv else 4)


if __name__ == "__main__":
    main()
