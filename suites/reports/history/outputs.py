"""What a history writes: history.html (page.py), history.md and the console's summary (the same
answer, in text, words.py's words), series.csv (a row per series) and regressions.json (for
machines: the newest runs, each regressed series with its ratio, z and thresholds, every change
found with its place, its cause's kind, key and values, and the runs compared)."""
from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd

from suites.common.text import cut
from suites.reports.history.page import MAX_PLOTS, write_html
from suites.reports.history.series import (CHANGED, RUNS_NEEDED, STABLE, TOO_NOISY,
                                           TOO_SHORT, Found, Judged, Series)
from suites.reports.history.words import (change_lines, headline, latest_found,
                                          method_lines, moved, regressed_tag)
from suites.results import atomic

CONSOLE_CHANGES = 12  # changes printed; history.md and the page list them all
def _view_text(view) -> str:
    if view is None:
        return "-"
    return f"{view.state}: {view.why}" if view.why else view.state


def _gate(series: Series):
    """The gate's call the table shows: the relative view's where it judged, else time's."""
    for view in ([series.relative] if series.relative is not None else []) + [series.time]:
        if view.gate is not None and view.gate.state not in ("too_short",):
            return view.gate
    return None


def series_frame(judged: Judged) -> pd.DataFrame:
    rows = []
    for s in judged.series:
        verdict, latest = _gate(s), latest_found(s)
        rows.append({
            "suite": s.suite, "case_id": s.case_id, "variant": s.variant, "machine": s.machine,
            "state": s.state, "regressed": s.regressed, "runs": len(s.runs),
            "points": len(s.time.points), "time": _view_text(s.time),
            "relative": _view_text(s.relative),
            "gate_state": verdict.state if verdict is not None else "",
            "gate_ratio": _finite(verdict.ratio) if verdict is not None else math.nan,
            "gate_z": _finite(verdict.z) if verdict is not None else math.nan,
            "cv": _finite(verdict.cv) if verdict is not None else math.nan,
            "counters": "; ".join(f"{e.text()} at run #{e.run + 1}" for e in s.counter_events),
            "why": s.why,
            "changed_at": (f"#{latest.run + 1}" if latest is not None else ""),
            "changed_where": latest.where() if latest is not None else "",
            "explanation": (latest.explanation.first
                            if latest is not None and latest.explanation else ""),
        })
    return pd.DataFrame(rows)


def _run_facts(run) -> dict:
    return {"run": str(run.folder), "run_index": run.index + 1,
            "created": run.env.get("created"), "commit": run.commit, "suite": run.suite,
            "machine": run.machine}


def _place(found: Found, runs) -> dict:
    """Where a change lies, as regressions.json says it (run numbers from 1), the folders
    compared for its explanation (resolved: the audit reads them from anywhere), and how it
    stands against the newest run."""
    ex = found.explanation
    return {"run": str(runs[found.run].folder), "run_index": found.run + 1,
            "before_run": str(runs[found.before_run].folder),
            "before_run_index": found.before_run + 1, "first_run_index": found.first_run + 1,
            "after_run_index": found.after_run + 1,
            "where": found.where(), "newest_run_index": found.newest + 1,
            "regressed": found.regressed, "reason": found.reason,
            "compared": {"before": str(runs[found.before_run].folder.resolve()),
                         "after": str(runs[found.after_run].folder.resolve())},
            "explanation": ex.first if ex else "", "cause": ex.cause if ex else "",
            "cause_key": ex.cause_key if ex else "",
            "cause_before": ex.cause_before if ex else None,
            "cause_after": ex.cause_after if ex else None}


def regressions(judged: Judged) -> dict:
    """regressions.json's content."""
    runs = judged.history.runs
    newest = [dict(_run_facts(runs[i]), suite=suite, machine=machine)
              for (suite, machine), i in judged.newest.items()]
    regressed, changes = [], []
    for s in judged.series:
        key = {"suite": s.suite, "case_id": s.case_id, "variant": s.variant,
               "machine": s.machine}
        for found in s.found:
            place = _place(found, runs)
            changes.append({**key, **place,
                            "steps": {view: {"ratio": step.ratio, "low": step.low,
                                             "high": step.high, "p_value": step.p_value}
                                      for view, step in found.steps.items()},
                            "counters": [{"name": e.name, "before": e.before, "after": e.after}
                                         for e in found.counters]})
            for view, verdict in found.gates.items():
                if verdict.state != "regressed":
                    continue
                regressed.append({
                    **key, "view": view, **place, "source": verdict.source,
                    "ratio": verdict.ratio, "z": verdict.z, "baseline": verdict.baseline,
                    "baseline_runs": verdict.n, "cv": verdict.cv,
                    "thresholds": s.thresholds.values()})
    return _clean({"runs": len(runs), "series": len(judged.series),
                   "runs_needed": RUNS_NEEDED,
                   "counts": {state: judged.count(state)
                              for state in (CHANGED, STABLE, TOO_NOISY, TOO_SHORT)},
                   "regressed_series": len(judged.regressed),
                   "thresholds": {suite: t.values() for suite, t in judged.thresholds.items()},
                   "newest": newest, "regressed": regressed, "changes": changes,
                   "exit_code": 1 if regressed else 0})


def _clean(value):
    """JSON as JSON reads it: a number that is not finite (a z against an identical baseline,
    a CV no baseline had) is null, never NaN or Infinity."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: _clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_clean(v) for v in value]
    return value


def _finite(value: float) -> float:
    return value if math.isfinite(value) else math.nan


def console(judged: Judged, out_dir: Path) -> str:
    lines = [headline(judged)]
    lines += [f"  {cut(line, 200)}" for line in change_lines(judged, CONSOLE_CHANGES)]
    noisy = [s for s in judged.series if s.state == TOO_NOISY]
    if noisy:
        lines.append(f"too noisy to judge: {', '.join(s.name() for s in noisy[:6])}"
                     f"{', ...' if len(noisy) > 6 else ''} (series.csv says why)")
    lines += method_lines(judged)
    problems = judged.history.problems
    if problems:
        lines.append(f"read with care: {len(problems)} problem(s) in the run folders "
                     "(history.md lists them)")
    lines.append(f"history folder: {out_dir}")
    return "\n".join(lines)


def _md(value) -> str:
    return str(value).replace("|", "\\|").replace("\n", " ")


def markdown(judged: Judged, frame: pd.DataFrame) -> str:
    parts = ["# fusebench history", headline(judged)]
    blocks = []
    for s in moved(judged):
        for found in reversed(s.found):
            if found.explanation is None:
                continue
            tag = f" ({regressed_tag(found)})" if found.regressed else ""
            ex = found.explanation
            blocks.append(f"## {s.name()} on {s.machine}, {found.where()}{tag}\n\n"
                          f"**{ex.first}**\n\n(compared: {ex.before} -> {ex.after})\n\n"
                          + "\n".join(f"- {line}" for line in ex.lines))
    parts += blocks or ["No series changed."]
    columns = ["suite", "case_id", "variant", "machine", "state", "regressed", "runs", "why"]
    table = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    table += ["| " + " | ".join(_md(r[c]) for c in columns) + " |" for _, r in frame.iterrows()]
    parts += ["## Every series", "\n".join(table), "## How it was judged",
              "\n".join(f"- {line}" for line in method_lines(judged))]
    if judged.history.problems:
        parts += ["## Read with care", "\n".join(f"- {_md(p)}" for p in judged.history.problems)]
    return "\n\n".join(parts) + "\n"


def write_all(out_dir: Path, judged: Judged) -> str:
    """Every output into `out_dir`; returns the console's summary."""
    out_dir.mkdir(parents=True, exist_ok=True)
    frame = series_frame(judged)
    atomic.write_text(out_dir / "series.csv", frame.to_csv(index=False))
    atomic.write_text(out_dir / "regressions.json",
                      json.dumps(regressions(judged), indent=2) + "\n")
    atomic.write_text(out_dir / "history.md", markdown(judged, frame))
    plots = {}
    plot_dir = out_dir / "plots"
    for i, s in enumerate(moved(judged)[:MAX_PLOTS]):
        if not any(v.points for v in s.views):
            continue
        from suites.reports.history.plot import write_plot  # matplotlib: only when drawing
        plot_dir.mkdir(exist_ok=True)
        plots[s.key] = write_plot(s, plot_dir / f"series_{i:03d}.png")
    write_html(out_dir / "history.html", judged, frame, plots)
    return console(judged, out_dir)
