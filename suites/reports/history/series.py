"""The history's rows grouped into series, and each series judged: did it change, where, and did
the newest run regress?

A series is one row measured again and again: (suite, case_id, variant, machine). The case id
carries the shape, the dtype and the training mode; the machine is loading.machine_of (device,
model, cores). Runs of two machines are never one series.

Two views of each series, judged alike (points.py makes their points):

- `time`: the row's own time per call, a point per run from its clean rounds;
- `relative`: for every variant but its suite's baseline, its time over the baseline's in the
  same run, round by round (the pairing the run report's speedup uses). On this machine whole
  runs drift by 5-12% (every variant of a case moves together in a run), which a time series
  can only see through when a step is large;
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
the step, the gate waits, and says so. The newest run's verdict and the place of the change it
sits after are judged together (placement.py): a change point placed at the newest run is the
newest run's regression; the gate's flag is placed where the level the newest run sits at
began. A change is placed at one run where the data puts it there, else said to lie between the
runs around the span the data cannot tell apart (Found.where). A view's state:

- `changed`: a step was found, or the newest run was called regressed or improved;
- `too_short`: under RUNS_NEEDED (6) points (a step needs 3 runs a side; the gate 5 baseline
  runs): nothing could be judged, and every page says the number;
- `too_noisy`: the gate's baseline scatters past max_cv (a series that is not current: its
  points' robust CV), so the newest run is never flagged and the page says so;
- `stable` otherwise.

The series' state combines its views and its counters (suites/reports/history/counters.py):
`changed` when either view changed or a counter changed (a counter is exact: any change is
one); else `stable` when some view could judge and found nothing (a time view too noisy beside
a steady relative view is stable: the relative view judged it); else `too_noisy` when a view
was too noisy; else `too_short`. `regressed` (the command's exit 1) when the newest run was
called regressed in either view.

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
from suites.reports.history import placement
from suites.reports.history.changepoints import MIN_SIZE, Changes, Place, Point, Step, find_changes
from suites.reports.history.gate import MAD_SCALE, MIN_BASELINE, Gate
from suites.reports.history.loading import History, Run
from suites.reports.history.points import point, relative_points, time_points  # noqa: F401
from suites.reports.history.scope import Scope, scope_of
from suites.reports.history.thresholds import Thresholds

TIME, RELATIVE = "time", "relative"
CHANGED, STABLE, TOO_NOISY, TOO_SHORT = "changed", "stable", "too_noisy", "too_short"
MIN_JUDGED = 2 * MIN_SIZE          # fewer points: no step can be tested
# Fewer runs with a timed point than this: too short, nothing judged (a step needs MIN_SIZE a
# side, the gate MIN_BASELINE runs before the newest): the one number every page says.
RUNS_NEEDED = max(MIN_JUDGED, MIN_BASELINE + 1)

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
    place: Place | None = None  # where the gate's flag lies (points' indices): placement.py


@dataclass
class Found:
    """What changed in a series at one run: the views that stepped there, the gate's call on
    the newest run, the counters that changed, and how the case moved."""
    run: int                          # the first run after the change (the best place)
    before_run: int                   # the last run surely before it (the diff's one side)
    after_run: int = -1               # the first run surely after it (the other side)
    first_run: int = -1               # the earliest run the change may be at (the span the data
    steps: dict[str, Step] = field(default_factory=dict)  # allows: first_run .. after_run)
    gates: dict[str, Gate] = field(default_factory=dict)
    counters: list = field(default_factory=list)   # counters.CounterEvent
    scope: Scope | None = None
    explanation: object = None        # explain.Explanation, set by explain.explain_all
    reason: str = ""                  # why a flag placed before the newest run is the newest's
    newest: int = -1                  # the newest run of the series' suite and machine

    def __post_init__(self):
        if self.after_run < 0:
            self.after_run = self.run
        if self.first_run < 0:
            self.first_run = self.run

    @property
    def regressed(self) -> bool:
        return any(g.state == "regressed" for g in self.gates.values())

    @property
    def exact(self) -> bool:
        """The data puts the change at one run (no other place is as likely)."""
        return self.first_run == self.after_run

    def where(self) -> str:
        """`at run #6`, or `between runs #4 and #6` where the data cannot tell the runs between
        apart: how every page says a change's place."""
        if self.exact:
            return f"at run #{self.run + 1}"
        return f"between runs #{self.before_run + 1} and #{self.after_run + 1}"

    def widen(self, before_run: int, first_run: int, after_run: int) -> None:
        """Another view's place at the same run: the span covers both."""
        self.before_run = min(self.before_run, before_run)
        self.first_run = min(self.first_run, first_run)
        self.after_run = max(self.after_run, after_run)

    def ratio(self) -> tuple[str, float]:
        """The view and after/before ratio the change is best told by (the relative view's
        where it stepped: it is the one drift does not blur; else the flag's, regressed first,
        so a REGRESSED change is never told by a view that improved), NaN for a counter
        alone."""
        for view in (RELATIVE, TIME):
            if view in self.steps:
                return view, self.steps[view].ratio
        gates = sorted(self.gates.items(), key=lambda kv: (kv[1].state != "regressed",
                                                           kv[0] != RELATIVE))
        if gates:
            return gates[0][0], gates[0][1].ratio
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


# --- judging -----------------------------------------------------------------------------------

def robust_cv(points: list[Point]) -> float:
    logs = np.array([p.log_mean for p in points])
    if logs.size < 2:
        return math.nan
    return MAD_SCALE * float(np.median(np.abs(logs - np.median(logs))))


def judge_view(name: str, runs: list[int], points: list[Point], figure: str, current: bool,
               thresholds: Thresholds) -> View:
    """One view judged: its steps, the verdict on its newest point (where current) and where its
    change lies (placement.py), and its state (see the module's docstring)."""
    changes = find_changes(points, min_size=MIN_SIZE)
    newest = placement.judge_newest(points, changes, current, thresholds)
    verdict = newest.gate
    view = View(name, runs, points, figure, changes, verdict, place=newest.place)
    n = len(points)
    flagged = verdict is not None and verdict.state in placement.FLAGGED
    if changes.steps or flagged:
        view.state, view.why = CHANGED, _changed_why(view)
        if newest.waiting:
            view.why += (f"; the gate waits for {MIN_BASELINE} runs at the level since run "
                         f"#{runs[newest.since] + 1}")
    elif n < RUNS_NEEDED and (verdict is None or verdict.state == "too_short"):
        view.state = TOO_SHORT
        view.why = (f"{n} run(s) with a timed point, fewer than {RUNS_NEEDED}: a change needs "
                    f"{MIN_JUDGED} ({MIN_SIZE} a side), the gate {MIN_BASELINE + 1}")
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
    parts = [f"x{s.ratio:.3g} {_at(view, s.index, s.first, s.last)}"
             for s in view.changes.steps]
    if view.gate is not None and view.gate.state in placement.FLAGGED:
        where = _at(view, view.place.index, view.place.first, view.place.last) \
            if view.place is not None else ""
        parts.append(f"newest {view.gate.state} x{view.gate.ratio:.3g} (z {view.gate.z:.1f})"
                     + (f", {where}" if where else ""))
    return "; ".join(parts)


def _at(view: View, index: int, first: int, last: int) -> str:
    """A place in a view's points as Found.where says it."""
    runs = view.runs
    return Found(runs[index], runs[first - 1], runs[last], runs[first]).where()


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


def _found(series: Series, newest: int) -> list[Found]:
    """The series' changes, one Found per place: steps of either view, the flag on the newest
    point at the place its change lies (placement.py), counter events (exact)."""
    at: dict[int, Found] = {}

    def entry(runs: list[int], place) -> Found:
        """The Found at a place of a view (`place`: a Step or changepoints.Place)."""
        run, before, first, after = (runs[place.index], runs[place.first - 1],
                                     runs[place.first], runs[place.last])
        if run not in at:
            at[run] = Found(run, before, after, first, newest=newest)
        else:
            at[run].widen(before, first, after)
        return at[run]

    for view in series.views:
        for step in view.changes.steps:
            entry(view.runs, step).steps[view.name] = step
    for view in series.views:
        if view.gate is not None and view.gate.state in placement.FLAGGED \
                and view.place is not None:
            found = entry(view.runs, view.place)
            found.gates[view.name] = view.gate
            found.reason = found.reason or placement.reason(view.place, view.runs,
                                                            view.gate.source)
    for event in series.counter_events:  # exact: at the run whose value differs
        if event.run not in at:
            at[event.run] = Found(event.run, event.before_run, newest=newest)
        at[event.run].counters.append(event)
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
        series.found = _found(series, newest[(suite, machine)])
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
