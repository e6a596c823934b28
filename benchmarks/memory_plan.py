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
ratio <= 0.35), and the wall-clock overhead of a training step with
recomputation on LeNet and ResNet-18 at a small batch (same step without, interleaved);

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
then the exact curve of resnet18_v1 (budgets every 5 % of the plain plan, 30 s
each): the widest step between neighbouring points and how many were proven optimal;

Run: ``.venv/bin/python benchmarks/memory_plan.py`` (``--quick``: batch 32 only;
``--milp``: the exact planner's table only, a few minutes).
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
from mxnb.executor import zoo
from mxnb.ndarray.invoke import invoke
from mxnb.symbol.graph import NodeEntry, topo_sort

HERE = Path(__file__).resolve().parent
NETWORKS = (
    "mlp", "lenet", "alexnet", "vgg16", "resnet18", "inception_bn", "inception_v3", "lstm", "lstm_lm"
)  # fmt: skip
LSTM_LM = HERE.parent / "tests" / "rnn" / "data" / "lstm_lm-symbol.json"  # MXNet's export


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


def exact_curve(name: str = "resnet18_v1", step: float = 0.05, time_limit: float = 30.0) -> None:
    """The exact planner's curve: budgets every ``step`` of the plain plan, from plain down."""
    sym = mx.sym.load(str(EXPORTS / f"{name}_train-symbol.json"))
    req = {arg: "write" for arg in sym.list_arguments()}
    req["data"] = req["softmax_label"] = "null"
    shapes = {"data": (32, 3, 224, 224)}
    plain = mx.executor.plan_memory(sym, shapes, grad_req=req)
    print(f"\nexact curve of {name}, batch 32: budgets every {step:.0%} of the plain plan "
          f"({plain.internal_bytes / MB:.1f} MiB), time limit {time_limit:.0f} s each")  # fmt: skip
    plans, share = [plain], 1.0 - step
    while share > 0.3:
        budget = int(plain.internal_bytes * share)
        start = time.perf_counter()
        try:
            plan = mx.executor.plan_memory(sym, shapes, grad_req=req, budget=budget,
                                           solver="milp", time_limit=time_limit)  # fmt: skip
        except mx.executor.MemoryBudgetError:
            print(f"  {share:.2f} x plain: no plan fits")
            break
        gap = "-" if plan.mip_gap is None else f"{plan.mip_gap:.2g}"
        print(f"  {share:.2f} x plain: {plan.internal_bytes / MB:7.1f} MiB "
              f"({plan.recompute_ratio:.3f}) {plan.solver}, gap {gap}, "
              f"{time.perf_counter() - start:.0f} s")  # fmt: skip
        plans.append(plan)
        share -= step
    sizes = sorted({p.internal_bytes for p in plans}, reverse=True)
    widest = max((a - b for a, b in zip(sizes, sizes[1:])), default=0)
    proven = sum(1 for p in plans[1:] if p.solver == "milp" and p.mip_gap == 0)
    print(f"  widest step between neighbouring points: {widest / plain.internal_bytes:.1%} of plain "
          f"(target <= 5%); optimality proven at {proven} of {len(plans) - 1} budgets")  # fmt: skip


def recompute_overhead(repeats: int = 5) -> None:
    """Wall-clock of a training step with recomputation against the same step without."""
    print("\ntraining step with recomputation / without (best of interleaved runs)")
    for name, batch in (("lenet", 64), ("resnet18", 2)):
        sym = zoo.build(name)
        shapes = zoo.input_shapes(name, batch)
        executors = {}
        for mode in (None, "mirror", "sqrt"):
            exe = sym.simple_bind(mx.cpu(), grad_req="write", recompute=mode, **shapes)
            rng = np.random.default_rng(0)  # the same values in every executor
            for key, array in exe.arg_dict.items():
                if key == "softmax_label":
                    array[:] = rng.integers(0, 10, array.shape)
                else:
                    array[:] = rng.standard_normal(array.shape).astype("float32") * 0.1
            executors[mode] = exe

        def step(exe) -> None:
            exe.forward(is_train=True)
            exe.backward()
            mx.nd.waitall()

        for exe in executors.values():
            step(exe)  # warm up
        timings: dict = {mode: [] for mode in executors}
        for _ in range(repeats):
            for mode, exe in executors.items():
                start = time.perf_counter()
                step(exe)
                timings[mode].append(time.perf_counter() - start)
        plain = min(timings[None])
        for mode in ("mirror", "sqrt"):
            plan = executors[mode].memory_plan
            print(
                f"  {name:<9} batch {batch:>3} {mode:<7} {min(timings[mode]) / plain:5.2f}x time "
                f"({plain * 1e3:.1f} ms plain), FLOPs ratio {plan.recompute_ratio:.2f}, "
                f"{len(plan.recompute_steps)} extra steps"
            )


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


def main() -> None:
    if "--milp" in sys.argv:
        exact_planner_table()
        exact_curve()
        return
    batches = (32,) if "--quick" in sys.argv else (1, 32, 64)
    plan_table(batches)
    recompute_table()
    exact_planner_table()
    exact_curve()
    recompute_overhead()
    planning_time()
    long_chains()
    executor_speed()


if __name__ == "__main__":
    main()
