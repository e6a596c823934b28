"""GPU benchmark: mxnb on ``gpu(0)`` beside PyTorch on the same device, in the same run.

Issue 32's figures, each as a ratio against its peer measured here:

* a ResNet-18 training step (forward + backward, batch 32 and 128) against a
  PyTorch ResNet-18 of the same layers (target <= 2.0x); LeNet and an MLP beside it;
* a tiny op, ``a += 1`` on a (1000,) float32 array: mxnb, bare cupy, PyTorch's
  ``add_`` (target: mxnb <= 1.3x bare cupy);
* a training BatchNorm (forward + backward, (32, 64, 56, 56)): mxnb's fused kernels
  against PyTorch's ``batch_norm``;
* an optimizer pass (SGD with momentum over ResNet-18's parameters): one fused kernel per
  parameter against PyTorch's ``SGD`` step;
* memory during the step: mxnb's planned bytes (internal + arguments +
  gradients + aux), the device pool's peak, PyTorch's peak
  (targets: pool peak <= 1.15x the plan and <= 1.3x PyTorch's).

Precision: float32 everywhere.  PyTorch runs with its defaults, printed
(``cudnn.allow_tf32`` is on by default for convolutions; matmul TF32 off);
mxnb uses no TF32.

Without a GPU (no cupy, or no device) the same figures are taken on the
CPU, mxnb on ``cpu(0)`` beside PyTorch on the CPU (if installed) and numpy
for the tiny op, and the header says so: they are not GPU figures.

Run: ``python benchmarks/gpu.py [--quick]`` (``--quick``: batch 32 only,
fewer repeats).  Wall time is what is measured (a GPU's work is not CPU
time of this process); each figure is the median of interleaved repeats.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from typing import Any

import numpy as np

import mxnb as mx
from mxnb.context import _real_gpu_count
from mxnb.executor import fusion, zoo


def _device() -> tuple[mx.Context, Any, str]:
    """mxnb's context, the array module, and a header line saying what runs where."""
    if _real_gpu_count():
        import cupy

        name = cupy.cuda.runtime.getDeviceProperties(0)["name"].decode()
        return mx.gpu(0), cupy, f"GPU: {name}, cupy {cupy.__version__}"
    return mx.cpu(), np, "no GPU here: CPU figures (mxnb on cpu(0)), not GPU figures"


def _torch() -> Any:
    try:
        import torch
    except ImportError:
        return None
    return torch


def _sync(xp: Any, torch: Any) -> None:
    if xp is not np:
        xp.cuda.Device().synchronize()
    if torch is not None and torch.cuda.is_available():
        torch.cuda.synchronize()


def _median_ms(runs: dict[str, Callable[[], None]], repeat: int, xp: Any, torch: Any) -> dict:
    """Median wall ms of each run, taken in interleaved rounds (after one warm-up each)."""
    for run in runs.values():
        run()
    _sync(xp, torch)
    times: dict[str, list[float]] = {name: [] for name in runs}
    for _ in range(repeat):
        for name, run in runs.items():
            _sync(xp, torch)
            start = time.perf_counter()
            run()
            _sync(xp, torch)
            times[name].append((time.perf_counter() - start) * 1e3)
    return {name: statistics.median(values) for name, values in times.items()}


# -- the networks -------------------------------------------------------------------------


def mxnb_step(name: str, batch: int, ctx: mx.Context) -> tuple[Callable[[], None], Any]:
    """One forward + backward of zoo network ``name``; and its executor (for the plan)."""
    sym = zoo.build(name)
    shapes = zoo.input_shapes(name, batch)
    exe = sym.simple_bind(ctx, grad_req="write", **shapes)
    rng = np.random.default_rng(0)
    for key, array in exe.arg_dict.items():
        if key == "softmax_label":
            array[:] = rng.integers(0, 10, array.shape).astype(np.float32)
        else:
            array[:] = rng.normal(0, 0.05, array.shape).astype(np.float32)

    def step() -> None:
        exe.forward(is_train=True)
        exe.backward()
        for grad in exe.grad_arrays:
            if grad is not None:
                grad.wait_to_read()

    return step, exe


def torch_resnet18(torch: Any) -> Any:
    """ResNet-18 (v1, as the zoo's) in PyTorch, written out: torchvision may be absent."""
    nn = torch.nn

    class Block(nn.Module):
        def __init__(self, cin: int, cout: int, stride: int) -> None:
            super().__init__()
            self.c1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
            self.b1 = nn.BatchNorm2d(cout)
            self.c2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
            self.b2 = nn.BatchNorm2d(cout)
            self.short = None
            if stride != 1 or cin != cout:
                self.short = nn.Sequential(
                    nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout)
                )

        def forward(self, x: Any) -> Any:
            y = torch.relu(self.b1(self.c1(x)))
            y = self.b2(self.c2(y))
            return torch.relu(y + (x if self.short is None else self.short(x)))

    layers = [nn.Conv2d(3, 64, 7, 2, 3, bias=False), nn.BatchNorm2d(64), nn.ReLU()]
    layers.append(nn.MaxPool2d(3, 2, 1))
    cin = 64
    for cout, stride in ((64, 1), (128, 2), (256, 2), (512, 2)):
        layers += [Block(cin, cout, stride), Block(cout, cout, 1)]
        cin = cout
    layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(512, 1000)]
    return nn.Sequential(*layers)


def torch_step(torch: Any, batch: int) -> Callable[[], None]:
    device = "cuda" if torch.cuda.is_available() else "cpu"
    model = torch_resnet18(torch).to(device)
    data = torch.randn(batch, 3, 224, 224, device=device)
    label = torch.randint(0, 1000, (batch,), device=device)
    loss_fn = torch.nn.CrossEntropyLoss()

    def step() -> None:
        model.zero_grad(set_to_none=False)
        loss_fn(model(data), label).backward()

    return step


# -- the figures --------------------------------------------------------------------------


def resnet_rows(batches: list[int], repeat: int, ctx: mx.Context, xp: Any, torch: Any) -> None:
    print(f"\n{'ResNet-18 step':<22}{'mxnb ms':>10}{'torch ms':>10}{'ratio':>8}  target <= 2.0x")
    for batch in batches:
        ours, exe = mxnb_step("resnet18", batch, ctx)
        runs = {"mxnb": ours}
        if torch is not None:
            runs["torch"] = torch_step(torch, batch)
        ms = _median_ms(runs, repeat, xp, torch)
        theirs = ms.get("torch")
        ratio = f"{ms['mxnb'] / theirs:.2f}x" if theirs else "-"
        print(
            f"{'batch ' + str(batch):<22}{ms['mxnb']:>10.1f}{theirs or float('nan'):>10.1f}{ratio:>8}"
        )
        memory_row(exe, batch, xp, torch)
        del exe


def memory_row(exe: Any, batch: int, xp: Any, torch: Any) -> None:
    """The plan's bytes beside the pool's peak (device only) and PyTorch's peak."""
    plan = exe.memory_plan
    arrays = sum(
        a.nbytes
        for group in (exe.arg_arrays, exe.grad_arrays, exe.aux_arrays)
        for a in group
        if a is not None
    )
    planned = plan.total_bytes + arrays
    line = f"  memory, batch {batch}: planned {planned / 2**20:.0f} MiB"
    line += (
        f" (internal {plan.internal_bytes / 2**20:.0f} + workspace {plan.workspace_bytes / 2**20:.0f}"
        f" + arguments, gradients, aux {arrays / 2**20:.0f})"
    )
    if xp is np:  # the CPU's analog: what the kernels allocate beyond the plan during a step
        temporaries = kernel_temporaries(exe)
        line += (
            f"; kernel temporaries {temporaries / 2**20:.0f} MiB (tracemalloc): plan + them = "
            f"{(planned + temporaries) / planned:.2f}x plan"
        )
    else:
        pool = xp.get_default_memory_pool()
        held = pool.total_bytes()
        line += f"; device pool holds {held / 2**20:.0f} MiB = {held / planned:.2f}x plan (target <= 1.15x)"
    if torch is not None and torch.cuda.is_available():
        line += f"; torch peak {torch.cuda.max_memory_allocated() / 2**20:.0f} MiB"
    print(line)


def kernel_temporaries(exe: Any) -> int:
    """Bytes numpy allocated during one training step beyond what was allocated before it.

    The bound arrays, the planned blocks and the workspace exist before the
    step, so the rise is the kernels' own temporaries: on a GPU they come out
    of cupy's pool beside the plan.
    """
    import tracemalloc

    tracemalloc.start()
    try:
        before, _ = tracemalloc.get_traced_memory()
        tracemalloc.reset_peak()
        exe.forward(is_train=True)
        exe.backward()
        mx.nd.waitall()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return peak - before


def tiny_op_row(repeat: int, ctx: mx.Context, xp: Any, torch: Any) -> None:
    count = 2000
    a = mx.nd.zeros((1000,), ctx=ctx)
    b = xp.zeros((1000,), dtype=np.float32)

    def ours() -> None:
        for _ in range(count):
            a.__iadd__(1)
        a.wait_to_read()

    def bare() -> None:
        for _ in range(count):
            b.__iadd__(1)

    runs = {"mxnb": ours, "bare": bare}
    if torch is not None:
        t = torch.zeros(1000, device="cuda" if torch.cuda.is_available() else "cpu")

        def theirs() -> None:
            for _ in range(count):
                t.add_(1)

        runs["torch"] = theirs
    ms = _median_ms(runs, repeat, xp, torch)
    us = {name: value * 1e3 / count for name, value in ms.items()}
    peer = "bare cupy" if xp is not np else "bare numpy"
    print(f"\ntiny op a += 1 (us/op): mxnb {us['mxnb']:.1f}, {peer} {us['bare']:.1f}", end="")
    print(f", torch {us['torch']:.1f}" if "torch" in us else "", end="")
    print(f"; mxnb / {peer} {us['mxnb'] / us['bare']:.2f}x (target <= 1.3x)")


def batch_norm_row(repeat: int, ctx: mx.Context, xp: Any, torch: Any) -> None:
    """A training BatchNorm forward + backward on (32, 64, 56, 56): mxnb's fused kernels
    (``mxnb/operator/fused.py``) against PyTorch's ``batch_norm`` on the same device."""
    shape = (32, 64, 56, 56)
    rng = np.random.default_rng(0)
    data = rng.standard_normal(shape).astype(np.float32)
    head = rng.standard_normal(shape).astype(np.float32)
    x, dy = mx.nd.array(data, ctx=ctx), mx.nd.array(head, ctx=ctx)
    gamma, beta = mx.nd.ones(shape[1], ctx=ctx), mx.nd.zeros(shape[1], ctx=ctx)
    moving = [mx.nd.zeros(shape[1], ctx=ctx), mx.nd.ones(shape[1], ctx=ctx)]
    for array in (x, gamma, beta):
        array.attach_grad()

    def ours() -> None:
        with mx.autograd.record():
            out = mx.nd.BatchNorm(x, gamma, beta, *moving, fix_gamma=False)
        out.backward(dy)
        x.grad.wait_to_read()

    runs = {"mxnb": ours}
    if torch is not None:
        device = "cuda" if torch.cuda.is_available() else "cpu"
        tx = torch.tensor(data, device=device, requires_grad=True)
        tdy = torch.tensor(head, device=device)
        weight = torch.ones(shape[1], device=device, requires_grad=True)
        bias = torch.zeros(shape[1], device=device, requires_grad=True)
        stats = [torch.zeros(shape[1], device=device), torch.ones(shape[1], device=device)]

        def theirs() -> None:
            out = torch.nn.functional.batch_norm(tx, *stats, weight, bias, training=True)
            out.backward(tdy)

        runs["torch"] = theirs
    ms = _median_ms(runs, repeat, xp, torch)
    print(f"\nBatchNorm forward + backward {shape} (ms): mxnb {ms['mxnb']:.2f}", end="")
    if "torch" in ms:
        print(f", torch {ms['torch']:.2f}; mxnb / torch {ms['mxnb'] / ms['torch']:.2f}x", end="")
    print()


def optimizer_row(repeat: int, ctx: mx.Context, xp: Any, torch: Any) -> None:
    """One SGD-with-momentum pass over ResNet-18's 61 parameters: mxnb's ``sgd_mom_update``
    (one fused kernel each, ``ops/optimizer_ops.py``) against PyTorch's ``SGD`` step (its
    default ``foreach`` form) on the same device."""
    from updates import LR, MOMENTUM, WD, parameter_shapes  # benchmarks/updates.py

    rng = np.random.default_rng(0)
    starts = [(rng.standard_normal(s, dtype=np.float32), rng.standard_normal(s, dtype=np.float32))
              for s in parameter_shapes()]  # fmt: skip
    arrays = [(mx.nd.array(w, ctx=ctx), mx.nd.array(g, ctx=ctx), mx.nd.zeros(w.shape, ctx=ctx))
              for w, g in starts]  # fmt: skip

    def ours() -> None:
        for weight, grad, mom in arrays:
            mx.nd.sgd_mom_update(weight, grad, mom, out=weight, lr=LR, wd=WD, momentum=MOMENTUM)
        arrays[-1][0].wait_to_read()

    runs = {"mxnb": ours}
    if torch is not None:
        device = "cuda" if torch.cuda.is_available() else "cpu"
        params = []
        for w, g in starts:
            tensor = torch.tensor(w, device=device)
            tensor.grad = torch.tensor(g, device=device)
            params.append(tensor)
        runs["torch"] = torch.optim.SGD(params, lr=LR, momentum=MOMENTUM, weight_decay=WD).step
    ms = _median_ms(runs, repeat, xp, torch)
    print(f"\nSGD with momentum over ResNet-18's 61 parameters (ms): mxnb {ms['mxnb']:.2f}", end="")
    if "torch" in ms:
        print(f", torch {ms['torch']:.2f}; mxnb / torch {ms['mxnb'] / ms['torch']:.2f}x", end="")
    print()


def small_nets(repeat: int, ctx: mx.Context, xp: Any, torch: Any) -> None:
    """LeNet, the MLP and the LSTM, each with pointwise fusion (the GPU default) and without."""
    print(f"\n{'other networks':<22}{'mxnb ms':>10}{'unfused ms':>12}{'ratio':>8}  "
          "(pointwise fusion on / off, mxnb.executor.fusion)")  # fmt: skip
    for name, batch in (("lenet", 64), ("mlp", 64), ("lstm", 32)):
        step, _ = mxnb_step(name, batch, ctx)

        def fused(step: Callable[[], None] = step) -> None:
            with fusion.fused_on(True):
                step()

        def unfused(step: Callable[[], None] = step) -> None:
            with fusion.fused_on(False):
                step()

        ms = _median_ms({"fused": fused, "unfused": unfused}, repeat, xp, torch)
        print(f"{name + ' batch ' + str(batch):<22}{ms['fused']:>10.1f}{ms['unfused']:>12.1f}"
              f"{ms['fused'] / ms['unfused']:>8.2f}")  # fmt: skip


def main() -> None:
    """Print the header, the ResNet-18 rows with memory, the tiny op and the small networks."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="batch 32 only, 3 repeats")
    args = parser.parse_args()
    ctx, xp, header = _device()
    torch = _torch()
    print(header)
    if torch is None:
        print("PyTorch is not installed: mxnb figures only")
    else:
        tf32 = torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32
        print(f"torch {torch.__version__}: cudnn.allow_tf32={tf32[0]}, matmul.allow_tf32={tf32[1]}")
    repeat = 3 if args.quick else 7
    resnet_rows([32] if args.quick else [32, 128], repeat, ctx, xp, torch)
    tiny_op_row(repeat, ctx, xp, torch)
    batch_norm_row(repeat, ctx, xp, torch)
    optimizer_row(repeat, ctx, xp, torch)
    small_nets(repeat, ctx, xp, torch)


if __name__ == "__main__":
    main()
