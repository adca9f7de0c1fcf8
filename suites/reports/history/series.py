"""The history's rows grouped into series, and each series judged: did it change, where, and did
the newest run regress?

A series is one row measured again and again: (suite, case_id, variant, machine). The case id
carries the shape, the dtype and the training mode; the machine is loading.machine_of (device,
model, cores). Runs of two machines are never one series.

Two views of each series, judged alike:

- `time`: the row's own time per call. A point per run from its clean rounds (rounds.csv: the
  mean over a round's calls where every run of the series has it, else the median, as compare
  picks one figure for both sides), summarised by changepoints.Point (the mean log round and
  its standard error); a run without rounds.csv gives its mean_us and 95% interval instead.
- `relative`: for every variant but its suite's baseline, its time over the baseline's in the
  same run, round by round (variant round figure / baseline round figure of the same round, the
  rounds both were clean in: the pairing the run report's speedup uses,
  suites/results/intervals.py `paired_speedup`); a run without rounds.csv gives 1 / its
  speedup and interval. On this machine whole runs drift by 5-12% (every variant of a case
  moves together in a run), which a time series can only see through when a step is large;
  the ratio of two variants timed in the same rounds cancels that shared drift, so a change of
  the variant's own code shows at a few percent. A change of the baseline itself shows in the
  relative views of the other variants, in the opposite direction.

Per view: changes over the whole history (changepoints.find_changes, which estimates the
series' own drift), and, where the series is current (its newest point is the newest run of
its suite on its machine: an old series that stopped is not re-judged every time), the gate
on the newest point against the rolling baseline (gate.gate, with the suite's thresholds,
suites/reports/history/thresholds.py), taken from the runs since the view's last step: the
level the series is at now. A baseline straddling a step reads as too noisy (its MAD spans
both levels: real runs here, 2.7x at run 6 of 10, gave a 51% CV) or calls every run after the
step a regression until its median catches up, half a window later; a change found is
reported as a change, and the gate judges what came after it. With fewer than 5 runs since
the step, the gate waits, and says so. A view's state:

- `changed`: a step was found, or the gate called the newest run regressed or improved;
- `too_short`: under 6 points (a step needs 3 runs a side; the gate 5 baseline runs): nothing
  could be judged;
- `too_noisy`: the gate's baseline scatters past max_cv (a series that is not current: its
  points' robust CV), so the newest run is never flagged and the page says so;
- `stable` otherwise.

The series' state combines its views and its counters (suites/reports/history/counters.py):
`changed` when either view changed or a counter changed (a counter is exact: any change is
one); else `stable` when some view could judge and found nothing (a time view too noisy beside
a steady relative view is stable: the relative view judged it); else `too_noisy` when a view
was too noisy; else `too_short`. `regressed` (the command's exit 1) when the gate called the
newest run regressed in either view.

Where a series changed at a run, the other variants of its case say whether the case moved as
a whole (each variant's time across the change, the median of up to 5 runs a side within the
series' neighbouring changes): every variant alike points at the machine or what the variants
share (a library, the thread count), this variant alone at its own code or kernels (scope.py).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from suites.reports.history import counters as counter_module
from suites.reports.history.changepoints import Changes, Point, Step, find_changes
from suites.reports.history.gate import MAD_SCALE, MIN_BASELINE, Gate, gate
from suites.reports.history.loading import History, Key, Run
from suites.reports.history.scope import Scope, scope_of
from suites.reports.history.thresholds import Thresholds
from suites.results.columns import Status
from suites.results.intervals import t95

TIME, RELATIVE = "time", "relative"
CHANGED, STABLE, TOO_NOISY, TOO_SHORT = "changed", "stable", "too_noisy", "too_short"
MIN_SIZE = 3                       # runs a side of a step (find_changes' default)
MIN_JUDGED = 2 * MIN_SIZE          # fewer points: no step can be placed

SeriesKey = tuple[str, str, str, str]  # (suite, case_id, variant, machine)


@dataclass
class View:
    name: str                # TIME or RELATIVE
    runs: list[int]          # history run index of each point
    points: list[Point]
    figure: str              # what a point is made of, in words
    changes: Changes
    gate: Gate | None        # None: not current (or no point in the newest run)
    state: str = STABLE
    why: str = ""
    cv: float = math.nan     # the robust CV the too_noisy rule read


@dataclass
class Found:
    """What changed in a series at one run: the views that stepped there, the gate's call on
    the newest run, the counters that changed, and how the case moved."""
    run: int                          # the first run after the change
    before_run: int                   # the run before it (the other side of the diff)
    steps: dict[str, Step] = field(default_factory=dict)
    gates: dict[str, Gate] = field(default_factory=dict)
    counters: list = field(default_factory=list)   # counters.CounterEvent
    scope: Scope | None = None
    explanation: object = None        # explain.Explanation, set by explain.explain_all

    @property
    def regressed(self) -> bool:
        return any(g.state == "regressed" for g in self.gates.values())

    def ratio(self) -> tuple[str, float]:
        """The view and after/before ratio the change is best told by (the relative view's
        where it stepped: it is the one drift does not blur), NaN for a counter alone."""
        for view in (RELATIVE, TIME):
            if view in self.steps:
                return view, self.steps[view].ratio
        for view in (RELATIVE, TIME):
            if view in self.gates:
                return view, self.gates[view].ratio
        return "", math.nan


@dataclass
class Series:
    key: SeriesKey
    runs: list[int]                   # history run indices holding the row
    baseline: str                     # the suite's baseline variant
    time: View
    relative: View | None
    counter_values: dict[str, list]
    counter_events: list
    thresholds: Thresholds
    found: list[Found] = field(default_factory=list)
    state: str = STABLE
    why: str = ""
    statuses: list[str] = field(default_factory=list)  # the row's status in each of its runs
    reason: str = ""                                   # its newest run's reason, if any

    @property
    def suite(self) -> str:
        return self.key[0]

    @property
    def case_id(self) -> str:
        return self.key[1]

    @property
    def variant(self) -> str:
        return self.key[2]

    @property
    def machine(self) -> str:
        return self.key[3]

    @property
    def views(self) -> list[View]:
        return [self.time] + ([self.relative] if self.relative is not None else [])

    @property
    def regressed(self) -> bool:
        return any(v.gate is not None and v.gate.state == "regressed" for v in self.views)

    @property
    def improved(self) -> bool:
        return not self.regressed and any(
            v.gate is not None and v.gate.state == "improved" for v in self.views)

    def name(self) -> str:
        return f"{self.suite} {self.case_id} {self.variant}"


# --- points ------------------------------------------------------------------------------------

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


# --- judging -----------------------------------------------------------------------------------

def robust_cv(points: list[Point]) -> float:
    logs = np.array([p.log_mean for p in points])
    if logs.size < 2:
        return math.nan
    return MAD_SCALE * float(np.median(np.abs(logs - np.median(logs))))


def judge_view(name: str, runs: list[int], points: list[Point], figure: str, current: bool,
               thresholds: Thresholds) -> View:
    """One view judged: its steps, the gate on its newest point (where current) against the
    runs since its last step, and its state (see the module's docstring)."""
    changes = find_changes(points, min_size=MIN_SIZE)
    since = changes.steps[-1].index if changes.steps else 0
    waiting = bool(changes.steps) and len(points) - since - 1 < MIN_BASELINE
    verdict = gate([p.level for p in points[since:]], **thresholds.options()) \
        if current and points and not waiting else None
    view = View(name, runs, points, figure, changes, verdict)
    n = len(points)
    flagged = verdict is not None and verdict.state in ("regressed", "improved")
    if changes.steps or flagged:
        view.state, view.why = CHANGED, _changed_why(view)
        if current and waiting:
            view.why += (f"; the gate waits for {MIN_BASELINE} runs at the level since run "
                         f"#{runs[since] + 1}")
    elif n < MIN_JUDGED and (verdict is None or verdict.state == "too_short"):
        view.state = TOO_SHORT
        view.why = (f"{n} run(s) with a timed point: a change needs {MIN_JUDGED} ({MIN_SIZE} a "
                    f"side), the gate {MIN_BASELINE + 1}")
    else:
        view.cv = verdict.cv if verdict is not None and verdict.state != "too_short" \
            else robust_cv(points)
        if view.cv > thresholds.max_cv or (verdict is not None and verdict.state == "too_noisy"):
            view.state = TOO_NOISY
            view.why = (f"its runs scatter by {view.cv:.0%} (robust CV), past "
                        f"{thresholds.max_cv:.0%}: not gated")
        else:
            view.state = STABLE
            view.why = f"no change in {n} runs" + (
                f"; newest x{verdict.ratio:.3g} of its baseline (z {verdict.z:.1f})"
                if verdict is not None and verdict.state == "stable" else "")
    return view


def _changed_why(view: View) -> str:
    parts = [f"x{s.ratio:.3g} at run #{view.runs[s.index] + 1}" for s in view.changes.steps]
    if view.gate is not None and view.gate.state in ("regressed", "improved"):
        parts.append(f"newest {view.gate.state} x{view.gate.ratio:.3g} (z {view.gate.z:.1f})")
    return "; ".join(parts)


def combine(series: Series) -> None:
    """The series' state from its views and counters (see the module's docstring)."""
    views = series.views
    states = [v.state for v in views]
    if CHANGED in states or series.counter_events:
        series.state = CHANGED
        parts = [f"{v.name}: {v.why}" for v in views if v.state == CHANGED]
        parts += [f"{e.text()} at run #{e.run + 1}" for e in series.counter_events]
        series.why = "; ".join(parts)
    elif STABLE in states:
        series.state = STABLE
        series.why = "; ".join(f"{v.name}: {v.why}" for v in views)
    elif TOO_NOISY in states:
        series.state = TOO_NOISY
        series.why = "; ".join(f"{v.name}: {v.why}" for v in views)
    else:
        series.state = TOO_SHORT
        series.why = views[0].why
        if not views[0].points and series.statuses:
            counts = {st: series.statuses.count(st) for st in dict.fromkeys(series.statuses)}
            said = ", ".join(f"{st} in {n}" for st, n in counts.items())
            reason = f" ({series.reason})" if series.reason else ""
            series.why = f"never timed ok: {said} of {len(series.statuses)} run(s){reason}"


def _found(series: Series) -> list[Found]:
    """The series' changes, one Found per run: steps of either view, the gate's flag on the
    newest point, counter events."""
    at: dict[int, Found] = {}

    def entry(run: int, before: int) -> Found:
        if run not in at:
            at[run] = Found(run, before)
        return at[run]

    for view in series.views:
        for step in view.changes.steps:
            run = view.runs[step.index]
            entry(run, view.runs[step.index - 1]).steps[view.name] = step
    for view in series.views:
        if view.gate is not None and view.gate.state in ("regressed", "improved") \
                and len(view.runs) >= 2:
            entry(view.runs[-1], view.runs[-2]).gates[view.name] = view.gate
    for event in series.counter_events:
        entry(event.run, event.before_run).counters.append(event)
    return [at[r] for r in sorted(at)]


@dataclass
class Judged:
    history: History
    series: list[Series]
    thresholds: dict[str, Thresholds]     # suite -> the thresholds its series were gated by
    newest: dict[tuple[str, str], int]    # (suite, machine) -> its newest run's index
    triton: dict = field(default_factory=dict)  # counters.run_level_triton's groups

    @property
    def regressed(self) -> list[Series]:
        return [s for s in self.series if s.regressed]

    def count(self, state: str) -> int:
        return sum(s.state == state for s in self.series)


def group(history: History) -> dict[SeriesKey, list[Run]]:
    """series key -> the runs (in order) that hold its row."""
    out: dict[SeriesKey, list[Run]] = {}
    for run in history.runs:
        for key in run.rows:
            out.setdefault((*key, run.machine), []).append(run)
    return out


def judge(history: History, thresholds: dict[str, Thresholds]) -> Judged:
    """Every series of the history judged, its changes found and scoped."""
    groups = group(history)
    newest: dict[tuple[str, str], int] = {}
    for run in history.runs:
        for suite in {k[0] for k in run.rows}:
            newest[(suite, run.machine)] = run.index
    all_series = []
    for skey, runs in groups.items():
        suite, case_id, variant, machine = skey
        key = (suite, case_id, variant)
        limits = thresholds.get(suite) or Thresholds()
        current = runs[-1].index == newest[(suite, machine)]
        t_runs, t_points, t_figure = time_points(runs, key)
        time = judge_view(TIME, t_runs, t_points, t_figure,
                          current and bool(t_runs) and t_runs[-1] == runs[-1].index, limits)
        relative = None
        baseline = history.baselines.get(suite, "")
        if baseline and variant != baseline:
            r_runs, r_points, r_figure = relative_points(runs, key, (suite, case_id, baseline))
            if r_points:
                relative = judge_view(RELATIVE, r_runs, r_points, r_figure,
                                      current and r_runs[-1] == runs[-1].index, limits)
        values = counter_module.row_counters(runs, [key] * len(runs))
        events = counter_module.events(values, [r.index for r in runs])
        series = Series(skey, [r.index for r in runs], baseline, time, relative, values, events,
                        limits, statuses=[r.rows[key]["status"] for r in runs],
                        reason=str(runs[-1].rows[key].get("reason") or ""))
        combine(series)
        series.found = _found(series)
        all_series.append(series)
    by_case: dict[tuple, list[Series]] = {}
    by_suite: dict[tuple, list[Series]] = {}
    for s in all_series:
        by_case.setdefault((s.suite, s.case_id, s.machine), []).append(s)
        by_suite.setdefault((s.suite, s.machine), []).append(s)
    for s in all_series:
        for found in s.found:
            if found.steps or found.gates:
                found.scope = scope_of(s, found, by_case[(s.suite, s.case_id, s.machine)],
                                       by_suite[(s.suite, s.machine)])
    return Judged(history, all_series, thresholds, newest,
                  counter_module.run_level_triton(history.runs))
