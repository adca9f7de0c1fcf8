"""How a speed changed, in one of four classes, for the run report, the ladder and compare alike:
one vocabulary and one module, so no two readers name or class the same evidence differently.

The input is a speedup's interval, oriented one way everywhere: above 1 means faster (the run
report's speedup is baseline time / variant time; compare turns its B/A time ratio into A/B
first). `band` is the relative change within which two times count as equivalent, taken in logs
(1 / (1 + band) to 1 + band), so 2% faster and 2% slower count alike:

- faster / slower: the interval clears the band (the report) or 1 (compare) on that side;
- equivalent: the interval lies all within the band;
- inconclusive: neither (more evidence would tell), or there is no interval.

`classify` is the report's and the ladder's rule, on one 95% interval of a speedup paired round
by round within one run (`row_changes`, band SAME_WITHIN). `classify_tested` is compare's, on two
intervals of a ratio between runs (suites/reports/compare/decision.py): equivalence is shown by
the two one-sided tests (the 90% interval within the band), and only then is a change looked
for, by the 99% interval excluding 1. The words are the same because they mean the same: a
report's row "equivalent within 2%" has its 95% interval inside +-2%, which is equivalence shown
by a test stricter than the two one-sided tests at 5%.

Not a step's "bound" (overhead-, compute-, memory-bound: suites/traces): that says where one
call's time goes, this how two times compare.
"""
from __future__ import annotations

import math
from enum import StrEnum

import pandas as pd

from suites.results.columns import Status

# The run report's and the ladder's band: their speedups are paired round by round within one
# run, so a shift of a few percent is resolved (compare's band is its --floor between runs).
SAME_WITHIN = 0.02


class Change(StrEnum):
    FASTER = "faster"
    EQUIVALENT = "equivalent"
    SLOWER = "slower"
    INCONCLUSIVE = "inconclusive"


def _missing(*bounds: float) -> bool:
    return any(math.isnan(b) for b in bounds)


def within(low: float, high: float, band: float) -> bool:
    """The interval lies all inside 1 / (1 + band) to 1 + band."""
    return low >= 1 / (1 + band) and high <= 1 + band


def classify(low: float, high: float, band: float) -> Change:
    """The report's class of a speedup whose 95% interval is `low` to `high` (NaN: none): a
    change only when the whole interval clears the band."""
    if _missing(low, high):  # e.g. one paired round: nothing to judge by
        return Change.INCONCLUSIVE
    if low > 1 + band:
        return Change.FASTER
    if high < 1 / (1 + band):
        return Change.SLOWER
    if within(low, high, band):
        return Change.EQUIVALENT
    return Change.INCONCLUSIVE


def classify_tested(low: float, high: float, eq_low: float, eq_high: float,
                    band: float) -> Change:
    """Compare's class of a speedup from its decision interval (`low`-`high`, 99%) and its
    equivalence interval (`eq_low`-`eq_high`, 90%), in this order: equivalent when the
    equivalence interval lies within the band; else faster or slower when the decision interval
    excludes 1; else inconclusive."""
    if _missing(low, high, eq_low, eq_high):
        return Change.INCONCLUSIVE
    if within(eq_low, eq_high, band):
        return Change.EQUIVALENT
    if low > 1:
        return Change.FASTER
    if high < 1:
        return Change.SLOWER
    return Change.INCONCLUSIVE


def phrase(change: str, band: float) -> str:
    """The class in a sentence: `equivalent within 2%`; the other classes as they are named."""
    return f"equivalent within {band:.0%}" if change == Change.EQUIVALENT else str(change)


def row_changes(rows: pd.DataFrame) -> pd.Series:
    """Each row's class by its paired speedup's interval, within SAME_WITHIN (the run report's
    and the ladder's rows); None for a row with no paired speedup (not ok, or nothing paired)."""
    return pd.Series([classify(r.speedup_low, r.speedup_high, SAME_WITHIN)
                      if r.status == Status.OK and r.speedup == r.speedup else None
                      for r in rows.itertuples()], index=rows.index, dtype=object)
