"""One small plot per series that moved: its points over the runs with their intervals, the
levels the change points found, each change marked where it lands, and the newest run ringed
when the gate flagged it; the relative view (time over the baseline's, paired by round) in a
second panel beside the first where the series has one. The x axis is the run's place in the
history (#1 oldest), so runs of one day and of one month apart read alike; the y axis is
logarithmic (a ratio is a distance)."""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np
from matplotlib import ticker

from suites.common.numbers import num
from suites.reports.kit.plots import plt, save_png
from suites.results.intervals import t95

COLORS = {"point": "#1f5fa8", "level": "#555555", "step": "#c62828", "gate": "#d08c00",
          "counter": "#6a3d9a"}


def _panel(ax, view, found, title: str, unit: str) -> None:
    x = np.array(view.runs) + 1
    m = np.array([p.log_mean for p in view.points])
    # Student's t on each run's rounds (3 rounds: t = 4.3, not 1.96); one round: no bar.
    half = np.array([t95(p.n - 1) * p.se if p.n > 1 and math.isfinite(p.se) else 0.0
                     for p in view.points])
    level, low, high = np.exp(m), np.exp(m - half), np.exp(m + half)
    ax.errorbar(x, level, yerr=[level - low, high - level], fmt="o", markersize=3,
                color=COLORS["point"], elinewidth=1, capsize=1.5, label="run (95% of its rounds)")
    bounds = [0] + [s.index for s in view.changes.steps] + [len(view.points)]
    for i, (a, b) in enumerate(zip(bounds, bounds[1:])):
        if i < len(view.changes.steps):
            value = view.changes.steps[i].before
        elif view.changes.steps:
            value = view.changes.steps[-1].after
        else:
            value = float(np.exp(np.median(m[a:b])))
        ax.hlines(value, x[a] - 0.4, x[b - 1] + 0.4, color=COLORS["level"], linewidth=1.2,
                  alpha=0.8, label="level" if i == 0 else None)
    for j, step in enumerate(view.changes.steps):
        ax.axvline(x[step.index] - 0.5, color=COLORS["step"], linestyle="--", linewidth=1,
                   label="change" if j == 0 else None)
    for f in found:
        if view.name in f.gates:
            ax.plot([x[-1]], [level[-1]], "o", markersize=10, markerfacecolor="none",
                    color=COLORS["gate"], label=f"newest: {f.gates[view.name].state}")
        elif f.counters and not f.steps and f.run + 1 in x:
            ax.axvline(f.run + 0.5, color=COLORS["counter"], linestyle=":", linewidth=1,
                       label="counter changed")
    lows, highs = float(np.min(low)), float(np.max(high))
    if highs / max(lows, 1e-300) > 4:  # decades apart: a log axis, a ratio is a distance
        ax.set_yscale("log")
        ax.yaxis.set_major_locator(ticker.LogLocator(subs=(1.0, 2.0, 5.0)))
        ax.yaxis.set_minor_formatter(ticker.NullFormatter())
    ax.yaxis.set_major_formatter(ticker.FuncFormatter(lambda value, _: num(value, 3)))
    ax.set_title(title, fontsize=9)
    ax.set_xlabel("run (#1 oldest)", fontsize=8)
    ax.set_ylabel(unit, fontsize=8)
    ax.tick_params(labelsize=7)
    ax.grid(True, alpha=0.25)
    ax.legend(fontsize=6.5, loc="best", frameon=False)


def write_plot(series, path: Path) -> Path:
    """`path`: the series' plot (one or two panels), small."""
    views = [v for v in series.views if v.points]
    fig, axes = plt.subplots(1, max(1, len(views)), figsize=(4.6 * max(1, len(views)), 2.7),
                             squeeze=False)
    for ax, view in zip(axes[0], views):
        if view.name == "time":
            _panel(ax, view, series.found, "time per call", "us/call")
        else:
            _panel(ax, view, series.found, f"relative to {series.baseline} (paired rounds)",
                   f"time / {series.baseline}'s")
    fig.suptitle(f"{series.name()}  ({series.machine})", fontsize=9)
    fig.subplots_adjust(left=0.15 / len(views) + 0.02, right=0.99, bottom=0.17, top=0.82,
                        wspace=0.22)
    return save_png(fig, path, dpi=90)
