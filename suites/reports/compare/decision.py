"""Is B faster than A? Compare's decision on a row, from the model of B/A
(suites/results/intervals.py, `run_ratio`: round noise of both sides plus each run's drift).

Four verdicts, in this order (suites/reports/kit/change.py, `classify_tested`):
- equivalent: the 90% interval lies within the floor (two one-sided tests at 5%: B is shown to
  be within +-floor of A);
- faster / slower: the 99% interval excludes 1 (an A/A pair is called so 1% of the time);
- inconclusive: neither, and the row says how large a change the pair could have seen (mde).
"""
from __future__ import annotations

from suites.reports.kit.change import Change, classify_tested
from suites.results.intervals import RunRatio

FLOOR = 0.05      # equivalent: within +-5% of A, shown by the 90% interval
MIN_ROUNDS = 3    # a spread needs a few rounds; fewer and a row is not comparable


def change(r: RunRatio, floor: float = FLOOR) -> Change:
    """The row's verdict, B against A: B/A time turned into a speedup of B over A (A/B, so above
    1 means B is faster, as everywhere) before it is classed."""
    return classify_tested(1.0 / r.high, 1.0 / r.low, 1.0 / r.eq_high, 1.0 / r.eq_low, floor)


def _what_would_tell(r: RunRatio, aa_control: bool) -> str:
    """More rounds shrink the round noise, not the drift: name the one that limits this row."""
    drift_se2 = r.se**2 - r.round_se**2
    if r.round_se**2 >= drift_se2:
        return "more rounds (timing.rounds) would tell"
    if aa_control:
        return "the runs' drift limits it: more rounds alone would not tell"
    return ("the default drift limits it: an A/A control (timing.aa_control=true) in both runs "
            "would tell, more rounds alone would not")


def note(r: RunRatio, floor: float, cls: Change, aa_control: bool = False) -> str:
    """Why an equivalent or inconclusive row is so: a reader should not take "inconclusive" for
    "equal", nor an equivalent row whose interval excludes 1 for no shift at all."""
    excludes_one = r.high < 1.0 or r.low > 1.0
    if cls == Change.EQUIVALENT:
        return f"a shift, but within the {floor:.0%} floor" if excludes_one else ""
    if cls != Change.INCONCLUSIVE:
        return ""
    return f"detectable: {r.mde:.0%}; {_what_would_tell(r, aa_control)}"
