"""Is B faster than A? Compare's decision on a row, from the 95% interval of B's time over A's
(suites/results/intervals.py, `ratio_ci`, from each side's clean round medians).

The decision needs more than "the interval excludes 1": two runs of one commit, minutes apart,
land in different machine states (memory placement, the neighbour's jobs) by more than their
rounds' spread shows. So compare's band of "the same" is a noise floor, measured as the A/A
drift of runs on a shared machine (the README's "Timing on a shared machine"), and a row is
classed as every report classes a speedup (suites/reports/kit/change.py): faster or slower only
when the whole interval lies beyond the floor, the same only when it lies within it, unclear
when it reaches across.
"""
from __future__ import annotations

from suites.reports.kit.change import Change, classify
from suites.results.intervals import RatioCI

NOISE_FLOOR = 0.10
MIN_ROUNDS = 3  # a spread needs a few rounds; fewer and a row is not comparable


def change(ci: RatioCI, floor: float = NOISE_FLOOR) -> Change:
    """The row's class, B against A: B/A time turned into a speedup of B over A (A/B, so above
    1 means B is faster, as everywhere) before it is classed."""
    return classify(1.0 / ci.high, 1.0 / ci.low, floor)


def note(ci: RatioCI, floor: float, cls: Change) -> str:
    """Why a `same` or `unclear` row is so: a reader should not take "unclear" for "equal", nor
    a `same` whose interval excludes 1 for no shift at all."""
    excludes_one = ci.high < 1.0 or ci.low > 1.0
    if cls == Change.SAME:
        return f"a shift, but under the {floor:.0%} noise floor" if excludes_one else ""
    if cls != Change.UNCLEAR:
        return ""
    if excludes_one:
        return (f"a shift (the CI excludes 1) that may or may not clear the {floor:.0%} noise "
                "floor; more rounds (timing.rounds) would tell")
    return (f"the CI spans 1 and reaches beyond +-{floor:.0%}; more rounds (timing.rounds) "
            "would tell")
