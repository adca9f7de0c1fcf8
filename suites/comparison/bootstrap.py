"""Is B faster than A? A bootstrap confidence interval on the ratio of medians, B over A.

Per-call times are skewed and often multimodal (a preempted call, a page fault, a clock step),
so neither a t-test nor a normal interval on the mean fits them; the median resists those
outliers and the bootstrap needs no assumption about the distribution's shape. Each side is
resampled on its own (the runs are independent: another commit, machine or library), the
ratio median(B*) / median(A*) is taken per resample, and its percentiles are the interval.

The decision needs more than "the interval excludes 1": with thousands of samples on a shared
and noisy machine, a 0.1% shift excludes 1 yet is below what reruns of the same code reproduce
(frequency scaling, the neighbour's load, memory placement). A row is only called faster or
slower when the whole interval lies beyond a minimum effect (2% by default).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

RESAMPLES = 2000
CONFIDENCE = 0.95
MIN_EFFECT = 0.02
SEED = 0
MIN_SAMPLES = 5  # below this a bootstrap of the median only reshuffles a handful of values
# Resamples are drawn in chunks so 2000 resamples of 100k samples never hold 1.6 GB at once.
_CHUNK_ELEMENTS = 4_000_000


@dataclass(frozen=True)
class RatioCI:
    ratio: float  # median(B) / median(A) on the samples as measured
    low: float
    high: float


def _resampled_medians(samples: np.ndarray, resamples: int, rng: np.random.Generator) -> np.ndarray:
    n = len(samples)
    chunk = max(1, _CHUNK_ELEMENTS // n)
    out = np.empty(resamples)
    for start in range(0, resamples, chunk):
        stop = min(resamples, start + chunk)
        index = rng.integers(0, n, size=(stop - start, n))  # (chunk, n): one resample per row
        out[start:stop] = np.median(samples[index], axis=1)
    return out


def ratio_ci(a, b, resamples: int = RESAMPLES, confidence: float = CONFIDENCE,
             seed: int = SEED) -> RatioCI:
    """Percentile bootstrap interval of median(b) / median(a). A fresh generator per call, so a
    row's interval does not depend on which other rows are compared, or in what order."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    rng = np.random.default_rng(seed)
    ratios = _resampled_medians(b, resamples, rng) / _resampled_medians(a, resamples, rng)
    tail = (1.0 - confidence) / 2.0
    low, high = np.quantile(ratios, [tail, 1.0 - tail])
    return RatioCI(float(np.median(b) / np.median(a)), float(low), float(high))


def verdict(ci: RatioCI, min_effect: float = MIN_EFFECT) -> str:
    """faster / slower only when the whole interval is beyond +-min_effect; otherwise same."""
    if ci.high < 1.0 - min_effect:
        return "faster"
    if ci.low > 1.0 + min_effect:
        return "slower"
    return "same"


def same_note(ci: RatioCI, min_effect: float) -> str:
    """Why a `same` row is the same: a reader should not take "inconclusive" for "equal"."""
    excludes_one = ci.high < 1.0 or ci.low > 1.0
    within_margin = ci.low >= 1.0 - min_effect and ci.high <= 1.0 + min_effect
    if within_margin:
        return f"a real shift, but under {min_effect:.0%}" if excludes_one else ""
    if excludes_one:
        return f"a real shift (the CI excludes 1) that may or may not reach {min_effect:.0%}"
    return f"inconclusive: the CI spans 1 and reaches beyond +-{min_effect:.0%}; more samples would tell"
