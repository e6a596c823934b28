"""``mx.callback``: what ``fit`` calls after each batch and each epoch.

Idea (MXNet: python/mxnet/callback.py): a batch-end callback receives a
``BatchEndParam(epoch, nbatch, eval_metric, locals)``; an epoch-end callback
receives ``(epoch, symbol, arg_params, aux_params)``.  ``Speedometer`` logs
samples per second and the metric every ``frequent`` batches,
``do_checkpoint`` saves a checkpoint every ``period`` epochs, ``ProgressBar``
logs a text bar.  mxnb adds :class:`FitView`: a progress bar (an ipywidgets
bar in a notebook, a text line elsewhere) and a live plot of the per-epoch
metrics, which ``Module.fit(progress=..., live_plot=...)`` attaches itself.

Rule: callbacks only read; ``Speedometer(auto_reset=True)`` resets the
metric's LOCAL sums (the epoch's reported value is the global one).

State kept: Speedometer: ``tic``, ``last_count``; FitView: the epochs' metrics,
the batch count of an epoch once known, its widgets / figure.

Example::

    >>> import mxnb as mx
    >>> from mxnb.module import BatchEndParam
    >>> speed = mx.callback.Speedometer(batch_size=32, frequent=2)
    >>> for n in range(3):
    ...     speed(BatchEndParam(epoch=0, nbatch=n, eval_metric=None, locals=None))
"""

from __future__ import annotations

import logging
import math
import time
from typing import Any

__all__ = [
    "FitView",
    "LogValidationMetricsCallback",
    "ProgressBar",
    "Speedometer",
    "do_checkpoint",
    "fit_view",
    "log_train_metric",
    "module_checkpoint",
]

_LOG = logging.getLogger(__name__)


def do_checkpoint(prefix: str, period: int = 1) -> Any:
    """An epoch-end callback saving ``prefix-symbol.json`` and ``prefix-%04d.params`` every ``period`` epochs."""
    from .model import save_checkpoint

    period = int(max(1, period))

    def _callback(iter_no: int, sym: Any, arg: dict, aux: dict) -> None:
        if (iter_no + 1) % period == 0:
            save_checkpoint(prefix, iter_no + 1, sym, arg, aux)

    return _callback


def module_checkpoint(
    mod: Any, prefix: str, period: int = 1, save_optimizer_states: bool = False
) -> Any:
    """An epoch-end callback calling ``mod.save_checkpoint`` every ``period`` epochs."""
    period = int(max(1, period))

    def _callback(iter_no: int, sym: Any = None, arg: Any = None, aux: Any = None) -> None:
        if (iter_no + 1) % period == 0:
            mod.save_checkpoint(prefix, iter_no + 1, save_optimizer_states)

    return _callback


def log_train_metric(period: int, auto_reset: bool = False) -> Any:
    """A batch-end callback logging the training metric every ``period`` batches."""

    def _callback(param: Any) -> None:
        if param.nbatch % period == 0 and param.eval_metric is not None:
            for name, value in param.eval_metric.get_name_value():
                _LOG.info("Iter[%d] Batch[%d] Train-%s=%f", param.epoch, param.nbatch, name, value)
            if auto_reset:
                param.eval_metric.reset_local()

    return _callback


class Speedometer:
    """Log samples per second (and the metric) every ``frequent`` batches."""

    def __init__(self, batch_size: int, frequent: int = 50, auto_reset: bool = True) -> None:
        self.batch_size = batch_size
        self.frequent = frequent
        self.auto_reset = auto_reset
        self.init = False
        self.tic = 0.0
        self.last_count = 0
        self.last_speed: float | None = None

    def __call__(self, param: Any) -> None:
        """Measure and log at every ``frequent``-th batch."""
        count = param.nbatch
        if self.last_count > count:
            self.init = False
        self.last_count = count
        if not self.init:
            self.init = True
            self.tic = time.time()
            return
        if count % self.frequent != 0:
            return
        elapsed = max(time.time() - self.tic, 1e-9)
        self.last_speed = self.frequent * self.batch_size / elapsed
        if param.eval_metric is not None:
            name_value = param.eval_metric.get_name_value()
            if self.auto_reset:
                param.eval_metric.reset_local()
            text = "".join(f"\t{name}={value:f}" for name, value in name_value)
            _LOG.info(
                "Epoch[%d] Batch [%d-%d]\tSpeed: %.2f samples/sec%s",
                param.epoch,
                count - self.frequent,
                count,
                self.last_speed,
                text,
            )
        else:
            _LOG.info(
                "Iter[%d] Batch [%d]\tSpeed: %.2f samples/sec", param.epoch, count, self.last_speed
            )
        self.tic = time.time()


class ProgressBar:
    """Log a text progress bar of ``total`` batches."""

    def __init__(self, total: int, length: int = 80) -> None:
        self.bar_len = length
        self.total = total
        self.last_text = ""

    def __call__(self, param: Any) -> None:
        """Log the bar for batch ``param.nbatch``."""
        count = param.nbatch
        filled = round(self.bar_len * count / float(self.total))
        percents = math.ceil(100.0 * count / float(self.total))
        self.last_text = f"[{'=' * filled}{'-' * (self.bar_len - filled)}] {percents}%"
        _LOG.info("%s\r", self.last_text)


class LogValidationMetricsCallback:
    """An eval-end callback logging the validation metrics."""

    def __call__(self, param: Any) -> None:
        """Log each metric."""
        if param.eval_metric is None:
            return
        for name, value in param.eval_metric.get_name_value():
            _LOG.info("Epoch[%d] Validation-%s=%f", param.epoch, name, value)


def _in_notebook() -> bool:
    try:
        from IPython import get_ipython
    except ImportError:
        return False
    shell = get_ipython()
    return shell is not None and type(shell).__name__ == "ZMQInteractiveShell"


class FitView:
    """What ``fit`` shows: a progress bar per batch and a plot of the metrics per epoch.

    In a notebook the bar is an ipywidgets ``IntProgress`` and the plot a
    matplotlib figure redrawn in an ``Output`` after each epoch; elsewhere the
    bar is a text line (``text``) and the figure is kept in ``figure``.
    """

    def __init__(
        self,
        num_epoch: int,
        progress: bool,
        live_plot: bool,
        notebook: bool,
        batches: int | None = None,
    ) -> None:
        self.num_epoch = num_epoch
        self.progress = progress
        self.live_plot = live_plot
        self.notebook = notebook
        # known before the first epoch when the iterator says how many examples it holds
        self.batches_per_epoch: int | None = batches
        self.records: list[dict] = []
        self.text = ""
        self.figure: Any = None
        self.bar: Any = None
        self.output: Any = None
        self._epochs_done = 0
        if notebook:
            import ipywidgets
            from IPython.display import display

            children = []
            if progress:
                self.bar = ipywidgets.IntProgress(value=0, min=0, max=1, description="fit")
                self.label = ipywidgets.Label("")
                children.append(ipywidgets.HBox([self.bar, self.label]))
            if live_plot:
                self.output = ipywidgets.Output()
                children.append(self.output)
            display(ipywidgets.VBox(children))

    def batch_end(self, param: Any) -> None:
        """Advance the bar."""
        if not self.progress:
            return
        done = param.nbatch + 1
        if self.batches_per_epoch is not None and done > self.batches_per_epoch:
            self.batches_per_epoch = done  # a longer epoch (roll_over): the count follows it
        total = f"/{self.batches_per_epoch}" if self.batches_per_epoch else ""
        self.text = f"epoch {param.epoch + 1}/{self.num_epoch} batch {done}{total}"
        if self.bar is not None:
            if self.batches_per_epoch:
                self.bar.max = self.batches_per_epoch * self.num_epoch
                self.bar.value = min(
                    self._epochs_done * self.batches_per_epoch + done, self.bar.max
                )
            self.label.value = self.text

    def epoch_end(self, record: dict) -> None:
        """Record an epoch's metrics and redraw the plot."""
        self.records.append(record)
        self._epochs_done += 1
        if self.batches_per_epoch is None and self.progress and self.text:
            self.batches_per_epoch = int(self.text.split("batch ")[1].split("/")[0])
        if self.live_plot:
            self.draw()

    def draw(self) -> Any:
        """Draw train / validation metrics against epochs; return the figure."""
        from matplotlib.figure import Figure
        from matplotlib.ticker import MaxNLocator

        if self.figure is None:  # no pyplot: shown through the Output widget as a PNG
            self.figure = Figure(figsize=(6.4, 3))
            self.axes = self.figure.add_subplot(1, 1, 1)
        axes = self.axes
        axes.clear()
        epochs = [record["epoch"] for record in self.records]
        for phase in ("train", "validation"):
            series: dict[str, list] = {}
            for record in self.records:
                for name, value in record.get(phase, []):
                    series.setdefault(name, []).append(value)
            for name, values in series.items():
                axes.plot(epochs[: len(values)], values, marker="o", label=f"{phase} {name}")
        axes.set_xlabel("epoch")
        axes.xaxis.set_major_locator(MaxNLocator(integer=True))  # whole epochs only
        axes.set_ylabel("metric")
        axes.grid(color="#eeeeee")
        axes.legend(loc="upper left", bbox_to_anchor=(1.02, 1.0), fontsize=8, frameon=False)
        self.figure.tight_layout()
        if self.output is not None:
            from IPython.display import display

            from .widgets._render import FigureImage

            self.output.clear_output(wait=True)
            with self.output:
                display(FigureImage(self.figure))
        return self.figure


def batches_hint(data: Any) -> int | None:
    """Batches per epoch of an iterator that says how many examples it holds (``num_data``
    and ``batch_size``, as NDArrayIter); None when it does not."""
    count, size = getattr(data, "num_data", None), getattr(data, "batch_size", None)
    if not isinstance(count, int) or not isinstance(size, int) or size <= 0:
        return None
    return -(-count // size)


def fit_view(
    progress: bool | None, live_plot: bool, num_epoch: int, batches: int | None = None
) -> FitView | None:
    """The FitView ``fit`` attaches: progress None means "in a notebook only"."""
    notebook = _in_notebook()
    show_progress = notebook if progress is None else bool(progress)
    if not show_progress and not live_plot:
        return None
    return FitView(num_epoch, show_progress, live_plot, notebook, batches)
