"""Every interval the tool computes, each a 95% interval from timing rounds: the speedup paired
per round (one run: the run report and the ladder) and the ratio of two runs' times (compare).

Paired: within one round the baseline and the variant were timed back to back, so a slow drift
of the machine (another job starting, the clock stepping) moves both; their ratio in that round
cancels it. The figure of a round is the mean time of its calls (what a caller pays), and the
speedup is what a caller saves: the baseline's mean time over the variant's, over the rounds in
which both were clean (the ratio of means, so the row's time and its speedup come from the same
rounds and the same estimator). Its interval: the ratio estimator's (delta method: the spread of
baseline - speedup * variant across rounds), taken in logs and with Student's t on the rounds
(few of them), so a 2x speedup and a 2x slowdown are equally far from 1 and a drift shared by a
round cancels to first order.

Two runs: no round of one run pairs with a round of the other, so each side's clean round
medians are taken as independent draws (in logs again) and Welch's t interval on the difference
of the mean logs gives the ratio's interval: unequal spreads and round counts are allowed. The
unit of evidence is a round's median, not a call: the calls inside one round share one machine
state, so their spread says how steady that state was, not how much the next round or the next
run will differ (on a shared machine that is the spread that matters).
"""
from __future__ import annotations

import math
import statistics
from dataclasses import dataclass

NAN = float("nan")
# Two-sided 95% quantiles of Student's t, by degrees of freedom (rounds - 1).
_T95 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306,
        9: 2.262, 10: 2.228, 12: 2.179, 15: 2.131, 20: 2.086, 30: 2.042, 60: 2.000, 120: 1.980}


def t95(dof: int) -> float:
    """The 95% t quantile for `dof` degrees of freedom (the next lower tabulated dof: wider; past
    120, 1.98 for 1.96, under 1% wide)."""
    if dof < 1:
        raise ValueError("t needs at least one degree of freedom")
    return _T95[max(k for k in _T95 if k <= dof)]


@dataclass(frozen=True)
class Paired:
    speedup: float  # baseline's mean round figure / the variant's, over the paired rounds
    low: float      # 95% interval; NaN with fewer than 2 paired rounds
    high: float
    rounds: int     # rounds in which both were clean


def paired_speedup(baseline: dict[int, float], variant: dict[int, float]) -> Paired:
    """`baseline` and `variant` map round -> that round's figure, us (clean rounds only)."""
    rounds = sorted(set(baseline) & set(variant))
    if not rounds:
        return Paired(NAN, NAN, NAN, 0)
    b = [baseline[r] for r in rounds]
    v = [variant[r] for r in rounds]
    speedup = statistics.fmean(b) / statistics.fmean(v)
    if len(rounds) < 2:
        return Paired(speedup, NAN, NAN, 1)
    # Delta method for a ratio of means: residuals of the baseline from speedup * variant.
    residual = [x - speedup * y for x, y in zip(b, v)]
    se_log = statistics.stdev(residual) / math.sqrt(len(rounds)) / statistics.fmean(b)
    half = t95(len(rounds) - 1) * se_log
    return Paired(speedup, speedup * math.exp(-half), speedup * math.exp(half), len(rounds))


def mean_interval(figures: list[float]) -> tuple[float, float, float]:
    """(mean, low, high): a row's time per call over its clean rounds' figures, with a 95% t
    interval (NaN bounds for one round)."""
    mean = statistics.fmean(figures)
    if len(figures) < 2:
        return mean, NAN, NAN
    half = t95(len(figures) - 1) * statistics.stdev(figures) / math.sqrt(len(figures))
    return mean, mean - half, mean + half


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
