"""history.html: the report kit's page: the answer first, a small plot and its explanation
per series that moved, a sortable table of every series with its state, the runs in order, how
it was judged (words.py's words, as history.md says them)."""
from __future__ import annotations

import html
from pathlib import Path

import pandas as pd

from suites.reports.history.series import TOO_NOISY, Judged, Series
from suites.reports.history.words import change_lines, headline, method_lines, moved, \
    regressed_tag
from suites.reports.kit import page as hp
from suites.reports.kit.banner import banner_html
from suites.results import atomic

MAX_PLOTS = 12       # plots on the page (about 0.4 s each); the table lists every series
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
        tag = f"{regressed_tag(found)}: " if found.regressed else ""
        where = found.where()
        # The place and the flag as data too: the audit reads them back (audit.py md_html).
        parts.append(f"<p class='first' data-where='{html.escape(where)}' "
                     f"data-regressed='{int(found.regressed)}'>"
                     f"{html.escape(where[0].upper() + where[1:])}: {html.escape(tag)}"
                     f"<span class='line'>{html.escape(ex.first)}</span></p>"
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
