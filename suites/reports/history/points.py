"""A series' points, one per run: what each view of it is made of (series.py says the views).

- `time`: the row's own time per call, from its clean rounds (rounds.csv: the mean over a
  round's calls where every run of the series has it, else the median, as compare picks one
  figure for both sides), summarised as changepoints.Point (the mean log round and its standard
  error); a run without rounds.csv gives its mean_us and 95% interval instead.
- `relative`: its time over the suite's baseline variant's in the same rounds (the rounds both
  were clean in: the run report's paired speedup); a run without rounds.csv gives 1 / its
  speedup and interval.

Only ok rows are points.
"""
from __future__ import annotations

import math

from suites.reports.history.changepoints import Point
from suites.reports.history.loading import Key, Run
from suites.results.columns import Status
from suites.results.intervals import t95


def point(figures: list[float]) -> Point:
    """changepoints.Point.from_figures in plain Python (the same mean log and standard error,
    ddof 1): numpy's overhead on a handful of rounds was a third of judging 200 runs."""
    logs = [math.log(f) for f in figures]
    n = len(logs)
    mean = math.fsum(logs) / n
    if n < 2:
        return Point(mean, math.nan, n)
    var = math.fsum((x - mean) ** 2 for x in logs) / (n - 1)
    return Point(mean, math.sqrt(var / n), n)


def _interval_point(value: float, low: float, high: float, rounds: float) -> Point | None:
    """A run without rounds.csv: its figure and 95% interval (Student's t on its rounds)."""
    if not (value > 0 and math.isfinite(value)):
        return None
    n = int(rounds) if rounds == rounds and rounds >= 1 else 1
    if n >= 2 and low > 0 and high > low:
        se = (math.log(high) - math.log(low)) / (2 * t95(n - 1))
    else:
        se = math.nan
    return Point(math.log(value), se, n)


def _figure_index(runs: list[Run], key: Key) -> int:
    """0 (mean_us) where every run with clean rounds of `key` has the mean; else 1 (median)."""
    for run in runs:
        rounds = run.rounds.get(key)
        if rounds and not all(math.isfinite(f[0]) for f in rounds.values()):
            return 1
    return 0


def time_points(runs: list[Run], key: Key) -> tuple[list[int], list[Point], str]:
    figure = _figure_index(runs, key)
    out_runs, points = [], []
    for run in runs:
        row = run.rows.get(key)
        if row is None or row["status"] != Status.OK:
            continue
        rounds = run.rounds.get(key)
        figures = [f[figure] for f in rounds.values()] if rounds else []
        figures = [f for f in figures if math.isfinite(f)]
        if figures:
            made = point(figures)
        else:
            made = _interval_point(row["mean_us"], row["mean_low_us"], row["mean_high_us"],
                                   row["rounds"])
        if made is not None:
            out_runs.append(run.index)
            points.append(made)
    name = ("clean rounds' " + ("mean_us" if figure == 0 else "median_us")
            + " (us/call)")
    return out_runs, points, name


def relative_points(runs: list[Run], key: Key, base: Key) -> tuple[list[int], list[Point], str]:
    figure = _figure_index(runs, key)
    if figure == 0:
        figure = _figure_index(runs, base)
    out_runs, points = [], []
    for run in runs:
        row, base_row = run.rows.get(key), run.rows.get(base)
        if row is None or base_row is None or row["status"] != Status.OK \
                or base_row["status"] != Status.OK:
            continue
        mine, theirs = run.rounds.get(key) or {}, run.rounds.get(base) or {}
        ratios = [mine[r][figure] / theirs[r][figure] for r in mine.keys() & theirs.keys()
                  if math.isfinite(mine[r][figure]) and math.isfinite(theirs[r][figure])]
        if ratios:
            made = point(ratios)
        else:
            speedup = row["speedup"]
            made = _interval_point(1 / speedup, 1 / row["speedup_high"],
                                   1 / row["speedup_low"], row["rounds"]) \
                if speedup > 0 else None
        if made is not None:
            out_runs.append(run.index)
            points.append(made)
    return out_runs, points, f"time / {base[2]}'s in the same rounds (paired)"
