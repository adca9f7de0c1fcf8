"""The A/B design in the estimator bench (python -m suites.tools.estimators): pairs of runs, A's
code and B's one after the other, each row judged by its pairs (intervals.pair_ratio and
compare's decision), as `python -m suites.compare --ab` judges them.

A run here is the bench's simulated run (estimators.simulated_run: 60 rows through the harness's
own case_run.finish, 5% round noise) with two offsets on top: the machine's state at the time,
shared by the two runs of a pair (SHARED_DRIFT: what two single runs minutes apart face, and
what the design cancels), and the run's own drift (the cell's: what is left between two runs
back to back; on this machine neighbours differ by 1-4%), and now and then a whole case in
another state in one run (ASTRAY_SHARE of a run's cases, by ASTRAY_SD: the heavy tail the
trimmed mean is for). Per drift and number of pairs: A/A
false faster/slower per 60 rows, the share of rows whose 99% interval holds the true ratio
(coverage, target >= 0.98 at 99%), the median mde, and the share called slower at a true
1.05x and 1.10x (targets, docs/compare.md: A/A <= 1 per 60 rows, 1.10x >= 90%).
"""
from __future__ import annotations

import math
import statistics
from dataclasses import dataclass

import numpy as np

from suites.reports.compare.decision import FLOOR, change
from suites.reports.kit.change import Change
from suites.results.intervals import pair_ratio

SHARED_DRIFT = 0.10   # the machine's state a pair shares: cancels in the pair's ratio
# Now and then a whole case lands in another state in one run (every variant of it alike):
# measured in A/A designs here, one pair in 8 a row 15-60% off while the rest agree within 2%.
ASTRAY_SHARE, ASTRAY_SD = 0.08, 0.25
OWN_DRIFTS = {"full": (0.01, 0.02, 0.04), "quick": (0.02,)}
PAIR_COUNTS = {"full": (4, 8, 12), "quick": (12,)}  # quick: the default design
DESIGNS = {"full": 20, "quick": 6}   # designs per cell (each of 60 rows)
AB_SLOWDOWNS = (1.05, 1.10)


@dataclass(frozen=True)
class AbStats:
    drift: float          # a run's own drift
    pairs: int
    rows: int             # rows judged under A/A
    aa_per_60: float      # false faster + slower per 60 rows under A/A
    coverage: float       # share of judged rows (every cell) whose 99% interval holds the truth
    median_mde: float
    slower_share: dict[float, float]


def _row_means(rng, rows: list[list[float] | None], per_case: int) -> list[float | None]:
    """Each row's mean over its clean rounds, with a case gone astray now and then (its rows
    alike)."""
    means = [None if r is None or not r else statistics.fmean(r) for r in rows]
    for start in range(0, len(means), per_case):
        if rng.random() < ASTRAY_SHARE:
            shock = math.exp(ASTRAY_SD * rng.standard_normal())
            means[start:start + per_case] = [None if m is None else m * shock
                                             for m in means[start:start + per_case]]
    return means


def _design(rng, simulated_run, spec, drift: float, slowdown: float, pairs: int) -> list:
    """One design's judged rows: (verdict, low, high, mde) per row judged by its pairs."""
    a_runs, b_runs = [], []
    for i in range(pairs):
        shared = math.exp(SHARED_DRIFT * rng.standard_normal())  # the pair's machine state
        for runs, s in ((a_runs, 1.0), (b_runs, slowdown)) if i % 2 == 0 else \
                ((b_runs, slowdown), (a_runs, 1.0)):
            means = _row_means(rng, simulated_run(rng, drift, s * shared, spec),
                               len(spec.suite.variants))
            runs.append(means)
    judged = []
    for row in range(len(a_runs[0])):
        logs = [math.log(b[row] / a[row]) for a, b in zip(a_runs, b_runs)
                if a[row] is not None and b[row] is not None]
        if len(logs) < 3:
            continue
        r = pair_ratio(logs).ratio
        judged.append((change(r, FLOOR), r.low, r.high, r.mde))
    return judged


def ab_stats(rng, simulated_run, spec, drift: float, pairs: int, designs: int) -> AbStats:
    cells = {s: [row for _ in range(designs)
                 for row in _design(rng, simulated_run, spec, drift, s, pairs)]
             for s in (1.0, *AB_SLOWDOWNS)}
    aa = cells[1.0]
    false = sum(v in (Change.FASTER, Change.SLOWER) for v, *_ in aa)
    covered = [lo <= s <= hi for s, rows in cells.items() for _, lo, hi, _ in rows]
    return AbStats(drift, pairs, len(aa), false / len(aa) * 60 if aa else math.nan,
                   sum(covered) / len(covered) if covered else math.nan,
                   float(np.median([m for *_, m in aa])) if aa else math.nan,
                   {s: sum(v == Change.SLOWER for v, *_ in rows) / len(rows) if rows
                    else math.nan for s, rows in cells.items() if s != 1.0})


def ab_table(stats: list[AbStats]) -> list[str]:
    power = " ".join(f"{f'{s:.2f}x':>6}" for s in AB_SLOWDOWNS)
    lines = [f"{'drift':>5} {'pairs':>5} {'rows':>5} {'A/A /60':>7} {'cover':>6} {'mde':>6} "
             f"{power}"]
    for s in stats:
        shares = " ".join(f"{s.slower_share[x]:6.1%}" for x in AB_SLOWDOWNS)
        lines.append(f"{s.drift:5.0%} {s.pairs:5d} {s.rows:5d} {s.aa_per_60:7.2f} "
                     f"{s.coverage:6.1%} {s.median_mde:6.1%} {shares}")
    return lines
