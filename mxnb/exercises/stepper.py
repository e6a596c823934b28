"""The checkpointing stepper: walk forward and backward, and watch what each plan keeps alive.

Idea (Chen et al. 2016, "Training Deep Nets with Sublinear Memory Cost";
:mod:`mxnb.executor.recompute`): without recomputation every forward value
backward reads stays alive from its forward step to its backward reader, so
the live bytes climb through the forward pass and peak at its end.  The
``'mirror'`` plan drops cheap values after the forward pass and computes
them again when backward gets there; a byte *budget* picks the plan of the
trade-off family with the least recomputation that fits.  The stepper shows
the three side by side, one frame per step of the plain plan: the entries
alive in each plan (a bar per entry, coloured by storage block), the live
bytes so far, and the recomputed entries outlined in red in the frame where
they come back.

Rule: frame ``k`` shows, for each plan, the state at the step with the plain
plan's ``k``-th step name (recompute steps run just before the backward step
that needs them, so they fold into its frame).  A frame's live bytes are the
plan's own: ``plan.live_bytes()[index]``, the sum of the entries listed alive.

State kept:
    plans      label -> MemoryPlan ('plain', 'mirror', 'budget <bytes>')
    budget     the budget plan's bytes
    position   the frame shown

Example::

    >>> import mxnb as mx
    >>> from mxnb.executor import zoo
    >>> exe = zoo.mlp().simple_bind(mx.cpu(), data=(8, 784), grad_req='write')
    >>> stepper = mx.exercises.RecomputeStepper(exe)
    >>> frame = stepper.frame(3)
    >>> frame['plain'].live_bytes == stepper.plans['plain'].live_bytes()[frame['plain'].index]
    True
"""

from __future__ import annotations

import io
import os
from dataclasses import dataclass
from typing import Any

from ..atomic_file import write_atomically
from ..executor.plan import MemoryPlan
from ..widgets._render import FigureView
from ..widgets.memory import format_bytes
from ..widgets.plan_view import block_colour

__all__ = ["PlanFrame", "RecomputeStepper"]


@dataclass(frozen=True)
class PlanFrame:
    """One plan at one step: what is alive, and what came back by recomputation."""

    step: str  # the step's name
    index: int  # its index in the plan's own steps
    alive: tuple[tuple[str, int, int], ...]  # (entry, bytes, storage id), in block order
    live_bytes: int  # the plan's live bytes at this step
    recomputed: tuple[str, ...]  # entries recomputed since the previous frame


class RecomputeStepper(FigureView):
    """Step through an executor's forward and backward under the plain, mirror and budget plans.

    Parameters
    ----------
    executor : Executor
        A bound executor (``sym.simple_bind(..., grad_req='write')``).
    budget : int, optional
        Bytes for the budget plan (the plan with the least recomputation that fits); default:
        the smallest plan of the trade-off family (:func:`mxnb.executor.tradeoff_curve`).
    """

    def __init__(self, executor: Any, budget: int | None = None) -> None:
        from ..executor import MemoryBudgetError, plan_memory, tradeoff_curve

        sym = executor.symbol
        shapes = {name: array.shape for name, array in executor.arg_dict.items()}
        grad_req = dict(executor.memory_plan.grad_req_dict)
        plain = plan_memory(sym, shapes, grad_req=grad_req)
        mirror = plan_memory(sym, shapes, grad_req=grad_req, recompute="mirror")
        if budget is None:  # the tightest budget the trade-off family reaches
            budget = min(p.internal_bytes for p in tradeoff_curve(sym, shapes, grad_req))
        self.budget = int(budget)
        try:
            budgeted = plan_memory(sym, shapes, grad_req=grad_req, recompute=self.budget)
        except MemoryBudgetError:
            budgeted = mirror
        self.plans: dict[str, MemoryPlan] = {
            "plain": plain,
            "mirror": mirror,
            f"budget {format_bytes(int(budget))}": budgeted,
        }
        self.position = 0
        self._frames = self._walk()

    # -- the frames --------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self._frames)

    def _walk(self) -> list[dict[str, PlanFrame]]:
        """One frame per step of the plain plan, each plan at the step of the same name."""
        frames: list[dict[str, PlanFrame]] = [{} for _ in self.plans["plain"].steps]
        for label, plan in self.plans.items():
            live = plan.live_bytes()
            handed_over = {source for source, _ in plan.inplace_pairs}
            internal = list(plan.internal_entries())
            reached = -1  # the furthest step of this plan shown so far
            for k, name in enumerate(self.plans["plain"].steps):
                index = plan.steps.index(name)
                alive = []
                for entry in internal:
                    last = entry.last_step - 1 if entry.name in handed_over else entry.last_step
                    if max(entry.first_step, 0) <= index <= last:
                        alive.append((entry.name, entry.nbytes, entry.storage_id))
                alive.sort(key=lambda item: (item[2], item[0]))
                recomputed = tuple(
                    entry.name
                    for entry in internal
                    if entry.recompute_of and reached < entry.first_step <= index
                )
                reached = max(reached, index)
                frames[k][label] = PlanFrame(name, index, tuple(alive), live[index], recomputed)
        return frames

    def frame(self, k: int | None = None) -> dict[str, PlanFrame]:
        """Frame ``k`` (default: the current one): label -> :class:`PlanFrame`."""
        return self._frames[self.position if k is None else k]

    def frames(self) -> list[dict[str, PlanFrame]]:
        """Every frame, in step order."""
        return list(self._frames)

    def step(self, count: int = 1) -> RecomputeStepper:
        """Move ``count`` frames on (back when negative), staying inside the walk."""
        self.position = min(max(self.position + count, 0), len(self._frames) - 1)
        return self

    def goto(self, k: int) -> RecomputeStepper:
        """Show frame ``k``."""
        self.position = min(max(k, 0), len(self._frames) - 1)
        return self

    # -- drawing -----------------------------------------------------------------------
    def figure(self) -> Any:
        """The live-bytes curves with the current step marked, and each plan's alive entries."""
        from matplotlib.figure import Figure
        from matplotlib.patches import Patch

        frame = self.frame()
        labels = list(self.plans)
        figure = Figure(figsize=(10, 2.2 + 0.9 * len(labels)))
        grid = figure.add_gridspec(2, 1, height_ratios=(2.0, 0.9 * len(labels)), hspace=0.5)
        curves = figure.add_subplot(grid[0])
        scale = float(2**20)
        colours = ("#4e79a7", "#f28e2b", "#59a14f")
        for colour, label in zip(colours, labels):
            series = [f[label].live_bytes / scale for f in self._frames]
            curves.plot(range(len(series)), series, color=colour, label=label, linewidth=1.4)
        curves.axvline(self.position, color="#d62728", linewidth=1.2)
        curves.set_ylabel("live MiB", fontsize=8)
        curves.legend(fontsize=7, loc="upper left")
        step = frame[labels[0]].step
        curves.set_title(f"step {self.position + 1}/{len(self)}: {step}", fontsize=9, loc="left")
        curves.tick_params(labelsize=7)
        bars = figure.add_subplot(grid[1])
        for row, label in enumerate(labels):
            plan_frame = frame[label]
            left = 0.0
            came_back = set(plan_frame.recomputed)
            for name, nbytes, storage_id in plan_frame.alive:
                back = name in came_back
                bars.barh(
                    row,
                    nbytes / scale,
                    left=left,
                    height=0.6,
                    color=block_colour(storage_id),
                    edgecolor="#d62728" if back else "#ffffff",
                    linewidth=2.0 if back else 0.3,
                    hatch="////" if back else None,
                )
                left += nbytes / scale
            bars.text(
                left, row, f"  {format_bytes(plan_frame.live_bytes)}", va="center", fontsize=7
            )
        bars.set_yticks(range(len(labels)))
        bars.set_yticklabels(labels, fontsize=8)
        bars.invert_yaxis()
        bars.set_xlabel("entries alive now (MiB, coloured by storage block)", fontsize=8)
        top = max(f[label].live_bytes for f in self._frames for label in labels) / scale
        bars.set_xlim(0, 1.15 * top if top else 1)
        bars.tick_params(labelsize=7)
        bars.legend(
            handles=[
                Patch(facecolor="white", edgecolor="#d62728", hatch="////", label="recomputed")
            ],
            fontsize=7,
            loc="lower right",
        )
        return figure

    def to_frames(self, directory: str | os.PathLike, dpi: int = 80) -> list[str]:
        """Write every frame as ``frame_000.png`` ... under ``directory`` (atomically); return the paths."""
        os.makedirs(directory, exist_ok=True)
        paths = []
        keep = self.position
        for k in range(len(self)):
            self.position = k
            path = os.path.join(directory, f"frame_{k:03d}.png")
            write_atomically(path, self._png(dpi))
            paths.append(path)
        self.position = keep
        return paths

    def to_gif(self, path: str | os.PathLike, dpi: int = 60, ms_per_frame: int = 400) -> str:
        """Write the walk as an animated GIF (Pillow, written atomically) and return the path."""
        from PIL import Image

        images = []
        keep = self.position
        for k in range(len(self)):
            self.position = k
            with Image.open(io.BytesIO(self._png(dpi))) as frame:
                images.append(frame.convert("P", palette=Image.ADAPTIVE))
        self.position = keep
        buffer = io.BytesIO()
        images[0].save(
            buffer,
            format="GIF",
            save_all=True,
            append_images=images[1:],
            duration=ms_per_frame,
            loop=0,
        )
        write_atomically(path, buffer.getvalue())
        return os.fspath(path)

    def _png(self, dpi: int) -> bytes:
        """The current frame as PNG bytes."""
        buffer = io.BytesIO()
        self.figure().savefig(buffer, format="png", dpi=dpi)
        return buffer.getvalue()

    def to_text(self) -> str:
        """The current frame: per plan, the live bytes, the entries alive and those recomputed."""
        lines = [f"RecomputeStepper: step {self.position + 1}/{len(self)}"]
        for label, plan_frame in self.frame().items():
            back = (
                f", recomputed now: {', '.join(plan_frame.recomputed)}"
                if plan_frame.recomputed
                else ""
            )
            lines.append(
                f"  {label:<18} {format_bytes(plan_frame.live_bytes):>11}  "
                f"{len(plan_frame.alive)} entries alive{back}"
            )
        return "\n".join(lines)

    def widget(self) -> Any:
        """An ipywidgets slider over the frames with the figure below it."""
        import ipywidgets

        slider = ipywidgets.IntSlider(
            value=self.position, min=0, max=len(self) - 1, description="step"
        )
        image = ipywidgets.Image(format="png")

        def show(change: Any = None) -> None:
            self.position = slider.value
            buffer = io.BytesIO()
            self.figure().savefig(buffer, format="png", dpi=80, bbox_inches="tight")
            image.value = buffer.getvalue()

        slider.observe(show, names="value")
        show()
        return ipywidgets.VBox([slider, image])
