"""The newest run of a view, judged once: its verdict (regressed, improved, stable...) and where
the change it sits after lies, so that the verdict and the change's place never disagree.

Three cases, in order:

- a change point placed at the newest run (the data puts the step there: only the newest run
  sits at the new level) is the newest run changing: regressed or improved by the practical
  threshold alone (the change point's own test already found it beyond the noise), the step's
  ratio and z, said as a change point's verdict (gate.Gate source "step");
- a change point placed before it: the gate judges the runs since it (the level the series is
  at now), and waits while they are fewer than gate.MIN_BASELINE + 1: a change found is
  reported at its place, not as the newest run's regression;
- the gate's flag on the newest run (regressed or improved against its baseline) is placed where
  the level it sits at began, by the gate's own reading (gate.level_began: the runs before it
  that the gate flags the same way against the same baseline; before them, those it calls out
  by one threshold alone, which the data cannot tell apart). Where that is before the newest
  run, the verdict stands for the reason said with it (`reason`): the newest run sits at a
  level that began there and no change point has confirmed yet.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from suites.reports.history import gate as gate_module
from suites.reports.history.changepoints import MIN_SIZE, Changes, Place, Point
from suites.reports.history.thresholds import Thresholds

FLAGGED = ("regressed", "improved")


@dataclass(frozen=True)
class Newest:
    gate: gate_module.Gate | None  # the verdict on the newest point; None: not current, waiting
    place: Place | None            # where a flagged verdict's change lies (points' indices)
    waiting: bool = False          # a change point too recent for the gate's baseline
    since: int = 0                 # the first point of the level the gate judged against


def judge_newest(points: list[Point], changes: Changes, current: bool,
                 thresholds: Thresholds) -> Newest:
    """The newest point's verdict and, where it is flagged, its change's place (see the
    module's docstring)."""
    n = len(points)
    if not current or not points:
        return Newest(None, None)
    steps = changes.steps
    if steps and steps[-1].index == n - 1:
        step = steps[-1]
        before = steps[-2].index if len(steps) > 1 else 0
        verdict = gate_module.Gate(gate_module.practical(step.ratio, thresholds.min_change),
                                   step.z, step.ratio, step.before, step.index - before,
                                   math.nan, source="step")
        place = Place(step.index, step.first, step.last)
        return Newest(verdict, place if verdict.state in FLAGGED else None, since=before)
    since = steps[-1].index if steps else 0
    if steps and n - since - 1 < gate_module.MIN_BASELINE:
        return Newest(None, None, waiting=True, since=since)
    verdict = gate_module.gate([p.level for p in points[since:]], **thresholds.options())
    if verdict.state not in FLAGGED:
        return Newest(verdict, None, since=since)
    # The place by the gate's own reading (its baseline, spread and thresholds): the flag and
    # its place rest on one judgement.
    first, start = gate_module.level_began([p.level for p in points[since:]], verdict,
                                           **thresholds.options())
    return Newest(verdict, Place(since + start, since + first, since + start), since=since)


def reason(place: Place | None, runs: list[int], source: str = "gate") -> str:
    """Why a flag whose change is not placed at the newest run alone is the newest run's: ''
    where it is (`runs`: the history run index of each point; `source`: the verdict's)."""
    newest = len(runs) - 1
    if place is None or place.first == place.index == newest:
        return ""
    parts = []
    if place.index < newest:
        parts.append(f"the newest run (#{runs[-1] + 1}) sits at the level that began at run "
                     f"#{runs[place.index] + 1}: {newest - place.index + 1} run(s) at it, not "
                     f"confirmed as a change point (which needs {MIN_SIZE} a side and its "
                     "test)")
    if place.first < place.index and source == "step":
        parts.append(f"the change point may lie at any run from #{runs[place.first] + 1} to "
                     f"#{runs[place.index] + 1}: the data cannot tell them apart")
    elif place.first < place.index:
        parts.append(f"run(s) #{runs[place.first] + 1} to #{runs[place.index - 1] + 1} are out "
                     "by one of the gate's two thresholds alone: they may be at the new level "
                     "or not")
    return "; ".join(parts)
