"""``mx.metric``: evaluation metrics accumulated batch by batch, MXNet 1.x names and numbers.

Idea (MXNet: python/mxnet/metric.py): a metric keeps a running sum and a
count; ``update(labels, preds)`` adds one batch (lists of NDArrays, one per
output), ``get()`` returns ``(name, sum / count)``.  ``Module.fit`` resets
the local sums every epoch (``reset_local``) while the global ones run on.

Rules (MXNet 1.9.1's, checked against vectors from real MXNet):
    * Accuracy / TopKAccuracy / CrossEntropy / Loss count samples;
      MAE / MSE / RMSE count batches (the mean of per-batch means);
    * F1 is binary: ``average='macro'`` averages per-batch F1,
      ``'micro'`` pools the counts;
    * Perplexity is ``exp(mean negative log-likelihood)``, ``ignore_label`` skipped;
    * labels and predictions must come in lists of the same length.

State kept (per metric): ``sum_metric``, ``num_inst`` (local, since the last
reset) and ``global_sum_metric``, ``global_num_inst``.

Example::

    >>> import mxnb as mx
    >>> acc = mx.metric.create('acc')
    >>> acc.update([mx.nd.array([0, 1])], [mx.nd.array([[0.9, 0.1], [0.8, 0.2]])])
    >>> acc.get()
    ('accuracy', 0.5)
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy

from .base import MXNBError, ShapeError

__all__ = [
    "F1",
    "MAE",
    "MSE",
    "RMSE",
    "Accuracy",
    "CompositeEvalMetric",
    "CrossEntropy",
    "CustomMetric",
    "EvalMetric",
    "Loss",
    "Perplexity",
    "TopKAccuracy",
    "check_label_shapes",
    "create",
    "np",
    "register",
]

_REGISTRY: dict[str, type[EvalMetric]] = {}


def register(*aliases: str) -> Callable[[type], type]:
    """Class decorator: make a metric creatable by its lower-case class name and ``aliases``."""

    def decorate(cls: type) -> type:
        for name in (cls.__name__.lower(), *aliases):
            _REGISTRY[name] = cls
        return cls

    return decorate


def create(metric: Any, *args: Any, **kwargs: Any) -> EvalMetric:
    """A metric from a name (``'acc'``, ``'ce'``...), an EvalMetric, a function, or a list of those."""
    if isinstance(metric, EvalMetric):
        return metric
    if callable(metric):
        return CustomMetric(metric, *args, **kwargs)
    if isinstance(metric, (list, tuple)):
        composite = CompositeEvalMetric()
        for child in metric:
            composite.add(create(child, *args, **kwargs))
        return composite
    cls = _REGISTRY.get(str(metric).lower())
    if cls is None:
        raise MXNBError(
            f"metric {metric!r} is not known; known metrics: {', '.join(sorted(_REGISTRY))}"
        )
    return cls(*args, **kwargs)


def check_label_shapes(labels: Any, preds: Any, wrap: bool = False, shape: bool = False) -> tuple:
    """Check that labels and predictions agree in count (or shape); ``wrap`` lists single arrays."""
    label_shape = labels.shape if shape else len(labels)
    pred_shape = preds.shape if shape else len(preds)
    if label_shape != pred_shape:
        raise ShapeError(
            f"metric: shape of labels {label_shape} does not match shape of predictions {pred_shape}"
        )
    if wrap:
        from .ndarray import NDArray

        labels = [labels] if isinstance(labels, NDArray) else labels
        preds = [preds] if isinstance(preds, NDArray) else preds
    return labels, preds


def _numpy(value: Any) -> numpy.ndarray:
    return value.asnumpy() if hasattr(value, "asnumpy") else numpy.asarray(value)


class EvalMetric:
    """Base of every metric: running local and global sums."""

    def __init__(
        self,
        name: str,
        output_names: Sequence[str] | None = None,
        label_names: Sequence[str] | None = None,
        **kwargs: Any,
    ) -> None:
        self.name = str(name)
        self.output_names = output_names
        self.label_names = label_names
        self._kwargs = kwargs
        self.reset()

    def update(self, labels: Sequence[Any], preds: Sequence[Any]) -> None:
        """Add one batch."""
        raise NotImplementedError(type(self).__name__)

    def update_dict(self, label: dict, pred: dict) -> None:
        """Add one batch given as ``{name: array}`` dicts (``output_names`` / ``label_names`` pick)."""
        preds = [pred[n] for n in self.output_names] if self.output_names else list(pred.values())
        labels = [label[n] for n in self.label_names] if self.label_names else list(label.values())
        self.update(labels, preds)

    def add(self, value: float, count: int) -> None:
        """Add ``value`` over ``count`` instances to the local and global sums."""
        self.sum_metric += value
        self.global_sum_metric += value
        self.num_inst += count
        self.global_num_inst += count

    def reset(self) -> None:
        """Clear the local and global sums."""
        self.num_inst = 0
        self.sum_metric = 0.0
        self.global_num_inst = 0
        self.global_sum_metric = 0.0

    def reset_local(self) -> None:
        """Clear the local sums only."""
        self.num_inst = 0
        self.sum_metric = 0.0

    def get(self) -> tuple[Any, Any]:
        """``(name, value)`` over the batches since the last reset (nan before any)."""
        if self.num_inst == 0:
            return (self.name, float("nan"))
        return (self.name, self.sum_metric / self.num_inst)

    def get_global(self) -> tuple[Any, Any]:
        """``(name, value)`` over every batch since :meth:`reset`."""
        if self.global_num_inst == 0:
            return (self.name, float("nan"))
        return (self.name, self.global_sum_metric / self.global_num_inst)

    def get_name_value(self) -> list[tuple[str, float]]:
        """``[(name, value), ...]`` (one pair per child of a composite)."""
        name, value = self.get()
        if not isinstance(name, list):
            name, value = [name], [value]
        return list(zip(name, value))

    def get_global_name_value(self) -> list[tuple[str, float]]:
        """``[(name, global value), ...]``."""
        name, value = self.get_global()
        if not isinstance(name, list):
            name, value = [name], [value]
        return list(zip(name, value))

    def __str__(self) -> str:
        return f"EvalMetric: {dict(self.get_name_value())}"


@register("acc")
class Accuracy(EvalMetric):
    """Fraction of samples whose argmax prediction (along ``axis``) equals the label."""

    def __init__(self, axis: int = 1, name: str = "accuracy", **kwargs: Any) -> None:
        super().__init__(name, **kwargs)
        self.axis = axis

    def update(self, labels, preds):
        """Count correct predictions."""
        labels, preds = check_label_shapes(labels, preds, True)
        for label, pred in zip(labels, preds):
            pred = _numpy(pred)
            label = _numpy(label)
            if pred.shape != label.shape:
                pred = numpy.argmax(pred, axis=self.axis)
            pred = pred.astype("int32").ravel()
            label = label.astype("int32").ravel()
            check_label_shapes(label, pred)
            self.add(int((pred == label).sum()), len(pred))


@register("top_k_accuracy", "top_k_acc")
class TopKAccuracy(EvalMetric):
    """Fraction of samples whose label is among the ``top_k`` highest predictions."""

    def __init__(self, top_k: int = 1, name: str = "top_k_accuracy", **kwargs: Any) -> None:
        if top_k < 1:
            raise MXNBError(f"TopKAccuracy: top_k must be >= 1, got {top_k}")
        super().__init__(f"{name}_{top_k}", **kwargs)
        self.top_k = top_k

    def update(self, labels, preds):
        """Count labels within the top k."""
        labels, preds = check_label_shapes(labels, preds, True)
        for label, pred in zip(labels, preds):
            pred = _numpy(pred).astype("float32")
            if pred.ndim > 2:
                raise ShapeError("TopKAccuracy: predictions must have at most 2 dimensions")
            label = _numpy(label).astype("int32").ravel()
            if pred.ndim == 1:
                correct = int((pred.astype("int32").ravel() == label).sum())
            else:
                classes = pred.shape[1]
                order = numpy.argpartition(pred, -min(self.top_k, classes), axis=1)
                top = order[:, classes - min(self.top_k, classes) :]
                correct = int((top == label[:, None]).any(axis=1).sum())
            self.add(correct, pred.shape[0])


class _BinaryStats:
    """Confusion counts of a binary classifier (argmax over axis 1 of the predictions)."""

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        self.true_positives = self.false_positives = self.false_negatives = self.true_negatives = 0

    def update(self, label: Any, pred: Any) -> None:
        pred_label = numpy.argmax(_numpy(pred), axis=1)
        label = _numpy(label).astype("int32").ravel()
        check_label_shapes(label, pred_label)
        if len(numpy.unique(label)) > 2:
            raise MXNBError("F1 supports binary classification only (labels 0 and 1)")
        pred_true = pred_label == 1
        label_true = label == 1
        self.true_positives += int((pred_true & label_true).sum())
        self.false_positives += int((pred_true & ~label_true).sum())
        self.false_negatives += int((~pred_true & label_true).sum())
        self.true_negatives += int((~pred_true & ~label_true).sum())

    @property
    def total(self) -> int:
        return (
            self.true_positives + self.false_positives + self.false_negatives + self.true_negatives
        )

    @property
    def fscore(self) -> float:
        tp, fp, fn = self.true_positives, self.false_positives, self.false_negatives
        precision = tp / (tp + fp) if tp + fp > 0 else 0.0
        recall = tp / (tp + fn) if tp + fn > 0 else 0.0
        if precision + recall == 0:
            return 0.0
        return 2 * precision * recall / (precision + recall)


@register()
class F1(EvalMetric):
    """Binary F1 score; ``average='macro'`` (mean of batch scores) or ``'micro'`` (pooled)."""

    def __init__(self, name: str = "f1", average: str = "macro", **kwargs: Any) -> None:
        if average not in ("macro", "micro"):
            raise MXNBError(f"F1: average must be 'macro' or 'micro', got {average!r}")
        self.average = average
        self.stats = _BinaryStats()  # since reset_local
        self.global_stats = _BinaryStats()  # since reset
        super().__init__(name, **kwargs)

    def update(self, labels, preds):
        """Add each batch's confusion counts."""
        labels, preds = check_label_shapes(labels, preds, True)
        for label, pred in zip(labels, preds):
            self.stats.update(label, pred)
            self.global_stats.update(label, pred)
            if self.average == "macro":
                self.add(self.stats.fscore, 1)
                self.stats.reset()
                self.global_stats.reset()
            else:
                self.sum_metric = self.stats.fscore * self.stats.total
                self.num_inst = self.stats.total
                self.global_sum_metric = self.global_stats.fscore * self.global_stats.total
                self.global_num_inst = self.global_stats.total

    def reset(self) -> None:
        """Clear sums and counts."""
        super().reset()
        self.stats.reset()
        self.global_stats.reset()

    def reset_local(self) -> None:
        """Clear the local sums and counts."""
        super().reset_local()
        self.stats.reset()


class _BatchMeanMetric(EvalMetric):
    """MAE / MSE / RMSE: a per-batch value of ``label - pred``, averaged over batches."""

    def batch_value(self, difference: numpy.ndarray) -> float:
        raise NotImplementedError

    def update(self, labels, preds):
        """Add one value per (label, pred) pair."""
        labels, preds = check_label_shapes(labels, preds, True)
        for label, pred in zip(labels, preds):
            label = _numpy(label)
            pred = _numpy(pred)
            if label.ndim == 1:
                label = label.reshape(label.shape[0], 1)
            if pred.ndim == 1:
                pred = pred.reshape(pred.shape[0], 1)
            self.add(self.batch_value(label - pred), 1)


@register()
class MAE(_BatchMeanMetric):
    """Mean absolute error."""

    def __init__(self, name: str = "mae", **kwargs: Any) -> None:
        super().__init__(name, **kwargs)

    def batch_value(self, difference):
        """``mean(|label - pred|)``."""
        return float(numpy.abs(difference).mean())


@register()
class MSE(_BatchMeanMetric):
    """Mean squared error."""

    def __init__(self, name: str = "mse", **kwargs: Any) -> None:
        super().__init__(name, **kwargs)

    def batch_value(self, difference):
        """``mean((label - pred)^2)``."""
        return float((difference**2.0).mean())


@register()
class RMSE(_BatchMeanMetric):
    """Root mean squared error (per batch, then averaged)."""

    def __init__(self, name: str = "rmse", **kwargs: Any) -> None:
        super().__init__(name, **kwargs)

    def batch_value(self, difference):
        """``sqrt(mean((label - pred)^2))``."""
        return float(numpy.sqrt((difference**2.0).mean()))


@register("ce", "cross-entropy")
class CrossEntropy(EvalMetric):
    """Mean of ``-log(p[label] + eps)`` over samples."""

    def __init__(self, eps: float = 1e-12, name: str = "cross-entropy", **kwargs: Any) -> None:
        super().__init__(name, **kwargs)
        self.eps = eps

    def update(self, labels, preds):
        """Add each sample's negative log-probability of its label."""
        labels, preds = check_label_shapes(labels, preds, True)
        for label, pred in zip(labels, preds):
            label = _numpy(label).ravel()
            pred = _numpy(pred)
            if label.shape[0] != pred.shape[0]:
                raise ShapeError(
                    f"CrossEntropy: {label.shape[0]} labels for {pred.shape[0]} predictions"
                )
            prob = pred[numpy.arange(label.shape[0]), numpy.int64(label)]
            self.add(float((-numpy.log(prob + self.eps)).sum()), label.shape[0])


@register()
class Perplexity(EvalMetric):
    """``exp`` of the mean negative log-likelihood; labels equal to ``ignore_label`` skipped."""

    def __init__(
        self,
        ignore_label: int | None = None,
        axis: int = -1,
        name: str = "perplexity",
        **kwargs: Any,
    ) -> None:
        super().__init__(name, **kwargs)
        self.ignore_label = ignore_label
        self.axis = axis

    def update(self, labels, preds):
        """Add the batch's negative log-likelihood and its count."""
        labels, preds = check_label_shapes(labels, preds, True)
        loss = 0.0
        count = 0
        for label, pred in zip(labels, preds):
            pred = _numpy(pred)
            label = _numpy(label).ravel().astype("int32")
            if label.size * pred.shape[self.axis] != pred.size:
                raise ShapeError(
                    f"Perplexity: {label.size} labels do not fit predictions of shape {pred.shape}"
                )
            picked = numpy.take_along_axis(
                numpy.moveaxis(pred, self.axis, -1).reshape(-1, pred.shape[self.axis]),
                label[:, None],
                axis=1,
            ).ravel()
            if self.ignore_label is not None:
                ignore = (label == self.ignore_label).astype(picked.dtype)
                count -= int(ignore.sum())
                picked = picked * (1 - ignore) + ignore
            loss -= float(numpy.log(numpy.maximum(1e-10, picked)).sum())
            count += picked.size
        self.add(loss, count)

    def get(self):
        """``(name, exp(sum / count))``."""
        if self.num_inst == 0:
            return (self.name, float("nan"))
        return (self.name, math.exp(self.sum_metric / self.num_inst))

    def get_global(self):
        """``(name, exp(global sum / count))``."""
        if self.global_num_inst == 0:
            return (self.name, float("nan"))
        return (self.name, math.exp(self.global_sum_metric / self.global_num_inst))


@register()
class Loss(EvalMetric):
    """Mean of the outputs themselves (for networks whose output is a loss)."""

    def __init__(self, name: str = "loss", **kwargs: Any) -> None:
        super().__init__(name, **kwargs)

    def update(self, _, preds):
        """Add the sum of each output and its size."""
        from .ndarray import NDArray

        for pred in [preds] if isinstance(preds, NDArray) else preds:
            value = _numpy(pred)
            self.add(float(value.sum()), value.size)


class CustomMetric(EvalMetric):
    """A metric from ``feval(label, pred) -> value`` or ``(sum, count)`` on numpy arrays."""

    def __init__(
        self,
        feval: Callable,
        name: str | None = None,
        allow_extra_outputs: bool = False,
        **kwargs: Any,
    ) -> None:
        if name is None:
            name = feval.__name__
            if "<" in name:
                name = f"custom({name})"
        super().__init__(name, **kwargs)
        self._feval = feval
        self._allow_extra_outputs = allow_extra_outputs

    def update(self, labels, preds):
        """Call ``feval`` per (label, pred) pair."""
        if not self._allow_extra_outputs:
            labels, preds = check_label_shapes(labels, preds, True)
        for label, pred in zip(labels, preds):
            value = self._feval(_numpy(label), _numpy(pred))
            if isinstance(value, tuple):
                self.add(value[0], value[1])
            else:
                self.add(value, 1)


def np(
    numpy_feval: Callable, name: str | None = None, allow_extra_outputs: bool = False
) -> CustomMetric:
    """Wrap a numpy function ``f(label, pred)`` as a metric (MXNet's ``mx.metric.np``)."""

    def feval(label: Any, pred: Any) -> Any:
        return numpy_feval(label, pred)

    feval.__name__ = numpy_feval.__name__
    return CustomMetric(feval, name, allow_extra_outputs)


@register("composite")
class CompositeEvalMetric(EvalMetric):
    """Several metrics updated together; ``get()`` returns lists of names and values."""

    def __init__(
        self, metrics: Sequence[Any] | None = None, name: str = "composite", **kwargs: Any
    ) -> None:
        super().__init__(name, **kwargs)
        self.metrics = [create(metric) for metric in (metrics or [])]

    def add(self, metric: Any, count: int | None = None) -> None:  # type: ignore[override]
        """Add a child metric (a name, function or EvalMetric)."""
        self.metrics.append(create(metric))

    def get_metric(self, index: int) -> EvalMetric:
        """The child at ``index``."""
        return self.metrics[index]

    def update_dict(self, labels, preds):
        """Update every child from dicts."""
        for metric in self.metrics:
            metric.update_dict(labels, preds)

    def update(self, labels, preds):
        """Update every child."""
        for metric in self.metrics:
            metric.update(labels, preds)

    def reset(self):
        """Reset every child."""
        for metric in getattr(self, "metrics", []):
            metric.reset()

    def reset_local(self):
        """Reset every child's local sums."""
        for metric in self.metrics:
            metric.reset_local()

    def _collect(self, getter: str) -> tuple[list, list]:
        names, values = [], []
        for metric in self.metrics:
            name, value = getattr(metric, getter)()
            names.extend(name if isinstance(name, list) else [name])
            values.extend(value if isinstance(value, list) else [value])
        return names, values

    def get(self):
        """``([names], [values])`` of the children."""
        return self._collect("get")

    def get_global(self):
        """``([names], [global values])`` of the children."""
        return self._collect("get_global")
