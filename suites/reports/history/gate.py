"""The gate: is the newest run of a series a regression (or an improvement) against the runs
before it? And, for counters, which runs changed at all.

Timings. The baseline is the previous `window` runs (20 by default: enough for a median and MAD
that a few odd runs do not move, recent enough that an accepted change becomes the baseline's
median after 11 runs). In logs (a change is a ratio), the newest run's figure x is scored by the
modified z-score of Iglewicz & Hoaglin ("How to Detect and Handle Outliers", ASQC 1993):

    z = 0.6745 (x - median) / MAD

where MAD is the median absolute deviation of the baseline about its median; 0.6745 is the normal
quantile that makes MAD / 0.6745 estimate the standard deviation, so z reads as standard
deviations of the baseline's run-to-run spread. Median and MAD, not mean and standard deviation:
the baseline itself holds odd runs (a neighbour's job, a stalled machine), and a plain standard
deviation inflated by one of them would hide a real regression for `window` runs. The 3.5
threshold is Iglewicz & Hoaglin's recommendation for outliers.

A flag needs BOTH thresholds: the statistical one (|z| > 3.5) says the newest run is outside what
the baseline's own spread makes ordinary; the practical one (a change of more than 5%, taken
symmetrically in logs: slower than 1.05x, faster than 1/1.05x, as compare's floor is) says it is
large enough to matter. A very steady row would otherwise be flagged for a 1% move, a noisy one
never needs the second test.

A baseline whose spread is too wide to judge anything useful is `too_noisy` and never flagged:
its coefficient of variation, estimated robustly as 1.4826 MAD in logs (the normal-consistent
standard deviation of the logs, which is the CV of the figures for spreads this small), above 15%.
Robust for the same reason as the median: one stalled run in the baseline must not mute a row
for `window` runs. Fewer than `min_baseline` (5) baseline runs: `too_short` (a median and MAD of
four values can be moved by one).

MAD = 0: half or more of the baseline are identical (a clock that quantises, a figure copied
through). Iglewicz & Hoaglin's fallback for that case is the mean absolute deviation about the
median, scaled to the normal (z = (x - median) / (1.2533 MeanAD)); when that is 0 too (every
baseline run identical), any difference is infinitely many spreads away and only the practical
threshold decides.

Counters (kernel launches, graph breaks, recompiles, a backend's name) are deterministic: there is
no noise to score against and any change is a change. `counter_changes` compares them exactly,
run after run.

What it can see: a run is flagged only when it sits 3.5 baseline sd's out, so a step must be
about 3.5x a run's noise (drift and round noise) to be called on the run it lands on. On the
history bench (python -m suites.tools.history_bench, real rounds of this machine, seeds 0 and 1):
false alarms on 1% of judged newest runs of flat series; a step at the newest run called in its
direction, 10%: 45-54% where a run's sd is under 3%, 27-35% at 3-5%; 20%: 100% and 90-91%; at this
machine's typical 8-12% a run, 20% steps 21-22%, and 8-10% of series are too_noisy. A change the
gate misses on its first run is the change points' to find once a few runs confirm it
(suites/reports/history/changepoints.py). `z_threshold` trades the two (the bench's --gate-z).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

WINDOW = 20
Z_THRESHOLD = 3.5        # Iglewicz & Hoaglin's outlier threshold
MIN_CHANGE = 0.05        # practical threshold: the floor compare uses for "equivalent"
MAX_CV = 0.15            # past this the baseline is too noisy to gate on
MIN_BASELINE = 5
MODIFIED_Z = 0.6745      # Phi^-1(0.75): MAD / 0.6745 estimates the standard deviation
MEAN_AD_SCALE = 1.2533   # sqrt(pi / 2): MeanAD * 1.2533 estimates the standard deviation
MAD_SCALE = 1.4826       # 1 / 0.6745

STATES = ("regressed", "improved", "stable", "too_noisy", "too_short")


@dataclass(frozen=True)
class Gate:
    state: str        # one of STATES
    z: float          # modified z-score of the newest run (NaN when too_short)
    ratio: float      # newest / baseline median (> 1: slower)
    baseline: float   # the baseline's median figure, us
    n: int            # baseline runs used
    cv: float         # the baseline's robust coefficient of variation
    source: str = "gate"  # "gate": this module's score; "step": a change point at the newest run


def practical(ratio: float, min_change: float) -> str:
    """regressed, improved or stable by the practical threshold alone: a move beyond
    `min_change`, taken symmetrically in logs (slower than 1 + m, faster than 1 / (1 + m))."""
    if ratio > 1 + min_change:
        return "regressed"
    if ratio < 1 / (1 + min_change):
        return "improved"
    return "stable"


def modified_z(x: float, baseline: np.ndarray) -> tuple[float, float, float]:
    """(z, median, mad) of x against `baseline` (both in the same units: logs here)."""
    median = float(np.median(baseline))
    mad = float(np.median(np.abs(baseline - median)))
    if mad > 0:
        return MODIFIED_Z * (x - median) / mad, median, mad
    mean_ad = float(np.mean(np.abs(baseline - median)))
    if mean_ad > 0:
        return (x - median) / (MEAN_AD_SCALE * mean_ad), median, mad
    if x == median:
        return 0.0, median, mad
    return math.copysign(math.inf, x - median), median, mad


def gate(values, *, window: int = WINDOW, z_threshold: float = Z_THRESHOLD,
         min_change: float = MIN_CHANGE, max_cv: float = MAX_CV,
         min_baseline: int = MIN_BASELINE) -> Gate:
    """Judge the last of `values` (one figure per run, us/call, > 0, in run order: a run's
    geometric mean of clean rounds, changepoints.Point.level, or its mean_us) against the up to
    `window` runs before it."""
    logs = np.log(np.asarray(values, dtype=float))
    if logs.size == 0:
        raise ValueError("gate needs at least the newest run")
    x, baseline = float(logs[-1]), logs[:-1][-window:]
    if baseline.size < min_baseline:
        median = float(np.exp(np.median(baseline))) if baseline.size else math.nan
        return Gate("too_short", math.nan, math.exp(x) / median if baseline.size else math.nan,
                    median, int(baseline.size), math.nan)
    z, median, mad = modified_z(x, baseline)
    cv = MAD_SCALE * mad
    ratio = math.exp(x - median)
    if cv > max_cv:
        state = "too_noisy"
    else:
        state = practical(ratio, min_change)
        if state != "stable" and not abs(z) > z_threshold:
            state = "stable"  # large enough to matter, but within the baseline's own spread
    return Gate(state, z, ratio, math.exp(median), int(baseline.size), cv)


def level_began(values, verdict: Gate, *, window: int = WINDOW,
                z_threshold: float = Z_THRESHOLD, min_change: float = MIN_CHANGE,
                **_) -> tuple[int, int]:
    """Where the level of the newest of `values` began, by the gate's own reading of a flag
    (`verdict`, regressed or improved): (first, start), indices into `values`. `start`: the
    earliest of the runs before the newest, walking back, that the gate flags the same way
    against the same baseline (median and spread): the new level's first run. `first`: before
    it, the runs the gate calls out the same way by one of its two thresholds alone (far out
    but small, or large but within the spread): the data cannot tell whether they are at the
    new level, so the change lies between them and `start`."""
    logs = np.log(np.asarray(values, dtype=float))
    baseline = logs[:-1][-window:]
    sign = 1 if verdict.state == "regressed" else -1

    def reading(x: float) -> int:  # 2: flagged the same way, 1: by one threshold, 0: not
        z, median, _ = modified_z(float(x), baseline)
        return int(sign * z > z_threshold) + int(practical(math.exp(x - median), min_change)
                                                 == verdict.state)
    start = logs.size - 1
    while start > 0 and reading(logs[start - 1]) == 2:
        start -= 1
    first = start
    while first > 0 and reading(logs[first - 1]) == 1:
        first -= 1
    return first, start


@dataclass(frozen=True)
class CounterChange:
    index: int     # the run whose value differs from the last known one before it
    before: object
    after: object


def _missing(value) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def counter_changes(values) -> list[CounterChange]:
    """The runs where an exact counter (an integer, a string) differs from the last run that had
    one: any change is a change. Missing values (None, NaN: a run without the counter) are
    skipped, not counted as changes, and the next value is compared with the last known one."""
    changes, last = [], None
    for i, value in enumerate(values):
        if _missing(value):
            continue
        if last is not None and value != last[1]:
            changes.append(CounterChange(i, last[1], value))
        last = (i, value)
    return changes
