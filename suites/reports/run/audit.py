"""The audit of a run folder: every statement its pages make, tested against the others and
against the numbers it rests on (`python -m suites.report --check RUN`; every run prints its
count at its end).

The answer is said three times, by one function (answer.py): report.md (which the console
prints), report.html, and the answer the folder's files give today; the three must be one. The
rows' statements (bounds, profiles, cores, numbers) are audit_rows.py's.
"""
from __future__ import annotations

import html
import re
from pathlib import Path

from suites.common.audit import Audit, Tally, audit_safely
from suites.common.errors import InputError
from suites.reports.run import answer
from suites.reports.run.audit_rows import rows_audit
from suites.reports.run.build import REPORT_MD, report_frame
from suites.results.reader import FROM_ENV, RunFolder

ANSWER_DIV = re.compile(r"<div id='answer'.*?<p id='verdict'><b>(.*?)</b></p><ul>(.*?)</ul>"
                        r"(?:<p(?: id='where')?>(Where the time goes.*?)</p>)?", re.S)


def html_answer(page: str) -> list[str]:
    """The answer's lines as report.html shows them (the verdict, the bullets, where)."""
    found = ANSWER_DIV.search(page)
    if found is None:
        return []
    bullets = re.findall(r"<li>(.*?)</li>", found.group(2), re.S)
    lines = [html.unescape(found.group(1)), *(f"- {html.unescape(b)}" for b in bullets)]
    return lines + ([html.unescape(found.group(3))] if found.group(3) else [])


def _answers(tally: Tally, run: RunFolder, frame) -> None:
    folder = run.folder
    md = folder / REPORT_MD
    page = folder / "report.html"
    said_md = answer.answer_section(md.read_text()) if md.is_file() else None
    said_html = html_answer(page.read_text()) if page.is_file() else None
    op = run.op
    name = answer.case_namer(frame, op.size_axis, op.columns(frame))
    now = answer.answer(frame, run.findings, op.baseline, name,
                        profiled=bool((run.env.get("profile") or {}).get("enabled", True)))
    for path, said in ((md, said_md), (page, said_html)):
        if said is not None:
            tally.test(said == now.lines(), "answer_recomputed", str(path),
                       _first_difference(said, now.lines()),
                       "the answer the folder's tables give (answer.py)")
    if said_md is not None and said_html is not None:
        tally.test(said_md == said_html, "answer_md_html", "the answer",
                   f"report.md: {_first_difference(said_md, said_html)}",
                   "report.html says otherwise")


def _first_difference(a: list[str], b: list[str]) -> str:
    for x, y in zip(a, b):
        if x != y:
            return f"{x!r} (against {y!r})"
    return f"{len(a)} line(s) against {len(b)}"


def _evidence(tally: Tally, run: RunFolder, frame) -> None:
    """A bound or ridge stated on a page rests on env.json's peaks: a folder whose env.json is
    gone or unreadable holds statements nothing in it can test."""
    stated = frame["roofline_bound"].map(lambda b: isinstance(b, str) and bool(b)).sum() \
        if "roofline_bound" in frame else 0
    for gap in run.gaps:
        if gap.unknown == FROM_ENV:
            tally.test(not stated, "evidence_unreadable", str(run.folder),
                       f"measurements.csv: {stated} row(s) state a bound from measured peaks",
                       gap.line)


def audit(folder: Path) -> Audit:
    """Every check of one run folder; an InputError for a folder that is no run."""
    run = RunFolder(Path(folder))
    frame = report_frame(run)  # an InputError without measurements.csv
    env = run.env
    pages = [p.read_text() for p in (run.folder / REPORT_MD, run.folder / "report.html")
             if p.is_file()]
    tally = rows_audit(frame, run.findings, run.optree, env, run.rounds, pages)
    _evidence(tally, run, frame)
    try:
        _answers(tally, run, frame)
    except (InputError, KeyError, ValueError) as exc:  # a block that no longer imports, say
        tally.test(False, "answer_unreadable", str(run.folder), f"{type(exc).__name__}: {exc}",
                   "the answer must be recomputable from the folder")
    return tally.audit(run.folder, "run")


AUDIT_TXT = "audit.txt"  # the run's own audit, kept beside its pages (a launched job's console
# is a log file few open: the folder says it too)


def audit_and_keep(folder: Path) -> Audit:
    """The audit of a run that just wrote its pages, kept in the folder as audit.txt (the same
    lines the console prints)."""
    audited = audit_safely(audit, folder, "run")
    try:
        (Path(folder) / AUDIT_TXT).write_text("\n".join(audited.lines()) + "\n")
    except OSError:  # a full disk or a read-only folder: the console still says it
        pass
    return audited
