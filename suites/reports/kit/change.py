"""How a speed changed, in one of four classes, for the run report, the ladder and compare alike:
one function, so two of them can never class the same interval differently.

The input is a speedup's 95% interval, oriented one way everywhere: above 1 means faster (the
run report's speedup is baseline time / variant time; compare turns its B/A time ratio into A/B
first). `band` is the relative change within which two times count as the same, taken in logs
(1 / (1 + band) to 1 + band), so 2% faster and 2% slower count alike:

- faster: the whole interval above 1 + band;
- slower: the whole interval below 1 / (1 + band);
- same: the whole interval within the band;
- unclear: the interval reaches across a band edge (more rounds would tell), or there is none.

`row_changes` classes a run's rows by their paired speedups, with the run report's and the
ladder's band; compare classes its rows with its noise floor (suites/reports/compare/decision.py).

Not a step's "bound" (overhead-, compute-, memory-bound: suites/traces): that says where one
call's time goes, this how two times compare.
"""
from __future__ import annotations

import math
from enum import StrEnum

import pandas as pd

from suites.results.columns import Status

# The run report's and the ladder's band: their speedups are paired round by round within one
# run, so a shift of a few percent is resolved (compare's band is its noise floor between runs).
SAME_WITHIN = 0.02


class Change(StrEnum):
    FASTER = "faster"
    SAME = "same"
    SLOWER = "slower"
    UNCLEAR = "unclear"


def classify(low: float, high: float, band: float) -> Change:
    """The class of a speedup whose 95% interval is `low` to `high` (NaN: no interval)."""
    if math.isnan(low) or math.isnan(high):  # e.g. one paired round: nothing to judge by
        return Change.UNCLEAR
    if low > 1 + band:
        return Change.FASTER
    if high < 1 / (1 + band):
        return Change.SLOWER
    if low >= 1 / (1 + band) and high <= 1 + band:
        return Change.SAME
    return Change.UNCLEAR


def phrase(change: str, band: float) -> str:
    """The class in a sentence: `the same within 2%`; the other classes as they are named."""
    return f"the same within {band:.0%}" if change == Change.SAME else str(change)


def row_changes(rows: pd.DataFrame) -> pd.Series:
    """Each row's class by its paired speedup's interval, within SAME_WITHIN (the run report's
    and the ladder's rows); None for a row with no paired speedup (not ok, or nothing paired)."""
    return pd.Series([classify(r.speedup_low, r.speedup_high, SAME_WITHIN)
                      if r.status == Status.OK and r.speedup == r.speedup else None
                      for r in rows.itertuples()], index=rows.index, dtype=object)
