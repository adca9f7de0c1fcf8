"""Is B faster than A? Compare's decision on a row, from the model of B/A
(suites/results/intervals.py, `run_ratio`: round noise of both sides plus each run's drift).

Four verdicts, in this order (suites/reports/kit/change.py, `classify_tested`):
- equivalent: the 90% interval lies within the floor (two one-sided tests at 5%: B is shown to
  be within +-floor of A);
- faster / slower: the 99% interval excludes 1 (an A/A pair is called so 1% of the time);
- inconclusive: neither, and the row says how large a change the pair could have seen (mde).
A row `held` (TWO_STATES: the variant runs in two states of its own on either side) is never
faster or slower. `verdict` is the one rule: the join writes it, and the audit of a compare
folder (audit.py) applies it again to each row's own columns.
"""
from __future__ import annotations

from suites.reports.kit.change import Change, classify, classify_tested
from suites.results.intervals import RunRatio

FLOOR = 0.05      # equivalent: within +-5% of A, shown by the 90% interval
MIN_ROUNDS = 3    # a spread needs a few rounds; fewer and a row is not comparable
TWO_STATES = "two_states"  # compare.csv's `held`: the code of the two_states finding


def verdict(ci_low: float, ci_high: float, eq_low: float, eq_high: float, floor: float,
            held: str | None = None) -> Change:
    """A row's verdict from its intervals of B/A time (99%: ci, 90%: eq), turned into a speedup
    of B over A (A/B, so above 1 means B is faster, as everywhere) before it is classed; a row
    held by what its rounds show is inconclusive where it would read faster or slower."""
    cls = classify_tested(1.0 / ci_high, 1.0 / ci_low, 1.0 / eq_high, 1.0 / eq_low, floor)
    return Change.INCONCLUSIVE if held and cls in (Change.FASTER, Change.SLOWER) else cls


def change(r: RunRatio, floor: float = FLOOR, held: str | None = None) -> Change:
    """The verdict of a model of B/A (`verdict` on its intervals)."""
    return verdict(r.low, r.high, r.eq_low, r.eq_high, floor, held)


def _shifted(r: RunRatio) -> bool:
    """The 99% interval alone would call a change: it excludes 1 (the kit's class with no
    band)."""
    return classify(1.0 / r.high, 1.0 / r.low, 0.0) in (Change.FASTER, Change.SLOWER)


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
    if cls == Change.EQUIVALENT:
        return f"a shift, but within the {floor:.0%} floor" if _shifted(r) else ""
    if cls != Change.INCONCLUSIVE:
        return ""
    return f"detectable: {r.mde:.0%}; {_what_would_tell(r, aa_control)}"
