"""The audit of a history folder: every statement its pages make (history.md, history.html,
series.csv, regressions.json) tested against the others and against the numbers and run
folders it rests on; each contradiction names both sources (suites/common/audit.py).

The checks, by code:

- headline_counts: history.md's headline (series, runs, changed, regressed, too noisy, too
  short, stable) against series.csv's rows and regressions.json's runs;
- json_counts: regressions.json's counts against series.csv's;
- exit_code: regressions.json's exit code against its regressed entries and series.csv's
  regressed rows (1 exactly when a series regressed at the newest run);
- too_short_runs: the runs "too short" needs, as the headline and regressions.json say it, and
  every too-short series under it;
- cause_allowed, cause_changed, place_order, gate_place: each change's cause and place
  (audit_changes.py);
- finite: every number of regressions.json and series.csv;
- md_html: history.md and history.html say the same headline and the same changes, each at the
  same place with the same first line and the same flag.
"""
from __future__ import annotations

import html
import json
import re
from collections import Counter
from pathlib import Path

import pandas as pd

from suites.common.audit import Audit, Tally, finite
from suites.common.errors import InputError
from suites.reports.history import audit_changes

PAGES = ("regressions.json", "series.csv", "history.md", "history.html")
HEADLINE = re.compile(
    r"^(\d+) series over (\d+) runs .*?: (\d+) changed, (\d+) regressed at the newest run, "
    r"(\d+) too noisy, (\d+) too short \(fewer than (\d+) runs timed ok\), (\d+) stable\.$",
    re.M)
MD_CHANGE = re.compile(r"^## (.+?, (?:at run #\d+|between runs #\d+ and #\d+))"
                       r"( \(REGRESSED.*\))?\n\n\*\*(.*)\*\*$", re.M)
HTML_CHANGE = re.compile(r"<div class='change'><h3>(.*?) <small>(.*?)</small>")
HTML_FIRST = re.compile(r"<p class='first' data-where='([^']*)' data-regressed='([01])'>"
                        r".*?<span class='line'>(.*?)</span></p>")
STATES = ("changed", "stable", "too_noisy", "too_short")


def _read(folder: Path) -> dict:
    missing = [name for name in PAGES if not (folder / name).is_file()]
    if missing:
        raise InputError(f"{folder}: no {missing[0]}: not a history folder (python -m "
                         "suites.history writes " + ", ".join(PAGES) + ")")
    try:
        report = json.loads((folder / "regressions.json").read_text())
    except ValueError as exc:
        raise InputError(f"{folder / 'regressions.json'}: not JSON ({exc})") from None
    try:
        frame = pd.read_csv(folder / "series.csv")
    except pd.errors.EmptyDataError:  # a history of no series writes no columns
        frame = pd.DataFrame()
    for column in ("suite", "case_id", "variant", "machine", "state", "regressed", "points"):
        if column not in frame:
            frame[column] = pd.Series(dtype=bool if column == "regressed" else object)
    return {"json": report, "csv": frame,
            "md": (folder / "history.md").read_text(),
            "html": (folder / "history.html").read_text()}


def _headline(text: str) -> re.Match | None:
    return HEADLINE.search(text)


def check_counts(tally: Tally, pages: dict) -> None:
    report, frame, md = pages["json"], pages["csv"], pages["md"]
    states = Counter(frame["state"])
    regressed = int(frame["regressed"].astype(bool).sum())
    head = _headline(md)
    if not tally.test(head is not None, "headline_counts", "history.md",
                      "history.md: no headline of counts", "the headline history writes"):
        return
    said = dict(zip(("series", "runs", "changed", "regressed", "too_noisy", "too_short",
                     "runs_needed", "stable"), map(int, head.groups())))
    truth = {"series": len(frame), "runs": report.get("runs"), "regressed": regressed,
             **{state: states.get(state, 0) for state in STATES}}
    for name, value in truth.items():
        tally.test(said[name] == value, "headline_counts", "history.md headline",
                   f"history.md: {said[name]} {name}",
                   f"{'regressions.json' if name == 'runs' else 'series.csv'}: {value}")
    counts = report.get("counts", {})
    for state in STATES:
        tally.test(counts.get(state) == states.get(state, 0), "json_counts", state,
                   f"regressions.json: {counts.get(state)} {state}",
                   f"series.csv: {states.get(state, 0)} rows {state}")
    tally.test(report.get("series") == len(frame), "json_counts", "series",
               f"regressions.json: {report.get('series')} series", f"series.csv: {len(frame)}")
    tally.test(report.get("regressed_series") == regressed, "json_counts", "regressed",
               f"regressions.json: {report.get('regressed_series')} regressed series",
               f"series.csv: {regressed} rows regressed")
    tally.test(said["runs_needed"] == report.get("runs_needed"), "too_short_runs", "headline",
               f"history.md: too short under {said['runs_needed']} runs",
               f"regressions.json: runs_needed {report.get('runs_needed')}")


def check_exit(tally: Tally, pages: dict) -> None:
    report, frame = pages["json"], pages["csv"]
    entries = report.get("regressed", [])
    code = report.get("exit_code")
    tally.test(code == (1 if entries else 0), "exit_code", "regressions.json",
               f"regressions.json: exit_code {code}", f"regressions.json: {len(entries)} "
               "regressed entries (exit 1 exactly when one or more)")
    rows = int(frame["regressed"].astype(bool).sum())
    tally.test(code == (1 if rows else 0), "exit_code", "regressions.json",
               f"regressions.json: exit_code {code}", f"series.csv: {rows} regressed rows")
    keys = ("suite", "case_id", "variant", "machine")
    said = {tuple(str(e.get(k)) for k in keys) for e in entries}
    marked = {tuple(str(r[k]) for k in keys)
              for _, r in frame[frame["regressed"].astype(bool)].iterrows()}
    for key in said ^ marked:
        tally.test(False, "exit_code", " ".join(key),
                   "regressions.json: regressed" if key in said else "regressions.json: not "
                   "regressed", "series.csv: " + ("not regressed" if key in said else
                                                  "regressed"))
    tally.tested += len(said & marked)


def check_too_short(tally: Tally, pages: dict) -> None:
    needed = pages["json"].get("runs_needed")
    if not isinstance(needed, int):
        tally.test(False, "too_short_runs", "regressions.json", "regressions.json: no "
                   "runs_needed", "a too-short series must say how many runs it needs")
        return
    for _, row in pages["csv"].iterrows():
        where = f"{row['suite']} {row['case_id']} {row['variant']}"
        if row["state"] == "too_short":
            tally.test(row["points"] < needed, "too_short_runs", where,
                       f"series.csv: too_short with {row['points']} timed runs",
                       f"regressions.json: too short is under {needed}")
        elif row["points"] < needed:
            tally.test(row["state"] == "changed", "too_short_runs", where,
                       f"series.csv: {row['state']} with {row['points']} timed runs",
                       f"regressions.json: under {needed} nothing but a counter is judged")


def _numbers(value, where: str):
    if isinstance(value, dict):
        for key, inner in value.items():
            yield from _numbers(inner, f"{where}.{key}")
    elif isinstance(value, list):
        for i, inner in enumerate(value):
            yield from _numbers(inner, f"{where}[{i}]")
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        yield where, value


def check_finite(tally: Tally, pages: dict) -> None:
    for where, value in _numbers(pages["json"], "regressions.json"):
        tally.test(finite(value), "finite", where, f"{where}: {value}", "a finite number")
    frame = pages["csv"]
    for column in frame.select_dtypes("number").columns:
        for i, value in frame[column].items():
            tally.test(finite(value), "finite", f"series.csv row {i + 1}",
                       f"series.csv {column}: {value}", "a finite number")


def check_md_html(tally: Tally, pages: dict) -> None:
    md, page = pages["md"], pages["html"]
    head = _headline(md)
    verdict = re.search(r"<p id='verdict'><strong>(.*?)</strong>", page)
    tally.test(head is not None and verdict is not None
               and html.unescape(verdict.group(1)) == head.group(0), "md_html", "headline",
               f"history.md: {head.group(0) if head else '(none)'}",
               f"history.html: {html.unescape(verdict.group(1)) if verdict else '(none)'}")
    # (series on machine, place; flagged; first line), from each page
    said = Counter((m.group(1), bool(m.group(2)), m.group(3)) for m in MD_CHANGE.finditer(md))
    shown = Counter()
    for block in page.split("<div class='change'>")[1:]:
        head = HTML_CHANGE.search("<div class='change'>" + block)
        name, machine = (html.unescape(g) for g in head.groups()) if head else ("?", "?")
        for where, flag, text in HTML_FIRST.findall(block):
            shown[(f"{name} on {machine}, {html.unescape(where)}", flag == "1",
                   html.unescape(text))] += 1
    for key in said | shown:
        tally.test(said[key] == shown[key], "md_html", key[0],
                   f"history.md: {said[key]} change(s) saying {key[2]!r}",
                   f"history.html: {shown[key]}")


def audit(folder: Path) -> Audit:
    """Every statement of a history folder tested (see the module's docstring)."""
    folder = Path(folder)
    pages = _read(folder)
    tally = Tally()
    for check in (check_counts, check_exit, check_too_short, check_finite, check_md_html,
                  audit_changes.check_changes):
        check(tally, pages)
    return tally.audit(folder, "history")
