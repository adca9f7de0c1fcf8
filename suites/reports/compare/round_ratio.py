"""Is B faster than A? An interval on the ratio of B's to A's time, from timing rounds.

The unit of evidence is a round's median, not a call: the calls inside one round share one
machine state, so their spread says how steady that state was, not how much the next round or
the next run will differ (on a shared machine that is the spread that matters). Each side's
clean round medians are taken as independent draws (in logs, so 2x faster and 2x slower are
equally far from 1) and Welch's t interval on the difference of the mean logs gives the ratio's
95% interval: unequal spreads and round counts on the two sides are allowed.

The decision needs more than "the interval excludes 1": two runs of one commit, minutes apart,
land in different machine states (memory placement, the neighbour's jobs) by more than their
rounds' spread shows. A row is called faster or slower only when the whole interval lies beyond
a noise floor, measured as the A/A drift of runs on a shared machine (the README's "Timing on
a shared machine").
"""
from __future__ import annotations

import math
import statistics
from dataclasses import dataclass

from suites.results.intervals import t95

NOISE_FLOOR = 0.10
MIN_ROUNDS = 3  # a spread needs a few rounds; fewer and a row is not comparable


@dataclass(frozen=True)
class RatioCI:
    ratio: float  # exp(mean log B rounds - mean log A rounds): B's time over A's
    low: float
    high: float


def _mean_var(values) -> tuple[float, float, int]:
    logs = [math.log(v) for v in values]
    return statistics.fmean(logs), statistics.variance(logs), len(logs)


def ratio_ci(a_rounds, b_rounds) -> RatioCI:
    """95% Welch interval of B/A from each side's round medians (at least 2 per side)."""
    (ma, va, na), (mb, vb, nb) = _mean_var(a_rounds), _mean_var(b_rounds)
    se2 = va / na + vb / nb
    diff = mb - ma
    if se2 == 0:
        return RatioCI(math.exp(diff), math.exp(diff), math.exp(diff))
    dof = se2**2 / ((va / na) ** 2 / (na - 1) + (vb / nb) ** 2 / (nb - 1))
    half = t95(max(1, int(dof))) * math.sqrt(se2)
    return RatioCI(math.exp(diff), math.exp(diff - half), math.exp(diff + half))


def verdict(ci: RatioCI, floor: float = NOISE_FLOOR) -> str:
    """faster / slower only when the whole interval is beyond the noise floor, in logs (below
    1 / (1 + floor) or above 1 + floor, so 1.1x faster and 1.1x slower count alike)."""
    if ci.high < 1.0 / (1.0 + floor):
        return "faster"
    if ci.low > 1.0 + floor:
        return "slower"
    return "same"


def same_note(ci: RatioCI, floor: float) -> str:
    """Why a `same` row is the same: a reader should not take "inconclusive" for "equal"."""
    excludes_one = ci.high < 1.0 or ci.low > 1.0
    within = ci.low >= 1.0 / (1.0 + floor) and ci.high <= 1.0 + floor
    if within:
        return f"a shift, but under the {floor:.0%} noise floor" if excludes_one else ""
    if excludes_one:
        return f"a shift (the CI excludes 1) that may or may not clear the {floor:.0%} noise floor"
    return (f"inconclusive: the CI spans 1 and reaches beyond +-{floor:.0%}; more rounds "
            "(timing.rounds) would tell")
