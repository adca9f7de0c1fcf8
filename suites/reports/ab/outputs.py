"""An A/B design's compare folder: compare.csv, compare.md, compare.html and compare.png as
`python -m suites.compare` writes them (suites/reports/compare/outputs.py, so compare's audit
reads both alike), plus pairs.png (each row's pair ratios) and the design's own lines: the
pairs made, the drift they measured, the power they bought.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from suites.common.numbers import missing, plain, ratio
from suites.reports.ab.plan import Plan
from suites.reports.compare.joined import summary_lines
from suites.reports.compare.loading import Side
from suites.reports.compare.outputs import write_all
from suites.reports.compare.plot import COLORS, write_plot
from suites.reports.kit.change import Change
from suites.reports.kit.plots import plt, save_png, times_ticks
from suites.results.intervals import MIN_PAIRS, planned_mde

PAIRS_PNG = "pairs.png"
VS_BASELINE = "B/A vs baseline"  # the tables' column of the relative view (pairs.py)
TARGET_MDE = 0.05  # the power a design is sized for at its steady rows (docs/compare.md)


def _median(values) -> float:
    values = [v for v in values if isinstance(v, float) and math.isfinite(v)]
    return float(np.median(values)) if values else math.nan


@dataclass
class Design:
    """What an A/B design's verdicts rest on, said beside them (compare's Basis for pairs)."""
    plan: Plan
    floor: float
    frame: pd.DataFrame
    seconds: float          # the runs' time, summed
    differences: list[str]  # settings A's and B's runs do not share
    count_label = "pairs A/B"  # the tables' column: the pairs each side holds the row ok in
    extra_cells_names = (VS_BASELINE,)

    def extra_cells(self, frame: pd.DataFrame) -> dict:
        """The row against its case's baseline in the same runs: `0.998 (0.98 to 1.02)
        equivalent`, `-` for the baseline itself or too few pairs."""
        return {VS_BASELINE: [
            "-" if missing(r.rel_ratio) else
            f"{ratio(r.rel_ratio)} ({ratio(r.rel_low)} to {ratio(r.rel_high)}) {r.rel_verdict}"
            for r in frame.itertuples()]}

    def _judged(self) -> pd.DataFrame:
        return self.frame[self.frame["pairs"] >= MIN_PAIRS]

    def lines(self) -> list[str]:
        plan, judged = self.plan, self._judged()
        runs = len(plan.order())
        per_pair = self.seconds / plan.pairs if plan.pairs else math.nan
        lines = [f"floor: {self.floor:.0%} (equivalent: the 90% interval of B/A within "
                 f"{plain(1 / (1 + self.floor))} to {plain(1 + self.floor)}; faster or slower: "
                 f"the 99% interval excludes 1; from {MIN_PAIRS} pairs ok on both sides)",
                 f"design: {plan.pairs} pairs of runs, A then B and B then A in turn"
                 + (", an A/A run of A's code in each (aa/)" if plan.aa else "")
                 + f": {runs} runs in {self.seconds / 60:.1f} min ({per_pair:.0f} s a pair)"]
        drift = judged["drift_sd"].dropna()
        if len(drift):
            lines.append(f"drift between runs, measured from the pairs: {drift.median():.1%} a "
                         f"run (median of {len(drift)} rows, {drift.min():.1%} to "
                         f"{drift.max():.1%}), beyond what their rounds show")
        lines += self._relative_lines()
        mde = judged["mde"].dropna()
        if len(mde):
            sd = _median(list(judged["pair_sd"]))
            used = int(judged["pairs"].median())  # fewer than planned in a design cut short
            more = planned_mde(sd, 2 * used)
            within = int((mde <= TARGET_MDE).sum())
            lines.append(f"power: {used} pairs bought an mde of {mde.median():.1%} "
                         f"(median; {mde.min():.1%} to {mde.max():.1%}; {within} of {len(mde)} "
                         f"rows at or under {TARGET_MDE:.0%}); {2 * used} pairs would "
                         f"bring the median to about {more:.1%} (the same command with "
                         f"--pairs {2 * used} adds them)")
        return lines

    def _relative_lines(self) -> list[str]:
        """The rows the view against the baseline calls faster or slower, one line: what
        moved a variant's own time, with a whole case's move cancelled."""
        called = self.frame[self.frame["rel_verdict"].isin([Change.FASTER, Change.SLOWER])]
        judged = int(self.frame["rel_verdict"].notna().sum())
        if not judged:
            return []
        rows = "; ".join(f"{r.case_id} {r.variant} {r.rel_verdict} {plain(r.rel_ratio)}"
                         for r in called.itertuples())
        return [f"against each case's baseline in the same runs (a whole case's move "
                f"cancels): {len(called)} of {judged} rows called faster or slower"
                + (f": {rows}" if rows else "")]

    def text(self) -> str:
        return (f"B/A is B's time per call over A's: below 1, B is faster. The unit of evidence "
                f"is a pair of runs, A's code and B's one after the other ({self.plan.pairs} "
                "pairs, the order alternating): what the machine does to both halves of a pair "
                "cancels in its ratio. A row's B/A is the trimmed mean of its pairs' log "
                "ratios (Yuen's: the most extreme pair at each end set aside from 5 pairs, "
                "two from 10) "
                "and its intervals come from their winsorized spread (Student's t): what each "
                "run landed on and the noise of its rounds are measured there, not assumed. "
                f"Equivalent: the 90% interval lies within "
                f"{plain(1 / (1 + self.floor))} to {plain(1 + self.floor)} "
                f"(+-{self.floor:.0%}, two one-sided tests at 5%); else faster or slower: the "
                "99% interval excludes 1; else inconclusive. mde: the smallest change these "
                "pairs would call with 80% power. Beside it, B/A vs baseline: each variant's "
                "time over its case's baseline's in the same run, judged by the pairs alike. A "
                "whole case that ran in another state in one run (every variant alike) cancels "
                "there, so a change of a variant's own code shows at a few percent where its "
                "time is inconclusive; a change of the baseline shows in every other variant's, "
                "the other way.")


def _ratios(cell: str) -> list[float]:
    return [float(x) if x else math.nan for x in str(cell).split(";")] if cell == cell else []


def write_pairs_plot(frame: pd.DataFrame, path: Path) -> Path:
    """Each judged row's pair ratios, a dot per pair, over its 99% interval: one pair far from
    the others (a run the machine disturbed) shows here, beside the interval it widened."""
    rows = frame[frame["verdict"].isin(COLORS)].reset_index(drop=True)
    n = max(len(rows), 1)
    fig, ax = plt.subplots(figsize=(9, 1.9 + 0.24 * n))
    if rows.empty:
        ax.axis("off")
        ax.text(0.5, 0.5, "No row was judged (ok in 3 pairs or more).", ha="center")
        return save_png(fig, path)
    y = np.arange(len(rows))[::-1]
    ax.axvline(1.0, color="black", linewidth=0.8)
    for yi, row in zip(y, rows.itertuples()):
        color = COLORS[row.verdict]
        ax.hlines(yi, row.ci_low, row.ci_high, color=color, linewidth=1.2)
        ratios = [r for r in _ratios(row.pair_ratios) if math.isfinite(r)]
        ax.plot(ratios, [yi] * len(ratios), "o", color=color, markersize=3.5, alpha=0.75)
        ax.plot([row.ratio], [yi], "|", color="black", markersize=9)
    ax.set_yticks(y)
    ax.set_yticklabels([f"{r.case_id} {r.variant}" for r in rows.itertuples()],
                       fontsize=7 if n > 40 else 8)
    ax.set_xscale("log")
    times_ticks(ax.xaxis)
    ax.grid(True, axis="x", which="both", alpha=0.3)
    ax.set_xlabel("B / A time per call, each pair (dots), the row's B/A (bar) and its 99% "
                  "interval (line)")
    ax.set_title("Each pair's B/A per row: the spread the intervals come from", fontsize=10)
    fig.tight_layout()
    return save_png(fig, path)


def write_folder(out_dir: Path, frame: pd.DataFrame, side_a: Side, side_b: Side,
                 design: Design) -> tuple[str, list[str]]:
    """The compare folder of a design; the md table and the summary lines."""
    out_dir.mkdir(parents=True, exist_ok=True)
    summary = summary_lines(frame)
    plot = write_plot(frame, out_dir / "compare.png", design.floor,
                      "B vs A per row: ratio, 99% interval (thin) and 90% interval (thick), from "
                      "the pairs of runs")
    pairs = write_pairs_plot(frame, out_dir / PAIRS_PNG)
    table = write_all(out_dir, frame, side_a, side_b, design, summary, plot,
                      images=(("Each pair's B / A", pairs),))
    return table, summary

