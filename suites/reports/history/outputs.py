"""What a history writes: history.html (the report kit's page: the answer first, a small plot and
its explanation per series that moved, a sortable table of every series with its state),
history.md and the console's summary (the same answer, in text), series.csv (a row per
series) and regressions.json (for machines: the newest runs, each regressed series with its
ratio, z and thresholds and the explanation's first line, every change found)."""
from __future__ import annotations

import html
import json
import math
from pathlib import Path

import pandas as pd

from suites.common.text import cut
from suites.reports.history.series import (CHANGED, STABLE, TOO_NOISY, TOO_SHORT, Judged,
                                           Series)
from suites.reports.kit import page as hp
from suites.reports.kit.banner import banner_html
from suites.results import atomic

MAX_PLOTS = 12       # plots on the page (about 0.4 s each); the table lists every series
CONSOLE_CHANGES = 12  # changes printed; history.md and the page list them all
STATE_CSS = """
tr.changed td{background:#fbeaea}tr.too_noisy td{color:#a60}tr.too_short td{color:#777}
.change{border:1px solid #ddd;padding:.4em .8em;margin:.8em 0}
.change h3{margin:.2em 0;font-size:1em}.change .first{font-weight:600}
.change ul{margin:.2em 0;font-size:.9em}
"""
SERIES_COLUMNS = {"suite": "suite", "case_id": "case", "variant": "variant",
                  "machine": "machine", "state": "state", "regressed": "newest regressed",
                  "runs": "runs", "time": "time", "relative": "relative",
                  "gate_ratio": "newest / baseline", "gate_z": "z", "cv": "CV",
                  "counters": "counters", "why": "why", "explanation": "explanation"}


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


def _latest(series: Series):
    return series.found[-1] if series.found else None


def series_frame(judged: Judged) -> pd.DataFrame:
    rows = []
    for s in judged.series:
        verdict, latest = _gate(s), _latest(s)
        rows.append({
            "suite": s.suite, "case_id": s.case_id, "variant": s.variant, "machine": s.machine,
            "state": s.state, "regressed": s.regressed, "runs": len(s.runs),
            "points": len(s.time.points), "time": _view_text(s.time),
            "relative": _view_text(s.relative),
            "gate_state": verdict.state if verdict is not None else "",
            "gate_ratio": verdict.ratio if verdict is not None else math.nan,
            "gate_z": verdict.z if verdict is not None else math.nan,
            "cv": verdict.cv if verdict is not None else math.nan,
            "counters": "; ".join(f"{e.text()} at run #{e.run + 1}" for e in s.counter_events),
            "why": s.why,
            "changed_at": (f"#{latest.run + 1}" if latest is not None else ""),
            "explanation": (latest.explanation.first
                            if latest is not None and latest.explanation else ""),
        })
    return pd.DataFrame(rows)


def moved(judged: Judged) -> list[Series]:
    """The series that changed, the regressed first, then by their latest change (newest
    first), then by its size."""
    def size(s: Series) -> float:
        latest = _latest(s)
        if latest is None:
            return 0.0
        ratio = latest.ratio()[1]
        return abs(math.log(ratio)) if math.isfinite(ratio) and ratio > 0 else 0.0
    changed = [s for s in judged.series if s.state == CHANGED]
    return sorted(changed, key=lambda s: (not s.regressed,
                                          -(_latest(s).run if s.found else -1), -size(s)))


def _run_facts(run) -> dict:
    return {"run": str(run.folder), "created": run.env.get("created"), "commit": run.commit,
            "suite": run.suite, "machine": run.machine}


def regressions(judged: Judged) -> dict:
    """regressions.json's content."""
    runs = judged.history.runs
    newest = [dict(_run_facts(runs[i]), suite=suite, machine=machine)
              for (suite, machine), i in judged.newest.items()]
    regressed, changes = [], []
    for s in judged.series:
        for found in s.found:
            first = found.explanation.first if found.explanation else ""
            cause = found.explanation.cause if found.explanation else ""
            record = {"suite": s.suite, "case_id": s.case_id, "variant": s.variant,
                      "machine": s.machine, "run": str(runs[found.run].folder),
                      "run_index": found.run + 1,
                      "before_run": str(runs[found.before_run].folder),
                      "steps": {view: {"ratio": step.ratio, "low": step.low, "high": step.high,
                                       "p_value": step.p_value}
                                for view, step in found.steps.items()},
                      "counters": [{"name": e.name, "before": _json_value(e.before),
                                    "after": _json_value(e.after)} for e in found.counters],
                      "explanation": first, "cause": cause}
            changes.append(record)
            for view, verdict in found.gates.items():
                if verdict.state != "regressed":
                    continue
                regressed.append({
                    "suite": s.suite, "case_id": s.case_id, "variant": s.variant,
                    "machine": s.machine, "view": view, "run": str(runs[found.run].folder),
                    "ratio": verdict.ratio, "z": _json_value(verdict.z),
                    "baseline": verdict.baseline, "baseline_runs": verdict.n,
                    "cv": verdict.cv, "thresholds": s.thresholds.values(),
                    "explanation": first, "cause": cause})
    return {"runs": len(runs), "series": len(judged.series),
            "counts": {state: judged.count(state)
                       for state in (CHANGED, STABLE, TOO_NOISY, TOO_SHORT)},
            "newest": newest, "regressed": regressed, "changes": changes,
            "exit_code": 1 if regressed else 0}


def _json_value(value):
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    return value


def headline(judged: Judged) -> str:
    runs = judged.history.runs
    dates = [r.created for r in runs if r.created is not None]
    span = (f"{min(dates):%Y-%m-%d %H:%M} to {max(dates):%Y-%m-%d %H:%M}; " if dates else "")
    machines = len({s.machine for s in judged.series})
    return (f"{len(judged.series)} series over {len(runs)} runs ({span}{machines} "
            f"machine{'s' if machines != 1 else ''}): {judged.count(CHANGED)} changed, "
            f"{len(judged.regressed)} regressed at the newest run, {judged.count(TOO_NOISY)} "
            f"too noisy, {judged.count(TOO_SHORT)} too short, {judged.count(STABLE)} stable.")


def change_lines(judged: Judged, limit: int | None = None) -> list[str]:
    """A line per change of the moved series: the run and the explanation's first line."""
    lines = []
    for s in moved(judged):
        for found in reversed(s.found):
            tag = "REGRESSED " if found.regressed else ""
            first = found.explanation.first if found.explanation else ""
            lines.append(f"{tag}{s.name()} at run #{found.run + 1}: {first}")
    if limit is not None and len(lines) > limit:
        return lines[:limit] + [f"... and {len(lines) - limit} more change(s) (history.md, "
                                "history.html)"]
    return lines


def method_lines(judged: Judged) -> list[str]:
    lines = [f"gate ({suite}): {t.text()}" for suite, t in judged.thresholds.items()]
    lines.append("views: time (the row's own clean rounds) and relative (its time over the "
                 "baseline variant's, paired by round: cancels the drift a run shares)")
    return lines + judged.history.notes


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
            tag = " (REGRESSED at the newest run)" if found.regressed else ""
            ex = found.explanation
            blocks.append(f"## {s.name()} on {s.machine}, run #{found.run + 1}{tag}\n\n"
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


def _answer_html(judged: Judged) -> str:
    items = change_lines(judged, 8)
    body = f"<p id='verdict'><strong>{html.escape(headline(judged))}</strong></p>"
    if items:
        body += hp.bullet_list(items)
    noisy = [s for s in judged.series if s.state == TOO_NOISY]
    if noisy:
        body += (f"<p>Too noisy to judge ({len(noisy)}): never flagged; the table says how "
                 "much each scatters.</p>")
    return hp.answer_block(body, None)


def _change_html(series: Series, plot: Path | None) -> str:
    parts = [f"<div class='change'><h3>{html.escape(series.name())} "
             f"<small>{html.escape(series.machine)}</small></h3>"]
    if plot is not None:
        parts.append(hp.image(plot))
    for found in reversed(series.found):
        ex = found.explanation
        if ex is None:
            continue
        tag = "REGRESSED at the newest run: " if found.regressed else ""
        parts.append(f"<p class='first'>Run #{found.run + 1}: {html.escape(tag + ex.first)}</p>"
                     f"<p class='meta'>compared: {html.escape(ex.before)} &rarr; "
                     f"{html.escape(ex.after)}</p>" + hp.bullet_list(ex.lines))
    parts.append("</div>")
    return "".join(parts)


def _runs_frame(judged: Judged) -> pd.DataFrame:
    return pd.DataFrame([{"index": f"#{r.index + 1}", "run": str(r.folder),
                          "created": r.env.get("created", ""), "commit": r.commit or "",
                          "suite": r.suite, "machine": r.machine,
                          "threads": r.env.get("threads", ""), "torch": r.env.get("torch", ""),
                          "rows": len(r.rows), "status": "ok"}
                         for r in judged.history.runs])


def write_html(path: Path, judged: Judged, frame: pd.DataFrame, plots: dict) -> Path:
    series_moved = moved(judged)
    changes = "".join(_change_html(s, plots.get(s.key)) for s in series_moved)
    if len(series_moved) > len(plots):
        changes += (f"<p>{len(series_moved) - len(plots)} more changed series without a plot "
                    f"(the first {MAX_PLOTS} are drawn); the table lists them all.</p>")
    shown = frame.assign(status=frame["state"],
                         regressed=frame["regressed"].map({True: "yes", False: ""}))
    sections = [
        ("The answer", _answer_html(judged)),
        ("What moved", changes or "<p>No series changed.</p>"),
        ("Every series", hp.table(shown, SERIES_COLUMNS,
                                  left=("suite", "case_id", "variant", "machine", "state",
                                        "regressed", "time", "relative", "counters", "why",
                                        "explanation"), sortable=True)),
        ("Runs, in order", hp.table(_runs_frame(judged),
                                    {c: c for c in ("index", "run", "created", "commit",
                                                    "suite", "machine", "threads", "torch",
                                                    "rows")},
                                    left=("index", "run", "created", "commit", "suite",
                                          "machine", "torch"))),
        ("How it was judged", hp.bullet_list(method_lines(judged))),
    ]
    banner = banner_html(judged.history.problems)
    paths = ", ".join(str(p) for p in judged.history.paths)
    page = hp.page("fusebench history", sections, html.escape(f"runs under: {paths}"), banner)
    atomic.write_text(path, page.replace("</style>", STATE_CSS + "</style>", 1))
    return path


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
