"""``mx.nd.contrib``: MXNet's namespace for the operators registered as ``_contrib_<name>``.

MXNet 1.x registers its contributed operators with a ``_contrib_`` prefix and
shows them without it under ``mx.nd.contrib`` (``mx.nd.contrib.isnan`` runs
``_contrib_isnan``); this module forwards each attribute the same way
(:mod:`mxnb.operator.prefixed`).  It also holds MXNet's Python-level contrib
function :func:`rand_zipfian`, written once for ``mx.nd`` and ``mx.sym``.

Example::

    >>> import mxnb as mx
    >>> mx.nd.contrib.isinf(mx.nd.array([1.0, float('inf')])).asnumpy().tolist()
    [0.0, 1.0]
"""

from __future__ import annotations

import math
from typing import Any

from ..operator.prefixed import forwarder

__all__ = ["rand_zipfian", "zipfian_sample"]

__getattr__ = forwarder("mxnb.ndarray.contrib", "_contrib_", "mxnb.ndarray")


def zipfian_sample(front: Any, true_classes: Any, num_sampled: int, range_max: int, **where: Any):
    """:func:`rand_zipfian` written against ``front`` (``mx.nd`` or ``mx.sym``).

    Classes follow the log-uniform law ``P(c) = log((c + 2) / (c + 1)) / log(range_max + 1)``:
    ``floor(exp(u)) - 1`` for ``u`` uniform on ``[0, log(range_max + 1))``,
    taken modulo ``range_max``.  ``where`` is passed to the uniform sampler (``ctx``).
    """
    log_range = math.log(range_max + 1)
    draws = front.random.uniform(0, log_range, shape=(num_sampled,), dtype="float64", **where)
    sampled = front.Cast(front.exp(draws) - 1, dtype="int64") % range_max

    def expected_count(classes: Any) -> Any:
        wide = front.Cast(classes, dtype="float64")
        return front.log((wide + 2.0) / (wide + 1.0)) / log_range * num_sampled

    return sampled, expected_count(true_classes), expected_count(sampled)


def rand_zipfian(true_classes: Any, num_sampled: int, range_max: int, ctx: Any = None) -> tuple:
    """Draw ``num_sampled`` classes from the approximate log-uniform (Zipfian) law (MXNet's contrib).

    Returns ``(sampled_classes, expected_count_true, expected_count_sampled)``:
    int64 classes in ``[0, range_max)`` and, for the true and the sampled
    classes, the expected count of each among ``num_sampled`` draws (float64).

    Example::

        >>> import mxnb as mx
        >>> sampled, _, counts = mx.nd.contrib.rand_zipfian(mx.nd.array([3]), 4, 5)
        >>> sampled.shape, counts.dtype.name
        ((4,), 'float64')
    """
    from .. import ndarray
    from ..context import current_context

    ctx = ctx or current_context()
    true_classes = true_classes.as_in_context(ctx)
    return zipfian_sample(ndarray, true_classes, num_sampled, range_max, ctx=ctx)
