"""How a case moved across a change of one of its series: every other variant's time from the
run before the change to the run after it (the median of up to SCOPE_RUNS runs a side, within
the series' neighbouring changes). Every variant alike points at the machine or what the
variants share (a library, the thread count); this variant alone at its own code or kernels;
the others moving while it held still at them (its relative view sees their move). Where the
whole case moved, the share of the run's rows that moved alike says whether the run did.

Reads the series (series.py's Series, Found and View) by their attributes only, so the two
modules do not import each other (series.py imports this one).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

SCOPE_RUNS = 5                     # runs a side read for a case's scope
ALIKE = 0.4                        # a sibling moved alike: at least 40% of the move, same way
NOTICED = math.log(1.10)           # a sibling's move under 10% is within a run's drift here


@dataclass
class Scope:
    """How the other variants of the case moved across a change at one run."""
    kind: str                       # "case", "variant", "others", "mixed", "alone" (no sibling)
    ratios: dict[str, float]        # variant -> its time after / before
    run_share: float = math.nan     # share of the suite's rows on this machine that moved alike
    run_rows: int = 0
    uneven: bool = False            # "case": every variant moved the same way, some far less

    def text(self, variant: str) -> str:
        moved = ", ".join(f"{v} x{r:.3g}" for v, r in self.ratios.items() if math.isfinite(r))
        whole = (f"; {self.run_share:.0%} of the run's {self.run_rows} rows moved the same way"
                 if self.run_rows > 1 and math.isfinite(self.run_share) else "")
        return {
            "case": f"the whole case moved{' the same way, unevenly' if self.uneven else ''} "
                    f"({moved}){whole}: likely the machine or something the variants share (a "
                    "library, the threads, the CPU's kernels)",
            "variant": f"{variant} alone moved ({moved}): its own code or kernels",
            "others": f"the other variants moved, {variant} did not ({moved})",
            "mixed": f"the case's variants moved differently ({moved})",
            "alone": f"{variant} x{self.ratios.get(variant, math.nan):.3g} (no other variant of "
                     "the case to compare with)",
        }[self.kind]



def _level_ratio(view, before_end: int, after_start: int, low: int, high: int) -> float:
    """A time view's move across a change: the median of its up to SCOPE_RUNS points from
    `after_start` (before `high`) over the median of its up to SCOPE_RUNS points to
    `before_end` (after `low`), as a ratio; NaN where a side has none."""
    before = [p.log_mean for r, p in zip(view.runs, view.points) if low < r <= before_end]
    after = [p.log_mean for r, p in zip(view.runs, view.points) if after_start <= r < high]
    if not before or not after:
        return math.nan
    return math.exp(float(np.median(after[:SCOPE_RUNS])) - float(np.median(before[-SCOPE_RUNS:])))


def _alike(ratio: float, reference: float) -> str:
    """How a move compares with `reference`'s: `alike` (the same way, at least ALIKE of it),
    `weaker` (the same way, less, but beyond NOTICED), `still` (within NOTICED, or under
    ALIKE of a move NOTICED cannot tell from it), `opposite`, or `unknown` (no points)."""
    if not math.isfinite(ratio):
        return "unknown"
    move, ref = math.log(ratio), math.log(reference)
    if move * ref > 0 and abs(move) >= ALIKE * abs(ref):
        return "alike"
    if abs(move) < max(NOTICED, ALIKE * abs(ref) if abs(ref) < 2 * NOTICED else 0.0):
        return "still"
    return "weaker" if move * ref > 0 else "opposite"


def scope_of(series, found, siblings: list, suite_rows: list) -> Scope:
    """How the case (and the run) moved across the change (see the module's docstring): every
    variant's time from the series' run before the change to its run after it, within the
    series' neighbouring steps."""
    at = found.run
    before_end = found.before_run
    steps = sorted({f.run for f in series.found if f.steps})
    low = max([series.runs[series.runs.index(r) - 1] for r in steps if r < at], default=-1)
    high = min([r for r in steps if r > at], default=10 ** 9)
    after_start = at

    def move(s) -> float:
        return _level_ratio(s.time, before_end, after_start, low, high)

    ratios = {s.variant: move(s) for s in siblings}
    own = ratios.get(series.variant, math.nan)
    movers = {v: r for v, r in ratios.items() if math.isfinite(r) and v != series.variant}
    if not math.isfinite(own):
        return Scope("alone", ratios)
    if not movers:
        return Scope("alone", ratios)
    largest = max([own, *movers.values()], key=lambda r: abs(math.log(r)))
    if abs(math.log(largest)) < 1e-9:
        return Scope("mixed", ratios)
    uneven = False
    if _alike(own, largest) not in ("still", "unknown"):  # it moved: did the others, with it?
        others = {_alike(r, own) for r in movers.values()}
        if others <= {"alike", "weaker"}:
            kind, uneven = "case", "weaker" in others
        else:
            kind = "variant" if others == {"still"} else "mixed"
    else:  # this variant held still, others moved (its relative view sees their move)
        kind = "others"
    scope = Scope(kind, ratios, uneven=uneven)
    if kind == "case" and len(suite_rows) > len(siblings):
        seen = [m for m in (_alike(move(s), own) for s in suite_rows) if m != "unknown"]
        scope.run_rows = len(seen)
        scope.run_share = (sum(m in ("alike", "weaker") for m in seen) / len(seen)
                           if seen else math.nan)
    return scope
