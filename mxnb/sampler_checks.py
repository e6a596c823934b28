"""Statistical checks for random samplers: chi-square over equal-probability buckets.

Idea: a sampler is right when its samples fall into buckets as often as the
distribution says.  Cut the support into buckets (for a continuous law, at its
quantiles, so every bucket has the same probability), draw many samples, count,
and run Pearson's chi-square test against the expected counts.  One p-value is
noisy, so :func:`verify_generator` repeats the test and asks that enough of the
repetitions pass.  These are the helpers MXNet 1.x's ``test_random.py`` imports
from ``mx.test_utils`` (same names and arguments; our own code).

Rule: a bucket is either a ``(low, high)`` pair (continuous: ``low <= x < high``)
or a single value (discrete: ``x == value``); all buckets of one check are of the
same kind.  Samples outside every bucket are not counted (as in MXNet's helper:
a float16 draw may round onto the last boundary); the expected counts are
scaled to the counted total.

State kept: none.

Example::

    >>> import numpy as np
    >>> from scipy import stats
    >>> from mxnb.sampler_checks import gen_buckets_probs_with_ppf, verify_generator
    >>> buckets, probs = gen_buckets_probs_with_ppf(stats.norm.ppf, 5)
    >>> rng = np.random.default_rng(0)
    >>> ok = verify_generator(lambda n: rng.normal(size=n), buckets, probs, nsamples=10000)
    >>> len(ok)
    5
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .base import MXNBError

__all__ = ["chi_square_check", "gen_buckets_probs_with_ppf", "mean_check", "var_check",
           "verify_generator"]  # fmt: skip


def gen_buckets_probs_with_ppf(
    ppf: Callable[[float], float], nbuckets: int
) -> tuple[list[tuple[float, float]], list[float]]:
    """``nbuckets`` buckets of equal probability, cut at the quantiles ``ppf(i / nbuckets)``."""
    probs = [1.0 / nbuckets] * nbuckets
    buckets = [(ppf(i / nbuckets), ppf((i + 1) / nbuckets)) for i in range(nbuckets)]
    return buckets, probs


def _counts(samples: np.ndarray, buckets: Sequence[Any]) -> np.ndarray:
    """How many samples fall in each bucket (pairs: ``[low, high)``; values: equality)."""
    if isinstance(buckets[0], (tuple, list)):
        return np.array([np.sum((samples >= low) & (samples < high)) for low, high in buckets])
    return np.array([np.sum(samples == value) for value in buckets])


def chi_square_check(
    generator: Callable[[int], Any],
    buckets: Sequence[Any],
    probs: Sequence[float],
    nsamples: int = 1000000,
) -> tuple[float, np.ndarray, np.ndarray]:
    """Pearson's chi-square test of ``nsamples`` draws; ``(p_value, observed, expected)``.

    ``generator(n)`` returns ``n`` samples (numpy or NDArray).  Raises MXNBError when
    no sample falls in any bucket.
    """
    from scipy import stats

    samples = generator(nsamples)
    samples = np.asarray(samples.asnumpy() if hasattr(samples, "asnumpy") else samples)
    samples = samples.reshape(-1)
    observed = _counts(samples, buckets)
    if observed.sum() == 0:
        raise MXNBError(
            f"chi_square_check: none of {samples.size} samples falls in a bucket; give "
            "buckets that cover the sampler's support"
        )
    expected = np.asarray(probs, dtype=np.float64) * samples.size
    _, p_value = stats.chisquare(observed, expected * observed.sum() / expected.sum())
    return float(p_value), observed, expected


def verify_generator(
    generator: Callable[[int], Any],
    buckets: Sequence[Any],
    probs: Sequence[float],
    nsamples: int = 1000000,
    nrepeat: int = 5,
    success_rate: float = 0.2,
    alpha: float = 0.05,
) -> list[float]:
    """Repeat :func:`chi_square_check` ``nrepeat`` times; at least ``success_rate`` must pass.

    A repetition passes when its p-value exceeds ``alpha``.  Returns the p-values;
    raises AssertionError (as MXNet's helper does) when too few pass.
    """
    p_values = [chi_square_check(generator, buckets, probs, nsamples)[0] for _ in range(nrepeat)]
    passed = sum(p > alpha for p in p_values)
    if passed < nrepeat * success_rate:
        raise AssertionError(
            f"verify_generator: {passed} of {nrepeat} chi-square tests passed at alpha={alpha} "
            f"(need {success_rate:.0%}); p-values {p_values}"
        )
    return p_values


def mean_check(
    generator: Callable[[int], Any], mu: float, sigma: float, nsamples: int = 1000000
) -> bool:
    """True when the sample mean is within 3 standard errors of ``mu``."""
    samples = np.asarray(generator(nsamples), dtype=np.float64)
    return bool(abs(samples.mean() - mu) < 3 * sigma / np.sqrt(nsamples))


def var_check(generator: Callable[[int], Any], sigma: float, nsamples: int = 1000000) -> bool:
    """True when the sample variance is within 3 standard errors of ``sigma ** 2``."""
    samples = np.asarray(generator(nsamples), dtype=np.float64)
    return bool(abs(samples.var() - sigma**2) < 3 * np.sqrt(2 * sigma**4 / (nsamples - 1)))
