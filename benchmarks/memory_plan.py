"""Memory planning figures for the zoo networks, beside MXNet 1.9.1's own, and executor speed.

Prints, for MLP, LeNet, AlexNet, VGG-16, ResNet-18, Inception-BN, Inception-v3
(ImageNet shapes), the unrolled 2-layer LSTM (35 steps, 200 hidden) and the language
model MXNet's ``mx.rnn`` exported (``lstm_lm``: the same LSTM as two
``LSTMCell(200)`` with zero begin states of unknown batch, ``_zeros`` of
shape (0, 200), inferred here), at batch 1, 32 and 64, for
inference (grad_req='null') and training (grad_req='write'):

    naive        every internal entry its own storage
    inplace      in-place only
    coshare      co-share only
    both         both strategies (what the executor uses)
    naive/both   how much planning saves
    mxnet        MXNet 1.9.1's GraphExecutor for the same graph and shapes
                 (benchmarks/mxnet_reference.json; exact bytes where measured,
                 else its "Total N MB allocated", N floored)
    both/mxnet   below 1.00: mxnb plans less

then recomputation (issue #19) for ResNet-18, VGG-16, Inception-BN, Inception-v3
and the LSTM at batch 32, training: the plain plan, MXNet's plain and mirror plans
(benchmarks/mxnet_mirror_reference.json), mxnb's 'mirror' and 'sqrt' plans and
the best points of the trade-off family, each as MiB and
recompute_flops / forward_flops (targets for ResNet-18: <= 376 MiB with a
ratio <= 0.35);

then the time to plan ResNet-50 (target under 1 s), planning and binding
chains of 1,000, 2,000, 4,000 and 20,000 small ops (O(n log n): 20k within 10x of 2k,
planning 20k under 2 s, 4k about 4x 1k), and the executor's
forward+backward time for the MLP and LeNet relative to the same network
run op by op through mx.nd under autograd, interleaved in the same run, best of
20 each (target: <= 1).

then the exact planner (issue #35, ``solver='milp'``) against the greedy search
on Gluon's ``resnet18_v1`` and ``vgg16`` as MXNet 1.9.1 exported them
(tests/executor/data/), batch 32: each budget's plan, solve time and proven gap,
and the best plan within 0.35 and 1.0 of an extra forward against MXNet's own plan,
then (``--proofs`` alone) proofs at 8 budgets on the zoo's ResNet-18 and MXNet's resnet18_v1
(:func:`proofs_at_eight_budgets`), then the exact curves of both (:func:`exact_curve`): the plain plan, the plain plan
packed into one arena (no recomputation: a budget may use it), the floor no plan
goes under (the largest step's working set), the greedy curve, the exact plans at
budgets every 4 % of plain (30 s each, wall and CPU seconds), the widest step
between neighbouring points of the curve (its Pareto front), how many solves were
proven optimal, and the best plan within 0.35 and 1 forward;

then the honest peak (issue #35): on MXNet's resnet18_v1 at batch 32, the pool's measured
high-water mark over a forward + backward against the plan's total bytes, plain, packed,
'mirror' and exact plans, and beside the plain plan the kernels' own temporaries at their peak
(``measure_plan``'s ``temporaries_bytes``: numpy arrays a kernel makes, seen by tracemalloc);

then held-out graphs (issue #35), never tuned on: MXNet's ``mx.rnn`` LSTM language model
(``lstm_lm``, batch 32 x 35) and a ``symbols/resnet.py``-style ResNet-50 MXNet exported
(tests/executor/data/export_symbols_resnet.py, batch 32): the same curves;

then (``--windows`` alone) the exact planner's window on LSTMs (:func:`windowed_lstms`): greedy
against exact at budgets from 98 % of the plain plan down, on MXNet's LSTM LM and a held-out
3-layer LSTM;

then time, not only FLOPs (issue #35): for every point of the curve of LeNet, the zoo's
ResNet-18 at 32 px and MXNet's export of ``resnet18_v1`` (greedy points, the plain plan
again as the noise floor, and exact plans by FLOPs and by a measured per-op timing
table at the widest gaps), the training step's overhead predicted from FLOPs
(``recompute_flops`` over three forwards) and from the op-time table, and measured in
wall and CPU time (best of interleaved steps);

Run: ``.venv/bin/python benchmarks/memory_plan.py`` (``--quick``: batch 32 only;
``--milp``: the exact planner's table only, a few minutes; ``--time``: the time table only; ``--held-out``: the held-out curves only, ``--limit S`` seconds per exact solve (default 30), ``--only TEXT`` the graphs whose label contains it; ``--peak``: the measured peak only).
"""

from __future__ import annotations

import gc
import json
import statistics
import sys
import time
from pathlib import Path

import numpy as np

import mxnb as mx
from mxnb.executor import measure, sharing, zoo
from mxnb.executor.exact import proven_optimal
from mxnb.executor.executor import Executor
from mxnb.executor.tradeoff import pareto
from mxnb.executor.planning import plan_graph_and_memory
from mxnb.executor.tradeoff import floor_bytes
from mxnb.ndarray.invoke import invoke
from mxnb.symbol.graph import NodeEntry, topo_sort

HERE = Path(__file__).resolve().parent
NETWORKS = (
    "mlp", "lenet", "alexnet", "vgg16", "resnet18", "inception_bn", "inception_v3", "lstm", "lstm_lm"
)  # fmt: skip
LSTM_LM = HERE.parent / "tests" / "rnn" / "data" / "lstm_lm-symbol.json"  # MXNet's export


def _widest_step(plans: list, plain) -> str:
    """The widest step between neighbouring points of the curve (its Pareto front), as text."""
    front = pareto(plans)
    if len(front) < 2:
        return f"one point ({front[0].internal_bytes / MB:.1f} MiB)"
    high, low = max(
        zip(front, front[1:]), key=lambda pair: pair[0].internal_bytes - pair[1].internal_bytes
    )
    size = high.internal_bytes - low.internal_bytes
    return (f"widest step {size / plain.internal_bytes:.1%} of plain ({high.internal_bytes / MB:.1f} "
            f"({high.recompute_ratio:.3f}) -> {low.internal_bytes / MB:.1f} ({low.recompute_ratio:.3f})), "
            f"{len(front)} points from {front[0].internal_bytes / MB:.1f} to "
            f"{front[-1].internal_bytes / MB:.1f} MiB")  # fmt: skip


def network(name: str, batch: int) -> tuple:
    """The symbol and input shapes of a network of the table."""
    if name == "lstm_lm":
        return mx.sym.load(str(LSTM_LM)), {"data": (batch, 35), "softmax_label": (batch, 35)}
    return zoo.build(name), zoo.input_shapes(name, batch)


MB = float(1 << 20)


def reference() -> dict:
    data = json.loads((HERE / "mxnet_reference.json").read_text())
    return {(r["network"], r["batch"], r["mode"]): r for r in data["runs"]}


def mxnet_bytes(run: dict | None) -> tuple[float | None, str]:
    """MXNet's planned bytes and how exact the figure is ('' exact, '~' floored MB)."""
    if run is None:
        return None, ""
    if run["bytes"] is not None:
        return float(run["bytes"]), ""
    return float(run["mb"]) * MB, "~"


def plan_table(batches: tuple[int, ...]) -> None:
    refs = reference()
    header = (
        f"{'network':<12} {'batch':>5} {'mode':<9} {'naive MB':>10} {'inplace':>9} "
        f"{'coshare':>9} {'both':>9} {'naive/both':>10} {'mxnet MB':>10} {'both/mxnet':>10}"
    )
    print(header)
    print("-" * len(header))
    for name in NETWORKS:
        for batch in batches:
            sym, shapes = network(name, batch)
            for mode, req in (("inference", "null"), ("training", "write")):
                plans = {}
                for key, plan in mx.executor.plan_strategies(sym, shapes, grad_req=req).items():
                    plan.check()
                    plans[key] = plan.internal_bytes
                theirs, mark = mxnet_bytes(refs.get((name, batch, mode)))
                versus = f"{mark}{plans['both'] / theirs:.2f}" if theirs else "-"
                theirs_text = f"{mark}{theirs / MB:.2f}" if theirs else "-"
                print(
                    f"{name:<12} {batch:>5} {mode:<9} {plans['naive'] / MB:>10.2f} "
                    f"{plans['inplace'] / MB:>9.2f} {plans['coshare'] / MB:>9.2f} "
                    f"{plans['both'] / MB:>9.2f} {plans['naive'] / plans['both']:>10.2f} "
                    f"{theirs_text:>10} {versus:>10}",
                    flush=True,
                )


def mxnet_mirror() -> dict:
    path = HERE / "mxnet_mirror_reference.json"
    if not path.exists():
        return {}
    return {(r["network"], r["mirror"]): r["mb"] for r in json.loads(path.read_text())["runs"]}


def recompute_table() -> None:
    """Planned MiB and recompute/forward FLOPs: plain, mirror, sqrt and the trade-off family."""
    theirs = mxnet_mirror()
    print("\nrecomputation, training at batch 32 (MiB, and recompute_flops/forward_flops)")
    header = (
        f"{'network':<12} {'plain':>8} {'mxnet':>7} {'mx mirror':>9} {'mirror':>14} "
        f"{'sqrt':>14} {'<= 0.35 fwd':>14} {'<= 1 fwd':>14}  best <= 1 fwd"
    )
    print(header)
    print("-" * len(header))
    for name in ("resnet18", "vgg16", "inception_bn", "inception_v3", "lstm"):
        sym = zoo.build(name)
        shapes = zoo.input_shapes(name, 32)
        cells = {}
        for mode in (None, "mirror", "sqrt"):
            plan = mx.executor.plan_memory(sym, shapes, grad_req="write", recompute=mode)
            plan.check()
            cells[mode] = plan
        points = mx.executor.tradeoff_curve(sym, shapes)
        within = {
            limit: min(
                (p for p in points if p.recompute_ratio <= limit), key=lambda p: p.internal_bytes
            )
            for limit in (0.35, 1.0)
        }

        def cell(size: int, ratio: float) -> str:
            return f"{size / MB:7.1f} ({ratio:.2f})"

        plain, mirror_mb = theirs.get((name, 0)), theirs.get((name, 1))
        print(
            f"{name:<12} {cells[None].internal_bytes / MB:>8.1f} "
            f"{plain if plain is not None else '-':>7} {mirror_mb if mirror_mb is not None else '-':>9} "
            f"{cell(cells['mirror'].internal_bytes, cells['mirror'].recompute_ratio):>14} "
            f"{cell(cells['sqrt'].internal_bytes, cells['sqrt'].recompute_ratio):>14} "
            f"{cell(within[0.35].internal_bytes, within[0.35].recompute_ratio):>14} "
            f"{cell(within[1.0].internal_bytes, within[1.0].recompute_ratio):>14}  "
            f"{within[1.0].label}",
            flush=True,
        )
        if name == "resnet18":
            best = within[0.35]
            print(
                f"  ResNet-18 target (issue #19: <= 376 MiB, half of MXNet's 753) at ratio <= 0.35: "
                f"{best.internal_bytes / MB:.1f} MiB at {best.recompute_ratio:.2f} "
                f"(peak live {best.plan.peak_bytes / MB:.1f} MiB) -> "
                f"{'met' if best.internal_bytes <= 376 * MB else 'MISSED'}"
            )


EXPORTS = HERE.parent / "tests" / "executor" / "data"  # Gluon's models, exported by MXNet 1.9.1
#: exported network -> budgets tried by the exact planner (MiB; 'plain' x: a share of mxnb's plain)
EXACT_BUDGETS = {
    "resnet18_v1": (376.0, 340.0, 300.0),
    "vgg16": ("plain 0.7", "plain 0.6", "plain 0.53", "plain 0.5"),
}


def exact_planner_table(time_limit: float = 120.0) -> None:
    """Greedy vs exact (MILP) recomputation on graphs MXNet exported (issue #35), batch 32."""
    print(f"\nexact planner (solver='milp', time limit {time_limit:.0f} s) vs greedy, MXNet's "
          "exports of Gluon's models, training, batch 32 (MiB (recompute/forward))")  # fmt: skip
    for name, budgets in EXACT_BUDGETS.items():
        sym = mx.sym.load(str(EXPORTS / f"{name}_train-symbol.json"))
        req = {arg: "write" for arg in sym.list_arguments()}
        req["data"] = req["softmax_label"] = "null"
        shapes = {"data": (32, 3, 224, 224)}
        theirs = json.loads((EXPORTS / f"{name}_train-mxnet.json").read_text())
        plain = mx.executor.plan_memory(sym, shapes, grad_req=req)
        points = mx.executor.tradeoff_curve(sym, shapes, grad_req=req)
        print(f"{name}: plain {plain.internal_bytes / MB:.1f}, MXNet {theirs['mirror_0_mb']} "
              f"(its mirror {theirs['mirror_1_mb']})")  # fmt: skip
        exact = []
        for budget in budgets:
            size = plain.internal_bytes * float(budget.split()[1]) if isinstance(budget, str) else (
                budget * MB)  # fmt: skip
            start = time.perf_counter()
            try:
                plan = mx.executor.plan_memory(sym, shapes, grad_req=req, budget=int(size),
                                               solver="milp", time_limit=time_limit)  # fmt: skip
            except mx.executor.MemoryBudgetError:
                print(f"  budget {size / MB:7.1f}: no plan fits")
                continue
            seconds = time.perf_counter() - start
            plan.check()
            exact.append(plan)
            gap = "-" if plan.mip_gap is None else f"{plan.mip_gap:.2g}"
            print(f"  budget {size / MB:7.1f}: {plan.internal_bytes / MB:7.1f} "
                  f"({plan.recompute_ratio:.3f}) {plan.solver}, gap {gap}, {seconds:.0f} s")  # fmt: skip
        for limit in (0.35, 1.0):
            greedy = min((p.plan for p in points if p.recompute_ratio <= limit),
                         key=lambda p: p.internal_bytes)  # fmt: skip
            fits = [p for p in [*exact, greedy] if p.recompute_ratio <= limit]
            best = min(fits, key=lambda p: p.internal_bytes)
            print(f"  best within {limit:.2f} forward: greedy {greedy.internal_bytes / MB:.1f} "
                  f"({greedy.recompute_ratio:.2f}), of the budgets tried {best.internal_bytes / MB:.1f}"
                  f" ({best.recompute_ratio:.2f}) = {best.internal_bytes / MB / theirs['mirror_0_mb']:.2f}"
                  f"x MXNet, {best.internal_bytes / plain.internal_bytes:.2f}x plain")  # fmt: skip


def proofs_at_eight_budgets(time_limit: float = 120.0, only: str = "") -> None:
    """Issue #35's "proves optimality at >= 8 budgets", on the full-size ResNet-18s, batch 32.

    Eight budgets evenly spaced from the smallest greedy plan to the packed plan (as
    tests/executor/test_milp.py spaces them on its small networks), every argument with a
    gradient; per budget the solver, its proven gap, the recompute FLOPs against the greedy
    search's, and wall and CPU seconds.  ``only``: the graphs whose name contains it.
    """
    print(
        f"\nexact planner proofs at 8 budgets (time limit {time_limit:.0f} s), training, batch 32"
    )
    graphs = {
        "zoo resnet (v2, 18 layers)": mx.executor.zoo.resnet(),
        "resnet18_v1 (MXNet's export)": mx.sym.load(str(EXPORTS / "resnet18_v1_train-symbol.json")),
    }
    shapes = {"data": (32, 3, 224, 224)}
    for name, sym in graphs.items():
        if only not in name:
            continue
        points = mx.executor.tradeoff_curve(sym, shapes)
        low = min(point.internal_bytes for point in points)
        high = min(point.internal_bytes for point in points if point.recompute_ratio == 0)
        proven = 0
        print(f"{name}: budgets {low / MB:.1f} .. {high / MB:.1f} MiB")
        for i in range(8):
            budget = low + (high - 1 - low) * i // 7
            greedy = mx.executor.plan_memory(sym, shapes, budget=budget)
            wall, cpu = time.perf_counter(), time.process_time()
            plan = mx.executor.plan_memory(sym, shapes, budget=budget, solver="milp",
                                           time_limit=time_limit)  # fmt: skip
            wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
            proven += proven_optimal(plan)
            gap = "-" if plan.mip_gap is None else f"{plan.mip_gap:.2g}"
            print(f"  budget {budget / MB:6.1f}: {plan.internal_bytes / MB:6.1f} MiB, {plan.solver}, "
                  f"gap {gap}, {plan.recompute_flops:.3g} FLOPs (greedy {greedy.recompute_flops:.3g}),"
                  f" {wall:.0f} s wall, {cpu:.0f} s CPU")  # fmt: skip
        print(f"  proven optimal at {proven} of 8 budgets")


def _export(name: str) -> tuple:
    """An exported Gluon model: its symbol, batch-32 shapes and gradient requests (data: none)."""
    sym = mx.sym.load(str(EXPORTS / f"{name}_train-symbol.json"))
    req = {arg: "write" for arg in sym.list_arguments()}
    req["data"] = req["softmax_label"] = "null"
    theirs = json.loads((EXPORTS / f"{name}_train-mxnet.json").read_text())
    return sym, {"data": (32, 3, 224, 224)}, req, theirs["mirror_0_mb"]


def exact_curve(label: str, sym, shapes, req, theirs: float, step: float = 0.04,
                time_limit: float = 30.0) -> None:  # fmt: skip
    """Plain, packed, greedy and exact curves of one graph: widest step, proofs, best plans.

    The exact curve is :func:`mxnb.executor.optimal_curve`: the exact planner every
    ``step`` of the plain plan from plain down until no plan fits, then asked just
    under the higher point of every step wider than 5 % of plain (a new point, or a
    proof that the step is the graph's own); the greedy curve is printed beside it.
    """
    graph, plain = plan_graph_and_memory(sym, shapes, grad_req=req)
    floor, where = floor_bytes(graph)
    points = mx.executor.tradeoff_curve(sym, shapes, grad_req=req)
    packed = min(p.internal_bytes for p in points if p.recompute_ratio == 0)
    greedy = [p.plan for p in mx.executor.pareto(points)]
    print(f"\n{label}: plain {plain.internal_bytes / MB:.1f} MiB, packed (no recomputation) "
          f"{packed / MB:.1f} ({packed / plain.internal_bytes:.1%} of plain), MXNet {theirs} MiB; "
          f"floor {floor / MB:.1f} MiB = {floor / plain.internal_bytes:.1%} of plain "
          f"(step {where!r} needs its inputs and outputs at once: no plan goes under it)")  # fmt: skip
    print("  greedy curve, MiB (recompute/forward): " + ", ".join(
        f"{p.internal_bytes / MB:.1f} ({p.recompute_ratio:.2f})" for p in greedy))  # fmt: skip
    print(f"  exact planner every {step:.0%} of plain, then under each step over 5 %, "
          f"{time_limit:.0f} s limit each:")  # fmt: skip
    start, start_cpu = time.perf_counter(), time.process_time()
    curve = mx.executor.optimal_curve(sym, shapes, grad_req=req, step=step, time_limit=time_limit,
                                      refine=12, progress=lambda line: print("    " + line, flush=True))  # fmt: skip
    wall, cpu = time.perf_counter() - start, time.process_time() - start_cpu
    print(f"  greedy: {_widest_step(greedy, plain)} (target <= 5%)")
    widest, still_open = curve.widest(), curve.widest(proven=False)
    print(f"  exact: {len(curve.front)} points from {curve.front[0].internal_bytes / MB:.1f} to "
          f"{curve.front[-1].internal_bytes / MB:.1f} MiB; widest step "
          f"{widest.describe() if widest else '-'}; widest open step "
          f"{still_open.describe() if still_open else '-'} (target <= 5%)")  # fmt: skip
    for wide in sorted((s for s in curve.steps if s.share > 0.05), key=lambda s: -s.share):
        print(f"    step over 5 %: {wide.describe()}")
    solved = [p for p in curve.plans if p.recompute_steps]
    proven = sum(1 for p in solved if proven_optimal(p))
    windows = sorted({p.milp_window for p in solved if p.milp_window is not None})
    within = sum(1 for p in solved if p.milp_window and proven_optimal(p, windowed=True))
    print(f"  exact: optimality proven at {proven} of {len(solved)} solves that recompute "
          f"(+{len(curve.plans) - len(solved)} met with no recomputation)"
          + (f", and within a window of {windows} steps at {within}" if windows else "")
          + f"; {wall:.0f} s wall, {cpu:.0f} s CPU in all")  # fmt: skip
    for limit in (0.35, 1.0):
        best = min((p for p in [*greedy, *curve.plans] if p.recompute_ratio <= limit),
                   key=lambda p: (p.internal_bytes, p.recompute_ratio))  # fmt: skip
        print(f"  best within {limit:.2f} forward: {best.internal_bytes / MB:.1f} MiB "
              f"({best.recompute_ratio:.3f}) = {best.internal_bytes / plain.internal_bytes:.1%} of "
              f"plain, {best.internal_bytes / MB / theirs:.2f}x MXNet ({best.solver or 'greedy'})")  # fmt: skip


def exact_curves() -> None:
    """The curves of the tuned exports: Gluon's resnet18_v1 and vgg16, batch 32."""
    for name in ("resnet18_v1", "vgg16"):
        exact_curve(f"exact curve of {name} (MXNet export), batch 32", *_export(name))


def honest_peak(budgets_mb: tuple = (376.0, 340.0)) -> None:
    """The pool's measured high-water mark against the plan, on MXNet's resnet18_v1, batch 32.

    Each plan bound on a fresh context (the default pooled manager) and run
    forward + backward (:func:`measure.measure_peak`): the plain plan, 'mirror'
    and exact plans at ``budgets_mb``; measured minus planned should be zero.
    """
    sym = mx.sym.load(str(EXPORTS / "resnet18_v1_train-symbol.json"))
    req = {arg: "write" for arg in sym.list_arguments()}
    req["data"] = req["softmax_label"] = "null"
    shapes = {"data": (32, 3, 224, 224)}
    print("\nhonest peak: resnet18_v1 (MXNet export), batch 32, pooled manager: measured pool "
          "high-water mark - bound arrays vs plan total (internal + workspace), MiB")  # fmt: skip
    plain = plan_graph_and_memory(sym, shapes, grad_req=req)
    plans = [
        ("plain", *plain),
        ("packed (budget plain - 1)", *plan_graph_and_memory(
            sym, shapes, grad_req=req, budget=plain[1].internal_bytes - 1)),
        ("mirror", *plan_graph_and_memory(sym, shapes, grad_req=req, recompute="mirror")),
    ]  # fmt: skip
    for budget in budgets_mb:
        plans.append(
            (
                f"exact {budget:.0f} MiB",
                *plan_graph_and_memory(
                    sym, shapes, grad_req=req, budget=int(budget * MB), solver="milp", time_limit=60
                ),
            )
        )
    for index, (label, graph, plan) in enumerate(plans):
        peak = measure.measure_peak(sym, graph, plan, mx.cpu(300 + index))
        print(f"  {label:<26} planned {plan.internal_bytes / MB:7.1f} + workspace "
              f"{plan.workspace_bytes / MB:5.1f} = {plan.total_bytes / MB:7.1f}; measured "
              f"{peak / MB:7.1f} ({peak / plan.total_bytes - 1:+.2%})")  # fmt: skip
    measured = mx.executor.measure_plan(sym, shapes, grad_req=req)
    temporaries = measured.temporaries_bytes
    print(f"  beside the plain plan, the kernels' own temporaries (numpy, not planned, not pooled; on a "
          f"GPU they come from the same device pool): {temporaries / MB:.1f} MiB at their peak = "
          f"{temporaries / measured.plan.total_bytes:.2f}x the plan's total")  # fmt: skip


def _held_out() -> dict:
    """label -> (symbol, shapes, grad_req, MXNet's plan in MiB): graphs the planners were never tuned on."""
    lm = mx.sym.load(str(LSTM_LM))
    lm_mxnet = reference()[("lstm_lm", 32, "training")]["mb"]
    resnet = mx.sym.load(str(EXPORTS / "resnet50_v2_train-symbol.json"))
    req = {arg: "write" for arg in resnet.list_arguments()}
    req["data"] = req["softmax_label"] = "null"
    theirs = json.loads((EXPORTS / "resnet50_v2_train-mxnet.json").read_text())
    return {
        "lstm_lm (mx.rnn export), batch 32 x 35": (
            lm, {"data": (32, 35), "softmax_label": (32, 35)}, "write", lm_mxnet),
        "resnet50 v2 (symbols/resnet.py style, MXNet export), batch 32": (
            resnet, {"data": (32, 3, 224, 224)}, req, theirs["mirror_0_mb"]),
    }  # fmt: skip


def held_out_curves(time_limit: float = 30.0, only: str = "") -> None:
    """Plain, packed, greedy and exact curves on held-out graphs (:func:`exact_curve`).

    ``time_limit``: seconds per exact solve (the issue allows up to 120); ``only``: the
    graphs whose label contains it.
    """
    for label, (sym, shapes, req, theirs) in _held_out().items():
        if only in label:
            exact_curve(f"held out: {label}", sym, shapes, req, theirs, time_limit=time_limit)


#: networks whose trade-off curve is timed: label -> (symbol, shapes, arguments without a gradient)
def _timed_networks() -> dict:
    v1 = mx.sym.load(str(EXPORTS / "resnet18_v1_train-symbol.json"))
    return {
        "lenet b64": (zoo.build("lenet"), zoo.input_shapes("lenet", 64), ()),
        "resnet18 32px b16": (zoo.resnet(18, num_classes=10), {"data": (16, 3, 32, 32)}, ()),
        "resnet18_v1 (MXNet export) b4": (
            v1,
            {"data": (4, 3, 224, 224)},
            ("data", "softmax_label"),
        ),
    }


def _timed_executor(sym, graph, plan):
    args, grads, aux = sharing.bound_arrays(graph, mx.cpu(), None, None, None)
    exe = Executor(sym, mx.cpu(), graph, plan, args, grads, aux)
    rng = np.random.default_rng(0)  # the same values in every executor
    for key, array in exe.arg_dict.items():
        if key == "softmax_label":
            array[:] = rng.integers(0, 10, array.shape)
        else:
            array[:] = rng.standard_normal(array.shape).astype("float32") * 0.1
    for key, array in exe.aux_dict.items():
        array[:] = 1.0 if key.endswith("var") else 0.0
    return exe


def _curve_plans(sym, shapes, req, table: dict, time_limit: float, exact: int = 3) -> list:
    """The greedy curve's points, the plain plan again (the noise floor), and at the ``exact``
    widest gaps between neighbouring points the exact plan by FLOPs and by measured op times."""
    points = mx.executor.pareto(mx.executor.tradeoff_curve(sym, shapes, grad_req=req))
    plans = [("greedy " + p.label, p.graph, p.plan) for p in points]
    plans.insert(1, ("plain again (noise floor)", points[0].graph, points[0].plan))
    pairs = sorted(
        zip(points, points[1:]), key=lambda pair: pair[1].internal_bytes - pair[0].internal_bytes
    )
    for high, low in pairs[:exact]:
        budget = (high.internal_bytes + low.internal_bytes) // 2
        for label, times in (("FLOPs", None), ("op times", table)):
            graph, plan = plan_graph_and_memory(sym, shapes, grad_req=req, budget=budget,
                                                solver="milp", time_limit=time_limit,
                                                op_times=times)  # fmt: skip
            plans.append((f"exact by {label} {budget / MB:.1f} MiB", graph, plan))
    return plans[:2] + sorted(plans[2:], key=lambda item: -item[2].internal_bytes)


def recompute_time(repeats: int = 7, time_limit: float = 20.0) -> None:
    """Each curve point's training-step overhead, predicted (FLOPs; measured op times) and measured.

    Wall and process CPU time of one forward + backward, best of ``repeats``
    interleaved runs of every point, against the plain plan in the same rounds;
    the op-time table is measured once, on the plain plan (:func:`measure.op_times`).
    """
    print("\ntraining-step overhead of each curve point (greedy and exact), predicted and "
          f"measured, best of {repeats} interleaved steps (share of the plain step)")  # fmt: skip
    errors: dict = {"FLOPs": [], "op times": []}
    for label, (sym, shapes, frozen) in _timed_networks().items():
        req = {arg: "null" if arg in frozen else "write" for arg in sym.list_arguments()}
        graph, plain = plan_graph_and_memory(sym, shapes, grad_req=req)
        table = measure.op_times(_timed_executor(sym, graph, plain))
        plans = _curve_plans(sym, shapes, req, table, time_limit)
        executors = [_timed_executor(sym, graph, plan) for _, graph, plan in plans]
        wall: list = [[] for _ in executors]
        cpu: list = [[] for _ in executors]
        for exe in executors:
            measure.training_step(exe)  # warm up
        for _ in range(repeats):
            for index, exe in enumerate(executors):
                gc.collect()
                start, start_cpu = time.perf_counter(), time.process_time()
                measure.training_step(exe)
                wall[index].append(time.perf_counter() - start)
                cpu[index].append(time.process_time() - start_cpu)
        plain_wall, plain_cpu = min(wall[0]), min(cpu[0])
        print(f"{label}: plain step {plain_wall * 1e3:.0f} ms wall, {plain_cpu * 1e3:.0f} ms CPU "
              f"(op-time table: {sum(table.values()) * 1e3:.0f} ms)")  # fmt: skip
        print(f"  {'point':<32} {'MiB':>8} {'FLOPs':>6}  predicted: {'FLOPs':>6} {'op times':>8}"
              f"   measured: {'wall':>6} {'CPU':>6}")  # fmt: skip
        for (name, _, plan), walls, cpus in zip(plans, wall, cpu):
            by_flops, by_times = (
                measure.flops_overhead(plan),
                measure.predicted_overhead(plan, table),
            )
            measured = min(walls) / plain_wall - 1
            print(f"  {name:<32} {plan.internal_bytes / MB:8.2f} {plan.recompute_ratio:6.3f}  "
                  f"{'':>11}{by_flops:6.3f} {by_times:8.3f} {'':>12}{measured:6.3f} "
                  f"{min(cpus) / plain_cpu - 1:6.3f}")  # fmt: skip
            if plan.recompute_steps:
                errors["FLOPs"].append(abs(by_flops - measured))
                errors["op times"].append(abs(by_times - measured))
    for name, values in errors.items():
        print(f"  prediction by {name}: mean |predicted - measured wall| = "
              f"{statistics.mean(values):.3f} of a plain step, worst {max(values):.3f}")  # fmt: skip


def planning_time() -> None:
    sym = zoo.resnet(num_layers=50)
    shapes = zoo.input_shapes("resnet50", 32)
    times = []
    for _ in range(3):
        start = time.perf_counter()
        plan = mx.executor.plan_memory(sym, shapes, grad_req="write")
        times.append(time.perf_counter() - start)
    print(
        f"\nplan ResNet-50 (batch 32, training: {len(plan.steps)} steps, {len(plan.entries)} "
        f"entries): {statistics.median(times):.3f} s (median of 3; target < 1 s)"
    )


def _chain(length: int):
    """A chain of ``length`` small ops (scalar multiplies and ReLUs alternating)."""
    x = mx.sym.Variable("x")
    for index in range(length):
        if index % 2:
            x = mx.sym.Activation(x, act_type="relu", name=f"relu{index}")
        else:
            x = x * 1.0001
    return x


def long_chains() -> None:
    """Planning and binding stay O(n log n): a 20,000-op chain against a 2,000-op one.

    Each size's timed region ends with a full garbage collection.  Without it
    the figure depended on where the collector's thresholds fell: the 20k
    run paid a full walk over all its objects inside the region, the 2k run
    paid its own later, outside it, and the ratio swung 9x-12x at idle.
    """
    from mxnb.executor.graph import build_graph
    from mxnb.executor.tournament import plan_graph

    print(
        "\nlong chains of small ops, training (targets: 20k bind+fwd+bwd <= 10x the 2k one; "
        "planning 20k < 2 s; 4k about 4x the 1k one)"
    )
    header = (
        f"{'ops':>7} {'steps':>7} {'build graph s':>14} {'planner s':>10} {'plan_memory s':>14} "
        f"{'bind s':>8} {'fwd+bwd s':>10} {'bind+run s':>11}"
    )
    print(header)
    print("-" * len(header))
    totals, cpu_totals = {}, {}
    for length in (1000, 2000, 4000, 20000):
        net = _chain(length)
        start = time.perf_counter()
        graph = build_graph(net, {"x": (4, 4)}, grad_req="write")
        built = time.perf_counter() - start
        start = time.perf_counter()
        plan_graph(graph)
        planner = time.perf_counter() - start
        start = time.perf_counter()
        mx.executor.plan_memory(net, {"x": (4, 4)}, grad_req="write")
        planned = time.perf_counter() - start
        gc.collect()  # each size starts from a collected heap ...
        cpu_start = time.process_time()  # every thread's CPU: steadier than wall on a busy machine
        start = time.perf_counter()
        exe = net.simple_bind(mx.cpu(), x=(4, 4))
        bound = time.perf_counter() - start
        start = time.perf_counter()
        exe.forward(is_train=True)
        exe.backward(mx.nd.ones((4, 4)))
        mx.nd.waitall()
        gc.collect()  # ... and pays for its own objects: one full walk (see the docstring)
        ran = time.perf_counter() - start
        totals[length] = bound + ran
        cpu_totals[length] = time.process_time() - cpu_start
        print(
            f"{length:>7} {len(graph.steps):>7} {built:>14.2f} {planner:>10.2f} {planned:>14.2f} "
            f"{bound:>8.2f} {ran:>10.2f} {bound + ran:>11.2f}",
            flush=True,
        )
    print(
        f"20k / 2k bind+fwd+bwd: {totals[20000] / totals[2000]:.1f}x wall, "
        f"{cpu_totals[20000] / cpu_totals[2000]:.1f}x CPU time (target <= 10x)"
    )
    print(f"4k / 1k bind+fwd+bwd: {totals[4000] / totals[1000]:.1f}x (linear: 4x; was 8x and more)")


def imperative_step(sym, arrays: dict, aux: dict, heads) -> None:
    """Run the symbol's graph node by node through the imperative invoke, under autograd."""
    values: dict[NodeEntry, object] = {}
    with mx.autograd.record():
        for node in topo_sort(sym._outputs):
            if node.op is None:
                values[NodeEntry(node, 0)] = arrays.get(node.name, aux.get(node.name))
                continue
            num_args = node.num_arguments()
            inputs = [values[entry] for entry in node.inputs[:num_args]]
            aux_in = [values[entry] for entry in node.inputs[num_args:]]
            outputs = invoke(node.op, inputs, aux=aux_in or None, name=node.name)
            for index, output in enumerate(outputs):
                values[NodeEntry(node, index)] = output
    mx.autograd.backward([values[head] for head in heads])


def executor_speed(batch: int = 64, repeats: int = 20) -> None:
    print(f"\nexecutor forward+backward vs op by op through mx.nd + autograd (batch {batch}):")
    rng = np.random.default_rng(0)
    for name in ("mlp", "lenet"):
        sym = zoo.build(name)
        shapes = zoo.input_shapes(name, batch)
        exe = sym.simple_bind(mx.cpu(), grad_req="write", **shapes)
        for key, array in exe.arg_dict.items():
            if key == "softmax_label":
                array[:] = rng.integers(0, 10, array.shape)
            else:
                array[:] = rng.standard_normal(array.shape).astype("float32") * 0.1
        arrays = {key: value.copy() for key, value in exe.arg_dict.items()}
        for key, value in arrays.items():
            if key != "softmax_label":
                value.attach_grad()
        aux = {key: value.copy() for key, value in exe.aux_dict.items()}

        def run_executor(exe=exe) -> None:
            exe.forward(is_train=True)
            exe.backward()
            mx.nd.waitall()

        def run_imperative(sym=sym, arrays=arrays, aux=aux) -> None:
            imperative_step(sym, arrays, aux, sym._outputs)
            mx.nd.waitall()

        for run in (run_executor, run_imperative):
            run()  # warm up
        timings = {"executor": [], "mx.nd": []}
        for _ in range(repeats):
            for key, run in (("executor", run_executor), ("mx.nd", run_imperative)):
                start = time.perf_counter()
                run()
                timings[key].append(time.perf_counter() - start)
        # best of the interleaved runs: the least disturbed by other load on the machine
        ours = min(timings["executor"])
        theirs = min(timings["mx.nd"])
        print(
            f"  {name:<6} executor {ours * 1e3:8.2f} ms   mx.nd {theirs * 1e3:8.2f} ms   "
            f"executor/mx.nd {ours / theirs:5.2f}   (engine: {mx.engine.engine_type()})"
        )


def _lstm(layers: int, steps: int, hidden: int, embed: int, vocab: int, batch: int) -> tuple:
    """The zoo's unrolled LSTM at other sizes, with its input shapes."""
    sizes = {"num_layers": layers, "seq_len": steps, "num_hidden": hidden, "num_embed": embed}
    return zoo.lstm_unrolled(num_classes=vocab, **sizes), zoo.lstm_shapes(batch, **sizes)


def windowed_lstms(time_limit: float = 120.0) -> None:
    """The exact planner with a window (:mod:`mxnb.executor.milp`) against greedy on LSTMs.

    Their full programs are too large for HiGHS (the LSTM LM's: 1.45M columns), so ``'auto'``
    gives them a window.  Tuned on: MXNet's LSTM LM export.  Held out: a 3-layer LSTM, 20
    steps, 256 hidden, 2,000 words.  Budgets are shares of the plain plan; each exact plan
    is planned for real, its time (wall / CPU) includes the greedy incumbent's search.
    """
    graphs = {
        "lstm_lm (MXNet export; the window was developed on it), batch 32 x 35": (
            network("lstm_lm", 32), (0.98, 0.96, 0.94, 0.92, 0.90)),
        "held out: zoo LSTM, 3 layers x 20 steps, 256 hidden, 2,000 words, batch 32": (
            _lstm(3, 20, 256, 128, 2000, 32), (0.96, 0.94, 0.92, 0.88, 0.84, 0.80)),
    }  # fmt: skip
    for label, ((sym, shapes), shares) in graphs.items():
        plain = mx.executor.plan_memory(sym, shapes)
        print(f"\n{label}: plain {plain.internal_bytes / MB:.1f} MiB; MiB (recompute/forward)")
        for share in shares:
            budget = int(share * plain.internal_bytes)
            row = [f"  {share:.0%} ({budget / MB:.1f})"]
            for solver in ("greedy", "milp"):
                start, start_cpu = time.perf_counter(), time.process_time()
                try:
                    plan = mx.executor.plan_memory(sym, shapes, budget=budget, solver=solver,
                                                   time_limit=time_limit)  # fmt: skip
                except mx.executor.MemoryBudgetError:
                    row.append(f"{solver}: no plan fits")
                    continue
                wall, cpu = time.perf_counter() - start, time.process_time() - start_cpu
                how = "" if solver == "greedy" else (
                    f" {plan.solver}, gap {plan.mip_gap if plan.mip_gap is None else round(plan.mip_gap, 3)}"
                    f", window {plan.milp_window}")  # fmt: skip
                row.append(f"{solver} {plan.internal_bytes / MB:.1f} ({plan.recompute_ratio:.4f}, "
                           f"{len(plan.recomputed_nodes)} recomputed){how} [{wall:.0f} / {cpu:.0f} s]")  # fmt: skip
            print(" | ".join(row), flush=True)


def _option(flag: str, default: str) -> str:
    """The value after ``flag`` on the command line, or ``default``."""
    return sys.argv[sys.argv.index(flag) + 1] if flag in sys.argv else default


def main() -> None:
    if "--time" in sys.argv:
        recompute_time()
        return
    if "--held-out" in sys.argv:
        limit = float(_option("--limit", "30"))
        held_out_curves(limit, _option("--only", ""))
        return
    if "--windows" in sys.argv:
        windowed_lstms(float(_option("--limit", "120")))
        return
    if "--peak" in sys.argv:
        honest_peak()
        return
    if "--proofs" in sys.argv:
        proofs_at_eight_budgets(only=_option("--only", ""))
        return
    if "--milp" in sys.argv:
        exact_planner_table()
        proofs_at_eight_budgets()
        exact_curves()
        return
    batches = (32,) if "--quick" in sys.argv else (1, 32, 64)
    plan_table(batches)
    recompute_table()
    exact_planner_table()
    proofs_at_eight_budgets()
    exact_curves()
    honest_peak()
    held_out_curves()
    windowed_lstms()
    recompute_time()
    planning_time()
    long_chains()
    executor_speed()


if __name__ == "__main__":
    main()
