"""compare.png: one horizontal line per compared row, B/A time ratio with its 99% interval on a
log axis (2x faster and 2x slower sit at the same distance from 1), colored by verdict. Rows
are stacked vertically with their labels on the left, so 100 rows stay readable."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib import ticker

from suites.reports.kit.change import Change
from suites.reports.kit.plots import plt, save_png, times_ticks

# Inconclusive in amber: neither a change nor shown equivalent; the row's mde says what it could
# have seen.
COLORS = {Change.FASTER: "#2a9d3a", Change.SLOWER: "#c62828", Change.EQUIVALENT: "#777777",
          Change.INCONCLUSIVE: "#d08c00"}
ROW_INCHES = 0.24


def _labels(rows: pd.DataFrame) -> list[str]:
    with_suite = rows["suite"].nunique() > 1  # the suite only when it tells rows apart
    return [(f"{r.suite} " if with_suite else "") + f"{r.case_id} {r.variant}"
            for r in rows.itertuples()]


def _empty(path: Path, message: str) -> Path:
    fig, ax = plt.subplots(figsize=(7, 2))
    ax.axis("off")
    ax.text(0.5, 0.5, message, ha="center", va="center")
    return save_png(fig, path)


TITLE = ("B vs A per row: ratio, 99% interval (thin) and 90% interval (thick), from the rounds "
         "and the drift")


def write_plot(frame: pd.DataFrame, path: Path, floor: float, title: str = TITLE) -> Path:
    rows = frame[frame["verdict"].isin(COLORS)].reset_index(drop=True)
    if rows.empty:
        return _empty(path, "No row was comparable (ok on both sides, with enough clean rounds).")
    n = len(rows)
    fig, ax = plt.subplots(figsize=(9, 1.9 + ROW_INCHES * n))
    y = np.arange(n)[::-1]  # first row on top, in the table's order
    ax.axvspan(1 / (1 + floor), 1 + floor, color="#dddddd", alpha=0.6, lw=0,
               label=f"+-{floor:.0%} floor (equivalent: the 90% interval inside)")
    ax.axvline(1.0, color="black", linewidth=0.8)
    for verdict, color in COLORS.items():
        pick = (rows["verdict"] == verdict).to_numpy()
        if not pick.any():
            continue
        part = rows[pick]
        err = np.vstack([part["ratio"] - part["ci_low"], part["ci_high"] - part["ratio"]])
        ax.errorbar(part["ratio"], y[pick], xerr=np.clip(err, 0, None), fmt="o", color=color,
                    markersize=4, capsize=2, elinewidth=1.2, label=f"{verdict} ({pick.sum()})")
        # The 90% interval, thick: the one equivalence is judged by.
        ax.hlines(y[pick], part["eq_low"], part["eq_high"], color=color, linewidth=4, alpha=0.45)
    ax.set_yticks(y)
    ax.set_yticklabels(_labels(rows), fontsize=7 if n > 40 else 8)
    ax.set_ylim(-0.7, n - 0.3)
    ax.set_xscale("log")
    low = min(rows["ci_low"].min(), 1 / (1 + 2 * floor))
    high = max(rows["ci_high"].max(), 1 + 2 * floor)
    ax.set_xlim(low / 1.15, high * 1.15)
    # Decades are too coarse for a +-10% comparison: evenly spaced ticks read better there.
    ax.xaxis.set_major_locator(ticker.LogLocator(subs=(1.0, 2.0, 5.0)) if high / low > 4
                               else ticker.MaxNLocator(nbins=8))
    times_ticks(ax.xaxis)
    ax.grid(True, axis="x", which="both", alpha=0.3)
    ax.set_xlabel("B / A time per call (left of 1: B faster)")
    ax.set_title(title, fontsize=10)
    # Legend in its own strip under the axes, so it never covers a row.
    height = 1.9 + ROW_INCHES * n
    fig.legend(*ax.get_legend_handles_labels(), loc="lower center", ncol=5, fontsize=8,
               frameon=False)
    fig.tight_layout(rect=(0, 0.35 / height, 1, 1))
    return save_png(fig, path)
