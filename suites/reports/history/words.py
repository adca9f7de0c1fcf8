"""What every page of a history says in the same words: the headline, the changes' lines
(each at its place, flagged where it regressed), how it was judged. history.md, history.html
and the console all read these, so they cannot say it differently (the audit checks they do
not: audit.py md_html)."""
from __future__ import annotations

import math

from suites.reports.history.series import (CHANGED, RUNS_NEEDED, STABLE, TOO_NOISY,
                                           TOO_SHORT, Found, Judged, Series)


def latest_found(series: Series):
    return series.found[-1] if series.found else None


def moved(judged: Judged) -> list[Series]:
    """The series that changed, the regressed first, then by their latest change (newest
    first), then by its size."""
    def size(s: Series) -> float:
        latest = latest_found(s)
        if latest is None:
            return 0.0
        ratio = latest.ratio()[1]
        return abs(math.log(ratio)) if math.isfinite(ratio) and ratio > 0 else 0.0
    changed = [s for s in judged.series if s.state == CHANGED]
    return sorted(changed, key=lambda s: (not s.regressed,
                                          -(latest_found(s).run if s.found else -1), -size(s)))


def headline(judged: Judged) -> str:
    runs = judged.history.runs
    dates = [r.created for r in runs if r.created is not None]
    span = (f"{min(dates):%Y-%m-%d %H:%M} to {max(dates):%Y-%m-%d %H:%M}; " if dates else "")
    machines = len({s.machine for s in judged.series})
    return (f"{len(judged.series)} series over {len(runs)} runs ({span}{machines} "
            f"machine{'s' if machines != 1 else ''}): {judged.count(CHANGED)} changed, "
            f"{len(judged.regressed)} regressed at the newest run, {judged.count(TOO_NOISY)} "
            f"too noisy, {judged.count(TOO_SHORT)} too short (fewer than {RUNS_NEEDED} runs "
            f"timed ok), {judged.count(STABLE)} stable.")


def regressed_tag(found: Found) -> str:
    """How a regressed change is flagged on every page ('' where it is not): at the newest run,
    or at the place where the level the newest run sits at began."""
    if not found.regressed:
        return ""
    if found.run == found.newest and found.exact:
        return "REGRESSED at the newest run"
    return f"REGRESSED: the newest run (#{found.newest + 1}) sits at the level since this change"


def change_lines(judged: Judged, limit: int | None = None) -> list[str]:
    """A line per change of the moved series: the run and the explanation's first line."""
    lines = []
    for s in moved(judged):
        for found in reversed(s.found):
            tag = "REGRESSED " if found.regressed else ""
            first = found.explanation.first if found.explanation else ""
            lines.append(f"{tag}{s.name()} {found.where()}: {first}")
    if limit is not None and len(lines) > limit:
        return lines[:limit] + [f"... and {len(lines) - limit} more change(s) (history.md, "
                                "history.html)"]
    return lines


def method_lines(judged: Judged) -> list[str]:
    lines = [f"gate ({suite}): {t.text()}" for suite, t in judged.thresholds.items()]
    lines.append("views: time (the row's own clean rounds) and relative (its time over the "
                 "baseline variant's, paired by round: cancels the drift a run shares)")
    return lines + judged.history.notes
